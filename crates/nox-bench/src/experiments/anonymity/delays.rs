//! Per-node delay checks (`anonymity-delays.json`) and the active-vs-idle cover analysis of
//! `nox bench anonymity`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use nox_anonymity::{delay_exponentiality, expected_over_delayed_fraction, over_delayed_fraction};

use super::{AnonymityArgs, PhaseRun};
use crate::harness::{BenchError, Chart, line, series, write_experiment};

/// Per node and μ > 0: KS of the hold times against Exp(μ), and the fraction of packets
/// released at the processing floor (hold ≤ the p95 hold at μ = 0) against `1 − e^{−u/μ}`.
pub fn write_delays(
    args: &AnonymityArgs,
    parameters: &Value,
    runs: &[PhaseRun],
    floor_p95_us: f64,
    processing_us: f64,
) -> Result<(), BenchError> {
    // Pool every phase of a μ: hold times do not depend on who sends.
    let mut by_mu: BTreeMap<u64, BTreeMap<u16, Vec<f64>>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.spec.node_cover == 0.0) {
        let key = (run.spec.mu_ms * 1000.0).round() as u64;
        for (node, holds) in &run.captured.holds_us {
            by_mu.entry(key).or_default().entry(*node).or_default().extend(holds);
        }
    }
    let mut rows = Vec::new();
    let mut cdf_series = Vec::new();
    for (mu_us, nodes) in &by_mu {
        let mu_us = *mu_us as f64;
        for (node, holds) in nodes {
            let mut sorted = holds.clone();
            sorted.sort_by(f64::total_cmp);
            let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
            let ks = (mu_us > 0.0).then(|| delay_exponentiality(&sorted, mu_us, 0.05).ok()).flatten();
            let over = (mu_us > 0.0).then(|| over_delayed_fraction(&sorted, &[floor_p95_us]).ok()).flatten();
            rows.push(json!({
                "mu_ms": mu_us / 1e3, "node": node, "samples": sorted.len(), "mean_hold_us": mean,
                "median_hold_us": sorted.get(sorted.len() / 2), "exponentiality": ks,
                "released_at_processing_floor": over,
                "expected_over_delayed_fraction": (mu_us > 0.0).then(|| expected_over_delayed_fraction(mu_us, processing_us)),
            }));
        }
        // CDF of the pooled holds at the largest μ vs Exp(μ).
        if Some(mu_us as u64) == by_mu.keys().next_back().copied() && mu_us > 0.0 {
            let mut all: Vec<f64> = nodes.values().flatten().map(|h| h / 1e3).collect();
            all.sort_by(f64::total_cmp);
            let step = (all.len() / 200).max(1);
            let x: Vec<f64> = all.iter().step_by(step).copied().collect();
            let n = all.len() as f64;
            let y: Vec<f64> = (0..all.len()).step_by(step).map(|i| (i + 1) as f64 / n).collect();
            let expected: Vec<f64> = x.iter().map(|v| 1.0 - (-v * 1e3 / mu_us).exp()).collect();
            cdf_series.push(series(&format!("measured hold, μ = {} ms", mu_us / 1e3), &x, &y));
            cdf_series.push(series(&format!("Exp(μ = {} ms)", mu_us / 1e3), &x, &expected));
        }
    }
    let per_mu = |f: &dyn Fn(&Value) -> Option<f64>| -> (Vec<f64>, Vec<f64>) {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for mu_us in by_mu.keys().filter(|m| **m > 0) {
            let mu_ms = *mu_us as f64 / 1e3;
            let values: Vec<f64> = rows.iter().filter(|r| r["mu_ms"].as_f64() == Some(mu_ms)).filter_map(f).collect();
            if !values.is_empty() {
                x.push(mu_ms);
                y.push(values.iter().sum::<f64>() / values.len() as f64);
            }
        }
        (x, y)
    };
    let (xk, ks) = per_mu(&|r| r["exponentiality"]["statistic"].as_f64());
    let (xo, over) = per_mu(&|r| r["released_at_processing_floor"]["fraction"].as_f64());
    let (xe, expected) = per_mu(&|r| r["expected_over_delayed_fraction"].as_f64());
    let rejects = rows.iter().filter(|r| r["exponentiality"]["rejects"] == json!(true)).count();
    let tested = rows.iter().filter(|r| r["exponentiality"].is_object()).count();
    let cdf = Chart {
        suffix: "cdf",
        title: "Per-hop hold time CDF vs Exp(μ) (all nodes)",
        kind: "cdf",
        x_label: "hold (ms)",
        y_label: "CDF",
        log_x: false,
        log_y: false,
    };
    write_experiment(
        &args.out_dir,
        "anonymity-delays",
        parameters.clone(),
        json!(rows),
        json!({ "node_mu_pairs_tested": tested, "exponentiality_rejected_at_5pct": rejects,
            "mean_ks_statistic_by_mu": { "mu_ms": xk, "statistic": ks },
            "note": "hold = link arrival → departure at the node (queueing + Sphinx + mixing delay): ground truth from [observe], never given to the adversary" }),
        vec![
            line("ks", "Hold times vs Exp(μ): mean KS statistic over nodes", "μ per hop (ms)", "KS D")
                .with("anonymity-delays", vec![series("KS D", &xk, &ks)]),
            line("over-delayed", "Released at the processing floor vs 1 − e^(−u/μ)", "μ per hop (ms)", "fraction")
                .with("anonymity-delays", vec![series("measured", &xo, &over), series("expected", &xe, &expected)]),
            cdf.with("anonymity-delays", cdf_series),
        ],
    )
}

/// Active vs idle clients as the GPA sees them (their client→entry sends): two-sample KS of
/// pooled inter-send gaps, and a volume classifier (the `active` busiest clients are guessed
/// active).
pub fn active_vs_idle(run: &PhaseRun) -> Value {
    let mut times: BTreeMap<u32, Vec<f64>> = (0..run.spec.clients).map(|c| (c, Vec::new())).collect();
    for send in &run.sends {
        times.entry(send.client).or_default().push(send.time_us as f64);
    }
    let gaps = |active: bool| -> Vec<f64> {
        times
            .iter()
            .filter(|(c, _)| (**c < run.spec.active) == active)
            .flat_map(|(_, t)| t.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
            .collect()
    };
    let (active, idle) = (gaps(true), gaps(false));
    let (statistic, p_value) = if active.len() < 2 || idle.len() < 2 {
        (1.0, 0.0)
    } else {
        let ks = nox_stats::ks::two_sample(&active, &idle, 0.05);
        (ks.statistic, ks.p_value)
    };
    let mut by_volume: Vec<(usize, u32)> = times.iter().map(|(c, t)| (t.len(), *c)).collect();
    by_volume.sort_by(|a, b| b.cmp(a));
    let guessed: Vec<u32> = by_volume.iter().take(run.spec.active as usize).map(|x| x.1).collect();
    let correct = (0..run.spec.clients).filter(|c| guessed.contains(c) == (*c < run.spec.active)).count();
    let real = run.sends.iter().filter(|s| s.message.is_some()).count();
    json!({
        "active_gaps": active.len(), "idle_gaps": idle.len(), "ks_statistic": statistic, "ks_p_value": p_value,
        "idle_send_nothing": idle.is_empty(),
        "volume_classifier_accuracy": correct as f64 / run.spec.clients.max(1) as f64,
        "cover_packets": run.sends.len() - real, "real_packets": real,
        "bandwidth_overhead": if real > 0 { run.sends.len() as f64 / real as f64 } else { f64::NAN },
    })
}
