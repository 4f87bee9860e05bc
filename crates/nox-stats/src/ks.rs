//! Kolmogorov–Smirnov goodness-of-fit tests, one- and two-sample.

/// The result of a KS test at a chosen significance level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsOutcome {
    /// `D`: the largest distance between the empirical and reference CDFs.
    pub statistic: f64,
    /// The critical value of `D` at the requested significance level.
    pub critical_value: f64,
    /// Asymptotic p-value of `D` (with Stephens' correction).
    pub p_value: f64,
    /// `n` for one sample, `n·m/(n+m)` for two samples.
    pub n_effective: f64,
}

impl KsOutcome {
    /// Whether the null hypothesis (same distribution) is rejected: `statistic > critical_value`.
    pub fn rejects(&self) -> bool {
        self.statistic > self.critical_value
    }
}

/// `c(α) = sqrt(-ln(α/2) / 2)`, the limit of `√n · D_crit` (1.628 at α = 0.01).
pub fn kolmogorov_coefficient(alpha: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt()
}

/// Critical value of `D` at significance `alpha` for an effective sample size `n_effective`,
/// using Stephens' approximation `c(α) / (√n + 0.12 + 0.11/√n)`.
pub fn critical_value(n_effective: f64, alpha: f64) -> f64 {
    let root = n_effective.sqrt();
    kolmogorov_coefficient(alpha) / (root + 0.12 + 0.11 / root)
}

/// Asymptotic p-value of a KS statistic: `Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}` with
/// `λ = (√n + 0.12 + 0.11/√n) · D`.
pub fn kolmogorov_p_value(statistic: f64, n_effective: f64) -> f64 {
    let root = n_effective.sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * statistic;
    if lambda < 0.2 {
        // The series converges too slowly here, and the answer is 1 to double precision.
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100u32 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u32 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// One-sample statistic `D = sup_x |F_n(x) − F(x)|` against a continuous CDF.
///
/// Returns 0 for an empty sample.
pub fn one_sample_statistic(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mut distance: f64 = 0.0;
    for (index, &value) in sorted.iter().enumerate() {
        let reference = cdf(value);
        let below = index as f64 / n;
        let at_or_below = (index + 1) as f64 / n;
        distance = distance.max((at_or_below - reference).abs()).max((reference - below).abs());
    }
    distance
}

/// Two-sample statistic `D = sup_x |F_a(x) − F_b(x)|`. Returns 0 if either sample is empty.
pub fn two_sample_statistic(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (len_a, len_b) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j) = (0usize, 0usize);
    let mut distance: f64 = 0.0;
    while i < a.len() && j < b.len() {
        // Step past every copy of the smallest value in both samples before comparing, so ties
        // between the samples do not create a spurious gap.
        let value = if a[i].total_cmp(&b[j]).is_le() { a[i] } else { b[j] };
        while i < a.len() && a[i].total_cmp(&value).is_le() {
            i += 1;
        }
        while j < b.len() && b[j].total_cmp(&value).is_le() {
            j += 1;
        }
        distance = distance.max((i as f64 / len_a - j as f64 / len_b).abs());
    }
    distance
}

/// One-sample KS test of `samples` against `cdf` at significance `alpha`.
pub fn one_sample(samples: &[f64], cdf: impl Fn(f64) -> f64, alpha: f64) -> KsOutcome {
    let statistic = one_sample_statistic(samples, cdf);
    outcome(statistic, samples.len() as f64, alpha)
}

/// Two-sample KS test of `a` against `b` at significance `alpha`.
pub fn two_sample(a: &[f64], b: &[f64], alpha: f64) -> KsOutcome {
    let statistic = two_sample_statistic(a, b);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let n_effective = if n + m > 0.0 { n * m / (n + m) } else { 0.0 };
    outcome(statistic, n_effective, alpha)
}

fn outcome(statistic: f64, n_effective: f64, alpha: f64) -> KsOutcome {
    KsOutcome {
        statistic,
        critical_value: critical_value(n_effective, alpha),
        p_value: kolmogorov_p_value(statistic, n_effective),
        n_effective,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exponential;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    use std::time::Duration;

    #[test]
    fn coefficient_matches_tables() {
        assert!((kolmogorov_coefficient(0.01) - 1.6276).abs() < 1e-3);
        assert!((kolmogorov_coefficient(0.05) - 1.3581).abs() < 1e-3);
        // Tabulated exact critical value for n = 100, α = 0.05 is 0.1340 (Stephens gives 0.1340).
        assert!((critical_value(100.0, 0.05) - 0.134).abs() < 1e-3);
    }

    #[test]
    fn p_value_at_critical_value_is_alpha() {
        for &alpha in &[0.01, 0.05, 0.1] {
            let p = kolmogorov_p_value(critical_value(500.0, alpha), 500.0);
            assert!((p - alpha).abs() < 1e-3, "alpha {alpha} p {p}");
        }
    }

    #[test]
    fn statistic_of_a_perfect_grid_is_half_a_step() {
        // Points at the middle of n equal cells of U(0,1): D = 1/(2n).
        let n = 10;
        let samples: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
        let d = one_sample_statistic(&samples, |x| x.clamp(0.0, 1.0));
        assert!((d - 0.05).abs() < 1e-12);
    }

    #[test]
    fn exponential_samples_pass_and_a_shifted_sample_fails() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mean = Duration::from_millis(5);
        let samples: Vec<f64> = (0..4000).map(|_| exponential::sample(&mut rng, mean).as_secs_f64()).collect();
        let good = one_sample(&samples, |x| exponential::cdf(x, 0.005), 0.01);
        assert!(!good.rejects(), "{good:?}");
        // Negative control: the same samples shifted by a fifth of the mean.
        let shifted: Vec<f64> = samples.iter().map(|x| x + 0.001).collect();
        let bad = one_sample(&shifted, |x| exponential::cdf(x, 0.005), 0.01);
        assert!(bad.rejects(), "{bad:?}");
    }

    #[test]
    fn two_sample_same_and_different_distributions() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let uniform = |rng: &mut ChaCha20Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let a: Vec<f64> = (0..2000).map(|_| uniform(&mut rng)).collect();
        let b: Vec<f64> = (0..3000).map(|_| uniform(&mut rng)).collect();
        assert!(!two_sample(&a, &b, 0.01).rejects());
        let c: Vec<f64> = b.iter().map(|x| x * 0.9).collect();
        assert!(two_sample(&a, &c, 0.01).rejects());
    }

    #[test]
    fn two_sample_identical_samples_have_zero_distance() {
        let a = [1.0, 2.0, 2.0, 3.0];
        assert_eq!(two_sample_statistic(&a, &a), 0.0);
        assert_eq!(two_sample_statistic(&a, &[]), 0.0);
        assert_eq!(two_sample_statistic(&[0.0], &[1.0]), 1.0);
    }
}
