//! `nox-gate --workload W --count N`: one gate workload, for callgrind
//! (`scripts/bench/regression.sh`). The same workloads as
//! `nox bench hop-instructions`, in a binary that links only the pure crates
//! they touch, so CI builds it in a minute instead of the whole `nox`.

use std::process::ExitCode;

use clap::Parser;

/// The CI performance gate's deterministic workloads (instruction counts under
/// callgrind: scripts/bench/regression.sh).
#[derive(Parser)]
#[command(name = "nox-gate")]
struct Cli {
    #[command(flatten)]
    args: nox_gate::GateArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match nox_gate::run(&cli.args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nox-gate: {e}");
            ExitCode::FAILURE
        }
    }
}
