//! `nox watch`: the slashing watcher (issue 33), its loop in `nox_node::watch`. Every round it re-reads the node registry,
//! fetches the topology document of every directory mirror it is given, and feeds each
//! registered node's descriptor to the pure [`nox_node::watcher::Watcher`]; evidence of an
//! equivocation (two different keys signed by one operator for one epoch, e.g. one descriptor
//! on one mirror and another on a second) is submitted to `NodeRegistry.slashEquivocation`
//! from the watcher's account, which receives the reporter's share of the stake.
//!
//! A separate process rather than a task in every node: a node reads one mirror at a time
//! (the first that answers), so it would only catch an operator that changes its key on that
//! mirror, while the equivocation worth slashing is the one where different mirrors (and so
//! different clients) are shown different keys; the watcher reads every mirror every round. It
//! also needs an account with gas, which a node's operator key may not want to spend.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use nox_operator::keystore::{self, PassphraseSource};

/// `nox watch`
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The registry: a chain preset (`anvil`, a chain id with `deployments/<id>.json`, a
    /// deployment record file) or a TOML file with a `[chain]` section (a node.toml).
    #[arg(long, default_value = "anvil")]
    pub chain: String,
    /// JSON-RPC URL (default: the preset's or the file's).
    #[arg(long)]
    pub rpc: Option<String>,
    /// A directory mirror to read descriptors from (`http://IP:PORT`); repeat for each mirror.
    /// Without it: the mirrors the preset's deployment record lists.
    #[arg(long = "directory")]
    pub directories: Vec<String>,
    /// The reporter's account: a Web3 Secret Storage v3 keystore (`nox operator new-key`); it
    /// pays the gas and receives the reporter's share.
    #[arg(long)]
    pub keystore: PathBuf,
    /// A file whose first line is the passphrase (else NOX_OPERATOR_PASSWORD, else a prompt).
    #[arg(long)]
    pub password_file: Option<PathBuf>,
    /// Seconds between rounds.
    #[arg(long, default_value_t = 5)]
    pub interval_secs: u64,
}

/// Runs the watcher until SIGINT or SIGTERM.
pub fn run(args: &WatchArgs) -> Result<(), String> {
    // The registry to watch: a TOML file's `[chain]` section (its `preset` expanded, as `nox
    // node` reads it), else a preset, exactly as `nox client --chain` takes it, with the
    // record's mirrors.
    let (chain, listed) =
        nox_client_io::chain_and_mirrors(&args.chain, args.rpc.as_deref()).map_err(|e| e.to_string())?;
    let rpc = chain.rpc_urls.first().cloned().ok_or("the chain section names no RPC URL")?;
    let directories = if args.directories.is_empty() { listed } else { args.directories.clone() };
    if directories.is_empty() {
        return Err(format!(
            "--chain {}: no directory mirror to watch: give --directory http://IP:PORT (repeat for each), or list \
             `mirrors` in the deployment record (nox deploy --mirror)",
            args.chain
        ));
    }
    let mirrors = nox_directory::Mirrors::parse(&directories).map_err(|e| e.to_string())?;
    let pass = PassphraseSource::choose(args.password_file.as_deref(), |n| std::env::var(n).ok())
        .read(false)
        .map_err(|e| e.to_string())?;
    let reporter = keystore::load(&args.keystore, &pass).map_err(|e| e.to_string())?;
    let config = nox_node::watch::WatchConfig {
        chain,
        rpc,
        mirrors: mirrors.addrs().to_vec(),
        interval: Duration::from_secs(args.interval_secs.max(1)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let stop = crate::stop_on_signal();
        nox_node::watch::run(config, reporter, stop).await.map_err(|e| e.to_string())
    })
}
