//! Poisson timers: exponential gaps (KS at fixed seeds), and the send queue's emission times
//! do not depend on real traffic.

use std::time::Duration;

use nox_cover::{CoverKind, CoverScheduler, Instant, Payload, PoissonTimer, SendQueue};
use nox_stats::{correlation, exponential, ks};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const ALPHA: f64 = 0.01;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn gaps(times: &[Instant], start: Instant) -> Vec<f64> {
    let mut previous = start;
    times
        .iter()
        .map(|at| {
            let gap = (*at - previous).as_secs_f64();
            previous = *at;
            gap
        })
        .collect()
}

#[test]
fn timer_gaps_are_exponential() {
    let start = Instant::ORIGIN;
    let rate = 20.0; // mean gap 50 ms
    let mut timer = PoissonTimer::new(rate, start, rng(1)).unwrap();
    let mut fired = Vec::new();
    // Poll at coarse, irregular instants: the scheduled times must not depend on polling.
    let mut now = start;
    let mut poller = rng(99);
    while fired.len() < 4_000 {
        now += Duration::from_millis(poller.next_u64() % 300);
        while let Some(at) = timer.poll(now) {
            assert!(at <= now);
            fired.push(at);
        }
    }
    let gaps = gaps(&fired, start);
    let outcome = ks::one_sample(&gaps, |x| exponential::cdf(x, 1.0 / rate), ALPHA);
    assert!(!outcome.rejects(), "{outcome:?}");
    // Negative control: the same gaps against the wrong rate.
    assert!(ks::one_sample(&gaps, |x| exponential::cdf(x, 1.1 / rate), ALPHA).rejects());
}

#[test]
fn zero_rate_never_fires_and_bad_rates_are_refused() {
    let start = Instant::ORIGIN;
    let mut timer = PoissonTimer::new(0.0, start, rng(2)).unwrap();
    assert_eq!(timer.next_at(), None);
    assert_eq!(timer.poll(start + Duration::from_secs(1_000_000)), None);
    assert!(PoissonTimer::new(-1.0, start, rng(2)).is_err());
    assert!(PoissonTimer::new(f64::NAN, start, rng(2)).is_err());
    assert!(PoissonTimer::new(f64::INFINITY, start, rng(2)).is_err());
}

#[test]
fn node_cover_merges_loop_and_drop_streams() {
    let start = Instant::ORIGIN;
    let mut cover = CoverScheduler::new(0.05, 0.05, start, rng(3), rng(4)).unwrap();
    let (mut loops, mut drops) = (Vec::new(), Vec::new());
    let mut previous = start;
    while loops.len() + drops.len() < 3_000 {
        let Some(next) = cover.next_event_at() else { panic!("both streams enabled") };
        let event = cover.poll(next).expect("due at its own deadline");
        assert_eq!(event.scheduled_at, next);
        assert!(event.scheduled_at >= previous, "merged in time order");
        previous = event.scheduled_at;
        match event.kind {
            CoverKind::Loop => loops.push(event.scheduled_at),
            CoverKind::Drop => drops.push(event.scheduled_at),
        }
        assert!(cover.poll(next).is_none_or(|other| other.scheduled_at == next));
    }
    // Each stream alone is Poisson at 0.05 per second (mean gap 20 s).
    for stream in [&loops, &drops] {
        let outcome = ks::one_sample(&gaps(stream, start), |x| exponential::cdf(x, 20.0), ALPHA);
        assert!(!outcome.rejects(), "{outcome:?}");
    }
    // Roughly half each.
    assert!((loops.len() as f64 / 3_000.0 - 0.5).abs() < 0.05);
    let disabled = CoverScheduler::new(0.0, 0.0, start, rng(5), rng(6)).unwrap();
    assert_eq!(disabled.next_event_at(), None);
}

/// Drives a send queue for `slots` emissions; `traffic(slot)` real packets are pushed before
/// each slot is polled. Returns each slot's time and whether it carried a real packet, plus
/// the queue length seen before each slot.
fn drive(seed: u64, slots: usize, mut traffic: impl FnMut(usize) -> usize) -> (Vec<Instant>, Vec<bool>, Vec<usize>) {
    let start = Instant::ORIGIN;
    let mut queue = SendQueue::new(10.0, 1_000, start, rng(seed)).unwrap();
    let (mut times, mut real, mut backlog) = (Vec::new(), Vec::new(), Vec::new());
    let mut packet = 0u64;
    for slot in 0..slots {
        for _ in 0..traffic(slot) {
            packet += 1;
            let _ = queue.push(packet);
        }
        backlog.push(queue.len());
        let due = queue.next_emission_at().expect("enabled");
        let emission = queue.poll(due).expect("due");
        times.push(emission.at - start);
        real.push(matches!(emission.payload, Payload::Real(_)));
    }
    let times = times.into_iter().map(|offset| start + offset).collect();
    (times, real, backlog)
}

#[test]
fn emission_times_are_identical_with_and_without_real_traffic() {
    // Same seed: the schedule must be bit-for-bit the same whether the client is idle or
    // busy, because real packets only take the place of cover in existing slots.
    let (idle_times, idle_real, _) = drive(7, 2_000, |_| 0);
    let (busy_times, busy_real, _) = drive(7, 2_000, |slot| if (slot / 100) % 2 == 0 { 3 } else { 0 });
    assert!(idle_real.iter().all(|real| !real));
    assert!(busy_real.iter().filter(|real| **real).count() > 500, "traffic was carried");
    let idle_offsets: Vec<Duration> = idle_times.windows(2).map(|w| w[1] - w[0]).collect();
    let busy_offsets: Vec<Duration> = busy_times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(idle_offsets, busy_offsets);
}

#[test]
fn emission_gaps_are_independent_of_load() {
    // Different seeds, so this is a genuine statistical comparison: a bursty busy client and
    // an idle one produce the same gap distribution (two-sample KS), the gaps are Exp(1/λ),
    // and the gap after a slot does not correlate with the backlog before it.
    let (idle_times, _, _) = drive(11, 3_000, |_| 0);
    let (busy_times, busy_real, backlog) = drive(12, 3_000, |slot| if slot % 50 < 10 { 4 } else { 0 });
    let start_idle = idle_times[0];
    let start_busy = busy_times[0];
    let idle_gaps = gaps(&idle_times[1..], start_idle);
    let busy_gaps = gaps(&busy_times[1..], start_busy);
    let same = ks::two_sample(&idle_gaps, &busy_gaps, ALPHA);
    assert!(!same.rejects(), "{same:?}");
    let fit = ks::one_sample(&busy_gaps, |x| exponential::cdf(x, 0.1), ALPHA);
    assert!(!fit.rejects(), "{fit:?}");
    assert!(busy_real.iter().any(|r| *r) && busy_real.iter().any(|r| !r));
    let backlog: Vec<f64> = backlog[1..].iter().map(|b| *b as f64).collect();
    let rho = correlation::spearman(&backlog, &busy_gaps).expect("non-constant");
    // |ρ| beyond 2.58/√n would be significant at 1 %.
    assert!(rho.abs() < 2.58 / (busy_gaps.len() as f64).sqrt(), "rho {rho}");
    // Negative control for the two-sample test: gaps of a 20 % faster process are told apart.
    let faster: Vec<f64> = idle_gaps.iter().map(|g| g / 1.2).collect();
    assert!(ks::two_sample(&faster, &busy_gaps, ALPHA).rejects());
}

#[test]
fn send_queue_is_bounded_and_fifo() {
    let start = Instant::ORIGIN;
    let mut queue = SendQueue::new(1.0, 2, start, rng(13)).unwrap();
    queue.push("a").unwrap();
    queue.push("b").unwrap();
    let refused = queue.push("c").unwrap_err();
    assert_eq!(refused.0, "c");
    let due = queue.next_emission_at().unwrap();
    assert_eq!(queue.poll(due).map(|e| e.payload), Some(Payload::Real("a")));
    let due = queue.next_emission_at().unwrap();
    assert_eq!(queue.poll(due).map(|e| e.payload), Some(Payload::Real("b")));
    let due = queue.next_emission_at().unwrap();
    assert!(queue.poll(due - Duration::from_nanos(1)).is_none(), "not before its slot");
    assert_eq!(queue.poll(due).map(|e| e.payload), Some(Payload::Cover));
}
