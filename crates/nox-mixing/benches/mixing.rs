//! Cost of one packet through the scheduler: insert with a sampled delay, then release.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use nox_mixing::{Delay, MixingConfig, MixingScheduler};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn insert_and_poll(c: &mut Criterion) {
    let mut group = c.benchmark_group("mixing");
    for backlog in [1_000usize, 100_000] {
        group.bench_function(format!("insert+poll/backlog={backlog}"), |b| {
            let base = Instant::now();
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut scheduler = MixingScheduler::new(MixingConfig::new(Duration::from_millis(1), backlog * 2));
            // Steady state: the queue holds about `backlog` packets; each iteration adds one
            // packet and releases the earliest one.
            let mut now = base;
            for _ in 0..backlog {
                let _ = scheduler.insert(0u64, Delay::Sample, now, now, &mut rng);
            }
            b.iter(|| {
                now += Duration::from_nanos(10);
                let _ = scheduler.insert(black_box(1u64), Delay::Sample, now, now, &mut rng);
                let deadline = scheduler.next_deadline().unwrap_or(now);
                black_box(scheduler.pop_expired(deadline));
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = insert_and_poll
}
criterion_main!(benches);
