//! Traffic-volume correlation between what clients send and what destinations receive.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::{AnonymityError, Endpoint, GroundTruth, Observation};

/// Correlation of two windowed count series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairCorrelation {
    /// Pearson's r (`None` if a series is constant).
    pub pearson: Option<f64>,
    /// Spearman's ρ (`None` if a series is constant).
    pub spearman: Option<f64>,
    /// Plug-in mutual information over equal-frequency bins, in bits (biased upwards).
    pub mutual_information_bits: f64,
    /// Miller–Madow corrected MI: plug-in minus `(B_xy − B_x − B_y + 1) / (2 n ln 2)`, where the
    /// `B` count occupied bins; clamped at 0.
    pub mutual_information_corrected_bits: f64,
}

/// Window-count correlation report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrelationReport {
    /// Number of windows.
    pub windows: usize,
    /// Window width (µs).
    pub window_us: u64,
    /// Receives were shifted back by this much before windowing (µs).
    pub lag_us: u64,
    /// All sends vs all receives per window.
    pub aggregate: PairCorrelation,
    /// Mean Pearson r over the true (client, destination) pairs (needs ground truth).
    pub true_pairs_mean_pearson: Option<f64>,
    /// Mean Pearson r over all other pairs.
    pub other_pairs_mean_pearson: Option<f64>,
    /// Mean corrected MI over the true pairs (bits).
    pub true_pairs_mean_mi_bits: Option<f64>,
    /// Mean corrected MI over all other pairs (bits).
    pub other_pairs_mean_mi_bits: Option<f64>,
    /// Fraction of destinations whose best-correlated client is a true correspondent: the
    /// success rate of a guess-the-sender-by-volume adversary (needs ground truth).
    pub linking_accuracy: Option<f64>,
}

/// Correlates per-client send counts with per-destination receive counts in windows of
/// `window_us`, after shifting receives back by `lag_us` (the adversary's estimate of the
/// end-to-end latency, e.g. `L · (μ + processing)`). `bins` equal-frequency bins per series are
/// used for mutual information. Ground truth, if given, only labels which pairs are real.
pub fn timing_correlation(
    observation: &Observation,
    window_us: u64,
    lag_us: u64,
    bins: usize,
    truth: Option<&GroundTruth>,
) -> Result<CorrelationReport, AnonymityError> {
    if window_us == 0 || bins < 2 {
        return Err(AnonymityError::InvalidParameter("need window > 0 and bins ≥ 2"));
    }
    let Some(last) = observation.events.last() else {
        return Err(AnonymityError::Empty("no events"));
    };
    let windows = (last.time_us / window_us + 1) as usize;
    let mut sends: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut receives: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for event in &observation.events {
        if let Endpoint::Client(c) = event.from {
            sends.entry(c).or_insert_with(|| vec![0.0; windows])[(event.time_us / window_us) as usize] += 1.0;
        }
        if let Endpoint::Destination(d) = event.to {
            let shifted = event.time_us.saturating_sub(lag_us);
            receives.entry(d).or_insert_with(|| vec![0.0; windows])[(shifted / window_us) as usize] += 1.0;
        }
    }
    if sends.is_empty() || receives.is_empty() {
        return Err(AnonymityError::Empty("no sends or no receives"));
    }
    let total = |series: &BTreeMap<u32, Vec<f64>>| {
        let mut sum = vec![0.0; windows];
        series.values().for_each(|s| s.iter().zip(sum.iter_mut()).for_each(|(a, b)| *b += a));
        sum
    };
    let aggregate = correlate(&total(&sends), &total(&receives), bins);
    let true_pairs = truth.map(|t| true_pairs(observation, t)).unwrap_or_default();
    let (mut true_r, mut other_r, mut true_mi, mut other_mi) = (vec![], vec![], vec![], vec![]);
    let mut linked = 0usize;
    for (&destination, received) in &receives {
        let mut best: Option<(f64, u32)> = None;
        for (&client, sent) in &sends {
            let pair = correlate(sent, received, bins);
            let r = pair.pearson.unwrap_or(0.0);
            if best.is_none_or(|(b, c)| r > b || (r == b && client < c)) {
                best = Some((r, client));
            }
            let is_true = true_pairs.contains(&(client, destination));
            let (rs, mis) = if is_true { (&mut true_r, &mut true_mi) } else { (&mut other_r, &mut other_mi) };
            rs.push(r);
            mis.push(pair.mutual_information_corrected_bits);
        }
        if best.is_some_and(|(_, c)| true_pairs.contains(&(c, destination))) {
            linked += 1;
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    Ok(CorrelationReport {
        windows,
        window_us,
        lag_us,
        aggregate,
        true_pairs_mean_pearson: truth.and(mean(&true_r)),
        other_pairs_mean_pearson: truth.and(mean(&other_r)),
        true_pairs_mean_mi_bits: truth.and(mean(&true_mi)),
        other_pairs_mean_mi_bits: truth.and(mean(&other_mi)),
        linking_accuracy: truth.map(|_| linked as f64 / receives.len() as f64),
    })
}

/// `(sender, destination)` of every message named by the ground truth.
fn true_pairs(observation: &Observation, truth: &GroundTruth) -> HashSet<(u32, u32)> {
    truth
        .message_delivery
        .iter()
        .filter_map(|(message, &index)| {
            let sender = *truth.message_sender.get(message)?;
            match observation.events.get(index)?.to {
                Endpoint::Destination(d) => Some((sender, d)),
                _ => None,
            }
        })
        .collect()
}

/// Pearson, Spearman and binned mutual information of two equal-length series.
pub(crate) fn correlate(x: &[f64], y: &[f64], bins: usize) -> PairCorrelation {
    let (plug_in, corrected) = mutual_information(x, y, bins);
    PairCorrelation {
        pearson: nox_stats::correlation::pearson(x, y),
        spearman: nox_stats::correlation::spearman(x, y),
        mutual_information_bits: plug_in,
        mutual_information_corrected_bits: corrected,
    }
}

/// Plug-in and Miller–Madow corrected mutual information (bits) over equal-frequency bins
/// (ordered maps throughout so the floating-point sums, and so the result, are deterministic)
/// (rank-based, ties share a bin).
pub(crate) fn mutual_information(x: &[f64], y: &[f64], bins: usize) -> (f64, f64) {
    let n = x.len().min(y.len());
    if n == 0 {
        return (0.0, 0.0);
    }
    let bin = |values: &[f64]| -> Vec<usize> {
        nox_stats::correlation::ranks(&values[..n])
            .into_iter()
            .map(|r| (((r - 1.0) * bins as f64 / n as f64) as usize).min(bins - 1))
            .collect()
    };
    let (bx, by) = (bin(x), bin(y));
    let mut joint: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let (mut px, mut py) = (vec![0.0; bins], vec![0.0; bins]);
    for (&a, &b) in bx.iter().zip(&by) {
        *joint.entry((a, b)).or_default() += 1.0;
        px[a] += 1.0;
        py[b] += 1.0;
    }
    let total = n as f64;
    let plug_in: f64 = joint.iter().map(|(&(a, b), &c)| c / total * (c * total / (px[a] * py[b])).log2()).sum();
    let occupied = |v: &[f64]| v.iter().filter(|&&c| c > 0.0).count() as f64;
    let correction = (joint.len() as f64 - occupied(&px) - occupied(&py) + 1.0) / (2.0 * total * 2f64.ln());
    (plug_in.max(0.0), (plug_in - correction).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutual_information_of_a_series_with_itself_is_its_binned_entropy() {
        let x: Vec<f64> = (0..400).map(f64::from).collect();
        let (plug_in, corrected) = mutual_information(&x, &x, 4);
        assert!((plug_in - 2.0).abs() < 1e-12, "{plug_in}");
        // 4 joint cells, 4 + 4 marginal bins: correction (4 − 8 + 1)/(2n ln 2) < 0 adds a bit.
        assert!(corrected >= plug_in);
    }

    #[test]
    fn miller_madow_removes_most_of_the_bias_on_independent_series() {
        // Two unrelated deterministic sequences (different LCG strides).
        let x: Vec<f64> = (0..200u64).map(|i| ((i * 7_919) % 211) as f64).collect();
        let y: Vec<f64> = (0..200u64).map(|i| ((i * 104_729 + 13) % 223) as f64).collect();
        let (plug_in, corrected) = mutual_information(&x, &y, 4);
        assert!(plug_in > 0.0 && plug_in < 0.2, "{plug_in}");
        assert!(corrected < plug_in);
        assert_eq!(mutual_information(&[], &[], 4), (0.0, 0.0));
    }
}
