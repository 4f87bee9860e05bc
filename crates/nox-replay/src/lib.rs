#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod cache;
mod epochs;
mod error;
mod filter;
pub mod journal;
mod params;
mod snapshot;

pub use cache::{InsertOutcome, ReplayCache, ReplayTag};
pub use epochs::EpochReplayCaches;
pub use error::{EpochError, JournalError, ParameterError, SnapshotError};
pub use journal::{JournalRecovery, ParsedJournal};
pub use params::{BloomParameters, MAX_FILTER_BITS, MAX_HASHES};
pub use snapshot::{SNAPSHOT_HEADER_LEN, SNAPSHOT_TRAILER_LEN};
