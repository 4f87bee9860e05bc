//! The full link-level simulation of substitution cover: every client send, every hop, the
//! SURB replies and the nodes' own cover, as a GPA sees them (see the [parent module](super)).

use serde::Serialize;

use rand_core::RngCore;

use crate::random::{exponential_us, index, unit};
use crate::simulate::Simulation;
use crate::{Endpoint, GroundTruth, LinkEvent, MessageId, Observation, Topology};

/// The full link-level simulation of substitution cover (the testnet's `nox bench cover` set-up).
///
/// Besides the clients' requests and drop cover, the real network carries traffic that mixes
/// with them (issue 32's calibration found the simulator pessimistic without it): the share
/// `loop_fraction` of cover slots that are client loops (an echo request to the client itself,
/// answered by the exit on SURBs), the SURB replies to every request and loop
/// (`reply_packets` each, on return paths `[layer 0, layer 1, …, the client's gateway]`), and the
/// nodes' own loop and drop cover (λ_L, λ_D per node, forwarded with no mixing delay, as
/// `nox node`'s cover packets carry `Delay(0)`). `nox-bench` fills these from the shipped
/// `ClientConfig`, `nox_message::surbs_needed` and the node's `[cover]` defaults; the
/// `Default` here has them off (the bare model).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SubstitutionConfig {
    /// Clients.
    pub clients: u32,
    /// Of which this many make requests (the others only send cover).
    pub active: u32,
    /// Requests per second of an active client (Poisson).
    pub request_rate_per_s: f64,
    /// λ_P (0 = no cover: requests leave when made).
    pub cover_rate_per_s: f64,
    /// Layers.
    pub layers: usize,
    /// Nodes per layer.
    pub width: u16,
    /// μ per hop (µs).
    pub mean_delay_us: f64,
    /// Constant processing time per hop (µs).
    pub processing_us: f64,
    /// Sending window (µs).
    pub duration_us: u64,
    /// Share of cover slots that carry a loop (an echo to the client itself, answered on
    /// SURBs) instead of a drop; 0 = every cover packet is a drop.
    pub loop_fraction: f64,
    /// SURB reply packets the exit sends for each request and each loop (0 = replies not
    /// simulated). Each goes back through every layer, the last hop being the client's
    /// gateway (one node of the last layer per client, as the client keeps one).
    pub reply_packets: u32,
    /// Whether the observation holds the exit's emission of a reply to its first hop. A GPA
    /// sees it; the testnet's `[observe]` capture does not (the exit hands SURB replies to the
    /// link directly, outside the logged egress path), so a calibration against the capture
    /// sets this `false`.
    pub reply_first_hop_observed: bool,
    /// Node loop cover per node (λ_L, packets/s): once round every layer and home again.
    pub node_loop_rate_per_s: f64,
    /// Node drop cover per node (λ_D, packets/s): through the following layers, discarded.
    pub node_drop_rate_per_s: f64,
}

impl Default for SubstitutionConfig {
    /// The shipped point of `docs/benchmarks/cover.md`: 10 clients, 5 active at 0.25
    /// requests/s, λ_P = 2/s, 3 × 3 nodes, μ = 50 ms, 0.3 ms processing, 40 s; no loops, no
    /// replies and no node cover (set them from the shipped crates, as `nox-bench` does).
    fn default() -> Self {
        Self {
            clients: 10,
            active: 5,
            request_rate_per_s: 0.25,
            cover_rate_per_s: 2.0,
            layers: 3,
            width: 3,
            mean_delay_us: 50_000.0,
            processing_us: 300.0,
            duration_us: 40_000_000,
            loop_fraction: 0.0,
            reply_packets: 0,
            reply_first_hop_observed: false,
            node_loop_rate_per_s: 0.0,
            node_drop_rate_per_s: 0.0,
        }
    }
}

/// One link event before sorting: time (µs), hop, packet number, the link, the message.
type Pending = (f64, usize, u64, LinkEvent, Option<MessageId>);

/// Simulates clients sending with substitution cover through a `layers × width` network and
/// returns what a GPA sees (client sends, hops, destination emissions; drop cover is discarded
/// at the exit, loops and requests are answered on `reply_packets` SURB replies, node cover
/// runs at its own rates — see [`SubstitutionConfig`]) with the ground truth apart. Client `c`
/// writes to destination `c`. An empty topology gives an empty observation. Deterministic for
/// a given `rng` state.
pub fn simulate_substitution<R: RngCore + ?Sized>(config: &SubstitutionConfig, rng: &mut R) -> Simulation {
    let topology = Topology::uniform(config.layers, config.width);
    let span = config.duration_us as f64;
    let mut pending: Vec<Pending> = Vec::new();
    let mut truth = GroundTruth::default();
    let mut packet = 0u64;
    let Some(last_layer) = topology.layers.last().filter(|l| !l.is_empty()) else {
        return Simulation { observation: Observation { events: Vec::new() }, truth, topology };
    };
    for client in 0..config.clients {
        let gateway = last_layer[index(rng, last_layer.len())];
        let requests =
            if client < config.active { poisson_times_us(rng, config.request_rate_per_s, span) } else { Vec::new() };
        let mut sends: Vec<(f64, bool)> = Vec::new();
        if config.cover_rate_per_s > 0.0 {
            let mut queue = requests.iter().peekable();
            let mut waiting = 0usize;
            let mut t = exponential_us(rng, 1e6 / config.cover_rate_per_s);
            // Slots until the window ends and every request has had its slot.
            while t < span || waiting > 0 || queue.peek().is_some() {
                while queue.next_if(|&&r| r <= t).is_some() {
                    waiting += 1;
                }
                let real = waiting > 0;
                waiting -= usize::from(real);
                if t < span || real {
                    sends.push((t, real));
                }
                t += exponential_us(rng, 1e6 / config.cover_rate_per_s);
            }
        } else {
            sends.extend(requests.iter().map(|&r| (r, true)));
        }
        for (start, real) in sends {
            let path: Vec<u16> = topology.layers.iter().map(|layer| layer[index(rng, layer.len())]).collect();
            // A cover slot is a loop with probability `loop_fraction` (drawn for real slots
            // too, so the draws do not depend on which slots are real).
            let is_loop = unit(rng) < config.loop_fraction && !real;
            let message = real.then(|| {
                let m = MessageId(packet);
                truth.message_sender.insert(m, client);
                m
            });
            let mut from = Endpoint::Client(client);
            let mut time = start;
            for (hop, &node) in path.iter().enumerate() {
                if hop > 0 {
                    time += hop_delay(config, rng);
                }
                pending.push((time, hop, packet, link(time, from, Endpoint::Node(node)), None));
                from = Endpoint::Node(node);
            }
            packet += 1;
            if !(real || is_loop) {
                continue; // a drop: discarded by the exit
            }
            time += hop_delay(config, rng);
            if real {
                pending.push((time, path.len(), packet - 1, link(time, from, Endpoint::Destination(client)), message));
            }
            let exit = path[path.len() - 1];
            for _ in 0..config.reply_packets {
                packet = reply(config, rng, &topology, (exit, gateway), time, packet, &mut pending);
            }
        }
    }
    for (layer, nodes) in topology.layers.iter().enumerate() {
        for &node in nodes {
            for (rate, home) in [(config.node_loop_rate_per_s, true), (config.node_drop_rate_per_s, false)] {
                for start in poisson_times_us(rng, rate, span) {
                    packet = node_cover(config, rng, &topology, (layer, node), home, start, packet, &mut pending);
                }
            }
        }
    }
    pending.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut events = Vec::with_capacity(pending.len());
    for (i, (_, _, _, event, message)) in pending.into_iter().enumerate() {
        if let Some(message) = message {
            truth.message_delivery.insert(message, i);
        }
        events.push(event);
    }
    Simulation { observation: Observation { events }, truth, topology }
}

/// One SURB reply leaving `exit` at `time` through one node of every layer but the last, then
/// the client's `gateway` (the hand-over to the client is not a node link and is not
/// recorded). Returns the next packet number.
fn reply<R: RngCore + ?Sized>(
    config: &SubstitutionConfig,
    rng: &mut R,
    topology: &Topology,
    (exit, gateway): (u16, u16),
    start: f64,
    packet: u64,
    pending: &mut Vec<Pending>,
) -> u64 {
    let layers = topology.layers.len();
    let mut path: Vec<u16> = topology.layers[..layers - 1].iter().map(|layer| layer[index(rng, layer.len())]).collect();
    path.push(gateway);
    let mut from = Endpoint::Node(exit);
    let mut time = start + config.processing_us;
    for (hop, &node) in path.iter().enumerate() {
        if hop > 0 {
            time += hop_delay(config, rng);
        }
        if hop > 0 || config.reply_first_hop_observed {
            pending.push((time, hop, packet, link(time, from, Endpoint::Node(node)), None));
        }
        from = Endpoint::Node(node);
    }
    packet + 1
}

/// One node cover packet from `node` (of `layer`) at `start`: a loop goes through one node of
/// each following layer, wrapping round, and back to `node`; a drop goes the same way and is
/// discarded by its last hop. Every hop forwards after the processing time only (no mixing
/// delay). Returns the next packet number.
#[allow(clippy::too_many_arguments)]
fn node_cover<R: RngCore + ?Sized>(
    config: &SubstitutionConfig,
    rng: &mut R,
    topology: &Topology,
    (layer, node): (usize, u16),
    home: bool,
    start: f64,
    packet: u64,
    pending: &mut Vec<Pending>,
) -> u64 {
    let layers = topology.layers.len();
    let mut path: Vec<u16> = (1..layers)
        .map(|k| {
            let nodes = &topology.layers[(layer + k) % layers];
            nodes[index(rng, nodes.len())]
        })
        .collect();
    if home {
        path.push(node);
    }
    let mut from = Endpoint::Node(node);
    let mut time = start;
    for (hop, &next) in path.iter().enumerate() {
        if hop > 0 {
            time += config.processing_us;
        }
        pending.push((time, hop, packet, link(time, from, Endpoint::Node(next)), None));
        from = Endpoint::Node(next);
    }
    packet + 1
}

fn hop_delay<R: RngCore + ?Sized>(config: &SubstitutionConfig, rng: &mut R) -> f64 {
    config.processing_us + exponential_us(rng, config.mean_delay_us)
}

fn link(time: f64, from: Endpoint, to: Endpoint) -> LinkEvent {
    LinkEvent { time_us: time as u64, from, to }
}

/// Poisson arrival instants (µs) of `rate_per_s` on `[0, span_us)`.
fn poisson_times_us<R: RngCore + ?Sized>(rng: &mut R, rate_per_s: f64, span_us: f64) -> Vec<f64> {
    let mut times = Vec::new();
    if rate_per_s <= 0.0 {
        return times;
    }
    let mut t = exponential_us(rng, 1e6 / rate_per_s);
    while t < span_us {
        times.push(t);
        t += exponential_us(rng, 1e6 / rate_per_s);
    }
    times
}
