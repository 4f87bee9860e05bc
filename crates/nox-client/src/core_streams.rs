//! Streams inside the client core: opening, building each stream message
//! into one Sphinx packet with its SURB batch, routing replies by SURB id,
//! timers. With cover traffic on, stream packets are built only when a
//! Poisson slot would otherwise carry cover ([`ClientCore::poll_transmit`]);
//! with it off, [`ClientCore::poll_streams`] hands them out at once.

use std::collections::{BTreeSet, HashMap};

use nox_fec::shard_capacity;
use nox_message::RequestBody;
use nox_sphinx::{Surb, SurbRecovery};
use nox_stream::{ResetCode, StreamId, StreamMessage, Target};
use rand_core::RngCore;

use crate::core::{ClientCore, Now, Outgoing, RequestId};
use crate::error::ClientError;
use crate::paths::{Exclude, last_layer, random_hop};
use crate::streams::{ClientStream, StreamStatus};

/// Bytes of a request before its SURBs: version, kind, SURB count.
const REQUEST_HEADER: usize = 3;
/// Most SURBs in one stream message (about 30 KiB with the default
/// geometry: what fits beside the message's control frames).
const MAX_BATCH: u16 = 96;

/// The client's streams, by the id that owns their SURBs.
#[derive(Default)]
pub(crate) struct Streams {
    map: HashMap<RequestId, ClientStream>,
    /// Streams the application let go of: dropped once finished.
    detached: BTreeSet<RequestId>,
    /// Streams whose state changed since the shell last asked.
    touched: BTreeSet<RequestId>,
    /// Round-robin cursor over streams for cover slots.
    cursor: u64,
}

impl Streams {
    pub(crate) fn owns(&self, id: RequestId) -> bool {
        self.map.contains_key(&id)
    }

    pub(crate) fn next_wakeup(&self) -> Option<u64> {
        self.map.values().filter_map(ClientStream::next_wakeup).min()
    }
}

impl ClientCore {
    fn now_ms(&self, now: Now) -> u64 {
        now.at.saturating_duration_since(self.base).as_millis() as u64
    }

    /// Opens a stream to `target` through a random exit. The `OPEN` goes out
    /// with the next [`Self::poll_streams`] (cover off) or cover slot (on);
    /// [`Self::stream_status`] tells when the exit has connected.
    pub fn open_stream(&mut self, target: Target, now: Now) -> Result<RequestId, ClientError> {
        if self.streams.map.len() >= self.config.max_streams {
            return Err(ClientError::Busy("too many streams open"));
        }
        let mut probe = StreamMessage::new(StreamId([0; 16]));
        probe.open = Some(target.clone());
        probe.validate().map_err(|e| ClientError::Setup(e.to_string()))?;
        let epoch = self.topology.client_epoch(now.unix);
        let none = BTreeSet::new();
        let exclude = Exclude { avoid: &self.config.avoid, degraded: &self.degraded };
        let exit = random_hop(&self.topology, last_layer(&self.topology), epoch, exclude, &mut self.rng)
            .or_else(|_| {
                let exclude = Exclude { avoid: &self.config.avoid, degraded: &none };
                random_hop(&self.topology, last_layer(&self.topology), epoch, exclude, &mut self.rng)
            })?
            .node;
        let mut id = [0u8; 16];
        self.rng.fill_bytes(&mut id);
        let key = RequestId(self.next_id);
        self.next_id += 1;
        let stream = ClientStream::new(StreamId(id), exit, target, self.config.streams, self.now_ms(now))?;
        self.streams.map.insert(key, stream);
        self.streams.touched.insert(key);
        Ok(key)
    }

    /// The stream's state (`None` for an unknown or dropped stream).
    pub fn stream_status(&self, key: RequestId) -> Option<StreamStatus> {
        self.streams.map.get(&key).map(ClientStream::status)
    }

    /// Writes what fits of `bytes`; returns how many were taken (0 before
    /// the stream opened, after a reset, or with a full buffer).
    pub fn stream_write(&mut self, key: RequestId, bytes: &[u8]) -> usize {
        match self.streams.map.get_mut(&key) {
            Some(stream) if stream.status().writable > 0 => stream.endpoint.write(bytes),
            _ => 0,
        }
    }

    /// Reads up to `max` bytes received in order.
    pub fn stream_read(&mut self, key: RequestId, max: usize, now: Now) -> Vec<u8> {
        let now_ms = self.now_ms(now);
        self.streams.map.get_mut(&key).map(|s| s.endpoint.read(max, now_ms)).unwrap_or_default()
    }

    /// The application will write no more (a FIN follows its last byte).
    pub fn stream_finish(&mut self, key: RequestId) {
        if let Some(stream) = self.streams.map.get_mut(&key) {
            stream.endpoint.finish();
        }
    }

    /// Lets go of a stream: one not yet closed is reset (the exit is told);
    /// its SURB keys are dropped once nothing is left to send.
    pub fn stream_close(&mut self, key: RequestId) {
        if let Some(stream) = self.streams.map.get_mut(&key) {
            if !stream.endpoint.closed() {
                stream.fail(ResetCode::Aborted);
            }
            self.streams.detached.insert(key);
        }
        self.collect_streams();
    }

    /// Streams whose state changed since the last call (the shell wakes
    /// their readers and writers).
    pub fn take_touched_streams(&mut self) -> Vec<RequestId> {
        std::mem::take(&mut self.streams.touched).into_iter().collect()
    }

    /// Streams open (not yet dropped).
    pub fn streams_open(&self) -> usize {
        self.streams.map.len()
    }

    /// With cover traffic off: every stream message due now, one packet
    /// each. With it on: nothing (messages wait for cover slots).
    pub fn poll_streams(&mut self, now: Now) -> Vec<Outgoing> {
        if self.queue_enabled() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let keys: Vec<RequestId> = self.streams.map.keys().copied().collect();
        for key in keys {
            // A stream with a lot to send yields after a burst so others get a turn.
            for _ in 0..64 {
                match self.stream_packet(key, now) {
                    Some(Ok(packet)) => out.push(packet),
                    Some(Err(error)) => {
                        tracing::debug!(%error, "stream packet");
                        break;
                    }
                    None => break,
                }
            }
        }
        self.collect_streams();
        out
    }

    /// For a cover slot: one message of the next stream (round robin) that has one due.
    pub(crate) fn next_stream_packet(&mut self, now: Now) -> Option<Result<Outgoing, ClientError>> {
        let now_ms = self.now_ms(now);
        let mut keys: Vec<RequestId> =
            self.streams.map.iter().filter(|(_, s)| s.wants_message(now_ms)).map(|(k, _)| *k).collect();
        if keys.is_empty() {
            return None;
        }
        keys.sort();
        let start = keys.iter().position(|k| k.0 >= self.streams.cursor).unwrap_or(0);
        let key = keys[start];
        self.streams.cursor = key.0 + 1;
        let packet = self.stream_packet(key, now);
        self.collect_streams();
        packet
    }

    /// Builds the stream's next message, if one is due, into one packet.
    fn stream_packet(&mut self, key: RequestId, now: Now) -> Option<Result<Outgoing, ClientError>> {
        let now_ms = self.now_ms(now);
        let surb_len = Surb::encoded_len(&self.geometry);
        let capacity = shard_capacity(self.geometry.payload_capacity()).unwrap_or(0).saturating_sub(REQUEST_HEADER);
        let stream = self.streams.map.get_mut(&key)?;
        if !stream.wants_message(now_ms) {
            return None;
        }
        let fit = u16::try_from(capacity.saturating_sub(1024) / surb_len.max(1)).unwrap_or(u16::MAX);
        let n_surbs = stream.surbs_for_message(now_ms).min(MAX_BATCH).min(fit);
        let budget = capacity.saturating_sub(usize::from(n_surbs) * surb_len);
        let message = stream.compose(n_surbs, budget, now_ms)?;
        let exit = stream.exit;
        self.streams.touched.insert(key);
        let body = RequestBody::Stream(message.encode());
        Some(self.build_stream_request(key, body, usize::from(n_surbs), exit, now))
    }

    fn build_stream_request(
        &mut self,
        key: RequestId,
        body: RequestBody,
        n_surbs: usize,
        exit: nox_sphinx::NodeId,
        now: Now,
    ) -> Result<Outgoing, ClientError> {
        let built = self.build_request(body, n_surbs, false, Some(exit), now)?;
        let ids: Vec<_> = built.recoveries.iter().map(SurbRecovery::id).collect();
        for recovery in built.recoveries {
            self.surbs.insert(recovery.id(), key, built.gateway, recovery);
        }
        if let Some(stream) = self.streams.map.get_mut(&key) {
            stream.surb_ids.extend(ids);
        }
        self.stats.real_packets += built.packets.len() as u64;
        let mut packets = built.packets.into_iter();
        match (packets.next(), packets.next()) {
            (Some(packet), None) => Ok(packet),
            _ => Err(ClientError::Setup("a stream message must fit one packet".into())),
        }
    }

    /// A reply fragment on one of a stream's SURBs.
    pub(crate) fn stream_reply(&mut self, key: RequestId, fragment: &[u8], now_ms: u64) {
        let Some(stream) = self.streams.map.get_mut(&key) else { return };
        match stream.assembler.accept(fragment, now_ms) {
            Ok(Some(encoded)) => {
                self.stats.replies += 1;
                stream.on_response(&encoded, now_ms);
                self.streams.touched.insert(key);
            }
            Ok(None) => self.stats.replies += 1,
            Err(_) => self.stats.bad_replies += 1,
        }
    }

    /// Runs every stream's timers.
    pub(crate) fn stream_timers(&mut self, now: Now) {
        let now_ms = self.now_ms(now);
        for (key, stream) in self.streams.map.iter_mut() {
            let before = stream.status();
            let backoffs = stream.endpoint.send_half().backoffs();
            stream.on_timer(now_ms);
            if stream.endpoint.send_half().backoffs() > backoffs {
                self.stats.stream_timeouts += 1;
            }
            if stream.status() != before {
                self.streams.touched.insert(*key);
            }
        }
        self.collect_streams();
    }

    /// Drops detached streams that have nothing left to send, with their SURB keys.
    fn collect_streams(&mut self) {
        let done: Vec<RequestId> = self
            .streams
            .detached
            .iter()
            .copied()
            .filter(|k| self.streams.map.get(k).is_none_or(ClientStream::finished))
            .collect();
        for key in done {
            self.streams.detached.remove(&key);
            if let Some(stream) = self.streams.map.remove(&key) {
                for id in &stream.surb_ids {
                    self.surbs.retire(id);
                }
            }
        }
    }
}
