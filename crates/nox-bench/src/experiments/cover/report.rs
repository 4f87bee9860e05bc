//! The report: the JSON experiment (bench/data cover files) and its charts, the sweeps over
//! request rates and topologies included.

use super::*;

pub(super) fn write(
    args: &CoverArgs,
    rates: &[f64],
    delays: &[f64],
    seconds: f64,
    rows: Vec<Value>,
    elapsed_s: f64,
    packet_len: usize,
) -> Result<(), BenchError> {
    let daemon = nox_client::DAEMON_COVER_RATE;
    let mut per_mu = Vec::new();
    let (mut entropy, mut rtt) = (Vec::new(), Vec::new());
    for &mu in delays {
        // One point per λ_P: the mean over its phases, with the range.
        let (mut x, mut h, mut p50, mut detail) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &rate in rates {
            let phases: Vec<&Value> =
                rows.iter().filter(|r| get(r, &["mu_ms"]) == mu && get(r, &["cover_rate"]) == rate).collect();
            let of = |path: &[&str]| spread(&phases.iter().map(|r| get(r, path)).collect::<Vec<_>>());
            let (bits, top1, rtt) =
                (of(&["entropy", "mean_bits"]), of(&["entropy", "top1_accuracy"]), of(&["rtt_ms", "p50"]));
            x.push(rate);
            h.push(bits.map_or(f64::NAN, |b| b.0));
            p50.push(rtt.map_or(f64::NAN, |r| r.0));
            let range = |v: Option<(f64, f64, f64)>, digits| {
                v.map(|(mean, lo, hi)| json!({ "mean": round(mean, digits), "min": round(lo, digits), "max": round(hi, digits) }))
            };
            detail.push(json!({ "cover_rate": rate, "phases": phases.len(), "mean_bits": range(bits, 3),
                "top1_accuracy": range(top1, 3), "rtt_p50_ms": range(rtt, 1) }));
        }
        let points: Vec<(f64, f64)> = x.iter().copied().zip(h.iter().copied()).collect();
        let best = h.iter().copied().filter(|v| v.is_finite()).fold(f64::NAN, f64::max);
        let at_daemon = points.iter().find(|p| p.0 == daemon).map(|p| p.1);
        per_mu.push(json!({
            "mu_ms": mu,
            "best_mean_bits": round(best, 3),
            "best_share_of_log2_clients": round(best / f64::from(args.clients).log2(), 3),
            "smallest_rate_near_best": smallest_near_max(&points),
            "daemon_rate": daemon,
            "daemon_share_of_best": at_daemon.map(|v| round(v / best, 3)),
            "points": detail,
        }));
        entropy.push(series(&format!("μ = {mu} ms"), &x, &h));
        rtt.push(series(&format!("μ = {mu} ms"), &x, &p50));
    }
    let bandwidth_x: Vec<f64> = rates.to_vec();
    let bandwidth_y: Vec<f64> = rates.iter().map(|r| r * packet_len as f64 * 86_400.0 / 1e9).collect();
    let parameters = json!({
        "testnet": "nox testnet up defaults (3 layers × 3 nodes, node cover λ_L = λ_D = 0.05/s, chain registry) with [observe]; one testnet per μ",
        "client": "nox-client as the daemon runs it: ClientConfig::default() with cover_rate = λ_P (substitution: real packets take Poisson slots; loop_fraction of the rest are loops)",
        "clients": args.clients, "active_clients": args.active,
        "requests": format!("echo of {ECHO_BYTES} B, Poisson {} /s per active client", args.request_rate),
        "seconds_per_phase": seconds, "quick": args.quick, "seed": args.seed, "repeats": args.repeats,
        "adversary": "global passive observer of every link (client sends from the clients' own send reports, node departures from [observe]); sender entropy as nox bench anonymity (Exp(μ) likelihood, processing floor below)",
        "processing_floor_us": PROCESSING_FLOOR_US,
        "near_best": NEAR_MAX,
        "packet_len": packet_len,
        "request_rates": args.request_rates, "topologies": args.topologies.iter().map(|(l, n)| format!("{l}x{n}")).collect::<Vec<_>>(),
        "simulator_runs_per_phase": args.simulate,
        "wall_seconds": round(elapsed_s, 1),
    });
    let summary = json!({ "per_mu": per_mu, "daemon_cover_rate": daemon });
    let out_dir =
        args.out.as_ref().and_then(|p| p.parent().map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("bench/data"));
    let name = args
        .out
        .as_ref()
        .and_then(|p| p.file_stem())
        .map_or_else(|| "cover".to_string(), |s| s.to_string_lossy().into_owned());
    let mut charts = vec![
        line(
            "entropy",
            "Sender entropy vs client cover λ_P (real testnet, GPA)",
            "λ_P (packets/s per client)",
            "mean bits",
        )
        .with(&name, entropy),
        line("rtt", "Echo round trip vs client cover λ_P", "λ_P (packets/s per client)", "p50 ms").with(&name, rtt),
        line("bandwidth", "Client upstream vs λ_P (one packet length)", "λ_P (packets/s per client)", "GB/day")
            .with(&name, vec![series("λ_P × packet × 86,400 s", &bandwidth_x, &bandwidth_y)]),
    ];
    charts.extend(sweep_charts(args, &rows, rates, delays, &name));
    write_experiment(&out_dir, &name, parameters, json!(rows), summary, charts)
}

/// Mean of `path` over the rows that match `keep`.
pub(super) fn mean_of(rows: &[Value], keep: impl Fn(&Value) -> bool, path: &[&str]) -> f64 {
    spread(&rows.iter().filter(|r| keep(r)).map(|r| get(r, path)).collect::<Vec<_>>()).map_or(f64::NAN, |s| s.0)
}

/// Entropy and the volume classifier against the request rate (with `--request-rates`), and
/// entropy against the layer width and count (with `--topologies`).
pub(super) fn sweep_charts(args: &CoverArgs, rows: &[Value], rates: &[f64], delays: &[f64], name: &str) -> Vec<Value> {
    let mut charts = Vec::new();
    if args.request_rates.len() > 1 {
        let (mut h, mut vol) = (Vec::new(), Vec::new());
        for &mu in delays {
            for &rate in rates {
                let at = |path: &[&str]| -> Vec<f64> {
                    args.request_rates
                        .iter()
                        .map(|&q| {
                            mean_of(
                                rows,
                                |r| {
                                    get(r, &["mu_ms"]) == mu
                                        && get(r, &["cover_rate"]) == rate
                                        && get(r, &["request_rate"]) == q
                                },
                                path,
                            )
                        })
                        .collect()
                };
                let label = format!("μ = {mu} ms, λ_P = {rate}/s");
                h.push(series(&label, &args.request_rates, &at(&["entropy", "mean_bits"])));
                vol.push(series(&label, &args.request_rates, &at(&["volume_classifier_accuracy"])));
            }
        }
        charts.push(
            line(
                "entropy-vs-request-rate",
                "Sender entropy vs each active client's request rate (real testnet, GPA)",
                "requests/s per active client",
                "mean bits",
            )
            .with(name, h),
        );
        charts.push(
            line(
                "volume-vs-request-rate",
                "Volume classifier accuracy vs request rate (0.5 = chance)",
                "requests/s per active client",
                "accuracy",
            )
            .with(name, vol),
        );
    }
    if args.topologies.len() > 1 {
        let mut by_width = Vec::new();
        let mut by_layers = Vec::new();
        for &mu in delays {
            let point = |l: u8, n: usize| {
                mean_of(
                    rows,
                    |r| {
                        get(r, &["mu_ms"]) == mu
                            && get(r, &["layers"]) == f64::from(l)
                            && get(r, &["nodes_per_layer"]) == n as f64
                    },
                    &["entropy", "mean_bits"],
                )
            };
            let mut widths: Vec<usize> = args.topologies.iter().filter(|t| t.0 == 3).map(|t| t.1).collect();
            widths.sort_unstable();
            let mut layers: Vec<u8> = args.topologies.iter().filter(|t| t.1 == 3).map(|t| t.0).collect();
            layers.sort_unstable();
            let wy: Vec<f64> = widths.iter().map(|&n| point(3, n)).collect();
            let ly: Vec<f64> = layers.iter().map(|&l| point(l, 3)).collect();
            let wx: Vec<f64> = widths.iter().map(|&n| n as f64).collect();
            let lx: Vec<f64> = layers.iter().map(|&l| f64::from(l)).collect();
            by_width.push(series(&format!("3 layers, μ = {mu} ms"), &wx, &wy));
            by_layers.push(series(&format!("3 nodes per layer, μ = {mu} ms"), &lx, &ly));
        }
        charts.push(
            line(
                "entropy-vs-width",
                "Sender entropy vs nodes per layer (real testnet, GPA)",
                "nodes per layer",
                "mean bits",
            )
            .with(name, by_width),
        );
        charts.push(
            line("entropy-vs-layers", "Sender entropy vs layers (real testnet, GPA)", "layers", "mean bits")
                .with(name, by_layers),
        );
    }
    charts
}
