//! Per-hop delay checks: over-delayed packets (Vu 2023, seed 003) and exponentiality.

use serde::Serialize;

use crate::AnonymityError;

/// How many packets had an intended delay shorter than their processing time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OverDelayReport {
    /// Packets examined.
    pub packets: usize,
    /// Packets whose intended delay was shorter than their processing (unwrap) time.
    pub over_delayed: usize,
    /// `over_delayed / packets`.
    pub fraction: f64,
}

/// Counts over-delayed packets: intended delay `d_i < processing_i`. Such a packet has already
/// spent longer than its delay in the mix when its delay is known; releasing it at once makes
/// a point mass at `arrival + processing` that links it to its arrival (seed 003, §5.3).
/// `processing_us` has one entry per packet, or a single entry used for all.
pub fn over_delayed_fraction(delays_us: &[f64], processing_us: &[f64]) -> Result<OverDelayReport, AnonymityError> {
    if delays_us.is_empty() {
        return Err(AnonymityError::Empty("no delays"));
    }
    if processing_us.len() != 1 && processing_us.len() != delays_us.len() {
        return Err(AnonymityError::LengthMismatch { left: delays_us.len(), right: processing_us.len() });
    }
    let processing = |i: usize| processing_us[if processing_us.len() == 1 { 0 } else { i }];
    let over_delayed = delays_us.iter().enumerate().filter(|&(i, &d)| d < processing(i)).count();
    Ok(OverDelayReport {
        packets: delays_us.len(),
        over_delayed,
        fraction: over_delayed as f64 / delays_us.len() as f64,
    })
}

/// `P(Exp(μ) < p) = 1 − e^{−p/μ}`: the expected over-delayed fraction for a constant
/// processing time `p` (1 when μ = 0 and p > 0).
pub fn expected_over_delayed_fraction(mean_us: f64, processing_us: f64) -> f64 {
    nox_stats::exponential::cdf(processing_us, mean_us)
}

/// One-sample KS test of delay samples against Exp(μ).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExponentialityReport {
    /// Samples tested.
    pub samples: usize,
    /// KS statistic `D`.
    pub statistic: f64,
    /// Asymptotic p-value.
    pub p_value: f64,
    /// Critical value at `alpha`.
    pub critical_value: f64,
    /// Whether Exp(μ) is rejected at `alpha`.
    pub rejects: bool,
}

/// Tests `samples_us` against Exp(`mean_us`) at significance `alpha`. A processing time added
/// to every delay (approach 2 of seed 003) or a spike of over-delayed releases is rejected
/// once the sample is large enough.
pub fn delay_exponentiality(
    samples_us: &[f64],
    mean_us: f64,
    alpha: f64,
) -> Result<ExponentialityReport, AnonymityError> {
    if samples_us.is_empty() {
        return Err(AnonymityError::Empty("no delay samples"));
    }
    if mean_us <= 0.0 || !(0.0..1.0).contains(&alpha) || alpha == 0.0 {
        return Err(AnonymityError::InvalidParameter("need μ > 0 and 0 < α < 1"));
    }
    let outcome = nox_stats::ks::one_sample(samples_us, |x| nox_stats::exponential::cdf(x, mean_us), alpha);
    Ok(ExponentialityReport {
        samples: samples_us.len(),
        statistic: outcome.statistic,
        p_value: outcome.p_value,
        critical_value: outcome.critical_value,
        rejects: outcome.rejects(),
    })
}
