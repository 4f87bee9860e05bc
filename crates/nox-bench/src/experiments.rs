//! The middle layer: one module per experiment (or family of `nox bench` subcommands sharing
//! their options). An experiment imports [`crate::harness`] and never another experiment: a
//! helper two experiments need moves down into the harness. `tests/layering.rs` checks it.

pub mod anonymity;
pub mod attacks;
pub mod cover;
pub mod criterion_report;
pub mod defi;
pub mod disclosure;
pub mod fec_curve;
pub mod frontier;
pub mod gate;
pub mod hosts;
pub mod http;
pub mod inprocess;
pub mod net;
pub mod packet_size;
pub mod pool_anonymity;
pub mod profiles;
pub mod registry;
pub mod relayer_flood;
pub mod soak;
pub mod streams;
pub mod surb;
pub mod sweeps;
