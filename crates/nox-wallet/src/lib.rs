#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod file;
pub mod keys;
pub mod memo;
pub mod spend;
pub mod state;

pub use error::WalletError;
pub use keys::{PaymentAddress, Seed, ViewingSecret};
pub use spend::{PreparedSpend, SpendKind, SpendRequest};
pub use state::{Balance, OwnedNote, PoolEvent, PoolView};
