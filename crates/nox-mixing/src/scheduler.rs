//! The mixing scheduler: a bounded min-heap of packets keyed by release deadline.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::time::{Duration, Instant};

use rand_core::RngCore;

use crate::config::{Delay, MixingConfig, OverDelayPolicy};
use crate::metrics::{DelayHistogram, MixingCounters, MixingMetrics};

/// Why an insert was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RefusalReason {
    /// The scheduler already holds `capacity` packets.
    #[error("mixing queue is full")]
    Full,
    /// A [`Delay::Given`] exceeded [`MixingConfig::max_given_delay`].
    #[error("given mixing delay exceeds the configured maximum")]
    DelayTooLong,
}

/// A refused insert; carries the item back so the caller can count and drop (or reuse) it.
pub struct Refused<T> {
    /// The item that was not enqueued.
    pub item: T,
    /// Why.
    pub reason: RefusalReason,
}

impl<T> fmt::Debug for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The item is a packet: never print it.
        f.debug_struct("Refused").field("reason", &self.reason).finish_non_exhaustive()
    }
}

impl<T> fmt::Display for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.fmt(f)
    }
}

impl<T> std::error::Error for Refused<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.reason)
    }
}

/// What the scheduler decided for an accepted packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// When the packet becomes releasable.
    pub release_at: Instant,
    /// Whether processing had outlasted the packet's delay (see [`OverDelayPolicy`]).
    pub over_delayed: bool,
}

struct Entry<T> {
    release_at: Instant,
    /// Random tie-breaker: packets with equal deadlines leave in random, not arrival, order.
    tie_breaker: u64,
    arrived_at: Instant,
    item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (Instant, u64) {
        (self.release_at, self.tie_breaker)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` is a max-heap and we want the earliest deadline on top.
        other.key().cmp(&self.key())
    }
}

/// A Poisson mixing scheduler over opaque items `T` (the node stores its processed packet here).
///
/// One data structure for all packets (no task or timer per packet): a binary min-heap on
/// `(release deadline, random tie-breaker)`. Time and randomness are supplied by the caller.
pub struct MixingScheduler<T> {
    config: MixingConfig,
    heap: BinaryHeap<Entry<T>>,
    counters: MixingCounters,
    histogram: DelayHistogram,
}

impl<T> fmt::Debug for MixingScheduler<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MixingScheduler")
            .field("config", &self.config)
            .field("len", &self.heap.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<T> MixingScheduler<T> {
    /// An empty scheduler. Memory grows with use up to `config.capacity` entries.
    pub fn new(config: MixingConfig) -> Self {
        let histogram = DelayHistogram::new(config.histogram_bounds.clone());
        Self { config, heap: BinaryHeap::new(), counters: MixingCounters::default(), histogram }
    }

    /// The configuration in force.
    pub fn config(&self) -> &MixingConfig {
        &self.config
    }

    /// Enqueues `item`, which arrived at the node at `arrived_at` (before Sphinx processing)
    /// and is being enqueued at `now` (after it).
    ///
    /// The intended release instant is `arrived_at + delay`: processing time counts toward the
    /// delay. If that instant is already past (`now - arrived_at > delay`), the packet is
    /// *over-delayed*: it is counted and handled by [`MixingConfig::over_delay_policy`].
    /// An `arrived_at` later than `now` is treated as zero processing time.
    ///
    /// Randomness drawn, in order: the delay (for [`Delay::Sample`]), the residual (for an
    /// over-delayed packet under [`OverDelayPolicy::ResampleResidual`]), the tie-breaker.
    /// Nothing is drawn for a refused insert.
    pub fn insert<R: RngCore + ?Sized>(
        &mut self,
        item: T,
        delay: Delay,
        arrived_at: Instant,
        now: Instant,
        rng: &mut R,
    ) -> Result<Scheduled, Refused<T>> {
        if self.heap.len() >= self.config.capacity {
            self.counters.refused_full += 1;
            return Err(Refused { item, reason: RefusalReason::Full });
        }
        let delay = match delay {
            Delay::Sample => nox_stats::exponential::sample(rng, self.config.mean_delay),
            Delay::Given(given) if given > self.config.max_given_delay => {
                self.counters.refused_delay_too_long += 1;
                return Err(Refused { item, reason: RefusalReason::DelayTooLong });
            }
            Delay::Given(given) => given,
        };
        let arrived_at = arrived_at.min(now);
        let processing = now.duration_since(arrived_at);
        let over_delayed = processing > delay;
        let release_at = if over_delayed {
            self.counters.over_delayed += 1;
            match self.config.over_delay_policy {
                OverDelayPolicy::ResampleResidual => {
                    let residual = nox_stats::exponential::sample(rng, self.config.mean_delay);
                    checked_deadline(now, residual)
                }
                OverDelayPolicy::ReleaseImmediately => now,
            }
        } else {
            checked_deadline(arrived_at, delay)
        };
        let tie_breaker = rng.next_u64();
        self.heap.push(Entry { release_at, tie_breaker, arrived_at, item });
        self.counters.inserted += 1;
        self.counters.processing_time_total = self.counters.processing_time_total.saturating_add(processing);
        Ok(Scheduled { release_at, over_delayed })
    }

    /// The earliest release deadline, if any packet is held: the caller's next timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|entry| entry.release_at)
    }

    /// Removes and returns the packet with the earliest deadline if that deadline is `<= now`.
    pub fn pop_expired(&mut self, now: Instant) -> Option<T> {
        if self.heap.peek()?.release_at > now {
            return None;
        }
        let entry = self.heap.pop()?;
        Some(self.record_release(entry))
    }

    /// All packets whose deadline is `<= now`, in deadline order (lazily: stop early and the
    /// rest stay queued).
    pub fn drain_expired(&mut self, now: Instant) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.pop_expired(now))
    }

    /// Every held packet in deadline order regardless of time, e.g. at shutdown.
    pub fn drain_all(&mut self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.heap.pop().map(|entry| self.record_release(entry)))
    }

    fn record_release(&mut self, entry: Entry<T>) -> T {
        self.counters.released += 1;
        self.histogram.record(entry.release_at.saturating_duration_since(entry.arrived_at));
        entry.item
    }

    /// Packets currently held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no packet is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Event counters so far.
    pub fn counters(&self) -> MixingCounters {
        self.counters
    }

    /// Realised-delay histogram of released packets so far.
    pub fn delay_histogram(&self) -> &DelayHistogram {
        &self.histogram
    }

    /// A snapshot of counters, histogram and queue length for an exporter.
    pub fn metrics(&self) -> MixingMetrics {
        MixingMetrics { counters: self.counters, delay_histogram: self.histogram.clone(), queue_len: self.heap.len() }
    }
}

/// `base + delay`, saturating far in the future instead of panicking on overflow.
fn checked_deadline(base: Instant, delay: Duration) -> Instant {
    base.checked_add(delay).or_else(|| base.checked_add(Duration::from_secs(u64::from(u32::MAX)))).unwrap_or(base)
}
