//! A paper-sized (10⁷ tags, 0.1 %) cache costs almost no resident memory until it is used.
//! Alone in its own test binary so no other test disturbs the process's RSS.

#![cfg(target_os = "linux")]

use nox_replay::{BloomParameters, InsertOutcome, ReplayCache};

/// Resident set size of this process in bytes, from /proc/self/statm (pages × 4 KiB).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("procfs");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("rss");
    pages * 4096
}

#[test]
fn untouched_filter_pages_are_not_resident() {
    let params = BloomParameters::for_capacity(10_000_000, 0.001).expect("valid");
    assert_eq!(params.memory_bytes(), 17_971_992);
    let before = resident_bytes();
    let mut cache = ReplayCache::new(1, params);
    let after_allocation = resident_bytes();
    // Reading untouched pages maps the shared zero page, which is not counted either.
    let mut probe = [0u8; 32];
    for index in 0..2_000u32 {
        probe[..4].copy_from_slice(&index.to_le_bytes());
        probe[8..12].copy_from_slice(&index.wrapping_mul(2_654_435_761).to_le_bytes());
        let _ = cache.check(&blake3::hash(&probe).into());
    }
    let after_checks = resident_bytes();
    assert!(
        after_checks.saturating_sub(before) < 4 << 20,
        "allocation {} KiB, after checks {} KiB",
        after_allocation.saturating_sub(before) >> 10,
        after_checks.saturating_sub(before) >> 10
    );
    // Each insert touches at most k = 10 pages.
    assert_eq!(cache.insert(&[7u8; 32]), InsertOutcome::Inserted);
    assert!(resident_bytes().saturating_sub(after_checks) <= 10 * 4096 + (256 << 10));
}
