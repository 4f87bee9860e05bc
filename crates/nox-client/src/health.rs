//! Client loop cover as a health probe (NOX paper §4.4): some cover slots
//! carry a loop, an echo request with a small echo's SURB budget, addressed back to this
//! client, built exactly like a real request. A loop that does not come back
//! in time charges a loss to every node it certainly crossed (forward path and the nodes on every SURB
//! return path); `nox_cover::LoopHealthTracker` turns consecutive losses into
//! "degraded" and consecutive returns back into "healthy". Real requests and
//! drops avoid degraded nodes; loops deliberately do not, so a degraded node
//! keeps being probed and can recover.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use nox_cover::{HealthConfig, Instant, LoopHealthTracker, LoopId, LoopReturn};
use nox_message::RequestBody;
use nox_sphinx::{BuildOptions, NodeId, SurbId, SurbRecovery};
use rand_core::RngCore;

use crate::core::ClientCore;
use crate::error::ClientError;
use crate::paths::{Exclude, last_layer, path_ending_at, random_hop};
use crate::types::PacketKind;
use crate::types::{DROP_MAGIC, Now, Outgoing};

/// The reply size a loop budgets its SURBs for: that of a small echo, so a
/// loop carries as many SURBs as a typical small user request and an exit
/// cannot single loops out by their SURB count.
const LOOP_BUDGET_REPLY_LEN: usize = 1024;

/// Loops in flight (their SURB keys, zeroized when dropped) and the tracker.
/// A loop carries several SURBs; any one authenticated reply returns it.
pub(crate) struct LoopProbes {
    tracker: LoopHealthTracker,
    live: HashMap<SurbId, (Instant, SurbRecovery, LoopId)>,
    order: VecDeque<(Instant, SurbId)>,
    timeout: Duration,
    max: usize,
}

impl LoopProbes {
    pub(crate) fn new(config: HealthConfig) -> Self {
        Self {
            tracker: LoopHealthTracker::new(config),
            live: HashMap::new(),
            order: VecDeque::new(),
            timeout: config.return_timeout,
            max: config.max_outstanding.max(1),
        }
    }

    /// Records a loop sent at `now` through `nodes`; keeps its SURB keys.
    fn sent(&mut self, recoveries: Vec<SurbRecovery>, nodes: &[NodeId], now: Instant) -> bool {
        let Some(first) = recoveries.first() else { return false };
        let loop_id = LoopId(first.id().0);
        let path: Vec<nox_cover::NodeId> = nodes.iter().map(|n| nox_cover::NodeId(n.0)).collect();
        if self.tracker.record_sent(loop_id, &path, now).is_err() {
            return false;
        }
        for recovery in recoveries {
            let id = recovery.id();
            self.live.insert(id, (now, recovery, loop_id));
            self.order.push_back((now, id));
        }
        while self.live.len() > self.max || self.order.len() > 2 * self.max {
            match self.order.pop_front() {
                Some((_, old)) => drop(self.live.remove(&old)),
                None => break,
            }
        }
        true
    }

    /// The keys of one of an awaited loop's SURBs (single use), and the loop.
    pub(crate) fn take(&mut self, id: &SurbId) -> Option<(SurbRecovery, LoopId)> {
        self.live.remove(id).map(|(_, recovery, loop_id)| (recovery, loop_id))
    }

    /// Counts every loop past its timeout as lost (returns how many) and
    /// drops (zeroizes) their keys.
    fn expire(&mut self, now: Instant) -> usize {
        let lost = self.tracker.expire(now);
        while let Some(&(sent_at, id)) = self.order.front() {
            if sent_at + self.timeout > now {
                break;
            }
            self.order.pop_front();
            self.live.remove(&id);
        }
        lost
    }

    /// Nodes the tracker reports degraded.
    fn degraded(&self) -> BTreeSet<NodeId> {
        self.tracker.degraded_nodes().map(|n| NodeId(n.0)).collect()
    }

    /// When the oldest awaited loop times out.
    pub(crate) fn next_timeout_at(&self) -> Option<Instant> {
        self.tracker.next_timeout_at()
    }
}

impl ClientCore {
    /// Nodes loop health currently marks degraded; every new path (forward,
    /// exit, SURB return, gateway) avoids them, besides `config.avoid`.
    pub fn degraded_nodes(&self) -> BTreeSet<NodeId> {
        self.degraded.clone()
    }

    /// A drop cover packet on a fresh random path.
    pub fn cover_packet(&mut self, now: Now) -> Result<Outgoing, ClientError> {
        let epoch = self.topology.client_epoch(now.unix);
        let options = BuildOptions { key_epoch: epoch, pow_threads: self.config.pow_threads };
        let exclude = Exclude { avoid: &self.config.avoid, degraded: &self.degraded };
        let exit = random_hop(&self.topology, last_layer(&self.topology), epoch, exclude, &mut self.rng)?;
        let path = path_ending_at(&self.topology, epoch, exclude, exit, &mut self.rng)?;
        let mut payload = DROP_MAGIC.to_vec();
        payload.extend_from_slice(&self.rng.next_u64().to_be_bytes());
        let out = self.build(&options, path, &payload, PacketKind::Drop)?;
        self.stats.cover_packets += 1;
        Ok(out)
    }

    /// Whether the next cover slot carries a loop (drawn from the packet
    /// RNG, never the timer's, so emission times do not depend on it).
    pub(crate) fn draw_loop(&mut self) -> bool {
        let fraction = self.config.loop_fraction;
        if fraction <= 0.0 {
            return false;
        }
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        u < fraction
    }

    /// A loop cover packet: an echo request with an empty body and the SURB
    /// budget of a small echo, back to our mailbox via the gateway, on a
    /// fresh path that ignores health (so degraded nodes keep being probed).
    /// Not a request: it is not counted, cannot complete a waiter, and is
    /// never resent.
    pub fn loop_packet(&mut self, now: Now) -> Result<Outgoing, ClientError> {
        let n_surbs =
            nox_message::surbs_needed(self.geometry(), LOOP_BUDGET_REPLY_LEN, self.config.loss, self.config.target)?;
        let mut built = self.build_request(RequestBody::Echo(Vec::new()), n_surbs, true, None, now)?;
        let Some(out) = built.packets.pop() else {
            return Err(ClientError::NoRoute("loop needs one packet".into()));
        };
        let recoveries = std::mem::take(&mut built.recoveries);
        if !built.packets.is_empty() {
            return Err(ClientError::NoRoute("loop does not fit one packet".into()));
        }
        // Each node once per loop. A loop that crosses nodes already degraded
        // is charged to them alone: it probes whether they recovered, and its
        // likely loss must not drag healthy nodes (the gateway, on every
        // loop) down with them.
        let nodes: BTreeSet<NodeId> = built.forward.into_iter().chain(built.reply).collect();
        let suspects: Vec<NodeId> = nodes.iter().filter(|n| self.degraded.contains(n)).copied().collect();
        let charged = if suspects.is_empty() { nodes.into_iter().collect() } else { suspects };
        if self.probes.sent(recoveries, &charged, now.at) {
            self.stats.loops_sent += 1;
        }
        Ok(out)
    }

    /// A reply on a loop's SURB: authenticated, then counted as returned.
    pub(crate) fn loop_reply(&mut self, id: SurbId, recovery: SurbRecovery, loop_id: LoopId, body: &[u8], now: Now) {
        let opened = recovery.open(&id, body).is_ok();
        drop(recovery);
        if !opened {
            self.stats.bad_replies += 1;
            return;
        }
        // Count overdue loops first, so the tracker's own expiry finds none.
        self.refresh_health(now);
        if let LoopReturn::Returned { .. } = self.probes.tracker.record_returned(loop_id, now.at) {
            self.stats.loops_returned += 1;
        }
        self.degraded = self.probes.degraded();
        self.stats.degraded_nodes = self.degraded.len() as u64;
    }

    /// Expires lost loops, updates the degraded set and, once the gateway
    /// has been degraded for a whole return timeout without a break
    /// ([`GatewayPatience`](crate::gateways::GatewayPatience)), moves to
    /// another one ([`ClientCore::gateway`] changes; the shell connects to
    /// it). Replies still owed come back via the old one, which stays in
    /// [`ClientCore::reply_gateways`] until they are over.
    pub(crate) fn refresh_health(&mut self, now: Now) {
        self.stats.loops_lost += self.probes.expire(now.at) as u64;
        self.degraded = self.probes.degraded();
        self.stats.degraded_nodes = self.degraded.len() as u64;
        let degraded = self.degraded.contains(&self.gateway);
        if !self.patience.leave(degraded, now.at) {
            return;
        }
        let epoch = self.topology.client_epoch(now.unix);
        // A healthy replacement if the last layer has one; otherwise (every gateway is
        // degraded: a dead gateway's lost loops are also charged to the other nodes they
        // crossed, e.g. the others as exits) another degraded one, which in turn gets a
        // return timeout to show it works before the client moves on.
        let mut avoid = self.config.avoid.clone();
        avoid.insert(self.gateway);
        let exclude = Exclude { avoid: &avoid, degraded: &self.degraded };
        match random_hop(&self.topology, last_layer(&self.topology), epoch, exclude, &mut self.rng) {
            Ok(hop) => self.move_gateway(hop.node),
            Err(e) => tracing::debug!("no replacement for a degraded gateway: {e}"),
        }
    }
}
