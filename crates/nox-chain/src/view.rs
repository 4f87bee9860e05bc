//! A registry view that clients, nodes and directories keep up to date: several RPC endpoints
//! tried in turn, the last verified snapshot kept when none answers or one lies, and no going
//! back to an older block.

use std::sync::Arc;

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
            if self.readers[i].is_none() {
                match RegistryReader::connect(url, self.config.registry, Some(self.config.chain_id)).await {
                    Ok(reader) => self.readers[i] = Some(reader),
                    Err(e) => {
                        failures.push(format!("{url}: {e}"));
                        continue;
                    }
                }
            }
            let Some(reader) = &self.readers[i] else { continue };
            match reader.snapshot(self.config.confirmations).await {
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

    /// The membership of the last verified snapshot.
    pub fn membership(&self) -> Option<Arc<Membership>> {
        self.last.as_ref().map(|s| Arc::new(s.membership().0))
    }
}
