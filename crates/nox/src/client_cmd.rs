//! `nox client`: the client daemon (SOCKS5 and JSON-RPC endpoints through the mixnet) and the
//! one-shot `nox client echo`, both `nox_client_io::cli`; this file supplies `--testnet <dir>`
//! (the local harness, `nox-testnet`).

pub use nox_client_io::cli::{ClientArgs, ClientCommand, LinkTransport, TopologyArgs};
/// Topology files read and verified for the geometry they name (`nox_client_io`).
pub use nox_client_io::{load_file, verify_named};

/// `--testnet <dir>`: the testnet's topology and CA file, from `nox-testnet` (the wallet's
/// `--testnet` reads the same mixnet).
pub const TESTNET: nox_client_io::cli::Testnet = nox_testnet::testnet_demo::WALLET_TESTNET.client;

/// Runs `nox client`.
pub fn run(args: ClientArgs) -> Result<(), String> {
    nox_client_io::cli::run(args, TESTNET).map_err(|e| e.to_string())
}
