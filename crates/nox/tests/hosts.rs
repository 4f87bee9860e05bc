//! `nox testnet up --hosts --wan three-regions`: every node in its own network namespace, the
//! userspace WAN relay between them (crates/nox-testnet/src/hosts.rs, wan.rs).
//!
//! - a WAN testnet answers an echo and a reply of several fragments, and the echo's round trip
//!   is at least the WAN floor of its path (client → entry → mix → exit → client at the
//!   profile's one-way delays): the delay is on the path, not beside it;
//! - no `noxh-*` namespace outlives `nox testnet down` (the fixture's drop) or a failed start.
//!
//! Needs root and `ip netns` (the CI machine has both). Run under the e2e lock
//! (`flock /tmp/nox-e2e.lock cargo test -p nox --test hosts`).

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use nox_client::{Client, ClientConfig, ShellConfig};
use nox_message::{RequestBody, Status};
use nox_testnet::wan::{Profile, Wan};

mod common;

use common::{NOX, Testnet, port_base, testnet_dir};

/// Ports of this file: links, metrics and WebSocket ports on the namespaces' own addresses;
/// the hub's directory port is the kernel's. The block stays clear of the other files' blocks.
fn base(slot: u16) -> u16 {
    port_base(5_000, 50, 40) + slot * 10
}

/// This testnet's namespaces still present.
fn namespaces_of(base: u16) -> Vec<String> {
    nox_testnet::hosts::namespaces().into_iter().filter(|n| n.starts_with(&format!("noxh-{base}-"))).collect()
}

/// The region of each layer's node (one node per layer; nodes take the regions in index order).
fn regions_by_layer(dir: &Path, layers: usize) -> Vec<usize> {
    let profile = Profile::new(Wan::ThreeRegions, 0.0);
    let mut regions = vec![usize::MAX; layers];
    for index in 0..layers {
        let node = dir.join(format!("node-{index}"));
        let layer: usize = std::fs::read_to_string(node.join("layer")).expect("layer").trim().parse().expect("a layer");
        regions[layer] = profile.region_of(index);
    }
    regions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wan_testnet_answers_no_faster_than_its_wan() {
    let base = base(0);
    let args: Vec<&str> =
        "--hosts --wan three-regions --no-chain --nodes-per-layer 1 --loop-rate 0 --drop-rate 0".split(' ').collect();
    let net = Testnet::up(testnet_dir("nox-hosts", "wan"), base, &args);
    // One namespace per node, the chain's (the directory here: --no-chain) and the clients'.
    let mut names = namespaces_of(base);
    names.sort();
    let expected = ["0", "1", "2", "chain", "client"].map(|n| format!("noxh-{base}-{n}"));
    assert_eq!(names, expected, "one namespace per node, the chain's and the clients'");
    let profile = Profile::new(Wan::ThreeRegions, 0.0);
    let path = regions_by_layer(&net.dir, 3);
    let floor = profile.round_trip_floor(&path);
    assert!(floor >= Duration::from_millis(50), "the path {path:?} crosses regions: floor {floor:?}");

    let client = Client::start(ShellConfig { topology: common::topology(&net.dir), core: ClientConfig::default() })
        .await
        .expect("client starts");
    // The first request also opens the links; the later ones are timed on open links.
    let mut fastest = Duration::MAX;
    for round in 0..4u8 {
        let started = Instant::now();
        let response = client.request(RequestBody::Echo(vec![round; 64]), 1024).await.expect("an echo");
        let rtt = started.elapsed();
        assert_eq!(response.status, Status::Ok, "{:?}", response.error_message());
        assert_eq!(response.body, vec![round; 64]);
        fastest = fastest.min(rtt);
    }
    assert!(fastest >= floor, "an echo came back in {fastest:?}, under the WAN floor {floor:?} of {path:?}");

    // A reply of several fragments (whatever the packet length: 96 KiB is more than one payload).
    let data: Vec<u8> = (0..96 * 1024u32).map(|i| (i % 251) as u8).collect();
    let response = client.request(RequestBody::Echo(data.clone()), data.len()).await.expect("a long reply");
    assert_eq!(response.status, Status::Ok, "{:?}", response.error_message());
    assert!(response.body == data, "the fragmented reply was not rebuilt exactly");
    drop(client);
    drop(net);
    assert!(namespaces_of(base).is_empty(), "namespaces left after down: {:?}", namespaces_of(base));
}

#[test]
fn no_namespace_outlives_a_failed_start() {
    let base = base(1);
    let dir = testnet_dir("nox-hosts", "failed");
    // The chain at a port nothing listens on: `up` fails after creating the namespaces.
    let dead = format!("http://127.0.0.1:{}", common::free_port());
    let out = Command::new(NOX)
        .args(["testnet", "up", "--hosts", "--nodes-per-layer", "1", "--chain-rpc", &dead, "--base-port"])
        .arg(base.to_string())
        .arg("--dir")
        .arg(&dir)
        .output()
        .expect("run nox testnet up");
    let _net = Testnet::adopt(dir.clone());
    assert!(!out.status.success(), "up against a dead chain succeeded");
    assert!(
        dir.join("hosts/plan").exists(),
        "up failed before creating the namespaces: the test proves nothing\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(namespaces_of(base).is_empty(), "namespaces left after a failed start: {:?}", namespaces_of(base));
}

#[test]
fn nodes_registered_at_their_public_address_start_and_deliver() {
    // With the chain (Anvil in the chain's namespace, reached through the relay), each node
    // is registered at its public (relay) address and binds another in its namespace: it starts
    // only because it announces the registered one (`[node] advertise`), else it refuses its
    // registry record.
    let args: Vec<&str> = "--hosts --wan loopback --nodes-per-layer 1 --loop-rate 0 --drop-rate 0".split(' ').collect();
    let net = Testnet::up(testnet_dir("nox-hosts", "chain"), base(2), &args);
    let node = std::fs::read_to_string(net.dir.join("node-0/node.toml")).expect("node.toml");
    assert!(node.contains("\nadvertise = "), "{node}");
    // The node names the chain's and the directory's host, never this machine's loopback.
    let chain = nox_testnet::hosts::HostPlan::new(base(2), 3, Wan::Loopback, 0.0).expect("plan").chain_host();
    assert!(!node.contains("http://127.0.0.1"), "{node}");
    assert!(node.contains(&format!("rpc_urls = [\"http://{}:", chain.public)), "{node}");
    assert!(node.contains(&format!("url = \"http://{}:", chain.public)), "{node}");
    let dir = net.dir.display().to_string();
    let out = common::ok(&["testnet", "traffic", "--dir", &dir, "--packets", "30"]);
    assert!(out.contains("exits delivered 30 (100.0 %)"), "{out}");
}
