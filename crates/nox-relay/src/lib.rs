#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod drop_reason;
mod epoch_keys;
mod relay;

pub use drop_reason::DropReason;
pub use epoch_keys::EpochKeys;
pub use relay::{Admitted, Recorded, Relay, RelayOutput, Verified};
