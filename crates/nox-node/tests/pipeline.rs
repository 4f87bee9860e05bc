//! Three pipelines (entry, mix, exit) chained by in-memory links: packets
//! cross all three with real worker threads and tokio timers; replays,
//! tampering and wrong-layer senders are dropped and counted; a flood beyond
//! capacity is dropped at bounded queues while the node keeps serving.

use std::{
    sync::{Arc, RwLock, atomic::Ordering},
    time::{Duration, Instant},
};

use nox_mixing::MixingConfig;
use nox_node::{
    AdaptivePow, AdmissionSection, Egress, Inbound, IngestAdmission, NodeMetrics, Origin, Pipeline, PipelineConfig,
    PipelineHandles, run_adaptive_pow,
};
use nox_relay::{DropReason, Relay};
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

struct TestNode {
    id: NodeId,
    key: SecretKey,
    metrics: Arc<NodeMetrics>,
    handles: PipelineHandles,
}

fn config(queue: usize) -> PipelineConfig {
    PipelineConfig {
        workers: 2,
        inbound_queue: queue,
        worker_queue: queue,
        mixer_queue: queue,
        egress_queue: queue,
        mixing: MixingConfig::new(Duration::from_millis(1), queue),
    }
}

fn start(index: u8, geometry: Geometry, rng: &mut ChaCha20Rng, allowed: Origin, queue: usize) -> TestNode {
    let key = SecretKey::generate(rng);
    let mut relay = Relay::new(geometry);
    relay.open_epoch(1, key.clone(), BloomParameters::for_capacity(100_000, 0.001).unwrap());
    let metrics = Arc::new(NodeMetrics::default());
    let check: Arc<dyn Fn(&Origin) -> bool + Send + Sync> = Arc::new(move |origin| *origin == allowed);
    let handles = Pipeline::spawn(
        Arc::new(RwLock::new(relay)),
        None,
        check,
        Arc::new(IngestAdmission::fixed(0)),
        config(queue),
        metrics.clone(),
    )
    .unwrap();
    TestNode { id: NodeId([index; 32]), key, metrics, handles }
}

fn path(nodes: &[&TestNode]) -> Vec<PathHop> {
    nodes
        .iter()
        .map(|n| PathHop { node: n.id, public_key: n.key.public_key(), delay: Delay(0), pow_difficulty: 0 })
        .collect()
}

fn inbound(origin: Origin, packet: Vec<u8>) -> Inbound {
    Inbound { origin, received_at: Instant::now(), packet, client_ip: None }
}

async fn expect_egress(node: &mut TestNode) -> Egress {
    tokio::time::timeout(Duration::from_secs(5), node.handles.egress.recv()).await.expect("in time").expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_cross_three_pipelines_and_bad_ones_are_counted() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut entry = start(1, geometry, &mut rng, Origin::Client, 64);
    let mut mix = start(2, geometry, &mut rng, Origin::Node(NodeId([1; 32])), 64);
    let mut exit = start(3, geometry, &mut rng, Origin::Node(NodeId([2; 32])), 64);
    let hops = path(&[&entry, &mix, &exit]);

    for i in 0..20u8 {
        let packet = build_forward(&geometry, &BuildOptions::new(1), &hops, &[i; 100], &mut rng).unwrap();
        entry.handles.inbound.send(inbound(Origin::Client, packet)).await.unwrap();
        let Egress::Forward { to, packet, .. } = expect_egress(&mut entry).await else { panic!("entry must forward") };
        assert_eq!(to, mix.id);
        mix.handles.inbound.send(inbound(Origin::Node(entry.id), packet)).await.unwrap();
        let Egress::Forward { to, packet, .. } = expect_egress(&mut mix).await else { panic!("mix must forward") };
        assert_eq!(to, exit.id);
        exit.handles.inbound.send(inbound(Origin::Node(mix.id), packet)).await.unwrap();
        let Egress::Deliver { packet, payload, .. } = expect_egress(&mut exit).await else {
            panic!("exit must deliver")
        };
        assert_eq!(&packet[payload], &[i; 100][..]);
    }

    // Replay, tamper, wrong layer, truncated.
    let packet = build_forward(&geometry, &BuildOptions::new(1), &hops, b"once", &mut rng).unwrap();
    entry.handles.inbound.send(inbound(Origin::Client, packet.clone())).await.unwrap();
    let _ = expect_egress(&mut entry).await;
    entry.handles.inbound.send(inbound(Origin::Client, packet.clone())).await.unwrap();
    let mut tampered = packet.clone();
    tampered[50] ^= 1;
    entry.handles.inbound.send(inbound(Origin::Client, tampered)).await.unwrap();
    entry.handles.inbound.send(inbound(Origin::Node(NodeId([9; 32])), packet.clone())).await.unwrap();
    entry.handles.inbound.send(inbound(Origin::Client, packet[..100].to_vec())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(entry.metrics.drops(DropReason::Replay), 1);
    // The tampered header changes the replay tag, so it reaches the MAC check.
    assert_eq!(entry.metrics.drops(DropReason::MacMismatch), 1);
    assert_eq!(entry.metrics.wrong_layer.load(Ordering::Relaxed), 1);
    assert_eq!(entry.metrics.drops(DropReason::WrongLength), 1);
    let text = entry.metrics.render();
    assert!(text.contains("nox_packets_dropped_total{reason=\"replay\"} 1"), "{text}");
    assert!(text.contains("nox_mixing_delay_seconds_count 21"), "{text}");

    // Graceful shutdown: dropping the inbound end finishes every stage.
    for node in [entry, mix, exit] {
        drop(node.handles.inbound);
        tokio::time::timeout(Duration::from_secs(5), node.handles.finished).await.expect("finishes").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_dropped_at_bounded_queues_and_the_node_keeps_serving() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut entry = start(1, geometry, &mut rng, Origin::Client, 8);
    let next = start(2, geometry, &mut rng, Origin::Client, 8);
    let last = start(3, geometry, &mut rng, Origin::Client, 8);
    let hops = path(&[&entry, &next, &last]);
    let packets: Vec<Vec<u8>> =
        (0..400).map(|_| build_forward(&geometry, &BuildOptions::new(1), &hops, b"flood", &mut rng).unwrap()).collect();
    let mut refused_at_link = 0;
    for packet in packets {
        if entry.handles.inbound.try_send(inbound(Origin::Client, packet)).is_err() {
            refused_at_link += 1;
        }
    }
    // Nobody drains egress for a while: queues fill and drops are counted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let m = &entry.metrics;
    let accounted = m.released.load(Ordering::Relaxed) + m.drops(DropReason::QueueFull) + refused_at_link;
    assert!(m.drops(DropReason::QueueFull) + refused_at_link > 0, "a flood must be refused somewhere");
    assert!(m.mixer_held.load(Ordering::Relaxed) <= 8);
    assert!(accounted + m.mixer_held.load(Ordering::Relaxed) >= 400 - 8 * 3, "packets unaccounted for");
    // Drain what was released, then a fresh packet still goes through.
    while entry.handles.egress.try_recv().is_ok() {}
    let packet = build_forward(&geometry, &BuildOptions::new(1), &hops, b"after", &mut rng).unwrap();
    entry.handles.inbound.send(inbound(Origin::Client, packet)).await.unwrap();
    let Egress::Forward { to, .. } = expect_egress(&mut entry).await else { panic!("must forward") };
    assert_eq!(to, next.id);
}

fn start_with(
    index: u8,
    geometry: Geometry,
    rng: &mut ChaCha20Rng,
    admission: Arc<IngestAdmission>,
    queue: usize,
) -> TestNode {
    let key = SecretKey::generate(rng);
    let mut relay = Relay::new(geometry);
    relay.open_epoch(1, key.clone(), BloomParameters::for_capacity(100_000, 0.001).unwrap());
    let metrics = Arc::new(NodeMetrics::default());
    let anyone: Arc<dyn Fn(&Origin) -> bool + Send + Sync> = Arc::new(|_| true);
    let handles =
        Pipeline::spawn(Arc::new(RwLock::new(relay)), None, anyone, admission, config(queue), metrics.clone()).unwrap();
    TestNode { id: NodeId([index; 32]), key, metrics, handles }
}

fn from_client(ip: [u8; 4], packet: Vec<u8>) -> Inbound {
    Inbound { origin: Origin::Client, received_at: Instant::now(), packet, client_ip: Some(ip.into()) }
}

async fn eventually(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_beyond_its_tier_is_rate_limited_and_a_node_at_the_same_rate_is_not() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let section = AdmissionSection {
        node_rate_pps: 50_000.0,
        client_rate_pps: 100.0,
        penalized_rate_pps: 25.0,
        ..AdmissionSection::default()
    };
    let peer = NodeId([2; 32]);
    let admission = Arc::new(IngestAdmission::new(&section, 0, [peer]).unwrap());
    let node = start_with(1, geometry, &mut rng, admission, 1024);
    // 400 frames from one client address, then 400 from a topology node, as
    // fast as they can be queued (well beyond 100 packets/s). Wrong-length
    // frames: whatever passes the rate limit is dropped by the next check.
    for _ in 0..400 {
        node.handles.inbound.send(from_client([192, 0, 2, 1], vec![0; 100])).await.unwrap();
    }
    for _ in 0..400 {
        node.handles.inbound.send(inbound(Origin::Node(peer), vec![0; 100])).await.unwrap();
    }
    // Another client address has its own bucket.
    node.handles.inbound.send(from_client([192, 0, 2, 2], vec![0; 100])).await.unwrap();
    let m = node.metrics.clone();
    eventually("all frames", Duration::from_secs(5), || m.received.load(Ordering::Relaxed) == 801).await;
    let limited = m.drops(DropReason::RateLimited);
    let passed = m.drops(DropReason::WrongLength);
    assert_eq!(limited + passed, 801);
    // The client's 1 s burst (100) plus a refill of a few packets got through;
    // every node frame and the other client's frame did.
    assert!((280..=300).contains(&limited), "rate-limited client frames: {limited}");
    assert!(passed >= 401 + 100, "node frames must not be limited: {passed} passed");
    let text = m.render();
    assert!(text.contains(&format!("nox_packets_dropped_total{{reason=\"rate_limited\"}} {limited}")), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_difficulty_rises_under_a_flood_refuses_cheap_packets_after_grace_and_falls_back() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let section = AdmissionSection {
        client_rate_pps: 1e9, // this test is about PoW, not rate tiers
        expected_client_rate: 200.0,
        ..AdmissionSection::default()
    };
    let admission = Arc::new(IngestAdmission::new(&section, 0, []).unwrap());
    let mut schedule = section.difficulty_schedule(0);
    schedule.bucket_width = Duration::from_millis(50);
    schedule.raise_window = Duration::from_millis(200);
    schedule.lower_window = Duration::from_millis(300);
    schedule.hold_before_lowering = Duration::from_secs(1);
    schedule.grace_after_raise = Duration::from_millis(800);
    let mut entry = start_with(1, geometry, &mut rng, admission.clone(), 4096);
    let (next, last) =
        (start(2, geometry, &mut rng, Origin::Client, 8), start(3, geometry, &mut rng, Origin::Client, 8));
    let announced = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let pow = AdaptivePow::new(schedule, Instant::now()).unwrap();
    let log = announced.clone();
    let announce = move |bits| log.lock().unwrap().push(bits);
    tokio::spawn(run_adaptive_pow(
        pow,
        admission.clone(),
        entry.metrics.clone(),
        Duration::from_millis(20),
        announce,
        shutdown,
    ));
    let build = |bits: u8, rng: &mut ChaCha20Rng| {
        let mut hops = path(&[&entry, &next, &last]);
        hops[0].pow_difficulty = bits;
        build_forward(&geometry, &BuildOptions::new(1), &hops, b"pow", rng).unwrap()
    };
    let (cheap_1, cheap_2, cheap_3, paid) =
        (build(0, &mut rng), build(0, &mut rng), build(0, &mut rng), build(12, &mut rng));

    // A flood of ~10,000 client frames/s (50× the expected rate) from many addresses.
    for round in 0..10u8 {
        for i in 0..200u8 {
            entry.handles.inbound.send(from_client([10, round, i, 1], vec![0; 100])).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eventually("raise to 12 bits", Duration::from_secs(3), || admission.client_difficulty() == 12).await;
    let raised_at = Instant::now();
    assert_eq!(entry.metrics.pow_difficulty.load(Ordering::Relaxed), 12);
    assert!(announced.lock().unwrap().contains(&12), "the raise is announced");
    // Within the grace period a packet at the old difficulty still passes.
    entry.handles.inbound.send(inbound(Origin::Client, cheap_1)).await.unwrap();
    let Egress::Forward { to, .. } = expect_egress(&mut entry).await else { panic!("must forward") };
    assert_eq!(to, next.id);
    assert!(raised_at.elapsed() < Duration::from_millis(800), "too slow to test the grace period");
    // After it, a packet below the new difficulty is refused and counted;
    // one that paid for it passes.
    tokio::time::sleep_until((raised_at + Duration::from_millis(900)).into()).await;
    eventually("grace over", Duration::from_secs(1), || admission.client_accepted() > 0).await;
    entry.handles.inbound.send(inbound(Origin::Client, cheap_2)).await.unwrap();
    entry.handles.inbound.send(inbound(Origin::Client, paid)).await.unwrap();
    let Egress::Forward { .. } = expect_egress(&mut entry).await else { panic!("must forward") };
    assert_eq!(entry.metrics.drops(DropReason::InsufficientWork), 1);
    // Node packets keep the advertised difficulty (0) throughout.
    assert_eq!(admission.check(&Origin::Node(next.id), None, Instant::now()), Ok(0));
    // The load stopped: one step down per hold period, back to the base.
    eventually("fall back to 0", Duration::from_secs(10), || admission.client_difficulty() == 0).await;
    eventually("accepted back to 0", Duration::from_secs(1), || admission.client_accepted() == 0).await;
    assert_eq!(announced.lock().unwrap().last(), Some(&0), "the fall is announced: {:?}", announced.lock().unwrap());
    entry.handles.inbound.send(inbound(Origin::Client, cheap_3)).await.unwrap();
    let Egress::Forward { .. } = expect_egress(&mut entry).await else { panic!("must forward") };
}
