//! `[observe]`: **measurement only, off by default.** Records, for every packet this node sends
//! after mixing (and every cover packet it originates), what a global passive adversary (GPA) would see on the wire — the time, this
//! node and the next node (or "a destination" for an exit delivery) — so that
//! `nox bench anonymity` can score anonymity from the real testnet. A second, separate file
//! holds the ground truth the scorer uses only to grade the adversary: how long each packet was
//! held here and the first 16 bytes of each delivered payload (the harness's message id).
//!
//! Never enable this on a production node: it writes a timing log of all traffic. It is
//! therefore not in the production binary at all: the [`Observer`] that writes the log exists
//! only with the `observe` cargo feature (benchmark builds: `scripts/bench/anonymity.sh` builds
//! `nox` with `--features observe`). Without it, [`Observer`] is an empty enum (no value can
//! exist, so every recording call is dead code) and a configuration with `[observe]` is refused
//! ([`COMPILED_IN`], [`NOT_BUILT`]). The record types and parsers below are always built: the
//! benchmark harness reads logs with them.
//!
//! Records go through a bounded channel to a writer thread; when the channel is full the
//! record is dropped and counted (the pipeline never blocks on the disk).
//!
//! Formats (one record per line, text):
//! - events: `F <time_us> <from> <to>` (forward) and `D <time_us> <from> <seq>` (exit delivery);
//! - truth: `F <time_us> <held_us>`, `C <time_us>` (a cover packet this node originated; its
//!   event is an ordinary `F`) and `D <seq> <time_us> <held_us> <payload 16 bytes hex>`, and a
//!   final `# dropped <n>` line;
//!
//! `time_us` is microseconds since the Unix epoch, node ids are the first 8 bytes of the
//! `NodeId` in hex, `seq` numbers this node's deliveries.

use std::{path::PathBuf, time::Instant};

#[cfg(feature = "observe")]
use std::{
    io::Write,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_sphinx::NodeId;
use serde::Deserialize;

/// Whether this build can record (`observe` cargo feature).
pub const COMPILED_IN: bool = cfg!(feature = "observe");

/// Why a build without the `observe` feature refuses `[observe]`.
pub const NOT_BUILT: &str = "this node has no per-packet timing log: [observe] is a benchmarking tool, available only in \
     a build with the `observe` cargo feature (cargo build --release -p nox --features observe, as \
     scripts/bench/anonymity.sh does); remove the [observe] section";

/// `[observe]` (measurement only; absent or `events` unset: nothing is recorded).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ObserveSection {
    /// Append adversary-visible link events here.
    pub events: Option<PathBuf>,
    /// Ground truth file (default: `<events>.truth`).
    pub truth: Option<PathBuf>,
    /// Records buffered before new ones are dropped (and counted).
    pub queue: usize,
}

impl Default for ObserveSection {
    fn default() -> Self {
        Self { events: None, truth: None, queue: 65_536 }
    }
}

/// A short node id: the first 8 bytes of a `NodeId`, in hex.
pub fn short_id(id: &NodeId) -> String {
    hex::encode(&id.0[..8])
}

/// One adversary-visible record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventRecord {
    /// `from` sent a packet to node `to`.
    Forward {
        /// Microseconds since the Unix epoch.
        time_us: u64,
        /// Sending node (short id).
        from: String,
        /// Next node (short id).
        to: String,
    },
    /// Exit `from` emitted its `seq`-th delivery towards a destination.
    Deliver {
        /// Microseconds since the Unix epoch.
        time_us: u64,
        /// The exit (short id).
        from: String,
        /// Delivery number at this exit.
        seq: u64,
    },
}

/// One ground-truth record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TruthRecord {
    /// A forward at `time_us` after holding the packet `held_us`.
    Forward {
        /// Microseconds since the Unix epoch.
        time_us: u64,
        /// Arrival (link) to departure, microseconds.
        held_us: u64,
    },
    /// A cover packet this node originated at `time_us`.
    Cover {
        /// Microseconds since the Unix epoch.
        time_us: u64,
    },
    /// Delivery `seq`, its hold time and the first 16 payload bytes.
    Deliver {
        /// Delivery number at this exit.
        seq: u64,
        /// Microseconds since the Unix epoch.
        time_us: u64,
        /// Arrival to departure, microseconds.
        held_us: u64,
        /// First 16 bytes of the payload (zero-padded).
        head: [u8; 16],
    },
}

/// Parses an events line; `None` for comments and malformed lines.
pub fn parse_event(line: &str) -> Option<EventRecord> {
    let mut parts = line.split_whitespace();
    let kind = parts.next()?;
    let time_us = parts.next()?.parse().ok()?;
    let from = parts.next()?.to_string();
    let last = parts.next()?;
    match kind {
        "F" => Some(EventRecord::Forward { time_us, from, to: last.to_string() }),
        "D" => Some(EventRecord::Deliver { time_us, from, seq: last.parse().ok()? }),
        _ => None,
    }
}

/// Parses a truth line; `None` for comments and malformed lines.
pub fn parse_truth(line: &str) -> Option<TruthRecord> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    match parts.as_slice() {
        ["C", time] => Some(TruthRecord::Cover { time_us: time.parse().ok()? }),
        ["F", time, held] => Some(TruthRecord::Forward { time_us: time.parse().ok()?, held_us: held.parse().ok()? }),
        ["D", seq, time, held, head] => Some(TruthRecord::Deliver {
            seq: seq.parse().ok()?,
            time_us: time.parse().ok()?,
            held_us: held.parse().ok()?,
            head: hex::decode(head).ok()?.try_into().ok()?,
        }),
        _ => None,
    }
}

#[cfg(feature = "observe")]
enum Record {
    Forward { time_us: u64, to: [u8; 8], held_us: u64 },
    Cover { time_us: u64, to: [u8; 8] },
    Deliver { time_us: u64, seq: u64, held_us: u64, head: [u8; 16] },
}

/// The recording handle used by egress.
#[cfg(feature = "observe")]
pub struct Observer {
    me: String,
    tx: SyncSender<Record>,
    dropped: Arc<AtomicU64>,
    next_seq: AtomicU64,
}

#[cfg(feature = "observe")]
fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

#[cfg(feature = "observe")]
impl Observer {
    /// Opens the files (append) and starts the writer thread; `None` when `events` is unset.
    pub fn start(section: &ObserveSection, me: &NodeId) -> std::io::Result<Option<Self>> {
        let Some(events_path) = &section.events else { return Ok(None) };
        let truth_path = section.truth.clone().unwrap_or_else(|| {
            let mut name = events_path.as_os_str().to_owned();
            name.push(".truth");
            PathBuf::from(name)
        });
        let open = |p: &PathBuf| std::fs::OpenOptions::new().create(true).append(true).open(p);
        let events = std::io::BufWriter::new(open(events_path)?);
        let truth = std::io::BufWriter::new(open(&truth_path)?);
        let (tx, rx) = sync_channel(section.queue.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let me = short_id(me);
        let (writer_me, writer_dropped) = (me.clone(), dropped.clone());
        std::thread::Builder::new()
            .name("nox-observe".into())
            .spawn(move || write_loop(&rx, &writer_me, events, truth, &writer_dropped))?;
        tracing::warn!(events = %events_path.display(), "[observe] is on: recording link timing (measurement only)");
        Ok(Some(Self { me, tx, dropped, next_seq: AtomicU64::new(0) }))
    }

    fn push(&self, record: Record) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(record) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A packet received at `received_at` leaves for node `to` now.
    pub fn forward(&self, to: &NodeId, received_at: Instant) {
        let mut short = [0u8; 8];
        short.copy_from_slice(&to.0[..8]);
        self.push(Record::Forward { time_us: now_us(), to: short, held_us: received_at.elapsed().as_micros() as u64 });
    }

    /// A payload received at `received_at` is delivered (handed to the exit services) now.
    pub fn deliver(&self, payload: &[u8], received_at: Instant) {
        let mut head = [0u8; 16];
        let n = payload.len().min(16);
        head[..n].copy_from_slice(&payload[..n]);
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        self.push(Record::Deliver { time_us: now_us(), seq, held_us: received_at.elapsed().as_micros() as u64, head });
    }

    /// This node's own cover packet (loop or drop) leaves for node `to` now: an `F` event like
    /// any forward (the adversary cannot tell), a `C` truth record.
    pub fn cover(&self, to: &NodeId) {
        let mut short = [0u8; 8];
        short.copy_from_slice(&to.0[..8]);
        self.push(Record::Cover { time_us: now_us(), to: short });
    }

    /// Records dropped because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// This node's short id as written in the records.
    pub fn me(&self) -> &str {
        &self.me
    }
}

#[cfg(feature = "observe")]
fn write_loop<W: Write>(rx: &Receiver<Record>, me: &str, mut events: W, mut truth: W, dropped: &AtomicU64) {
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Record::Forward { time_us, to, held_us }) => {
                let _ = writeln!(events, "F {time_us} {me} {}", hex::encode(to));
                let _ = writeln!(truth, "F {time_us} {held_us}");
            }
            Ok(Record::Cover { time_us, to }) => {
                let _ = writeln!(events, "F {time_us} {me} {}", hex::encode(to));
                let _ = writeln!(truth, "C {time_us}");
            }
            Ok(Record::Deliver { time_us, seq, held_us, head }) => {
                let _ = writeln!(events, "D {time_us} {me} {seq}");
                let _ = writeln!(truth, "D {seq} {time_us} {held_us} {}", hex::encode(head));
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = events.flush();
                let _ = truth.flush();
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = writeln!(truth, "# dropped {}", dropped.load(Ordering::Relaxed));
    let _ = events.flush();
    let _ = truth.flush();
}

/// Without the `observe` feature no observer can exist: the recording calls are unreachable.
#[cfg(not(feature = "observe"))]
#[derive(Debug)]
pub enum Observer {}

#[cfg(not(feature = "observe"))]
impl Observer {
    /// Unreachable: no `Observer` exists in this build.
    pub fn forward(&self, _to: &NodeId, _received_at: Instant) {
        match *self {}
    }

    /// Unreachable: no `Observer` exists in this build.
    pub fn deliver(&self, _payload: &[u8], _received_at: Instant) {
        match *self {}
    }

    /// Unreachable: no `Observer` exists in this build.
    pub fn cover(&self, _to: &NodeId) {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "observe")]
    #[test]
    fn records_are_written_and_parse_back() {
        let dir = std::env::temp_dir().join(format!("nox-observe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let events = dir.join("events.log");
        let section = ObserveSection { events: Some(events.clone()), ..ObserveSection::default() };
        let me = NodeId([1; 32]);
        let observer = Observer::start(&section, &me).expect("open").expect("enabled");
        let received = Instant::now();
        observer.forward(&NodeId([2; 32]), received);
        let mut payload = [0u8; 40];
        payload[..16].copy_from_slice(&[7; 16]);
        observer.deliver(&payload, received);
        observer.deliver(&[9, 9], received);
        observer.cover(&NodeId([3; 32]));
        assert_eq!(observer.dropped(), 0);
        drop(observer);
        let read = |p: &std::path::Path| {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                if text.contains("# dropped") || Instant::now() > deadline {
                    return text;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let truth = read(&dir.join("events.log.truth"));
        let events: Vec<EventRecord> =
            std::fs::read_to_string(&events).expect("events").lines().filter_map(parse_event).collect();
        assert_eq!(events.len(), 4);
        assert!(matches!(&events[3], EventRecord::Forward { to, .. } if to.starts_with("0303")));
        assert!(matches!(&events[0], EventRecord::Forward { from, to, .. }
            if *from == "0101010101010101" && *to == "0202020202020202"));
        assert!(matches!(&events[2], EventRecord::Deliver { seq: 1, .. }));
        let truth: Vec<TruthRecord> = truth.lines().filter_map(parse_truth).collect();
        assert_eq!(truth.len(), 4);
        assert!(matches!(truth[3], TruthRecord::Cover { .. }));
        assert!(matches!(truth[1], TruthRecord::Deliver { seq: 0, head, .. } if head == [7; 16]));
        assert!(matches!(truth[2], TruthRecord::Deliver { seq: 1, head, .. } if head[..2] == [9, 9] && head[2] == 0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert_eq!(parse_event("# comment"), None);
        assert_eq!(parse_event("D 12 ab x"), None);
        assert_eq!(parse_truth("D 1 2 3 zz"), None);
        assert_eq!(parse_truth("F 5 6"), Some(TruthRecord::Forward { time_us: 5, held_us: 6 }));
    }
}
