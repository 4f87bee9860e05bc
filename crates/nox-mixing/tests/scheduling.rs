//! Release order, capacity, given delays, processing-time accounting, tie-breaking, metrics.

use std::time::{Duration, Instant};

use nox_mixing::{Delay, MixingConfig, MixingScheduler, OverDelayPolicy, RefusalReason};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

/// Runs the scheduler in virtual time: jump to each deadline and pop what is due.
fn release_all<T>(scheduler: &mut MixingScheduler<T>) -> Vec<(Instant, T)> {
    let mut released = Vec::new();
    while let Some(deadline) = scheduler.next_deadline() {
        // Nothing is released a nanosecond early.
        if let Some(early) = deadline.checked_sub(Duration::from_nanos(1)) {
            assert!(scheduler.pop_expired(early).is_none());
        }
        released.extend(scheduler.drain_expired(deadline).map(|item| (deadline, item)));
    }
    released
}

#[test]
fn releases_in_deadline_order_and_never_early() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(10), 10_000));
    let mut deadlines = Vec::new();
    for index in 0..2_000u32 {
        let arrived = base + Duration::from_micros(u64::from(index) * 50);
        let scheduled =
            scheduler.insert(index, Delay::Sample, arrived, arrived, &mut rng).expect("capacity is large enough");
        deadlines.push(scheduled.release_at);
    }
    let released = release_all(&mut scheduler);
    assert_eq!(released.len(), 2_000);
    for pair in released.windows(2) {
        assert!(pair[0].0 <= pair[1].0, "released out of order");
    }
    for (at, index) in &released {
        assert_eq!(*at, deadlines[*index as usize]);
    }
    // The order is a real permutation of arrivals, not FIFO.
    assert!(released.windows(2).any(|pair| pair[0].1 > pair[1].1));
    assert_eq!(scheduler.counters().released, 2_000);
    assert!(scheduler.is_empty());
}

#[test]
fn pop_expired_respects_now() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(10), 16));
    scheduler.insert("a", Delay::Given(ms(5)), base, base, &mut rng).unwrap();
    scheduler.insert("b", Delay::Given(ms(3)), base, base, &mut rng).unwrap();
    assert_eq!(scheduler.next_deadline(), Some(base + ms(3)));
    assert_eq!(scheduler.pop_expired(base + ms(2)), None);
    assert_eq!(scheduler.pop_expired(base + ms(4)), Some("b"));
    assert_eq!(scheduler.pop_expired(base + ms(4)), None);
    assert_eq!(scheduler.drain_expired(base + ms(60)).collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(scheduler.next_deadline(), None);
}

#[test]
fn given_delay_is_measured_from_arrival_not_enqueue() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(10), 16));
    let arrived = base;
    let enqueued = base + ms(2); // 2 ms of Sphinx processing and queueing
    let scheduled = scheduler.insert((), Delay::Given(ms(7)), arrived, enqueued, &mut rng).unwrap();
    assert_eq!(scheduled.release_at, arrived + ms(7));
    assert!(!scheduled.over_delayed);
    // Exactly equal to the processing time is on time, not over-delayed.
    let exact = scheduler.insert((), Delay::Given(ms(2)), arrived, enqueued, &mut rng).unwrap();
    assert_eq!(exact.release_at, enqueued);
    assert!(!exact.over_delayed);
    assert_eq!(scheduler.counters().over_delayed, 0);
    assert_eq!(scheduler.counters().processing_time_total, ms(4));
}

#[test]
fn over_delayed_release_immediately() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let mut config = MixingConfig::new(ms(10), 16);
    config.over_delay_policy = OverDelayPolicy::ReleaseImmediately;
    let mut scheduler = MixingScheduler::new(config);
    let enqueued = base + ms(3);
    let scheduled = scheduler.insert((), Delay::Given(ms(1)), base, enqueued, &mut rng).unwrap();
    assert!(scheduled.over_delayed);
    assert_eq!(scheduled.release_at, enqueued);
    assert_eq!(scheduler.counters().over_delayed, 1);
    assert_eq!(scheduler.pop_expired(enqueued), Some(()));
}

#[test]
fn over_delayed_resample_waits_a_fresh_residual_from_enqueue() {
    let base = Instant::now();
    let mut config = MixingConfig::new(ms(10), 4_096);
    config.over_delay_policy = OverDelayPolicy::ResampleResidual;
    let mut scheduler = MixingScheduler::new(config);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let enqueued = base + ms(3);
    let mut residuals = Vec::new();
    for _ in 0..2_000 {
        let scheduled = scheduler.insert((), Delay::Given(ms(1)), base, enqueued, &mut rng).unwrap();
        assert!(scheduled.over_delayed);
        assert!(scheduled.release_at >= enqueued);
        residuals.push((scheduled.release_at - enqueued).as_secs_f64());
    }
    assert_eq!(scheduler.counters().over_delayed, 2_000);
    // The residuals are fresh Exp(10 ms) draws, not zero and not the given 1 ms.
    let outcome = nox_stats::ks::one_sample(&residuals, |x| nox_stats::exponential::cdf(x, 0.010), 0.01);
    assert!(!outcome.rejects(), "{outcome:?}");
}

#[test]
fn capacity_is_enforced_and_the_item_is_returned() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(1), 3));
    for index in 0..3 {
        scheduler.insert(index, Delay::Given(ms(index)), base, base, &mut rng).unwrap();
    }
    let refused = scheduler.insert(99, Delay::Sample, base, base, &mut rng).unwrap_err();
    assert_eq!(refused.reason, RefusalReason::Full);
    assert_eq!(refused.item, 99);
    assert_eq!(scheduler.len(), 3);
    assert_eq!(scheduler.counters().refused_full, 1);
    assert_eq!(scheduler.pop_expired(base), Some(0));
    assert!(scheduler.insert(100, Delay::Sample, base, base, &mut rng).is_ok());
    assert_eq!(scheduler.counters().inserted, 4);
}

#[test]
fn given_delay_above_the_maximum_is_refused() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let mut config = MixingConfig::new(ms(10), 8);
    config.max_given_delay = Duration::from_secs(2);
    let mut scheduler = MixingScheduler::new(config);
    assert!(scheduler.insert(1, Delay::Given(Duration::from_secs(2)), base, base, &mut rng).is_ok());
    let refused = scheduler.insert(2, Delay::Given(Duration::from_secs(3)), base, base, &mut rng).unwrap_err();
    assert_eq!(refused.reason, RefusalReason::DelayTooLong);
    assert_eq!(scheduler.counters().refused_delay_too_long, 1);
    assert_eq!(format!("{refused:?}"), "Refused { reason: DelayTooLong, .. }");
}

#[test]
fn equal_deadlines_leave_in_random_not_arrival_order() {
    let base = Instant::now();
    let order_for_seed = |seed: u64| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut scheduler = MixingScheduler::new(MixingConfig::new(Duration::ZERO, 64));
        for index in 0..50u32 {
            scheduler.insert(index, Delay::Sample, base, base, &mut rng).unwrap();
        }
        scheduler.drain_expired(base).collect::<Vec<_>>()
    };
    let first = order_for_seed(8);
    let second = order_for_seed(9);
    let arrival: Vec<u32> = (0..50).collect();
    assert_eq!(first.len(), 50);
    assert_ne!(first, arrival, "ties must not be FIFO");
    assert_ne!(first, second, "tie order comes from the RNG");
    let mut sorted = first.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, arrival);
    // Same seed, same order: deterministic.
    assert_eq!(first, order_for_seed(8));
}

#[test]
fn zero_mean_releases_on_enqueue() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(10);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(Duration::ZERO, 8));
    let on_time = scheduler.insert(1, Delay::Sample, base, base, &mut rng).unwrap();
    assert_eq!(on_time.release_at, base);
    assert!(!on_time.over_delayed);
    // With processing time, a zero delay is always exceeded: counted, released at enqueue.
    let late = scheduler.insert(2, Delay::Sample, base, base + ms(1), &mut rng).unwrap();
    assert_eq!(late.release_at, base + ms(1));
    assert!(late.over_delayed);
}

#[test]
fn arrival_after_now_is_zero_processing() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(1), 8));
    let scheduled = scheduler.insert((), Delay::Given(ms(4)), base + ms(1), base, &mut rng).unwrap();
    assert_eq!(scheduled.release_at, base + ms(4));
    assert_eq!(scheduler.counters().processing_time_total, Duration::ZERO);
}

#[test]
fn histogram_counts_released_delays_from_arrival() {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let mut config = MixingConfig::new(ms(10), 16);
    config.histogram_bounds = vec![ms(1), ms(5), ms(20)];
    let mut scheduler = MixingScheduler::new(config);
    // Processing 1 ms, given delays measured from arrival.
    for delay in [2, 3, 10, 30] {
        scheduler.insert((), Delay::Given(ms(delay)), base, base + ms(1), &mut rng).unwrap();
    }
    assert_eq!(scheduler.metrics().delay_histogram.count(), 0, "recorded on release");
    assert_eq!(scheduler.drain_all().count(), 4);
    let metrics = scheduler.metrics();
    assert_eq!(metrics.delay_histogram.counts(), &[0, 2, 1, 1]);
    assert_eq!(metrics.delay_histogram.sum(), ms(45));
    assert_eq!(metrics.counters.released, 4);
    assert_eq!(metrics.queue_len, 0);
}

#[test]
fn sampled_delay_counts_processing_time() {
    // Replay the scheduler's RNG stream to know each drawn delay δ: a packet whose processing
    // u ≤ δ must be released at exactly arrival + δ (not enqueue + δ).
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(13);
    let mut mirror = rng.clone();
    let mut scheduler = MixingScheduler::new(MixingConfig::new(ms(10), 1_000));
    let processing = ms(2);
    let mut on_time = 0;
    for index in 0..500u64 {
        let arrived = base + ms(index);
        let drawn = nox_stats::exponential::sample(&mut mirror, ms(10));
        let scheduled = scheduler.insert((), Delay::Sample, arrived, arrived + processing, &mut rng).unwrap();
        if drawn >= processing {
            on_time += 1;
            assert!(!scheduled.over_delayed);
            assert_eq!(scheduled.release_at, arrived + drawn);
        } else {
            assert!(scheduled.over_delayed);
            let _residual = nox_stats::exponential::sample(&mut mirror, ms(10));
        }
        let _tie = rand_core::RngCore::next_u64(&mut mirror);
    }
    assert!(on_time > 400, "most draws exceed 2 ms at μ = 10 ms: {on_time}");
    assert_eq!(scheduler.counters().over_delayed, 500 - on_time);
}
