//! `nox client`: the client daemon (SOCKS5 and JSON-RPC endpoints through the mixnet) and the
//! one-shot `nox client echo`, both `nox_client_io::cli`; this file supplies `--testnet <dir>`
//! (the local harness, `nox-testnet`).

pub use nox_client_io::cli::{ClientArgs, ClientCommand, LinkTransport, TopologyArgs};
/// Topology files read and verified for the geometry they name (`nox_client_io`).
pub use nox_client_io::{load_file, verify_named};

/// `--testnet <dir>`: the testnet's topology and CA file, from `nox-testnet`.
pub const TESTNET: nox_client_io::cli::Testnet = nox_client_io::cli::Testnet {
    topology: |dir| Box::pin(async move { nox_testnet::directory::topology_async(&dir).await }),
    ca_file: nox_testnet::tls::existing_ca_file,
};

/// Runs `nox client`.
pub fn run(args: ClientArgs) -> Result<(), String> {
    nox_client_io::cli::run(args, TESTNET).map_err(|e| e.to_string())
}
