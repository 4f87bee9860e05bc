//! Replay tags are durable before their packet leaves: a pipeline over
//! in-memory storage that keeps only synced bytes on a simulated power loss.
//!
//! - `every_emitted_packet_survives_a_power_loss` checks, the moment each
//!   packet reaches egress, that its tag is already in the bytes that would
//!   survive a power loss; then crashes, reloads and replays everything: no
//!   replay is accepted. Sync is made slow (20 ms ≫ μ = 1 ms), so without
//!   the egress gate the packets would leave before their tags are durable
//!   and this test fails.
//! - `a_packet_refused_after_its_mac_check_is_journalled_and_its_copies_are_replays`:
//!   a body-tampered packet whose MAC verifies is dropped at the exit, but
//!   its tag is recorded and made durable all the same, so copies — also
//!   after a restart — are refused at ingest as replays, not re-processed.
//! - `a_failed_sync_stops_emission` and `a_lost_epoch_is_refused_while_others_work`
//!   cover the fail-closed paths.

use std::{
    collections::HashSet,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use nox_mixing::MixingConfig;
use nox_node::{
    Egress, GroupCommitConfig, Inbound, IngestAdmission, MemStorage, NodeMetrics, Origin, Pipeline, PipelineConfig,
    PipelineHandles, ReplayStore, SyncThread, TagJournal,
};
use nox_relay::{DropReason, Relay};
use nox_replay::{BloomParameters, ParsedJournal};
use nox_sphinx::{BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const EPOCH: u32 = 1;

fn bloom() -> BloomParameters {
    BloomParameters::for_capacity(100_000, 0.001).unwrap()
}

fn pipeline_config() -> PipelineConfig {
    PipelineConfig {
        workers: 2,
        inbound_queue: 256,
        worker_queue: 256,
        mixer_queue: 256,
        egress_queue: 256,
        mixing: MixingConfig::new(Duration::from_millis(1), 1024),
    }
}

struct Node {
    handles: PipelineHandles,
    metrics: Arc<NodeMetrics>,
    sync: SyncThread,
}

/// A node over `storage` holding `key` for the given epochs; epochs whose
/// replay state does not load are refused, as the runtime does.
fn start(storage: &MemStorage, key: &SecretKey, epochs: &[u32]) -> Node {
    let store = Arc::new(ReplayStore::with_storage(Box::new(storage.clone())));
    let metrics = Arc::new(NodeMetrics::default());
    let mut relay = Relay::new(Geometry::new(4096, 3).unwrap());
    for &epoch in epochs {
        match store.load(epoch, bloom()) {
            Ok((cache, _)) => relay.open_epoch_with(epoch, key.clone(), cache),
            Err(_) => relay.refuse_epoch(epoch),
        }
    }
    let (journal, sync) = TagJournal::spawn(store, GroupCommitConfig::default(), metrics.clone()).unwrap();
    let handles = Pipeline::spawn(
        Arc::new(RwLock::new(relay)),
        Some(journal),
        Arc::new(|_: &Origin| true),
        Arc::new(IngestAdmission::fixed(0)),
        pipeline_config(),
        metrics.clone(),
    )
    .unwrap();
    Node { handles, metrics, sync }
}

fn packets(key: &SecretKey, epoch: u32, count: usize, rng: &mut ChaCha20Rng) -> Vec<Vec<u8>> {
    let geometry = Geometry::new(4096, 3).unwrap();
    let others = [SecretKey::generate(rng), SecretKey::generate(rng)];
    let hops: Vec<PathHop> = [key, &others[0], &others[1]]
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId([i as u8 + 1; 32]),
            public_key: k.public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        })
        .collect();
    (0..count)
        .map(|i| build_forward(&geometry, &BuildOptions::new(epoch), &hops, &(i as u32).to_le_bytes(), rng).unwrap())
        .collect()
}

fn tag_of(packet: &[u8]) -> [u8; 32] {
    let geometry = Geometry::new(4096, 3).unwrap();
    HeaderView::parse(&geometry, packet).unwrap().replay_tag().0
}

fn inbound(packet: Vec<u8>) -> Inbound {
    Inbound { origin: Origin::Client, received_at: Instant::now(), packet, client_ip: None }
}

fn durable_tags(storage: &MemStorage, epoch: u32) -> HashSet<[u8; 32]> {
    let bytes = storage.durable_contents(&ReplayStore::journal_name(epoch)).unwrap_or_default();
    ParsedJournal::parse(&bytes).map(|parsed| parsed.tags().collect()).unwrap_or_default()
}

async fn next_egress(node: &mut Node, within: Duration) -> Option<Egress> {
    tokio::time::timeout(within, node.handles.egress.recv()).await.ok().flatten()
}

async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_emitted_packet_survives_a_power_loss() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let key = SecretKey::generate(&mut rng);
    let storage = MemStorage::new();
    let mut node = start(&storage, &key, &[EPOCH]);
    // A slow disk: each sync takes 20 times the mean mixing delay.
    storage.set_sync_delay(Duration::from_millis(20));
    let sent = packets(&key, EPOCH, 40, &mut rng);

    // One at a time: each packet's tag must be durable when it reaches egress.
    for packet in &sent[..10] {
        let tag = tag_of(packet);
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
        let out = next_egress(&mut node, Duration::from_secs(5)).await.expect("forwarded");
        assert!(matches!(out, Egress::Forward { .. }));
        assert!(durable_tags(&storage, EPOCH).contains(&tag), "a packet left before its replay tag was durable");
    }
    // A burst (group commit): every emitted packet's tag is durable at emission.
    for packet in &sent[10..30] {
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    }
    for _ in 10..30 {
        let durable_before = durable_tags(&storage, EPOCH).len();
        let _ = next_egress(&mut node, Duration::from_secs(5)).await.expect("forwarded");
        let durable = durable_tags(&storage, EPOCH);
        assert!(durable.len() >= durable_before);
        let emitted_so_far = node.metrics.released.load(std::sync::atomic::Ordering::SeqCst) as usize;
        assert!(durable.len() >= emitted_so_far, "{emitted_so_far} emitted, {} durable", durable.len());
    }
    assert!(sent[..30].iter().all(|p| durable_tags(&storage, EPOCH).contains(&tag_of(p))));
    let text = node.metrics.render();
    assert!(text.contains("nox_replay_gate_waits_total"), "{text}");
    assert!(node.metrics.replay_gate_waits.load(std::sync::atomic::Ordering::SeqCst) > 0, "{text}");

    // Ten more go in, then the power fails before their (slow) sync can finish.
    storage.set_sync_delay(Duration::from_secs(2));
    for packet in &sent[30..] {
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        next_egress(&mut node, Duration::from_millis(10)).await.is_none(),
        "nothing leaves while its sync is pending"
    );
    // Power loss: the restarted machine sees only what was synced; the
    // crashed process's threads never touch that disk again.
    let frozen = storage.fork_durable();
    let Node { handles, sync, .. } = node;
    drop(handles);
    std::mem::forget(sync);

    // Restart on what the disk kept and replay everything that was emitted.
    let mut node = start(&frozen, &key, &[EPOCH]);
    for packet in &sent[..30] {
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    }
    let metrics = node.metrics.clone();
    wait_for("30 replays refused", || metrics.drops(DropReason::Replay) == 30).await;
    assert!(next_egress(&mut node, Duration::from_millis(50)).await.is_none(), "a replay was accepted");
    // The ten that never left may be sent once now (they were never emitted).
    for packet in &sent[30..] {
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    }
    for _ in 30..40 {
        assert!(next_egress(&mut node, Duration::from_secs(5)).await.is_some());
    }
    drop(node.handles.inbound);
    node.sync.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_refused_after_its_mac_check_is_journalled_and_its_copies_are_replays() {
    use std::sync::atomic::Ordering::SeqCst;
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let key = SecretKey::generate(&mut rng);
    let storage = MemStorage::new();
    let mut node = start(&storage, &key, &[EPOCH]);
    // This node is the exit; an earlier hop flipped a body bit, which the
    // header MAC does not cover.
    let exit = PathHop { node: NodeId([1; 32]), public_key: key.public_key(), delay: Delay(0), pow_difficulty: 0 };
    let mut packet = build_forward(&geometry, &BuildOptions::new(EPOCH), &[exit], b"pay", &mut rng).unwrap();
    packet[geometry.header_len() + 10] ^= 0x01;
    let tag = tag_of(&packet);

    node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    let metrics = node.metrics.clone();
    wait_for("the exit to refuse the payload", || metrics.drops(DropReason::PayloadIntegrity) == 1).await;
    // Refused, yet its tag is recorded and journalled.
    wait_for("the refused packet's tag to be durable", || durable_tags(&storage, EPOCH).contains(&tag)).await;

    // The previous hop replays it (once with another PoW nonce): refused at
    // ingest, never processed again.
    let mut renonced = packet.clone();
    renonced[geometry.nonce_range()].copy_from_slice(&[0x5A; 8]);
    for copy in [packet.clone(), packet.clone(), renonced] {
        node.handles.inbound.send(inbound(copy)).await.unwrap();
    }
    wait_for("3 replays refused", || metrics.drops(DropReason::Replay) == 3).await;
    assert_eq!(metrics.drops(DropReason::PayloadIntegrity), 1, "a copy was processed again");
    assert_eq!(metrics.admitted.load(SeqCst), 1, "a copy passed admission");
    assert!(next_egress(&mut node, Duration::from_millis(20)).await.is_none(), "nothing reaches egress");

    // Power loss and restart: the journalled tag still refuses the copy.
    let frozen = storage.fork_durable();
    let Node { handles, sync, .. } = node;
    drop(handles);
    std::mem::forget(sync);
    let mut node = start(&frozen, &key, &[EPOCH]);
    node.handles.inbound.send(inbound(packet)).await.unwrap();
    let metrics = node.metrics.clone();
    wait_for("the replay refused after restart", || metrics.drops(DropReason::Replay) == 1).await;
    assert_eq!(metrics.admitted.load(SeqCst), 0);
    assert!(next_egress(&mut node, Duration::from_millis(20)).await.is_none());
    drop(node.handles.inbound);
    node.sync.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_stops_emission() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let key = SecretKey::generate(&mut rng);
    let storage = MemStorage::new();
    let mut node = start(&storage, &key, &[EPOCH]);
    let sent = packets(&key, EPOCH, 4, &mut rng);
    node.handles.inbound.send(inbound(sent[0].clone())).await.unwrap();
    assert!(next_egress(&mut node, Duration::from_secs(5)).await.is_some());

    storage.fail_syncs(true);
    node.handles.inbound.send(inbound(sent[1].clone())).await.unwrap();
    let metrics = node.metrics.clone();
    wait_for("the journal to fail", || metrics.replay_journal_failed.load(std::sync::atomic::Ordering::SeqCst) == 1)
        .await;
    // Even once the disk "recovers", nothing leaves: a later successful fsync
    // proves nothing about pages dropped after the failed one.
    storage.fail_syncs(false);
    for packet in &sent[2..] {
        node.handles.inbound.send(inbound(packet.clone())).await.unwrap();
    }
    wait_for("three journal drops", || metrics.drops(DropReason::JournalError) == 3).await;
    assert!(next_egress(&mut node, Duration::from_millis(100)).await.is_none(), "emitted without a durable tag");
    let text = metrics.render();
    assert!(text.contains("nox_replay_journal_failed 1"), "{text}");
    assert!(text.contains("nox_packets_dropped_total{reason=\"journal_error\"} 3"), "{text}");
    drop(node.handles.inbound);
    node.sync.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_epoch_is_refused_while_others_work() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let key = SecretKey::generate(&mut rng);
    let storage = MemStorage::new();
    let mut node = start(&storage, &key, &[1, 2]);
    // Three batches in epoch 1's journal (one packet, one sync each).
    for packet in packets(&key, 1, 3, &mut rng) {
        node.handles.inbound.send(inbound(packet)).await.unwrap();
        assert!(next_egress(&mut node, Duration::from_secs(5)).await.is_some());
    }
    drop(node.handles.inbound);
    node.sync.finish();
    // Damage inside the first, committed batch: its tags are known lost.
    storage.corrupt(&ReplayStore::journal_name(1), |bytes| bytes[nox_replay::journal::HEADER_LEN + 1] ^= 0x10);

    let mut node = start(&storage, &key, &[1, 2]);
    for packet in packets(&key, 1, 2, &mut rng) {
        node.handles.inbound.send(inbound(packet)).await.unwrap();
    }
    let metrics = node.metrics.clone();
    wait_for("epoch 1 refused", || metrics.drops(DropReason::ReplayStateLost) == 2).await;
    assert!(metrics.render().contains("nox_packets_dropped_total{reason=\"replay_state_lost\"} 2"));
    for packet in packets(&key, 2, 2, &mut rng) {
        node.handles.inbound.send(inbound(packet)).await.unwrap();
        assert!(next_egress(&mut node, Duration::from_secs(5)).await.is_some(), "epoch 2 still works");
    }
    drop(node.handles.inbound);
    node.sync.finish();
}
