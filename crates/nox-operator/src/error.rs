//! Errors of the operator layer.

use std::path::PathBuf;

/// Why an operator command failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    /// The keystore decrypted to nothing valid under this passphrase (its MAC does not match).
    #[error("wrong passphrase for keystore {0}")]
    WrongPassphrase(PathBuf),
    /// The keystore file is missing, unreadable or not Web3 Secret Storage v3 JSON.
    #[error("keystore {path}: {reason}")]
    Keystore {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A keystore would overwrite an existing file.
    #[error("{0} already exists: not overwriting a keystore")]
    KeystoreExists(PathBuf),
    /// No passphrase could be obtained (no terminal, no file, no variable), or it is empty.
    #[error("passphrase: {0}")]
    Passphrase(String),
    /// Reading or writing a file.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// A deployment record or preset is missing or malformed.
    #[error("deployment record: {0}")]
    Record(String),
    /// The chain a record names is not the chain at the RPC URL.
    #[error("the RPC endpoint is chain {actual}, the deployment record is for chain {expected}")]
    WrongChain {
        /// The record's chain id.
        expected: u64,
        /// The endpoint's.
        actual: u64,
    },
    /// The CREATE2 factory is not deployed on this chain.
    #[error(
        "no CREATE2 factory at {0} on this chain: deploy the standard deterministic-deployment proxy first \
         (its presigned transaction, see the nox-operator README)"
    )]
    NoFactory(String),
    /// The operator has no node in the registry (or not in the state the call needs).
    #[error("{0}")]
    State(String),
    /// The user answered no at the confirmation prompt.
    #[error("cancelled")]
    Cancelled,
    /// The chain layer failed (RPC, contract revert, testnet keys on a public chain…).
    #[error(transparent)]
    Chain(#[from] nox_chain::ChainError),
    /// Node key storage failed.
    #[error("node keys: {0}")]
    NodeKeys(String),
}

impl OperatorError {
    /// A file operation on `path` that failed with `e`.
    pub fn io(path: impl Into<PathBuf>, e: impl core::fmt::Display) -> Self {
        Self::Io { path: path.into(), reason: e.to_string() }
    }
    pub(crate) fn rpc(e: impl core::fmt::Display) -> Self {
        Self::Chain(nox_chain::ChainError::Rpc(e.to_string()))
    }
    pub(crate) fn contract(e: impl core::fmt::Display) -> Self {
        Self::Chain(nox_chain::ChainError::Contract(e.to_string()))
    }
}
