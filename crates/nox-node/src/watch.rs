//! The slashing watcher's loop (`nox watch`, issue 33; moved out of the binary, issue 34).
//! Every round it re-reads the node registry, fetches the topology document of every directory
//! mirror it is given, and feeds each registered node's descriptor to the pure
//! [`crate::watcher::Watcher`]; evidence of an equivocation (two different keys signed by one
//! operator for one epoch, e.g. one descriptor on one mirror and another on a second) is
//! submitted to `NodeRegistry.slashEquivocation` from the reporter's account, which receives
//! the reporter's share of the stake.
//!
//! Here rather than in `nox-operator` (where operator tools live): it needs
//! [`crate::ChainMembership`] and the watcher, and `nox-node` already depends on `nox-operator`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use nox_chain::{Address, ChainConfig, PrivateKeySigner};

use crate::NodeError;
use crate::watcher::{ReportState, Watcher};

/// Time one mirror has to serve its document.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(3);

/// What a watcher watches.
#[derive(Clone, Debug)]
pub struct WatchConfig {
    /// The registry's chain.
    pub chain: ChainConfig,
    /// The JSON-RPC URL evidence is submitted to.
    pub rpc: String,
    /// Every directory mirror, read each round.
    pub mirrors: Vec<SocketAddr>,
    /// Time between rounds.
    pub interval: Duration,
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Runs rounds every `config.interval` until `stop` turns true. Fails only if the registry
/// cannot be read at the start; a mirror or a submission failing is logged and retried.
pub async fn run(
    config: WatchConfig,
    reporter: PrivateKeySigner,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let WatchConfig { chain, rpc, mirrors, interval } = config;
    let membership = crate::ChainMembership::start(chain.clone()).await?;
    let mut watcher = Watcher::new(chain.chain_id, chain.registry);
    tracing::info!(
        reporter = %reporter.address(),
        registry = %chain.registry,
        mirrors = mirrors.len(),
        "watching for equivocation"
    );
    loop {
        round(&membership, &mirrors, &mut watcher, &rpc, chain.registry, &reporter).await;
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = stop.wait_for(|s| *s) => return Ok(()),
        }
    }
}

/// One round: registry, every mirror's document, then the due submissions.
async fn round(
    membership: &crate::ChainMembership,
    mirrors: &[SocketAddr],
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
