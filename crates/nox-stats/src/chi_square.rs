//! Pearson's χ² goodness-of-fit test and the χ² survival function.

/// The result of a χ² goodness-of-fit test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChiSquareOutcome {
    /// `χ² = Σ (O_i − E_i)² / E_i` over the bins with a positive expectation.
    pub statistic: f64,
    /// Degrees of freedom: bins with a positive expectation, minus one.
    pub degrees_of_freedom: usize,
    /// `P(X ≥ χ²)` for `X ~ χ²(degrees_of_freedom)`.
    pub p_value: f64,
}

/// Pearson's χ² test of `observed` counts against `expected` counts (same length).
///
/// Bins whose expectation is not positive are skipped. `None` when the lengths differ or fewer
/// than two bins have a positive expectation.
pub fn goodness_of_fit(observed: &[f64], expected: &[f64]) -> Option<ChiSquareOutcome> {
    if observed.len() != expected.len() {
        return None;
    }
    let mut statistic = 0.0;
    let mut bins = 0usize;
    for (&o, &e) in observed.iter().zip(expected) {
        if e > 0.0 {
            statistic += (o - e) * (o - e) / e;
            bins += 1;
        }
    }
    if bins < 2 {
        return None;
    }
    let degrees_of_freedom = bins - 1;
    Some(ChiSquareOutcome { statistic, degrees_of_freedom, p_value: survival(statistic, degrees_of_freedom as f64) })
}

/// `P(X ≥ x)` for `X ~ χ²(k)`: the regularized upper incomplete gamma `Q(k/2, x/2)`.
pub fn survival(x: f64, k: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    regularized_upper_gamma(k / 2.0, x / 2.0).clamp(0.0, 1.0)
}

/// `Q(a, x) = Γ(a, x) / Γ(a)`: series for `x < a + 1`, Lentz continued fraction otherwise
/// (Numerical Recipes §6.2).
fn regularized_upper_gamma(a: f64, x: f64) -> f64 {
    let log_prefactor = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut denominator) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            denominator += 1.0;
            term *= x / denominator;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        1.0 - sum * log_prefactor.exp()
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let i = f64::from(i);
            let an = -i * (i - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-15 {
                break;
            }
        }
        h * log_prefactor.exp()
    }
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, n = 9; about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survival_matches_known_values() {
        // χ²(1): P(X ≥ 3.841) ≈ 0.05; χ²(10): P(X ≥ 18.307) ≈ 0.05; χ²(2): e^{−x/2}.
        assert!((survival(3.841_458_8, 1.0) - 0.05).abs() < 1e-6);
        assert!((survival(18.307_038, 10.0) - 0.05).abs() < 1e-6);
        assert!((survival(4.0, 2.0) - (-2.0f64).exp()).abs() < 1e-12);
        assert!((survival(100.0, 2.0) - (-50.0f64).exp()).abs() < 1e-25);
        assert_eq!(survival(0.0, 3.0), 1.0);
    }

    #[test]
    fn goodness_of_fit_flags_a_skewed_histogram() {
        let expected = [25.0; 4];
        let fair = goodness_of_fit(&[24.0, 26.0, 25.0, 25.0], &expected).unwrap();
        assert_eq!(fair.degrees_of_freedom, 3);
        assert!(fair.p_value > 0.9);
        let skewed = goodness_of_fit(&[70.0, 10.0, 10.0, 10.0], &expected).unwrap();
        assert!(skewed.p_value < 1e-10);
        assert!(goodness_of_fit(&[1.0], &[1.0]).is_none());
        assert!(goodness_of_fit(&[1.0, 2.0], &[1.0]).is_none());
    }
}
