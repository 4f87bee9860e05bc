#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chain;
pub mod dir;
pub mod fees;
pub mod insert_race;
pub mod l2fee;

pub use chain::ChainError;
pub use dir::{DirError, WalletDir};
pub use fees::FeeReadError;
pub use insert_race::RaceError;
pub use l2fee::DataFeeError;
