//! `nox bench hop-instructions`: the CI regression gate's deterministic
//! workloads, which live in `nox-gate` (its small binary is what
//! `scripts/bench/regression.sh` builds and measures under callgrind); this
//! subcommand runs the same code from the full `nox` binary.

pub use nox_gate::GateArgs;

use crate::harness::{BenchError, err};

/// Runs the workload `count` times and prints one line.
pub fn run(args: &GateArgs) -> Result<(), BenchError> {
    nox_gate::run(args).map_err(err)
}
