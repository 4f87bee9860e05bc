//! `nox tx` end to end on an OP-stack-like chain (issue 33): the exit's relayer quotes the L1
//! data fee, the wallet pays it through the mixnet, and the quote's data fee is within 5 % of
//! the fee the chain charged the transaction.
//!
//! The chain: Anvil with chain id 8453 (Base, an OP-stack chain in nox-chain's table, so the
//! relayer and the wallet price the data fee) and the `GasPriceOracle` stand-in at the OP
//! predeploy address (`crates/nox-wallet-io/tests/oracle_stand_in`, shared by path).
//!
//! **What "charged" means here.** Anvil does not charge an L1 data fee, not even with
//! `--network optimism` (checked with Anvil 1.7.1: no oracle code, no `l1Fee` in the receipt,
//! the sender's balance falls by exactly `gasUsed × effectiveGasPrice`). So the fee the chain
//! charged is computed as the OP node computes it: the Fjord formula
//! (`nox_chain::l2fee::OpFeeParams::fee`, tested against recorded Base Sepolia receipts) on the
//! included transaction's signed bytes (`eth_getRawTransactionByHash`) at the oracle's prices,
//! beside the receipt's `gasUsed × effectiveGasPrice`. Should an Anvil ever report `l1Fee` in
//! its receipts, the test takes that field instead.
//!
//! **The prices.** The recorded Base Sepolia receipt's (L1 base fee 18.9 gwei, blob base fee
//! 311 gwei, Fjord scalars): a bundle's data fee is then ~1.5·10¹⁴ wei, tens of thousands of gas
//! at Anvil's ~1 gwei gas price, so the quote's whole-gas rounding (`l1_data_gas`) is far below
//! the 5 % asserted.
//!
//! Run: `flock /tmp/nox-e2e.lock cargo test -p nox --test l2_tx -- --nocapture`.

mod common;

#[path = "../../nox-wallet-io/tests/oracle_stand_in/mod.rs"]
mod oracle_stand_in;

use alloy::primitives::{Bytes, U256, keccak256};
use alloy::providers::{Provider, ProviderBuilder};
use common::{Testnet, USER_KEY, figures, nox, ok, port_base, rpc_daemon, sent_from_to, testnet_dir, write_key};
use nox_chain::anvil::{Anvil, AnvilOptions};

/// Base's chain id: an OP-stack chain for the relayer and the wallet.
const BASE: u64 = 8_453;

fn ratio(a: U256, b: U256) -> f64 {
    let a: f64 = a.to_string().parse().expect("number");
    let b: f64 = b.to_string().parse().expect("number");
    a / b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relayers_quote_holds_the_l1_data_fee_the_chain_charges() {
    let started = std::time::Instant::now();
    let base = port_base(18_000, 50, 40);
    // The chain first (dropped last): Anvil as Base, the oracle stand-in at the predeploy.
    let anvil = Anvil::spawn(&AnvilOptions { chain_id: BASE, ..AnvilOptions::on_port(base + 200) }).expect("anvil");
    let provider = ProviderBuilder::new().connect_http(anvil.url().parse().expect("url")).erased();
    let p = oracle_stand_in::recorded();
    oracle_stand_in::install_oracle(&provider, &p).await;

    let dir = testnet_dir("nox-it", "l2tx");
    let _ = std::fs::remove_dir_all(&dir);
    let args = ["--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0", "--chain-rpc", anvil.url()];
    let mut net = Testnet::up(dir.clone(), base, &args);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    assert_eq!(info.deployment.chain_id, BASE);
    let rpc = rpc_daemon(&mut net);
    let (w, t) = (dir.join("wallet"), dir.clone());
    let (w, t) = (w.to_str().expect("utf-8"), t.to_str().expect("utf-8"));
    let user_key = write_key(&dir, "user.key", USER_KEY);
    let user_key = user_key.to_str().expect("utf-8");
    let on_chain = |cmd: &str, extra: &[&str]| -> Vec<String> {
        [cmd, "--wallet", w, "--testnet", t, "--rpc", &rpc].iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };

    // A wallet with 1 ETH, inserted by the exit's relayer.
    ok(&["wallet", "new", "--wallet", w]);
    let mut deposit = vec!["wallet".to_owned()];
    deposit.extend(on_chain("deposit", &["--amount", "1", "--key-file", user_key]));
    ok(&deposit);
    let mut balance = vec!["wallet".to_owned()];
    balance.extend(on_chain("balance", &[]));
    let inserted = common::wait_until(std::time::Duration::from_secs(60), std::time::Duration::from_secs(2), || {
        figures(&ok(&balance)) == (1_000_000_000_000_000_000, 0)
    });
    assert!(inserted, "the deposit was never inserted: {}", ok(&balance));

    // The exit's quote, through the mixnet: it names a data fee.
    let quote = ok(&["tx", "quote", "--testnet", t, "--exit", "0"]);
    let quote: nox_relayer::Quote = serde_json::from_str(quote.trim()).expect("quote JSON");
    assert_eq!(quote.chain_id, BASE);
    assert!(quote.l1_data_gas > 0, "an OP-stack relayer quotes the L1 data fee: {quote:?}");
    let quoted_l1 = U256::from(quote.l1_data_gas) * quote.max_fee_per_gas;

    // A paid action carrying 132 bytes of calldata (the relayer's reference action size, the
    // shipped policy): `totalSupply()` on the stake token, 128 pseudo-random bytes after the
    // selector (ignored by the call, incompressible like real arguments).
    let mut data = vec![0x18, 0x16, 0x0d, 0xdd];
    data.extend_from_slice(keccak256(b"l2 tx 1").as_slice());
    data.extend_from_slice(keccak256(b"l2 tx 2").as_slice());
    data.extend_from_slice(keccak256(b"l2 tx 3").as_slice());
    data.extend_from_slice(keccak256(b"l2 tx 4").as_slice());
    let data = Bytes::from(data).to_string();
    let first = provider.get_block_number().await.expect("block");
    let token = info.deployment.stake_token.to_string();
    let mut send = vec!["tx".to_owned()];
    send.extend(on_chain("send", &["--exit", "0", "--target", &token, "--data", &data, "--action-gas", "50000"]));
    let out = nox(&send).unwrap_or_else(|e| panic!("nox tx send failed:\n{e}"));
    assert!(out.contains("\"outcome\":\"included\"") && out.contains("the action succeeded"), "{out}");
    assert!(out.contains(", L1 data fee "), "the wallet checks the data fee with its own figure: {out}");
    let paid: u128 = common::fee_paid(&out);

    // The transaction the exit's relayer sent, and what the chain charged for it.
    let sent = sent_from_to(&provider, quote.relayer, info.deployment.executor, first).await;
    assert_eq!(sent.len(), 1, "one bundle transaction: {sent:?}");
    let raw: Bytes =
        provider.raw_request("eth_getRawTransactionByHash".into(), (sent[0],)).await.expect("raw transaction");
    let receipt: serde_json::Value =
        provider.raw_request("eth_getTransactionReceipt".into(), (sent[0],)).await.expect("receipt");
    let field =
        |name: &str| -> Option<U256> { receipt.get(name).and_then(|v| v.as_str()).and_then(|s| s.parse().ok()) };
    let gas_used = field("gasUsed").expect("gasUsed");
    let gas_price = field("effectiveGasPrice").expect("effectiveGasPrice");
    let (charged_l1, source) = match field("l1Fee") {
        Some(fee) => (fee, "the receipt's l1Fee"),
        None => (p.fee(&raw), "the Fjord formula on the signed transaction (Anvil charges no data fee)"),
    };
    let charged_l2 = gas_used * gas_price;
    let r = ratio(quoted_l1, charged_l1);
    println!(
        "L2 quote vs charged: quoted data fee {quoted_l1} wei ({} gas × {} wei), charged {charged_l1} wei from \
         {source} ({} signed bytes), ratio {r:.4}; L2 gas {gas_used} × {gas_price} wei = {charged_l2} wei; the wallet \
         paid {paid} wei for both; {:.1} s",
        quote.l1_data_gas,
        quote.max_fee_per_gas,
        raw.len(),
        started.elapsed().as_secs_f64()
    );
    assert!((0.95..=1.05).contains(&r), "quoted {quoted_l1} wei vs charged {charged_l1} wei ({r:.4})");
    // The fee the relayer was paid covers everything the chain charged it.
    assert!(U256::from(paid) > charged_l2 + charged_l1, "paid {paid} < {charged_l2} + {charged_l1}");
    // The data fee is no rounding error here: at least a thousand gas worth.
    assert!(charged_l1 > U256::from(1_000u64) * gas_price, "{charged_l1} wei");
}
