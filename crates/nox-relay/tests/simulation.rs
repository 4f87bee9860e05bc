//! A whole mixnet in virtual time: 3 layers × 3 nodes, each a `Relay` (ingest,
//! Sphinx, replay) plus a `MixingScheduler`, driven by a discrete-event loop.
//! Deterministic: fixed seeds, no clock, no threads.
//!
//! Checks: every packet is delivered intact; per-hop delays (arrival to
//! release, processing included) follow Exp(μ) by a KS test; replayed and
//! tampered packets are dropped with the right reason; keys rotate mid-run
//! without losing packets built for the previous epoch inside the overlap,
//! and a packet for a retired epoch is refused.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap},
    time::{Duration, Instant},
};

use nox_mixing::{MixingConfig, MixingScheduler};
use nox_relay::{DropReason, Relay, RelayOutput};
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const LAYERS: usize = 3;
const PER_LAYER: usize = 3;
const MEAN_DELAY: Duration = Duration::from_millis(10);
const PROCESSING: Duration = Duration::from_micros(60);
const OVERLAP: Duration = Duration::from_millis(300);

struct Held {
    packet: Vec<u8>,
    arrived: Instant,
    output: RelayOutput,
}

struct SimNode {
    id: NodeId,
    relay: Relay,
    mixer: MixingScheduler<Held>,
    public_keys: BTreeMap<u32, nox_sphinx::PublicKey>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    Arrive { node: usize, seq: u64 },
    Wake { node: usize },
}

struct Sim {
    geometry: Geometry,
    nodes: Vec<SimNode>,
    events: BinaryHeap<Reverse<(Instant, u64, EventKind)>>,
    in_flight: BTreeMap<u64, Vec<u8>>,
    seq: u64,
    base: Instant,
    rng: ChaCha20Rng,
    delivered: Vec<(Instant, Vec<u8>)>,
    drops: BTreeMap<DropReason, u64>,
    hop_delays: Vec<f64>,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let geometry = Geometry::new(4096, 3).expect("geometry");
        let bloom = BloomParameters::for_capacity(100_000, 0.001).expect("bloom");
        let nodes = (0..LAYERS * PER_LAYER)
            .map(|i| {
                let mut relay = Relay::new(geometry);
                let mut public_keys = BTreeMap::new();
                for epoch in [1u32, 2] {
                    let key = SecretKey::generate(&mut rng);
                    public_keys.insert(epoch, key.public_key());
                    relay.open_epoch(epoch, key, bloom);
                }
                let mixer = MixingScheduler::new(MixingConfig::new(MEAN_DELAY, 100_000));
                SimNode { id: NodeId([i as u8; 32]), relay, mixer, public_keys }
            })
            .collect();
        let base = Instant::now();
        Self {
            geometry,
            nodes,
            events: BinaryHeap::new(),
            in_flight: BTreeMap::new(),
            seq: 0,
            base,
            rng,
            delivered: Vec::new(),
            drops: BTreeMap::new(),
            hop_delays: Vec::new(),
        }
    }

    fn random_path(&mut self, epoch: u32) -> (usize, Vec<PathHop>) {
        let mut first = 0;
        let path = (0..LAYERS)
            .map(|layer| {
                let index = layer * PER_LAYER + (self.rng.next_u32() as usize % PER_LAYER);
                if layer == 0 {
                    first = index;
                }
                let node = &self.nodes[index];
                PathHop {
                    node: node.id,
                    public_key: node.public_keys[&epoch].clone(),
                    delay: Delay(0),
                    pow_difficulty: 0,
                }
            })
            .collect();
        (first, path)
    }

    fn build(&mut self, epoch: u32, payload: &[u8]) -> (usize, Vec<u8>) {
        let (first, path) = self.random_path(epoch);
        let packet =
            build_forward(&self.geometry, &BuildOptions::new(epoch), &path, payload, &mut self.rng).expect("build");
        (first, packet)
    }

    fn inject(&mut self, at: Instant, node: usize, packet: Vec<u8>) {
        self.seq += 1;
        self.in_flight.insert(self.seq, packet);
        self.events.push(Reverse((at, self.seq, EventKind::Arrive { node, seq: self.seq })));
    }

    fn count(&mut self, reason: DropReason) {
        *self.drops.entry(reason).or_default() += 1;
    }

    /// Runs events up to `until` (inclusive).
    fn run_until(&mut self, until: Instant) {
        while let Some(Reverse((at, _, _))) = self.events.peek() {
            if *at > until {
                break;
            }
            let Some(Reverse((now, _, kind))) = self.events.pop() else { break };
            match kind {
                EventKind::Arrive { node, seq } => {
                    let Some(packet) = self.in_flight.remove(&seq) else { continue };
                    self.arrive(node, packet, now);
                }
                EventKind::Wake { node } => self.wake(node, now),
            }
        }
    }

    fn arrive(&mut self, index: usize, mut packet: Vec<u8>, now: Instant) {
        let node = &mut self.nodes[index];
        let result = node.relay.admit(&packet, 0).and_then(|admitted| {
            let verified = node.relay.verify(&admitted, &mut packet)?;
            node.relay.record(verified)?.finish()
        });
        let output = match result {
            Ok(output) => output,
            Err(reason) => return self.count(reason),
        };
        let delay = match &output {
            RelayOutput::Forward { delay, .. } | RelayOutput::Deliver { delay, .. } => *delay,
            RelayOutput::Reply { delay, .. } => *delay,
        };
        let processed_at = now + PROCESSING;
        let held = Held { packet, arrived: now, output };
        if node.mixer.insert(held, delay, now, processed_at, &mut self.rng).is_err() {
            return self.count(DropReason::QueueFull);
        }
        if let Some(deadline) = node.mixer.next_deadline() {
            self.seq += 1;
            self.events.push(Reverse((deadline, self.seq, EventKind::Wake { node: index })));
        }
    }

    fn wake(&mut self, index: usize, now: Instant) {
        let released: Vec<Held> = self.nodes[index].mixer.drain_expired(now).collect();
        for held in released {
            self.hop_delays.push(now.duration_since(held.arrived).as_secs_f64());
            match held.output {
                RelayOutput::Forward { next_hop, .. } => {
                    let next = self.nodes.iter().position(|n| n.id == next_hop).expect("known next hop");
                    self.inject(now, next, held.packet);
                }
                RelayOutput::Deliver { payload, .. } => self.delivered.push((now, held.packet[payload].to_vec())),
                RelayOutput::Reply { .. } => panic!("no SURBs in this simulation"),
            }
        }
        if let Some(deadline) = self.nodes[index].mixer.next_deadline() {
            self.seq += 1;
            self.events.push(Reverse((deadline, self.seq, EventKind::Wake { node: index })));
        }
    }
}

#[test]
fn mixnet_delivers_with_exponential_delays_and_rejects_replay_and_tamper() {
    let mut sim = Sim::new(7);
    let packets = 1500u64;
    let mut t = sim.base;
    let mut sent = Vec::new();
    let mut replay_copy = None;
    for i in 0..packets {
        // Poisson arrivals, 2 ms mean gap.
        t += nox_stats::exponential::sample(&mut sim.rng, Duration::from_millis(2));
        let payload = format!("message {i}").into_bytes();
        let (first, packet) = sim.build(1, &payload);
        if i == 10 {
            replay_copy = Some((first, packet.clone()));
        }
        sim.inject(t, first, packet);
        sent.push(payload);
    }
    sim.run_until(t + Duration::from_secs(5));
    assert_eq!(sim.delivered.len() as u64, packets, "drops: {:?}", sim.drops);
    let mut got: Vec<Vec<u8>> = sim.delivered.iter().map(|(_, p)| p.clone()).collect();
    got.sort();
    sent.sort();
    assert_eq!(got, sent);

    // Delays at every hop, arrival to release, are Exp(μ).
    let mean = MEAN_DELAY.as_secs_f64();
    let ks = nox_stats::ks::one_sample(&sim.hop_delays, |x| nox_stats::exponential::cdf(x, mean), 0.01);
    assert!(!ks.rejects(), "hop delays not Exp(μ): {ks:?}");
    // A control that must fail: the same delays against Exp(2μ).
    let wrong = nox_stats::ks::one_sample(&sim.hop_delays, |x| nox_stats::exponential::cdf(x, 2.0 * mean), 0.01);
    assert!(wrong.rejects(), "KS control did not reject: {wrong:?}");

    // A replayed packet, a header-tampered and a body-tampered one.
    let now = t + Duration::from_secs(5);
    let (first, packet) = replay_copy.expect("copy");
    sim.inject(now, first, packet);
    let (first, mut header_tampered) = sim.build(1, b"header");
    header_tampered[100] ^= 1;
    sim.inject(now, first, header_tampered);
    let (first, mut body_tampered) = sim.build(1, b"body");
    let body_at = sim.geometry.header_len() + 5;
    body_tampered[body_at] ^= 1;
    sim.inject(now, first, body_tampered);
    sim.run_until(now + Duration::from_secs(5));
    assert_eq!(sim.drops.get(&DropReason::Replay), Some(&1));
    assert_eq!(sim.drops.get(&DropReason::MacMismatch), Some(&1));
    assert_eq!(sim.drops.get(&DropReason::PayloadIntegrity), Some(&1));
    assert_eq!(sim.delivered.len() as u64, packets);
}

#[test]
fn epochs_rotate_mid_run_without_losing_packets_in_the_overlap() {
    let mut sim = Sim::new(11);
    let rotation = sim.base + Duration::from_secs(2);
    let mut t = sim.base;
    let mut sent = 0u64;
    // Clients build with epoch 1 until the rotation, then with epoch 2.
    while t < rotation + Duration::from_secs(2) {
        t += nox_stats::exponential::sample(&mut sim.rng, Duration::from_millis(4));
        let epoch = if t < rotation { 1 } else { 2 };
        let (first, packet) = sim.build(epoch, format!("epoch {epoch}").as_bytes());
        sim.inject(t, first, packet);
        sent += 1;
        if t >= rotation + OVERLAP {
            // Nodes retire epoch 1 once the overlap has passed.
            sim.run_until(t);
            for node in &mut sim.nodes {
                node.relay.retire_before(2);
            }
        }
    }
    sim.run_until(t + Duration::from_secs(5));
    assert_eq!(sim.delivered.len() as u64, sent, "drops: {:?}", sim.drops);
    assert!(sim.nodes.iter().all(|n| n.relay.epochs().eq([2])));

    // A packet still built for the retired epoch is refused at ingest.
    let (first, packet) = sim.build(1, b"late");
    let now = t + Duration::from_secs(6);
    sim.inject(now, first, packet);
    sim.run_until(now);
    assert_eq!(sim.drops.get(&DropReason::UnknownEpoch), Some(&1));
}

/// An epoch whose replay state was lost is refused by name until it retires;
/// other epochs are untouched.
#[test]
fn a_refused_epoch_drops_its_packets_until_it_retires() {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let keys: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate(&mut rng)).collect();
    let bloom = BloomParameters::for_capacity(1_000, 0.001).unwrap();
    let mut relay = Relay::new(geometry);
    relay.open_epoch(4, keys[0].clone(), bloom);
    relay.open_epoch(5, keys[0].clone(), bloom);
    relay.refuse_epoch(4);
    assert!(relay.is_refused(4) && !relay.is_refused(5));
    assert_eq!(relay.epochs().collect::<Vec<_>>(), vec![5], "the refused epoch's key is dropped");
    let hops: Vec<PathHop> = nox_test_support::sphinx::hops(&keys);
    let packet =
        |epoch, rng: &mut ChaCha20Rng| build_forward(&geometry, &BuildOptions::new(epoch), &hops, b"x", rng).unwrap();
    assert_eq!(relay.admit(&packet(4, &mut rng), 0), Err(DropReason::ReplayStateLost));
    assert!(relay.admit(&packet(5, &mut rng), 0).is_ok());
    assert_eq!(relay.admit(&packet(3, &mut rng), 0), Err(DropReason::UnknownEpoch));
    assert_eq!(DropReason::ReplayStateLost.label(), "replay_state_lost");
    assert!(DropReason::ALL.contains(&DropReason::ReplayStateLost));
    relay.retire_before(5);
    assert!(!relay.is_refused(4) && relay.refused_epochs().next().is_none());
}
