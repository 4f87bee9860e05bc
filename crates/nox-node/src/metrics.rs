//! Node counters, exported in the Prometheus text format. Aggregates only:
//! never per-packet timing, addresses or keys.

use std::{
    fmt::Write as _,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use nox_mixing::MixingMetrics;
use nox_relay::DropReason;

/// Counters shared by the pipeline stages.
#[derive(Debug, Default)]
pub struct NodeMetrics {
    /// Frames handed to ingest.
    pub received: AtomicU64,
    /// Packets that passed ingest.
    pub admitted: AtomicU64,
    /// Packets processed by a worker (MAC verified, tag recorded).
    pub processed: AtomicU64,
    /// Packets released by the mixer to egress.
    pub released: AtomicU64,
    /// Packets sent on to the next hop's link.
    pub forwarded: AtomicU64,
    /// Exit payloads handed to the exit services.
    pub delivered: AtomicU64,
    /// SURB replies handed to clients.
    pub replies: AtomicU64,
    /// Loop cover packets sent.
    pub loops_sent: AtomicU64,
    /// Loop cover packets that came back in time.
    pub loops_returned: AtomicU64,
    /// Loop cover packets that did not come back in time.
    pub loops_lost: AtomicU64,
    /// Nodes currently marked degraded by loop health.
    pub degraded_nodes: AtomicU64,
    /// Drop cover packets sent.
    pub drops_sent: AtomicU64,
    /// Drop cover packets received (as an exit) and discarded.
    pub drops_received: AtomicU64,
    /// Packets dropped, by reason (index of `DropReason::ALL`).
    drops: [AtomicU64; DropReason::ALL.len()],
    /// Packets refused because the sender may not send to this layer.
    pub wrong_layer: AtomicU64,
    /// Processed packets egress refused to send: the next hop is not a node
    /// of the layer after this one.
    pub egress_not_next_layer: AtomicU64,
    /// Current proof-of-work difficulty required at ingest (of client
    /// packets at an entry node, adaptive).
    pub pow_difficulty: AtomicU64,
    /// Client packets per second reaching ingest within their rate limits
    /// (entry nodes with adaptive proof of work; 2 s window).
    pub pow_client_arrival_rate: AtomicU64,
    /// Current key epoch.
    pub epoch: AtomicU64,
    /// Packets waiting for a worker.
    pub worker_queue_depth: AtomicU64,
    /// Packets held by the mixer.
    pub mixer_held: AtomicU64,
    /// Group commits of replay tags completed (one `fdatasync` per journal
    /// touched).
    pub replay_syncs: AtomicU64,
    /// Replay tags made durable.
    pub replay_synced_tags: AtomicU64,
    /// Time spent writing and syncing batches, in microseconds.
    pub replay_sync_micros: AtomicU64,
    /// 1 once a journal write or sync failed: the node no longer emits.
    pub replay_journal_failed: AtomicU64,
    /// Packets whose mixing delay ended before their tag was durable.
    pub replay_gate_waits: AtomicU64,
    /// Total time those packets waited at the gate, in microseconds.
    pub replay_gate_wait_micros: AtomicU64,
    /// Key epochs refused because their replay state was lost.
    pub replay_refused_epochs: AtomicU64,
    /// Last mixer snapshot (counters and delay histogram).
    pub mixing: Mutex<Option<MixingMetrics>>,
    /// The registry view, when membership comes from the chain.
    pub chain: std::sync::OnceLock<std::sync::Arc<crate::ChainMembership>>,
    /// The topology in use (routable nodes).
    pub topology: std::sync::OnceLock<crate::SharedTopology>,
}

impl NodeMetrics {
    /// Counts one drop.
    pub fn count_drop(&self, reason: DropReason) {
        if let Some(index) = DropReason::ALL.iter().position(|r| *r == reason) {
            self.drops[index].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops so far for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        DropReason::ALL.iter().position(|r| *r == reason).map_or(0, |i| self.drops[i].load(Ordering::Relaxed))
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        };
        let gauge = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counter(&mut out, "nox_packets_received_total", "Frames handed to ingest.", load(&self.received));
        counter(&mut out, "nox_packets_admitted_total", "Packets that passed ingest.", load(&self.admitted));
        counter(&mut out, "nox_packets_processed_total", "Packets processed by a worker.", load(&self.processed));
        counter(&mut out, "nox_packets_released_total", "Packets released by the mixer.", load(&self.released));
        counter(&mut out, "nox_packets_forwarded_total", "Packets sent to the next hop.", load(&self.forwarded));
        counter(&mut out, "nox_packets_delivered_total", "Exit payloads delivered.", load(&self.delivered));
        counter(&mut out, "nox_replies_delivered_total", "SURB replies handed to clients.", load(&self.replies));
        counter(&mut out, "nox_cover_loops_sent_total", "Loop cover packets sent.", load(&self.loops_sent));
        counter(
            &mut out,
            "nox_cover_loops_returned_total",
            "Loop cover packets back in time.",
            load(&self.loops_returned),
        );
        counter(&mut out, "nox_cover_loops_lost_total", "Loop cover packets not back in time.", load(&self.loops_lost));
        gauge(
            &mut out,
            "nox_cover_degraded_nodes",
            "Nodes marked degraded by loop health.",
            load(&self.degraded_nodes),
        );
        counter(&mut out, "nox_cover_drops_sent_total", "Drop cover packets sent.", load(&self.drops_sent));
        counter(
            &mut out,
            "nox_cover_drops_received_total",
            "Drop cover packets discarded at this exit.",
            load(&self.drops_received),
        );
        let _ = writeln!(out, "# HELP nox_packets_dropped_total Packets dropped, by reason.");
        let _ = writeln!(out, "# TYPE nox_packets_dropped_total counter");
        for (index, reason) in DropReason::ALL.iter().enumerate() {
            let _ = writeln!(
                out,
                "nox_packets_dropped_total{{reason=\"{}\"}} {}",
                reason.label(),
                load(&self.drops[index])
            );
        }
        let _ = writeln!(out, "nox_packets_dropped_total{{reason=\"wrong_layer\"}} {}", load(&self.wrong_layer));
        let _ = writeln!(
            out,
            "nox_packets_dropped_total{{reason=\"egress_not_next_layer\"}} {}",
            load(&self.egress_not_next_layer)
        );
        gauge(
            &mut out,
            "nox_pow_difficulty_bits",
            "Proof-of-work difficulty required at ingest (of client packets at an entry).",
            load(&self.pow_difficulty),
        );
        gauge(
            &mut out,
            "nox_pow_client_arrival_rate",
            "Client packets per second within their rate limits (adaptive PoW load).",
            load(&self.pow_client_arrival_rate),
        );
        gauge(&mut out, "nox_key_epoch", "Current key epoch.", load(&self.epoch));
        counter(&mut out, "nox_replay_syncs_total", "Group commits of replay tags.", load(&self.replay_syncs));
        counter(&mut out, "nox_replay_synced_tags_total", "Replay tags made durable.", load(&self.replay_synced_tags));
        let micros = |a: &AtomicU64| load(a) as f64 / 1e6;
        let _ = writeln!(
            out,
            "# HELP nox_replay_sync_seconds_total Time spent writing and syncing replay journal batches.\n\
             # TYPE nox_replay_sync_seconds_total counter\nnox_replay_sync_seconds_total {}",
            micros(&self.replay_sync_micros)
        );
        gauge(
            &mut out,
            "nox_replay_journal_failed",
            "1 if a replay journal write or sync failed: the node emits nothing until restarted.",
            load(&self.replay_journal_failed),
        );
        counter(
            &mut out,
            "nox_replay_gate_waits_total",
            "Packets whose mixing delay ended before their replay tag was durable.",
            load(&self.replay_gate_waits),
        );
        let _ = writeln!(
            out,
            "# HELP nox_replay_gate_wait_seconds_total Time packets waited for their replay tag to be durable.\n\
             # TYPE nox_replay_gate_wait_seconds_total counter\nnox_replay_gate_wait_seconds_total {}",
            micros(&self.replay_gate_wait_micros)
        );
        gauge(
            &mut out,
            "nox_replay_refused_epochs",
            "Key epochs refused because their replay state was lost (damaged journal, unreadable snapshot).",
            load(&self.replay_refused_epochs),
        );
        gauge(&mut out, "nox_worker_queue_depth", "Packets waiting for a worker.", load(&self.worker_queue_depth));
        gauge(&mut out, "nox_mixer_held_packets", "Packets held by the mixer.", load(&self.mixer_held));
        if let Some(topology) = self.topology.get() {
            let current = topology.current();
            gauge(
                &mut out,
                "nox_topology_nodes",
                "Routable nodes of the verified topology.",
                current.nodes().len() as u64,
            );
            gauge(
                &mut out,
                "nox_topology_rejected_nodes",
                "Nodes of the fetched document left out (not vouched for by the registry).",
                current.rejected().len() as u64,
            );
        }
        if let Some(chain) = self.chain.get() {
            let status = chain.status();
            gauge(&mut out, "nox_chain_block", "Block of the last verified registry snapshot.", status.block);
            gauge(&mut out, "nox_chain_registered_nodes", "Active nodes in the registry.", status.registered);
            counter(
                &mut out,
                "nox_chain_refresh_errors_total",
                "Registry refreshes that gave no verified snapshot (last one kept).",
                status.errors,
            );
            let _ = writeln!(
                out,
                "# HELP nox_chain_info The registry snapshot in use.\n# TYPE nox_chain_info gauge\nnox_chain_info{{fingerprint=\"0x{}\"}} 1",
                hex::encode(status.fingerprint)
            );
        }
        if let Ok(guard) = self.mixing.lock()
            && let Some(mixing) = guard.as_ref()
        {
            counter(
                &mut out,
                "nox_mixing_over_delayed_total",
                "Packets whose processing exceeded their drawn delay.",
                mixing.counters.over_delayed,
            );
            let histogram = &mixing.delay_histogram;
            let _ = writeln!(out, "# HELP nox_mixing_delay_seconds Mixing delay from arrival to release.");
            let _ = writeln!(out, "# TYPE nox_mixing_delay_seconds histogram");
            for (bound, count) in histogram.bounds().iter().zip(histogram.cumulative_counts()) {
                let _ = writeln!(out, "nox_mixing_delay_seconds_bucket{{le=\"{}\"}} {count}", bound.as_secs_f64());
            }
            let _ = writeln!(out, "nox_mixing_delay_seconds_bucket{{le=\"+Inf\"}} {}", histogram.count());
            let _ = writeln!(out, "nox_mixing_delay_seconds_sum {}", histogram.sum().as_secs_f64());
            let _ = writeln!(out, "nox_mixing_delay_seconds_count {}", histogram.count());
        }
        out
    }
}
