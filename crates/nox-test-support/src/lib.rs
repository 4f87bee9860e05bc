//! Fixtures the NOX crates' integration tests and benchmarks share, so that each is written once:
//! deterministic Sphinx nodes and paths ([`sphinx`]) and signed test topologies ([`topology`]).
//!
//! A dev-dependency only (`publish = false`). Every fixture takes the caller's RNG, so a test
//! seeded with a fixed value gets the same nodes, keys and documents on every run — the
//! committed vectors depend on it. Fixtures panic on impossible setups (they are test code);
//! nothing here is reachable from a shipped binary.
#![forbid(unsafe_code)]

pub mod sphinx;
pub mod topology;
