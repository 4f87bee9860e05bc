//! A registry view that clients, nodes and directories keep up to date: several RPC endpoints
//! tried in turn, the last verified snapshot kept when none answers or one lies, and no going
//! back to an older block.

use std::{sync::Arc, time::Duration};

use alloy::primitives::Address;
use nox_topology::Membership;
use serde::Deserialize;

use crate::error::ChainError;
use crate::reader::RegistryReader;
use crate::snapshot::RegistrySnapshot;

/// `[chain]` of a node, client or directory configuration.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// Ethereum JSON-RPC endpoints, tried in order.
    pub rpc_urls: Vec<String>,
    /// The node registry contract.
    pub registry: Address,
    /// The chain id the registry lives on (an endpoint serving another chain is refused).
    pub chain_id: u64,
    /// Read the registry this many blocks below the latest (reorg margin; 0 on a dev chain).
    #[serde(default)]
    pub confirmations: u64,
    /// Nodes only: the operator's secp256k1 key (64 hex digits, file mode 0600) that signs the
    /// node's epoch-key statements; its address must be the registered operator.
    #[serde(default)]
    pub operator_key_file: Option<std::path::PathBuf>,
}

/// Time one endpoint has to connect and give a snapshot: an endpoint that accepts connections
/// but never answers (a frozen node) must not stall every reader of the view.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The last verified registry snapshot and the endpoints to refresh it from.
#[derive(Debug)]
pub struct RegistryView {
    config: ChainConfig,
    readers: Vec<Option<RegistryReader>>,
    last: Option<Arc<RegistrySnapshot>>,
}

impl RegistryView {
    /// A view with no snapshot yet (call [`RegistryView::refresh`]).
    pub fn new(config: ChainConfig) -> Result<Self, ChainError> {
        if config.rpc_urls.is_empty() {
            return Err(ChainError::Config("[chain] rpc_urls is empty".into()));
        }
        let readers = config.rpc_urls.iter().map(|_| None).collect();
        Ok(Self { config, readers, last: None })
    }

    /// The configuration.
    pub fn config(&self) -> &ChainConfig {
        &self.config
    }

    /// The last verified snapshot.
    pub fn last(&self) -> Option<Arc<RegistrySnapshot>> {
        self.last.clone()
    }

    /// Reads a new snapshot from the first endpoint that gives one that verifies and is not
    /// older than the last one. On failure the last snapshot stays, and the error names every
    /// endpoint's failure.
    pub async fn refresh(&mut self) -> Result<Arc<RegistrySnapshot>, ChainError> {
        let mut failures = Vec::new();
        for (i, url) in self.config.rpc_urls.iter().enumerate() {
            let timed_out = || format!("{url}: no answer within {} s", READ_TIMEOUT.as_secs());
            if self.readers[i].is_none() {
                let connect = RegistryReader::connect(url, self.config.registry, Some(self.config.chain_id));
                match tokio::time::timeout(READ_TIMEOUT, connect).await {
                    Ok(Ok(reader)) => self.readers[i] = Some(reader),
                    Ok(Err(e)) => {
                        failures.push(format!("{url}: {e}"));
                        continue;
                    }
                    Err(_) => {
                        failures.push(timed_out());
                        continue;
                    }
                }
            }
            let Some(reader) = &self.readers[i] else { continue };
            let read = match tokio::time::timeout(READ_TIMEOUT, reader.snapshot(self.config.confirmations)).await {
                Ok(read) => read,
                Err(_) => {
                    failures.push(timed_out());
                    continue;
                }
            };
            match read {
                Ok(snapshot) => {
                    if let Some(last) = &self.last
                        && snapshot.block < last.block
                    {
                        failures.push(format!(
                            "{url}: block {} is older than the last verified block {}",
                            snapshot.block, last.block
                        ));
                        continue;
                    }
                    let snapshot = Arc::new(snapshot);
                    self.last = Some(snapshot.clone());
                    return Ok(snapshot);
                }
                Err(e) => failures.push(format!("{url}: {e}")),
            }
        }
        Err(ChainError::Rpc(format!("no endpoint gave a verified registry snapshot ({})", failures.join("; "))))
    }

    /// Starts from a snapshot verified earlier (a node's kept copy, when no endpoint answers at
    /// start); ignored if the view already holds one. Refreshes never go below its block.
    pub fn seed(&mut self, snapshot: RegistrySnapshot) {
        if self.last.is_none() {
            self.last = Some(Arc::new(snapshot));
        }
    }

    /// The membership of the last verified snapshot.
    pub fn membership(&self) -> Option<Arc<Membership>> {
        self.last.as_ref().map(|s| Arc::new(s.membership().0))
    }
}
