//! `nox dashboard`'s reading of a node's `/metrics` (the Prometheus text format) on arbitrary
//! bytes: never panics, respects its limits, and what makes a reading is consistent (histogram
//! buckets sum to the count, +Inf last). The parser has no dependency beyond `std` and
//! `thiserror`, so this target includes its source file instead of building the `nox` crate.
//! Seed corpus: a node's real exposition and a few malformed variants.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/nox-dashboard/src/metrics.rs"]
mod dashboard_metrics;

use dashboard_metrics::{Limits, NodeReading, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits { max_samples: 64, max_labels: 4, max_line: 512 };
    if let Ok(samples) = parse(text, limits) {
        assert!(samples.len() <= limits.max_samples);
        for sample in &samples {
            assert!(sample.labels.len() <= limits.max_labels);
            assert!(!sample.name.is_empty() && !sample.name.starts_with(|c: char| c.is_ascii_digit()));
            assert!(sample.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':'));
        }
    }
    if let Ok(reading) = NodeReading::from_text(text, limits) {
        if let Some(delay) = reading.delay {
            assert_eq!(delay.counts.iter().sum::<u64>(), delay.count, "buckets sum to the count");
            assert_eq!(delay.le_seconds.last(), Some(&None), "+Inf is the last bucket");
            assert!(delay.sum_seconds.is_finite() && delay.sum_seconds >= 0.0);
        }
        assert!(reading.drops.len() <= limits.max_samples);
    }
});
