#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod config;
mod metrics;
mod scheduler;

pub use config::{Delay, MixingConfig, OverDelayPolicy};
pub use metrics::{DEFAULT_DELAY_BUCKETS, DelayHistogram, MixingCounters, MixingMetrics};
pub use scheduler::{MixingScheduler, RefusalReason, Refused, Scheduled};
