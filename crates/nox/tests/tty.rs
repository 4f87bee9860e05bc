//! The confirmation on an interactive terminal, end to end (issue 35, typo-proof addresses): the
//! real `nox` binary runs on a pseudo-terminal (util-linux `script`, so stdin, stdout and stderr
//! are a TTY) against the smallest testnet, and the test answers its question.
//!
//! - `nox tx withdraw` to an address typed in lower case: the privacy advice comes first (the
//!   same advice as `nox wallet withdraw`, its split naming `nox tx withdraw`), then the question
//!   names the destination in its EIP-55 form and the amounts in ETH; answering "n" proves,
//!   spends and sends nothing (no transaction from the relayer or the user, the wallet's balance
//!   and the destination's unchanged).
//! - `nox tx send` to a target typed in lower case: the question names it in EIP-55 form and the
//!   fee in ETH; answering "y" proceeds and the call is included.
//! - `nox wallet withdraw --direct`: the question names the destination and the submitting
//!   account; "n" sends nothing from that account.
//! - Without a terminal (stdin an open pipe nobody writes to) nothing is asked: `nox tx withdraw`
//!   neither hangs nor needs an answer, and the destination receives the withdrawal.
//!
//! The questions come after the exit's quote (the fee is part of the question), so the test needs
//! a mixnet: one node per layer, no loops or drops.

use std::{
    io::{Read, Write},
    process::{Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use alloy::{
    primitives::{Address, U256, keccak256},
    providers::{Provider, ProviderBuilder},
};

mod common;

use common::{
    NOX, PASSPHRASE, QUIET, Testnet, USER_KEY, collect, figures, ok, port_base, rpc_daemon, testnet_dir, wait_or_kill,
    wait_until, write_key,
};

/// The longest any one command may take here (a paid transaction: quote, proof, one block).
const PATIENCE: Duration = Duration::from_secs(180);

/// Runs `nox <args>` on a pseudo-terminal and types `answer` once its question (`[y/N] `) is
/// shown; returns whether it succeeded and everything it printed (stdout and stderr, as the
/// terminal showed them, with the answer's echo).
fn on_terminal(args: &[&str], answer: &str) -> (bool, String) {
    // `script -qec CMD /dev/null`: CMD runs on a new pseudo-terminal; script copies its stdin to
    // the terminal and the terminal's output to its stdout. Paths here have no quote in them.
    let line: Vec<String> = std::iter::once(NOX).chain(args.iter().copied()).map(|a| format!("'{a}'")).collect();
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env("NOX_WALLET_PASSPHRASE", PASSPHRASE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run `script` (util-linux) for a pseudo-terminal");
    let output = Arc::new(Mutex::new(String::new()));
    let reader = {
        let (from, into) = (child.stdout.take().expect("stdout"), output.clone());
        std::thread::spawn(move || collect(from, into))
    };
    let errors = Arc::new(Mutex::new(String::new()));
    let error_reader = {
        let (from, into) = (child.stderr.take().expect("stderr"), errors.clone());
        std::thread::spawn(move || collect(from, into))
    };
    let mut stdin = child.stdin.take().expect("stdin");
    let asked = wait_until(PATIENCE, Duration::from_millis(50), || {
        output.lock().expect("output lock").contains("[y/N] ") || child.try_wait().ok().flatten().is_some()
    });
    assert!(asked, "no question and no exit in {PATIENCE:?}:\n{}", output.lock().expect("output lock"));
    // Typed only once the question is on the terminal; stdin stays open until the command exits.
    let _ = stdin.write_all(format!("{answer}\n").as_bytes());
    let _ = stdin.flush();
    let finished = wait_or_kill(&mut child, PATIENCE);
    drop(stdin);
    let _ = reader.join();
    let _ = error_reader.join();
    let text = output.lock().expect("output lock").replace('\r', "");
    let success = finished.unwrap_or_else(|| panic!("still running {PATIENCE:?} after the answer:\n{text}"));
    let errors = errors.lock().expect("output lock");
    assert!(errors.is_empty(), "script itself failed: {errors}");
    (success, text)
}

/// Runs `nox <args>` with stdin an open pipe that is never written to (no terminal, and no end
/// of input either: a command reading stdin would wait forever); returns whether it succeeded
/// and its output, or panics if it hangs.
fn without_terminal(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(NOX)
        .args(args)
        .env("NOX_WALLET_PASSPHRASE", PASSPHRASE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nox");
    let stdin = child.stdin.take().expect("stdin");
    let (out, err) = (child.stdout.take().expect("stdout"), child.stderr.take().expect("stderr"));
    let (tx, rx) = mpsc::channel();
    for stream in [Box::new(out) as Box<dyn Read + Send>, Box::new(err)] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let text = Arc::new(Mutex::new(String::new()));
            collect(stream, text.clone());
            let _ = tx.send(text.lock().expect("output lock").clone());
        });
    }
    let finished = wait_or_kill(&mut child, PATIENCE);
    drop(stdin);
    let text: String = (0..2).map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default()).collect();
    let success = finished.unwrap_or_else(|| panic!("hung without a terminal ({PATIENCE:?}):\n{text}"));
    (success, text)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn lower(a: Address) -> String {
    a.to_string().to_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_confirmation_names_the_destination_and_a_no_sends_nothing() {
    let dir = testnet_dir("nox-it", "tty");
    let _ = std::fs::remove_dir_all(&dir);
    // Its own block of port ranges, below every other file's (the testnet uses base..base+200).
    let base = port_base(10_000, 50, 30);
    let mut net = Testnet::up(dir.clone(), base, &QUIET);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let chain = ProviderBuilder::new().connect_http(info.rpc_url.parse().expect("url")).erased();

    // Every read of the wallet through the mixnet: a `nox client --rpc` daemon.
    let rpc = rpc_daemon(&mut net);
    let wdir = dir.join("wallet");
    let (w, t) = (wdir.to_str().expect("utf-8"), dir.to_str().expect("utf-8"));
    let user_key = write_key(&dir, "user.key", USER_KEY);
    let key = user_key.to_str().expect("utf-8");
    let user = nox_chain::deploy::signer(USER_KEY).expect("key").address();
    let with = |cmd: &[&str], extra: &[&str]| -> Vec<String> {
        let chain = ["--wallet", w, "--testnet", t, "--rpc", rpc.as_str()];
        cmd.iter().chain(&chain).chain(extra).map(|s| (*s).to_owned()).collect()
    };
    let balance = || figures(&ok(&strs(&with(&["wallet", "balance"], &[]))));
    // The spendable balance once the exits' relayers have inserted every pending note.
    let settled = || -> u128 {
        let mut last = (0, 0);
        let done = wait_until(PATIENCE, Duration::from_secs(2), || {
            last = balance();
            last.1 == 0
        });
        assert!(done, "pending notes never inserted: {last:?}");
        last.0
    };

    ok(&["wallet", "new", "--wallet", w]);
    let unique: u128 = 123_456_789_000_000_000;
    let one_eth: u128 = 1_000_000_000_000_000_000;
    ok(&strs(&with(&["wallet", "deposit"], &["--amount", "1", "--key-file", key])));
    ok(&strs(&with(&["wallet", "deposit"], &["--amount", &format!("{unique}wei"), "--key-file", key])));
    assert_eq!(settled(), one_eth + unique);
    let deposited_by = chain.get_block_number().await.expect("block number");
    let quote = ok(&["tx", "quote", "--testnet", t, "--exit", "0"]);
    let relayer = serde_json::from_str::<nox_relayer::Quote>(&quote).expect("quote JSON").relayer;
    let nonces = || async {
        (
            chain.get_transaction_count(relayer).await.expect("nonce"),
            chain.get_transaction_count(user).await.expect("nonce"),
        )
    };

    // 1. `nox tx withdraw` of exactly the unique deposit, to an address typed in lower case:
    // the advice, then the question with the EIP-55 destination and ETH amounts; "n".
    let to = Address::from_slice(&keccak256("a fresh address")[..20]);
    let before = nonces().await;
    let args = with(&["tx", "withdraw"], &["--exit", "0", "--amount", &unique.to_string(), "--to", &lower(to)]);
    let (success, out) = on_terminal(&strs(&args), "n");
    eprintln!("tx withdraw, answered n:\n{out}");
    assert!(!success, "a refusal is not a success:\n{out}");
    let question = out.find("[y/N] ").expect("the question");
    assert!(out.contains(&format!("for a withdrawal of 0.123456789 ETH to {to}? [y/N] ")), "{out}");
    assert_ne!(to.to_string(), lower(to), "the EIP-55 form differs from what was typed");
    assert!(out.contains(" ETH) to relayer ") && out.contains("(worth "), "the fee in ETH:\n{out}");
    let advice = out.find("PRIVACY: this withdrawal (amount + fee) equals your deposit of 0.123456789 ETH");
    assert!(advice.is_some_and(|a| a < question), "the advice before the question:\n{out}");
    assert!(out.contains("PRIVACY: the split, one `nox tx withdraw` each"), "{out}");
    assert!(out.contains("not confirmed; nothing was proved, spent or sent"), "{out}");
    assert_eq!(nonces().await, before, "no transaction from the relayer or the user");
    assert_eq!(chain.get_balance(to).await.expect("balance"), U256::ZERO);
    assert_eq!(balance(), (one_eth + unique, 0), "no note spent");

    // 2. `nox tx send` to a target typed in lower case: "y" proceeds and the call is included.
    let token = info.deployment.stake_token;
    let args = with(&["tx", "send"], &["--exit", "0", "--target", &lower(token), "--data", "0x18160ddd"]);
    let (success, out) = on_terminal(&strs(&args), "y");
    eprintln!("tx send, answered y:\n{out}");
    assert!(out.contains(&format!("for a call to {token} (4 bytes of calldata)? [y/N] y")), "{out}");
    assert!(success && out.contains("\"outcome\":\"included\""), "{out}");
    assert_eq!(nonces().await.0, before.0 + 1, "the relayer submitted the bundle");
    // Issue 35's end-to-end claim: the change becomes spendable with no `nox wallet insert` and
    // no transaction from the user's account; after the deposits, every transaction touching
    // the pool (sent to it or with a log of it) is a relayer's.
    let left = settled();
    assert!(left < one_eth + unique && left > one_eth, "the fee left the wallet, the change is spendable: {left}");
    let pool = info.pool.as_ref().expect("the testnet deploys the pool").pool;
    let mut senders = Vec::new();
    for n in deposited_by + 1..=chain.get_block_number().await.expect("block number") {
        let block = chain.get_block_by_number(n.into()).await.expect("block").expect("a block");
        for hash in block.transactions.hashes() {
            let receipt = chain.get_transaction_receipt(hash).await.expect("receipt").expect("a receipt");
            if receipt.to == Some(pool) || receipt.inner.logs().iter().any(|l| l.address() == pool) {
                senders.push(receipt.from);
            }
        }
    }
    assert!(senders.len() >= 2, "the bundle and the change's insertion touch the pool: {senders:?}");
    assert!(!senders.contains(&user), "no transaction of the user's after the deposit: {senders:?} (user {user})");

    // 3. `nox wallet withdraw --direct`: the destination and the submitting account; "n".
    let direct_to = Address::from_slice(&keccak256("another fresh address")[..20]);
    let args =
        with(&["wallet", "withdraw"], &["--amount", "0.1", "--to", &lower(direct_to), "--direct", "--key-file", key]);
    let (success, out) = on_terminal(&strs(&args), "n");
    eprintln!("wallet withdraw --direct, answered n:\n{out}");
    assert!(!success, "{out}");
    assert!(out.contains(&format!("withdrawing 0.1 ETH to {direct_to} directly from {user} ")), "{out}");
    assert!(out.contains("not confirmed; nothing was proved, spent or sent"), "{out}");
    assert_eq!(nonces().await.1, before.1, "no transaction from the user's account");
    assert_eq!(chain.get_balance(direct_to).await.expect("balance"), U256::ZERO);

    // 4. No terminal: nothing is asked, nothing waits for an answer; the withdrawal lands.
    let amount: u128 = 50_000_000_000_000_000;
    let args = with(&["tx", "withdraw"], &["--exit", "0", "--amount", &amount.to_string(), "--to", &lower(to)]);
    let (success, out) = without_terminal(&strs(&args));
    eprintln!("tx withdraw without a terminal:\n{out}");
    assert!(success && out.contains("\"outcome\":\"included\""), "{out}");
    assert!(!out.contains("[y/N]"), "nothing asked without a terminal:\n{out}");
    assert_eq!(chain.get_balance(to).await.expect("balance"), U256::from(amount));
}
