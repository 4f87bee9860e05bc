#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod activity;
pub mod attacks;
mod correlation;
mod delays;
pub mod disclosure;
mod entropy;
mod error;
mod observation;
pub mod pool;
pub mod pool_sim;
mod random;
pub mod simulate;
mod unlinkability;

pub use correlation::{CorrelationReport, PairCorrelation, timing_correlation};
pub use delays::{
    ExponentialityReport, OverDelayReport, delay_exponentiality, expected_over_delayed_fraction, over_delayed_fraction,
};
pub use entropy::{EntropyReport, MessageScore, SenderPosterior, sender_entropy, sender_posteriors};
pub use error::AnonymityError;
pub use observation::{DelayModel, Endpoint, GroundTruth, LinkEvent, MessageId, Observation, Topology};
pub use unlinkability::{UnlinkabilityReport, unlinkability};
