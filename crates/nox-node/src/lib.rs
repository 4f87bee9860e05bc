#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod metrics;
mod pipeline;

pub use metrics::NodeMetrics;
pub use pipeline::{Egress, Inbound, Origin, Pipeline, PipelineConfig, PipelineHandles};
