//! Input/output timing unlinkability: are exit emission times independent of client send
//! times?

use rand_core::RngCore;
use serde::Serialize;

use crate::random::unit;
use crate::{AnonymityError, Endpoint, Observation};

/// KS and χ² tests of the observed output→nearest-input lags against a shuffled pairing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnlinkabilityReport {
    /// Client sends (real and cover: the adversary cannot tell them apart).
    pub inputs: usize,
    /// Exit→destination emissions scored: those inside the sending window (after the first
    /// send, not after the last).
    pub outputs: usize,
    /// Lags in the null sample (`shifts × outputs`, minus any without an earlier input).
    pub null_samples: usize,
    /// Mean observed lag (µs).
    pub mean_observed_lag_us: f64,
    /// Mean lag under the null (µs).
    pub mean_null_lag_us: f64,
    /// Two-sample KS statistic `D`.
    pub ks_statistic: f64,
    /// Asymptotic KS p-value.
    pub ks_p_value: f64,
    /// Pearson χ² statistic over null-quantile bins.
    pub chi_square_statistic: f64,
    /// χ² degrees of freedom.
    pub chi_square_degrees_of_freedom: usize,
    /// χ² p-value.
    pub chi_square_p_value: f64,
}

/// Tests whether emission times depend on send times.
///
/// For every emission at `o`, the observed statistic is the lag `o − (latest send ≤ o)`. The
/// null sample (emissions independent of sends) keeps both processes but breaks their
/// alignment: the emission times are circularly shifted by a uniform offset over the observed
/// span, `shifts` times, and the same lags are measured. The observed lags are then compared
/// with the null lags by a two-sample KS test and by a χ² test over `bins` equiprobable bins
/// of the null distribution. Small p-values mean the adversary can link outputs to inputs
/// by timing; large ones mean the lags look like chance.
pub fn unlinkability<R: RngCore + ?Sized>(
    observation: &Observation,
    shifts: usize,
    bins: usize,
    rng: &mut R,
) -> Result<UnlinkabilityReport, AnonymityError> {
    if shifts == 0 || bins < 2 {
        return Err(AnonymityError::InvalidParameter("need shifts ≥ 1 and bins ≥ 2"));
    }
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for event in &observation.events {
        if matches!(event.from, Endpoint::Client(_)) {
            inputs.push(event.time_us as f64);
        }
        if matches!(event.to, Endpoint::Destination(_)) {
            outputs.push(event.time_us as f64);
        }
    }
    inputs.sort_by(f64::total_cmp);
    let (Some(&first), Some(&last)) = (inputs.first(), inputs.last()) else {
        return Err(AnonymityError::Empty("no sends"));
    };
    // Only emissions inside the sending window are scored, and the null shifts wrap within
    // it: an emission after the last send (the drain at the end of a run) would have a long
    // lag for reasons that have nothing to do with linkability.
    outputs.retain(|&o| o > first && o <= last);
    let span = (last - first).max(1.0);
    let observed: Vec<f64> = outputs.iter().filter_map(|&o| lag(&inputs, o)).collect();
    let mut null = Vec::with_capacity(shifts * observed.len());
    for _ in 0..shifts {
        let offset = unit(rng) * span;
        null.extend(outputs.iter().filter_map(|&o| {
            let shifted = first + (o - first + offset).rem_euclid(span);
            lag(&inputs, shifted)
        }));
    }
    if observed.len() < 2 || null.len() < 2 {
        return Err(AnonymityError::Empty("fewer than two lags"));
    }
    let ks = nox_stats::ks::two_sample(&observed, &null, 0.01);
    let (observed_counts, expected_counts) = binned(&observed, &mut null, bins);
    let chi = nox_stats::chi_square::goodness_of_fit(&observed_counts, &expected_counts);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Ok(UnlinkabilityReport {
        inputs: inputs.len(),
        outputs: observed.len(),
        null_samples: null.len(),
        mean_observed_lag_us: mean(&observed),
        mean_null_lag_us: mean(&null),
        ks_statistic: ks.statistic,
        ks_p_value: ks.p_value,
        chi_square_statistic: chi.map_or(0.0, |c| c.statistic),
        chi_square_degrees_of_freedom: chi.map_or(0, |c| c.degrees_of_freedom),
        chi_square_p_value: chi.map_or(1.0, |c| c.p_value),
    })
}

/// `time − (latest input ≤ time)`, or `None` if no input precedes `time`.
fn lag(sorted_inputs: &[f64], time: f64) -> Option<f64> {
    let before = sorted_inputs.partition_point(|&t| t <= time);
    (before > 0).then(|| time - sorted_inputs[before - 1])
}

/// Observed counts and their expectation under the null, over bins cut at null quantiles
/// (duplicate cut points merged, so bins stay well defined on tied lags).
fn binned(observed: &[f64], null: &mut [f64], bins: usize) -> (Vec<f64>, Vec<f64>) {
    null.sort_by(f64::total_cmp);
    let mut cuts: Vec<f64> = (1..bins).map(|k| null[k * null.len() / bins]).collect();
    cuts.dedup();
    let bin_of = |x: f64| cuts.partition_point(|&c| c <= x);
    let mut observed_counts = vec![0.0; cuts.len() + 1];
    let mut null_counts = vec![0.0; cuts.len() + 1];
    observed.iter().for_each(|&x| observed_counts[bin_of(x)] += 1.0);
    null.iter().for_each(|&x| null_counts[bin_of(x)] += 1.0);
    let scale = observed.len() as f64 / null.len() as f64;
    let expected = null_counts.iter().map(|c| c * scale).collect();
    (observed_counts, expected)
}
