//! Integration tests on real node processes (`nox testnet up`, one node per
//! layer), over real sockets: a packet crosses 3 hops; a replayed packet, a
//! packet re-sent with a changed PoW nonce, a tampered packet, garbage on a
//! link, an unauthenticated peer and a wrong-layer sender are each rejected
//! and counted; a restarted node rejects packets it had already processed;
//! a flood keeps memory bounded and the node serving; an X-Wing testnet answers the client
//! CLI's echo through a SURB; an exit restarted by `nox testnet restart` carries echoes again.

use std::{
    collections::HashMap,
    io::Write,
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::Duration,
};

use nox_link::{
    LinkConfig, LinkKeypair, LinkPublicKey,
    transport::{DialerConfig, LinkCounters, OutboundLinks},
};
use nox_sphinx::{BuildOptions, Geometry, PathHop};
use nox_testnet::scrape;
use nox_topology::VerifiedTopology;
use rand_core::SeedableRng;

mod common;

use common::{
    NOX, QUIET, Testnet, metrics_addr, node_dir_of, node_dirs, node_metric as metric, port_base, testnet_dir, topology,
    wait_until,
};

/// One node per layer, no cover traffic (the test counts packets exactly).
fn up() -> Testnet {
    up_with("a", 0, &QUIET)
}

/// `nox testnet up` in its own directory and port range (`slot` separates
/// the tests of one run, which run in parallel).
fn up_with(name: &str, slot: u16, extra: &[&str]) -> Testnet {
    let base = port_base(20_000, 200, 20) + slot * 10;
    let mut args = vec!["--mean-delay-ms", "1"];
    args.extend_from_slice(extra);
    Testnet::up_showing_output(testnet_dir("nox-it", name), base, &args)
}

/// Waits (up to 10 s) until `series` on `node` reaches `at_least`.
fn wait_metric(node: &Path, series: &str, at_least: u64) -> u64 {
    wait_metric_for(node, series, at_least, Duration::from_secs(10))
}

fn wait_metric_for(node: &Path, series: &str, at_least: u64, patience: Duration) -> u64 {
    let mut value = 0;
    wait_until(patience, Duration::from_millis(20), || {
        value = metric(node, series);
        value >= at_least
    });
    value
}

struct Client {
    topology: VerifiedTopology,
    geometry: Geometry,
    links: OutboundLinks,
    /// What nodes send down the links (an entry's difficulty notices). Kept
    /// open: a link whose receiver is gone closes on the first record.
    downstream: tokio::sync::mpsc::Receiver<nox_link::transport::Inbound>,
    _stop: tokio::sync::watch::Sender<bool>,
}

/// A dialer: anonymous client (`identity: None`) or a node's link key.
fn client(dir: &Path, identity: Option<LinkKeypair>) -> Client {
    let topology = topology(dir);
    let geometry = Geometry::default();
    let directory: HashMap<LinkPublicKey, SocketAddr> = topology
        .nodes()
        .iter()
        .map(|n| (LinkPublicKey(n.descriptor.link_key.to_bytes()), n.descriptor.address))
        .collect();
    let link = LinkConfig::new(geometry).unwrap();
    let config = match identity {
        Some(keypair) => DialerConfig::node(link, Arc::new(keypair)),
        None => DialerConfig::client(link),
    };
    let (tx, downstream) = tokio::sync::mpsc::channel(16);
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let links =
        OutboundLinks::new(config, Arc::new(directory), tx, Arc::new(LinkCounters::default()), stop_rx).unwrap();
    Client { topology, geometry, links, downstream, _stop: stop }
}

impl Client {
    fn path(&self, rng: &mut rand_chacha::ChaCha20Rng) -> (u32, Vec<PathHop>) {
        let epoch = self.topology.client_epoch(unix_now());
        (epoch, self.topology.random_path(rng, epoch, &|_| false).unwrap())
    }

    fn packet(&self, rng: &mut rand_chacha::ChaCha20Rng) -> (Vec<PathHop>, Vec<u8>) {
        let (epoch, path) = self.path(rng);
        let packet = nox_sphinx::build_forward(&self.geometry, &BuildOptions::new(epoch), &path, b"it", rng).unwrap();
        (path, packet)
    }

    fn link_key(&self, node: &nox_sphinx::NodeId) -> LinkPublicKey {
        LinkPublicKey(self.topology.node(node).unwrap().descriptor.link_key.to_bytes())
    }

    async fn send(&self, to: &nox_sphinx::NodeId, packet: Vec<u8>) {
        self.links.send_wait(&self.link_key(to), packet).await.unwrap();
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The node directory whose node has `id`.
fn dir_of(net: &Testnet, client: &Client, id: &nox_sphinx::NodeId) -> PathBuf {
    let address = client.topology.node(id).unwrap().descriptor.address;
    node_dir_of(&net.dir, address).unwrap().1
}

fn restart(node: &Path) -> std::process::Child {
    restart_after(node, "-TERM", || {})
}

/// Stops the node with `signal`, runs `between` while it is down, starts it again.
fn restart_after(node: &Path, signal: &str, between: impl FnOnce()) -> std::process::Child {
    let pid = std::fs::read_to_string(node.join("pid")).unwrap();
    let _ = Command::new("kill").arg(signal).arg(pid.trim()).status();
    wait_until(Duration::from_secs(15), Duration::from_millis(20), || {
        !Path::new(&format!("/proc/{}", pid.trim())).exists()
    });
    between();
    let log = std::fs::OpenOptions::new().append(true).open(node.join("node.log")).unwrap();
    let child = Command::new(NOX)
        .arg("node")
        .arg("--config")
        .arg(node.join("node.toml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    std::fs::write(node.join("pid"), child.id().to_string()).unwrap();
    wait_until(Duration::from_secs(10), Duration::from_millis(20), || scrape(metrics_addr(node)).is_some());
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_processes_carry_traffic_and_refuse_every_attack() {
    let mut net = up();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let anonymous = client(&net.dir, None);
    let (path, packet) = anonymous.packet(&mut rng);
    let entry = dir_of(&net, &anonymous, &path[0].node);
    let mix = dir_of(&net, &anonymous, &path[1].node);
    let exit = dir_of(&net, &anonymous, &path[2].node);

    // A packet crosses three processes.
    anonymous.send(&path[0].node, packet.clone()).await;
    assert_eq!(wait_metric(&exit, "nox_packets_delivered_total", 1), 1, "not delivered");
    assert_eq!(metric(&mix, "nox_packets_forwarded_total"), 1);

    // The same packet again, and again with another PoW nonce.
    anonymous.send(&path[0].node, packet.clone()).await;
    let mut renonced = packet.clone();
    let nonce_at = anonymous.geometry.nonce_range().start;
    renonced[nonce_at] ^= 0x5a;
    anonymous.send(&path[0].node, renonced).await;
    assert_eq!(wait_metric(&entry, "nox_packets_dropped_total{reason=\"replay\"}", 2), 2);

    // A tampered header.
    let mut tampered = anonymous.packet(&mut rng).1;
    tampered[60] ^= 1;
    anonymous.send(&path[0].node, tampered).await;
    assert_eq!(wait_metric(&entry, "nox_packets_dropped_total{reason=\"mac_mismatch\"}", 1), 1);

    // Garbage on a raw TCP connection: the handshake fails, the node lives.
    let entry_addr = anonymous.topology.node(&path[0].node).unwrap().descriptor.address;
    let mut raw = TcpStream::connect(entry_addr).unwrap();
    raw.write_all(&[0xAB; 200]).unwrap();
    drop(raw);
    assert!(wait_metric(&entry, "nox_link_events_total{event=\"handshakes_failed\"}", 1) >= 1);

    // An unauthenticated node key is refused by the mix node.
    let stranger = client(&net.dir, Some(LinkKeypair::generate().unwrap()));
    let _ = stranger.links.send(&stranger.link_key(&path[1].node), packet.clone());
    assert!(wait_metric(&mix, "nox_link_events_total{event=\"rejected_unauthenticated\"}", 1) >= 1);

    // A known node in the wrong layer: the entry's own link key, sending
    // straight to the exit (which only accepts from the mix layer).
    let entry_link = std::fs::read(entry.join("keys/link.key")).unwrap();
    let secret: [u8; 32] = entry_link[13..45].try_into().unwrap();
    let impostor = client(&net.dir, Some(LinkKeypair::from_secret_bytes(secret).unwrap()));
    let (_, other) = anonymous.packet(&mut rng);
    impostor.send(&path[2].node, other).await;
    assert_eq!(wait_metric(&exit, "nox_packets_dropped_total{reason=\"wrong_layer\"}", 1), 1);

    // Restart the entry: it still refuses the packet it processed before.
    let child = restart(&entry);
    net.children.push(child);
    let again = client(&net.dir, None);
    again.send(&path[0].node, packet.clone()).await;
    assert_eq!(
        wait_metric(&entry, "nox_packets_dropped_total{reason=\"replay\"}", 1),
        1,
        "replay accepted after restart"
    );
    assert_eq!(metric(&exit, "nox_packets_delivered_total"), 1);

    // A flood: memory stays bounded and the node keeps serving.
    let flood: Vec<Vec<u8>> = (0..1500)
        .map(|_| {
            let (epoch, _) = again.path(&mut rng);
            nox_sphinx::build_forward(&again.geometry, &BuildOptions::new(epoch), &path, b"flood", &mut rng).unwrap()
        })
        .collect();
    for packet in flood {
        let _ = again.links.send(&again.link_key(&path[0].node), packet);
        tokio::task::yield_now().await;
    }
    let (_, last) = {
        let (epoch, _) = again.path(&mut rng);
        (
            epoch,
            nox_sphinx::build_forward(&again.geometry, &BuildOptions::new(epoch), &path, b"last", &mut rng).unwrap(),
        )
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = metric(&exit, "nox_packets_delivered_total");
    again.send(&path[0].node, last).await;
    assert!(wait_metric(&exit, "nox_packets_delivered_total", before + 1) > before, "node stopped serving");
    let pid = std::fs::read_to_string(entry.join("pid")).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap();
    let rss_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(rss_kb < 300_000, "entry RSS {rss_kb} kB after a flood");
}

/// The file called `name` somewhere under `dir`.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

/// Killed with SIGKILL (no snapshot at shutdown), a restarted entry still
/// refuses what it forwarded, from its journal alone; with that journal then
/// damaged inside its committed batches, the restarted entry refuses the key
/// epoch (counted and logged) rather than forget tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_keeps_its_tags_and_a_damaged_journal_refuses_its_epoch() {
    let mut net = up_with("replay", 3, &QUIET);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let anonymous = client(&net.dir, None);
    let (epoch, path) = anonymous.path(&mut rng);
    let build = |rng: &mut rand_chacha::ChaCha20Rng, body: &[u8]| {
        nox_sphinx::build_forward(&anonymous.geometry, &BuildOptions::new(epoch), &path, body, rng).unwrap()
    };
    let entry = dir_of(&net, &anonymous, &path[0].node);
    let exit = dir_of(&net, &anonymous, &path[2].node);
    // One at a time: each packet is its own group commit in the entry's journal.
    let sent: Vec<Vec<u8>> = (0..3u8).map(|i| build(&mut rng, &[i; 8])).collect();
    for (count, packet) in sent.iter().enumerate() {
        anonymous.send(&path[0].node, packet.clone()).await;
        assert_eq!(wait_metric(&exit, "nox_packets_delivered_total", count as u64 + 1), count as u64 + 1);
    }
    assert!(metric(&entry, "nox_replay_syncs_total") >= 3);

    net.children.push(restart_after(&entry, "-KILL", || {}));
    let again = client(&net.dir, None);
    for packet in &sent {
        again.send(&path[0].node, packet.clone()).await;
    }
    assert_eq!(
        wait_metric(&entry, "nox_packets_dropped_total{reason=\"replay\"}", 3),
        3,
        "replay accepted after SIGKILL"
    );
    assert_eq!(metric(&exit, "nox_packets_delivered_total"), 3);

    // Damage the first record: commit slots after it prove it was durable.
    let journal = find_file(&entry, &format!("replay-{epoch:010}.journal")).expect("the entry's journal");
    net.children.push(restart_after(&entry, "-KILL", || {
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes[nox_replay::journal::HEADER_LEN + 1] ^= 0x20;
        std::fs::write(&journal, bytes).unwrap();
    }));
    let third = client(&net.dir, None);
    third.send(&path[0].node, build(&mut rng, b"fresh")).await;
    assert_eq!(wait_metric(&entry, "nox_packets_dropped_total{reason=\"replay_state_lost\"}", 1), 1);
    assert!(metric(&entry, "nox_replay_refused_epochs") >= 1);
    assert_eq!(metric(&exit, "nox_packets_delivered_total"), 3);
    let log = std::fs::read_to_string(entry.join("node.log")).unwrap_or_default();
    assert!(log.contains("replay state of this key epoch is lost"), "{log}");
}

/// An entry node greets each new client link with its current client
/// proof-of-work difficulty (a downstream difficulty notice), and exports
/// the adaptive-PoW gauges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_greets_a_new_client_link_with_its_difficulty() {
    let net = up_with("pow", 2, &QUIET);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
    let mut anonymous = client(&net.dir, None);
    let (path, packet) = anonymous.packet(&mut rng);
    let entry = dir_of(&net, &anonymous, &path[0].node);
    anonymous.send(&path[0].node, packet).await;
    let notice = tokio::time::timeout(Duration::from_secs(10), anonymous.downstream.recv())
        .await
        .expect("a difficulty notice in time")
        .expect("link open");
    assert_eq!(notice.from, nox_link::transport::PeerIdentity::Node(anonymous.link_key(&path[0].node)));
    let parsed = nox_link::parse_downstream(&notice.packet, anonymous.geometry.header_len()).unwrap();
    let nox_link::Downstream::Difficulty(bits) = parsed else { panic!("not a difficulty notice: {parsed:?}") };
    assert_eq!(u64::from(bits), metric(&entry, "nox_pow_difficulty_bits"));
    assert_eq!(bits, path[0].pow_difficulty, "the entry asks what the topology advertises at normal load");
    let text = scrape(metrics_addr(&entry)).unwrap_or_default();
    assert!(text.contains("nox_pow_client_arrival_rate"), "{text}");
    assert!(text.contains("nox_packets_dropped_total{reason=\"rate_limited\"} 0"), "{text}");
    // The link stayed up: the packet crossed to the exit.
    let exit = dir_of(&net, &anonymous, &path[2].node);
    assert_eq!(wait_metric(&exit, "nox_packets_delivered_total", 1), 1, "not delivered");
}

#[test]
fn cover_loops_return_and_a_dead_node_is_marked_degraded() {
    let net = up_with(
        "cover",
        1,
        &["--nodes-per-layer", "2", "--loop-rate", "10", "--drop-rate", "5", "--loop-timeout-s", "3"],
    );
    let nodes = node_dirs(&net.dir);
    let layer_of = |d: &Path| std::fs::read_to_string(d.join("layer")).unwrap().trim().parse::<u8>().unwrap();
    let watcher = nodes.iter().find(|d| layer_of(d) == 0).unwrap().clone();
    let patience = Duration::from_secs(30);
    assert!(wait_metric_for(&watcher, "nox_cover_loops_returned_total", 20, patience) >= 20, "loops do not return");
    let exits: Vec<&PathBuf> = nodes.iter().filter(|d| layer_of(d) == 2).collect();
    assert!(exits.iter().map(|d| metric(d, "nox_cover_drops_received_total")).sum::<u64>() >= 1);
    assert_eq!(metric(&watcher, "nox_cover_degraded_nodes"), 0);

    // Kill one mix-layer node: loops through it stop returning.
    let victim = nodes.iter().find(|d| layer_of(d) == 1).unwrap();
    let pid = std::fs::read_to_string(victim.join("pid")).unwrap();
    let _ = Command::new("kill").arg("-KILL").arg(pid.trim()).status();
    assert!(wait_metric_for(&watcher, "nox_cover_degraded_nodes", 1, patience) >= 1, "dead node not marked degraded");
    // The gauge can turn before the loss counter reaches 5 (degradation needs
    // consecutive losses per node, not 5 in total): wait for it too.
    assert!(wait_metric_for(&watcher, "nox_cover_loops_lost_total", 5, patience) >= 5, "lost loops not counted");

    // Started again while another process holds its metrics address, it refuses to run and
    // says why (it used to run on without metrics, and `testnet up` waited 30 s for nothing).
    let _taken = std::net::TcpListener::bind(metrics_addr(victim)).expect("the dead node's metrics address is free");
    let out = Command::new(NOX).arg("node").arg("--config").arg(victim.join("node.toml")).output().expect("run nox");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a node ran without the metrics address it was configured with");
    assert!(stderr.contains("metrics address"), "{stderr}");
}

/// `nox testnet up --geometry xwing`: the nodes keep X-Wing epoch keys (in `keys/sphinx-xwing`),
/// the directory serves an X-Wing topology, and the unmodified client CLI — which has no
/// geometry flag — reads the geometry from that topology and gets an echo answered through an
/// X-Wing SURB (3,584-byte headers, 3,648-byte SURBs). The client refuses a topology naming an
/// unknown geometry, by its identifier.
#[test]
fn an_xwing_testnet_answers_an_echo_through_a_surb() {
    let net = up_with(
        "xwing",
        4,
        &["--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0", "--no-chain", "--geometry", "xwing"],
    );
    for node in node_dirs(&net.dir) {
        assert!(node.join("keys/sphinx-xwing").is_dir() && !node.join("keys/sphinx").exists(), "{}", node.display());
        let config = std::fs::read_to_string(node.join("node.toml")).unwrap();
        assert!(config.contains("sphinx_scheme = \"xwing\""), "{config}");
    }
    let authority = std::fs::read_to_string(net.dir.join("authority.pub")).unwrap();
    let authority =
        nox_topology::VerifyingKey::from_bytes(&hex::decode(authority.trim()).unwrap().try_into().unwrap()).unwrap();
    let topology = nox::client_cmd::load_file(&net.dir.join("topology.json"), authority).unwrap();
    assert_eq!(topology.geometry().scheme(), nox_sphinx::Scheme::XWing);
    assert_eq!(topology.geometry().header_len(), 3584);

    let text = "a post-quantum round trip";
    let out = Command::new(NOX)
        .args(["client", "echo", "--timeout-secs", "20", "--testnet"])
        .arg(&net.dir)
        .arg(text)
        .output()
        .expect("run nox client echo");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "echo failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().next(), Some(text), "{stdout}");
    assert!(stdout.contains("round trip:"), "{stdout}");
    let exit =
        node_dirs(&net.dir).into_iter().find(|d| std::fs::read_to_string(d.join("layer")).unwrap().trim() == "2");
    assert!(metric(&exit.unwrap(), "nox_packets_delivered_total") >= 1);

    // A topology naming a geometry this client does not know: refused, by its identifier.
    let mut unknown = topology.document().clone();
    unknown.geometry = [0x5A; 32];
    let file = net.dir.join("unknown-geometry.json");
    std::fs::write(&file, unknown.to_json().unwrap()).unwrap();
    let out = Command::new(NOX)
        .args(["client", "echo", "--topology"])
        .arg(&file)
        .args(["--authority", &hex::encode(authority.as_bytes()), "never sent"])
        .output()
        .expect("run nox client echo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("unknown Sphinx geometry"), "{stderr}");
    assert!(stderr.contains(&hex::encode([0x5A; 32])), "{stderr}");
}

/// `nox client echo` through the testnet in `dir`; the process's output.
fn echo(dir: &Path, text: &str) -> std::process::Output {
    Command::new(NOX)
        .args(["client", "echo", "--timeout-secs", "20", "--testnet"])
        .arg(dir)
        .arg(text)
        .output()
        .expect("run nox client echo")
}

/// `nox testnet restart --node N` on the only exit: the old process is gone, a new one runs with
/// the same configuration and ports, the command says so in one line once the node answers, and
/// the network carries a SURB echo through the new exit process (its counters start at zero, so
/// the delivery it counts is the echo's).
#[test]
fn a_restarted_exit_carries_a_surb_echo_again() {
    let net = up_with("restart", 5, &QUIET);
    let layer_of = |d: &Path| std::fs::read_to_string(d.join("layer")).unwrap().trim().parse::<u8>().unwrap();
    let (index, exit) = node_dirs(&net.dir).into_iter().enumerate().find(|(_, d)| layer_of(d) == 2).unwrap();
    let out = echo(&net.dir, "before the restart");
    assert!(out.status.success(), "echo failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(metric(&exit, "nox_packets_delivered_total") >= 1);
    let config = std::fs::read_to_string(exit.join("node.toml")).unwrap();
    let old_pid = std::fs::read_to_string(exit.join("pid")).unwrap().trim().to_owned();

    let out = Command::new(NOX)
        .args(["testnet", "restart", "--node", &index.to_string(), "--dir"])
        .arg(&net.dir)
        .output()
        .expect("run nox testnet restart");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "restart failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with(&format!("testnet restart: node-{index} (layer 2) is back on ")), "{stdout}");
    let new_pid = std::fs::read_to_string(exit.join("pid")).unwrap().trim().to_owned();
    assert_ne!(new_pid, old_pid);
    // Gone, or a zombie nobody reaped yet.
    let old_state = std::fs::read_to_string(format!("/proc/{old_pid}/stat")).unwrap_or_default();
    assert!(old_state.is_empty() || old_state.contains(") Z "), "the old exit still runs: {old_state}");
    assert_eq!(std::fs::read_to_string(exit.join("node.toml")).unwrap(), config, "the configuration changed");
    assert!(scrape(metrics_addr(&exit)).is_some(), "the restarted exit's metrics do not answer");
    assert_eq!(metric(&exit, "nox_packets_delivered_total"), 0, "not a new process");
    let log = std::fs::read_to_string(exit.join("node.log")).unwrap();
    assert!(log.contains("--- nox testnet restart at unix time"), "the old log was not kept: {log}");

    let text = "after the restart";
    let out = echo(&net.dir, text);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "echo through the restarted exit failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().next(), Some(text), "{stdout}");
    assert!(metric(&exit, "nox_packets_delivered_total") >= 1, "the echo did not cross the new exit process");

    // A node that does not exist: refused, by name.
    let out = Command::new(NOX)
        .args(["testnet", "restart", "--node", "99", "--dir"])
        .arg(&net.dir)
        .output()
        .expect("run nox testnet restart");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("no node-99"), "{stderr}");
}

/// `nox testnet up --layers 5`: the geometry is the topology's (5 hops, no client flag), and an
/// echo crosses all five layers and comes back through a 5-hop SURB: every node of layers 0–3
/// forwarded a packet and the last layer delivered it.
#[test]
fn a_five_layer_testnet_carries_an_echo_over_five_hops() {
    let net = up_with(
        "five",
        6,
        &["--layers", "5", "--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0", "--no-chain"],
    );
    let authority = std::fs::read_to_string(net.dir.join("authority.pub")).unwrap();
    let authority =
        nox_topology::VerifyingKey::from_bytes(&hex::decode(authority.trim()).unwrap().try_into().unwrap()).unwrap();
    let topology = nox::client_cmd::load_file(&net.dir.join("topology.json"), authority).unwrap();
    assert_eq!(topology.layers().get(), 5);
    assert_eq!(topology.geometry().hops(), 5);
    let text = "five hops out, five hops back";
    let out = echo(&net.dir, text);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "echo failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().next(), Some(text), "{stdout}");
    let nodes = node_dirs(&net.dir);
    assert_eq!(nodes.len(), 5);
    for node in &nodes {
        let layer: u8 = std::fs::read_to_string(node.join("layer")).unwrap().trim().parse().unwrap();
        if layer < 4 {
            assert!(metric(node, "nox_packets_forwarded_total") >= 1, "layer {layer} forwarded nothing");
        } else {
            assert!(metric(node, "nox_packets_delivered_total") >= 1, "the exit delivered nothing");
        }
    }
}

/// `nox testnet up --packet-len 4096` (issue 32): every node's and the directory's configuration
/// names the length, the topology's geometry is 4 KiB, the unmodified client CLI gets an echo
/// answered, and a 20 KiB echo comes back whole from one 4 KiB-packet SURB reply split into
/// several FEC fragments (each fragment a SURB).
#[test]
fn a_4kib_testnet_answers_an_echo_and_a_reply_of_several_fragments() {
    let net = up_with(
        "4kib",
        7,
        &["--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0", "--no-chain", "--packet-len", "4096"],
    );
    for node in node_dirs(&net.dir) {
        let config = std::fs::read_to_string(node.join("node.toml")).unwrap();
        assert!(config.contains("packet_len = 4096"), "{config}");
    }
    let directory = std::fs::read_to_string(net.dir.join("directory/directory.toml")).unwrap();
    assert!(directory.contains("packet_len = 4096"), "{directory}");
    // The client finds the length in the document's geometry identifier (no flag of its own).
    let authority = hex::decode(common::authority(&net.dir)).unwrap().try_into().unwrap();
    let authority = nox_topology::VerifyingKey::from_bytes(&authority).unwrap();
    let topology = nox::client_cmd::load_file(&net.dir.join("topology.json"), authority).unwrap();
    let geometry = *topology.geometry();
    assert_eq!((geometry.packet_len(), geometry.hops()), (4096, 3));

    let text = "a round trip in 4 KiB packets";
    let out = echo(&net.dir, text);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "echo failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().next(), Some(text), "{stdout}");

    let large: Vec<u8> = (0..20 * 1024).map(|i| (i % 251) as u8).collect();
    let fragments = large.len().div_ceil(nox_message::max_reply_len(&geometry, 1));
    assert!(fragments >= 5, "{fragments} fragments: the reply must not fit one 4 KiB SURB");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (body, stats) = runtime.block_on(async {
        let core = nox_client::ClientConfig::default();
        let client = nox_client::Client::start(nox_client::ShellConfig { topology, core }).await.unwrap();
        let request = nox_message::RequestBody::Echo(large.clone());
        let response =
            tokio::time::timeout(Duration::from_secs(30), client.request(request, large.len())).await.unwrap().unwrap();
        assert_eq!(response.status, nox_message::Status::Ok);
        (response.body, client.stats())
    });
    assert!(body == large, "the 20 KiB reply came back altered ({} bytes)", body.len());
    assert!(stats.replies >= fragments as u64, "{} reply fragments accepted, {fragments} needed", stats.replies);
}
