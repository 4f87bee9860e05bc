//! Timing unlinkability, volume correlation and per-hop delay checks.

use nox_anonymity::simulate::{SimConfig, simulate};
use nox_anonymity::{
    AnonymityError, delay_exponentiality, expected_over_delayed_fraction, over_delayed_fraction, timing_correlation,
    unlinkability,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn config(mean_delay_us: f64) -> SimConfig {
    SimConfig { mean_delay_us, clients: 20, duration_us: 2_000_000, ..SimConfig::default() }
}

#[test]
fn unlinkability_rejects_no_mixing_and_accepts_strong_mixing() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let sim = simulate(&config(0.0), &mut rng);
    let linked = unlinkability(&sim.observation, 20, 10, &mut rng).unwrap();
    assert!(linked.ks_p_value < 1e-6, "μ = 0: KS p = {}", linked.ks_p_value);
    assert!(linked.chi_square_p_value < 1e-6, "μ = 0: χ² p = {}", linked.chi_square_p_value);
    assert!(linked.mean_observed_lag_us < linked.mean_null_lag_us / 10.0);

    let sim = simulate(&config(100_000.0), &mut rng);
    let mixed = unlinkability(&sim.observation, 20, 10, &mut rng).unwrap();
    assert!(mixed.ks_p_value > 0.01, "μ = 100 ms: KS p = {}", mixed.ks_p_value);
    assert!(mixed.chi_square_p_value > 0.001, "μ = 100 ms: χ² p = {}", mixed.chi_square_p_value);
    assert_eq!(mixed.chi_square_degrees_of_freedom, 9);
    assert!(matches!(unlinkability(&sim.observation, 0, 10, &mut rng), Err(AnonymityError::InvalidParameter(_))));
}

#[test]
fn volume_correlation_links_pairs_without_mixing() {
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let sim = simulate(&config(0.0), &mut rng);
    let report = timing_correlation(&sim.observation, 100_000, 0, 4, Some(&sim.truth)).unwrap();
    assert_eq!(report.linking_accuracy, Some(1.0));
    assert!(report.true_pairs_mean_pearson.unwrap() > 0.99);
    assert!(report.aggregate.pearson.unwrap() > 0.99);
    assert!(report.true_pairs_mean_mi_bits.unwrap() > report.other_pairs_mean_mi_bits.unwrap());

    let cfg = config(100_000.0);
    let sim = simulate(&cfg, &mut rng);
    let lag = (3.0 * cfg.mean_delay_us) as u64;
    let mixed = timing_correlation(&sim.observation, 100_000, lag, 4, Some(&sim.truth)).unwrap();
    assert!(mixed.true_pairs_mean_pearson.unwrap() < 0.9);
    assert!(mixed.linking_accuracy.unwrap() < 1.0);
    // Without ground truth only the aggregate is reported.
    let blind = timing_correlation(&sim.observation, 100_000, lag, 4, None).unwrap();
    assert_eq!(blind.linking_accuracy, None);
    assert_eq!(blind.aggregate, mixed.aggregate);
}

#[test]
fn over_delayed_fraction_matches_the_exponential_cdf() {
    let mut rng = ChaCha20Rng::seed_from_u64(13);
    let (mean, processing) = (1_000.0, 300.0);
    let delays: Vec<f64> = (0..20_000)
        .map(|_| {
            let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            -u.ln() * mean
        })
        .collect();
    let report = over_delayed_fraction(&delays, &[processing]).unwrap();
    let expected = expected_over_delayed_fraction(mean, processing); // 1 − e^{−0.3} ≈ 0.259
    let se = (expected * (1.0 - expected) / delays.len() as f64).sqrt();
    assert!((report.fraction - expected).abs() < 4.0 * se, "{} vs {expected}", report.fraction);
    assert_eq!(expected_over_delayed_fraction(0.0, 1.0), 1.0);
    assert!(matches!(over_delayed_fraction(&delays, &[1.0, 2.0]), Err(AnonymityError::LengthMismatch { .. })));

    // Exp(μ) passes; the same delays shifted by the processing time (seed 003, approach 2)
    // do not: the negative control.
    let fit = delay_exponentiality(&delays, mean, 0.01).unwrap();
    assert!(!fit.rejects, "D = {}", fit.statistic);
    let shifted: Vec<f64> = delays.iter().map(|d| d + processing).collect();
    assert!(delay_exponentiality(&shifted, mean, 0.01).unwrap().rejects);
    // Over-delayed packets released at once: a point mass at the processing time.
    let released: Vec<f64> = delays.iter().map(|&d| d.max(processing)).collect();
    assert!(delay_exponentiality(&released, mean, 0.01).unwrap().rejects);
}
