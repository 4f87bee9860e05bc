#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod abi;
pub mod check;
pub mod guard;
pub mod inserter;
pub mod journal;
pub mod price;
#[cfg(feature = "service")]
mod service;
pub mod twap;
pub mod wire;

pub use check::{Admission, Admitted, admit};
pub use journal::{Journal, JournalError, Pending};
#[cfg(feature = "service")]
pub use service::{
    PASSWORD_ENV, Policy, PriceError, PriceFeed, PriceFuture, Relayer, RelayerConfig, RelayerError, RelayerStats,
    TokenPair, TwapFeed, UniswapV2Feed, decode_verifying_key, encode_verifying_key,
};
pub use wire::{Outcome, Quote, Reason, RelayRequest, Submission};
