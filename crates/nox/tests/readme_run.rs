//! The README's command lines, run as written against a real testnet (issue 35: docs that
//! match the code), and what issue 35 asks of a command that loses its answer.
//!
//! **The docs test.** The lines are read from README.md, not copied here: the `nox client` line,
//! `W`'s definition, the wallet block (`new`, `address`, `viewing-key`, `deposit`, `sync`,
//! `balance`, `send`, `restore`) and the `nox tx send` line. Only the README's placeholders are
//! replaced (the testnet directory and the daemon's ports, which a test must not share with
//! other tests; `acct.key`, `nox1…`, `ADDR`, `HEX`, the backup's path); a renamed flag, a
//! changed default or an output the README promises that the code no longer gives fails here.
//! (`split`, `join` and `withdraw` are parsed by `readme_wallet.rs` and run by
//! `money/private_transfer.rs`.)
//!
//! **Typo-proof targets.** `nox tx send` with calldata to an address without code is refused
//! before anything is proved.
//!
//! **A lost answer is not sent twice.** (1) A deposit through a JSON-RPC proxy that answers every
//! receipt request with `null` (the endpoint died after the broadcast): the command prints the
//! transaction hash and exits with status 3; the same command re-run reports "already
//! submitted as 0x…; mined in block N" and deposits nothing more. (2) A paid `nox tx send` whose
//! client is killed after the relayer broadcast the bundle (Anvil's automine is off, so it
//! waits in the mempool): a re-run while it is pending sends nothing and exits with 3; once mined,
//! a re-run reports it, and exactly one bundle paid the relayer.
//!
//! **Ceremony keys.** The paid send proves with `--proving-key` (a copy of the wallet's cached
//! key file); a truncated key file is refused by name before anything is sent.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider, ProviderBuilder},
    rpc::types::Filter,
    sol_types::SolEvent,
};
use nox_chain::pool::ShieldedPool;

mod common;

// `USER_KEY`, Anvil's default account 1 (account 0 deploys the testnet): the README's `acct.key`.
use common::{
    NOX, PASSPHRASE, QUIET, Testnet, USER_KEY, figures, free_port, nox_output as run, output_text as text, port_base,
    testnet_dir, wait_listening, wait_until,
};

fn ok(args: &[String]) -> String {
    let out = run(args);
    assert!(out.status.success(), "nox {} failed:\n{}", args.join(" "), text(&out));
    text(&out)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// The README's placeholders and what they stand for in this test.
struct Subst {
    testnet: String,
    rpc: String,
    socks: String,
    wallet: String,
    wallet2: String,
    key: String,
    backup: String,
    shielded: String,
    target: String,
}

impl Subst {
    /// A README command line as argv, placeholders replaced.
    fn argv(&self, line: &str) -> Vec<String> {
        line.split_whitespace()
            .skip(1) // `nox`
            .map(|a| {
                match a {
                    ".nox-testnet" => self.testnet.clone(),
                    "127.0.0.1:8645" => self.rpc.clone(),
                    "http://127.0.0.1:8645" => format!("http://{}", self.rpc),
                    "127.0.0.1:1080" => self.socks.clone(),
                    "w" => self.wallet.clone(),
                    "w2" => self.wallet2.clone(),
                    "acct.key" => self.key.clone(),
                    "backup-of-wallet.key" => self.backup.clone(),
                    "nox1…" => self.shielded.clone(),
                    "ADDR" => self.target.clone(),
                    "HEX" => "0x18160ddd".to_owned(), // totalSupply()
                    other => other.to_owned(),
                }
            })
            .collect()
    }
}

/// The text between "`" + `start` and the next backtick, whitespace collapsed.
fn inline(readme: &str, start: &str) -> String {
    let from = readme.find(&format!("`{start}")).unwrap_or_else(|| panic!("the README shows `{start}…`")) + 1;
    let end = from + readme[from..].find('`').expect("closing backtick");
    readme[from..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `W`'s value in the README (`With W="…"`).
fn readme_w(readme: &str) -> String {
    let start = readme.find("With `W=\"").expect("the README defines W") + "With `W=\"".len();
    let end = start + readme[start..].find('"').expect("W's closing quote");
    readme[start..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The README's `nox wallet <cmd>` line (comment dropped, `$W` expanded).
fn wallet_line(readme: &str, cmd: &str) -> String {
    let w = readme_w(readme);
    let line = readme
        .lines()
        .find(|l| l.starts_with(&format!("nox wallet {cmd} ")))
        .unwrap_or_else(|| panic!("the README shows `nox wallet {cmd}`"));
    line.split('#').next().unwrap_or(line).replace("$W", &w)
}

/// A JSON-RPC proxy to `upstream` that answers every `eth_getTransactionReceipt` with `null`:
/// the endpoint lost every receipt after the broadcast.
fn receipt_dropping_proxy(upstream: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_owned();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let upstream = upstream.clone();
            std::thread::spawn(move || proxy_connection(stream, &upstream));
        }
    });
    url
}

fn proxy_connection(mut client: TcpStream, upstream: &str) {
    let mut buf = Vec::new();
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 8192];
            match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
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
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let reply = if request["method"] == "eth_getTransactionReceipt" {
            serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": null}))
                .expect("json")
        } else {
            let Ok(mut up) = TcpStream::connect(upstream) else { return };
            let req = format!(
                "POST / HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            let mut response = Vec::new();
            if up.write_all(req.as_bytes()).and_then(|()| up.write_all(&body)).is_err()
                || up.read_to_end(&mut response).is_err()
            {
                return;
            }
            let Some(i) = response.windows(4).position(|w| w == b"\r\n\r\n") else { return };
            response[i + 4..].to_vec()
        };
        let head =
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", reply.len());
        if client.write_all(head.as_bytes()).and_then(|()| client.write_all(&reply)).is_err() {
            return;
        }
    }
}

async fn events(
    provider: &DynProvider,
    pool: Address,
    signature: alloy::primitives::B256,
) -> Vec<alloy::rpc::types::Log> {
    let filter = Filter::new().address(pool).event_signature(signature).from_block(0);
    provider.get_logs(&filter).await.expect("logs")
}

/// The outstanding entries of the wallet's journal of handed-over transactions.
fn journal(wallet: &Path) -> Vec<serde_json::Value> {
    let Ok(bytes) = std::fs::read(wallet.join("submitted.json")) else { return Vec::new() };
    let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("journal JSON");
    doc["entries"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_commands_run_as_written_and_a_lost_answer_is_never_sent_twice() {
    let started = Instant::now();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).expect("README");
    let dir = testnet_dir("nox-it", "readme");
    let _ = std::fs::remove_dir_all(&dir);
    // Its own port block (Anvil at base + 200), below the ephemeral range like every other file's.
    let base = port_base(31_980, 19, 30);
    let mut net = Testnet::up(dir.clone(), base, &QUIET);
    let info = nox_testnet::chain::load(&dir).expect("chain.json");
    let pool = info.pool.as_ref().expect("a pool").pool;
    let anvil = ProviderBuilder::new().connect_http(info.rpc_url.parse().expect("url")).erased();
    std::fs::write(dir.join("acct.key"), USER_KEY).expect("key");
    let s = Subst {
        testnet: dir.to_str().expect("utf-8").to_owned(),
        rpc: format!("127.0.0.1:{}", free_port()),
        socks: format!("127.0.0.1:{}", free_port()),
        wallet: dir.join("w").to_str().expect("utf-8").to_owned(),
        wallet2: dir.join("w2").to_str().expect("utf-8").to_owned(),
        key: dir.join("acct.key").to_str().expect("utf-8").to_owned(),
        backup: dir.join("backup-of-wallet.key").to_str().expect("utf-8").to_owned(),
        shielded: String::new(),
        target: info.deployment.stake_token.to_string(),
    };

    // The client daemon, as the README starts it.
    let client_line = inline(&readme, "nox client ");
    assert!(client_line.contains("--rpc 127.0.0.1:8645"), "{client_line}");
    let child = Command::new(NOX).args(s.argv(&client_line)).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    net.children.push(child.expect("start nox client"));
    let rpc = s.rpc.clone();
    assert!(wait_listening(rpc.as_str(), Duration::from_secs(30)), "`{client_line}` did not listen");

    // The wallet block.
    let out = ok(&s.argv(&wallet_line(&readme, "new")));
    assert!(out.contains("only backup") || out.contains("ONLY backup"), "{out}");
    let address = ok(&s.argv(&wallet_line(&readme, "address"))).trim().to_owned();
    assert!(address.starts_with("nox1"), "{address}");
    let s = Subst { shielded: address.clone(), ..s };
    assert!(ok(&s.argv(&wallet_line(&readme, "viewing-key"))).contains("noxview1"));
    let deposit = s.argv(&wallet_line(&readme, "deposit"));
    for _ in 0..3 {
        let out = ok(&deposit);
        assert!(out.contains("deposited 0.5 ETH"), "{out}");
    }
    assert!(ok(&s.argv(&wallet_line(&readme, "sync"))).contains("synced to block"));
    let balance = s.argv(&wallet_line(&readme, "balance"));
    let out = ok(&balance);
    let (spendable, pending) = figures(&out);
    assert_eq!(spendable + pending, 1_500_000_000_000_000_000, "{out}");
    // Nobody inserts by hand: the exits' relayers do (the README says so).
    let settled = wait_until(Duration::from_secs(120), Duration::from_secs(2), || figures(&ok(&balance)).1 == 0);
    assert!(settled, "the deposits were never inserted by the exits' relayers");
    let out = ok(&s.argv(&wallet_line(&readme, "send")));
    assert!(out.contains("included in block") && out.contains("new note: 0.1 ETH to nox1"), "{out}");
    assert!(out.contains("change note: "), "every change note is reported: {out}");

    // The README's `nox tx send` line (a call to the stake token's totalSupply()).
    let tx_line = inline(&readme, "nox tx send ");
    let out = ok(&s.argv(&tx_line));
    assert!(out.contains("the action succeeded") && out.contains("included in block"), "{out}");

    // Typo-proof targets: calldata to an address without code is refused before any proof.
    let codeless = "0x000000000000000000000000000000000000dEaD";
    let mut call = s.argv(&tx_line);
    let at = call.iter().position(|a| a == "--target").expect("--target") + 1;
    call[at] = codeless.to_owned();
    let out = run(&call);
    assert!(!out.status.success(), "a call to a codeless target must be refused");
    let err = text(&out);
    assert!(err.contains("has no code") && err.contains("nothing was proved, spent or sent"), "{err}");
    assert!(!err.contains("proving the transaction"), "nothing may be proved: {err}");

    // Ceremony keys: a truncated key file is refused by name, nothing sent.
    let wdir = dir.join("w");
    let cached = std::fs::read(wdir.join("testnet-transfer.pk")).expect("the wallet cached the testnet key");
    std::fs::write(dir.join("truncated.pk"), &cached[..cached.len() / 2]).expect("write");
    std::fs::write(dir.join("ceremony.pk"), &cached).expect("write");
    let mut bad = s.argv(&tx_line);
    bad.extend(strings(&["--proving-key", dir.join("truncated.pk").to_str().expect("utf-8")]));
    let err = text(&run(&bad));
    assert!(err.contains("--proving-key") && err.contains("not an arkworks compressed Groth16 proving key"), "{err}");
    assert!(journal(&wdir).is_empty(), "nothing was handed over");

    // (1) A deposit whose receipt is lost: status 3 and the hash; the re-run deposits nothing more.
    let deposited = events(&anvil, pool, ShieldedPool::Deposited::SIGNATURE_HASH).await.len();
    let user = nox_chain::deploy::signer(USER_KEY).expect("key").address();
    let nonce = anvil.get_transaction_count(user).await.expect("nonce");
    let proxy = receipt_dropping_proxy(&info.rpc_url);
    let lost_deposit = |rpc: &str| {
        strings(&["wallet", "deposit", "--wallet", &s.wallet, "--testnet", &s.testnet, "--direct-rpc", rpc])
            .into_iter()
            .chain(strings(&["--amount", "0.01", "--key-file", &s.key, "--receipt-timeout-secs", "5"]))
            .collect::<Vec<_>>()
    };
    let out = run(&lost_deposit(&proxy));
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "a lost receipt exits with 3:\n{said}");
    let hash = said.split("broadcast as ").nth(1).and_then(|r| r.get(..66)).expect("the hash is printed").to_owned();
    assert!(said.contains("Re-run the same command"), "{said}");
    assert_eq!(journal(&wdir).len(), 1, "the journal holds the deposit");
    let out = ok(&lost_deposit(&info.rpc_url));
    assert!(out.contains(&format!("already submitted as {hash}; mined in block")), "{out}");
    assert_eq!(events(&anvil, pool, ShieldedPool::Deposited::SIGNATURE_HASH).await.len(), deposited + 1);
    assert_eq!(anvil.get_transaction_count(user).await.expect("nonce"), nonce + 1, "one transaction, not two");
    assert!(journal(&wdir).is_empty(), "resolved");

    // (2) A paid send whose client dies after the relayer broadcast it.
    let executor = info.deployment.executor;
    let relayed = |logs: &[alloy::rpc::types::Log]| {
        logs.iter()
            .filter_map(|l| l.log_decode::<ShieldedPool::Transacted>().ok())
            .filter(|t| !t.inner.data.relayer.is_zero())
            .count()
    };
    let paid_before = relayed(&events(&anvil, pool, ShieldedPool::Transacted::SIGNATURE_HASH).await);
    let mut paid = s.argv(&tx_line);
    paid.extend(strings(&["--proving-key", dir.join("ceremony.pk").to_str().expect("utf-8")]));
    let _: serde_json::Value = anvil.raw_request("evm_setAutomine".into(), (false,)).await.expect("automine off");
    let mut child = Command::new(NOX)
        .args(&paid)
        .env("NOX_WALLET_PASSPHRASE", PASSPHRASE)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nox tx send");
    let in_mempool = || async {
        let pool_txs: serde_json::Value = anvil.raw_request("txpool_content".into(), ()).await.expect("txpool");
        pool_txs["pending"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(_, by_nonce)| {
                by_nonce.as_object().into_iter().flatten().map(|(_, tx)| tx["to"].as_str().unwrap_or("").to_owned())
            })
            .any(|to| to.eq_ignore_ascii_case(&executor.to_string()))
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !in_mempool().await {
        assert!(child.try_wait().expect("wait").is_none(), "the send ended before its bundle was broadcast");
        assert!(Instant::now() < deadline, "the relayer never broadcast the bundle");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let entries = journal(&wdir);
    assert_eq!(entries.len(), 1, "the bundle was journaled before it left: {entries:?}");
    // Re-run while it is pending: nothing is sent again, status 3.
    let out = run(&paid);
    assert_eq!(out.status.code(), Some(3), "pending: {}", text(&out));
    assert!(text(&out).contains("nothing was sent again") && !text(&out).contains("proving the transaction"));
    let _: serde_json::Value = anvil.raw_request("evm_setAutomine".into(), (true,)).await.expect("automine on");
    let _: serde_json::Value = anvil.raw_request("evm_mine".into(), ()).await.expect("mine");
    let first = entries[0]["nullifiers"][0].as_str().expect("a nullifier").parse::<U256>().expect("hex");
    let spent = ShieldedPool::new(pool, &anvil);
    let mut landed = false;
    for _ in 0..60 {
        if spent.isSpent(first).call().await.expect("isSpent") {
            landed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(landed, "the relayer's bundle never landed");
    let out = ok(&paid);
    assert!(out.contains("already submitted as 0x") && out.contains("; mined in block "), "{out}");
    assert!(!out.contains("proving the transaction"), "{out}");
    let paid_after = relayed(&events(&anvil, pool, ShieldedPool::Transacted::SIGNATURE_HASH).await);
    assert_eq!(paid_after, paid_before + 1, "exactly one bundle paid a relayer");
    assert!(journal(&wdir).is_empty(), "resolved");

    // The README's restore: a copy of the key file finds the same balance.
    std::fs::copy(wdir.join("wallet.key"), &s.backup).expect("backup");
    ok(&s.argv(&wallet_line(&readme, "restore")));
    let restored = s.argv(&wallet_line(&readme, "balance").replace(&format!("--wallet {}", "w "), "--wallet w2 "));
    let mine = figures(&ok(&balance));
    let theirs = figures(&ok(&restored));
    assert_eq!(mine.0 + mine.1, theirs.0 + theirs.1, "the restored wallet finds the same notes");
    eprintln!("the README and the lost-answer checks took {:.1} s", started.elapsed().as_secs_f64());
    drop(net);
}
