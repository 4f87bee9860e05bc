//! Reading the registry at a named block through any Ethereum JSON-RPC endpoint, and refusing
//! what does not verify.

use alloy::eips::BlockId;
use alloy::primitives::Address;
use alloy::providers::{DynProvider, Provider, ProviderBuilder};

use crate::bindings::NodeRegistry;
use crate::error::ChainError;
use crate::snapshot::{RegisteredNode, RegistrySnapshot, fingerprint};

/// Nodes fetched per `nodesPage` call.
pub const PAGE: u64 = 100;
/// Most active nodes a snapshot accepts (the topology's own limit).
pub const MAX_NODES: u64 = nox_topology::MAX_NODES as u64;

/// A registry on one chain, read through one RPC endpoint.
#[derive(Clone, Debug)]
pub struct RegistryReader {
    provider: DynProvider,
    registry: Address,
    chain_id: u64,
}

impl RegistryReader {
    /// Connects to `rpc_url` and checks the chain id (if `expected_chain_id` is given) and that
    /// there is code at `registry`.
    pub async fn connect(rpc_url: &str, registry: Address, expected_chain_id: Option<u64>) -> Result<Self, ChainError> {
        let url = rpc_url.parse().map_err(|e| ChainError::Config(format!("RPC URL {rpc_url:?}: {e}")))?;
        let provider = ProviderBuilder::new().connect_http(url).erased();
        let chain_id = provider.get_chain_id().await.map_err(ChainError::rpc)?;
        if let Some(expected) = expected_chain_id
            && expected != chain_id
        {
            return Err(ChainError::Config(format!("{rpc_url} serves chain {chain_id}, expected {expected}")));
        }
        let code = provider.get_code_at(registry).await.map_err(ChainError::rpc)?;
        if code.is_empty() {
            return Err(ChainError::NoRegistry(format!("{registry} on chain {chain_id}")));
        }
        Ok(Self { provider, registry, chain_id })
    }

    /// The chain id.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// The registry address.
    pub fn registry(&self) -> Address {
        self.registry
    }

    /// The provider (for other reads on the same endpoint).
    pub fn provider(&self) -> &DynProvider {
        &self.provider
    }

    /// The latest block number.
    pub async fn latest_block(&self) -> Result<u64, ChainError> {
        self.provider.get_block_number().await.map_err(ChainError::rpc)
    }

    /// The registry `confirmations` blocks below the latest one.
    pub async fn snapshot(&self, confirmations: u64) -> Result<RegistrySnapshot, ChainError> {
        let latest = self.latest_block().await?;
        self.snapshot_at(latest.saturating_sub(confirmations)).await
    }

    /// The registry's active list at `block`: every call names that block, the node list is
    /// paged, and the fingerprint recomputed from the list must equal the contract's at the same
    /// block, or the snapshot is refused.
    pub async fn snapshot_at(&self, block: u64) -> Result<RegistrySnapshot, ChainError> {
        let at = BlockId::number(block);
        let registry = NodeRegistry::new(self.registry, &self.provider);
        let state = registry.registryState().block(at).call().await.map_err(ChainError::rpc)?;
        let (version, count, reported) = (state._0, state._1, state._2);
        let count = u64::try_from(count)
            .ok()
            .filter(|c| *c <= MAX_NODES)
            .ok_or_else(|| ChainError::Listing(format!("{count} active nodes exceeds the limit of {MAX_NODES}")))?;
        let mut nodes = Vec::with_capacity(count as usize);
        while (nodes.len() as u64) < count {
            let start = nodes.len() as u64;
            let page = registry
                .nodesPage(alloy::primitives::U256::from(start), alloy::primitives::U256::from(PAGE.min(count - start)))
                .block(at)
                .call()
                .await
                .map_err(ChainError::rpc)?;
            if page.is_empty() {
                return Err(ChainError::Listing(format!("page at {start} of {count} is empty")));
            }
            nodes.extend(page.into_iter().map(|v| RegisteredNode {
                operator: v.operator,
                identity_key: v.identityKey.0,
                link_key: v.linkKey.0,
                link_address: v.linkAddress,
                role: v.role,
                stake: v.stake,
            }));
        }
        if nodes.len() as u64 != count {
            return Err(ChainError::Listing(format!("listed {} nodes, the registry counts {count}", nodes.len())));
        }
        let computed = fingerprint(self.chain_id, self.registry, &nodes);
        if computed != reported {
            return Err(ChainError::FingerprintMismatch {
                block,
                reported: reported.to_string(),
                computed: computed.to_string(),
            });
        }
        Ok(RegistrySnapshot {
            chain_id: self.chain_id,
            registry: self.registry,
            block,
            version,
            fingerprint: computed,
            nodes,
        })
    }
}
