//! Typed errors.

use thiserror::Error;

/// Everything that can go wrong in the wallet core.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WalletError {
    /// The ZK layer refused (bad scalar, unsatisfied statement, proof failure).
    #[error(transparent)]
    Zk(#[from] nox_zk::ZkError),
    /// A payment address or viewing key string is malformed.
    #[error(transparent)]
    BadAddress(#[from] AddressError),
    /// A wallet file is not one this version reads.
    #[error("not a NOX wallet file: {0}")]
    BadFile(&'static str),
    /// The passphrase is wrong or the file was modified.
    #[error("wrong passphrase, or the wallet file was modified")]
    Decrypt,
    /// The passphrase-derived key could not be computed (parameters Argon2id refuses).
    #[error("key derivation: {0}")]
    Kdf(argon2::Error),
    /// The file cipher refused to seal (it cannot for a wallet's sizes; no panic instead).
    #[error("the wallet file cipher refused to seal")]
    Seal,
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

/// What is wrong with a `nox1…` payment address or a `noxview1…` viewing key string; each
/// message says what the person most likely did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AddressError {
    /// Nothing was given.
    #[error("empty: a shielded address starts with nox1")]
    Empty,
    /// `0x…` and 40 hex digits.
    #[error("this is an Ethereum address, not a shielded address (a shielded address starts with nox1)")]
    EthereumAddress,
    /// The `noxpay:<hex>` form of the first wallet version, no longer read.
    #[error("this is the old noxpay: address form, which is no longer accepted: ask for the nox1… address")]
    RetiredForm,
    /// A `noxview1…` viewing key where a payment address was expected.
    #[error("this is a viewing key (noxview1…), not a payment address; keep it private and ask for the nox1… address")]
    ViewingKeyNotAddress,
    /// A `nox1…` payment address where a viewing key was expected.
    #[error("this is a payment address (nox1…), not a viewing key (noxview1…)")]
    AddressNotViewingKey,
    /// Another bech32 prefix (another coin's address, or a truncated string).
    #[error("wrong prefix: it must start with {expected}")]
    WrongPrefix {
        /// The prefix that was expected, separator included.
        expected: &'static str,
    },
    /// Not a bech32 string at all (no `1` separator, or nothing after it).
    #[error("not a shielded address: expected nox1 followed by 110 letters and digits")]
    NotBech32,
    /// Upper and lower case mixed (bech32 allows one or the other).
    #[error("mixed upper and lower case: write the address in one case")]
    MixedCase,
    /// A character outside bech32's alphabet (`1`, `b`, `i`, `o` cannot appear after the prefix).
    #[error("the character {0:?} cannot appear in an address (typo? bech32 has no 1, b, i or o after the prefix)")]
    InvalidCharacter(char),
    /// The checksum does not match: at least one character is wrong.
    #[error("typo: the checksum does not match")]
    Checksum,
    /// A valid checksum over the wrong number of characters (a string of another kind).
    #[error("wrong length: {chars} characters (an address has 114, a viewing key 118)")]
    WrongLength {
        /// Characters given.
        chars: usize,
    },
    /// A version this software does not know (made by a newer wallet).
    #[error("address version {0} is not supported by this wallet (upgrade)")]
    UnknownVersion(u8),
    /// The owner word is not below the BN254 scalar field order.
    #[error("the owner tag is not a BN254 scalar: not a NOX address")]
    OwnerOutOfRange,
    /// The viewing public key has small order: no one could read notes sent to it.
    #[error("the viewing key in this address is invalid (small order): notes sent to it could never be read")]
    LowOrderViewingKey,
}

impl AddressError {
    /// A stable name for the error, as the spec's vectors write it (docs/spec/notes.md §2.2).
    pub fn kind(&self) -> &'static str {
        match self {
            AddressError::Empty => "empty",
            AddressError::EthereumAddress => "ethereum_address",
            AddressError::RetiredForm => "retired_form",
            AddressError::ViewingKeyNotAddress => "viewing_key_not_address",
            AddressError::AddressNotViewingKey => "address_not_viewing_key",
            AddressError::WrongPrefix { .. } => "wrong_prefix",
            AddressError::NotBech32 => "not_bech32",
            AddressError::MixedCase => "mixed_case",
            AddressError::InvalidCharacter(_) => "invalid_character",
            AddressError::Checksum => "checksum",
            AddressError::WrongLength { .. } => "wrong_length",
            AddressError::UnknownVersion(_) => "unknown_version",
            AddressError::OwnerOutOfRange => "owner_out_of_range",
            AddressError::LowOrderViewingKey => "low_order_viewing_key",
        }
    }
}
