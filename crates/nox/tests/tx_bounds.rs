//! Issue 29 items 3 and 9 (and issue 35's silent direct reads) end to end, on real processes.
//!
//! - Item 9: the testnet's chain.json is pointed at a recording listener; `nox wallet deposit`,
//!   `balance` and `nox tx send` run with `--testnet` only, so they must read (and send) through
//!   their own in-process mixnet client — the listener must never see a connection. `--direct-rpc`
//!   reads directly and says so; with neither `--rpc`, `--direct-rpc` nor `--testnet` the wallet
//!   refuses and says how to start the daemon.
//! - Item 3: the testnet's exit is made to lie through its relayer's ordinary policy settings (a
//!   `payment_gas` of 42,000,000, 100× the shipped 420,000; a priority fee of 100 gwei, 100× the
//!   shipped 1 gwei, which multiplies every price in its quote by about 100) and restarted. `nox
//!   tx send` asks it through the mixnet, checks the quote against its own reading of the chain
//!   (through the mixnet too) and refuses with the figure, the quoted value and the bound: the
//!   wallet's files are byte for byte unchanged, the relayer's account sent nothing and was
//!   credited nothing. The honest exit's quote passes the same bounds and an explicit
//!   `--max-fee` below its fee is refused by the ceiling.

use std::{
    io::Read,
    net::TcpListener,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use alloy::{
    primitives::Address,
    providers::{Provider, ProviderBuilder},
};
use nox_chain::bindings::RewardLedger;

mod common;

use common::{NOX, Testnet, port_base, testnet_dir};

/// Anvil's default account 1: the depositor.
const USER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PASSPHRASE: &str = "correct horse battery staple";

fn nox(args: &[&str]) -> Result<String, String> {
    let out = Command::new(NOX).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().expect("run nox");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() { Ok(text) } else { Err(text) }
}

fn ok(args: &[&str]) -> String {
    nox(args).unwrap_or_else(|e| panic!("nox {args:?} failed:\n{e}"))
}

/// A listener that counts the connections made to it (and answers none).
fn recording_listener() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            seen.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut s) = stream {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
            }
        }
    });
    (url, count)
}

/// The testnet's exit with a relayer: its index and directory.
fn relaying_exit(dir: &Path) -> (usize, PathBuf) {
    (0..16)
        .map(|i| (i, dir.join(format!("node-{i}"))))
        .find(|(_, d)| std::fs::read_to_string(d.join("node.toml")).is_ok_and(|c| c.contains("[exit.services.relay]")))
        .expect("an exit with a relayer")
}

fn restart(dir: &Path, index: usize) {
    let status = Command::new(NOX)
        .args(["testnet", "restart", "--node", &index.to_string(), "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("nox testnet restart");
    assert!(status.success(), "restart of node-{index} failed");
}

fn wallet_files(w: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(w)
        .expect("wallet dir")
        .map(|e| e.expect("entry").path())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_exits_are_refused_and_every_read_goes_through_the_mixnet() {
    let dir = testnet_dir("nox-it", "tx-bounds");
    let _ = std::fs::remove_dir_all(&dir);
    let base = port_base(30_000, 60, 30);
    let net = Testnet::up(dir.clone(), base, &["--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0"]);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let chain_rpc = info.rpc_url.clone();

    // chain.json now names a listener that records every connection: nothing may read there.
    let (trap, connections) = recording_listener();
    let chain_json = dir.join("chain.json");
    let original = std::fs::read_to_string(&chain_json).expect("chain.json");
    let mut doc: serde_json::Value = serde_json::from_str(&original).expect("chain.json parses");
    doc["rpc_url"] = serde_json::Value::String(trap.clone());
    std::fs::write(&chain_json, serde_json::to_vec_pretty(&doc).expect("json")).expect("write chain.json");

    let wdir = dir.join("wallet");
    let (w, t) = (wdir.to_str().expect("utf-8"), dir.to_str().expect("utf-8"));
    let user_key = dir.join("user.key");
    std::fs::write(&user_key, USER_KEY).expect("key");
    ok(&["wallet", "new", "--wallet", w]);

    // Item 9: reads and the deposit go through the command's own mixnet client.
    let out = ok(&[
        "wallet",
        "deposit",
        "--wallet",
        w,
        "--testnet",
        t,
        "--amount",
        "1000000000000000000",
        "--key-file",
        user_key.to_str().expect("utf-8"),
    ]);
    assert!(out.contains("through the mixnet") && out.contains("deposited"), "{out}");
    let out = ok(&["wallet", "balance", "--wallet", w, "--testnet", t]);
    assert!(out.contains("pending insertion 1000000000000000000"), "{out}");
    // A direct read only when asked, and then the command says so, naming the URL.
    let out = ok(&["wallet", "balance", "--wallet", w, "--testnet", t, "--direct-rpc", &chain_rpc]);
    assert!(out.contains(&format!("warning: reading the chain directly from {chain_rpc}")), "{out}");
    // No mixnet to read through: refused, with how to start the daemon.
    let err = nox(&["wallet", "balance", "--wallet", w, "--pool", &Address::repeat_byte(1).to_string()])
        .expect_err("no way to read privately");
    assert!(err.contains("nox client --testnet"), "{err}");

    // Item 3: the exit lies; the client refuses before anything is proved, spent or sent.
    let (exit, exit_dir) = relaying_exit(&dir);
    let honest_config = std::fs::read_to_string(exit_dir.join("node.toml")).expect("node.toml");
    let provider = ProviderBuilder::new().connect_http(chain_rpc.parse().expect("url")).erased();
    let quote = ok(&["tx", "quote", "--testnet", t, "--exit", "0"]);
    let quote: nox_relayer::Quote = serde_json::from_str(&quote).expect("quote JSON");
    let relayer = quote.relayer;
    let ledger = RewardLedger::new(info.deployment.ledger, &provider);
    let token = info.deployment.stake_token.to_string();
    let send = ["tx", "send", "--wallet", w, "--testnet", t, "--exit", "0", "--target", &token, "--data", "0x18160ddd"];
    for (lie, figure, quoted) in [
        ("payment_gas = 42000000", "payment_gas", "42000000"),
        ("priority_fee_wei = 100000000000", "priority_fee", "100000000000"),
    ] {
        std::fs::write(exit_dir.join("node.toml"), format!("{honest_config}\n[exit.services.relay.policy]\n{lie}\n"))
            .expect("write node.toml");
        restart(&dir, exit);
        let before = wallet_files(&wdir);
        let nonce = provider.get_transaction_count(relayer).await.expect("nonce");
        let err = nox(&send).expect_err("a lying quote must be refused");
        assert!(
            err.contains("quote is refused") && err.contains(figure) && err.contains(quoted),
            "{lie}: the refusal must name the figure and the quoted value:\n{err}"
        );
        assert!(err.contains("above the bound") && err.contains("nothing was proved, spent or sent"), "{err}");
        assert!(!err.contains("proving the spend"), "nothing may be proved:\n{err}");
        assert_eq!(wallet_files(&wdir), before, "{lie}: the wallet's files must be unchanged");
        assert_eq!(provider.get_transaction_count(relayer).await.expect("nonce"), nonce, "{lie}: nothing sent");
        let credited = ledger.balanceOf(relayer, Address::ZERO).call().await.expect("balanceOf");
        assert!(credited.is_zero(), "{lie}: the relayer was credited {credited}");
    }

    // The honest exit's quote passes the same bounds; an explicit ceiling below its fee is refused.
    std::fs::write(exit_dir.join("node.toml"), &honest_config).expect("write node.toml");
    restart(&dir, exit);
    let before = wallet_files(&wdir);
    let low: Vec<&str> = send.iter().copied().chain(["--max-fee", "1gwei"]).collect();
    let err = nox(&low).expect_err("a fee above --max-fee");
    assert!(err.contains("own reading: base fee") && err.contains("within bounds"), "{err}");
    assert!(err.contains("above the ceiling 1000000000 (--max-fee)"), "{err}");
    assert_eq!(wallet_files(&wdir), before, "the wallet's files must be unchanged");

    assert_eq!(connections.load(Ordering::SeqCst), 0, "something read chain.json's URL directly");
    std::fs::write(&chain_json, original).expect("restore chain.json");
    drop(net);
}
