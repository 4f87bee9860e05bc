//! The sending half: a bounded buffer, the peer's window, and
//! retransmission on a timeout measured from acknowledgements
//! (`docs/spec/streams.md` §4): after a timeout, the first unacknowledged
//! segment goes out again, then the next hole on each partial
//! acknowledgement (the receiver keeps what arrived early), until
//! everything sent before the timeout is acknowledged.

use std::collections::VecDeque;

use crate::{Ack, Data, StreamError};

/// Retransmission timer settings, milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtoConfig {
    pub(crate) initial_ms: u64,
    pub(crate) min_ms: u64,
    pub(crate) max_ms: u64,
}

/// One segment in flight, for round-trip samples (Karn: never from a resent one).
#[derive(Clone, Copy, Debug)]
struct Sent {
    end: u64,
    at_ms: u64,
    resent: bool,
}

/// Bytes written by the application until the peer acknowledges them.
#[derive(Debug)]
pub struct SendHalf {
    /// Bytes `[acked, acked + buf.len())`.
    buf: VecDeque<u8>,
    acked: u64,
    /// First byte never sent.
    next: u64,
    /// Bytes `[resend, next)` go out again before any new byte.
    resend: u64,
    capacity: usize,
    peer_window: u64,
    fin: Option<u64>,
    fin_pending: bool,
    fin_sent: bool,
    fin_acked: bool,
    inflight: VecDeque<Sent>,
    srtt_ms: Option<f64>,
    rttvar_ms: f64,
    rto_ms: u64,
    rto: RtoConfig,
    rto_at: Option<u64>,
    backoffs: u32,
    /// After a timeout: `next` when it fired. Until the peer acknowledges
    /// everything below it, only the first unacknowledged segment goes out
    /// again, once per timeout or per acknowledgement that moves (the peer
    /// keeps what arrived early: resending the whole range would spend a
    /// reply per segment it already has).
    recover: Option<u64>,
    /// Segments the recovery may still resend (0 or 1).
    recover_budget: u8,
}

impl SendHalf {
    pub(crate) fn new(capacity: usize, initial_peer_window: u64, rto: RtoConfig) -> Self {
        Self {
            buf: VecDeque::new(),
            acked: 0,
            next: 0,
            resend: 0,
            capacity,
            peer_window: initial_peer_window,
            fin: None,
            fin_pending: false,
            fin_sent: false,
            fin_acked: false,
            inflight: VecDeque::new(),
            srtt_ms: None,
            rttvar_ms: 0.0,
            rto_ms: rto.initial_ms,
            rto,
            rto_at: None,
            backoffs: 0,
            recover: None,
            recover_budget: 0,
        }
    }

    /// Takes as many of `bytes` as the buffer has room for; returns how many.
    /// Nothing after [`Self::finish`].
    pub fn write(&mut self, bytes: &[u8]) -> usize {
        if self.fin.is_some() {
            return 0;
        }
        let n = bytes.len().min(self.room());
        self.buf.extend(&bytes[..n]);
        n
    }

    /// Free buffer space.
    pub fn room(&self) -> usize {
        self.capacity.saturating_sub(self.buf.len())
    }

    /// No more bytes: a FIN follows the last one.
    pub fn finish(&mut self) {
        if self.fin.is_none() {
            self.fin = Some(self.acked + self.buf.len() as u64);
            self.fin_pending = true;
        }
    }

    /// Whether the FIN was sent.
    pub fn finished(&self) -> bool {
        self.fin.is_some()
    }

    /// Whether every byte and the FIN are acknowledged.
    pub fn done(&self) -> bool {
        self.fin_acked
    }

    /// Bytes written and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.buf.len()
    }

    /// Bytes acknowledged so far.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Consecutive timeouts without progress.
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }

    /// The smoothed round-trip time, once measured.
    pub fn srtt_ms(&self) -> Option<f64> {
        self.srtt_ms
    }

    /// When the retransmission timer fires.
    pub fn timer(&self) -> Option<u64> {
        self.rto_at
    }

    /// Whether something is waiting to go out within the window.
    pub fn has_pending(&self) -> bool {
        self.may_resend() || (self.recover.is_none() && self.next < self.sendable_end()) || self.fin_pending
    }

    fn may_resend(&self) -> bool {
        self.resend < self.next && (self.recover.is_none() || self.recover_budget > 0)
    }

    fn sendable_end(&self) -> u64 {
        (self.acked + self.buf.len() as u64).min(self.peer_window)
    }

    fn outstanding(&self) -> bool {
        self.acked < self.next || (self.fin_sent && !self.done())
    }

    /// Applies the peer's acknowledgement.
    pub(crate) fn on_ack(&mut self, ack: Ack, now_ms: u64) -> Result<(), StreamError> {
        let limit = match self.fin {
            Some(fin) if self.fin_sent => fin + 1,
            _ => self.next,
        };
        if ack.offset > limit && ack.offset > self.acked {
            return Err(StreamError::Protocol("acknowledgement of bytes never sent"));
        }
        self.peer_window = self.peer_window.max(ack.window);
        let fin_acked = self.fin_sent && self.fin.is_some_and(|fin| ack.offset == fin + 1);
        if ack.offset <= self.acked || (fin_acked && self.fin_acked) {
            return Ok(());
        }
        self.fin_acked |= fin_acked;
        let data_end = self.acked + self.buf.len() as u64;
        let new_acked = ack.offset.min(data_end);
        self.buf.drain(..(new_acked - self.acked) as usize);
        self.acked = new_acked;
        self.resend = self.resend.max(self.acked.min(self.next));
        match self.recover {
            Some(end) if self.acked < end => {
                // A partial acknowledgement: the next hole goes out now.
                self.resend = self.acked;
                self.recover_budget = 1;
            }
            _ => {
                self.recover = None;
                self.recover_budget = 0;
            }
        }
        while let Some(sent) = self.inflight.front().copied() {
            if sent.end > ack.offset {
                break;
            }
            self.inflight.pop_front();
            if !sent.resent {
                self.sample(now_ms.saturating_sub(sent.at_ms));
            }
        }
        self.backoffs = 0;
        self.rto_at = if self.outstanding() { Some(now_ms + self.rto_ms) } else { None };
        Ok(())
    }

    fn sample(&mut self, rtt: u64) {
        let rtt = rtt as f64;
        match self.srtt_ms {
            None => {
                self.srtt_ms = Some(rtt);
                self.rttvar_ms = rtt / 2.0;
            }
            Some(srtt) => {
                self.rttvar_ms = 0.75 * self.rttvar_ms + 0.25 * (srtt - rtt).abs();
                self.srtt_ms = Some(0.875 * srtt + 0.125 * rtt);
            }
        }
        let rto = self.srtt_ms.unwrap_or(rtt) + 4.0 * self.rttvar_ms;
        self.rto_ms = (rto as u64).clamp(self.rto.min_ms, self.rto.max_ms);
    }

    /// The next segment (at most `max_len` bytes; resent bytes first) and
    /// the FIN offset if the FIN goes with it. `None` when nothing is due.
    pub(crate) fn poll(&mut self, max_len: usize, now_ms: u64) -> Option<(Option<Data>, Option<u64>)> {
        let mut data = None;
        if max_len > 0 {
            if self.may_resend() {
                self.recover_budget = self.recover_budget.saturating_sub(1);
                let len = (self.next - self.resend).min(max_len as u64) as usize;
                data = Some(Data { offset: self.resend, bytes: self.slice(self.resend, len) });
                self.resend += len as u64;
                for sent in self.inflight.iter_mut() {
                    sent.resent = true;
                }
            } else if self.recover.is_none() && self.next < self.sendable_end() {
                let len = (self.sendable_end() - self.next).min(max_len as u64) as usize;
                data = Some(Data { offset: self.next, bytes: self.slice(self.next, len) });
                self.next += len as u64;
                self.resend = self.next;
                self.inflight.push_back(Sent { end: self.next, at_ms: now_ms, resent: false });
            }
        }
        let fin = match self.fin {
            Some(fin) if self.fin_pending && self.resend >= self.next && self.next == fin => {
                self.fin_pending = false;
                self.fin_sent = true;
                Some(fin)
            }
            _ => None,
        };
        if data.is_none() && fin.is_none() {
            return None;
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now_ms + self.rto_ms);
        }
        Some((data, fin))
    }

    fn slice(&self, offset: u64, len: usize) -> Vec<u8> {
        let start = (offset - self.acked) as usize;
        self.buf.range(start..start + len).copied().collect()
    }

    /// Fires the retransmission timer if due: everything unacknowledged goes
    /// out again, and the timeout doubles. Returns whether it fired.
    pub(crate) fn on_timer(&mut self, now_ms: u64) -> bool {
        match self.rto_at {
            Some(at) if at <= now_ms => {}
            _ => return false,
        }
        if !self.outstanding() {
            self.rto_at = None;
            return false;
        }
        self.resend = self.acked.min(self.next);
        self.recover = Some(self.next);
        self.recover_budget = 1;
        if self.fin_sent && !self.fin_acked {
            self.fin_pending = true;
        }
        self.backoffs += 1;
        self.rto_ms = (self.rto_ms.saturating_mul(2)).min(self.rto.max_ms);
        self.rto_at = Some(now_ms + self.rto_ms);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTO: RtoConfig = RtoConfig { initial_ms: 1000, min_ms: 200, max_ms: 8000 };

    fn drain(s: &mut SendHalf, max: usize, now: u64) -> Vec<(Option<Data>, Option<u64>)> {
        std::iter::from_fn(|| s.poll(max, now)).collect()
    }

    #[test]
    fn sends_within_the_window_and_retransmits_on_timeout() {
        let mut s = SendHalf::new(1000, 250, RTO);
        assert_eq!(s.write(&[1u8; 600]), 600);
        let first = drain(&mut s, 100, 0);
        assert_eq!(first.len(), 3, "window 250 → 100 + 100 + 50");
        assert_eq!(first[2].0.as_ref().unwrap().bytes.len(), 50);
        assert!(s.poll(100, 0).is_none());
        s.on_ack(Ack { offset: 100, window: 400 }, 50).unwrap();
        assert_eq!(s.unacked(), 500);
        let more = drain(&mut s, 1000, 60);
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].0.as_ref().unwrap().offset, 250);
        // Nothing acknowledged for the timeout: go back to 100.
        // (one sample of 50 ms: the timeout is the 200 ms floor, from the ack at 50)
        assert!(!s.on_timer(249));
        assert!(s.on_timer(250));
        let again = s.poll(1000, 260).unwrap().0.unwrap();
        assert_eq!((again.offset, again.bytes.len()), (100, 300));
        assert_eq!(s.backoffs(), 1);
    }

    #[test]
    fn fin_is_sent_after_the_data_and_acknowledged_as_one_byte() {
        let mut s = SendHalf::new(100, 1000, RTO);
        s.write(b"abc");
        s.finish();
        assert_eq!(s.write(b"x"), 0);
        let (data, fin) = s.poll(10, 0).unwrap();
        assert_eq!(data.unwrap().bytes, b"abc");
        assert_eq!(fin, Some(3));
        assert!(!s.done());
        s.on_ack(Ack { offset: 3, window: 1000 }, 10).unwrap();
        assert!(!s.done());
        assert!(s.on_timer(10 + 1000), "the FIN is still unacknowledged");
        assert_eq!(s.poll(10, 2000), Some((None, Some(3))));
        s.on_ack(Ack { offset: 4, window: 1000 }, 2100).unwrap();
        assert!(s.done());
        assert!(s.timer().is_none());
    }

    #[test]
    fn acknowledging_unsent_bytes_is_a_violation() {
        let mut s = SendHalf::new(100, 1000, RTO);
        s.write(b"abc");
        assert!(s.on_ack(Ack { offset: 1, window: 10 }, 0).is_err());
        s.poll(2, 0);
        assert!(s.on_ack(Ack { offset: 2, window: 10 }, 0).is_ok());
        assert!(s.on_ack(Ack { offset: 3, window: 10 }, 0).is_err());
    }

    #[test]
    fn round_trip_samples_set_the_timeout() {
        let mut s = SendHalf::new(100, 1000, RTO);
        s.write(&[0; 10]);
        s.poll(10, 0);
        s.on_ack(Ack { offset: 10, window: 1000 }, 100).unwrap();
        assert_eq!(s.srtt_ms(), Some(100.0));
        s.write(&[0; 10]);
        s.poll(10, 200);
        assert_eq!(s.timer(), Some(200 + 300), "srtt 100 + 4 × 50");
    }

    #[test]
    fn windows_never_shrink() {
        let mut s = SendHalf::new(100, 10, RTO);
        s.write(&[0; 50]);
        s.on_ack(Ack { offset: 0, window: 30 }, 0).unwrap();
        s.on_ack(Ack { offset: 0, window: 5 }, 0).unwrap();
        assert_eq!(s.poll(100, 0).unwrap().0.unwrap().bytes.len(), 30);
    }
}
