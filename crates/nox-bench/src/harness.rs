//! The bottom layer of `nox bench`: what every experiment may use, importing no experiment.
//!
//! - [`error`]: [`BenchError`] and [`err`], the error every experiment returns;
//! - [`json`]: pretty JSON files, chart series and the envelope writer of the analytics
//!   experiments; [`common`]: the envelope itself (experiment, command, machine, parameters,
//!   results, summary, charts), the options of the network experiments, a testnet that stops on
//!   drop, a client of it, a request runner with bounded concurrency;
//! - [`stats`](mod@stats): percentiles, sample summaries, CDFs, Wilson intervals, mean and range of repeats;
//! - [`rate`]: offering a packet rate to a testnet and timing deliveries at the exits' UDP sink;
//! - [`capture`]: the global observer's capture (`[observe]` node logs joined with client sends);
//! - [`calibration`]: the link-level simulator's traffic and delay model, calibrated against the
//!   testnet;
//! - [`machine`]: the machine description; [`progress`]: a progress line.
//!
//! The flat re-exports below are what experiments import (`crate::harness::{…}`).

pub mod calibration;
pub mod capture;
pub mod common;
pub mod error;
pub mod json;
pub mod machine;
pub mod progress;
pub mod rate;
pub mod stats;

pub use calibration::{ECHO_BYTES, PROCESSING_FLOOR_US, shipped_traffic, testnet_model};
pub use common::*;
pub use error::{BenchError, err};
pub use json::*;
pub use rate::measure_rate;
pub use stats::*;
