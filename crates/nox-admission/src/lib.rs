#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod bans;
mod bounded;
mod connections;
mod difficulty;
mod peer;
mod policy;
mod rate_limit;

pub use bans::{BanConfig, BanList, BanRecord};
pub use bounded::BoundedLru;
pub use connections::{ConnectionLimits, ConnectionRefused, ConnectionTracker};
pub use difficulty::{AdaptiveDifficulty, DifficultyChange, DifficultyConfig, DifficultyConfigError, DifficultyStep};
pub use peer::{PeerKey, SubnetKey};
pub use policy::{AdmissionConfig, AdmissionPolicy, PacketVerdict};
pub use rate_limit::{RateLimitConfig, RateLimiter, RateOutcome, Tier};
