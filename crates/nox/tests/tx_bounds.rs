//! Issue 29 items 3 and 9 (and issue 35's silent direct reads) end to end, on real processes.
//!
//! - Item 9: the testnet's chain.json is pointed at a recording listener; `nox wallet deposit`,
//!   `balance` and `nox tx send` run with `--testnet` only, so they must read (and send) through
//!   their own in-process mixnet client — the listener must never see a connection. `--direct-rpc`
//!   reads directly and says so; with neither `--rpc`, `--direct-rpc` nor `--testnet` the wallet
//!   refuses and says how to start the daemon.
//! - Item 3: the testnet's exit is made to lie through its relayer's ordinary policy settings (a
//!   `payment_gas` of 42,000,000, 100× the shipped 420,000; a margin of 10,890 %, which makes every
//!   price in its quote 100× the shipped 10 % margin's) and restarted. `nox
//!   tx send` asks it through the mixnet, checks the quote against its own reading of the chain
//!   (through the mixnet too) and refuses with the figure, the quoted value and the bound: the
//!   wallet's files are byte for byte unchanged, the relayer's account sent nothing and was
//!   credited nothing. The honest exit's quote passes the same bounds and an explicit
//!   `--max-fee` below its fee is refused by the ceiling.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use alloy::{
    primitives::Address,
    providers::{Provider, ProviderBuilder},
};
use nox_chain::bindings::RewardLedger;

mod common;

use common::{
    QUIET, Testnet, USER_KEY, nox, ok, port_base, restart_node as restart, sent_from_to, testnet_dir, wait_until,
    write_key,
};

/// A JSON-RPC proxy in front of the chain that records every request body it forwards.
fn recording_proxy(upstream: &str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (upstream, log) = (upstream.clone(), log.clone());
            std::thread::spawn(move || serve_proxied(stream, &upstream, &log));
        }
    });
    (url, seen)
}

/// Forwards the HTTP/1.1 requests of one connection to `upstream`, one at a time.
fn serve_proxied(mut client: TcpStream, upstream: &str, log: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_until_headers(&mut client, &mut buf) else { return };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + len {
            let mut chunk = [0u8; 8192];
            match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[end..end + len].to_vec();
        buf.drain(..end + len);
        log.lock().expect("log").push(String::from_utf8_lossy(&body).into_owned());
        let Ok(mut up) = TcpStream::connect(upstream) else { return };
        let request = format!(
            "POST / HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        );
        let mut response = Vec::new();
        if up.write_all(request.as_bytes()).and_then(|()| up.write_all(&body)).is_err()
            || up.read_to_end(&mut response).is_err()
            || client.write_all(&response).is_err()
        {
            return;
        }
    }
}

fn read_until_headers(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(i + 4);
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The testnet's exit with a relayer: its index and directory.
fn relaying_exit(dir: &Path) -> (usize, PathBuf) {
    (0..16)
        .map(|i| (i, dir.join(format!("node-{i}"))))
        .find(|(_, d)| std::fs::read_to_string(d.join("node.toml")).is_ok_and(|c| c.contains("[exit.services.relay]")))
        .expect("an exit with a relayer")
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
    let net = Testnet::up(dir.clone(), base, &QUIET);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let chain_rpc = info.rpc_url.clone();

    // chain.json now names a proxy that records every request. The mixnet client itself reads
    // the node registry there to verify the topology (public data, the same for every client);
    // nothing of the wallet's may go there: no read of the pool, no fee reading, no transaction.
    let (trap, requests) = recording_proxy(&chain_rpc);
    let chain_json = dir.join("chain.json");
    let original = std::fs::read_to_string(&chain_json).expect("chain.json");
    let mut doc: serde_json::Value = serde_json::from_str(&original).expect("chain.json parses");
    doc["rpc_url"] = serde_json::Value::String(trap.clone());
    std::fs::write(&chain_json, serde_json::to_vec_pretty(&doc).expect("json")).expect("write chain.json");

    let wdir = dir.join("wallet");
    let (w, t) = (wdir.to_str().expect("utf-8"), dir.to_str().expect("utf-8"));
    let user_key = write_key(&dir, "user.key", USER_KEY);
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
        "1",
        "--key-file",
        user_key.to_str().expect("utf-8"),
    ]);
    assert!(out.contains("through the mixnet") && out.contains("deposited"), "{out}");
    let out = ok(&["wallet", "balance", "--wallet", w, "--testnet", t]);
    // 1 ETH, pending or (once an exit's relayer inserted it) spendable.
    assert!(out.contains("pending insertion 1 ETH") || out.contains("spendable 1 ETH"), "{out}");
    // The exits' relayers insert the deposit within seconds; wait for it (a paid send needs a
    // spendable note).
    let inserted = wait_until(Duration::from_secs(180), Duration::from_secs(2), || {
        ok(&["wallet", "balance", "--wallet", w, "--testnet", t]).contains("spendable 1 ETH")
    });
    assert!(inserted, "the deposit was never inserted by the exits' relayers");
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
    for (lie, figure, quoted) in
        [("payment_gas = 42000000", "payment_gas", "42000000"), ("margin_bps = 1089000", "margin_bps", "1089000")]
    {
        std::fs::write(exit_dir.join("node.toml"), format!("{honest_config}\n[exit.services.relay.policy]\n{lie}\n"))
            .expect("write node.toml");
        restart(&dir, exit);
        let before = wallet_files(&wdir);
        let from_block = provider.get_block_number().await.expect("block number") + 1;
        let err = nox(&send).expect_err("a lying quote must be refused");
        assert!(
            err.contains("quote is refused") && err.contains(figure) && err.contains(quoted),
            "{lie}: the refusal must name the figure and the quoted value:\n{err}"
        );
        assert!(err.contains("above the bound") && err.contains("nothing was proved, spent or sent"), "{err}");
        assert!(!err.contains("proving the transaction"), "nothing may be proved:\n{err}");
        assert_eq!(wallet_files(&wdir), before, "{lie}: the wallet's files must be unchanged");
        // Nothing sent: no transaction from the relayer to the executor since the refusal began
        // (the inserter shares the relayer's account, so its nonce would not tell).
        let sent = sent_from_to(&provider, relayer, info.deployment.executor, from_block).await;
        assert!(sent.is_empty(), "{lie}: the relayer sent {sent:?} to the executor");
        let credited = ledger.balanceOf(relayer, Address::ZERO).call().await.expect("balanceOf");
        assert!(credited.is_zero(), "{lie}: the relayer was credited {credited}");
    }

    // The honest exit's quote passes the same bounds; an explicit ceiling below its fee is refused.
    std::fs::write(exit_dir.join("node.toml"), &honest_config).expect("write node.toml");
    restart(&dir, exit);
    let before = wallet_files(&wdir);
    let low: Vec<&str> = send.iter().copied().chain(["--max-fee", "1gwei"]).collect();
    let err = nox(&low).expect_err("a fee above --max-fee");
    // The quote is checked first: had it broken a bound, that would be the refusal.
    assert!(!err.contains("quote is refused"), "the honest exit's quote must pass the bounds:\n{err}");
    assert!(err.contains("above the ceiling 1000000000 (--max-fee)"), "{err}");
    assert_eq!(wallet_files(&wdir), before, "the wallet's files must be unchanged");

    let pool = info.pool.as_ref().expect("a pool").pool.to_string().to_lowercase();
    let seen = requests.lock().expect("log").clone();
    assert!(!seen.is_empty(), "the proxy saw the topology's registry reads");
    for body in &seen {
        let lower = body.to_lowercase();
        for wallet_only in [pool.as_str(), "eth_sendrawtransaction", "eth_maxpriorityfeepergas", "eth_getlogs"] {
            assert!(!lower.contains(wallet_only), "a wallet request went to chain.json's URL directly: {body}");
        }
    }
    std::fs::write(&chain_json, original).expect("restore chain.json");
    drop(net);
}
