//! `nox bench attacks` and `nox bench fec-arq`: **simulations** with explicit adversary models
//! (`nox-anonymity::attacks`, `nox-fec`'s Theorem 1), not measurements of the testnet. The
//! only measured input is the proof-of-work hash rate of this machine (`nox_sphinx::pow`).

use std::{path::PathBuf, time::Instant};

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

use nox_anonymity::Topology;
use nox_anonymity::attacks::{
    CompromiseModel, Direction, IntersectionConfig, NMinusOneConfig, compromised_paths, intersection_attack,
    n_minus_one, n_minus_one_sweep,
};

use crate::harness::{BenchError, Chart, err, line, series, write_experiment};

/// Options of `nox bench attacks`.
#[derive(clap::Args, Clone)]
pub struct AttackArgs {
    /// CI-sized: fewer trials and a shorter hash-rate measurement.
    #[arg(long)]
    pub quick: bool,
    /// Where the JSON files go.
    #[arg(long, default_value = "bench/data")]
    pub out_dir: PathBuf,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Options of `nox bench fec-arq`.
#[derive(clap::Args, Clone)]
pub struct FecArqArgs {
    /// CI-sized: fewer Monte Carlo trials.
    #[arg(long)]
    pub quick: bool,
    /// Reply fragments m (data shards).
    #[arg(long, default_value_t = 11)]
    pub fragments: usize,
    /// Round-trip time of one SURB round, ms (measure it on the testnet; 250 ms is the middle of
    /// the report's 200–400 ms).
    #[arg(long, default_value_t = 250.0)]
    pub rtt_ms: f64,
    /// ARQ retransmission rounds allowed after the first.
    #[arg(long, default_value_t = 5)]
    pub max_retries: usize,
    /// Delivery probability both schemes must reach in the "cost to target" table.
    #[arg(long, default_value_t = 0.999)]
    pub target: f64,
    /// Where the JSON goes.
    #[arg(long, default_value = "bench/data")]
    pub out_dir: PathBuf,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Single-thread PoW hash evaluations per second on this machine.
fn measure_hash_rate(seconds: f64) -> f64 {
    let tag = nox_sphinx::ReplayTag([7; 32]);
    let started = Instant::now();
    let mut count = 0u64;
    let mut sink = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        for _ in 0..4096 {
            sink += u64::from(nox_sphinx::pow::work_bits(&tag, &count.to_le_bytes()));
            count += 1;
        }
    }
    std::hint::black_box(sink);
    count as f64 / started.elapsed().as_secs_f64()
}

/// Runs the three attack simulations.
pub fn run_attacks(args: &AttackArgs) -> Result<(), BenchError> {
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let trials = if args.quick { 300 } else { 2_000 };
    let hash_rate = measure_hash_rate(if args.quick { 0.3 } else { 2.0 });
    let sim = "simulation (nox-anonymity adversary model), not a testnet measurement";

    // n−1.
    let base = NMinusOneConfig { hash_rate_per_s: hash_rate, ..NMinusOneConfig::default() };
    let mus = [0.0, 10_000.0, 50_000.0, 200_000.0];
    let covers = [0.0, 5.0, 20.0, 100.0];
    let sweep = n_minus_one_sweep(&base, &mus, &covers, trials, &mut rng).map_err(err)?;
    let mut pow = Vec::new();
    for d in [0u32, 8, 12, 16, 20] {
        pow.push(n_minus_one(&NMinusOneConfig { pow_difficulty_bits: d, ..base }, trials, &mut rng).map_err(err)?);
    }
    let lines: Vec<Value> = covers
        .iter()
        .map(|&c| {
            let rows: Vec<_> = sweep.iter().filter(|r| r.config.node_cover_rate_per_s == c).collect();
            let x: Vec<f64> = rows.iter().map(|r| r.config.mean_delay_us / 1e3).collect();
            series(&format!("node cover λ = {c}/s"), &x, &rows.iter().map(|r| r.success_rate).collect::<Vec<_>>())
        })
        .collect();
    let d: Vec<f64> = pow.iter().map(|r| f64::from(r.config.pow_difficulty_bits)).collect();
    let cost = Chart {
        suffix: "pow-cost",
        title: "n−1 cost per attack vs PoW difficulty",
        kind: "line",
        x_label: "difficulty (bits)",
        y_label: "per attack",
        log_x: false,
        log_y: true,
    };
    write_experiment(
        &args.out_dir,
        "attacks-n-minus-one",
        json!({ "kind": sim, "trials": trials, "base": base, "mean_delays_us": mus, "node_cover_rates": covers,
            "pow_difficulties": d, "hash_rate_per_s_measured_single_thread": hash_rate }),
        json!({ "sweep": sweep, "pow_cost": pow }),
        json!({ "success_mu0_no_cover": sweep.first().map(|r| r.success_rate),
            "success_mu50ms_cover20": sweep.iter().find(|r| r.config.mean_delay_us == 50_000.0 && r.config.node_cover_rate_per_s == 20.0).map(|r| r.success_rate),
            "hash_rate_per_s": hash_rate,
            "hashing_seconds_per_attack_by_difficulty": pow.iter().map(|r| r.hashing_seconds).collect::<Vec<_>>() }),
        vec![
            line("success", "n−1 success vs μ and node cover (simulated)", "μ (ms)", "success rate")
                .with("attacks-n-minus-one", lines),
            cost.with(
                "attacks-n-minus-one",
                vec![
                    series("flood packets", &d, &pow.iter().map(|r| r.mean_packets).collect::<Vec<_>>()),
                    series("hash evaluations", &d, &pow.iter().map(|r| r.hash_evaluations).collect::<Vec<_>>()),
                    series(
                        "hashing seconds (this machine, 1 thread)",
                        &d,
                        &pow.iter().map(|r| r.hashing_seconds).collect::<Vec<_>>(),
                    ),
                ],
            ),
        ],
    )?;

    // Intersection.
    let epoch_s = 10.0;
    let mut rows = Vec::new();
    for direction in [Direction::SenderOfDestination, Direction::PartnerOfClient] {
        for rate in [0.0, 0.05, 0.2, 1.0] {
            let config = IntersectionConfig {
                direction,
                clients: 50,
                destinations: 50,
                target_activity: 0.7,
                other_activity: 0.5,
                cover_presence: IntersectionConfig::cover_presence(rate, epoch_s),
                max_epochs: 200,
            };
            let r = intersection_attack(&config, trials / 2, &mut rng).map_err(err)?;
            rows.push(
                json!({ "direction": direction, "client_cover_rate_per_s": rate, "epoch_s": epoch_s, "report": r }),
            );
        }
    }
    let by_dir = |dir: &str, key: &str| -> Value {
        let sel: Vec<&Value> = rows.iter().filter(|r| r["direction"] == json!(dir)).collect();
        let x: Vec<f64> = sel.iter().map(|r| r["client_cover_rate_per_s"].as_f64().unwrap_or(f64::NAN)).collect();
        series(dir, &x, &sel.iter().map(|r| r["report"][key].as_f64().unwrap_or(f64::NAN)).collect::<Vec<_>>())
    };
    write_experiment(
        &args.out_dir,
        "attacks-intersection",
        json!({ "kind": sim, "trials": trials / 2, "clients": 50, "destinations": 50, "target_activity": 0.7,
            "other_activity": 0.5, "epoch_s": epoch_s, "max_epochs": 200 }),
        json!(rows),
        json!({ "rows": rows.iter().map(|r| json!({ "direction": r["direction"], "cover": r["client_cover_rate_per_s"],
            "success": r["report"]["success_rate"], "mean_epochs": r["report"]["mean_epochs_to_identify"] })).collect::<Vec<_>>() }),
        vec![
            line(
                "success",
                "Intersection success vs client cover (simulated)",
                "client cover λ_P (packets/s)",
                "success rate",
            )
            .with(
                "attacks-intersection",
                vec![by_dir("SenderOfDestination", "success_rate"), by_dir("PartnerOfClient", "success_rate")],
            ),
            line(
                "epochs",
                "Epochs to identification vs client cover",
                "client cover λ_P (packets/s)",
                "epochs (mean, successes)",
            )
            .with(
                "attacks-intersection",
                vec![
                    by_dir("SenderOfDestination", "mean_epochs_to_identify"),
                    by_dir("PartnerOfClient", "mean_epochs_to_identify"),
                ],
            ),
        ],
    )?;

    // Compromised nodes: averaged over many random compromised sets per f.
    let fractions = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5];
    let (draws, paths) = if args.quick { (40, 2_000) } else { (400, 5_000) };
    let mut results = Vec::new();
    let mut charts = Vec::new();
    for (width, per_layer) in [(3u16, false), (10, false), (10, true)] {
        let topology = Topology::uniform(3, width);
        let (mut measured, mut exact, mut naive, mut actual) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &f in &fractions {
            let model = if per_layer {
                CompromiseModel::PerLayer { fraction: f }
            } else {
                CompromiseModel::Uniform { fraction: f }
            };
            let mut sums = [0.0f64; 6];
            for _ in 0..draws {
                let r = compromised_paths(&topology, model, paths, &mut rng).map_err(err)?;
                for (sum, v) in sums.iter_mut().zip([
                    r.measured_full_path_rate,
                    r.exact_layered_rate,
                    r.naive_rate,
                    r.fraction,
                    r.measured_entry_and_exit_rate,
                    r.measured_any_rate,
                ]) {
                    *sum += v / draws as f64;
                }
            }
            measured.push(sums[0]);
            exact.push(sums[1]);
            naive.push(sums[2]);
            actual.push(sums[3]);
            results.push(json!({ "width": width, "model": if per_layer { "PerLayer" } else { "Uniform" }, "fraction_requested": f,
                "fraction_actual_mean": sums[3], "measured_full_path_rate": sums[0], "exact_layered_rate_mean": sums[1],
                "naive_f3_of_actual_fraction_mean": sums[2], "f3_of_requested": f * f * f,
                "measured_entry_and_exit_rate": sums[4], "measured_any_hop_rate": sums[5] }));
        }
        let name = format!("3x{width}-{}", if per_layer { "per-layer" } else { "uniform" });
        let title = format!(
            "Full-path compromise, 3 × {width}, {} (simulated)",
            if per_layer { "round(f·W) per layer" } else { "uniform f" }
        );
        let cubes: Vec<f64> = fractions.iter().map(|f| f * f * f).collect();
        charts.push(line(&name, &title, "compromised fraction f (requested)", "P(all 3 hops compromised)").with(
            "attacks-compromised",
            vec![
                series("measured (mean over draws)", &fractions, &measured),
                series("exact Π c_l/W_l (mean)", &fractions, &exact),
                series("f³", &fractions, &cubes),
                series("(actual f)³ (mean)", &fractions, &naive),
            ],
        ));
        let _ = actual;
    }
    write_experiment(
        &args.out_dir,
        "attacks-compromised",
        json!({ "kind": sim, "models": { "Uniform": "round(f·total) nodes drawn from the whole network", "PerLayer": "round(f·W) nodes in every layer" },
            "paths": "one node per layer, uniformly", "fractions": fractions, "compromised_sets_per_point": draws, "paths_per_set": paths,
            "topologies": ["3x3 (the testnet)", "3x10"] }),
        json!(results),
        json!({ "note": "per compromised set the full-path rate is Π c_l/W_l; its mean over random sets is close to f³ only when f·total is an integer and W is large — on 3×3 the rounding dominates" }),
        charts,
    )
}

/// ARQ: probability that all `m` fragments arrived within `rounds` rounds, loss `l` each.
fn arq_within(m: usize, l: f64, rounds: usize) -> f64 {
    (1.0 - l.powi(rounds as i32)).powi(m as i32)
}

/// FEC vs ARQ for an m-fragment reply under loss ℓ (analytic, plus a Monte Carlo check of ARQ).
pub fn run_fec_arq(args: &FecArqArgs) -> Result<(), BenchError> {
    use rand_core::RngCore;
    let m = args.fragments;
    let rounds = args.max_retries + 1;
    let losses = [0.0, 0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4];
    let ratios = [100u32, 200, 300, 500, 700, 1000];
    let trials = if args.quick { 2_000 } else { 20_000 };
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut rows = Vec::new();
    for &l in &losses {
        let expected_rounds: f64 = (0..rounds).map(|k| 1.0 - arq_within(m, l, k)).sum();
        let bandwidth = m as f64 * (0..rounds).map(|k| l.powi(k as i32)).sum::<f64>();
        let mut mc_rounds = 0u64;
        for _ in 0..trials {
            let mut missing = m;
            let mut used = 0;
            while missing > 0 && used < rounds {
                used += 1;
                missing = (0..missing).filter(|_| (rng.next_u64() as f64 / u64::MAX as f64) < l).count();
            }
            mc_rounds += used as u64;
        }
        let target_rounds = (1..=64).find(|&k| arq_within(m, l, k) >= args.target);
        let fec: Vec<Value> = ratios
            .iter()
            .map(|&r| {
                let p = (m * r as usize).div_ceil(1000);
                json!({ "ratio": f64::from(r) / 1e3, "parity": p, "shards": m + p,
                    "delivery_one_round": nox_fec::recovery_probability(m, p, l), "latency_ms": args.rtt_ms })
            })
            .collect();
        let target_parity = (0..=4 * m).find(|&p| nox_fec::recovery_probability(m, p, l) >= args.target);
        rows.push(json!({
            "loss": l, "fec": fec,
            "fec_to_target": target_parity.map(|p| json!({ "parity": p, "shards": m + p, "latency_ms": args.rtt_ms })),
            "arq": { "delivery": arq_within(m, l, rounds), "expected_rounds": expected_rounds,
                "expected_rounds_monte_carlo": mc_rounds as f64 / trials as f64,
                "expected_latency_ms": expected_rounds * args.rtt_ms, "expected_shards": bandwidth },
            "arq_to_target": target_rounds.map(|k| json!({ "rounds": k, "latency_ms": k as f64 * args.rtt_ms })),
            "no_fec_one_round": nox_fec::delivery_without_fec(m, l),
        }));
    }
    let col = |f: &dyn Fn(&Value) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
    let fec_at = |i: usize| move |r: &Value| r["fec"][i]["delivery_one_round"].as_f64().unwrap_or(f64::NAN);
    let mut delivery = vec![series(
        "ARQ (≤ 1 + retries rounds)",
        &losses,
        &col(&|r| r["arq"]["delivery"].as_f64().unwrap_or(f64::NAN)),
    )];
    for (i, r) in ratios.iter().enumerate() {
        delivery.push(series(&format!("FEC r = {}", f64::from(*r) / 1e3), &losses, &col(&fec_at(i))));
    }
    let nan = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    write_experiment(
        &args.out_dir,
        "fec-arq",
        json!({ "kind": "analytic (Theorem 1 for FEC; independent per-fragment loss for ARQ) + Monte Carlo check of ARQ rounds",
            "fragments": m, "rtt_ms": args.rtt_ms, "max_retries": args.max_retries, "target": args.target,
            "losses": losses, "ratios": ratios.iter().map(|r| f64::from(*r) / 1e3).collect::<Vec<_>>(), "monte_carlo_trials": trials }),
        json!(rows),
        json!({ "note": "FEC pays bandwidth (m + p shards, one RTT); ARQ pays latency (rounds × RTT) and sends fresh SURB requests each round (more exposure to the intersection attack)" }),
        vec![
            line("delivery", "Delivery probability vs loss", "loss ℓ", "P(delivered)").with("fec-arq", delivery),
            line("latency", "Latency to reach the target delivery", "loss ℓ", "ms").with(
                "fec-arq",
                vec![
                    series("FEC (one round)", &losses, &col(&|r| nan(&r["fec_to_target"]["latency_ms"]))),
                    series("ARQ (rounds × RTT)", &losses, &col(&|r| nan(&r["arq_to_target"]["latency_ms"]))),
                    series("ARQ expected (≤ max retries)", &losses, &col(&|r| nan(&r["arq"]["expected_latency_ms"]))),
                ],
            ),
            line("bandwidth", "Shards sent", "loss ℓ", "shards").with(
                "fec-arq",
                vec![
                    series("FEC to target", &losses, &col(&|r| nan(&r["fec_to_target"]["shards"]))),
                    series("ARQ expected", &losses, &col(&|r| nan(&r["arq"]["expected_shards"]))),
                ],
            ),
        ],
    )
}
