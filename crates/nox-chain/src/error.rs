//! Errors of the chain layer.

/// Why a chain operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A local tool (Anvil, npm) is missing or failed.
    #[error("{0}")]
    Tool(String),
    /// The RPC endpoint failed or answered something malformed.
    #[error("RPC {0}")]
    Rpc(String),
    /// A contract call reverted or a transaction failed.
    #[error("contract: {0}")]
    Contract(String),
    /// What the RPC endpoint returned does not verify: the fingerprint it reports differs from
    /// the one recomputed from the node list it returned at the same block.
    #[error(
        "registry at block {block}: fingerprint mismatch (contract says {reported}, node list hashes to {computed})"
    )]
    FingerprintMismatch {
        /// Block read.
        block: u64,
        /// The contract's `fingerprint()`.
        reported: String,
        /// Recomputed from `nodesPage`.
        computed: String,
    },
    /// The registry listing is inconsistent (count changed between pages, too many nodes…).
    #[error("registry listing: {0}")]
    Listing(String),
    /// There is no contract at the configured address, or it is not a NOX registry.
    #[error("no NOX registry at {0}")]
    NoRegistry(String),
    /// A configuration value is invalid.
    #[error("chain configuration: {0}")]
    Config(String),
    /// Testnet Groth16 keys (public randomness: anyone can forge proofs) on a chain that is not
    /// a local development chain, not explicitly allowed ([`crate::testnet_keys`]).
    #[error(
        "chain {chain_id} ({client:?}) is not a local development chain, and the testnet's Groth16 keys come from \
         public randomness: anyone could forge spend proofs and drain the pool. Use keys from `nox zk setup`, or \
         explicitly allow testnet keys on this chain (`--allow-testnet-keys-on-public-chain`, or \
         NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN=1 for the wallet and relayer) for a throwaway deployment"
    )]
    TestnetKeysOnPublicChain {
        /// The chain's id.
        chain_id: u64,
        /// Its `web3_clientVersion` (empty if unknown).
        client: String,
    },
    /// This node is not (or no longer) registered.
    #[error("{0}")]
    NotRegistered(String),
}

impl ChainError {
    pub(crate) fn rpc(e: impl core::fmt::Display) -> Self {
        Self::Rpc(e.to_string())
    }
    pub(crate) fn contract(e: impl core::fmt::Display) -> Self {
        Self::Contract(e.to_string())
    }
}
