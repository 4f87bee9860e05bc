//! Typed errors.

use thiserror::Error;

/// Everything that can go wrong in the wallet core.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WalletError {
    /// The ZK layer refused (bad scalar, unsatisfied statement, proof failure).
    #[error(transparent)]
    Zk(#[from] nox_zk::ZkError),
    /// A payment address string is malformed.
    #[error("malformed payment address: {0}")]
    BadAddress(&'static str),
    /// A wallet file is not one this version reads.
    #[error("not a NOX wallet file: {0}")]
    BadFile(&'static str),
    /// The passphrase is wrong or the file was modified.
    #[error("wrong passphrase, or the wallet file was modified")]
    Decrypt,
    /// The passphrase-derived key could not be computed.
    #[error("key derivation: {0}")]
    Kdf(String),
    /// The pool's events contradict each other or the wallet's view (a lying or reorganised RPC
    /// endpoint, or a bug): the wallet refuses to build on them.
    #[error("inconsistent pool events: {0}")]
    Inconsistent(String),
    /// No unspent, inserted note of this asset can pay the amount.
    #[error(
        "no spendable note of this asset holds {needed} (largest spendable: {largest}; pending insertion: {pending})"
    )]
    InsufficientFunds {
        /// Amount asked for.
        needed: u128,
        /// The largest single spendable note.
        largest: u128,
        /// Value queued but not yet inserted in the tree (spendable after the next batch).
        pending: u128,
    },
    /// The wallet state file does not parse.
    #[error("wallet state: {0}")]
    State(String),
}
