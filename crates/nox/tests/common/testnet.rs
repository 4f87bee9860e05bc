//! A `nox testnet up` as a value stopped on drop, and reading a running testnet's files and
//! counters (authority key, topology, node directories, metrics), restarting one of its nodes.

use std::{
    ffi::OsStr,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use nox_client::{Client, ClientConfig, ClientHandle, ShellConfig};
use nox_sphinx::Geometry;
use nox_topology::VerifiedTopology;

use super::{process::reap, run::NOX};

/// `nox testnet up`'s arguments for a quiet testnet: one node per layer, no loop or drop cover
/// traffic (a test that counts packets or waits on one request).
pub const QUIET: [&str; 6] = ["--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0"];

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
        reap(&mut self.children);
        let _ = Command::new(NOX).args(["testnet", "down", "--dir"]).arg(&self.dir).stdout(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `<tmp>/<prefix>-<name>-<pid>`: one directory per test and per test process.
pub fn testnet_dir(prefix: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()))
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

/// The testnet's node directories (`node-0`, `node-1`, … while they exist).
pub fn node_dirs(dir: &Path) -> Vec<PathBuf> {
    (0..).map(|i| dir.join(format!("node-{i}"))).take_while(|d| d.exists()).collect()
}

/// `nox testnet restart --node <index> --dir <dir>`, which must succeed.
pub fn restart_node(dir: &Path, index: usize) {
    let status = Command::new(NOX)
        .args(["testnet", "restart", "--node", &index.to_string(), "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .expect("nox testnet restart");
    assert!(status.success(), "testnet restart of node-{index} failed");
}

/// The node directory (`node-N`) and index N of the testnet node whose configuration listens on
/// `address` (its `listen = "…"` line).
pub fn node_dir_of(dir: &Path, address: SocketAddr) -> Option<(usize, PathBuf)> {
    node_dirs(dir).into_iter().enumerate().find(|(_, d)| {
        let config = std::fs::read_to_string(d.join("node.toml")).unwrap_or_default();
        config.lines().any(|l| l.strip_prefix("listen = ").is_some_and(|v| v.trim_matches('"') == address.to_string()))
    })
}

/// A mixnet client (in this process) on the testnet's topology with the configuration `core`.
pub async fn client(dir: &Path, core: ClientConfig) -> ClientHandle {
    Client::start(ShellConfig { topology: topology(dir), core }).await.expect("client starts")
}
