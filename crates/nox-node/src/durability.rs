//! Group commit of replay tags: a packet leaves the node only after its tag
//! is on stable storage (docs/spec/replay-cache.md §4).
//!
//! ```text
//! worker: Relay::verify (MAC) ─▶ Relay::record(tag) ─▶ TagJournal::record(epoch, tag) → seq
//!         ─▶ Recorded::finish ─▶ mixer (packet, seq)   (a finish error drops the packet;
//!                                                      its tag is journalled all the same)
//!                                      │ pending batch
//!                         sync thread: append batch, fdatasync ─▶ durable_seq = last seq
//! mixer: delay over ∧ durable_seq ≥ seq ─▶ egress
//! ```
//!
//! Sequence numbers start at 1 and are assigned under the same lock that
//! queues the record, so a batch is always a contiguous run and
//! `durable_seq` a watermark. While one `fdatasync` runs, the next batch
//! fills: at low load every tag gets its own sync, at high load one sync
//! covers thousands. The mixing delay hides the sync; a packet whose delay
//! ends first waits for it.
//!
//! A failed write or sync is final: `durable_seq` never moves again, every
//! held and every new packet is dropped (`reason="journal_error"`), the
//! failure is logged and `nox_replay_journal_failed` is 1. Retrying would
//! not help — after a failed `fsync` the kernel may have discarded the dirty
//! pages — so the operator restarts the node, which reloads what is durable.

use std::{
    sync::{
        Arc, Condvar, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{
    NodeMetrics, ReplayStore,
    replay_store::{PendingTag, ReplayStateError},
};

/// Group-commit tuning (`[replay]` `sync_batch`, `sync_interval_us`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupCommitConfig {
    /// At most this many tags per sync (bounds the unsynced tail and the
    /// write size).
    pub max_batch: usize,
    /// Minimum time between the starts of two syncs (0: sync as soon as the
    /// previous one finished; the batch is whatever arrived meanwhile).
    pub min_interval: Duration,
}

impl Default for GroupCommitConfig {
    fn default() -> Self {
        Self { max_batch: 4096, min_interval: Duration::ZERO }
    }
}

/// Why a tag cannot be made durable.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NotDurable {
    /// A journal write or sync failed; the node no longer emits.
    #[error("replay journal failed: {0}")]
    Failed(ReplayStateError),
    /// The journal was closed (shutdown).
    #[error("replay journal closed")]
    Closed,
}

#[derive(Debug, Default)]
struct Pending {
    tags: Vec<PendingTag>,
    /// Sequence number of the next tag recorded.
    next_seq: u64,
    closed: bool,
}

type Waker = Box<dyn Fn() + Send + Sync>;

/// The shared handle: workers record tags, the mixer reads the watermark.
pub struct TagJournal {
    pending: Mutex<Pending>,
    wake_sync: Condvar,
    durable_seq: AtomicU64,
    failed: Mutex<Option<ReplayStateError>>,
    failed_flag: AtomicBool,
    waker: Mutex<Option<Waker>>,
    metrics: Arc<NodeMetrics>,
}

impl std::fmt::Debug for TagJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagJournal")
            .field("durable_seq", &self.durable_seq())
            .field("failed", &self.failure())
            .finish_non_exhaustive()
    }
}

impl TagJournal {
    /// Starts the sync thread writing to `store`.
    pub fn spawn(
        store: Arc<ReplayStore>,
        config: GroupCommitConfig,
        metrics: Arc<NodeMetrics>,
    ) -> std::io::Result<(Arc<TagJournal>, SyncThread)> {
        let journal = Arc::new(TagJournal {
            pending: Mutex::new(Pending { tags: Vec::new(), next_seq: 1, closed: false }),
            wake_sync: Condvar::new(),
            durable_seq: AtomicU64::new(0),
            failed: Mutex::new(None),
            failed_flag: AtomicBool::new(false),
            waker: Mutex::new(None),
            metrics,
        });
        let thread = {
            let journal = journal.clone();
            std::thread::Builder::new().name("nox-replay-sync".into()).spawn(move || journal.run(&store, config))?
        };
        Ok((journal.clone(), SyncThread { journal, thread }))
    }

    /// Queues the journal record of a tag just inserted in `epoch`'s cache;
    /// returns its sequence number. The packet may leave once
    /// [`TagJournal::durable_seq`] reaches it.
    pub fn record(&self, epoch: u32, tag: &[u8; 32]) -> Result<u64, NotDurable> {
        if let Some(error) = self.failure() {
            return Err(NotDurable::Failed(error));
        }
        let mut pending = self.lock();
        if pending.closed {
            return Err(NotDurable::Closed);
        }
        let seq = pending.next_seq;
        pending.next_seq += 1;
        pending.tags.push((epoch, *tag));
        drop(pending);
        self.wake_sync.notify_one();
        Ok(seq)
    }

    /// Every tag with a sequence number up to this is durable.
    pub fn durable_seq(&self) -> u64 {
        self.durable_seq.load(Ordering::SeqCst)
    }

    /// Whether a packet recorded as `seq` may leave.
    pub fn is_durable(&self, seq: u64) -> bool {
        seq <= self.durable_seq()
    }

    /// Whether the journal failed (final).
    pub fn has_failed(&self) -> bool {
        self.failed_flag.load(Ordering::SeqCst)
    }

    /// The failure, if any.
    pub fn failure(&self) -> Option<ReplayStateError> {
        if !self.has_failed() {
            return None;
        }
        self.failed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Called after each completed sync and on failure (the mixer uses it to
    /// wake up and release the packets that waited).
    pub fn set_waker(&self, waker: impl Fn() + Send + Sync + 'static) {
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(waker));
    }

    fn wake(&self) {
        if let Some(waker) = self.waker.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            waker();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self, store: &ReplayStore, config: GroupCommitConfig) {
        let max_batch = config.max_batch.max(1);
        let mut last_start: Option<Instant> = None;
        loop {
            let mut pending = self.lock();
            while pending.tags.is_empty() && !pending.closed {
                pending = self.wake_sync.wait(pending).unwrap_or_else(PoisonError::into_inner);
            }
            if pending.tags.is_empty() {
                return; // closed and drained
            }
            // Optional batching window, cut short by a full batch or shutdown.
            if let Some(start) = last_start {
                let due = start + config.min_interval;
                while pending.tags.len() < max_batch && !pending.closed {
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    pending = self.wake_sync.wait_timeout(pending, due - now).unwrap_or_else(PoisonError::into_inner).0;
                }
            }
            let taken = pending.tags.len().min(max_batch);
            let batch: Vec<PendingTag> = pending.tags.drain(..taken).collect();
            let last_seq = pending.next_seq - 1 - pending.tags.len() as u64;
            drop(pending);
            let start = Instant::now();
            last_start = Some(start);
            match store.commit(&batch) {
                Ok(()) => {
                    self.durable_seq.store(last_seq, Ordering::SeqCst);
                    let metrics = &self.metrics;
                    metrics.replay_syncs.fetch_add(1, Ordering::Relaxed);
                    metrics.replay_synced_tags.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                    metrics.replay_sync_micros.fetch_add(micros, Ordering::Relaxed);
                    self.wake();
                }
                Err(error) => {
                    tracing::error!(
                        %error,
                        kind = error.kind(),
                        "replay journal sync failed: tags can no longer be made durable, so this node stops \
                         emitting packets; restart it once the storage is fixed"
                    );
                    *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                    self.failed_flag.store(true, Ordering::SeqCst);
                    self.metrics.replay_journal_failed.store(1, Ordering::Relaxed);
                    let mut pending = self.lock();
                    pending.closed = true;
                    pending.tags.clear();
                    drop(pending);
                    self.wake();
                    return;
                }
            }
        }
    }
}

/// The running sync thread.
#[derive(Debug)]
pub struct SyncThread {
    journal: Arc<TagJournal>,
    thread: JoinHandle<()>,
}

impl SyncThread {
    /// Syncs what is pending, stops the thread and waits for it. Call once
    /// nothing records any more (the pipeline finished).
    pub fn finish(self) {
        self.journal.lock().closed = true;
        self.journal.wake_sync.notify_all();
        let _ = self.thread.join();
    }
}
