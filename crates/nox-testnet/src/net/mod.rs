//! `nox testnet up | traffic | status | join | leave | restart | down | demo`: a local
//! mixnet of real node processes on loopback, with its keys, signed topology and configs in
//! one state directory.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use crate::chain;
use crate::directory;
use nox_keystore::{EpochKeyStore, generate_identity, sphinx_dir};
use nox_sphinx::{Geometry, Scheme};
use nox_topology::{DocumentBuilder, EpochSchedule, LayerCount, PacketLen, SigningKey};
use rand_core::{RngCore, SeedableRng};

mod up;
pub use up::{WEBSOCKET_PORT_OFFSET, up};
#[cfg(test)]
use up::{check_exit_allow, exit_services, exit_summary};
use up::{spawn_node, wait_ready, websocket_port};
mod process;
pub use process::{join, join_with, kill_node, kill_process, leave, restart, restart_with, signal_process};
mod traffic;
pub use traffic::{TestnetClient, traffic};
#[cfg(test)]
mod tests;

/// Options shared by the testnet subcommands.
#[derive(clap::Args, Clone)]
pub struct TestnetArgs {
    /// State directory (keys, topology, configs, logs, pids).
    #[arg(long, default_value = ".nox-testnet")]
    dir: PathBuf,
}

impl TestnetArgs {
    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `nox testnet ...`
#[derive(clap::Subcommand)]
pub enum TestnetCommand {
    /// Generate keys and a signed topology, start the nodes, wait until ready.
    Up {
        #[command(flatten)]
        args: TestnetArgs,
        #[command(flatten)]
        layout: Box<Layout>,
    },
    /// Show each node's process and counters.
    Status {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// Send packets from a client through the testnet (entry → mix → exit)
    /// and report how many the exits delivered.
    Traffic {
        #[command(flatten)]
        args: TestnetArgs,
        /// Packets to send.
        #[arg(long, default_value_t = 1000)]
        packets: u64,
        /// Send rate, packets per second (0: as fast as the links take them).
        #[arg(long, default_value_t = 0.0)]
        rate: f64,
    },
    /// Up, traffic, requests answered through SURBs (echo, a 256 KiB reply,
    /// HTTP through the exit, SSRF refusals), status, down: the whole
    /// testnet in one command.
    Demo {
        #[command(flatten)]
        args: TestnetArgs,
        /// Packets to send.
        #[arg(long, default_value_t = 2000)]
        packets: u64,
        /// The Sphinx geometry's scheme (as `up --geometry`).
        #[arg(long, default_value = "ristretto255", value_parser = parse_scheme)]
        geometry: Scheme,
    },
    /// Add a node to a running testnet the way a new operator would: fresh keys, a stake
    /// registered in the node registry, its first descriptor uploaded to the directory once
    /// the registry admits it, then the node process started.
    Join {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// A node's operator leaves: `requestUnstake` in the registry (the node drops out of every
    /// verified topology), then its process is stopped.
    Leave {
        #[command(flatten)]
        args: TestnetArgs,
        /// The node's index (`node-<index>`).
        #[arg(long)]
        node: usize,
    },
    /// Stop one node's process (SIGTERM, then SIGKILL after 15 s) and start it again with the
    /// same configuration, keys and ports; wait until its metrics answer.
    Restart {
        #[command(flatten)]
        args: TestnetArgs,
        /// The node's index (`node-<index>`).
        #[arg(long)]
        node: usize,
    },
    /// Stop every node (SIGTERM, then SIGKILL after 15 s).
    Down {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// The WAN delay relay of `up --hosts` (started by it).
    #[command(hide = true)]
    WanRelay {
        /// The relay's plan (`<dir>/wan-relay/plan`).
        #[arg(long)]
        plan: PathBuf,
    },
}

/// Errors of the testnet tooling.
pub type TestnetError = String;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A node of the testnet as recorded in the state directory.
pub struct NodeEntry {
    /// Directory of the node (keys, config, log, pid).
    pub dir: PathBuf,
    /// Its metrics address.
    pub metrics: SocketAddr,
    /// Its layer.
    pub layer: u8,
}

/// Runs one testnet subcommand.
pub fn run(command: &TestnetCommand) -> Result<(), TestnetError> {
    match command {
        TestnetCommand::Up { args, layout } => up(&args.dir, layout),
        TestnetCommand::Status { args } => status(&args.dir),
        TestnetCommand::Traffic { args, packets, rate } => traffic(&args.dir, *packets, *rate),
        // `nox testnet demo` needs the wallet for its money part: the `nox` binary runs it
        // (crates/nox/src/demo.rs) and never passes it here.
        TestnetCommand::Demo { .. } => Err("`testnet demo` is run by the `nox` binary (nox testnet demo)".into()),
        TestnetCommand::Join { args } => join(&args.dir).map(|_| ()),
        TestnetCommand::Leave { args, node } => leave(&args.dir, *node),
        TestnetCommand::Restart { args, node } => restart(&args.dir, *node),
        TestnetCommand::Down { args } => down(&args.dir),
        TestnetCommand::WanRelay { plan } => crate::wan::run_relay(plan),
    }
}

/// The shape of a testnet: also the `nox testnet up` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Layout {
    /// Layers (entry, mix, ..., exit).
    #[arg(long, default_value_t = 3)]
    pub layers: u8,
    /// Nodes in each layer.
    #[arg(long = "nodes-per-layer", default_value_t = 3)]
    pub per_layer: usize,
    /// First link port; metrics ports start at base + 100.
    #[arg(long, default_value_t = 19_000)]
    pub base_port: u16,
    /// Mean mixing delay per hop, milliseconds.
    #[arg(long, default_value_t = 1.0)]
    pub mean_delay_ms: f64,
    /// Exits send the first 64 bytes of each delivered payload to this
    /// UDP address (a measurement sink).
    #[arg(long)]
    pub exit_sink: Option<SocketAddr>,
    /// Loop cover packets per second per node (λ_L).
    #[arg(long, default_value_t = 0.05)]
    pub loop_rate: f64,
    /// Drop cover packets per second per node (λ_D).
    #[arg(long, default_value_t = 0.05)]
    pub drop_rate: f64,
    /// Seconds before a loop counts as lost.
    #[arg(long, default_value_t = 30.0)]
    pub loop_timeout_s: f64,
    /// Exits forward Ethereum JSON-RPC to this node (e.g. a local Anvil
    /// at http://127.0.0.1:8545); absent: no JSON-RPC service.
    #[arg(long)]
    pub rpc_upstream: Option<String>,
    /// Chain id the exits relay `eth_sendRawTransaction` for (Anvil: 31337);
    /// absent: the exits relay no transactions.
    #[arg(long)]
    pub rpc_chain_id: Option<u64>,
    /// A local service the exits may fetch from, `ADDR:PORT` (repeatable):
    /// the test's or demo's own HTTP server. Nothing else on this machine is
    /// reachable through a testnet exit; the nodes' own ports are refused.
    #[arg(long = "exit-allow", value_name = "ADDR:PORT")]
    pub exit_allow: Vec<SocketAddr>,
    /// Exits drop this fraction of reply packets on purpose (measures
    /// and tests FEC recovery on the real network; 0 = none).
    #[arg(long, default_value_t = 0.0)]
    pub inject_reply_loss: f64,
    /// Loss rate the exits plan reply parity for.
    #[arg(long, default_value_t = 0.05)]
    pub reply_loss_estimate: f64,
    /// Key epoch length, seconds (short epochs exercise key rotation and re-publication).
    #[arg(long, default_value_t = 3600)]
    pub epoch_secs: u64,
    /// Seconds an epoch's key stays accepted after the epoch ends (< epoch_secs).
    #[arg(long, default_value_t = 300)]
    pub overlap_secs: u64,
    /// Measurement only: every node records link events and ground truth
    /// to `node-*/observe.events` (`[observe]`; needs a `nox` built with
    /// `--features observe`, never in production).
    #[arg(long)]
    pub observe: bool,
    /// Testing only: every node drops this fraction of the packets it sends on its links
    /// (`[chaos]`; needs a `nox` built with `--features chaos`, never in production).
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_loss: f64,
    /// Testing only: fixed delay every node adds to the packets it sends on its links, ms.
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_delay_ms: f64,
    /// Testing only: uniform extra delay in [0, this), ms, on the same links.
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_jitter_ms: f64,
    /// No chain: membership from the directory authority's signature alone (the pre-registry
    /// mode). By default the testnet starts Anvil, deploys the NOX contracts and registers
    /// every node with a stake; membership then comes from the registry.
    #[arg(long, conflicts_with = "chain_rpc")]
    pub no_chain: bool,
    /// Use this external chain (JSON-RPC URL) instead of starting Anvil.
    #[arg(long)]
    pub chain_rpc: Option<String>,
    /// Funded key (hex) that deploys the contracts and funds the operators on `--chain-rpc`
    /// (default: Anvil's first development key).
    #[arg(long)]
    pub deployer_key: Option<String>,
    /// Deploy the testnet verifiers on `--chain-rpc` even if it is not a local development
    /// chain (chain id 31337 or 1337, or an Anvil or Hardhat node). Their Groth16 keys come from
    /// public randomness: anyone can forge proofs and drain the pool. Throwaway chains only.
    #[arg(long, requires = "chain_rpc")]
    pub allow_testnet_keys_on_public_chain: bool,
    /// Anvil's seconds per block (default: a block per transaction).
    #[arg(long)]
    pub block_time: Option<u64>,
    /// The Sphinx geometry's scheme: ristretto255 (classical, the default), x25519-kem, mlkem768
    /// or xwing. Nodes, keys and the directory use it; clients read it from the topology.
    #[arg(long, default_value = "ristretto255", value_parser = parse_scheme)]
    pub geometry: Scheme,
    /// The packet length in bytes: 2048, 4096, 8192, 16384 or 32768 (default nox-sphinx's
    /// `DEFAULT_PACKET_LEN`; `4KiB` also parses). Nodes and the directory use it; clients read
    /// it from the topology's geometry.
    #[arg(long, default_value_t = PacketLen::DEFAULT, value_parser = parse_packet_len)]
    pub packet_len: PacketLen,
    /// Entries and gateways serve `wss://` (TLS) instead of `ws://`: a throwaway CA signs a
    /// certificate per node for its loopback address; its certificate is written to
    /// `<dir>/ca.pem` (trust it with `nox client --ca-file`, `NODE_EXTRA_CA_CERTS`).
    #[arg(long)]
    pub tls: bool,
    /// Every node on a host of its own: a network namespace with its own address, the WAN
    /// delay relay between the hosts (`crate::hosts`; needs root and `ip netns`).
    #[arg(long, conflicts_with = "tls")]
    pub hosts: bool,
    /// The WAN between the `--hosts` hosts (`crate::wan`).
    #[arg(long, value_enum, default_value = "three-regions")]
    pub wan: crate::wan::Wan,
    /// Probability that a relayed chunk waits one TCP retransmission timeout (`--hosts`).
    #[arg(long, default_value_t = 0.0)]
    pub wan_loss: f64,
}

/// `--packet-len`: a supported packet length, with the supported ones in the error.
pub fn parse_packet_len(text: &str) -> Result<PacketLen, String> {
    text.parse::<PacketLen>().map_err(|e| e.to_string())
}

/// `--geometry`: a scheme name, with the known names in the error.
pub fn parse_scheme(name: &str) -> Result<Scheme, String> {
    nox_topology::parse_scheme(name).map_err(|e| e.to_string())
}

impl Layout {
    /// Where the testnet's chain comes from, if it has one.
    fn chain_source(&self) -> Option<chain::ChainSource> {
        if self.no_chain {
            return None;
        }
        Some(match &self.chain_rpc {
            Some(rpc_url) => chain::ChainSource::External {
                rpc_url: rpc_url.clone(),
                deployer_key: self.deployer_key.clone().unwrap_or_else(|| nox_chain::anvil::DEV_KEY.to_owned()),
                allow_testnet_keys: self.allow_testnet_keys_on_public_chain,
            },
            None => chain::ChainSource::Anvil { port: self.base_port.saturating_add(200), block_time: self.block_time },
        })
    }
}

impl Default for Layout {
    /// The same values as the command-line defaults.
    fn default() -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            layout: Layout,
        }
        // Parsing no arguments cannot fail: every field has a default or is optional.
        Defaults::try_parse_from(["defaults"]).map(|d| d.layout).unwrap_or_else(|_| unreachable!())
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), TestnetError> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The nodes recorded in the state directory, in index order.
pub fn nodes(dir: &Path) -> Vec<NodeEntry> {
    let mut found = Vec::new();
    for index in 0.. {
        let node_dir = dir.join(format!("node-{index}"));
        let Ok(metrics) = std::fs::read_to_string(node_dir.join("metrics.addr")) else { break };
        let Ok(metrics) = metrics.trim().parse() else { break };
        let layer = std::fs::read_to_string(node_dir.join("layer")).ok().and_then(|l| l.trim().parse().ok());
        found.push(NodeEntry { dir: node_dir, metrics, layer: layer.unwrap_or(0) });
    }
    found
}

fn pid_of(node_dir: &Path) -> Option<u32> {
    std::fs::read_to_string(node_dir.join("pid")).ok()?.trim().parse().ok()
}

pub fn pid_alive(node_dir: &Path) -> bool {
    let Some(pid) = pid_of(node_dir) else { return false };
    // A zombie (exited, not yet reaped) is not alive.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// `GET /metrics`, or `None` if the node does not answer.
pub fn scrape(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// One sample of a metric without labels (or with exactly `labels`).
pub fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            (key == name).then(|| value.parse::<f64>().ok()).flatten()
        })
        .map_or(0, |v| v as u64)
}

/// Prints every node's process state and counters.
pub fn status(dir: &Path) -> Result<(), TestnetError> {
    let all = nodes(dir);
    if all.is_empty() {
        return Err(format!("no testnet in {}", dir.display()));
    }
    if let Some(line) = directory::status_line(dir, pid_alive(&directory::process_dir(dir))) {
        println!("{line}");
    }
    if let Some(line) = chain::status_line(dir, pid_alive(&chain::process_dir(dir))) {
        println!("{line}");
    }
    println!(
        "{:<8} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  drops",
        "node", "layer", "running", "received", "processed", "forwarded", "delivered", "rss_kb"
    );
    for node in &all {
        let text = scrape(node.metrics).unwrap_or_default();
        let drops: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with("nox_packets_dropped_total{") && !l.ends_with(" 0"))
            .map(|l| l.trim_start_matches("nox_packets_dropped_total").to_string())
            .collect();
        println!(
            "{:<8} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
            node.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            node.layer,
            if pid_alive(&node.dir) { "yes" } else { "no" },
            metric(&text, "nox_packets_received_total"),
            metric(&text, "nox_packets_processed_total"),
            metric(&text, "nox_packets_forwarded_total"),
            metric(&text, "nox_packets_delivered_total"),
            rss_kb(&node.dir).map_or("-".into(), |kb| kb.to_string()),
            if drops.is_empty() { "none".into() } else { drops.join(" ") },
        );
    }
    Ok(())
}

/// Resident memory of a node's process, from /proc.
pub fn rss_kb(node_dir: &Path) -> Option<u64> {
    rss_kb_of(&pid_of(node_dir)?.to_string())
}

/// Resident memory, kB, of the process `pid` (a number, or `self`), from `/proc/<pid>/status`.
pub fn rss_kb_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// Stops every node, then the directory.
pub fn down(dir: &Path) -> Result<(), TestnetError> {
    let all = nodes(dir);
    let directory_dir = directory::process_dir(dir);
    let chain_dir = chain::process_dir(dir);
    let processes: Vec<&Path> =
        all.iter().map(|n| n.dir.as_path()).chain([directory_dir.as_path(), chain_dir.as_path()]).collect();
    for process in &processes {
        if pid_alive(process)
            && let Some(pid) = pid_of(process)
        {
            let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while processes.iter().any(|p| pid_alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for process in &processes {
        if pid_alive(process)
            && let Some(pid) = pid_of(process)
        {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        }
        let _ = std::fs::remove_file(process.join("pid"));
    }
    crate::hosts::teardown(dir);
    println!("testnet down: {} nodes, the directory and the chain (if started here) stopped", all.len());
    Ok(())
}
