//! The anonymous gas payment end to end, on real processes (issue 12): `nox testnet up` starts
//! Anvil, deploys the contracts with the shielded pool and runs one node per layer; `nox client
//! --rpc` is the wallet's JSON-RPC endpoint, so every chain read and every transaction the
//! wallet sends leaves through the mixnet's exit; the `nox wallet` commands are separate
//! processes. A relayer (this test, with its own account, as an exit will in issue 13) submits
//! the bundles to the BatchExecutor.
//!
//! deposit → (the exits' relayers insert) → a paid bundle for a succeeding action (relayer
//! credited, action run) → the change pays for a reverting action (relayer still credited) →
//! a direct withdrawal to a fresh address; a replayed bundle (double spend) is refused on chain; a second wallet
//! restored from nothing but its key file recovers the same balance. Then the exit as the
//! relayer (issue 13): `nox tx send`, `nox tx swap` (a private swap on Uniswap v2) and `nox tx
//! withdraw` (a gas-paid withdrawal to a fresh address) through
//! the mixnet, with an unprofitable fee refused.

use std::{path::Path, time::Duration};

use alloy::{
    primitives::{Address, U256},
    providers::Provider,
    sol_types::SolEvent,
};
use nox::wallet_cmd::BundleFile;
use nox_chain::bindings::{BatchExecutor, RewardLedger};

use crate::common::{
    QUIET, Testnet, USER_KEY, figures, nox, port_base, rpc_daemon, testnet_dir, wait_until, write_key,
};

/// Anvil's default accounts 1–3 (account 0 deploys): a depositor, another account (a would-be
/// thief, then a direct withdrawal's submitter), a relayer.
const INSERTER_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const RELAYER_KEY: &str = "7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

/// Runs `nox wallet <args>`; returns stdout + stderr, or the failure text.
fn wallet(args: &[&str]) -> Result<String, String> {
    nox(&[&["wallet"], args].concat())
}

fn ok(args: &[&str]) -> String {
    wallet(args).unwrap_or_else(|e| panic!("nox wallet {args:?} failed:\n{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposit_pay_relay_change_withdraw_through_the_mixnet() {
    let dir = testnet_dir("nox-it", "wallet");
    let _ = std::fs::remove_dir_all(&dir);
    // Metrics ports at base + 100 stay below Linux's ephemeral range (32768–60999).
    let base = port_base(27_000, 100, 30);
    let args = QUIET;
    let mut net = Testnet::up(dir.clone(), base, &args);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let pool = info.pool.clone().expect("the testnet deploys the shielded pool");

    // The wallet's endpoint: the mixnet client's JSON-RPC server.
    let rpc = rpc_daemon(&mut net);
    let wdir = dir.join("wallet");
    let w = wdir.to_str().expect("utf-8 path");
    let t = dir.to_str().expect("utf-8 path");
    let user_key = write_key(&dir, "user.key", USER_KEY);
    let chain: Vec<&str> = vec!["--wallet", w, "--testnet", t, "--rpc", &rpc];
    let with = |extra: &[&str]| -> Vec<String> { chain.iter().chain(extra).map(|s| (*s).to_owned()).collect() };
    let run = |cmd: &str, extra: &[&str]| -> String {
        let args: Vec<String> = std::iter::once(cmd.to_owned()).chain(with(extra)).collect();
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Nobody inserts by hand: the exits' relayers insert queued notes (issue 35); the spendable
    // balance once nothing is pending.
    let settled = || -> u128 {
        let mut spendable = 0;
        let inserted = wait_until(Duration::from_secs(120), Duration::from_secs(2), || {
            let (now, pending) = figures(&run("balance", &[]));
            spendable = now;
            pending == 0
        });
        assert!(inserted, "pending notes never inserted by the relayers");
        spendable
    };

    let out = ok(&["new", "--wallet", w]);
    assert!(out.contains("nox1"), "{out}");
    assert!(wallet(&["new", "--wallet", w]).is_err(), "a second `new` must not overwrite the wallet");

    // Deposit 1 ETH (through the mixnet); a relayer inserts its batch.
    let one_eth: u128 = 1_000_000_000_000_000_000;
    run("deposit", &["--amount", &format!("{one_eth}wei"), "--key-file", user_key.to_str().unwrap()]);
    assert_eq!(settled(), one_eth);

    // The relayer: its own account, submitting directly to the chain.
    let relayer = nox_chain::deploy::signer(RELAYER_KEY).expect("key");
    let relayer_provider = nox_chain::deploy::wallet_provider(&info.rpc_url, &relayer).expect("provider");
    let ledger = RewardLedger::new(info.deployment.ledger, &relayer_provider);
    let credited = || async { ledger.balanceOf(relayer.address(), Address::ZERO).call().await.expect("balanceOf") };
    let thief = nox_chain::deploy::signer(INSERTER_KEY).expect("key");
    // A fresh provider per submission: alloy's nonce cache advances even when gas estimation
    // refuses the transaction, and a later transaction would then wait forever behind a gap.
    let submit = |by: &nox_chain::PrivateKeySigner, bundle: BundleFile| {
        let provider = nox_chain::deploy::wallet_provider(&info.rpc_url, by).expect("provider");
        let executor = BatchExecutor::new(info.deployment.executor, provider);
        async move {
            let call = executor.execute(BatchExecutor::Bundle {
                payment: bundle.payment,
                paymentData: bundle.payment_data,
                asset: bundle.asset,
                fee: bundle.fee,
                action: BatchExecutor::Action {
                    target: bundle.target,
                    value: U256::ZERO,
                    gas: U256::from(bundle.gas),
                    data: bundle.data,
                },
            });
            let receipt = call
                .send()
                .await
                .map_err(|e| e.to_string())?
                .with_timeout(Some(Duration::from_secs(60)))
                .get_receipt()
                .await
                .map_err(|e| e.to_string())?;
            if !receipt.status() {
                return Err("reverted".to_owned());
            }
            let executed = receipt
                .inner
                .logs()
                .iter()
                .find_map(|l| BatchExecutor::ActionExecuted::decode_log(&l.inner).ok())
                .expect("ActionExecuted");
            Ok(executed.data.success)
        }
    };
    let read =
        |path: &Path| -> BundleFile { serde_json::from_slice(&std::fs::read(path).expect("bundle")).expect("json") };

    // 1. A gas payment for an action that succeeds (the stake token's totalSupply()).
    let fee1: u128 = 3_000_000_000_000_000;
    let b1 = dir.join("bundle1.json");
    let token = info.deployment.stake_token.to_string();
    run(
        "pay",
        &[
            "--relayer",
            &relayer.address().to_string(),
            "--fee",
            &fee1.to_string(),
            "--target",
            &token,
            "--data",
            "0x18160ddd",
            "--out",
            b1.to_str().unwrap(),
        ],
    );
    let bundle1 = read(&b1);
    assert_eq!(bundle1.executor, info.deployment.executor);
    assert_eq!(bundle1.payment, pool.pool);
    // Another account cannot collect it: the pool feeds the verifier the submitter's address.
    assert!(submit(&thief, read(&b1)).await.is_err(), "a bundle for another relayer must be refused");
    let before = credited().await;
    assert_eq!(submit(&relayer, read(&b1)).await, Ok(true), "the paid action runs");
    assert_eq!(credited().await - before, U256::from(fee1), "the relayer is credited the fee");

    // The same bundle again: the nullifier is spent.
    assert!(submit(&relayer, read(&b1)).await.is_err(), "a replayed bundle (double spend) must be refused");

    // 2. The change is spendable after its batch: it pays for an action that reverts.
    assert_eq!(settled(), one_eth - fee1);
    let fee2: u128 = 2_000_000_000_000_000;
    let b2 = dir.join("bundle2.json");
    run(
        "pay",
        &[
            "--relayer",
            &relayer.address().to_string(),
            "--fee",
            &fee2.to_string(),
            "--target",
            &token,
            "--data",
            "0xdeadbeef",
            "--out",
            b2.to_str().unwrap(),
        ],
    );
    let before = credited().await;
    assert_eq!(submit(&relayer, read(&b2)).await, Ok(false), "the action reverts inside the bundle");
    assert_eq!(credited().await - before, U256::from(fee2), "a reverted action still pays the relayer");

    // 3. Withdraw part of the change to a fresh address.
    let left = one_eth - fee1 - fee2;
    assert_eq!(settled(), left);
    let fresh = Address::from([0x5a; 20]);
    let amount: u128 = 500_000_000_000_000_000;
    let submitter = write_key(&dir, "submitter.key", INSERTER_KEY);
    run(
        "withdraw",
        &[
            "--amount",
            &format!("{amount}wei"),
            "--to",
            &fresh.to_string(),
            "--direct",
            "--key-file",
            submitter.to_str().unwrap(),
        ],
    );
    let got = relayer_provider.get_balance(fresh).await.expect("balance");
    assert_eq!(got, U256::from(amount), "the recipient received the withdrawal");
    assert_eq!(settled(), left - amount);

    // Overspending is refused before any proof is made.
    let args: Vec<String> = std::iter::once("withdraw".to_owned())
        .chain(with(&[
            "--amount",
            "1",
            "--to",
            &fresh.to_string(),
            "--direct",
            "--key-file",
            submitter.to_str().unwrap(),
        ]))
        .collect();
    let err = wallet(&args.iter().map(String::as_str).collect::<Vec<_>>()).expect_err("overspend");
    assert!(err.contains("not enough funds"), "{err}");

    // The wallet is recoverable from its key file alone: delete the state and rescan.
    std::fs::remove_file(wdir.join("wallet.state")).expect("state file");
    assert_eq!(settled(), left - amount);

    // 4. The exit as the relayer (issue 13): `nox tx` asks an exit's relayer for its price and
    // sends the paid bundle to it, both through the mixnet (cover traffic at its default);
    // the receipt comes back through SURBs.
    let quote = tx(&["quote", "--testnet", t, "--exit", "0"]).expect("a quote");
    let quote: nox_relayer::Quote = serde_json::from_str(&quote).expect("quote JSON");
    assert_eq!((quote.executor, quote.pool), (info.deployment.executor, pool.pool));
    let exit_relayer = quote.relayer;
    let send: Vec<String> = std::iter::once("send".to_owned())
        .chain(with(&["--exit", "0", "--target", &token, "--data", "0x18160ddd", "--action-gas", "50000"]))
        .collect();
    let send: Vec<&str> = send.iter().map(String::as_str).collect();
    // Refused before submission: a fee below cost (the relayer says what would do).
    let low: Vec<&str> = send.iter().copied().chain(["--fee", "1000"]).collect();
    let err = tx(&low).expect_err("an unprofitable fee");
    assert!(err.contains("refused (Unprofitable)"), "{err}");
    let ledger_exit = || async { ledger.balanceOf(exit_relayer, Address::ZERO).call().await.expect("balanceOf") };
    assert_eq!(ledger_exit().await, U256::ZERO);
    let out = tx(&send).unwrap_or_else(|e| panic!("nox tx send failed:\n{e}"));
    assert!(out.contains("\"outcome\":\"included\"") && out.contains("the action succeeded"), "{out}");
    let paid: u128 = crate::shared::fee_paid(&out);
    assert_eq!(ledger_exit().await, U256::from(paid), "the exit's relayer is credited the fee");
    assert_eq!(settled(), left - amount - paid);

    // 5. A private swap on the testnet's real Uniswap v2 (NOX/WETH): 0.2 ETH withdrawn from one
    // note to the swap adaptor bound to the swap's parameters, the gas paid from another note,
    // the tokens delivered to a fresh address; the bundle goes through the mixnet to the relayer.
    run("deposit", &["--amount", "1", "--key-file", user_key.to_str().unwrap()]);
    settled();
    let defi = info.defi.clone().expect("the testnet deploys Uniswap");
    let swap_to = Address::from([0x5b; 20]);
    let swap: Vec<String> = std::iter::once("swap".to_owned())
        .chain(with(&["--exit", "0", "--amount", "200000000000000000", "--to", &swap_to.to_string()]))
        .collect();
    let out = tx(&swap.iter().map(String::as_str).collect::<Vec<_>>()).unwrap_or_else(|e| panic!("nox tx swap:\n{e}"));
    assert!(out.contains("\"outcome\":\"included\"") && out.contains("the action succeeded"), "{out}");
    let min_out: U256 = out
        .lines()
        .find_map(|l| l.split("for at least ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no swap line:\n{out}"));
    let token = nox_chain::bindings::NoxStakeToken::new(defi.token, &relayer_provider);
    let got = token.balanceOf(swap_to).call().await.expect("balanceOf");
    assert!(got >= min_out && min_out > U256::ZERO, "the fresh address received {got} NOX (minimum {min_out})");
    assert_eq!(relayer_provider.get_balance(swap_to).await.expect("balance"), U256::ZERO, "no ETH ever touched it");

    // 6. A paid withdrawal to a fresh address, one proof with no action (the recipient holds no
    // ETH beforehand and pays no gas), from the change notes of the swap.
    settled();
    let withdraw_to = Address::from([0x5c; 20]);
    let amount: u128 = 100_000_000_000_000_000;
    let withdraw: Vec<String> = std::iter::once("withdraw".to_owned())
        .chain(with(&["--exit", "0", "--amount", &amount.to_string(), "--to", &withdraw_to.to_string()]))
        .collect();
    let out = tx(&withdraw.iter().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("nox tx withdraw:\n{e}"));
    assert!(out.contains("\"outcome\":\"included\""), "{out}");
    assert_eq!(
        relayer_provider.get_balance(withdraw_to).await.expect("balance"),
        U256::from(amount),
        "the fresh address received exactly the withdrawal"
    );

    // 7. Manual `nox wallet insert`s racing each other and the exits' inserters (issue 35):
    // right after a deposit, two wallets (two accounts) prove the same batch at once; only one
    // insertion can land. The others never send a doomed transaction: each re-reads the pool and
    // simulates just before sending, and a batch someone else inserted is reported with who
    // did it, exit 0, no transaction of its account.
    let unique: u128 = 123_456_789_000_000_000;
    let wdir2 = dir.join("wallet2");
    let w2 = wdir2.to_str().expect("utf-8 path");
    ok(&["new", "--wallet", w2]);
    run("deposit", &["--amount", &format!("{unique}wei"), "--key-file", user_key.to_str().unwrap()]);
    let racers = [(w, user_key.clone(), USER_KEY), (w2, submitter.clone(), INSERTER_KEY)];
    let accounts: Vec<Address> =
        racers.iter().map(|(_, _, k)| nox_chain::deploy::signer(k).expect("key").address()).collect();
    let mut nonces = Vec::new();
    for a in &accounts {
        nonces.push(relayer_provider.get_transaction_count(*a).await.expect("nonce"));
    }
    let rpc_url: &str = &rpc;
    let outs: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = racers
            .iter()
            .map(|(wallet_dir, key, _)| {
                s.spawn(move || {
                    ok(&[
                        "insert",
                        "--wallet",
                        wallet_dir,
                        "--testnet",
                        t,
                        "--rpc",
                        rpc_url,
                        "--key-file",
                        key.to_str().unwrap(),
                    ])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("insert thread")).collect()
    });
    let winners: Vec<usize> = (0..2)
        .filter(|i| outs[*i].lines().any(|l| l.starts_with("inserted ") && l.contains(" leaves at leaf ")))
        .collect();
    assert!(winners.len() <= 1, "one batch, one insertion: {outs:?}");
    for (i, out) in outs.iter().enumerate() {
        eprintln!("manual insertion {i} against the other and the inserters: {out}");
        assert!(!out.contains("reverted") || out.contains("lost the race in the same block"), "{out}");
        let nonce = relayer_provider.get_transaction_count(accounts[i]).await.expect("nonce");
        if winners.contains(&i) {
            assert_eq!(nonce, nonces[i] + 1, "one successful insertion\n{out}");
            continue;
        }
        assert!(out.contains("already inserted by ") || out.contains("nothing queued"), "{out}");
        if !out.contains("lost the race in the same block") {
            assert_eq!(nonce, nonces[i], "a batch inserted by someone else: no transaction sent\n{out}");
        }
        if let Some(&win) = winners.first()
            && out.contains("already inserted by 0x")
        {
            assert!(out.contains(&format!("already inserted by {}", accounts[win])), "names the winner: {out}");
        }
    }
    // An exit's inserter may land the batch before either racer has synced (both then find
    // nothing queued: no race happened); otherwise at least one racer lost and said so.
    let raced = outs.iter().any(|o| o.contains("already inserted by "));
    let early = outs.iter().all(|o| o.contains("nothing queued"));
    assert!(raced || early, "a racer lost and said so: {outs:?}");
    eprintln!(
        "insertion race: {}",
        if raced { "a racer lost to a rival and said so" } else { "the exits inserted first" }
    );

    // 8. The wallet's privacy advice (issue 35): withdrawing right after a deposit of a unique
    // amount, about that amount, prints both warnings before anything is sent.
    settled();
    let withdraw_to = Address::from([0x5d; 20]);
    let out = run(
        "withdraw",
        &[
            "--amount",
            "0.1234",
            "--to",
            &withdraw_to.to_string(),
            "--direct",
            "--key-file",
            submitter.to_str().unwrap(),
        ],
    );
    assert!(
        out.contains("PRIVACY: this withdrawal (amount + fee) equals your deposit of 0.123456789 ETH made "),
        "{out}"
    );
    assert!(
        out.contains("only 1 of the pool's ")
            && out.contains("withdraw round denominations instead (0.1 ETH + 0.02 ETH"),
        "{out}"
    );
    assert!(out.contains("PRIVACY: the split, one `nox wallet withdraw` each"), "{out}");
    assert!(out.contains("PRIVACY: your last deposit was ") && out.contains("timing narrows the depositor"), "{out}");
    let advice = out.find("PRIVACY: ").expect("advice");
    let submitting = out.find("submitting directly").expect("the submission line");
    assert!(advice < submitting, "the advice comes before the transaction\n{out}");
    assert_eq!(
        relayer_provider.get_balance(withdraw_to).await.expect("balance"),
        U256::from(123_400_000_000_000_000u128)
    );
}

/// Runs `nox tx <args>`; returns stdout + stderr, or the failure text.
fn tx(args: &[&str]) -> Result<String, String> {
    nox(&[&["tx"], args].concat())
}
