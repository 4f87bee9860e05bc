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
    /// The wallet's spendable notes of this asset do not add up to the amount (inputs cannot
    /// cover it even after joining).
    #[error(
        "not enough funds: {have} spendable, {need} needed ({pending} more pending insertion, spendable after the next batch)"
    )]
    InsufficientFunds {
        /// Total of the spendable notes (not in flight).
        have: u128,
        /// What the transaction needs from the notes.
        need: u128,
        /// Value queued but not yet inserted in the tree.
        pending: u128,
    },
    /// The spendable notes add up to the amount, but no two of them do (a transaction spends at
    /// most two): join notes first (`nox wallet join`), then retry.
    #[error(
        "the notes must be joined first: {total} spendable in all, but the largest two hold {largest_pair} and {needed} is needed"
    )]
    NeedsJoin {
        /// Total of the spendable notes.
        total: u128,
        /// The largest sum of two of them.
        largest_pair: u128,
        /// What the transaction needs from the notes.
        needed: u128,
    },
    /// A join needs two spendable notes.
    #[error("nothing to join: {notes} spendable note(s) of this asset, a join needs two")]
    NothingToJoin {
        /// Spendable notes of the asset (not in flight).
        notes: usize,
    },
    /// A transaction makes at most two notes.
    #[error("{outputs} outputs asked for: a transaction makes at most two notes")]
    TooManyOutputs {
        /// Outputs asked for.
        outputs: usize,
    },
    /// Both outputs are taken by the request and the inputs leave change: the change would be lost.
    #[error("two outputs asked for and {change} of change left: no room for it (make the amounts exact)")]
    NoRoomForChange {
        /// The change that had no output.
        change: u128,
    },
    /// The request breaks a rule of the pool (recipient, fee, public input, asset, amounts).
    #[error("invalid transaction request: {0}")]
    BadRequest(&'static str),
    /// The view was made for other keys (a full view and a viewing-only view are fed differently).
    #[error("wrong keys for this view: {0}")]
    ViewMode(&'static str),
    /// The wallet state file does not parse.
    #[error("wallet state: {0}")]
    State(String),
}
