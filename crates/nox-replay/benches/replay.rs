//! Cost of the replay cache's hot operations on a paper-sized (10⁷ tags, 0.1 %) filter,
//! half full, so every page is resident and accesses miss the CPU caches as in production.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use nox_replay::{BloomParameters, ReplayCache};

/// A cheap, deterministic stream of uniform tags (SplitMix64), so tag generation does not
/// dominate the measurement.
struct TagStream(u64);

impl TagStream {
    fn next_word(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn next_tag(&mut self) -> [u8; 32] {
        let mut tag = [0u8; 32];
        for chunk in tag.chunks_exact_mut(8) {
            chunk.copy_from_slice(&self.next_word().to_le_bytes());
        }
        tag
    }
}

fn check_and_insert(c: &mut Criterion) {
    let params = BloomParameters::for_capacity(10_000_000, 0.001).expect("valid parameters");
    let mut cache = ReplayCache::new(1, params);
    let mut stream = TagStream(1);
    let present: Vec<[u8; 32]> = (0..1 << 20).map(|_| stream.next_tag()).collect();
    for tag in &present {
        let _ = cache.insert(tag);
    }
    for _ in 0..4_000_000 {
        let _ = cache.insert(&stream.next_tag());
    }
    let absent: Vec<[u8; 32]> = (0..1 << 20).map(|_| stream.next_tag()).collect();

    let mut group = c.benchmark_group("replay");
    let mut index = 0usize;
    group.bench_function("check/present (k probes)", |b| {
        b.iter(|| {
            index = (index + 1) & ((1 << 20) - 1);
            black_box(cache.check(&present[index]))
        })
    });
    group.bench_function("check/absent (half full)", |b| {
        b.iter(|| {
            index = (index + 1) & ((1 << 20) - 1);
            black_box(cache.check(&absent[index]))
        })
    });
    // Insert always touches all k words, so its cost does not depend on the fill (which keeps
    // growing during this benchmark).
    group.bench_function("insert/new tag", |b| b.iter(|| black_box(cache.insert(&stream.next_tag()))));
    group.bench_function("journal_record", |b| b.iter(|| black_box(cache.journal_record(&present[index]))));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = check_and_insert
}
criterion_main!(benches);
