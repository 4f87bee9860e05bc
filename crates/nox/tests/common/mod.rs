//! Fixtures shared by the multi-process integration tests (`tests/*.rs`): each test file
//! says `mod common;` (the usual Cargo layout for shared integration-test code: a directory
//! module is not compiled as a test binary of its own).
//!
//! - [`Testnet`]: a `nox testnet up` in its own directory and port range, stopped
//!   (`nox testnet down`), with its extra children reaped and its directory removed, on drop;
//! - [`testnet_dir`] and [`port_base`]: the per-test directory and the per-pid port range
//!   (every file keeps its own range so that test binaries running in parallel never collide);
//! - [`authority`], [`topology`], [`metrics_addr`], [`node_metric`]: reading a running
//!   testnet's files and counters;
//! - [`free_port`], [`wait_until`];
//! - the wallet tests' set-up: [`USER_KEY`], [`PASSPHRASE`], [`nox`] / [`ok`] (a `nox` command
//!   with the passphrase), [`write_key`], [`rpc_daemon`] (a `nox client --rpc` the wallet reads
//!   through), [`figures`] (a balance's ETH figures) and [`sent_from_to`] (the transactions
//!   one account sent to another, from the blocks' receipts).

// Each test binary compiles this module and uses only a subset of it: the rest would be
// reported as dead code once per binary.
#![allow(dead_code)]

use std::{
    ffi::OsStr,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use alloy::primitives::{Address, TxHash};
use alloy::providers::{DynProvider, Provider};
use nox_sphinx::Geometry;
use nox_topology::VerifiedTopology;

/// The `nox` binary under test.
pub const NOX: &str = env!("CARGO_BIN_EXE_nox");

/// A testnet in its own directory and port range; stopped on drop.
pub struct Testnet {
    /// The testnet's directory (`--dir`).
    pub dir: PathBuf,
    /// Processes the test started itself (a client, a dashboard, a restarted node): killed and
    /// reaped on drop, before `nox testnet down`.
    pub children: Vec<Child>,
}

impl Testnet {
    /// A testnet already started in `dir` (by a command the test runs itself): stopped on drop.
    pub fn adopt(dir: PathBuf) -> Self {
        Testnet { dir, children: Vec::new() }
    }

    /// `nox testnet up <args> --base-port <base> --dir <dir>`, its stdout discarded; panics if it
    /// fails (after stopping whatever it started).
    pub fn up<S: AsRef<OsStr>>(dir: PathBuf, base: u16, args: &[S]) -> Self {
        Self::start(dir, base, args, Stdio::null())
    }

    /// As [`Testnet::up`], with `nox testnet up`'s summary on the test's stdout.
    pub fn up_showing_output<S: AsRef<OsStr>>(dir: PathBuf, base: u16, args: &[S]) -> Self {
        Self::start(dir, base, args, Stdio::inherit())
    }

    fn start<S: AsRef<OsStr>>(dir: PathBuf, base: u16, args: &[S], stdout: Stdio) -> Self {
        let status = Command::new(NOX)
            .args(["testnet", "up"])
            .args(args)
            .arg("--base-port")
            .arg(base.to_string())
            .arg("--dir")
            .arg(&dir)
            .stdout(stdout)
            .status()
            .expect("run nox testnet up");
        let net = Testnet::adopt(dir);
        assert!(status.success(), "testnet up failed");
        net
    }
}

impl Drop for Testnet {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = Command::new(NOX).args(["testnet", "down", "--dir"]).arg(&self.dir).stdout(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `<tmp>/<prefix>-<name>-<pid>`: one directory per test and per test process.
pub fn testnet_dir(prefix: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()))
}

/// `start + (pid % slots) * stride`: the first port of this process's range in a file's block
/// of `slots` ranges of `stride` ports each. Each file has its own block (see its call); a
/// file with several tests adds `slot * 10` for the test's own testnet. Every block must end
/// below the kernel's ephemeral range (32768 on Linux): see `the_port_blocks_stay_below_the_ephemeral_range`.
pub fn port_base(start: u16, slots: u32, stride: u16) -> u16 {
    start + (std::process::id() % slots) as u16 * stride
}

/// The first port the kernel may pick for an outgoing connection (Linux's default
/// `ip_local_port_range`; read from /proc where there is one).
pub fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        .unwrap_or(32_768)
}

/// The testnet's authority key (`authority.pub`, trimmed).
pub fn authority(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("authority.pub")).expect("authority.pub").trim().to_owned()
}

/// The testnet's signed topology (`topology.json`), verified with its authority key.
pub fn topology(dir: &Path) -> VerifiedTopology {
    nox_node::load_topology(&dir.join("topology.json"), &authority(dir), &Geometry::default()).expect("topology")
}

/// A node's `/metrics` address (`<node dir>/metrics.addr`).
pub fn metrics_addr(node: &Path) -> SocketAddr {
    std::fs::read_to_string(node.join("metrics.addr")).expect("metrics.addr").trim().parse().expect("an address")
}

/// One series of a node's `/metrics` (0 when absent or when the node does not answer).
pub fn node_metric(node: &Path, series: &str) -> u64 {
    nox_testnet::metric(&nox_testnet::scrape(metrics_addr(node)).unwrap_or_default(), series)
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Polls `done` every `every` until it holds (true) or `patience` has passed (false).
pub fn wait_until(patience: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// Anvil's default account 1: the depositor of the wallet tests.
pub const USER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
/// The test wallets' passphrase (`NOX_WALLET_PASSPHRASE`).
pub const PASSPHRASE: &str = "correct horse battery staple";

/// Runs `nox <args>` with the wallets' passphrase; stdout + stderr, or the failure text.
pub fn nox<S: AsRef<OsStr>>(args: &[S]) -> Result<String, String> {
    let out = Command::new(NOX).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().expect("run nox");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() { Ok(text) } else { Err(text) }
}

/// [`nox`], which must succeed (else the test panics with its output).
pub fn ok<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    nox(args).unwrap_or_else(|e| panic!("nox {args:?} failed:\n{e}"))
}

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
    let listening = wait_until(Duration::from_secs(30), Duration::from_millis(100), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
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
        if text.trim() == "0" { 0 } else { nox::wallet_cmd::Unit::eth().parse(text).expect("an amount") }
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

/// A directory mirror that serves `json` as its document (`GET /topology`) to every request: the
/// second view an equivocating node shows.
pub fn serve_document(json: String) -> SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", json.len());
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(json.as_bytes()));
        }
    });
    addr
}

/// An equivocating node's second view: fetches the document the directory at `directory`
/// serves, re-signs the node's descriptor (identity keys in `keys`) with another Sphinx key for
/// the same epoch, attaches its operator's statements (`operator` on `chain_id`'s `registry`),
/// checks that the two descriptors are proof of equivocation, and serves the forked document
/// from a mirror of its own (returned). The test never builds the evidence itself: the watcher
/// must find it in the two mirrors.
pub fn equivocating_mirror(
    directory: SocketAddr,
    keys: &Path,
    operator: &alloy::signers::local::PrivateKeySigner,
    chain_id: u64,
    registry: Address,
) -> SocketAddr {
    let identity = nox_keystore::load_identity(keys).expect("identity");
    let id = identity.public().identity_key.to_bytes();
    let document = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(nox_directory::fetch_document(directory, Duration::from_secs(3)))
        .expect("the directory's document");
    let published = document
        .nodes
        .iter()
        .find(|n| n.descriptor.identity_key.to_bytes() == id)
        .expect("the node's published descriptor")
        .clone();
    assert!(!published.operator_statements.is_empty(), "nodes publish operator statements");
    let mut other = published.descriptor.clone();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(5);
    other.sphinx_keys[0].key = nox_sphinx::SecretKey::generate(&mut rng).public_key();
    let other = nox_chain::slash::attach_statements(
        operator,
        chain_id,
        registry,
        other.sign(identity.signing_key()).expect("signs"),
    )
    .expect("statements");
    assert!(
        nox_chain::slash::evidence_from(alloy::signers::Signer::address(operator), &published, &other).is_some(),
        "the two are proof"
    );
    let mut forked = document.clone();
    for node in &mut forked.nodes {
        if node.descriptor.identity_key.to_bytes() == id {
            *node = other.clone();
        }
    }
    serve_document(forked.to_json().expect("json"))
}
