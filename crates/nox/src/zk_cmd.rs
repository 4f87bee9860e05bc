//! `nox zk setup`: the Groth16 setup ceremony (docs/spec/ceremony.md). Its arguments and steps
//! are `nox_zk_ceremony::cli`; the ceremony itself is `nox-zk-setup` (pure).

pub use nox_zk_ceremony::cli::ZkCommand;

/// Runs a `nox zk` command: results on stdout, timed progress on stderr.
pub fn run(command: ZkCommand) -> Result<(), String> {
    nox_zk_ceremony::cli::run(command, &mut std::io::stdout(), &mut std::io::stderr()).map_err(|e| e.to_string())
}
