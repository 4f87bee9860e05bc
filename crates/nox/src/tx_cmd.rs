//! `nox tx`: an anonymous paid transaction (docs/spec/relay.md). The arguments and the session
//! are `nox_wallet_cli::tx` (its commands `nox_wallet_cli::tx::command`); `--testnet <dir>` is
//! [`crate::wallet_cmd::TESTNET`].

pub use nox_wallet_cli::tx::command::{AdaptorArgs, QuoteArgs, SendArgs, SwapArgs, TxCommand};
pub use nox_wallet_cli::tx::{DEFAULT_FEE_PERCENT, FeeArgs, MixArgs};

/// Runs a `nox tx` command.
pub fn run(command: TxCommand) -> Result<(), String> {
    nox_wallet_cli::tx::command::run(command, crate::wallet_cmd::TESTNET).map_err(|e| e.to_string())
}
