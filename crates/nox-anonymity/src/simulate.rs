//! A seeded, in-memory mixnet producing the same [`Observation`] a GPA would capture on the
//! testnet, with the [`GroundTruth`] kept apart.
//!
//! Model: `clients` senders, `layers × width` nodes, each hop a constant processing time
//! (plus optional uniform jitter) then an Exp(μ) mixing delay; nodes are infinite-server
//! (M/M/∞), as in the Poisson mixing scheduler. Real messages leave each client as a Poisson
//! process and go to the client's partner destination `client % destinations`; client drop
//! cover (λ_P) traverses the layers and is discarded at the exit; node loop cover (λ_L) goes
//! once round every layer and back to its node; node drop cover (λ_D) goes once round every
//! layer and is discarded. Links have no propagation delay beyond the
//! processing time.

use std::collections::HashMap;

use rand_core::RngCore;
use serde::Serialize;

use crate::random::{exponential_us, index, unit};
use crate::{DelayModel, Endpoint, GroundTruth, LinkEvent, MessageId, Observation, Topology};

/// Simulation parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimConfig {
    /// Number of clients.
    pub clients: u32,
    /// Number of destinations; client `c` writes to destination `c % destinations`.
    pub destinations: u32,
    /// Number of layers (path length).
    pub layers: usize,
    /// Nodes per layer.
    pub width: u16,
    /// μ, mean mixing delay per hop (µs).
    pub mean_delay_us: f64,
    /// Constant processing time per hop (µs).
    pub processing_us: f64,
    /// Extra processing time per hop, uniform on `[0, jitter)` (µs).
    pub processing_jitter_us: f64,
    /// Real messages per second per client (Poisson).
    pub message_rate_per_s: f64,
    /// Client drop-cover packets per second per client (λ_P; 0 = none).
    pub client_cover_rate_per_s: f64,
    /// Node loop-cover packets per second per node (λ_L; 0 = none).
    pub node_cover_rate_per_s: f64,
    /// Node drop-cover packets per second per node (λ_D; 0 = none): sent through the
    /// following layers and discarded by the last node.
    pub node_drop_rate_per_s: f64,
    /// Sending window (µs); packets in flight at the end still complete.
    pub duration_us: u64,
}

impl Default for SimConfig {
    /// 20 clients, 3 × 3 nodes, μ = 50 ms, 5 messages/s per client for 2 s, no cover.
    fn default() -> Self {
        Self {
            clients: 20,
            destinations: 20,
            layers: 3,
            width: 3,
            mean_delay_us: 50_000.0,
            processing_us: 0.0,
            processing_jitter_us: 0.0,
            message_rate_per_s: 5.0,
            client_cover_rate_per_s: 0.0,
            node_cover_rate_per_s: 0.0,
            node_drop_rate_per_s: 0.0,
            duration_us: 2_000_000,
        }
    }
}

impl SimConfig {
    /// The topology simulated.
    pub fn topology(&self) -> Topology {
        Topology::uniform(self.layers, self.width)
    }

    /// What a GPA knows of the per-hop delay: μ, the mean processing time, and the jitter as
    /// the density's floor (at least 1 µs, the timestamp resolution).
    pub fn adversary_model(&self) -> DelayModel {
        DelayModel {
            mean_delay_us: self.mean_delay_us,
            processing_us: self.processing_us,
            jitter_floor_us: self.processing_jitter_us.max(1.0),
        }
    }
}

/// A simulated run.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// What the GPA saw.
    pub observation: Observation,
    /// What happened.
    pub truth: GroundTruth,
    /// The topology used.
    pub topology: Topology,
}

/// One event before sorting: time (µs, f64), hop number, packet number, the link, the message.
type Pending = (f64, usize, u64, LinkEvent, Option<MessageId>);

/// Runs the simulation. Deterministic for a given `rng` state.
pub fn simulate<R: RngCore + ?Sized>(config: &SimConfig, rng: &mut R) -> Simulation {
    let topology = config.topology();
    let mut pending: Vec<Pending> = Vec::new();
    let mut truth = GroundTruth::default();
    let mut packet = 0u64;
    let mut next_message = 0u64;
    let span = config.duration_us as f64;
    let destinations = config.destinations.max(1);
    for client in 0..config.clients {
        for start in poisson_times(rng, config.message_rate_per_s, span) {
            let message = MessageId(next_message);
            next_message += 1;
            truth.message_sender.insert(message, client);
            let path = random_path(rng, &topology, 0);
            let end = Some(Endpoint::Destination(client % destinations));
            let source = Endpoint::Client(client);
            trace(config, rng, start, source, &path, end, packet, Some(message), &mut pending);
            packet += 1;
        }
        for start in poisson_times(rng, config.client_cover_rate_per_s, span) {
            let path = random_path(rng, &topology, 0);
            let source = Endpoint::Client(client);
            trace(config, rng, start, source, &path, None, packet, None, &mut pending);
            packet += 1;
        }
    }
    for (layer, nodes) in topology.layers.iter().enumerate() {
        for &node in nodes {
            for start in poisson_times(rng, config.node_cover_rate_per_s, span) {
                let path = random_path(rng, &topology, layer + 1);
                let home = Endpoint::Node(node);
                trace(config, rng, start, home, &path, Some(home), packet, None, &mut pending);
                packet += 1;
            }
            for start in poisson_times(rng, config.node_drop_rate_per_s, span) {
                let path = random_path(rng, &topology, layer + 1);
                let home = Endpoint::Node(node);
                trace(config, rng, start, home, &path, None, packet, None, &mut pending);
                packet += 1;
            }
        }
    }
    pending.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut events = Vec::with_capacity(pending.len());
    for (index, (_, _, _, event, message)) in pending.into_iter().enumerate() {
        if let (Some(message), Endpoint::Destination(_)) = (message, event.to) {
            truth.message_delivery.insert(message, index);
        }
        events.push(event);
    }
    Simulation { observation: Observation { events }, truth, topology }
}

/// Arrival instants of a Poisson process of `rate_per_s` on `[0, span_us)`.
fn poisson_times<R: RngCore + ?Sized>(rng: &mut R, rate_per_s: f64, span_us: f64) -> Vec<f64> {
    let mut times = Vec::new();
    if rate_per_s <= 0.0 {
        return times;
    }
    let mean_gap = 1e6 / rate_per_s;
    let mut t = exponential_us(rng, mean_gap);
    while t < span_us {
        times.push(t);
        t += exponential_us(rng, mean_gap);
    }
    times
}

/// One uniformly chosen node per layer, starting at layer `first` and wrapping round.
fn random_path<R: RngCore + ?Sized>(rng: &mut R, topology: &Topology, first: usize) -> Vec<u16> {
    let layers = topology.layers.len();
    (0..layers)
        .map(|k| {
            let layer = &topology.layers[(first + k) % layers];
            layer[index(rng, layer.len())]
        })
        .collect()
}

/// Records the link events of one packet from `source` through `path` to `end` (`None`: a
/// drop-cover packet discarded at the last node).
#[allow(clippy::too_many_arguments)]
fn trace<R: RngCore + ?Sized>(
    config: &SimConfig,
    rng: &mut R,
    start: f64,
    source: Endpoint,
    path: &[u16],
    end: Option<Endpoint>,
    packet: u64,
    message: Option<MessageId>,
    pending: &mut Vec<Pending>,
) {
    let mut from = source;
    let mut time = start;
    for (hop, &node) in path.iter().enumerate() {
        if hop > 0 {
            time += hop_delay(config, rng);
        }
        pending.push((time, hop, packet, event(time, from, Endpoint::Node(node)), None));
        from = Endpoint::Node(node);
    }
    if let Some(end) = end {
        time += hop_delay(config, rng);
        pending.push((time, path.len(), packet, event(time, from, end), message));
    }
}

/// Processing (+ jitter) plus an Exp(μ) mixing delay.
fn hop_delay<R: RngCore + ?Sized>(config: &SimConfig, rng: &mut R) -> f64 {
    config.processing_us + config.processing_jitter_us * unit(rng) + exponential_us(rng, config.mean_delay_us)
}

fn event(time: f64, from: Endpoint, to: Endpoint) -> LinkEvent {
    LinkEvent { time_us: time as u64, from, to }
}

/// Per-client partner destination (`client % destinations`), for scoring linkage.
pub fn partners(config: &SimConfig) -> HashMap<u32, u32> {
    (0..config.clients).map(|c| (c, c % config.destinations.max(1))).collect()
}
