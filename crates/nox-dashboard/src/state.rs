//! What `nox dashboard` shows, computed from scrapes: per-node rates from counter deltas over a
//! short window, drops by reason, mixing-delay histograms, PoW difficulty, key epochs, the
//! topology's epoch and validity and the registry view. Pure: the caller hands in readings with
//! the `Instant` they were taken and the wall-clock second; nothing here does I/O.
//!
//! Aggregates only. The state never holds a node's socket address, a client address or
//! anything per packet: nodes are named by their testnet label or a short node-id prefix, and
//! the only figures are counters, gauges, rates over [`RATE_WINDOW`] and bucket counts.

use std::{
    collections::{BTreeMap, VecDeque},
    time::{Duration, Instant},
};

use nox_sphinx::NodeId;
use nox_topology::VerifiedTopology;
use serde::Serialize;

use crate::metrics::{Histogram, NodeReading};

/// Rates are counter deltas over the readings of the last this long.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// A node's metrics endpoint as the dashboard knows it (its address stays with the poller).
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Display name (`node-3` in a testnet, else the node id's first 8 hex digits).
    pub name: String,
    /// The topology node it belongs to, once known.
    pub id: Option<NodeId>,
    /// Its layer as recorded outside the topology (testnet `layer` file), if any.
    pub layer_hint: Option<u8>,
}

/// One endpoint's scrape history.
#[derive(Debug)]
struct Track {
    endpoint: Endpoint,
    history: VecDeque<(Instant, NodeReading)>,
    /// The last scrape's failure, if it failed.
    failure: Option<String>,
    last_attempt: Option<Instant>,
}

/// The chain view: the registry as the dashboard (or the nodes) last verified it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ChainView {
    /// Block of the last verified registry snapshot.
    pub block: u64,
    /// Active registered nodes.
    pub registered: u64,
    /// Registry snapshot fingerprint (hex), when read by the dashboard itself.
    pub fingerprint: Option<String>,
    /// Refreshes that gave no verified snapshot.
    pub refresh_errors: u64,
    /// `dashboard` (read by the dashboard) or `nodes` (the highest block the nodes report).
    pub source: &'static str,
}

/// The topology as last fetched.
#[derive(Debug, Default)]
pub struct TopologyStatus {
    /// The verified topology, if any fetch succeeded.
    pub topology: Option<VerifiedTopology>,
    /// The last fetch's error (the previous topology is kept).
    pub error: Option<String>,
    /// Where it comes from (`testnet directory`, `directory mirrors`).
    pub source: String,
}

/// Everything the scrape loop has seen.
#[derive(Debug, Default)]
pub struct Tracker {
    tracks: Vec<Track>,
}

impl Tracker {
    /// A tracker for these endpoints.
    pub fn new(endpoints: Vec<Endpoint>) -> Self {
        let tracks = endpoints
            .into_iter()
            .map(|endpoint| Track { endpoint, history: VecDeque::new(), failure: None, last_attempt: None })
            .collect();
        Tracker { tracks }
    }

    /// Number of endpoints.
    pub fn len(&self) -> usize {
        self.tracks.len()
    }

    /// Whether there are no endpoints.
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    /// Adds an endpoint (a node that joined); returns its index.
    pub fn push(&mut self, endpoint: Endpoint) -> usize {
        self.tracks.push(Track { endpoint, history: VecDeque::new(), failure: None, last_attempt: None });
        self.tracks.len() - 1
    }

    /// Sets endpoint `index`'s topology node.
    pub fn set_id(&mut self, index: usize, id: Option<NodeId>) {
        if let Some(track) = self.tracks.get_mut(index) {
            track.endpoint.id = id;
        }
    }

    /// Records a scrape of endpoint `index` taken at `at`: a reading, or why there is none.
    pub fn record(&mut self, index: usize, at: Instant, result: Result<NodeReading, String>) {
        let Some(track) = self.tracks.get_mut(index) else { return };
        track.last_attempt = Some(at);
        match result {
            Ok(reading) => {
                // A counter that went back: the node restarted; rates start over.
                if track.history.back().is_some_and(|(_, last)| went_back(last, &reading)) {
                    track.history.clear();
                }
                track.history.push_back((at, reading));
                while track.history.len() > 2
                    && track.history.get(1).is_some_and(|(t, _)| at.saturating_duration_since(*t) >= RATE_WINDOW)
                {
                    track.history.pop_front();
                }
                track.failure = None;
            }
            Err(reason) => track.failure = Some(reason),
        }
    }

    /// The dashboard's state at `now` (`now_unix` the same moment on the wall clock).
    pub fn state(
        &self,
        now: Instant,
        now_unix: u64,
        topology: &TopologyStatus,
        chain: Option<ChainView>,
    ) -> DashboardState {
        let verified = topology.topology.as_ref();
        let network_epoch = verified.map(|t| t.schedule().epoch_at(now_unix));
        let layer_count = verified.map_or_else(
            || self.tracks.iter().filter_map(|t| t.endpoint.layer_hint).max().map_or(0, |l| l + 1),
            |t| t.layers().get(),
        );
        let mut layers: Vec<LayerView> = (0..layer_count)
            .map(|layer| LayerView { layer, role: role(layer, layer_count), nodes: Vec::new() })
            .collect();
        let mut unplaced = Vec::new();
        let mut totals = Totals::default();
        let mut recent = Histogram::default();
        let mut cumulative = Histogram::default();
        let mut seen_ids = Vec::new();
        for track in &self.tracks {
            let node = verified.and_then(|t| track.endpoint.id.and_then(|id| t.node(&id)));
            if let Some(node) = node {
                seen_ids.push(node.id);
            }
            let mut view = node_view(track, now, node, network_epoch);
            if view.up {
                totals.nodes_up += 1;
            } else {
                totals.nodes_down += 1;
            }
            if let Some((reading, rates)) = track.history.back().map(|(_, r)| (r, &view.rates)) {
                totals.add(reading, rates);
                if let Some(delay) = &reading.delay {
                    cumulative.add(delay);
                }
                if let (Some((_, first)), Some(delay)) = (track.history.front(), &reading.delay)
                    && let Some(window) = delay.since(first.delay.as_ref().unwrap_or(&Histogram::default()))
                {
                    recent.add(&window);
                }
            }
            let layer = node.map(|n| n.descriptor.layer.0).or(track.endpoint.layer_hint);
            if node.is_none() && verified.is_some() {
                view.notes.push("not in the verified topology".into());
            }
            match layer.and_then(|l| layers.get_mut(usize::from(l))) {
                Some(column) => column.nodes.push(view),
                None => unplaced.push(view),
            }
        }
        // Topology nodes the dashboard has no metrics endpoint for.
        if let Some(t) = verified {
            for node in t.nodes().iter().filter(|n| !seen_ids.contains(&n.id)) {
                let mut view = NodeView::unscraped(short_id(&node.id), node, network_epoch);
                view.down_reason = Some("no metrics endpoint for this node".into());
                totals.nodes_down += 1;
                if let Some(column) = layers.get_mut(node.descriptor.layer.index()) {
                    column.nodes.push(view);
                }
            }
        }
        for layer in &mut layers {
            layer.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let chain = chain.or_else(|| {
            let (block, registered) = self
                .tracks
                .iter()
                .filter(|t| t.failure.is_none())
                .filter_map(|t| t.history.back().and_then(|(_, r)| r.chain))
                .max()?;
            Some(ChainView { block, registered, fingerprint: None, refresh_errors: 0, source: "nodes" })
        });
        DashboardState {
            generated_unix: now_unix,
            rate_window_seconds: RATE_WINDOW.as_secs_f64(),
            topology: topology_view(topology, now_unix),
            layers,
            unplaced,
            totals,
            delay_recent: HistogramView::from(&recent),
            delay_total: HistogramView::from(&cumulative),
            chain,
        }
    }
}

fn went_back(earlier: &NodeReading, later: &NodeReading) -> bool {
    later.received < earlier.received
        || later.forwarded < earlier.forwarded
        || later.delivered < earlier.delivered
        || later.replies < earlier.replies
        || later.processed < earlier.processed
}

fn role(layer: u8, layers: u8) -> &'static str {
    match layer {
        0 => "entry",
        l if l + 1 == layers => "exit",
        _ => "mix",
    }
}

/// A node id's first 8 hex digits (its public name when no testnet label is known).
pub fn short_id(id: &NodeId) -> String {
    hex::encode(&id.0[..4])
}

fn node_view(
    track: &Track,
    now: Instant,
    node: Option<&nox_topology::TopologyNode>,
    network_epoch: Option<u32>,
) -> NodeView {
    let mut view = match node {
        Some(node) => NodeView::unscraped(track.endpoint.name.clone(), node, network_epoch),
        None => NodeView {
            name: track.endpoint.name.clone(),
            id: track.endpoint.id.as_ref().map(short_id),
            layer: track.endpoint.layer_hint,
            ..NodeView::default()
        },
    };
    let Some((at, reading)) = track.history.back() else {
        view.down_reason = Some(track.failure.clone().unwrap_or_else(|| "not scraped yet".into()));
        view.last_attempt_age_s = track.last_attempt.map(|t| age(now, t));
        return view;
    };
    view.up = track.failure.is_none();
    view.down_reason = track.failure.clone();
    view.scrape_age_s = Some(age(now, *at));
    view.last_attempt_age_s = track.last_attempt.map(|t| age(now, t));
    view.rates = rates(&track.history);
    view.totals = Counts {
        received: reading.received,
        processed: reading.processed,
        forwarded: reading.forwarded,
        delivered: reading.delivered,
        replies: reading.replies,
    };
    view.drops = reading.drops.clone();
    view.pow_difficulty = Some(reading.pow_difficulty);
    view.epoch = Some(reading.epoch);
    view.mixer_held = reading.mixer_held;
    view.worker_queue = reading.worker_queue;
    view.loops = LoopCounts { sent: reading.loops[0], returned: reading.loops[1], lost: reading.loops[2] };
    view.delay = reading.delay.as_ref().map(HistogramView::from);
    if reading.journal_failed {
        view.notes.push("replay journal failed: the node emits nothing".into());
    }
    if let Some(network) = network_epoch
        && reading.epoch != u64::from(network)
    {
        view.notes.push(format!("node on key epoch {}, network on {network}", reading.epoch));
    }
    view
}

fn age(now: Instant, then: Instant) -> f64 {
    (now.saturating_duration_since(then).as_secs_f64() * 10.0).round() / 10.0
}

fn rates(history: &VecDeque<(Instant, NodeReading)>) -> Rates {
    let (Some((t0, first)), Some((t1, last))) = (history.front(), history.back()) else { return Rates::default() };
    let seconds = t1.saturating_duration_since(*t0).as_secs_f64();
    if seconds <= 0.0 {
        return Rates::default();
    }
    let per_second = |a: u64, b: u64| ((b.saturating_sub(a) as f64 / seconds) * 100.0).round() / 100.0;
    let out = |r: &NodeReading| r.forwarded.saturating_add(r.delivered).saturating_add(r.replies);
    let dropped = |r: &NodeReading| r.drops.values().fold(0u64, |a, b| a.saturating_add(*b));
    Rates {
        in_per_s: per_second(first.received, last.received),
        out_per_s: per_second(out(first), out(last)),
        delivered_per_s: per_second(first.delivered, last.delivered),
        dropped_per_s: per_second(dropped(first), dropped(last)),
    }
}

fn topology_view(status: &TopologyStatus, now_unix: u64) -> TopologyView {
    let mut view =
        TopologyView { source: status.source.clone(), error: status.error.clone(), ..TopologyView::default() };
    if let Some(t) = &status.topology {
        let schedule = t.schedule();
        let epoch = schedule.epoch_at(now_unix);
        view.verified = true;
        view.issued_at = Some(t.issued_at());
        view.age_s = Some(now_unix.saturating_sub(t.issued_at()));
        view.epoch = Some(epoch);
        view.epoch_length_s = Some(schedule.epoch_length().as_secs());
        view.epoch_ends_in_s = Some(schedule.epoch_end(epoch).saturating_sub(now_unix));
        view.fingerprint = Some(hex::encode(&t.fingerprint().0[..8]));
        view.layers = t.layers().get();
        view.nodes = t.nodes().len();
        view.rejected = t.rejected().len();
        view.scheme = Some(format!("{:?}", t.geometry().scheme()));
    }
    view
}

/// `GET /api/state`.
#[derive(Debug, Serialize)]
pub struct DashboardState {
    /// Wall-clock second of this state.
    pub generated_unix: u64,
    /// Rates are over this many seconds.
    pub rate_window_seconds: f64,
    /// The topology.
    pub topology: TopologyView,
    /// Layers in order (entry first), each with its nodes.
    pub layers: Vec<LayerView>,
    /// Endpoints whose layer is unknown.
    pub unplaced: Vec<NodeView>,
    /// Sums over the nodes that answered.
    pub totals: Totals,
    /// Mixing delays of the packets released in the rate window, all nodes.
    pub delay_recent: HistogramView,
    /// Mixing delays since the nodes started, all nodes.
    pub delay_total: HistogramView,
    /// The registry, where the network has one.
    pub chain: Option<ChainView>,
}

/// The topology part of the state.
#[derive(Debug, Default, Serialize)]
pub struct TopologyView {
    /// Where the dashboard gets it.
    pub source: String,
    /// Whether a verified topology is held.
    pub verified: bool,
    /// The last fetch's error, if it failed.
    pub error: Option<String>,
    /// Issue time (unix seconds).
    pub issued_at: Option<u64>,
    /// Seconds since issue.
    pub age_s: Option<u64>,
    /// Current key epoch.
    pub epoch: Option<u32>,
    /// Epoch length, seconds.
    pub epoch_length_s: Option<u64>,
    /// Seconds until the current epoch ends.
    pub epoch_ends_in_s: Option<u64>,
    /// First 8 bytes of the fingerprint, hex.
    pub fingerprint: Option<String>,
    /// Number of layers.
    pub layers: u8,
    /// Routable nodes.
    pub nodes: usize,
    /// Nodes left out by registry verification.
    pub rejected: usize,
    /// The Sphinx scheme.
    pub scheme: Option<String>,
}

/// One layer.
#[derive(Debug, Serialize)]
pub struct LayerView {
    /// Layer index (0 = entry).
    pub layer: u8,
    /// `entry`, `mix` or `exit`.
    pub role: &'static str,
    /// Its nodes, by name.
    pub nodes: Vec<NodeView>,
}

/// One node: aggregates only.
#[derive(Debug, Default, Serialize)]
pub struct NodeView {
    /// Display name.
    pub name: String,
    /// Node id prefix (hex), when known.
    pub id: Option<String>,
    /// Layer, when known.
    pub layer: Option<u8>,
    /// The last scrape succeeded.
    pub up: bool,
    /// Why the node is shown down.
    pub down_reason: Option<String>,
    /// Seconds since the last successful scrape.
    pub scrape_age_s: Option<f64>,
    /// Seconds since the last scrape attempt.
    pub last_attempt_age_s: Option<f64>,
    /// Rates over the window.
    pub rates: Rates,
    /// Counters since the node started.
    pub totals: Counts,
    /// Drops by reason since the node started.
    pub drops: BTreeMap<String, u64>,
    /// Current PoW difficulty at ingest (bits), from the node.
    pub pow_difficulty: Option<u64>,
    /// PoW difficulty the node's descriptor advertises.
    pub pow_advertised: Option<u8>,
    /// The node's current key epoch.
    pub epoch: Option<u64>,
    /// Epochs the topology holds a Sphinx key of this node for.
    pub key_epochs: Vec<u32>,
    /// `ok`, or what is wrong with its keys.
    pub key_status: String,
    /// Packets held by the mixer.
    pub mixer_held: u64,
    /// Packets waiting for a worker.
    pub worker_queue: u64,
    /// Loop cover counts.
    pub loops: LoopCounts,
    /// Mixing delay histogram since the node started.
    pub delay: Option<HistogramView>,
    /// Anything else worth a look.
    pub notes: Vec<String>,
}

impl NodeView {
    fn unscraped(name: String, node: &nox_topology::TopologyNode, network_epoch: Option<u32>) -> Self {
        let key_epochs: Vec<u32> = node.descriptor.sphinx_keys.iter().map(|k| k.epoch).collect();
        let key_status = match network_epoch {
            Some(epoch) if !key_epochs.contains(&epoch) => format!("no key for the current epoch {epoch}"),
            Some(epoch) if !key_epochs.contains(&epoch.saturating_add(1)) => {
                format!("no key yet for the next epoch {}", epoch.saturating_add(1))
            }
            Some(_) => "ok".into(),
            None => "unknown (no topology)".into(),
        };
        NodeView {
            name,
            id: Some(short_id(&node.id)),
            layer: Some(node.descriptor.layer.0),
            pow_advertised: Some(node.descriptor.pow_difficulty),
            key_epochs,
            key_status,
            ..NodeView::default()
        }
    }
}

/// Per-second rates.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rates {
    /// Frames received.
    pub in_per_s: f64,
    /// Packets forwarded, delivered or replied.
    pub out_per_s: f64,
    /// Exit payloads delivered.
    pub delivered_per_s: f64,
    /// Packets dropped (all reasons).
    pub dropped_per_s: f64,
}

/// Packet counters.
#[derive(Debug, Default, Serialize)]
pub struct Counts {
    /// Frames received.
    pub received: u64,
    /// Packets processed.
    pub processed: u64,
    /// Packets forwarded.
    pub forwarded: u64,
    /// Exit payloads delivered.
    pub delivered: u64,
    /// SURB replies delivered.
    pub replies: u64,
}

/// Loop cover counts.
#[derive(Debug, Default, Serialize)]
pub struct LoopCounts {
    /// Sent.
    pub sent: u64,
    /// Came back in time.
    pub returned: u64,
    /// Did not.
    pub lost: u64,
}

/// Network sums.
#[derive(Debug, Default, Serialize)]
pub struct Totals {
    /// Nodes whose last scrape succeeded.
    pub nodes_up: usize,
    /// Nodes shown down.
    pub nodes_down: usize,
    /// Sum of the nodes' input rates.
    pub in_per_s: f64,
    /// Sum of the exits' delivery rates.
    pub delivered_per_s: f64,
    /// Drops by reason, all nodes, since they started.
    pub drops: BTreeMap<String, u64>,
}

impl Totals {
    fn add(&mut self, reading: &NodeReading, rates: &Rates) {
        self.in_per_s = ((self.in_per_s + rates.in_per_s) * 100.0).round() / 100.0;
        self.delivered_per_s = ((self.delivered_per_s + rates.delivered_per_s) * 100.0).round() / 100.0;
        for (reason, count) in &reading.drops {
            let entry = self.drops.entry(reason.clone()).or_insert(0);
            *entry = entry.saturating_add(*count);
        }
    }
}

/// A histogram for the page: bucket upper bounds in milliseconds (`null` = +Inf) and counts.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HistogramView {
    /// Upper bound of each bucket, milliseconds (`null`: +Inf).
    pub le_ms: Vec<Option<f64>>,
    /// Count in each bucket.
    pub counts: Vec<u64>,
    /// All observations.
    pub count: u64,
    /// Mean, milliseconds.
    pub mean_ms: Option<f64>,
}

impl From<&Histogram> for HistogramView {
    fn from(h: &Histogram) -> Self {
        HistogramView {
            le_ms: h.le_seconds.iter().map(|b| b.map(|s| (s * 1e6).round() / 1e3)).collect(),
            counts: h.counts.clone(),
            count: h.count,
            mean_ms: (h.count > 0).then(|| (h.sum_seconds / h.count as f64 * 1e6).round() / 1e3),
        }
    }
}

#[cfg(test)]
mod tests;
