//! The client's end of streams (docs/spec/streams.md): one
//! [`nox_stream::Endpoint`] per stream, plus what only the client does —
//! opening, and keeping the exit's SURB pool topped up.

use std::collections::VecDeque;
use std::time::Duration;

use nox_message::{REPLY_LIMITS, ReplyAssembler, Response, Status};
use nox_sphinx::{NodeId, SurbId};
use nox_stream::{Endpoint, EndpointConfig, ResetCode, StreamId, StreamMessage, SurbBatch, Target};

/// Settings of the client's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// Buffers, windows and retransmission timers.
    pub endpoint: EndpointConfig,
    /// SURBs the client aims to keep at the exit for a stream (default 96:
    /// about 2 MiB of replies with the default geometry and the exit's
    /// parity, twice the 1 MiB window, so that the pool outlasts the wait
    /// for the next send slot when cover traffic is on).
    pub surb_target: u16,
    /// SURBs sent with the `OPEN` (default 16).
    pub initial_surbs: u16,
    /// Time allowed for the exit's `OPENED` (default 30 s).
    pub open_timeout: Duration,
    /// A stream silent both ways this long sends an acknowledgement and a
    /// SURB, so that an exit that lost the stream says so (default 10 s).
    pub keepalive: Duration,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            endpoint: EndpointConfig::default(),
            surb_target: 96,
            initial_surbs: 16,
            open_timeout: Duration::from_secs(30),
            keepalive: Duration::from_secs(10),
        }
    }
}

/// A SURB batch the exit has not reported within this time is presumed
/// lost (its forward packet was): it no longer counts in the pool estimate.
pub(crate) const BATCH_LOST_MS: u64 = 5_000;

/// What the application sees of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamStatus {
    /// The exit connected to the target.
    pub opened: bool,
    /// Bytes ready to read.
    pub readable: usize,
    /// The peer finished and every byte was read.
    pub eof: bool,
    /// Room in the send buffer.
    pub writable: usize,
    /// Every byte written, and the FIN, acknowledged; the peer's FIN read.
    pub closed: bool,
    /// Why the stream ended early (for an open that failed: the SOCKS reply).
    pub reset: Option<ResetCode>,
}

/// One stream at the client.
pub(crate) struct ClientStream {
    pub(crate) id: StreamId,
    pub(crate) exit: NodeId,
    target: Target,
    pub(crate) endpoint: Endpoint,
    config: StreamConfig,
    opened: bool,
    pub(crate) assembler: ReplyAssembler,
    /// Every SURB issued for the stream (retired when it ends).
    pub(crate) surb_ids: Vec<SurbId>,
    next_seq: u32,
    exit_held: u16,
    seen_seq: u32,
    /// Batches sent that the exit had not reported by its last `POOL`.
    batches: VecDeque<(SurbBatch, u64)>,
    open_due: Option<u64>,
    open_deadline: u64,
    open_backoff: u64,
    last_heard: u64,
    last_sent: u64,
    reset_to_send: Option<ResetCode>,
}

impl ClientStream {
    pub(crate) fn new(
        id: StreamId,
        exit: NodeId,
        target: Target,
        config: StreamConfig,
        now_ms: u64,
    ) -> Result<Self, nox_message::MessageError> {
        Ok(Self {
            id,
            exit,
            target,
            endpoint: Endpoint::new(config.endpoint),
            config,
            opened: false,
            assembler: ReplyAssembler::new(REPLY_LIMITS)?,
            surb_ids: Vec::new(),
            next_seq: 1,
            exit_held: 0,
            seen_seq: 0,
            batches: VecDeque::new(),
            open_due: Some(now_ms),
            open_deadline: now_ms + config.open_timeout.as_millis() as u64,
            open_backoff: config.endpoint.initial_rto_ms,
            last_heard: now_ms,
            last_sent: now_ms,
            reset_to_send: None,
        })
    }

    pub(crate) fn status(&self) -> StreamStatus {
        StreamStatus {
            opened: self.opened,
            readable: self.endpoint.recv_half().readable(),
            eof: self.endpoint.recv_half().at_eof(),
            writable: if self.opened && self.endpoint.reset_code().is_none() {
                self.endpoint.send_half().room()
            } else {
                0
            },
            closed: self.endpoint.closed(),
            reset: self.endpoint.reset_code(),
        }
    }

    /// SURBs at the exit by the client's estimate: the last reported pool
    /// plus the batches sent since that the exit had not seen — except
    /// batches unseen for [`BATCH_LOST_MS`], presumed lost (otherwise a lost
    /// batch would hold the estimate up and no top-up would ever replace it).
    pub(crate) fn pool_estimate(&self, now_ms: u64) -> u32 {
        let in_flight = self
            .batches
            .iter()
            .filter(|(_, sent)| now_ms < sent + BATCH_LOST_MS)
            .map(|(b, _)| u32::from(b.count))
            .sum::<u32>();
        u32::from(self.exit_held) + in_flight
    }

    /// SURBs the stream wants sent (0 when the pool is fine; 1 with a
    /// keepalive, for the exit's answer): a reason to send a message.
    pub(crate) fn surbs_wanted(&self, now_ms: u64) -> u16 {
        if self.ended() {
            return 0;
        }
        if self.open_due.is_some() {
            return if self.next_seq == 1 { self.config.initial_surbs } else { 2 };
        }
        let estimate = self.pool_estimate(now_ms);
        let target = u32::from(self.config.surb_target);
        if estimate * 2 < target {
            u16::try_from(target - estimate).unwrap_or(u16::MAX)
        } else {
            u16::from(self.keepalive_due(now_ms))
        }
    }

    /// SURBs for a message that goes anyway: the pool is refilled to its
    /// target (a send slot costs a whole packet, SURBs or not), and at least
    /// one SURB goes while retransmitting (the exit may have lost the stream:
    /// it needs a SURB to say so). Not itself a reason to send.
    pub(crate) fn surbs_for_message(&self, now_ms: u64) -> u16 {
        if self.ended() || self.open_due.is_some() {
            return self.surbs_wanted(now_ms);
        }
        let deficit = u32::from(self.config.surb_target).saturating_sub(self.pool_estimate(now_ms));
        let retrying = self.endpoint.send_half().backoffs() > 0;
        self.surbs_wanted(now_ms).max(u16::try_from(deficit).unwrap_or(u16::MAX)).max(u16::from(retrying))
    }

    fn ended(&self) -> bool {
        self.endpoint.reset_code().is_some() || self.endpoint.closed()
    }

    /// Whether a message is owed now: the `OPEN` (or its retry), data, an
    /// acknowledgement, a FIN, a top-up, a keepalive or a reset.
    pub(crate) fn wants_message(&self, now_ms: u64) -> bool {
        if self.reset_to_send.is_some() {
            return true;
        }
        if self.ended() {
            return false;
        }
        if self.open_due.is_some_and(|at| at <= now_ms) {
            return true;
        }
        if !self.opened {
            return false;
        }
        self.endpoint.has_pending()
            || self.endpoint.next_wakeup().is_some_and(|at| at <= now_ms) && self.endpoint.ack_owed()
            || self.surbs_wanted(now_ms) > 0
    }

    fn keepalive_due(&self, now_ms: u64) -> bool {
        let keepalive = self.config.keepalive.as_millis() as u64;
        self.opened && now_ms >= self.last_heard + keepalive && now_ms >= self.last_sent + keepalive
    }

    /// The next message, with a batch of `n_surbs` SURBs (already decided by
    /// [`Self::surbs_wanted`]) and at most `budget` encoded bytes.
    pub(crate) fn compose(&mut self, n_surbs: u16, budget: usize, now_ms: u64) -> Option<StreamMessage> {
        let mut message = StreamMessage::new(self.id);
        if let Some(code) = self.reset_to_send.take() {
            message.reset = Some(code);
            return Some(message);
        }
        if self.ended() {
            return None;
        }
        let opening = self.open_due.is_some_and(|at| at <= now_ms);
        if opening {
            message.open = Some(self.target.clone());
            self.open_due = Some(now_ms + self.open_backoff);
            self.open_backoff = (self.open_backoff * 2).min(self.config.endpoint.max_rto_ms);
        }
        if n_surbs > 0 {
            let batch = SurbBatch { seq: self.next_seq, count: n_surbs };
            self.next_seq += 1;
            self.batches.push_back((batch, now_ms));
            message.surbs = Some(batch);
        }
        // Room for data beside every frame the endpoint may add (ACK, FIN).
        let mut template = message.clone();
        template.ack = Some(nox_stream::Ack { offset: 0, window: 0 });
        template.fin = Some(0);
        let room = if self.opened { template.data_room(budget) } else { 0 };
        match self.endpoint.poll(room, now_ms) {
            Some(out) => out.apply(&mut message),
            None if opening || n_surbs > 0 || self.keepalive_due(now_ms) => message.ack = Some(self.endpoint.ack_now()),
            None => return None,
        }
        self.last_sent = now_ms;
        Some(message)
    }

    /// Handles a reply (an encoded response) on one of the stream's SURBs.
    pub(crate) fn on_response(&mut self, encoded: &[u8], now_ms: u64) {
        self.last_heard = now_ms;
        let message = match Response::decode(encoded) {
            Ok(response) if response.status == Status::Ok => StreamMessage::decode(&response.body),
            Ok(_) | Err(_) => {
                // An exit without streams, or a reply that is not a stream message.
                self.endpoint.reset(ResetCode::General);
                return;
            }
        };
        let message = match message {
            Ok(m) if m.id == self.id => m,
            _ => {
                self.fail(ResetCode::Protocol);
                return;
            }
        };
        if let Some(pool) = message.pool {
            // Replies overtake each other (each SURB has its own path): a
            // report that has seen a newer batch replaces the estimate; among
            // reports of the same batch the pool only shrinks, so the smallest
            // is the latest; an older report is ignored.
            if pool.seen_seq > self.seen_seq {
                self.exit_held = pool.held;
                self.seen_seq = pool.seen_seq;
            } else if pool.seen_seq == self.seen_seq {
                self.exit_held = self.exit_held.min(pool.held);
            }
            let seen = self.seen_seq;
            self.batches.retain(|(b, _)| b.seq > seen);
        }
        if message.reset.is_none() && !self.opened {
            // `OPENED`, or any frame after it whose `OPENED` was lost: the exit
            // sends nothing before it has connected.
            self.opened = true;
            self.open_due = None;
        }
        if let Err(_violation) = self.endpoint.on_message(&message, now_ms) {
            self.fail(ResetCode::Protocol);
        }
    }

    /// Aborts: the stream is reset here and a `RESET` goes to the exit.
    pub(crate) fn fail(&mut self, code: ResetCode) {
        if self.endpoint.reset_code().is_none() {
            self.endpoint.reset(code);
            self.reset_to_send = Some(code);
        }
    }

    /// Runs timers: the open deadline, the endpoint's retransmission.
    pub(crate) fn on_timer(&mut self, now_ms: u64) {
        if !self.opened && self.endpoint.reset_code().is_none() && now_ms >= self.open_deadline {
            self.fail(ResetCode::Timeout);
        }
        self.endpoint.on_timer(now_ms);
    }

    /// When [`Self::on_timer`] or [`Self::compose`] next has work.
    pub(crate) fn next_wakeup(&self) -> Option<u64> {
        if self.reset_to_send.is_some() {
            return Some(0);
        }
        if self.ended() {
            return None;
        }
        let keepalive = self.config.keepalive.as_millis() as u64;
        let keepalive = self.opened.then(|| self.last_heard.max(self.last_sent) + keepalive);
        let open = (!self.opened).then_some(self.open_deadline);
        [self.endpoint.next_wakeup(), self.open_due, keepalive, open].into_iter().flatten().min()
    }

    /// Whether the stream can be forgotten: ended, and no reset left to send.
    pub(crate) fn finished(&self) -> bool {
        self.ended() && self.reset_to_send.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> ClientStream {
        let target = Target { host: "example.org".into(), port: 443 };
        let config = StreamConfig { surb_target: 48, ..StreamConfig::default() };
        ClientStream::new(StreamId([1; 16]), NodeId([2; 32]), target, config, 0).unwrap()
    }

    fn reply(s: &ClientStream, f: impl FnOnce(&mut StreamMessage)) -> Vec<u8> {
        let mut m = StreamMessage::new(s.id);
        f(&mut m);
        Response::ok(m.encode()).encode()
    }

    #[test]
    fn open_carries_the_first_batch_and_is_retried_until_opened() {
        let mut s = stream();
        assert!(s.wants_message(0));
        assert_eq!(s.surbs_wanted(0), 16);
        let open = s.compose(16, 30_000, 0).unwrap();
        assert_eq!(open.open.as_ref().unwrap().port, 443);
        assert_eq!(open.surbs, Some(SurbBatch { seq: 1, count: 16 }));
        assert!(open.data.is_none());
        assert!(!s.wants_message(10));
        assert!(s.wants_message(3_000), "OPEN retried after the first timeout");
        assert_eq!(s.surbs_wanted(3_000), 2);
        let again = s.compose(2, 30_000, 3_000).unwrap();
        assert!(again.open.is_some());
        s.on_response(
            &reply(&s, |m| {
                m.opened = true;
                m.pool = Some(nox_stream::Pool { held: 15, seen_seq: 2 });
            }),
            3_100,
        );
        assert!(s.status().opened);
        assert_eq!(s.pool_estimate(3_100), 15);
        assert!(s.status().writable > 0);
    }

    #[test]
    fn pool_estimate_counts_unseen_batches_and_tops_up_below_half() {
        let mut s = stream();
        s.compose(16, 30_000, 0);
        s.on_response(
            &reply(&s, |m| {
                m.opened = true;
                m.pool = Some(nox_stream::Pool { held: 30, seen_seq: 1 });
            }),
            5,
        );
        assert_eq!(s.surbs_wanted(5), 0);
        s.on_response(&reply(&s, |m| m.pool = Some(nox_stream::Pool { held: 20, seen_seq: 1 })), 6);
        assert_eq!(s.surbs_wanted(6), 28);
        let top_up = s.compose(28, 30_000, 7).unwrap();
        assert_eq!(top_up.surbs.unwrap().seq, 2);
        assert_eq!(s.pool_estimate(7), 48);
        s.on_response(&reply(&s, |m| m.pool = Some(nox_stream::Pool { held: 10, seen_seq: 1 })), 8);
        assert_eq!(s.pool_estimate(8), 38, "batch 2 is still on its way");
        // An older report of the same batch (overtaken on the way) does not raise the estimate.
        s.on_response(&reply(&s, |m| m.pool = Some(nox_stream::Pool { held: 19, seen_seq: 1 })), 8);
        assert_eq!(s.pool_estimate(8), 38);
        s.on_response(&reply(&s, |m| m.pool = Some(nox_stream::Pool { held: 30, seen_seq: 2 })), 9);
        assert_eq!(s.pool_estimate(9), 30);
        // A report of an older batch after a newer one is ignored.
        s.on_response(&reply(&s, |m| m.pool = Some(nox_stream::Pool { held: 44, seen_seq: 1 })), 9);
        assert_eq!(s.pool_estimate(9), 30);
        // Above half the target: no reason to send, but a message that goes
        // anyway refills the pool to the target.
        assert_eq!(s.surbs_wanted(10), 0);
        assert_eq!(s.surbs_for_message(10), 18);
        // A batch the exit never reports (its packet was lost) stops counting.
        let lost = s.compose(18, 30_000, 20).unwrap();
        assert_eq!(lost.surbs.unwrap().seq, 3);
        assert_eq!(s.pool_estimate(20), 48);
        assert_eq!(s.pool_estimate(20 + BATCH_LOST_MS), 30);
        assert_eq!(s.surbs_for_message(20 + BATCH_LOST_MS), 18);
    }

    #[test]
    fn a_failed_open_reports_the_socks_code_and_a_timeout_resets() {
        let mut s = stream();
        s.compose(16, 30_000, 0);
        s.on_response(&reply(&s, |m| m.reset = Some(ResetCode::Forbidden)), 50);
        assert_eq!(s.status().reset, Some(ResetCode::Forbidden));
        assert!(!s.status().opened);
        assert!(s.finished());

        let mut t = stream();
        t.compose(16, 30_000, 0);
        t.on_timer(30_000);
        assert_eq!(t.status().reset, Some(ResetCode::Timeout));
        assert!(t.compose(0, 30_000, 30_000).unwrap().reset.is_some(), "the exit is told");
        assert!(t.finished());
    }

    #[test]
    fn a_non_stream_reply_ends_the_stream() {
        let mut s = stream();
        s.compose(16, 30_000, 0);
        s.on_response(&Response::error(Status::Unsupported, "no streams").encode(), 10);
        assert_eq!(s.status().reset, Some(ResetCode::General));
        let mut t = stream();
        t.compose(16, 30_000, 0);
        let mut other = StreamMessage::new(StreamId([9; 16]));
        other.opened = true;
        t.on_response(&Response::ok(other.encode()).encode(), 10);
        assert_eq!(t.status().reset, Some(ResetCode::Protocol));
    }

    #[test]
    fn a_composed_message_never_exceeds_its_budget() {
        for budget in [200usize, 1000, 4000, 30_000] {
            let mut s = stream();
            s.compose(16, budget, 0);
            let opened = reply(&s, |m| {
                m.opened = true;
                m.pool = Some(nox_stream::Pool { held: 40, seen_seq: 1 });
            });
            s.on_response(&opened, 10);
            s.endpoint.write(&vec![1; 100_000]);
            s.endpoint.finish();
            let mut now = 20;
            while let Some(message) = s.compose(0, budget, now) {
                assert!(message.encoded_len() <= budget, "{} > {budget}", message.encoded_len());
                now += 1;
                if message.data.is_none() {
                    break;
                }
            }
        }
    }

    #[test]
    fn a_retransmission_carries_a_surb_but_does_not_spin() {
        let mut s = stream();
        s.compose(16, 30_000, 0);
        let opened = reply(&s, |m| {
            m.opened = true;
            m.pool = Some(nox_stream::Pool { held: 40, seen_seq: 1 });
        });
        s.on_response(&opened, 10);
        s.endpoint.write(b"unacknowledged");
        assert!(s.compose(s.surbs_for_message(20), 30_000, 20).unwrap().data.is_some());
        assert!(!s.wants_message(21));
        let rto = s.next_wakeup().unwrap();
        s.on_timer(rto);
        assert!(s.wants_message(rto), "the timeout resends");
        assert_eq!(s.surbs_wanted(rto), 0);
        assert_eq!(s.surbs_for_message(rto), 1, "the exit may have lost the stream");
        let resent = s.compose(1, 30_000, rto).unwrap();
        assert_eq!(resent.data.unwrap().bytes, b"unacknowledged");
        assert!(!s.wants_message(rto), "nothing more until the next timeout");
    }

    #[test]
    fn a_silent_open_stream_sends_a_keepalive() {
        let mut s = stream();
        s.compose(16, 30_000, 0);
        s.on_response(
            &reply(&s, |m| {
                m.opened = true;
                m.pool = Some(nox_stream::Pool { held: 40, seen_seq: 1 });
            }),
            100,
        );
        assert!(!s.wants_message(5_000));
        assert_eq!(s.next_wakeup(), Some(10_100));
        assert!(s.wants_message(10_100));
        assert_eq!(s.surbs_wanted(10_100), 1, "a keepalive carries a SURB for the exit's answer");
        let keepalive = s.compose(1, 30_000, 10_100).unwrap();
        assert!(keepalive.ack.is_some());
        assert_eq!(keepalive.surbs.unwrap().count, 1);
    }
}
