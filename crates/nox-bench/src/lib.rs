//! `nox bench …`: the benchmark and privacy-analytics harness. Every experiment runs the real
//! thing — node processes of a [`nox_testnet`] network, or the protocol crates in process — and
//! writes JSON with the machine description, the commit and its parameters (`bench/data/`,
//! charted into `docs/benchmarks/`).
//!
//! Three layers, arrows pointing down only:
//! - [`bench`](mod@bench): the CLI — the `nox bench` subcommands and [`bench::run`], which dispatches them;
//! - [`experiments`]: one module per experiment, each importing the harness and never another
//!   experiment (`tests/layering.rs` checks it);
//! - [`harness`]: what every experiment shares (errors, JSON, statistics, testnet helpers, the
//!   observer's capture, the simulator's calibration, machine, progress), importing no experiment.
#![forbid(unsafe_code)]

pub mod bench;
pub mod experiments;
pub mod harness;

pub use bench::{BenchCommand, BenchError, run};
