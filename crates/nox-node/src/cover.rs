//! Node cover traffic (paper §4.4): loop packets (λ_L) that travel the
//! layers back to this node and serve as health probes, and drop packets
//! (λ_D) to random exits, both with Poisson inter-departure times
//! (`nox-cover`'s scheduler). On the wire they are ordinary Sphinx packets;
//! only their final hop, after removing the last layer, sees what they are.

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_cover::{CoverKind, CoverScheduler, HealthConfig, Instant, LoopHealthTracker, LoopId, LoopReturn};
use nox_link::{LinkPublicKey, transport::OutboundLinks};
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop};
use nox_topology::{Layer, VerifiedTopology};

use crate::directory_client::SharedTopology;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;
use std::sync::atomic::Ordering;
use tokio::sync::watch;

use crate::NodeMetrics;

/// Payload prefix of a loop packet (followed by its 16-byte loop id).
pub const LOOP_MAGIC: &[u8; 8] = b"NOXLOOP1";
/// Payload prefix of a drop packet (the exit discards it).
pub const DROP_MAGIC: &[u8; 8] = b"NOXDROP1";

/// The node's cover clock: `nox-cover` takes monotonic time as an offset
/// from an origin the host picks; here, the first reading in this process
/// (shared by the cover task and egress, which both touch the health
/// tracker).
fn origin() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(std::time::Instant::now)
}

/// Now, as `nox-cover` sees it.
fn cover_now() -> Instant {
    Instant::from_std(origin(), std::time::Instant::now())
}

/// `[cover]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoverSection {
    /// Loop packets per second (λ_L); 0 disables.
    pub loop_rate: f64,
    /// Drop packets per second (λ_D); 0 disables.
    pub drop_rate: f64,
    /// A loop not back within this many seconds is lost.
    pub loop_timeout_s: f64,
    /// Consecutive lost loops through a node that mark it degraded.
    pub losses_to_degrade: u32,
}

impl Default for CoverSection {
    fn default() -> Self {
        Self { loop_rate: 0.05, drop_rate: 0.05, loop_timeout_s: 30.0, losses_to_degrade: 5 }
    }
}

/// Shared loop-health state: the cover task records loops sent, egress
/// records loops returned.
pub type Health = Arc<Mutex<LoopHealthTracker>>;

/// A new tracker for `section`.
pub fn health(section: &CoverSection) -> Health {
    let config = HealthConfig {
        return_timeout: Duration::try_from_secs_f64(section.loop_timeout_s).unwrap_or(Duration::from_secs(30)),
        losses_to_degrade: section.losses_to_degrade.max(1),
        ..HealthConfig::default()
    };
    Arc::new(Mutex::new(LoopHealthTracker::new(config)))
}

/// Called by egress for a delivered payload; true if it was cover (consumed).
pub fn consume_delivery(payload: &[u8], health: &Health, metrics: &NodeMetrics) -> bool {
    if payload.starts_with(LOOP_MAGIC) && payload.len() >= 24 {
        let mut id = [0u8; 16];
        id.copy_from_slice(&payload[8..24]);
        if let Ok(mut tracker) = health.lock()
            && matches!(tracker.record_returned(LoopId(id), cover_now()), LoopReturn::Returned { .. })
        {
            metrics.loops_returned.fetch_add(1, Ordering::Relaxed);
        }
        true
    } else if payload.starts_with(DROP_MAGIC) {
        metrics.drops_received.fetch_add(1, Ordering::Relaxed);
        true
    } else {
        false
    }
}

/// Everything the cover task needs.
pub struct CoverTask {
    /// Settings.
    pub section: CoverSection,
    /// This node.
    pub me: NodeId,
    /// The verified topology (refreshed from the directory).
    pub topology: SharedTopology,
    /// Packet geometry.
    pub geometry: Geometry,
    /// Links to the next layer.
    pub outbound: OutboundLinks,
    /// Loop health.
    pub health: Health,
    /// Counters.
    pub metrics: Arc<NodeMetrics>,
    /// `[observe]` (measurement only): records the cover packets this node originates.
    pub observer: Option<Arc<crate::Observer>>,
}

impl CoverTask {
    /// Runs until `shutdown`.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
        let loop_rng = rand_chacha::ChaCha20Rng::from_rng(&mut rng);
        let drop_rng = rand_chacha::ChaCha20Rng::from_rng(&mut rng);
        let Ok(mut scheduler) =
            CoverScheduler::new(self.section.loop_rate, self.section.drop_rate, cover_now(), loop_rng, drop_rng)
        else {
            return;
        };
        let Some(my_layer) = self.view().layer_of(&self.me) else { return };
        loop {
            let wake = scheduler.next_event_at().unwrap_or_else(|| cover_now() + Duration::from_secs(1));
            // Beyond what std holds (never for a real schedule): a second.
            let wake = wake.to_std(origin()).unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(1));
            tokio::select! {
                () = tokio::time::sleep_until(wake.into()) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            let now = cover_now();
            while let Some(event) = scheduler.poll(now) {
                match event.kind {
                    CoverKind::Loop => self.send_loop(my_layer, &mut rng, now),
                    CoverKind::Drop => self.send_drop(my_layer, &mut rng),
                }
            }
            if let Ok(mut tracker) = self.health.lock() {
                tracker.expire(now);
                // Cumulative: expiries also run inside `record_returned`.
                self.metrics.loops_lost.store(tracker.lost_loops(), Ordering::Relaxed);
                self.metrics.degraded_nodes.store(tracker.degraded_nodes().count() as u64, Ordering::Relaxed);
            }
        }
    }

    /// One random node of `layer` with a key for `epoch`, as a path hop.
    fn hop(&self, layer: Layer, epoch: u32, rng: &mut impl RngCore) -> Option<PathHop> {
        let topology = self.view();
        let mut candidates: Vec<PathHop> = topology
            .nodes_in_layer(layer)
            .filter(|n| n.id != self.me)
            .filter_map(|n| {
                n.descriptor.sphinx_key(epoch).map(|key| PathHop {
                    node: n.id,
                    public_key: key,
                    delay: Delay(0),
                    pow_difficulty: n.descriptor.pow_difficulty,
                })
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let index = (rng.next_u64() % candidates.len() as u64) as usize;
        Some(candidates.swap_remove(index))
    }

    fn view(&self) -> Arc<VerifiedTopology> {
        self.topology.current()
    }

    fn epoch(&self) -> u32 {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.view().client_epoch(now)
    }

    /// Loop: through the following layers in order, wrapping around, back to
    /// this node (layers k+1, …, L−1, 0, …, k).
    fn send_loop(&self, my_layer: Layer, rng: &mut rand_chacha::ChaCha20Rng, now: Instant) {
        let layers = self.view().layers();
        let epoch = self.epoch();
        let mut path = Vec::new();
        let mut layer = layers.successor(my_layer);
        while layer != my_layer {
            let Some(hop) = self.hop(layer, epoch, rng) else { return };
            path.push(hop);
            layer = layers.successor(layer);
        }
        let topology = self.view();
        let Some(me) = topology.node(&self.me) else { return };
        let Some(key) = me.descriptor.sphinx_key(epoch) else { return };
        path.push(PathHop { node: self.me, public_key: key, delay: Delay(0), pow_difficulty: 0 });
        let mut id = [0u8; 16];
        rng.fill_bytes(&mut id);
        let mut payload = Vec::with_capacity(24);
        payload.extend_from_slice(LOOP_MAGIC);
        payload.extend_from_slice(&id);
        let nodes: Vec<nox_cover::NodeId> = path.iter().map(|h| nox_cover::NodeId(h.node.0)).collect();
        if self.send(&path, &payload, rng)
            && let Ok(mut tracker) = self.health.lock()
            && tracker.record_sent(LoopId(id), &nodes, now).is_ok()
        {
            self.metrics.loops_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drop: through the following layers to a random exit.
    fn send_drop(&self, my_layer: Layer, rng: &mut rand_chacha::ChaCha20Rng) {
        let layers = self.view().layers();
        let exit = Layer(layers.get() - 1);
        let epoch = self.epoch();
        let mut path = Vec::new();
        let mut layer = layers.successor(my_layer);
        loop {
            let Some(hop) = self.hop(layer, epoch, rng) else { return };
            path.push(hop);
            if layer == exit {
                break;
            }
            layer = layers.successor(layer);
        }
        let mut payload = DROP_MAGIC.to_vec();
        payload.extend_from_slice(&rng.next_u64().to_be_bytes());
        if self.send(&path, &payload, rng) {
            self.metrics.drops_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn send(&self, path: &[PathHop], payload: &[u8], rng: &mut rand_chacha::ChaCha20Rng) -> bool {
        let topology = self.view();
        let Some(first) = path.first().and_then(|h| topology.node(&h.node)) else { return false };
        let options = BuildOptions::new(self.epoch());
        let Ok(packet) = nox_sphinx::build_forward(&self.geometry, &options, path, payload, rng) else { return false };
        let sent = self.outbound.send(&LinkPublicKey(first.descriptor.link_key.to_bytes()), packet).is_ok();
        if sent && let Some(observer) = &self.observer {
            observer.cover(&first.id);
        }
        sent
    }
}
