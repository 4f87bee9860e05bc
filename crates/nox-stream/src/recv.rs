//! The receiving half: reorders segments (the mixnet delays each packet
//! independently), enforces the window it advertised, and remembers the FIN.

use std::collections::{BTreeMap, VecDeque};

use crate::{Ack, StreamError, wire::end_of};

/// Bytes received from the peer until the application reads them.
#[derive(Debug)]
pub struct RecvHalf {
    /// Every byte below has arrived.
    next: u64,
    /// Bytes handed to the application.
    read: u64,
    /// Bytes `[read, next)`.
    ready: VecDeque<u8>,
    /// Segments beyond `next`, by offset.
    early: BTreeMap<u64, Vec<u8>>,
    early_bytes: usize,
    capacity: u64,
    fin: Option<u64>,
}

impl RecvHalf {
    pub(crate) fn new(capacity: u64) -> Self {
        Self { next: 0, read: 0, ready: VecDeque::new(), early: BTreeMap::new(), early_bytes: 0, capacity, fin: None }
    }

    /// The peer may send bytes below this offset.
    pub fn window(&self) -> u64 {
        self.read + self.capacity
    }

    /// What to acknowledge: every byte below `next`, plus one for a FIN
    /// that every byte before has reached.
    pub fn ack(&self) -> Ack {
        let fin = u64::from(self.fin == Some(self.next));
        Ack { offset: self.next + fin, window: self.window() }
    }

    /// Bytes ready for the application.
    pub fn readable(&self) -> usize {
        self.ready.len()
    }

    /// Bytes received in order so far.
    pub fn received(&self) -> u64 {
        self.next
    }

    /// Whether every byte up to the FIN has arrived.
    pub fn finished(&self) -> bool {
        self.fin == Some(self.next)
    }

    /// Whether the application has read everything up to the FIN.
    pub fn at_eof(&self) -> bool {
        self.finished() && self.ready.is_empty()
    }

    /// Takes up to `max` ready bytes.
    pub fn read(&mut self, max: usize) -> Vec<u8> {
        let n = max.min(self.ready.len());
        self.read += n as u64;
        self.ready.drain(..n).collect()
    }

    /// Accepts a segment; returns whether it carried new bytes. Bytes beyond
    /// the advertised window or the FIN break the protocol.
    pub(crate) fn on_data(&mut self, offset: u64, bytes: &[u8]) -> Result<bool, StreamError> {
        let end = end_of(offset, bytes.len())?;
        if end > self.window() {
            return Err(StreamError::Protocol("data beyond the advertised window"));
        }
        if self.fin.is_some_and(|fin| end > fin) {
            return Err(StreamError::Protocol("data beyond the FIN"));
        }
        if end <= self.next {
            return Ok(false);
        }
        if offset > self.next {
            let longer = self.early.get(&offset).is_none_or(|have| have.len() < bytes.len());
            // The window bounds every segment; duplicates of differing lengths
            // are bounded by keeping at most twice the window early.
            if longer && self.early_bytes + bytes.len() <= 2 * self.capacity as usize {
                if let Some(old) = self.early.insert(offset, bytes.to_vec()) {
                    self.early_bytes -= old.len();
                }
                self.early_bytes += bytes.len();
                return Ok(true);
            }
            return Ok(false);
        }
        self.append(offset, bytes);
        while let Some(entry) = self.early.first_entry() {
            if *entry.key() > self.next {
                break;
            }
            let (at, segment) = entry.remove_entry();
            self.early_bytes -= segment.len();
            self.append(at, &segment);
        }
        Ok(true)
    }

    /// Appends the part of a segment starting at or before `next` that lies beyond it.
    fn append(&mut self, offset: u64, bytes: &[u8]) {
        let skip = (self.next - offset) as usize;
        if let Some(new) = bytes.get(skip..) {
            self.ready.extend(new);
            self.next += new.len() as u64;
        }
    }

    /// Records the peer's FIN; returns whether it is new.
    pub(crate) fn on_fin(&mut self, offset: u64) -> Result<bool, StreamError> {
        match self.fin {
            Some(fin) if fin == offset => Ok(false),
            Some(_) => Err(StreamError::Protocol("the FIN moved")),
            None if offset < self.next
                || offset < self.early.last_key_value().map_or(0, |(k, v)| k + v.len() as u64) =>
            {
                Err(StreamError::Protocol("FIN before bytes already sent"))
            }
            None if offset > self.window() => Err(StreamError::Protocol("FIN beyond the advertised window")),
            None => {
                self.fin = Some(offset);
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_and_drops_duplicates() {
        let mut r = RecvHalf::new(100);
        assert!(r.on_data(5, b"fghij").unwrap());
        assert_eq!(r.readable(), 0);
        assert_eq!(r.ack().offset, 0);
        assert!(r.on_data(0, b"abcdefg").unwrap());
        assert_eq!(r.ack().offset, 10);
        assert!(!r.on_data(2, b"cd").unwrap());
        assert_eq!(r.read(100), b"abcdefghij");
        assert_eq!(r.window(), 110);
    }

    #[test]
    fn window_and_fin_are_enforced() {
        let mut r = RecvHalf::new(10);
        assert!(r.on_data(5, b"123456").is_err());
        r.on_data(0, b"12345").unwrap();
        assert_eq!(r.read(3), b"123");
        assert!(r.on_data(5, b"12345678").is_ok(), "window is now 13");
        assert!(r.on_fin(12).is_err(), "FIN below bytes received");
        r.on_fin(13).unwrap();
        assert!(r.on_fin(14).is_err());
        assert!(r.on_data(13, b"x").is_err());
        assert!(r.finished());
        assert_eq!(r.ack().offset, 14);
        assert!(!r.at_eof());
        r.read(100);
        assert!(r.at_eof());
    }

    #[test]
    fn fin_waits_for_missing_bytes() {
        let mut r = RecvHalf::new(100);
        r.on_data(3, b"def").unwrap();
        r.on_fin(6).unwrap();
        assert!(!r.finished());
        assert_eq!(r.ack().offset, 0);
        r.on_data(0, b"abc").unwrap();
        assert!(r.finished());
        assert_eq!(r.ack().offset, 7);
    }
}
