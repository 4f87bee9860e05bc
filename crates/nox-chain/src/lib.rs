#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod anvil;
pub mod bindings;
pub mod defi;
pub mod deploy;
mod error;
pub mod l2fee;
pub mod pool;
pub mod pool_sync;
pub mod reader;
pub mod slash;
pub mod snapshot;
pub mod testnet_keys;
pub mod view;

pub use deploy::{Deployment, Registration, RegistryParams};
pub use error::ChainError;
pub use reader::RegistryReader;
pub use snapshot::{RegisteredNode, RegistrySnapshot, fingerprint};
pub use view::{ChainConfig, RegistryView};

/// Re-exported so callers name addresses, amounts and keys with the same types.
pub use alloy::primitives::{Address, B256, U256};
pub use alloy::signers::local::PrivateKeySigner;
