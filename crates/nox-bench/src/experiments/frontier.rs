//! `nox bench frontier` (issue 32): the frontier of anonymity, cost and round trip over the
//! client cover rate λ_P and the nodes' mean mixing delay μ, to choose the shipped defaults.
//! Results: `bench/data/frontier.json`, figures and the choice in `docs/benchmarks/frontier.md`.
//!
//! For each (λ_P, μ) of the grid:
//! - **Cost**: upstream bytes a day of an always-on client, `λ_P × record × 86,400`, where
//!   `record` is the link record of one packet of the geometry (`nox_link::LinkConfig`), at
//!   4 KiB (the shipped length) and 2 KiB / 32 KiB for comparison. An always-on client sends
//!   nothing else: real packets take cover slots (substitution, `nox_client`), loops and drops
//!   are the slots themselves.
//! - **Anonymity**: sender entropy (% of `log₂ N`) and the adversary's top-1 accuracy at
//!   `--users` (1,000) always-on users, from the same pool model `nox bench anonymity-scale`
//!   runs ([`nox_anonymity::activity::pool_sender_anonymity`], called, not re-implemented).
//!   It does not depend on the packet length.
//! - **Round trip**: p50/p90 of a model driven by the client's real schedule: a request made at
//!   a uniformly random instant waits for the next firing of `nox_cover::PoissonTimer` at λ_P
//!   (the timer the client's send queue ticks on), then crosses 6 hops (3 out, 3 back on a SURB)
//!   of Exp(μ) each plus a processing floor per hop. The floor is measured: with `--measured`,
//!   the mean per-hop CPU of the given `nox bench packet-size --testnet` runs; otherwise
//!   `--processing-us`.
//! - With `--measured` files (real testnets at given λ_P, μ), the model at each file's (λ_P, μ)
//!   is printed beside the measured round trip and cost: the validation of the model.
//!
//! Then the Pareto frontier at 4 KiB (no other point is at most as costly, at most as slow at
//! p50, and at least as anonymous, and better in one), which points meet each target
//! (≤ `--max-gb-per-day`, p50 ≤ `--max-rtt-ms`, entropy ≥ `--min-entropy-pct`), and the rule's
//! choice: the cheapest point meeting all three if any; else the fastest (p50) meeting cost and
//! anonymity.

use std::{path::PathBuf, time::Duration, time::Instant};

use nox_anonymity::activity::{ActivityConfig, Profile, pool_sender_anonymity};
use nox_cover::PoissonTimer;
use nox_link::LinkConfig;
use nox_sphinx::{DEFAULT_HOPS, Geometry, Scheme};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::harness::{BenchError, err, line, percentile, round, series, write_experiment};

/// Options of `nox bench frontier`.
#[derive(clap::Args, Clone)]
pub struct FrontierArgs {
    /// CI-sized (< 10 s): a 4 × 4 grid, fewer trials.
    #[arg(long)]
    pub quick: bool,
    /// λ_P values, packets/s (default 1,1.5,2,2.25,2.5,2.75,3,4,6,8,12,16; quick 1,2,4,8).
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// μ values, ms (default 10,20,30,40,50,55,60,70,80,100; quick 20,50,75,100).
    #[arg(long, value_delimiter = ',')]
    pub delays_ms: Vec<f64>,
    /// Packet lengths; the first is the one the frontier is drawn at.
    #[arg(long, value_delimiter = ',', default_value = "4096,2048,32768")]
    pub sizes: Vec<usize>,
    /// Users of the anonymity figure.
    #[arg(long, default_value_t = 1_000)]
    pub users: u32,
    /// Deliveries scored per grid point (quick 150).
    #[arg(long, default_value_t = 1_500)]
    pub entropy_trials: usize,
    /// Round trips sampled per grid point (quick 2,000).
    #[arg(long, default_value_t = 20_000)]
    pub rtt_trials: usize,
    /// Processing floor per hop, µs, when no `--measured` file gives it.
    #[arg(long, default_value_t = 1_000.0)]
    pub processing_us: f64,
    /// `nox bench packet-size --testnet` result files (one length each) to validate against.
    #[arg(long, value_delimiter = ',')]
    pub measured: Vec<PathBuf>,
    /// Cost target, GB (10⁹ B) a day upstream.
    #[arg(long, default_value_t = 1.0)]
    pub max_gb_per_day: f64,
    /// Round-trip target, p50 ms.
    #[arg(long, default_value_t = 300.0)]
    pub max_rtt_ms: f64,
    /// Anonymity target, % of log₂ N.
    #[arg(long, default_value_t = 90.0)]
    pub min_entropy_pct: f64,
    /// Where the JSON goes.
    #[arg(long, default_value = "bench/data")]
    pub out_dir: PathBuf,
    /// Output file stem (default `frontier`; `--quick`: `frontier-quick`, so a CI run never
    /// overwrites the published grid).
    #[arg(long)]
    pub name: Option<String>,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

const SECONDS_PER_DAY: f64 = 86_400.0;
/// Hops of one round trip: three out, three back on the SURB.
const ROUND_TRIP_HOPS: usize = 2 * DEFAULT_HOPS;

/// One grid point's figures at the frontier's packet length.
#[derive(Debug, Clone, Copy)]
struct Point {
    rate: f64,
    delay_ms: f64,
    gb_per_day: f64,
    entropy_pct: f64,
    top1: f64,
    rtt_p50_ms: f64,
    rtt_p90_ms: f64,
}

/// A measured testnet run read from a `packet-size --testnet` file.
struct Measured {
    file: String,
    rate: f64,
    delay_ms: f64,
    packet_len: usize,
    rtt_p50_ms: f64,
    rtt_p90_ms: f64,
    gb_per_day: f64,
    hop_cpu_us: f64,
    load_1m: f64,
}

/// Runs `nox bench frontier`.
pub fn run(args: &FrontierArgs) -> Result<(), BenchError> {
    let quick = args.quick;
    let rates = crate::harness::given_or(
        &args.rates,
        quick,
        &[1.0, 2.0, 4.0, 8.0],
        &[1.0, 1.5, 2.0, 2.25, 2.5, 2.75, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0],
    );
    let delays = crate::harness::given_or(
        &args.delays_ms,
        quick,
        &[20.0, 50.0, 75.0, 100.0],
        &[10.0, 20.0, 30.0, 40.0, 50.0, 55.0, 60.0, 70.0, 80.0, 100.0],
    );
    let (entropy_trials, rtt_trials) = if quick {
        (args.entropy_trials.min(150), args.rtt_trials.min(2_000))
    } else {
        (args.entropy_trials, args.rtt_trials)
    };
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if rates.iter().chain(&delays).any(|&v| !positive(v))
        || args.sizes.is_empty()
        || entropy_trials == 0
        || rtt_trials == 0
        || !(args.processing_us.is_finite() && args.processing_us >= 0.0)
    {
        return Err(err("--rates, --delays-ms, --sizes and the trials must be positive, --processing-us ≥ 0"));
    }
    let records: Vec<(usize, usize)> =
        args.sizes.iter().map(|&len| Ok((len, link_record(len)?))).collect::<Result<_, BenchError>>()?;
    let measured = args.measured.iter().map(|p| read_measured(p)).collect::<Result<Vec<_>, _>>()?;
    let processing_us = if measured.is_empty() {
        args.processing_us
    } else {
        measured.iter().map(|m| m.hop_cpu_us).sum::<f64>() / measured.len() as f64
    };
    let started = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let record = records[0].1;
    let mut points = Vec::new();
    for &rate in &rates {
        for &delay_ms in &delays {
            let anonymity =
                entropy(args.users, Profile::AlwaysOn, rate, delay_ms, processing_us, None, entropy_trials, &mut rng)?;
            let (p50, p90) = round_trip(rate, delay_ms, processing_us, rtt_trials, &mut rng)?;
            points.push(Point {
                rate,
                delay_ms,
                gb_per_day: gb_per_day(rate, record),
                entropy_pct: anonymity.0,
                top1: anonymity.1,
                rtt_p50_ms: p50,
                rtt_p90_ms: p90,
            });
        }
    }
    let meets_cost = |p: &Point| p.gb_per_day <= args.max_gb_per_day;
    let meets_rtt = |p: &Point| p.rtt_p50_ms <= args.max_rtt_ms;
    let meets_anonymity = |p: &Point| p.entropy_pct >= args.min_entropy_pct;
    let pareto: Vec<bool> = points.iter().map(|p| !points.iter().any(|q| dominates(q, p))).collect();
    let all_three: Vec<&Point> =
        points.iter().filter(|p| meets_cost(p) && meets_rtt(p) && meets_anonymity(p)).collect();
    let (chosen, rule) = if let Some(best) = all_three.iter().min_by(|a, b| a.gb_per_day.total_cmp(&b.gb_per_day)) {
        (Some(**best), "the cheapest point meeting all three targets")
    } else {
        let best = points
            .iter()
            .filter(|p| meets_cost(p) && meets_anonymity(p))
            .min_by(|a, b| a.rtt_p50_ms.total_cmp(&b.rtt_p50_ms).then(b.entropy_pct.total_cmp(&a.entropy_pct)));
        (best.copied(), "no point meets all three: the fastest (p50) meeting the cost and anonymity targets")
    };

    // The chosen point's profiles: what wallet and mobile users get at the same (λ_P, μ).
    let mut profiles = Vec::new();
    if let Some(c) = chosen {
        let mobile_rate = (args.max_gb_per_day * 1e9 / record as f64 / SECONDS_PER_DAY).min(c.rate);
        for profile in Profile::ALL {
            let mobile = (profile == Profile::Mobile).then_some(mobile_rate);
            let (pct, top1) =
                entropy(args.users, profile, c.rate, c.delay_ms, processing_us, mobile, entropy_trials, &mut rng)?;
            profiles.push(json!({ "profile": profile.name(), "entropy_pct": round(pct, 1), "top1": round(top1, 4),
                "mobile_rate_per_s": mobile.map(|r| round(r, 4)) }));
        }
    }

    let mut validation = Vec::new();
    for m in &measured {
        let (p50, p90) = round_trip(m.rate, m.delay_ms, m.hop_cpu_us, rtt_trials, &mut rng)?;
        let model_gb = gb_per_day(m.rate, link_record(m.packet_len)?);
        let (pct, _) =
            entropy(args.users, Profile::AlwaysOn, m.rate, m.delay_ms, m.hop_cpu_us, None, entropy_trials, &mut rng)?;
        println!(
            "validate λ_P {} μ {} ms: RTT p50 measured {:.0} model {:.0} ms, p90 {:.0} / {:.0}; GB/day {:.3} / {:.3}",
            m.rate, m.delay_ms, m.rtt_p50_ms, p50, m.rtt_p90_ms, p90, m.gb_per_day, model_gb
        );
        validation.push(json!({
            "file": m.file, "cover_rate_per_s": m.rate, "mean_delay_ms": m.delay_ms, "packet_len": m.packet_len,
            "load_avg_1m": m.load_1m, "hop_cpu_us": round(m.hop_cpu_us, 1),
            "measured": { "rtt_p50_ms": round(m.rtt_p50_ms, 1), "rtt_p90_ms": round(m.rtt_p90_ms, 1), "gb_per_day": round(m.gb_per_day, 3) },
            "model": { "rtt_p50_ms": round(p50, 1), "rtt_p90_ms": round(p90, 1), "gb_per_day": round(model_gb, 3) },
            "entropy_pct_at_users": round(pct, 1),
        }));
    }

    let grid: Vec<Value> = points
        .iter()
        .zip(&pareto)
        .map(|(p, &on_frontier)| {
            let cost: Value = records
                .iter()
                .map(|&(len, rec)| (len.to_string(), json!(round(gb_per_day(p.rate, rec), 3))))
                .collect::<serde_json::Map<_, _>>()
                .into();
            json!({
                "cover_rate_per_s": p.rate, "mean_delay_ms": p.delay_ms, "mu_lambda": round(p.rate * p.delay_ms / 1e3, 3),
                "gb_per_day": cost, "entropy_pct": round(p.entropy_pct, 1), "top1": round(p.top1, 4),
                "rtt_p50_ms": round(p.rtt_p50_ms, 1), "rtt_p90_ms": round(p.rtt_p90_ms, 1), "pareto": on_frontier,
                "meets": { "cost": meets_cost(p), "rtt": meets_rtt(p), "anonymity": meets_anonymity(p) },
            })
        })
        .collect();
    let charts = charts(&points, &pareto, &delays, &rates, &records, args.min_entropy_pct);
    let point_json = |p: &Point| {
        json!({ "cover_rate_per_s": p.rate, "mean_delay_ms": p.delay_ms, "gb_per_day": round(p.gb_per_day, 3),
            "entropy_pct": round(p.entropy_pct, 1), "rtt_p50_ms": round(p.rtt_p50_ms, 1), "rtt_p90_ms": round(p.rtt_p90_ms, 1) })
    };
    let summary = json!({
        "packet_len": records[0].0,
        "points": points.len(),
        "pareto_points": pareto.iter().filter(|&&x| x).count(),
        "meet_cost": points.iter().filter(|p| meets_cost(p)).count(),
        "meet_rtt": points.iter().filter(|p| meets_rtt(p)).count(),
        "meet_anonymity": points.iter().filter(|p| meets_anonymity(p)).count(),
        "meet_all_three": all_three.len(),
        "rule": rule,
        "chosen": chosen.as_ref().map(point_json),
        "processing_us_per_hop": round(processing_us, 1),
    });
    let parameters = json!({
        "quick": quick, "rates_per_s": rates, "delays_ms": delays, "sizes": args.sizes,
        "record_bytes": records.iter().map(|&(l, r)| json!({ "packet_len": l, "record_len": r })).collect::<Vec<_>>(),
        "users": args.users, "entropy_trials": entropy_trials, "rtt_trials": rtt_trials, "seed": args.seed,
        "processing_us_per_hop": round(processing_us, 1),
        "processing_source": if measured.is_empty() { "--processing-us" } else { "mean hop_cpu_us of the --measured testnet runs" },
        "targets": { "max_gb_per_day": args.max_gb_per_day, "max_rtt_p50_ms": args.max_rtt_ms, "min_entropy_pct": args.min_entropy_pct },
        "activity": ActivityConfig { users: args.users, ..ActivityConfig::default() },
        "model": "cost λ_P·record·86400; entropy nox_anonymity::activity::pool_sender_anonymity (always-on); RTT: next nox_cover::PoissonTimer firing after a uniform request instant + 6 × (Exp(μ) + processing)",
        "elapsed_s": round(started.elapsed().as_secs_f64(), 2),
    });
    let results = json!({ "grid": grid, "profiles_at_chosen": profiles, "validation": validation });
    let name = args.name.clone().unwrap_or_else(|| if quick { "frontier-quick" } else { "frontier" }.to_owned());
    write_experiment(&args.out_dir, &name, parameters, results, summary, charts)
}

/// `q` dominates `p`: no worse on cost, p50 and entropy, better on one.
fn dominates(q: &Point, p: &Point) -> bool {
    let no_worse = q.gb_per_day <= p.gb_per_day && q.rtt_p50_ms <= p.rtt_p50_ms && q.entropy_pct >= p.entropy_pct;
    let better = q.gb_per_day < p.gb_per_day || q.rtt_p50_ms < p.rtt_p50_ms || q.entropy_pct > p.entropy_pct;
    no_worse && better
}

fn gb_per_day(rate: f64, record: usize) -> f64 {
    rate * record as f64 * SECONDS_PER_DAY / 1e9
}

/// The link record of one packet of `packet_len` (what a client puts on the wire per slot).
fn link_record(packet_len: usize) -> Result<usize, BenchError> {
    let geometry = Geometry::with_scheme(packet_len, DEFAULT_HOPS, Scheme::default()).map_err(err)?;
    Ok(LinkConfig::new(geometry).map_err(err)?.record_len())
}

/// (% of log₂ N, top-1 accuracy) of the pool model at `users` users of `profile`.
#[allow(clippy::too_many_arguments)]
fn entropy(
    users: u32,
    profile: Profile,
    rate: f64,
    delay_ms: f64,
    processing_us: f64,
    mobile_rate: Option<f64>,
    trials: usize,
    rng: &mut ChaCha20Rng,
) -> Result<(f64, f64), BenchError> {
    let base = ActivityConfig::default();
    let config = ActivityConfig {
        users,
        profile,
        cover_rate_per_s: rate,
        mean_delay_s: delay_ms / 1e3,
        processing_s: processing_us / 1e6,
        mobile_rate_per_s: mobile_rate.unwrap_or(base.mobile_rate_per_s),
        ..base
    };
    let report = pool_sender_anonymity(&config, trials, rng).map_err(err)?;
    Ok((100.0 * report.normalized_entropy, report.top1_accuracy))
}

/// (p50, p90) ms of the modelled round trip (module documentation).
fn round_trip(
    rate: f64,
    delay_ms: f64,
    processing_us: f64,
    trials: usize,
    rng: &mut ChaCha20Rng,
) -> Result<(f64, f64), BenchError> {
    let mean_gap = Duration::from_secs_f64(1.0 / rate);
    let hop_mean = Duration::from_secs_f64(delay_ms / 1e3);
    let processing = Duration::from_secs_f64(processing_us / 1e6);
    let mut samples = Vec::with_capacity(trials);
    for _ in 0..trials {
        let mut timer = PoissonTimer::new(rate, nox_cover::Instant::ORIGIN, ChaCha20Rng::seed_from_u64(rng.next_u64()))
            .map_err(err)?;
        // The request is made at a uniform instant in [10, 20) mean gaps after the client started.
        let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let made = nox_cover::Instant::from_offset(mean_gap.mul_f64(10.0 + 10.0 * unit));
        let far = made + mean_gap.mul_f64(1_000.0);
        let slot = loop {
            match timer.poll(far) {
                Some(at) if at >= made => break at,
                Some(_) => continue,
                None => return Err(err("no cover slot within 1,000 mean gaps")),
            }
        };
        let mut total = slot.saturating_duration_since(made);
        for _ in 0..ROUND_TRIP_HOPS {
            total += processing + nox_stats::exponential::sample(rng, hop_mean);
        }
        samples.push(total.as_secs_f64() * 1e3);
    }
    samples.sort_by(f64::total_cmp);
    let q = |q| percentile(&samples, q).unwrap_or(f64::NAN);
    Ok((q(0.5), q(0.9)))
}

fn read_measured(path: &std::path::Path) -> Result<Measured, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::Io { path: path.to_path_buf(), source })?;
    let v: Value = serde_json::from_str(&text).map_err(err)?;
    let bad = || err(format!("{}: not a one-length `nox bench packet-size --testnet` result", path.display()));
    let row = v["results"]["rows"].get(0).ok_or_else(bad)?;
    let num = |x: &Value| x.as_f64().ok_or_else(bad);
    Ok(Measured {
        file: path.display().to_string(),
        rate: num(&v["parameters"]["cover_rate_per_s"])?,
        delay_ms: num(&v["parameters"]["mean_delay_ms"])?,
        packet_len: row["packet_len"].as_u64().ok_or_else(bad)? as usize,
        rtt_p50_ms: num(&row["rtt_ms"]["p50"])?,
        rtt_p90_ms: num(&row["rtt_ms"]["p90"])?,
        gb_per_day: num(&row["cover_gb_per_day_mean"])?,
        hop_cpu_us: num(&row["hop_cpu_us_mean"])?,
        load_1m: row["load_avg_1m_mean"].as_f64().unwrap_or(f64::NAN),
    })
}

fn charts(
    points: &[Point],
    pareto: &[bool],
    delays: &[f64],
    rates: &[f64],
    records: &[(usize, usize)],
    min_entropy_pct: f64,
) -> Vec<Value> {
    // Frontier: p50 vs cost per μ, among points meeting the anonymity target.
    let per_delay =
        |f: &dyn Fn(&Point) -> f64, g: &dyn Fn(&Point) -> f64, keep: &dyn Fn(&Point) -> bool| -> Vec<Value> {
            delays
                .iter()
                .filter_map(|&d| {
                    let pts: Vec<&Point> = points.iter().filter(|p| p.delay_ms == d && keep(p)).collect();
                    (!pts.is_empty()).then(|| {
                        let x: Vec<f64> = pts.iter().map(|p| round(f(p), 3)).collect();
                        let y: Vec<f64> = pts.iter().map(|p| round(g(p), 1)).collect();
                        series(&format!("μ = {d} ms"), &x, &y)
                    })
                })
                .collect()
        };
    let mut frontier = per_delay(&|p| p.gb_per_day, &|p| p.rtt_p50_ms, &|p| p.entropy_pct >= min_entropy_pct);
    let mut on_sorted: Vec<&Point> =
        points.iter().zip(pareto).filter(|(p, o)| **o && p.entropy_pct >= min_entropy_pct).map(|(p, _)| p).collect();
    on_sorted.sort_by(|a, b| a.gb_per_day.total_cmp(&b.gb_per_day));
    let x: Vec<f64> = on_sorted.iter().map(|p| round(p.gb_per_day, 3)).collect();
    let y: Vec<f64> = on_sorted.iter().map(|p| round(p.rtt_p50_ms, 1)).collect();
    frontier.push(series("Pareto (≥ target)", &x, &y));
    let entropy = per_delay(&|p| p.rate, &|p| p.entropy_pct, &|_| true);
    let cost: Vec<Value> = records
        .iter()
        .map(|&(len, rec)| {
            let y: Vec<f64> = rates.iter().map(|&r| round(gb_per_day(r, rec), 3)).collect();
            series(&format!("{len} B packets"), rates, &y)
        })
        .collect();
    vec![
        line(
            "rtt-vs-cost",
            "Round trip p50 vs upstream cost, points ≥ the anonymity target (4 KiB)",
            "GB/day upstream",
            "round trip p50 (ms)",
        )
        .with("frontier", frontier),
        line("entropy", "Sender entropy at 1,000 users vs λ_P, per μ", "λ_P (packets/s)", "% of log2 N")
            .with("frontier", entropy),
        line("cost", "Upstream cost of an always-on client vs λ_P", "λ_P (packets/s)", "GB/day").with("frontier", cost),
    ]
}
