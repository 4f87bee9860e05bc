#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bundle;
pub mod chain;
pub mod deposit;
pub mod dir;
pub mod direct;
pub mod fee_check;
pub mod fees;
pub mod insert;
pub mod insert_race;
pub mod keys;
pub mod l2fee;
pub mod send;

pub use chain::ChainError;
pub use deposit::DepositError;
pub use dir::{DirError, WalletDir};
pub use direct::DirectError;
pub use fee_check::FeeCheckError;
pub use fees::FeeReadError;
pub use insert::InsertError;
pub use insert_race::RaceError;
pub use keys::KeyError;
pub use l2fee::DataFeeError;
pub use send::SendError;
