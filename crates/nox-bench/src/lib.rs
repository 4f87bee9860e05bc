//! `nox bench …`: the benchmark and privacy-analytics harness. Every experiment runs the real
//! thing — node processes of a [`nox_testnet`] network, or the protocol crates in process — and
//! writes JSON with the machine description, the commit and its parameters (`bench/data/`,
//! charted into `docs/benchmarks/`). [`bench::run`] dispatches the subcommands.
#![forbid(unsafe_code)]

pub mod anon_capture;
pub mod anon_delays;
pub mod anon_score;
pub mod bench;
pub mod bench_anonymity;
pub mod bench_attacks;
pub mod bench_common;
pub mod bench_cover;
pub mod bench_defi;
pub mod bench_disclosure;
pub mod bench_frontier;
pub mod bench_gate;
pub mod bench_hosts;
pub mod bench_http;
pub mod bench_inprocess;
pub mod bench_json;
pub mod bench_net;
pub mod bench_packet_size;
pub mod bench_pool_anonymity;
pub mod bench_profiles;
pub mod bench_registry;
pub mod bench_relayer_flood;
pub mod bench_soak;
pub mod bench_streams;
pub mod bench_surb;
pub mod bench_sweeps;
pub mod machine;
pub mod progress;

pub use bench::{BenchCommand, BenchError, run};
