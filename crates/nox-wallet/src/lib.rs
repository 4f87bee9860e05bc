#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod file;
pub mod journal;
pub mod keys;
pub mod memo;
pub mod privacy;
pub mod spend;
pub mod state;
pub mod units;

pub use error::WalletError;
pub use keys::{PaymentAddress, Seed, ViewingKey};
pub use spend::{OutputRole, PreparedOutput, PreparedTransaction, SpentInput, TransactionFields, TxRequest};
pub use state::{Balance, CorruptNote, CorruptReason, DepositSeen, Origin, OwnedNote, PoolEvent, PoolView};
