//! The crate's error: every message (`Display`) is the one `nox wallet`/`nox tx` printed before
//! the move (issue 34), byte for byte.

use std::path::PathBuf;

/// Why a wallet command stopped.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// `nox wallet new`/`restore` over an existing wallet.
    #[error("{} exists: refusing to overwrite a wallet", .0.display())]
    WalletExists(PathBuf),
    /// Neither `--passphrase-file` nor `NOX_WALLET_PASSPHRASE`.
    #[error("no passphrase: give --passphrase-file or set NOX_WALLET_PASSPHRASE")]
    NoPassphrase,
    /// The passphrase's first line is empty.
    #[error("the passphrase is empty")]
    EmptyPassphrase,
    /// A file named on the command line could not be read or written.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A `wallet.key` copy that does not open under the passphrase.
    #[error("{}: {source}", path.display())]
    SeedFile {
        /// The copy.
        path: PathBuf,
        /// Why.
        source: nox_wallet::WalletError,
    },
    /// A key file that holds no private key.
    #[error("{}: {source}", path.display())]
    KeyFile {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: nox_chain::ChainError,
    },
    /// `--to` is not a shielded address.
    #[error("--to {text}: {source}")]
    ShieldedAddress {
        /// The text given.
        text: String,
        /// Why.
        source: nox_wallet::error::AddressError,
    },
    /// An amount that does not parse in the asset's unit.
    #[error(transparent)]
    Amount(#[from] nox_wallet::units::AmountError),
    /// `nox wallet pay` without an executor.
    #[error("give --executor (or --testnet)")]
    NoExecutor,
    /// A JSON-RPC URL that does not parse.
    #[error("RPC URL {url:?}: {why}")]
    RpcUrl {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// `insertBatch` failed, and reading whether a rival inserted the batch failed too.
    #[error("{}; {}", .0.0, .0.1)]
    InsertAndRace(Box<(nox_wallet_io::SendError, nox_wallet_io::RaceError)>),
    /// The wallet (keys, notes, a transaction that cannot be made).
    #[error(transparent)]
    Wallet(#[from] nox_wallet::WalletError),
    /// The wallet directory.
    #[error(transparent)]
    Dir(#[from] nox_wallet_io::DirError),
    /// A proving key.
    #[error(transparent)]
    Key(#[from] nox_wallet_io::KeyError),
    /// The prover.
    #[error(transparent)]
    Pay(#[from] nox_pay::PayError),
    /// An account's provider.
    #[error(transparent)]
    Chain(#[from] nox_chain::ChainError),
    /// A chain read.
    #[error(transparent)]
    Read(#[from] nox_wallet_io::ChainError),
    /// The pool's events.
    #[error(transparent)]
    Sync(#[from] nox_wallet_io::chain::SyncError),
    /// A transaction sent (or recalled from the journal).
    #[error(transparent)]
    Send(#[from] nox_wallet_io::SendError),
    /// A deposit.
    #[error(transparent)]
    Deposit(#[from] nox_wallet_io::DepositError),
    /// A direct submission.
    #[error(transparent)]
    Direct(#[from] nox_wallet_io::DirectError),
    /// An insertion batch.
    #[error(transparent)]
    Insert(#[from] nox_wallet_io::InsertError),
    /// The race with the exits' inserters.
    #[error(transparent)]
    Race(#[from] nox_wallet_io::RaceError),
    /// The terminal or standard output.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A file written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl From<CliError> for String {
    fn from(e: CliError) -> String {
        e.to_string()
    }
}
