//! `nox wallet`: the shielded-pool wallet on the command line (issues 12, 30, 35; formats in
//! docs/spec/notes.md). The arguments and what they run are `nox_wallet_cli::wallet` (the pool
//! and its resolution `nox_wallet_cli::pool`); this file supplies what `--testnet <dir>` means
//! ([`TESTNET`], from the local harness `nox-testnet`).

pub use nox_wallet::journal;
pub use nox_wallet::units::{Unit, format_units};
pub use nox_wallet_cli::pool::{ChainArgs, PoolArgs, parse_eth_address};
pub use nox_wallet_cli::wallet::{
    CmdResult, DepositArgs, EXIT_UNCONFIRMED, InsertArgs, PayArgs, PrivateArgs, SendArgs, SplitArgs, SubmitArgs,
    UNCONFIRMED, WalletCommand, WithdrawArgs, exit_status,
};
pub use nox_wallet_cli::{
    Landed, NOT_CONFIRMED, Plan, PoolAt, Stop,
    advice::WithdrawCommand,
    files::{RestoreArgs, WalletArgs, parse_shielded},
    outcome::report,
    prompt::confirmed_on_terminal,
    prove::{Ticker, prove_transaction},
    session::{asset_word, fr_address, journal_recall, read_provider},
};
pub use nox_wallet_io::{bundle::BundleFile, chain::unit_of};

/// `--testnet <dir>` for the wallet and `nox tx`: the testnet's mixnet and its chain.json
/// (`nox_testnet::testnet_demo::WALLET_TESTNET`).
pub use nox_testnet::testnet_demo::WALLET_TESTNET as TESTNET;

/// Runs a wallet command; the error is the message `main` prints (its exit status:
/// [`exit_status`]).
pub fn run(command: WalletCommand) -> Result<(), String> {
    nox_wallet_cli::wallet::run(command, TESTNET).map_err(|e| e.to_string())
}
