//! Scores the phases of `nox bench anonymity` with `nox-anonymity` and writes
//! `anonymity-entropy-delay.json`, `anonymity-entropy-users.json`, `anonymity-delays.json` and
//! `anonymity-cover.json`.
//!
//! The adversary's delay model: μ is public; the per-hop processing it cannot see is folded into
//! the density's scale floor, `max(μ, median hold at μ = 0)` — a GPA calibrates that with its
//! own packets. Hold times (ground truth) are used only for the delay checks.

use rand_chacha::ChaCha20Rng;
use serde_json::{Value, json};

use nox_anonymity::{DelayModel, sender_entropy, timing_correlation, unlinkability};

use super::{AnonymityArgs, PhaseRun};
use crate::harness::{BenchError, Chart, line, round, series, write_experiment};

fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    sorted.get(((sorted.len().max(1) - 1) as f64 * q).round() as usize).copied()
}

/// Scores of one phase.
fn score(run: &PhaseRun, floor_us: f64, rng: &mut ChaCha20Rng) -> Value {
    let c = &run.captured;
    let mu_us = run.spec.mu_ms * 1e3;
    let model = DelayModel { mean_delay_us: mu_us, processing_us: 0.0, jitter_floor_us: floor_us };
    let entropy = sender_entropy(&c.observation, &c.topology, &model, Some(&c.truth));
    let unlink = unlinkability(&c.observation, 20, 10, rng);
    let lag = (3.0 * (mu_us + floor_us)) as u64;
    let correlation = timing_correlation(&c.observation, 500_000, lag, 4, Some(&c.truth));
    json!({
        "mu_ms": run.spec.mu_ms, "clients": run.spec.clients, "active_clients": run.spec.active,
        "node_cover_rate": run.spec.node_cover,
        "client_cover_rate": run.spec.cover_rate,
        "messages_sent": c.sent, "messages_delivered": c.delivered, "events": c.observation.events.len(),
        "unknown_node_records": c.unknown_nodes, "observation_records_dropped": run.dropped_records,
        "adversary_model": model,
        "entropy": entropy.as_ref().map(|e| json!({
            "messages": e.messages, "untraceable": e.untraceable, "clients_seen": e.clients,
            "max_bits": e.max_entropy_bits, "mean_bits": e.mean_entropy_bits, "median_bits": e.median_entropy_bits,
            "min_bits": e.min_entropy_bits, "effective_anonymity_set": e.effective_anonymity_set,
            "normalized": e.normalized_entropy, "mean_p_true_sender": e.mean_true_sender_probability,
            "top1_accuracy": e.top1_accuracy,
            "mean_bits_stderr": stderr(e.per_message.iter().map(|m| m.entropy_bits)),
            "mean_p_true_sender_stderr": stderr(e.per_message.iter().filter_map(|m| m.true_sender_probability)),
        })).unwrap_or_else(|e| json!({ "error": e.to_string() })),
        "unlinkability": unlink.map(|u| json!(u)).unwrap_or_else(|e| json!({ "error": e.to_string() })),
        "timing_correlation": correlation.map(|r| json!(r)).unwrap_or_else(|e| json!({ "error": e.to_string() })),
    })
}

/// Standard error of the mean (per-message spread; messages are not independent, so this is
/// a lower bound on the run-to-run uncertainty).
fn stderr(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    Some((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt())
}

fn get(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
}

fn chart_of(rows: &[Value], x_key: &str, ys: &[(&str, &[&str])]) -> Vec<Value> {
    let x: Vec<f64> = rows.iter().map(|r| get(r, &[x_key])).collect();
    ys.iter().map(|(label, path)| series(label, &x, &rows.iter().map(|r| get(r, path)).collect::<Vec<_>>())).collect()
}

/// Scores every phase and writes the four JSON files.
pub fn write_all(
    args: &AnonymityArgs,
    seconds: f64,
    runs: &[PhaseRun],
    elapsed_s: f64,
    rng: &mut ChaCha20Rng,
) -> Result<(), BenchError> {
    // Processing floor: median hold at μ = 0 (what a node takes without mixing).
    let mut zero_holds: Vec<f64> = runs
        .iter()
        .filter(|r| r.spec.mu_ms == 0.0)
        .flat_map(|r| r.captured.holds_us.values().flatten().copied())
        .collect();
    let floor_us = median(&mut zero_holds).unwrap_or(300.0).max(50.0);
    let p95_zero = quantile(&zero_holds, 0.95).unwrap_or(1_000.0);
    let parameters = json!({
        "testnet": { "layers": 3, "nodes_per_layer": 3, "node_cover": "off (λ_L = λ_D = 0) except in anonymity-node-cover",
            "packet_bytes": 32768, "payload_bytes": 64, "workers_per_node": 1 },
        "quick": args.quick, "seconds_per_phase": seconds, "rate_per_active_client": args.rate,
        "delay_sweep_clients": args.clients, "sweep_delay_ms": args.sweep_delay_ms,
        "cover_clients": args.cover_clients, "seed": args.seed,
        "processing_floor_us": floor_us, "processing_p95_at_mu0_us": p95_zero,
        "source": "measured on the real multi-process testnet: node [observe] logs + the harness's client send log",
        "wall_seconds": elapsed_s,
    });
    let delay_rows: Vec<Value> = runs
        .iter()
        .filter(|r| r.spec.node_cover == 0.0)
        .filter(|r| r.spec.clients == args.clients && r.spec.active == r.spec.clients && r.spec.cover_rate == 0.0)
        .map(|r| score(r, floor_us, rng))
        .collect();
    write_delay(args, &parameters, &delay_rows)?;
    let user_rows: Vec<Value> = runs
        .iter()
        .filter(|r| r.spec.node_cover == 0.0)
        .filter(|r| r.spec.mu_ms == args.sweep_delay_ms && r.spec.active == r.spec.clients && r.spec.cover_rate == 0.0)
        .map(|r| score(r, floor_us, rng))
        .collect();
    let h = |rows: &[Value], p: &[&str]| rows.iter().map(|r| get(r, p)).collect::<Vec<_>>();
    write_experiment(
        &args.out_dir,
        "anonymity-entropy-users",
        parameters.clone(),
        json!(user_rows),
        json!({ "clients": h(&user_rows, &["clients"]), "mean_entropy_bits": h(&user_rows, &["entropy", "mean_bits"]),
            "max_entropy_bits": h(&user_rows, &["entropy", "max_bits"]), "top1_accuracy": h(&user_rows, &["entropy", "top1_accuracy"]) }),
        vec![
            line("entropy", "Sender entropy vs users (real testnet, GPA)", "users", "bits").with(
                "anonymity-entropy-users",
                chart_of(
                    &user_rows,
                    "clients",
                    &[
                        ("mean H", &["entropy", "mean_bits"]),
                        ("median H", &["entropy", "median_bits"]),
                        ("max log2 N", &["entropy", "max_bits"]),
                    ],
                ),
            ),
            line("adversary", "Adversary success vs users", "users", "probability").with(
                "anonymity-entropy-users",
                chart_of(
                    &user_rows,
                    "clients",
                    &[
                        ("P(true sender)", &["entropy", "mean_p_true_sender"]),
                        ("top-1 accuracy", &["entropy", "top1_accuracy"]),
                    ],
                ),
            ),
        ],
    )?;
    super::delays::write_delays(args, &parameters, runs, p95_zero, floor_us)?;
    let mut node_rows: Vec<Value> = runs
        .iter()
        .filter(|r| r.spec.mu_ms == args.sweep_delay_ms && r.spec.clients == args.node_cover_clients)
        .filter(|r| r.spec.active == r.spec.clients && r.spec.cover_rate == 0.0)
        .map(|r| score(r, floor_us, rng))
        .collect();
    node_rows.sort_by(|a, b| get(a, &["node_cover_rate"]).total_cmp(&get(b, &["node_cover_rate"])));
    if node_rows.len() > 1 {
        write_experiment(
            &args.out_dir,
            "anonymity-node-cover",
            parameters.clone(),
            json!(node_rows),
            json!({ "node_cover_rates": h(&node_rows, &["node_cover_rate"]), "mean_entropy_bits": h(&node_rows, &["entropy", "mean_bits"]),
                "top1_accuracy": h(&node_rows, &["entropy", "top1_accuracy"]), "events": h(&node_rows, &["events"]),
                "note": "node loop + drop cover (λ_L = λ_D per node) captured by [observe]; the tracer drops untraceable (node-originated) arrivals from its mixtures" }),
            vec![
                line(
                    "entropy",
                    "Sender entropy vs node cover (real testnet)",
                    "λ_L = λ_D per node (packets/s)",
                    "bits",
                )
                .with(
                    "anonymity-node-cover",
                    chart_of(
                        &node_rows,
                        "node_cover_rate",
                        &[
                            ("mean H", &["entropy", "mean_bits"]),
                            ("max log2 N", &["entropy", "max_bits"]),
                            ("top-1 accuracy", &["entropy", "top1_accuracy"]),
                        ],
                    ),
                ),
            ],
        )?;
    }
    let cover_rows: Vec<Value> = runs
        .iter()
        .filter(|r| r.spec.node_cover == 0.0)
        .filter(|r| {
            r.spec.mu_ms == args.sweep_delay_ms
                && r.spec.clients == args.cover_clients
                && r.spec.active < r.spec.clients
        })
        .map(|r| {
            let mut row = score(r, floor_us, rng);
            row["distinguishability"] = super::delays::active_vs_idle(r);
            row
        })
        .collect();
    write_experiment(
        &args.out_dir,
        "anonymity-cover",
        parameters,
        json!(cover_rows),
        json!({ "cover_rates": h(&cover_rows, &["client_cover_rate"]),
            "ks_active_vs_idle": h(&cover_rows, &["distinguishability", "ks_statistic"]),
            "volume_classifier_accuracy": h(&cover_rows, &["distinguishability", "volume_classifier_accuracy"]),
            "note": "client cover here is additive (drop packets at λ_P on top of real traffic), not Loopix's substitution: the active clients' rate stays higher" }),
        vec![
            line("ks", "Active vs idle client: KS statistic of send gaps", "client cover rate λ_P (packets/s)", "KS D")
                .with(
                    "anonymity-cover",
                    chart_of(
                        &cover_rows,
                        "client_cover_rate",
                        &[
                            ("KS D", &["distinguishability", "ks_statistic"]),
                            ("volume classifier accuracy", &["distinguishability", "volume_classifier_accuracy"]),
                        ],
                    ),
                ),
            line("entropy", "Sender entropy vs client cover rate", "client cover rate λ_P (packets/s)", "bits").with(
                "anonymity-cover",
                chart_of(
                    &cover_rows,
                    "client_cover_rate",
                    &[("mean H", &["entropy", "mean_bits"]), ("max log2 N", &["entropy", "max_bits"])],
                ),
            ),
        ],
    )
}

fn write_delay(args: &AnonymityArgs, parameters: &Value, rows: &[Value]) -> Result<(), BenchError> {
    let mean_at = |mu: f64| rows.iter().find(|r| get(r, &["mu_ms"]) == mu).map(|r| get(r, &["entropy", "mean_bits"]));
    let (h0, h50) = (mean_at(0.0), mean_at(50.0));
    let check = match (h0, h50) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() => json!({
            "name": "entropy(μ=0) < entropy(μ=50 ms)", "passed": a < b, "entropy_mu0_bits": a, "entropy_mu50_bits": b }),
        _ => {
            json!({ "name": "entropy(μ=0) < entropy(μ=50 ms)", "passed": null, "reason": "μ = 0 or 50 ms not run or not scored" })
        }
    };
    if check["passed"] == json!(false) {
        println!("CHECK FAILED: entropy at μ = 0 is not lower than at μ = 50 ms");
    }
    let h = |p: &[&str]| rows.iter().map(|r| round(get(r, p), 4)).collect::<Vec<_>>();
    let log_y = Chart {
        suffix: "unlinkability",
        title: "Unlinkability p-values vs μ (small = linkable)",
        kind: "line",
        x_label: "μ per hop (ms)",
        y_label: "p-value",
        log_x: false,
        log_y: true,
    };
    write_experiment(
        &args.out_dir,
        "anonymity-entropy-delay",
        parameters.clone(),
        json!(rows),
        json!({ "check": check, "mu_ms": h(&["mu_ms"]), "mean_entropy_bits": h(&["entropy", "mean_bits"]),
            "max_entropy_bits": h(&["entropy", "max_bits"]), "p_true_sender": h(&["entropy", "mean_p_true_sender"]),
            "top1_accuracy": h(&["entropy", "top1_accuracy"]), "ks_p": h(&["unlinkability", "ks_p_value"]),
            "true_pair_pearson": h(&["timing_correlation", "true_pairs_mean_pearson"]) }),
        vec![
            line("entropy", "Sender entropy vs mean delay (real testnet, GPA)", "μ per hop (ms)", "bits").with(
                "anonymity-entropy-delay",
                chart_of(
                    rows,
                    "mu_ms",
                    &[
                        ("mean H", &["entropy", "mean_bits"]),
                        ("median H", &["entropy", "median_bits"]),
                        ("max log2 N", &["entropy", "max_bits"]),
                    ],
                ),
            ),
            line("adversary", "Adversary success vs mean delay", "μ per hop (ms)", "probability").with(
                "anonymity-entropy-delay",
                chart_of(
                    rows,
                    "mu_ms",
                    &[
                        ("P(true sender)", &["entropy", "mean_p_true_sender"]),
                        ("top-1 accuracy", &["entropy", "top1_accuracy"]),
                        ("volume linking accuracy", &["timing_correlation", "linking_accuracy"]),
                    ],
                ),
            ),
            log_y.with(
                "anonymity-entropy-delay",
                chart_of(
                    rows,
                    "mu_ms",
                    &[("KS p", &["unlinkability", "ks_p_value"]), ("χ² p", &["unlinkability", "chi_square_p_value"])],
                ),
            ),
            line("correlation", "Send/receive count correlation vs mean delay", "μ per hop (ms)", "Pearson r").with(
                "anonymity-entropy-delay",
                chart_of(
                    rows,
                    "mu_ms",
                    &[
                        ("true pairs", &["timing_correlation", "true_pairs_mean_pearson"]),
                        ("other pairs", &["timing_correlation", "other_pairs_mean_pearson"]),
                    ],
                ),
            ),
        ],
    )
}
