//! The sans-I/O client: requests out, downstream records in, timeouts and
//! cover slots on demand. Time and randomness are injected.

use std::collections::{BTreeSet, HashMap};

use nox_cover::{Instant, Payload, SendQueue};
use nox_link::Mailbox;
use nox_message::{REPLY_LIMITS, ReplyAssembler, Request, RequestBody, request_fragments, surbs_needed};
use nox_sphinx::{BuildOptions, Geometry, NodeId, PathHop, SurbId, SurbRecovery, build_forward, build_surb};
use nox_topology::VerifiedTopology;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

use crate::config::ClientConfig;
use crate::error::ClientError;
use crate::gateways::{FormerGateways, GatewayPatience};
use crate::health::LoopProbes;
use crate::paths::{Exclude, hop_of, keep_or_pick_gateway, last_layer, path_ending_at, random_hop};
use crate::surbs::{Retired, SurbTable};
pub use crate::types::{ClientStats, Completed, DROP_MAGIC, Now, Outgoing, PacketKind, RequestId};

struct Pending {
    deadline: Instant,
    surbs: Vec<SurbId>,
    assembler: ReplyAssembler,
}

/// The packets of one request and what loop health needs of it.
pub(crate) struct Built {
    pub(crate) packets: Vec<Outgoing>,
    pub(crate) recoveries: Vec<SurbRecovery>,
    /// Forward path of the first fragment.
    pub(crate) forward: Vec<NodeId>,
    /// Nodes on every SURB's return path (at least the gateway).
    pub(crate) reply: Vec<NodeId>,
    /// The reply gateway every SURB of the request names as its last hop.
    pub(crate) gateway: NodeId,
}

/// The client state machine. See the crate documentation.
pub struct ClientCore {
    pub(crate) topology: VerifiedTopology,
    pub(crate) geometry: Geometry,
    pub(crate) config: ClientConfig,
    mailbox: Mailbox,
    pub(crate) gateway: NodeId,
    /// When loop health may make the client leave the gateway (hysteresis).
    pub(crate) patience: GatewayPatience,
    /// Gateways left while SURBs naming them were live (replies still owed).
    former: FormerGateways,
    pub(crate) rng: ChaCha20Rng,
    pub(crate) base: Instant,
    pub(crate) next_id: u64,
    pending: HashMap<RequestId, Pending>,
    pub(crate) surbs: SurbTable,
    pub(crate) streams: crate::core_streams::Streams,
    notices: HashMap<NodeId, u8>,
    queue: Option<SendQueue<Outgoing, ChaCha20Rng>>,
    /// Which free slots of `queue` carry cover (the profile).
    gate: crate::profile::ProfileGate,
    pub(crate) probes: LoopProbes,
    pub(crate) degraded: BTreeSet<NodeId>,
    pub(crate) stats: ClientStats,
}

impl ClientCore {
    /// A client with a fresh random mailbox and a random reply gateway (a
    /// last-layer node with a key for the client epoch, not avoided).
    /// `rng` builds packets; `timer_rng` draws only the cover schedule, so
    /// emission times cannot depend on traffic.
    pub fn new(
        topology: VerifiedTopology,
        config: ClientConfig,
        mut rng: ChaCha20Rng,
        timer_rng: ChaCha20Rng,
        now: Now,
    ) -> Result<Self, ClientError> {
        // The network's geometry is the one its topology was verified for: no setting of
        // the client's own (`nox_topology::geometry_for` finds it in the document).
        let geometry = *topology.geometry();
        let epoch = topology.client_epoch(now.unix);
        let none = BTreeSet::new();
        let exclude = Exclude { avoid: &config.avoid, degraded: &none };
        let gateway = random_hop(&topology, last_layer(&topology), epoch, exclude, &mut rng)?.node;
        let mut mailbox = [0u8; 32];
        while mailbox == [0u8; 32] {
            rng.fill_bytes(&mut mailbox);
        }
        let queue = if config.cover_rate > 0.0 {
            let queue = SendQueue::new(config.cover_rate, config.queue_capacity, now.at, timer_rng)
                .map_err(|e| ClientError::Setup(e.to_string()))?;
            Some(queue)
        } else {
            None
        };
        let gate = crate::profile::ProfileGate::new(
            config.profile,
            config.cover_rate,
            geometry.packet_len(),
            now.at,
            &mut rng,
        )
        .map_err(|e| ClientError::Setup(e.to_string()))?;
        let config_health = config.health;
        Ok(Self {
            topology,
            geometry,
            config,
            mailbox: Mailbox(mailbox),
            gateway,
            patience: GatewayPatience::new(config_health.return_timeout),
            former: FormerGateways::default(),
            rng,
            base: now.at,
            next_id: 0,
            pending: HashMap::new(),
            surbs: SurbTable::default(),
            streams: Default::default(),
            notices: HashMap::new(),
            queue,
            gate,
            probes: LoopProbes::new(config_health),
            degraded: BTreeSet::new(),
            stats: ClientStats::default(),
        })
    }

    /// Switches to a newer topology (epoch keys rotate). The gateway is kept
    /// while it is listed with a key for the client epoch and not avoided
    /// (a degraded one is left by loop health, with its patience); otherwise
    /// a new one is drawn and returned, and the shell
    /// must connect to it (same mailbox). Requests in flight keep their SURBs,
    /// which name the old gateway: it stays in [`Self::reply_gateways`] until
    /// they are over.
    ///
    /// A topology of another geometry is refused ([`ClientError::WrongGeometry`]): the
    /// client's links, SURBs in flight and replies are of its first topology's geometry.
    pub fn set_topology(&mut self, topology: VerifiedTopology, now: Now) -> Result<Option<NodeId>, ClientError> {
        if *topology.geometry() != self.geometry {
            return Err(ClientError::wrong_geometry(&self.geometry, topology.geometry()));
        }
        let epoch = topology.client_epoch(now.unix);
        let exclude = Exclude { avoid: &self.config.avoid, degraded: &self.degraded };
        let gateway = keep_or_pick_gateway(&topology, &self.gateway, exclude, epoch, &mut self.rng)?;
        self.topology = topology;
        if let Some(gateway) = gateway {
            self.move_gateway(gateway);
        }
        Ok(gateway)
    }

    /// Makes `gateway` the reply gateway of new SURBs; the old one is kept
    /// among the former gateways while live SURBs name it.
    pub(crate) fn move_gateway(&mut self, gateway: NodeId) {
        let old = std::mem::replace(&mut self.gateway, gateway);
        self.patience.moved();
        let owed = self.surbs.live_for(&old) > 0;
        let evicted = self.former.moved(old, gateway, owed);
        self.stats.reply_gateways_evicted += evicted.len() as u64;
    }

    /// The reply gateway: new SURBs name it as their last hop, and the shell
    /// keeps a link to it naming [`Self::mailbox`].
    pub fn gateway(&self) -> NodeId {
        self.gateway
    }

    /// Every gateway the shell must keep a reply link to (same mailbox): the
    /// current one first, then the former gateways that live SURBs still name
    /// (replies of requests and streams sent before a gateway change), most
    /// recent first, at most [`crate::MAX_OLD_GATEWAYS`] of them. A former
    /// gateway leaves the list when its last request completes or times out
    /// (its keys are dropped); the shell then closes its link.
    pub fn reply_gateways(&self) -> Vec<NodeId> {
        let owed = self.former.iter().filter(|g| **g != self.gateway && self.surbs.live_for(g) > 0);
        std::iter::once(self.gateway).chain(owed.copied()).collect()
    }

    /// The mailbox every SURB of this client names as recipient.
    pub fn mailbox(&self) -> Mailbox {
        self.mailbox
    }

    /// The topology in use.
    pub fn topology(&self) -> &VerifiedTopology {
        &self.topology
    }

    /// The geometry in use.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Counters.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Requests in flight.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// SURB keys held (one per unused SURB of a request in flight).
    pub fn surbs_held(&self) -> usize {
        self.surbs.len()
    }

    /// Sends `body` to one random exit with enough SURBs for a reply of about
    /// `expected_reply_len` bytes. With cover traffic off the packets are
    /// returned for sending now; with it on they are queued for the Poisson
    /// slots ([`Self::poll_transmit`]) and the list is empty.
    pub fn request(
        &mut self,
        body: RequestBody,
        expected_reply_len: usize,
        now: Now,
    ) -> Result<(RequestId, Vec<Outgoing>), ClientError> {
        self.request_via(body, expected_reply_len, None, now)
    }

    /// [`Self::request`] to the exit `exit` (a node of the last layer), or to a random exit
    /// for `None`. A conversation that must reach the same exit twice (a relayer's quote, then
    /// the bundle paying that relayer) pins it.
    pub fn request_via(
        &mut self,
        body: RequestBody,
        expected_reply_len: usize,
        exit: Option<NodeId>,
        now: Now,
    ) -> Result<(RequestId, Vec<Outgoing>), ClientError> {
        if self.pending.len() >= self.config.max_pending {
            return Err(ClientError::Busy("too many requests in flight"));
        }
        body.validate()?;
        let n_surbs = surbs_needed(&self.geometry, expected_reply_len, self.config.loss, self.config.target)?;
        if let Some(queue) = &self.queue
            && queue.len() >= self.config.queue_capacity
        {
            return Err(ClientError::Busy("send queue full"));
        }
        let Built { packets, recoveries, gateway, .. } = self.build_request(body, n_surbs, false, exit, now)?;
        if let Some(queue) = &self.queue
            && queue.len() + packets.len() > self.config.queue_capacity
        {
            return Err(ClientError::Busy("send queue full"));
        }

        let id = RequestId(self.next_id);
        self.next_id += 1;
        let assembler = ReplyAssembler::new(REPLY_LIMITS)?;
        let ids = recoveries.iter().map(SurbRecovery::id).collect();
        for recovery in recoveries {
            self.surbs.insert(recovery.id(), id, gateway, recovery);
        }
        self.pending.insert(id, Pending { deadline: now.at + self.config.timeout, surbs: ids, assembler });
        self.stats.requests += 1;
        self.stats.real_packets += packets.len() as u64;
        match &mut self.queue {
            None => Ok((id, packets)),
            Some(queue) => {
                self.gate.on_use(now.at);
                for packet in packets {
                    // Capacity was checked above; a refusal cannot happen.
                    let _ = queue.push(packet);
                }
                Ok((id, Vec::new()))
            }
        }
    }

    /// Builds a request of `n_surbs` SURBs (return paths `[L0, L1, gateway]`)
    /// and its fragments on fresh paths to one exit. `probe` (loops) ignores
    /// loop health in path choice; real traffic avoids degraded nodes.
    pub(crate) fn build_request(
        &mut self,
        body: RequestBody,
        n_surbs: usize,
        probe: bool,
        exit: Option<NodeId>,
        now: Now,
    ) -> Result<Built, ClientError> {
        let epoch = self.topology.client_epoch(now.unix);
        let options = BuildOptions { key_epoch: epoch, pow_threads: self.config.pow_threads };
        let none = BTreeSet::new();
        let degraded = if probe { none } else { self.degraded.clone() };
        let exclude = Exclude { avoid: &self.config.avoid, degraded: &degraded };
        let exit = match exit {
            None => random_hop(&self.topology, last_layer(&self.topology), epoch, exclude, &mut self.rng)?,
            Some(id) => {
                if self.topology.layer_of(&id) != Some(last_layer(&self.topology)) {
                    return Err(ClientError::NoRoute(format!("{id:?} is not an exit of the topology")));
                }
                hop_of(&self.topology, &id, epoch)
                    .ok_or_else(|| ClientError::NoRoute(format!("exit {id:?} has no key for epoch {epoch}")))?
            }
        };
        let gateway = hop_of(&self.topology, &self.gateway, epoch)
            .ok_or_else(|| ClientError::NoRoute(format!("reply gateway has no key for epoch {epoch}")))?;

        let recipient = NodeId(self.mailbox.0);
        let mut surbs = Vec::with_capacity(n_surbs);
        let mut recoveries: Vec<SurbRecovery> = Vec::with_capacity(n_surbs);
        let mut reply: Option<Vec<NodeId>> = None;
        for _ in 0..n_surbs {
            let path = path_ending_at(&self.topology, epoch, exclude, gateway.clone(), &mut self.rng)?;
            // Nodes on every return path: a reply is lost only if all its
            // SURBs are, so only these are certainly involved in a loss.
            reply = Some(match reply {
                None => path.iter().map(|h| h.node).collect(),
                Some(common) => common.into_iter().filter(|n| path.iter().any(|h| h.node == *n)).collect(),
            });
            let (surb, recovery) = build_surb(&self.geometry, &options, &path, recipient, &mut self.rng)?;
            surbs.push(surb);
            recoveries.push(recovery);
        }
        let request = Request { surbs, body };
        request.validate()?;
        let fragments =
            request_fragments(&self.geometry, &request.encode(), self.config.parity_percent, &mut self.rng)?;
        drop(request);
        let mut paths = Vec::with_capacity(fragments.len());
        for _ in &fragments {
            let exclude = Exclude { avoid: &self.config.avoid, degraded: &degraded };
            paths.push(path_ending_at(&self.topology, epoch, exclude, exit.clone(), &mut self.rng)?);
        }
        let forward = paths.first().map(|p| p.iter().map(|h| h.node).collect()).unwrap_or_default();
        let mut packets = Vec::with_capacity(fragments.len());
        for (path, fragment) in paths.into_iter().zip(&fragments) {
            let kind = if probe {
                PacketKind::Loop
            } else {
                let mut head = [0u8; 16];
                let n = fragment.len().min(16);
                head[..n].copy_from_slice(&fragment[..n]);
                PacketKind::Fragment { head }
            };
            packets.push(self.build(&options, path, fragment, kind)?);
        }
        Ok(Built { packets, recoveries, forward, reply: reply.unwrap_or_default(), gateway: gateway.node })
    }

    /// Builds one forward packet; the entry hop's proof of work is at least
    /// the difficulty the entry last announced.
    pub(crate) fn build(
        &mut self,
        options: &BuildOptions,
        mut path: Vec<PathHop>,
        payload: &[u8],
        kind: PacketKind,
    ) -> Result<Outgoing, ClientError> {
        let entry = path.first_mut().ok_or_else(|| ClientError::NoRoute("empty path".into()))?;
        if let Some(&notice) = self.notices.get(&entry.node) {
            entry.pow_difficulty = entry.pow_difficulty.max(notice);
        }
        let entry = entry.node;
        let packet = build_forward(&self.geometry, options, &path, payload, &mut self.rng)?;
        Ok(Outgoing { entry, packet, kind })
    }

    /// When the next Poisson slot is due (`None` with cover traffic off).
    pub fn next_transmit_at(&self) -> Option<Instant> {
        self.queue.as_ref().and_then(SendQueue::next_emission_at)
    }

    /// The packet for the next due slot, if one is due: the oldest queued
    /// real packet, or a fresh cover packet: a loop (share
    /// `config.loop_fraction`) or a drop — unless the cover profile keeps a
    /// free slot silent, which is skipped. Call until `None`.
    pub fn poll_transmit(&mut self, now: Now) -> Option<Result<Outgoing, ClientError>> {
        loop {
            let emission = self.queue.as_mut()?.poll(now.at)?;
            return Some(match emission.payload {
                Payload::Real(packet) => {
                    self.gate.on_real_sent(emission.at);
                    Ok(packet)
                }
                // A stream message, when one is due, takes the slot of a cover packet.
                Payload::Cover => match self.next_stream_packet(now) {
                    Some(Ok(packet)) => {
                        self.gate.on_real_sent(emission.at);
                        Ok(packet)
                    }
                    // The profile keeps this free slot silent.
                    Some(Err(_)) | None if !self.gate.allow_cover(emission.at) => continue,
                    Some(Err(_)) | None if self.draw_loop() => {
                        self.loop_packet(now).or_else(|_| self.cover_packet(now))
                    }
                    Some(Err(_)) | None => self.cover_packet(now),
                },
            });
        }
    }

    /// Whether cover traffic is on (packets wait for Poisson slots).
    pub fn queue_enabled(&self) -> bool {
        self.queue.is_some()
    }

    /// Real packets waiting for a slot.
    pub fn queued(&self) -> usize {
        self.queue.as_ref().map_or(0, SendQueue::len)
    }

    /// Handles one record from a node link (`from`: the sending node, if
    /// known). Returns the request it completed, if any.
    pub fn on_downstream(&mut self, from: Option<NodeId>, record: &[u8], now: Now) -> Option<Completed> {
        let parsed = match nox_link::parse_downstream(record, self.geometry.header_len()) {
            Ok(parsed) => parsed,
            Err(_) => {
                self.stats.malformed_downstream += 1;
                return None;
            }
        };
        let (surb_id, body) = match parsed {
            nox_link::Downstream::Difficulty(d) => {
                if let Some(node) = from {
                    self.notices.insert(node, d);
                }
                return None;
            }
            nox_link::Downstream::Reply { surb_id, body } => (SurbId(surb_id), body),
        };
        if let Some((recovery, loop_id)) = self.probes.take(&surb_id) {
            self.loop_reply(surb_id, recovery, loop_id, body, now);
            return None;
        }
        let (id, recovery) = match self.surbs.take(&surb_id) {
            Ok(found) => found,
            Err(Some(Retired::Used)) => {
                self.stats.reused_surb += 1;
                return None;
            }
            Err(Some(Retired::Dropped)) => {
                self.stats.late_replies += 1;
                return None;
            }
            Err(None) => {
                self.stats.unknown_surb += 1;
                return None;
            }
        };
        let fragment = recovery.open(&surb_id, body);
        drop(recovery);
        let Ok(fragment) = fragment else {
            self.stats.bad_replies += 1;
            return None;
        };
        let now_ms = now.at.saturating_duration_since(self.base).as_millis() as u64;
        if self.streams.owns(id) {
            self.stream_reply(id, &fragment, now_ms);
            return None;
        }
        let pending = self.pending.get_mut(&id)?;
        let encoded = match pending.assembler.accept(&fragment, now_ms) {
            Ok(Some(encoded)) => encoded,
            Ok(None) => {
                self.stats.replies += 1;
                return None;
            }
            Err(_) => {
                self.stats.bad_replies += 1;
                return None;
            }
        };
        self.stats.replies += 1;
        self.finish(id);
        let result = nox_message::Response::decode(&encoded).map_err(ClientError::from);
        if result.is_ok() {
            self.stats.completed += 1;
        }
        Some(Completed { id, result })
    }

    /// Removes a request and drops (zeroizes) its unused SURB keys.
    fn finish(&mut self, id: RequestId) {
        if let Some(pending) = self.pending.remove(&id) {
            for surb in pending.surbs {
                self.surbs.retire(&surb);
            }
        }
    }

    /// When the earliest request in flight, or loop, times out.
    pub fn next_timeout(&self) -> Option<Instant> {
        let streams = self.streams.next_wakeup().map(|ms| self.base + std::time::Duration::from_millis(ms));
        self.pending.values().map(|p| p.deadline).chain(self.probes.next_timeout_at()).chain(streams).min()
    }

    /// Fails every request whose deadline has passed with
    /// `ClientError::Timeout`. Nothing is resent (see the crate docs).
    /// Also counts overdue loops as lost, which may mark nodes degraded and
    /// change [`Self::gateway`], and forgets former gateways no live SURB
    /// names any more ([`Self::reply_gateways`]).
    pub fn poll_timeouts(&mut self, now: Now) -> Vec<Completed> {
        self.refresh_health(now);
        self.stream_timers(now);
        let mut expired: Vec<RequestId> =
            self.pending.iter().filter(|(_, p)| p.deadline <= now.at).map(|(id, _)| *id).collect();
        expired.sort();
        let done = expired
            .into_iter()
            .map(|id| {
                self.finish(id);
                self.stats.timeouts += 1;
                Completed { id, result: Err(ClientError::Timeout) }
            })
            .collect();
        let surbs = &self.surbs;
        self.former.release(|g| surbs.live_for(g) > 0);
        done
    }
}
