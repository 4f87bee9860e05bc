//! The realised delays (release − arrival) are Exp(μ): KS tests at fixed seeds, with negative
//! controls showing the test would catch the distortions the seed analysis describes.

use std::time::{Duration, Instant};

use nox_mixing::{Delay, MixingConfig, MixingScheduler, OverDelayPolicy};
use nox_stats::{exponential, ks};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const MEAN: Duration = Duration::from_millis(10);
const SAMPLES: usize = 5_000;
const ALPHA: f64 = 0.01;

/// Feeds `SAMPLES` packets arriving as a Poisson stream, each spending `processing(rng)` in
/// Sphinx processing, and returns their realised delays in seconds, measured from arrival.
fn realised_delays(
    policy: OverDelayPolicy,
    seed: u64,
    mut processing: impl FnMut(&mut ChaCha20Rng) -> Duration,
) -> (Vec<f64>, u64) {
    let base = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut config = MixingConfig::new(MEAN, SAMPLES);
    config.over_delay_policy = policy;
    let mut scheduler = MixingScheduler::new(config);
    let mut arrived = base;
    for _ in 0..SAMPLES {
        arrived += exponential::sample(&mut rng, Duration::from_millis(1));
        let enqueued = arrived + processing(&mut rng);
        scheduler.insert(arrived, Delay::Sample, arrived, enqueued, &mut rng).expect("room");
    }
    let mut delays = Vec::with_capacity(SAMPLES);
    while let Some(deadline) = scheduler.next_deadline() {
        for arrival in scheduler.drain_expired(deadline) {
            delays.push((deadline - arrival).as_secs_f64());
        }
    }
    (delays, scheduler.counters().over_delayed)
}

fn exp_cdf(x: f64) -> f64 {
    exponential::cdf(x, MEAN.as_secs_f64())
}

#[test]
fn delays_without_processing_are_exponential() {
    let (delays, over_delayed) = realised_delays(OverDelayPolicy::ResampleResidual, 21, |_| Duration::ZERO);
    assert_eq!(over_delayed, 0);
    let outcome = ks::one_sample(&delays, exp_cdf, ALPHA);
    assert!(!outcome.rejects(), "{outcome:?}");
    // Negative control: Exp with a mean 10 % off is rejected at this sample size.
    let wrong_mean = ks::one_sample(&delays, |x| exponential::cdf(x, 0.011), ALPHA);
    assert!(wrong_mean.rejects(), "{wrong_mean:?}");
}

#[test]
fn processing_below_the_drawn_delay_is_absorbed() {
    // Random processing of 0–200 µs (2 % of μ): packets not over-delayed keep their exact
    // arrival + delay deadline, and the whole sample still fits Exp(μ) measured from arrival.
    let (delays, over_delayed) =
        realised_delays(OverDelayPolicy::ResampleResidual, 22, |rng| Duration::from_micros(rng.next_u64() % 200));
    assert!(over_delayed > 0 && over_delayed < (SAMPLES as u64) / 20, "{over_delayed}");
    let outcome = ks::one_sample(&delays, exp_cdf, ALPHA);
    assert!(!outcome.rejects(), "{outcome:?}");
}

#[test]
fn resample_makes_the_time_after_processing_exponential() {
    // Constant processing u = μ/2: a third of draws (1 − e^{−1/2} ≈ 39 %) are over-delayed.
    let processing = MEAN / 2;
    let (delays, over_delayed) = realised_delays(OverDelayPolicy::ResampleResidual, 23, |_| processing);
    let expected = SAMPLES as f64 * (1.0 - (-0.5f64).exp());
    let sigma = (expected * (-0.5f64).exp()).sqrt();
    assert!((over_delayed as f64 - expected).abs() < 4.0 * sigma, "{over_delayed} vs {expected}");
    let u = processing.as_secs_f64();
    assert!(delays.iter().all(|d| *d >= u - 1e-9), "nothing leaves before processing ends");
    // Memorylessness: delay − u is Exp(μ) even though a third of the packets were re-drawn.
    let after_processing: Vec<f64> = delays.iter().map(|d| d - u).collect();
    let outcome = ks::one_sample(&after_processing, exp_cdf, ALPHA);
    assert!(!outcome.rejects(), "{outcome:?}");
    // No point mass at u: the share released within 1 % of μ after processing is ≈ 1 %.
    let spike = after_processing.iter().filter(|d| **d < 0.0001).count();
    assert!(spike < SAMPLES / 50, "{spike}");
}

#[test]
fn release_immediately_leaves_the_spike_the_seed_measured() {
    let processing = MEAN / 2;
    let (delays, over_delayed) = realised_delays(OverDelayPolicy::ReleaseImmediately, 23, |_| processing);
    let u = processing.as_secs_f64();
    let at_processing_end = delays.iter().filter(|d| (**d - u).abs() < 1e-9).count();
    assert_eq!(at_processing_end as u64, over_delayed, "all over-delayed leave at arrival + u");
    assert!(at_processing_end > SAMPLES / 3);
    // The realised delays are max(δ, u): rejected both as Exp(μ) and as u + Exp(μ).
    assert!(ks::one_sample(&delays, exp_cdf, ALPHA).rejects());
    let shifted: Vec<f64> = delays.iter().map(|d| d - u).collect();
    assert!(ks::one_sample(&shifted, exp_cdf, ALPHA).rejects());
}
