//! A testnet with 6-second key epochs runs past two epoch boundaries: the nodes create keys for
//! epochs that did not exist at start, publish them through the `nox directory` process, and
//! both a client (which refreshes its topology from the directory) and the nodes (whose loop
//! cover traffic needs the other nodes' new keys) pick them up. Traffic is delivered throughout.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nox_testnet::{NodeEntry, TestnetClient, metric, nodes, scrape};

mod common;

use common::{Testnet, port_base, testnet_dir, wait_until_async};

const EPOCH_SECS: u64 = 6;

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn sum(nodes: &[NodeEntry], series: &str) -> u64 {
    nodes.iter().map(|n| metric(&scrape(n.metrics).unwrap_or_default(), series)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_is_delivered_past_two_epoch_boundaries_with_keys_published_through_the_directory() {
    let epoch = EPOCH_SECS.to_string();
    let args = [
        ["--nodes-per-layer", "1", "--mean-delay-ms", "1"].as_slice(),
        &["--loop-rate", "4", "--drop-rate", "0", "--loop-timeout-s", "3"],
        &["--epoch-secs", epoch.as_str(), "--overlap-secs", "2"],
    ]
    .concat();
    let net = Testnet::up_showing_output(testnet_dir("nox-it", "directory"), port_base(20_000, 200, 20), &args);
    assert!(nox_testnet::directory::addr(&net.dir).is_some(), "no directory address");

    let mut client = TestnetClient::connect(&net.dir).unwrap();
    let schedule = *client.topology.schedule();
    let start = schedule.epoch_at(now_unix());
    let all = nodes(&net.dir);
    let exits: Vec<NodeEntry> = nodes(&net.dir).into_iter().filter(|n| n.layer == 2).collect();
    let delivered_before = sum(&exits, "nox_packets_delivered_total");

    // Send a packet every 250 ms, refreshing the topology before each, until three packets
    // have been built for the keys of epoch `start + 2` (created after the testnet started).
    let deadline = Instant::now() + Duration::from_secs(3 * EPOCH_SECS + 6);
    let (mut sent, mut in_target) = (0u64, 0u32);
    let mut loops_at_target = None;
    while in_target < 3 {
        assert!(Instant::now() < deadline, "epoch {} not reached (at {sent} packets)", start + 2);
        client.refresh(&net.dir).await.unwrap();
        let epoch = client.topology.client_epoch(now_unix());
        let mut payload = [0u8; 64];
        payload[..8].copy_from_slice(&sent.to_be_bytes());
        let (entry, packet) = client.build(&payload).unwrap_or_else(|e| panic!("epoch {epoch}: {e}"));
        client.send(&entry, packet).await.unwrap();
        sent += 1;
        if epoch >= start + 2 {
            in_target += 1;
            loops_at_target.get_or_insert_with(|| sum(&all, "nox_cover_loops_returned_total"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Every packet arrives.
    let mut delivered = 0;
    wait_until_async(Duration::from_secs(10), Duration::from_millis(50), || {
        delivered = sum(&exits, "nox_packets_delivered_total") - delivered_before;
        delivered >= sent
    })
    .await;
    assert_eq!(delivered, sent, "packets lost across epoch boundaries");

    // The served document lists every node's key for the new epoch...
    let topology = nox_testnet::directory::topology(&net.dir).unwrap();
    for node in topology.nodes() {
        assert!(node.descriptor.sphinx_key(start + 2).is_some(), "no key for epoch {} published", start + 2);
    }
    // ...and the nodes use the others' new keys: their loops keep coming back.
    let loops_then = loops_at_target.unwrap();
    wait_until_async(Duration::from_secs(5), Duration::from_millis(100), || {
        sum(&all, "nox_cover_loops_returned_total") >= loops_then + 3
    })
    .await;
    assert!(sum(&all, "nox_cover_loops_returned_total") >= loops_then + 3, "node loops stopped in the new epoch");

    // The directory counted the uploads it accepted.
    let addr = nox_testnet::directory::addr(&net.dir).unwrap();
    let (_, text) = nox_directory::get_blocking(addr, "/metrics", Duration::from_secs(2)).unwrap();
    let accepted = metric(&String::from_utf8_lossy(&text), "nox_directory_requests_total{outcome=\"accepted\"}");
    assert!(accepted >= 3, "only {accepted} uploads accepted");
}
