//! `nox watch`: the slashing watcher (issue 33). Every round it re-reads the node registry,
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

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use nox_chain::{Address, PrivateKeySigner};
use nox_node::watcher::{ReportState, Watcher};
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
    #[arg(long = "directory", required = true)]
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

/// Time one mirror has to serve its document.
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The registry to watch: a TOML file's `[chain]` section (its `preset` expanded, as `nox node`
/// reads it), else a preset, exactly as `nox client --chain` takes it.
fn chain(spec: &str, rpc: Option<&str>) -> Result<nox_chain::ChainConfig, String> {
    crate::operator_cmd::client_chain(spec, rpc)
}

/// Runs the watcher until SIGINT or SIGTERM.
pub fn run(args: &WatchArgs) -> Result<(), String> {
    let chain = chain(&args.chain, args.rpc.as_deref())?;
    let rpc = chain.rpc_urls.first().cloned().ok_or("the chain section names no RPC URL")?;
    let mirrors = nox_directory::Mirrors::parse(&args.directories).map_err(|e| e.to_string())?;
    let pass = PassphraseSource::choose(args.password_file.as_deref(), |n| std::env::var(n).ok())
        .read(false)
        .map_err(|e| e.to_string())?;
    let reporter = keystore::load(&args.keystore, &pass).map_err(|e| e.to_string())?;
    let interval = Duration::from_secs(args.interval_secs.max(1));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let mut stop = crate::stop_on_signal();
        let membership = nox_node::ChainMembership::start(chain.clone()).await.map_err(|e| e.to_string())?;
        let mut watcher = Watcher::new(chain.chain_id, chain.registry);
        tracing::info!(
            reporter = %reporter.address(),
            registry = %chain.registry,
            mirrors = mirrors.addrs().len(),
            "watching for equivocation"
        );
        loop {
            round(&membership, mirrors.addrs(), &mut watcher, &rpc, chain.registry, &reporter).await;
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                _ = stop.wait_for(|s| *s) => return Ok(()),
            }
        }
    })
}

/// One round: registry, every mirror's document, then the due submissions.
async fn round(
    membership: &nox_node::ChainMembership,
    mirrors: &[std::net::SocketAddr],
    watcher: &mut Watcher,
    rpc: &str,
    registry: Address,
    reporter: &PrivateKeySigner,
) {
    let snapshot = membership.refresh().await;
    let now = now_unix();
    for &addr in mirrors {
        let document = match nox_directory::fetch_document(addr, FETCH_TIMEOUT).await {
            Ok(document) => document,
            Err(error) => {
                tracing::warn!(%addr, %error, "mirror unavailable this round");
                continue;
            }
        };
        let epoch = document.schedule.epoch_at(now);
        watcher.prune(epoch);
        for descriptor in &document.nodes {
            // Only the registry's members, under their registered operator: the statements must
            // be that operator's signatures, which the watcher checks.
            let Some(member) = snapshot.by_identity(&descriptor.descriptor.identity_key.to_bytes()) else { continue };
            let seen = watcher.observe(member.operator, descriptor, epoch, now);
            if seen.unverifiable > 0 {
                tracing::warn!(%addr, operator = %member.operator, statements = seen.unverifiable, "statements that are not the operator's, ignored");
            }
            for evidence in &seen.equivocations {
                tracing::warn!(operator = %evidence.operator, epoch = evidence.epoch, %addr, "equivocation: two signed key sets for one epoch");
            }
        }
    }
    let registered: BTreeSet<Address> = snapshot.nodes.iter().map(|n| n.operator).collect();
    for evidence in watcher.retain_registered(&registered) {
        tracing::info!(operator = %evidence.operator, epoch = evidence.epoch, "operator no longer registered (slashed or gone); evidence dropped");
    }
    for evidence in watcher.due(now) {
        let outcome = nox_chain::slash::submit_to(rpc, registry, reporter, &evidence).await;
        let state = watcher.submitted(&evidence, outcome.is_ok(), now_unix());
        match (outcome, state) {
            (Ok(()), _) => {
                tracing::info!(operator = %evidence.operator, epoch = evidence.epoch, reporter = %reporter.address(), "slashed for equivocation")
            }
            (Err(error), Some(ReportState::GaveUp)) => {
                tracing::warn!(operator = %evidence.operator, epoch = evidence.epoch, %error, "slashing failed; giving up")
            }
            (Err(error), _) => {
                tracing::warn!(operator = %evidence.operator, epoch = evidence.epoch, %error, "slashing failed; will retry")
            }
        }
    }
}
