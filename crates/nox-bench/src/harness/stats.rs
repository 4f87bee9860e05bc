//! Summaries of measured samples: percentiles, `{n, p50, p90, p99, max, mean}`, empirical CDFs,
//! Wilson intervals, the mean and range of repeated runs, and rounding for the JSON files.

use serde_json::{Value, json};

/// Nearest-rank percentile of sorted samples (`q` in [0, 1]).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let index = ((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted.get(index).copied()
}

/// Sorts in place and returns `{n, p50, p90, p99, max, mean}`.
pub fn stats(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    let mean = if samples.is_empty() { None } else { Some(samples.iter().sum::<f64>() / samples.len() as f64) };
    let q = |q: f64| percentile(samples, q).map(round3);
    json!({ "n": samples.len(), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": samples.last().copied().map(round3),
        "mean": mean.map(round3) })
}

/// An empirical CDF series of sorted samples: x = value, y = fraction ≤ x.
pub fn cdf_series(label: &str, sorted: &[f64]) -> Value {
    let n = sorted.len().max(1) as f64;
    let y: Vec<f64> = (1..=sorted.len()).map(|i| round3(i as f64 / n)).collect();
    json!({ "label": label, "x": sorted.iter().map(|v| round3(*v)).collect::<Vec<_>>(), "y": y })
}

/// Rounds to 3 decimals (milliseconds to microseconds) to keep files small.
pub fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Wilson 95 % interval of a binomial proportion `successes / n`.
pub fn wilson95(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (z, n) = (1.959_964, n as f64);
    let p = successes as f64 / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * ((p * (1.0 - p) + z * z / (4.0 * n)) / n).sqrt() / (1.0 + z * z / n);
    // At 0 or n successes the bound is exactly 0 or 1 (not 1 - ε from rounding).
    let lo = if successes == 0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if successes as f64 >= n { 1.0 } else { (centre + half).min(1.0) };
    (lo, hi)
}

/// Mean, minimum and maximum of the finite values (`None` if there are none).
pub fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = finite.len();
    (n > 0).then(|| {
        let mean = finite.iter().sum::<f64>() / n as f64;
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (mean, lo, hi)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_stats() {
        let mut samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = stats(&mut samples);
        assert_eq!((s["p50"].as_f64(), s["p90"].as_f64(), s["p99"].as_f64()), (Some(51.0), Some(90.0), Some(99.0)));
        assert_eq!((s["max"].as_f64(), s["mean"].as_f64(), s["n"].as_u64()), (Some(100.0), Some(50.5), Some(100)));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[3.0], 0.99), Some(3.0));
    }

    #[test]
    fn cdf_ends_at_one() {
        let c = cdf_series("a", &[1.0, 2.0, 4.0, 8.0]);
        assert_eq!(c["y"], json!([0.25, 0.5, 0.75, 1.0]));
        assert_eq!(c["x"], json!([1.0, 2.0, 4.0, 8.0]));
    }

    #[test]
    fn wilson_interval_brackets_the_proportion() {
        let (lo, hi) = wilson95(197, 200);
        assert!(lo < 0.985 && 0.985 < hi && lo > 0.95 && hi < 1.0, "{lo} {hi}");
        assert_eq!(wilson95(0, 0), (0.0, 1.0));
        let (lo, hi) = wilson95(200, 200);
        assert!(lo > 0.98 && hi == 1.0, "a certain event is inside [lo, 1]");
    }

    #[test]
    fn repeated_phases_average_with_their_range() {
        assert_eq!(spread(&[2.0, 1.0, f64::NAN, 3.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[f64::NAN]), None);
        assert_eq!(spread(&[]), None);
    }
}
