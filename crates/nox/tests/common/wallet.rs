//! The wallet tests' set-up: keys, passphrase, a `nox client --rpc` daemon to read the chain
//! through, and reading balances, fees and the transactions one account sent.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use alloy::primitives::{Address, TxHash};
use alloy::providers::{DynProvider, Provider};

use super::{ports::free_port, run::NOX, testnet::Testnet, wait::wait_listening};

/// Anvil's default account 1: the depositor of the wallet tests.
pub const USER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
/// The test wallets' passphrase (`NOX_WALLET_PASSPHRASE`).
pub const PASSPHRASE: &str = "correct horse battery staple";

/// Writes the hex `key` to `dir/name` (a `--key-file`); returns its path.
pub fn write_key(dir: &Path, name: &str, key: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, key).expect("write key");
    path
}

/// Starts a `nox client --testnet <dir> --rpc` daemon (reaped with `net`) and waits until it
/// listens; returns its URL, for the wallet's `--rpc`: every read through the mixnet.
pub fn rpc_daemon(net: &mut Testnet) -> String {
    let port = free_port();
    let client = Command::new(NOX)
        .args(["client", "--testnet"])
        .arg(&net.dir)
        .args(["--rpc", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nox client");
    net.children.push(client);
    let listening = wait_listening(("127.0.0.1", port), Duration::from_secs(30));
    assert!(listening, "nox client --rpc did not listen");
    format!("http://127.0.0.1:{port}")
}

/// The fee (wei) a paid `nox tx send` / `nox wallet … --exit` reports ("… paying N …");
/// panics with the output when there is no such line.
pub fn fee_paid(out: &str) -> u128 {
    out.lines()
        .find_map(|l| l.split("paying ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no fee line:\n{out}"))
}

/// The (spendable, pending) wei of ETH in `nox wallet balance`.
pub fn figures(out: &str) -> (u128, u128) {
    let Some(line) = out.lines().find(|l| l.starts_with("ETH: spendable ")) else { return (0, 0) };
    let figure = |after: &str| -> u128 {
        let text = line.split(after).nth(1).and_then(|r| r.split(" ETH").next()).expect("a figure");
        if text.trim() == "0" {
            0
        } else {
            ::nox::wallet_cmd::Unit::eth().parse(text).unwrap_or_else(|e| panic!("{e}: {line}"))
        }
    };
    (figure("spendable "), figure("pending insertion "))
}

/// The transactions `from` sent to `to` in blocks `first..=` the head, reverted ones included
/// (read from the blocks' receipts: unlike `from`'s nonce, other transactions of the same
/// account, such as the inserter's, do not count).
pub async fn sent_from_to(provider: &DynProvider, from: Address, to: Address, first: u64) -> Vec<TxHash> {
    let head = provider.get_block_number().await.expect("block number");
    let mut sent = Vec::new();
    for number in first..=head {
        let block = provider.get_block_by_number(number.into()).await.expect("block").expect("a mined block");
        for hash in block.transactions.hashes() {
            let receipt = provider.get_transaction_receipt(hash).await.expect("receipt").expect("a mined receipt");
            if receipt.from == from && receipt.to == Some(to) {
                sent.push(hash);
            }
        }
    }
    sent
}

/// The registry's record of `operator`'s stake, `reporter`'s stake-token balance and the
/// registry's reporter share (basis points): what a slashing moves.
pub async fn stake_and_balance(
    rpc: &str,
    registry: Address,
    stake_token: Address,
    operator: Address,
    reporter: Address,
) -> (alloy::primitives::U256, alloy::primitives::U256, u16) {
    use nox_chain::bindings::{NodeRegistry, NoxStakeToken};
    let provider = alloy::providers::ProviderBuilder::new().connect_http(rpc.parse().expect("url"));
    let stake = NodeRegistry::new(registry, &provider).nodeOf(operator).call().await.expect("node").stake;
    let balance = NoxStakeToken::new(stake_token, &provider).balanceOf(reporter).call().await.expect("balance");
    let bps = NodeRegistry::new(registry, &provider).slashReporterBps().call().await.expect("bps");
    (stake, balance, bps)
}
