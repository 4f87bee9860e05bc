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

/// Why `nox wallet send/split/join/withdraw` or `nox tx` stopped on its own account (the
/// crate's other errors are [`CliError`] and [`crate::pool::PoolError`]); every message is the
/// command's, byte for byte as before the move out of the binary (issue 34).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The command's async runtime did not start.
    #[error(transparent)]
    Runtime(std::io::Error),
    /// `send` needs a join first and the user declined it (or could not be asked).
    #[error("not sent: run `nox wallet join` (same options) first, or pass --auto-join")]
    JoinDeclined,
    /// `send --auto-join` joined as often as it may and still no pair of notes covers it.
    #[error("not sent: still no pair of notes covers it after {0} joins")]
    StillNoPair(usize),
    /// `send --auto-join`: the joined note was not inserted within the wait (seconds).
    #[error(
        "the joined note was not inserted within {0} s: run the send again once `nox wallet balance` shows it \
         spendable"
    )]
    JoinNotInserted(u64),
    /// `split`: no note holds the amounts (why).
    #[error("no note holds the split's amounts: {0}")]
    SplitNeedsJoin(String),
    /// `--direct` without `--key-file` (the parser requires it; a library caller may not).
    #[error("--direct needs --key-file")]
    NoKeyFile,
    /// `nox tx` without a mixnet to reach the relayer through.
    #[error("give --testnet or --chain (the mixnet and its pool)")]
    NoMixnet,
    /// `nox tx swap` without `--testnet` (the Uniswap deployment is the testnet's).
    #[error("give --testnet")]
    NoTestnet,
    /// `nox tx swap` on a testnet without the Uniswap deployment.
    #[error("this testnet has no Uniswap deployment and adaptor (chain.json has no defi)")]
    NoDefi,
}

impl From<CommandError> for crate::Stop {
    fn from(e: CommandError) -> Self {
        crate::Stop::Failed(e.to_string())
    }
}

/// Why a `nox wallet` or `nox tx` command failed ([`crate::wallet::run`],
/// [`crate::tx::command::run`]): the crate's typed errors as they are, and the messages of a
/// private transaction's [`Stop`](crate::Stop). The `Display` text is what the binary prints after
/// `error: `, byte for byte as when the commands returned `String` (issue 34).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The wallet's files, the chain, the prover (see [`CliError`]).
    #[error(transparent)]
    Cli(Box<CliError>),
    /// A command's own refusal (see [`CommandError`]).
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The pool, or the way to read it (see [`crate::pool::PoolError`]).
    #[error(transparent)]
    Pool(#[from] crate::pool::PoolError),
    /// A `nox tx` step (see [`crate::tx::TxError`]).
    #[error(transparent)]
    Tx(Box<crate::tx::TxError>),
    /// The balance covers the transaction but no two notes do (a command that does not join on
    /// its own).
    #[error("your notes must be joined first (`nox wallet join`): {0}")]
    NeedsJoin(String),
    /// A private transaction stopped; the message says why and what was sent, if anything
    /// (an unconfirmed hand-over starts with [`crate::wallet::UNCONFIRMED`]).
    #[error("{0}")]
    Stopped(String),
}

impl RunError {
    /// The process exit status (`crate::wallet::exit_status`): 3 for a transaction handed over
    /// whose outcome is unknown, 1 otherwise.
    pub fn exit_status(&self) -> u8 {
        crate::wallet::exit_status(&self.to_string())
    }
}

impl From<crate::Stop> for RunError {
    /// A stop reported as an error, with its message ([`crate::Stop::message`]).
    fn from(stop: crate::Stop) -> Self {
        RunError::Stopped(stop.message())
    }
}

impl From<CliError> for RunError {
    fn from(e: CliError) -> Self {
        RunError::Cli(Box::new(e))
    }
}

impl From<crate::tx::TxError> for RunError {
    fn from(e: crate::tx::TxError) -> Self {
        RunError::Tx(Box::new(e))
    }
}

impl From<nox_wallet::units::AmountError> for RunError {
    fn from(e: nox_wallet::units::AmountError) -> Self {
        CliError::from(e).into()
    }
}

impl From<nox_pay::PayError> for RunError {
    fn from(e: nox_pay::PayError) -> Self {
        CliError::from(e).into()
    }
}

impl From<serde_json::Error> for RunError {
    fn from(e: serde_json::Error) -> Self {
        CliError::from(e).into()
    }
}

impl From<RunError> for crate::Stop {
    fn from(e: RunError) -> Self {
        crate::Stop::Failed(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{CommandError, RunError};
    use nox_wallet::units::Unit;

    #[test]
    fn the_commands_own_refusals_read_as_before_the_move() {
        let cases = [
            (CommandError::JoinDeclined, "not sent: run `nox wallet join` (same options) first, or pass --auto-join"),
            (CommandError::StillNoPair(4), "not sent: still no pair of notes covers it after 4 joins"),
            (
                CommandError::JoinNotInserted(300),
                "the joined note was not inserted within 300 s: run the send again once `nox wallet balance` shows it \
                 spendable",
            ),
            (CommandError::SplitNeedsJoin("why".into()), "no note holds the split's amounts: why"),
            (CommandError::NoKeyFile, "--direct needs --key-file"),
            (CommandError::NoMixnet, "give --testnet or --chain (the mixnet and its pool)"),
            (CommandError::NoTestnet, "give --testnet"),
            (CommandError::NoDefi, "this testnet has no Uniswap deployment and adaptor (chain.json has no defi)"),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
            assert_eq!(RunError::from(error).to_string(), text, "the same text at the command's edge");
        }
    }

    #[test]
    fn at_the_edge_a_stop_reads_as_its_message_and_only_an_unconfirmed_one_exits_with_3() {
        use crate::wallet::{EXIT_UNCONFIRMED, UNCONFIRMED};
        let lost = RunError::from(crate::Stop::Failed(format!("{UNCONFIRMED}0xabc: run the command again")));
        assert_eq!(lost.to_string(), format!("{UNCONFIRMED}0xabc: run the command again"));
        assert_eq!(lost.exit_status(), EXIT_UNCONFIRMED);
        let join = RunError::NeedsJoin("why".into());
        assert_eq!(join.to_string(), "your notes must be joined first (`nox wallet join`): why");
        assert_eq!(join.exit_status(), 1);
        let pool = RunError::from(crate::pool::PoolError::NoPool);
        assert_eq!(pool.to_string(), "give --pool, a --testnet or a --chain with a pool");
        let amount = RunError::from(Unit::eth().parse("x").unwrap_err());
        assert_eq!(amount.to_string(), Unit::eth().parse("x").unwrap_err().to_string(), "an amount's own text");
    }
}
