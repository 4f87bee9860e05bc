//! Loop cover as health probes (paper §4.4): a loop that does not return within a timeout
//! counts as a loss on every node of its path; a node is degraded after `losses_to_degrade`
//! consecutive losses and healthy again after `returns_to_recover` consecutive returns.
//!
//! A lost loop cannot say which of its nodes dropped it, so every node on the path is charged.
//! Consecutive counting resolves the ambiguity: a healthy node also carries loops on other
//! paths, whose returns reset its count, while a node that drops everything only accumulates
//! losses. With random paths through one node per layer and w nodes per layer, a healthy node
//! in another layer shares a given loop with a dropping node with probability 1/w, so it is
//! wrongly degraded when its last k loops all crossed the dropping node: (1/w)^k, 0.4 % for
//! w = 3 and the default k = 5; it recovers after `returns_to_recover` returns.
//!
//! Outcomes are counted in the order they become known: a return at once, a loss only at its
//! timeout. Call [`LoopHealthTracker::expire`] regularly (at `next_timeout_at`), so losses
//! interleave with returns as they happen rather than arriving in one batch.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::time::Instant;

use crate::timer::advance;

/// A mix node's identity, opaque here (e.g. its key fingerprint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub [u8; 32]);

/// A loop's identifier as carried in its (encrypted) heartbeat payload; random, so a node on
/// the path cannot forge the return of a loop it dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LoopId(pub [u8; 16]);

/// Configuration of a [`LoopHealthTracker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthConfig {
    /// A loop not back within this is lost. Set well above the expected round trip
    /// (hops × μ plus link latency); the default is 30 s.
    pub return_timeout: Duration,
    /// Consecutive losses that degrade a node (default 5).
    pub losses_to_degrade: u32,
    /// Consecutive returns that restore a degraded node (default 2).
    pub returns_to_recover: u32,
    /// Loops awaited at once; the oldest is forgotten (not counted lost) beyond it (default 4,096).
    pub max_outstanding: usize,
    /// Nodes tracked at once; the least recently updated is forgotten beyond it (default 4,096).
    pub max_nodes: usize,
    /// Longest accepted path (default 16).
    pub max_path_len: usize,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            return_timeout: Duration::from_secs(30),
            losses_to_degrade: 5,
            returns_to_recover: 2,
            max_outstanding: 4_096,
            max_nodes: 4_096,
            max_path_len: 16,
        }
    }
}

/// A node's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeStatus {
    /// Loops through it return (or it has not been probed).
    Healthy,
    /// Loops through it stopped returning.
    Degraded,
}

/// Health counters of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeHealth {
    /// Current status.
    pub status: NodeStatus,
    /// Losses since the last return.
    pub consecutive_losses: u32,
    /// Returns since the last loss.
    pub consecutive_returns: u32,
    /// Loops returned through this node.
    pub returned: u64,
    /// Loops lost through this node.
    pub lost: u64,
    last_update: Instant,
}

/// What [`LoopHealthTracker::record_returned`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopReturn {
    /// An awaited loop came back in time.
    Returned {
        /// Time from send to return.
        round_trip: Duration,
    },
    /// Not awaited: unknown, already returned, evicted, or back after its timeout (already
    /// counted as lost).
    Unknown,
}

/// Why a sent loop was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The path is empty or longer than `max_path_len`.
    #[error("loop path length {0} is outside 1..=max_path_len")]
    PathLength(usize),
    /// A loop with this id is already awaited.
    #[error("loop id already awaited")]
    DuplicateLoopId,
}

#[derive(Debug, Clone)]
struct Outstanding {
    sent_at: Instant,
    path: Vec<NodeId>,
}

/// Tracks outstanding loops and per-node health, in bounded memory.
#[derive(Debug, Clone)]
pub struct LoopHealthTracker {
    config: HealthConfig,
    outstanding: BTreeMap<LoopId, Outstanding>,
    by_send_time: BTreeSet<(Instant, LoopId)>,
    nodes: BTreeMap<NodeId, NodeHealth>,
    evicted_loops: u64,
    lost_loops: u64,
}

impl LoopHealthTracker {
    /// An empty tracker.
    pub fn new(config: HealthConfig) -> Self {
        Self {
            config,
            outstanding: BTreeMap::new(),
            by_send_time: BTreeSet::new(),
            nodes: BTreeMap::new(),
            evicted_loops: 0,
            lost_loops: 0,
        }
    }

    /// Records a loop sent at `now` through `path` (the mix nodes, in order).
    pub fn record_sent(&mut self, id: LoopId, path: &[NodeId], now: Instant) -> Result<(), RecordError> {
        if path.is_empty() || path.len() > self.config.max_path_len {
            return Err(RecordError::PathLength(path.len()));
        }
        if self.outstanding.contains_key(&id) {
            return Err(RecordError::DuplicateLoopId);
        }
        if self.outstanding.len() >= self.config.max_outstanding.max(1)
            && let Some((_, oldest)) = self.by_send_time.pop_first()
        {
            self.outstanding.remove(&oldest);
            self.evicted_loops += 1;
        }
        self.outstanding.insert(id, Outstanding { sent_at: now, path: path.to_vec() });
        self.by_send_time.insert((now, id));
        Ok(())
    }

    /// Records the return of loop `id` at `now`. Loops past their timeout are expired first.
    pub fn record_returned(&mut self, id: LoopId, now: Instant) -> LoopReturn {
        self.expire(now);
        let Some(loop_) = self.outstanding.remove(&id) else {
            return LoopReturn::Unknown;
        };
        self.by_send_time.remove(&(loop_.sent_at, id));
        for node in &loop_.path {
            self.update_node(*node, now, true);
        }
        LoopReturn::Returned { round_trip: now.saturating_duration_since(loop_.sent_at) }
    }

    /// Counts every loop whose timeout has passed at `now` as lost; returns how many.
    /// Call on a timer (e.g. at [`LoopHealthTracker::next_timeout_at`]).
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut expired = 0;
        while let Some(&(sent_at, id)) = self.by_send_time.first() {
            if advance(sent_at, self.config.return_timeout) > now {
                break;
            }
            self.by_send_time.pop_first();
            if let Some(loop_) = self.outstanding.remove(&id) {
                for node in &loop_.path {
                    self.update_node(*node, now, false);
                }
                expired += 1;
            }
        }
        self.lost_loops += expired as u64;
        expired
    }

    /// When the oldest awaited loop times out.
    pub fn next_timeout_at(&self) -> Option<Instant> {
        self.by_send_time.first().map(|(sent_at, _)| advance(*sent_at, self.config.return_timeout))
    }

    fn update_node(&mut self, node: NodeId, now: Instant, returned: bool) {
        if !self.nodes.contains_key(&node) && self.nodes.len() >= self.config.max_nodes.max(1) {
            // Node ids come from our own path selection (the topology), not from peers, so a
            // linear scan on the rare insertion of a new node is fine.
            let stalest = self.nodes.iter().min_by_key(|(_, health)| health.last_update).map(|(id, _)| *id);
            if let Some(stalest) = stalest {
                self.nodes.remove(&stalest);
            }
        }
        let config = self.config;
        let health = self.nodes.entry(node).or_insert(NodeHealth {
            status: NodeStatus::Healthy,
            consecutive_losses: 0,
            consecutive_returns: 0,
            returned: 0,
            lost: 0,
            last_update: now,
        });
        health.last_update = now;
        if returned {
            health.returned += 1;
            health.consecutive_losses = 0;
            health.consecutive_returns = health.consecutive_returns.saturating_add(1);
            if health.status == NodeStatus::Degraded && health.consecutive_returns >= config.returns_to_recover {
                health.status = NodeStatus::Healthy;
            }
        } else {
            health.lost += 1;
            health.consecutive_returns = 0;
            health.consecutive_losses = health.consecutive_losses.saturating_add(1);
            if health.consecutive_losses >= config.losses_to_degrade.max(1) {
                health.status = NodeStatus::Degraded;
            }
        }
    }

    /// A node's status (`Healthy` if never probed).
    pub fn node_status(&self, node: &NodeId) -> NodeStatus {
        self.nodes.get(node).map_or(NodeStatus::Healthy, |health| health.status)
    }

    /// A node's counters, if tracked.
    pub fn node_health(&self, node: &NodeId) -> Option<&NodeHealth> {
        self.nodes.get(node)
    }

    /// Whether any node of `path` is degraded.
    pub fn is_path_degraded(&self, path: &[NodeId]) -> bool {
        path.iter().any(|node| self.node_status(node) == NodeStatus::Degraded)
    }

    /// All degraded nodes.
    pub fn degraded_nodes(&self) -> impl Iterator<Item = &NodeId> + '_ {
        self.nodes.iter().filter(|(_, h)| h.status == NodeStatus::Degraded).map(|(id, _)| id)
    }

    /// Loops awaited now.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Nodes tracked now.
    pub fn tracked_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Loops counted lost so far, by every expiry (including the one
    /// [`LoopHealthTracker::record_returned`] runs first).
    pub fn lost_loops(&self) -> u64 {
        self.lost_loops
    }

    /// Loops forgotten because `max_outstanding` was reached.
    pub fn evicted_loops(&self) -> u64 {
        self.evicted_loops
    }
}
