//! Issue 32's calibration ablation: the link-level simulator (`simulate_substitution`) at the
//! testnet calibration points (10 clients / 5 active, 15 s; 30 / 15, 40 s; 0.25 requests/s,
//! 3 × 3 nodes), adding one mixing source or scoring change at a time, against the measured
//! values of `bench/data/anonymity-calibration-10.json` and `-30-40s.json`
//! (docs/benchmarks/anonymity.md, "Calibration: where the bias came from").
//!
//! `cargo run --release -p nox-anonymity --example calibration_sources [runs]`
//!
//! The traffic settings below are the shipped values `nox bench cover --simulate` reads from
//! the crates (`ClientConfig::default().loop_fraction`, `nox_message::surbs_needed` for a
//! 128-byte echo at the client's loss and target, the node's `[cover]` defaults); they are
//! literals here only because this pure crate does not depend on the client or the node.

use nox_anonymity::activity::{SubstitutionConfig, simulate_substitution};
use nox_anonymity::{DelayModel, sender_entropy};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// (clients, active, seconds, μ ms, λ_P, measured bits, measured top-1).
const POINTS: [(u32, u32, u64, f64, f64, f64, f64); 8] = [
    (10, 5, 15, 20.0, 1.0, 0.63, 0.79),
    (10, 5, 15, 20.0, 2.0, 0.87, 0.63),
    (10, 5, 15, 50.0, 1.0, 1.69, 0.67),
    (10, 5, 15, 50.0, 2.0, 1.88, 0.50),
    (30, 15, 40, 20.0, 1.0, 1.57, 0.52),
    (30, 15, 40, 20.0, 2.0, 2.50, 0.23),
    (30, 15, 40, 50.0, 1.0, 2.68, 0.26),
    (30, 15, 40, 50.0, 2.0, 3.60, 0.13),
];

/// (label, the change, scored with the testnet's delay model).
type Step = (&'static str, fn(SubstitutionConfig) -> SubstitutionConfig, bool);

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let steps: [Step; 6] = [
        ("0 bare model, sim's own scoring (processing 300 µs known exactly)", |c| c, false),
        ("1 bare model, the testnet's scoring (Exp(μ), 300 µs floor)", |c| c, true),
        (
            "2 + client loops (half the cover slots) with their 2 SURB replies, and requests' replies",
            |c| SubstitutionConfig { loop_fraction: 0.5, reply_packets: 2, ..c },
            true,
        ),
        (
            "3 + node loop and drop cover 0.05/s each per node",
            |c| SubstitutionConfig {
                loop_fraction: 0.5,
                reply_packets: 2,
                node_loop_rate_per_s: 0.05,
                node_drop_rate_per_s: 0.05,
                ..c
            },
            true,
        ),
        (
            "4 = 3 with the exit's reply emission observed (a real GPA's view)",
            |c| SubstitutionConfig {
                loop_fraction: 0.5,
                reply_packets: 2,
                node_loop_rate_per_s: 0.05,
                node_drop_rate_per_s: 0.05,
                reply_first_hop_observed: true,
                ..c
            },
            true,
        ),
        (
            "5 = 1 + replies to requests only (no loops: every cover slot a drop)",
            |c| SubstitutionConfig { loop_fraction: 0.0, reply_packets: 2, ..c },
            true,
        ),
    ];
    for (name, step, testnet_scoring) in steps {
        println!("{name}");
        println!(
            "  clients  μ ms  λ_P | measured bits top-1 | simulated bits top-1 (per-run range) | diff bits top-1 | within ±0.35/±0.12 | events/s"
        );
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        for (clients, active, seconds, mu_ms, lambda, m_bits, m_top1) in POINTS {
            let base = SubstitutionConfig {
                clients,
                active,
                cover_rate_per_s: lambda,
                mean_delay_us: mu_ms * 1e3,
                duration_us: seconds * 1_000_000,
                ..SubstitutionConfig::default()
            };
            let config = step(base);
            let model = if testnet_scoring {
                DelayModel { mean_delay_us: config.mean_delay_us, processing_us: 0.0, jitter_floor_us: 300.0 }
            } else {
                DelayModel {
                    mean_delay_us: config.mean_delay_us,
                    processing_us: config.processing_us,
                    jitter_floor_us: 1.0,
                }
            };
            let (mut bits, mut top1, mut n, mut lo, mut hi, mut events) =
                (0.0, 0.0, 0usize, f64::MAX, f64::MIN, 0usize);
            for _ in 0..runs {
                let sim = simulate_substitution(&config, &mut rng);
                events += sim.observation.events.len();
                let Ok(r) = sender_entropy(&sim.observation, &sim.topology, &model, Some(&sim.truth)) else { continue };
                bits += r.mean_entropy_bits * r.messages as f64;
                top1 += r.top1_accuracy.unwrap_or(f64::NAN) * r.messages as f64;
                n += r.messages;
                lo = lo.min(r.mean_entropy_bits);
                hi = hi.max(r.mean_entropy_bits);
            }
            let (bits, top1) = (bits / n.max(1) as f64, top1 / n.max(1) as f64);
            let within = (bits - m_bits).abs() <= 0.35 && (top1 - m_top1).abs() <= 0.12;
            println!(
                "  {clients:>7}  {mu_ms:>4}  {lambda:>3} | {m_bits:>13.2} {m_top1:>5.2} | {bits:>14.2} {top1:>5.2} ({lo:.2}–{hi:.2}) | {:>+9.2} {:>+5.2} | {within} | {:.0}",
                bits - m_bits,
                top1 - m_top1,
                events as f64 / runs as f64 / seconds as f64
            );
        }
    }
}
