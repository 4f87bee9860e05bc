//! `nox bench pool-anonymity`: a **simulation** of the shielded pool's anonymity from what the
//! chain shows (`nox_anonymity::pool`, model in `docs/design/pool-anonymity.md`), not a
//! measurement of the testnet: N users (100, 1,000, 10,000) deposit log-normal amounts (half of
//! them round) at Poisson times and withdraw under four wallet policies; the deposit→withdrawal
//! linking attack (timing only, exact amount + timing, amount within 1 % + timing) and the
//! anonymity set of each withdrawal's inputs are scored against the ground truth.

use std::{path::PathBuf, time::Instant};

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

use nox_anonymity::pool::{AmountRule, PoolAdversary, TimingPrior, linking_attack_sampled, spend_anonymity};
use nox_anonymity::pool_sim::{PoolSimConfig, WithdrawalPolicy, simulate_pool};

use crate::harness::{BenchError, Chart, err, round, series, write_experiment};

/// Options of `nox bench pool-anonymity`.
#[derive(clap::Args, Clone)]
pub struct PoolAnonymityArgs {
    /// CI-sized: 100 and 1,000 users, fewer scored withdrawals.
    #[arg(long)]
    pub quick: bool,
    /// Users per simulated pool (default 100,1000,10000; quick 100,1000).
    #[arg(long, value_delimiter = ',')]
    pub users: Vec<usize>,
    /// Withdrawals scored per (users, policy), evenly spread (the adversary sees all).
    #[arg(long, default_value_t = 2_000)]
    pub scored: usize,
    /// Where the JSON goes.
    #[arg(long, default_value = "bench/data")]
    pub out_dir: PathBuf,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The adversary's amount rules, in report order.
const RULES: [(&str, AmountRule); 3] = [
    ("timing only", AmountRule::Ignore),
    ("exact amount + timing", AmountRule::Exact),
    ("amount within 1% + timing", AmountRule::Within { tolerance_ppm: 10_000 }),
];

/// Runs the simulation sweep and writes `bench/data/pool-anonymity.json`.
pub fn run(args: &PoolAnonymityArgs) -> Result<(), BenchError> {
    let started = Instant::now();
    let users: Vec<usize> = if !args.users.is_empty() {
        args.users.clone()
    } else if args.quick {
        vec![100, 1_000]
    } else {
        vec![100, 1_000, 10_000]
    };
    let scored = if args.quick { args.scored.min(500) } else { args.scored }.max(1);
    let set_samples = if args.quick { 50 } else { 200 };
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let base = PoolSimConfig::default();
    let mut rows = Vec::new();
    for &n in &users {
        for policy in WithdrawalPolicy::ALL {
            let config = PoolSimConfig { users: n, policy, ..base };
            let sim = simulate_pool(&config, &mut rng).map_err(err)?;
            let withdrawals = sim.history.spends.len();
            let stride = withdrawals.div_ceil(scored).max(1);
            let timed = PoolAdversary::new(TimingPrior::Exponential { mean_s: config.mean_delay_s() });
            let mut attacks = Vec::new();
            for (name, rule) in RULES {
                let report = linking_attack_sampled(&sim.history, &sim.truth, &timed, rule, stride).map_err(err)?;
                attacks.push(json!({ "adversary": name, "rule": rule, "report": report }));
            }
            // The anonymity set of the inputs (what the chain shows without amounts).
            let set_stride = withdrawals.div_ceil(set_samples).max(1);
            let uniform = PoolAdversary::new(TimingPrior::Uniform);
            let (mut size, mut h_uniform, mut h_timed, mut k) = (0.0, 0.0, 0.0, 0.0);
            for i in (0..withdrawals).step_by(set_stride) {
                let u = spend_anonymity(&sim.history, i, &uniform).map_err(err)?;
                let t = spend_anonymity(&sim.history, i, &timed).map_err(err)?;
                size += u.set_size as f64;
                h_uniform += u.entropy_bits;
                h_timed += t.entropy_bits;
                k += 1.0;
            }
            let (size, h_uniform, h_timed) = (size / k, h_uniform / k, h_timed / k);
            println!(
                "pool-anonymity: N = {n:>6} {:<19} withdrawals {withdrawals:>6}  top-1 timing {:.3} exact {:.3} 1% {:.3}  set {:.0} H {:.2}/{:.2} bits",
                policy.name(),
                attacks[0]["report"]["top1_accuracy"].as_f64().unwrap_or(f64::NAN),
                attacks[1]["report"]["top1_accuracy"].as_f64().unwrap_or(f64::NAN),
                attacks[2]["report"]["top1_accuracy"].as_f64().unwrap_or(f64::NAN),
                size,
                h_uniform,
                h_timed
            );
            rows.push(json!({
                "users": n, "policy": policy.name(), "withdrawals": withdrawals, "leaves": sim.history.leaves.len(),
                "scored_every": stride, "mean_delay_s": config.mean_delay_s(), "attacks": attacks,
                "input_set": { "mean_size": round(size, 1), "mean_entropy_bits_uniform": round(h_uniform, 3),
                    "mean_entropy_bits_timing_prior": round(h_timed, 3), "samples": k },
            }));
        }
    }
    let pick = |n: usize, policy: &str, rule: usize, field: &str| -> f64 {
        rows.iter()
            .find(|r| r["users"] == n && r["policy"] == policy)
            .and_then(|r| r["attacks"][rule]["report"][field].as_f64())
            .unwrap_or(f64::NAN)
    };
    let x: Vec<f64> = users.iter().map(|&n| n as f64).collect();
    let best =
        |n: usize, policy: &str| (0..RULES.len()).map(|r| pick(n, policy, r, "top1_accuracy")).fold(0.0, f64::max);
    let top1_lines: Vec<Value> = WithdrawalPolicy::ALL
        .iter()
        .map(|p| series(p.name(), &x, &users.iter().map(|&n| best(n, p.name())).collect::<Vec<_>>()))
        .collect();
    let entropy_lines: Vec<Value> = WithdrawalPolicy::ALL
        .iter()
        .map(|p| {
            series(p.name(), &x, &users.iter().map(|&n| pick(n, p.name(), 2, "mean_entropy_bits")).collect::<Vec<_>>())
        })
        .collect();
    let top1_chart = Chart {
        suffix: "top1",
        title: "deposit→withdrawal linking: adversary's best top-1 accuracy",
        kind: "line",
        x_label: "users",
        y_label: "top-1 accuracy",
        log_x: true,
        log_y: false,
    };
    let entropy_chart = Chart {
        suffix: "entropy",
        title: "posterior entropy (amount within 1 % + timing)",
        kind: "line",
        x_label: "users",
        y_label: "bits",
        log_x: true,
        log_y: false,
    };
    let largest = *users.iter().max().unwrap_or(&0);
    let summary = json!({
        "users": largest,
        "best_top1": WithdrawalPolicy::ALL.iter().map(|p| (p.name().to_string(), json!(round(best(largest, p.name()), 3))))
            .collect::<serde_json::Map<String, Value>>(),
        "elapsed_s": round(started.elapsed().as_secs_f64(), 1),
    });
    let experiment = "pool-anonymity";
    write_experiment(
        &args.out_dir,
        experiment,
        json!({ "kind": "simulation (nox-anonymity pool model), not a testnet measurement", "quick": args.quick,
            "seed": args.seed, "users": users, "scored_withdrawals": scored, "input_set_samples": set_samples,
            "base": base, "adversary": "exponential timing prior with the policy's true mean delay; amount rules as listed" }),
        json!({ "rows": rows }),
        summary,
        vec![top1_chart.with(experiment, top1_lines), entropy_chart.with(experiment, entropy_lines)],
    )
}
