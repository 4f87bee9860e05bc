#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod health;
mod profile;
mod schedule;
mod send_queue;
mod time;
mod timer;

pub use health::{HealthConfig, LoopHealthTracker, LoopId, LoopReturn, NodeHealth, NodeId, NodeStatus, RecordError};
pub use profile::{
    CoverGate, CoverProfile, MOBILE_DEFAULT_BUDGET, MobileProfile, PROFILE_NAMES, ProfileError, UnknownProfile,
    WalletProfile,
};
pub use schedule::{CoverEvent, CoverKind, CoverScheduler};
pub use send_queue::{Emission, Payload, QueueFull, SendQueue};
pub use time::Instant;
pub use timer::{PoissonTimer, RateError};
