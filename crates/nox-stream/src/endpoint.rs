//! One end of a stream: both halves, when to acknowledge, when to give up.
//! The same code runs at the client and at the exit; what differs (SURB
//! pools, opening) is the callers'.

use crate::send::RtoConfig;
use crate::{Ack, Data, RecvHalf, ResetCode, SendHalf, StreamError, StreamMessage};

/// Bytes a sender may send before the peer's first acknowledgement; every
/// receiver accepts at least this much (docs/spec/streams.md §4).
pub const INITIAL_WINDOW: u64 = 64 << 10;

/// Settings of an [`Endpoint`]; all times in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Bytes the application may write before the peer acknowledges them.
    pub send_capacity: usize,
    /// Bytes received and not yet read that the peer may have in flight (the window).
    pub recv_capacity: u64,
    /// The peer's window before its first acknowledgement; at most
    /// [`INITIAL_WINDOW`], the protocol's (a larger value is cut to it).
    pub initial_peer_window: u64,
    /// First retransmission timeout, before any round trip is measured.
    pub initial_rto_ms: u64,
    /// Lower bound of the retransmission timeout.
    pub min_rto_ms: u64,
    /// Upper bound of the retransmission timeout.
    pub max_rto_ms: u64,
    /// Longest wait before acknowledging new bytes (acks are coalesced).
    pub ack_delay_ms: u64,
    /// Consecutive timeouts without progress after which the peer is
    /// considered gone and the stream is reset.
    pub max_backoffs: u32,
}

impl Default for EndpointConfig {
    /// 1 MiB each way (64 KiB before the peer's first acknowledgement), a 3 s first timeout within [0.5 s, 16 s], acks within
    /// 30 ms, reset after 5 timeouts in a row (about a minute of silence).
    fn default() -> Self {
        Self {
            send_capacity: 1 << 20,
            recv_capacity: 1 << 20,
            initial_peer_window: INITIAL_WINDOW,
            initial_rto_ms: 3_000,
            min_rto_ms: 500,
            max_rto_ms: 16_000,
            ack_delay_ms: 30,
            max_backoffs: 5,
        }
    }
}

/// What to put in the next message: always the acknowledgement; data and
/// FIN when due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    /// Acknowledgement and window.
    pub ack: Ack,
    /// Bytes to send (new, or resent).
    pub data: Option<Data>,
    /// The FIN, if it goes now.
    pub fin: Option<u64>,
}

impl Outbound {
    /// Copies the frames into `message`.
    pub fn apply(self, message: &mut StreamMessage) {
        message.ack = Some(self.ack);
        message.data = self.data;
        message.fin = self.fin;
    }
}

/// One end of a stream.
#[derive(Debug)]
pub struct Endpoint {
    send: SendHalf,
    recv: RecvHalf,
    config: EndpointConfig,
    /// The acknowledgement last sent.
    told: Ack,
    ack_due: Option<u64>,
    reset: Option<ResetCode>,
}

impl Endpoint {
    /// A fresh endpoint.
    pub fn new(config: EndpointConfig) -> Self {
        let rto = RtoConfig { initial_ms: config.initial_rto_ms, min_ms: config.min_rto_ms, max_ms: config.max_rto_ms };
        // Both ends rely on the protocol's initial window: never send more
        // before the first acknowledgement, always accept at least that much.
        let recv = RecvHalf::new(config.recv_capacity.max(INITIAL_WINDOW));
        let told = recv.ack();
        Self {
            send: SendHalf::new(config.send_capacity, config.initial_peer_window.min(INITIAL_WINDOW), rto),
            recv,
            config,
            told,
            ack_due: None,
            reset: None,
        }
    }

    /// The sending half (read-only).
    pub fn send_half(&self) -> &SendHalf {
        &self.send
    }

    /// The receiving half (read-only).
    pub fn recv_half(&self) -> &RecvHalf {
        &self.recv
    }

    /// Takes application bytes; returns how many fitted.
    pub fn write(&mut self, bytes: &[u8]) -> usize {
        if self.reset.is_some() { 0 } else { self.send.write(bytes) }
    }

    /// The application will write no more.
    pub fn finish(&mut self) {
        self.send.finish();
    }

    /// Reads up to `max` bytes. Opening the window by half of it after the
    /// peer may have run into it schedules a window update.
    pub fn read(&mut self, max: usize, now_ms: u64) -> Vec<u8> {
        let bytes = self.recv.read(max);
        let window = self.recv.window();
        let told_room = self.told.window.saturating_sub(self.recv.received());
        if told_room < self.config.recv_capacity / 2 && window - self.told.window >= self.config.recv_capacity / 2 {
            self.ack_due = Some(now_ms);
        }
        bytes
    }

    /// Handles the peer's frames (the caller handles `open`, `opened`,
    /// `surbs`, `pool`). A reset from the peer ends the stream; a protocol
    /// violation is returned and the caller resets.
    pub fn on_message(&mut self, message: &StreamMessage, now_ms: u64) -> Result<(), StreamError> {
        if let Some(code) = message.reset {
            self.reset.get_or_insert(code);
            return Ok(());
        }
        if let Some(ack) = message.ack {
            self.send.on_ack(ack, now_ms)?;
        }
        let mut fresh = false;
        let mut duplicate = false;
        if let Some(data) = &message.data {
            let new = self.recv.on_data(data.offset, &data.bytes)?;
            fresh |= new;
            duplicate |= !new;
        }
        if let Some(fin) = message.fin {
            let new = self.recv.on_fin(fin)?;
            fresh |= new;
            duplicate |= !new;
        }
        if duplicate {
            // The peer resent: our acknowledgement was lost. Say it again now.
            self.ack_due = Some(now_ms);
        } else if fresh {
            let due = now_ms + self.config.ack_delay_ms;
            self.ack_due = Some(self.ack_due.map_or(due, |at| at.min(due)));
        }
        Ok(())
    }

    /// The next message's frames, with at most `max_data` bytes of data;
    /// `None` when nothing is due (no data, no FIN, no acknowledgement owed).
    pub fn poll(&mut self, max_data: usize, now_ms: u64) -> Option<Outbound> {
        if self.reset.is_some() {
            return None;
        }
        let ack = self.recv.ack();
        let ack_owed = self.ack_due.is_some_and(|at| at <= now_ms);
        let (data, fin) = self.send.poll(max_data, now_ms).unwrap_or((None, None));
        if data.is_none() && fin.is_none() && !ack_owed {
            return None;
        }
        self.told = ack;
        self.ack_due = None;
        Some(Outbound { ack, data, fin })
    }

    /// The acknowledgement as it stands, for a message sent for another
    /// reason (a SURB top-up); counts as sent.
    pub fn ack_now(&mut self) -> Ack {
        self.told = self.recv.ack();
        self.ack_due = None;
        self.told
    }

    /// Whether an acknowledgement is owed (now or later).
    pub fn ack_owed(&self) -> bool {
        self.ack_due.is_some()
    }

    /// Whether data or a FIN waits to be sent within the peer's window.
    pub fn has_pending(&self) -> bool {
        self.reset.is_none() && self.send.has_pending()
    }

    /// The earliest time [`Self::on_timer`] or [`Self::poll`] has work.
    pub fn next_wakeup(&self) -> Option<u64> {
        if self.reset.is_some() {
            return None;
        }
        [self.send.timer(), self.ack_due].into_iter().flatten().min()
    }

    /// Runs the retransmission timer. After `max_backoffs` timeouts in a
    /// row the peer is gone: the stream is reset with [`ResetCode::Idle`].
    pub fn on_timer(&mut self, now_ms: u64) {
        if self.reset.is_none() && self.send.on_timer(now_ms) && self.send.backoffs() > self.config.max_backoffs {
            self.reset = Some(ResetCode::Idle);
        }
    }

    /// Aborts the stream locally.
    pub fn reset(&mut self, code: ResetCode) {
        self.reset.get_or_insert(code);
    }

    /// Why the stream was reset, if it was.
    pub fn reset_code(&self) -> Option<ResetCode> {
        self.reset
    }

    /// Both directions finished: every byte and both FINs acknowledged
    /// (ours by the peer, theirs by us), and nothing left to read.
    pub fn closed(&self) -> bool {
        self.send.done() && self.recv.at_eof() && self.told.offset == self.recv.ack().offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamId;

    fn carry(from: &mut Endpoint, to: &mut Endpoint, max: usize, now: u64) -> usize {
        let mut n = 0;
        while let Some(out) = from.poll(max, now) {
            let mut m = StreamMessage::new(StreamId([0; 16]));
            out.apply(&mut m);
            to.on_message(&m, now).unwrap();
            n += 1;
        }
        n
    }

    #[test]
    fn a_lossless_exchange_closes_both_ends() {
        let config = EndpointConfig { ack_delay_ms: 0, ..EndpointConfig::default() };
        let (mut a, mut b) = (Endpoint::new(config), Endpoint::new(config));
        a.write(b"request");
        a.finish();
        carry(&mut a, &mut b, 4, 0);
        assert_eq!(b.read(100, 0), b"request");
        assert!(b.recv_half().at_eof());
        b.write(b"response");
        b.finish();
        for t in 1..5 {
            carry(&mut b, &mut a, 1000, t);
            carry(&mut a, &mut b, 1000, t);
        }
        assert_eq!(a.read(100, 10), b"response");
        carry(&mut a, &mut b, 1000, 20);
        carry(&mut b, &mut a, 1000, 20);
        assert!(a.closed(), "{a:?}");
        assert!(b.closed(), "{b:?}");
    }

    #[test]
    fn a_silent_peer_resets_the_stream() {
        let mut a = Endpoint::new(EndpointConfig::default());
        a.write(b"x");
        let mut now = 0;
        a.poll(10, now);
        for _ in 0..10 {
            let Some(at) = a.next_wakeup() else { break };
            now = at;
            a.on_timer(now);
            a.poll(10, now);
        }
        assert_eq!(a.reset_code(), Some(ResetCode::Idle));
        assert_eq!(a.write(b"y"), 0);
    }

    #[test]
    fn a_duplicate_makes_the_ack_due_at_once() {
        let (mut a, mut b) = (Endpoint::new(EndpointConfig::default()), Endpoint::new(EndpointConfig::default()));
        a.write(b"abc");
        let out = a.poll(10, 0).unwrap();
        let mut m = StreamMessage::new(StreamId([0; 16]));
        out.apply(&mut m);
        b.on_message(&m, 0).unwrap();
        assert_eq!(b.next_wakeup(), Some(30));
        b.poll(10, 30).unwrap();
        b.on_message(&m, 40).unwrap();
        assert_eq!(b.next_wakeup(), Some(40));
    }
    /// Every third message one way lost, time driven explicitly (the exit
    /// test's `lose_every = 3`). Going back N on a timeout resent all 30
    /// segments from the first hole, and 30 ≡ 0 (mod 3): the first hole was
    /// lost again on every round, the acknowledgement never moved, and the
    /// sender gave up after `max_backoffs` (stuck at 3,800 of 60,000 bytes).
    /// Resending one segment per timeout or partial acknowledgement gets
    /// through, and spends one reply per hole, not one per segment.
    #[test]
    fn every_third_message_lost_one_way_still_delivers_and_closes() {
        let config = EndpointConfig {
            initial_rto_ms: 300,
            min_rto_ms: 50,
            max_rto_ms: 1_600,
            max_backoffs: 12,
            ..EndpointConfig::default()
        };
        let (mut exit, mut client) = (Endpoint::new(config), Endpoint::new(config));
        let payload: Vec<u8> = (0..60_000u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(exit.write(&payload), payload.len());
        exit.finish();
        let (mut got, mut sent) = (Vec::new(), 0usize);
        let mut now = 0;
        while !(exit.send_half().done() && client.recv_half().at_eof()) {
            assert!(now < 60_000, "stalled at {} of {}", got.len(), payload.len());
            exit.on_timer(now);
            assert_eq!(exit.reset_code(), None, "at {now} ms, {} of {} delivered", got.len(), payload.len());
            while let Some(out) = exit.poll(1_900, now) {
                sent += 1;
                if sent % 3 != 0 {
                    let mut m = StreamMessage::new(StreamId([0; 16]));
                    out.apply(&mut m);
                    client.on_message(&m, now).unwrap();
                }
            }
            got.extend(client.read(usize::MAX, now));
            carry(&mut client, &mut exit, 1_000, now);
            now += 10;
        }
        assert_eq!(got, payload);
    }
}
