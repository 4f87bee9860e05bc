//! Aggregate counters and a delay histogram: what the node may export, never per-packet timing.

use std::time::Duration;

/// Default histogram bucket bounds, from 100 µs to 10 s (1–2.5–5 steps).
pub const DEFAULT_DELAY_BUCKETS: [Duration; 16] = [
    Duration::from_micros(100),
    Duration::from_micros(250),
    Duration::from_micros(500),
    Duration::from_millis(1),
    Duration::from_micros(2_500),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(2_500),
    Duration::from_secs(5),
    Duration::from_secs(10),
];

/// Monotonic event counters of a scheduler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MixingCounters {
    /// Packets accepted into the queue.
    pub inserted: u64,
    /// Packets handed back by `pop_expired`/`drain_expired`/`drain_all`.
    pub released: u64,
    /// Accepted packets whose processing outlasted their delay (counted once each).
    pub over_delayed: u64,
    /// Inserts refused because the queue was full.
    pub refused_full: u64,
    /// Inserts refused because a given delay exceeded `max_given_delay`.
    pub refused_delay_too_long: u64,
    /// Sum of processing times (arrival to enqueue) of accepted packets, for a mean.
    pub processing_time_total: Duration,
}

/// A histogram of realised mixing delays (release deadline minus arrival) of released packets.
///
/// Buckets follow the Prometheus `le` convention: bucket `i` counts delays `<= bounds[i]`
/// and `> bounds[i-1]`; the last count is the `+Inf` bucket. Counts are per bucket, not
/// cumulative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayHistogram {
    bounds: Vec<Duration>,
    counts: Vec<u64>,
    sum: Duration,
    count: u64,
}

impl DelayHistogram {
    /// An empty histogram; `bounds` are sorted and de-duplicated.
    pub fn new(mut bounds: Vec<Duration>) -> Self {
        bounds.sort_unstable();
        bounds.dedup();
        let counts = vec![0; bounds.len() + 1];
        Self { bounds, counts, sum: Duration::ZERO, count: 0 }
    }

    /// Adds one observation.
    pub fn record(&mut self, delay: Duration) {
        let bucket = self.bounds.partition_point(|bound| *bound < delay);
        if let Some(count) = self.counts.get_mut(bucket) {
            *count += 1;
        }
        self.sum = self.sum.saturating_add(delay);
        self.count += 1;
    }

    /// Bucket upper bounds (the `+Inf` bucket is implicit).
    pub fn bounds(&self) -> &[Duration] {
        &self.bounds
    }

    /// Per-bucket counts, `bounds().len() + 1` of them.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Cumulative counts in Prometheus order (`le` each bound, then `+Inf`).
    pub fn cumulative_counts(&self) -> Vec<u64> {
        self.counts
            .iter()
            .scan(0u64, |total, count| {
                *total += count;
                Some(*total)
            })
            .collect()
    }

    /// Sum of all observations.
    pub fn sum(&self) -> Duration {
        self.sum
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// A point-in-time snapshot for a metrics exporter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixingMetrics {
    /// Event counters.
    pub counters: MixingCounters,
    /// Realised delays of released packets.
    pub delay_histogram: DelayHistogram,
    /// Packets currently held.
    pub queue_len: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_use_le_semantics() {
        let mut histogram = DelayHistogram::new(vec![Duration::from_millis(2), Duration::from_millis(1)]);
        for ms in [0, 1, 2, 3] {
            histogram.record(Duration::from_millis(ms));
        }
        assert_eq!(histogram.bounds(), &[Duration::from_millis(1), Duration::from_millis(2)]);
        assert_eq!(histogram.counts(), &[2, 1, 1]);
        assert_eq!(histogram.cumulative_counts(), vec![2, 3, 4]);
        assert_eq!(histogram.count(), 4);
        assert_eq!(histogram.sum(), Duration::from_millis(6));
    }
}
