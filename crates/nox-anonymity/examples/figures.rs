//! Prints the headline figures of `docs/design/anonymity-metrics.md` from the simulator.
//!
//! `cargo run --release -p nox-anonymity --example figures`

use nox_anonymity::attacks::{
    CompromiseModel, Direction, IntersectionConfig, NMinusOneConfig, compromised_paths, intersection_attack,
    n_minus_one_sweep,
};
use nox_anonymity::simulate::{SimConfig, simulate};
use nox_anonymity::{Topology, sender_entropy, timing_correlation, unlinkability};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn row(label: &str, config: &SimConfig) {
    let mut rng = ChaCha20Rng::seed_from_u64(2026);
    let sim = simulate(config, &mut rng);
    let e = sender_entropy(&sim.observation, &sim.topology, &config.adversary_model(), Some(&sim.truth)).unwrap();
    let u = unlinkability(&sim.observation, 20, 10, &mut rng).unwrap();
    let lag = (config.layers as f64 * (config.mean_delay_us + config.processing_us)) as u64;
    let c = timing_correlation(&sim.observation, 100_000, lag, 4, Some(&sim.truth)).unwrap();
    println!(
        "| {label} | {} | {:.2} / {:.2} | {:.2} | {:.2} | {:.3} | {:.3} | {:.1e} | {:.1e} | {:.2} | {:.2} |",
        e.messages,
        e.mean_entropy_bits,
        e.max_entropy_bits,
        e.min_entropy_bits,
        e.effective_anonymity_set,
        e.mean_true_sender_probability.unwrap(),
        e.top1_accuracy.unwrap(),
        u.ks_p_value,
        u.chi_square_p_value,
        c.true_pairs_mean_pearson.unwrap_or(f64::NAN),
        c.linking_accuracy.unwrap(),
    );
}

fn main() {
    let base = SimConfig { clients: 50, destinations: 50, duration_us: 10_000_000, ..SimConfig::default() };
    println!("Simulated: 3 layers, 5 msg/s per client, 10 s; GPA sees every link.\n");
    println!(
        "| case | msgs | H mean / max (bits) | H min | 2^H | P(true sender) | top-1 | KS p | χ² p | r true pairs | volume link |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for mu_ms in [0.0, 1.0, 10.0, 50.0, 100.0] {
        row(&format!("N=50 W=3 μ={mu_ms} ms"), &SimConfig { mean_delay_us: mu_ms * 1e3, ..base.clone() });
    }
    for clients in [2, 5, 10, 20] {
        row(&format!("N={clients} W=3 μ=50 ms"), &SimConfig { clients, destinations: clients, ..base.clone() });
    }
    for width in [1, 5, 10] {
        row(&format!("N=50 W={width} μ=50 ms"), &SimConfig { width, ..base.clone() });
    }
    row("N=50 W=3 μ=50 ms, λ_P=5/s", &SimConfig { client_cover_rate_per_s: 5.0, ..base.clone() });
    row("N=50 W=3 μ=50 ms, λ_L=20/s/node", &SimConfig { node_cover_rate_per_s: 20.0, ..base.clone() });
    row(
        "N=50 W=3 μ=1 ms, p=0.5 ms±0.2",
        &SimConfig { mean_delay_us: 1_000.0, processing_us: 500.0, processing_jitter_us: 200.0, ..base.clone() },
    );

    let mut rng = ChaCha20Rng::seed_from_u64(7);
    println!("\nn−1 (1000 flood pkt/s, 10μ flush + 10μ watch, d = 16, 10⁷ H/s), 2000 trials:\n");
    println!("| μ (ms) | λ_c (/s) | success | analytic | flood pkts | hashes | hash-seconds |");
    println!("|---|---|---|---|---|---|---|");
    let sweep = n_minus_one_sweep(
        &NMinusOneConfig::default(),
        &[0.0, 10_000.0, 50_000.0, 200_000.0],
        &[0.0, 5.0, 20.0, 100.0],
        2_000,
        &mut rng,
    )
    .unwrap();
    for r in sweep {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.0} | {:.2e} | {:.2} |",
            r.config.mean_delay_us / 1e3,
            r.config.node_cover_rate_per_s,
            r.success_rate,
            r.analytic_success_rate,
            r.mean_packets,
            r.hash_evaluations,
            r.hashing_seconds
        );
    }

    println!("\nIntersection (50 clients, 50 destinations, target active 0.7, others 0.5), 1000 trials:\n");
    println!("| direction | client cover | success | wrong | undecided | mean epochs |");
    println!("|---|---|---|---|---|---|");
    for direction in [Direction::SenderOfDestination, Direction::PartnerOfClient] {
        for presence in [0.0, IntersectionConfig::cover_presence(1.0, 10.0)] {
            let config = IntersectionConfig {
                direction,
                clients: 50,
                destinations: 50,
                target_activity: 0.7,
                other_activity: 0.5,
                cover_presence: presence,
                max_epochs: 200,
            };
            let r = intersection_attack(&config, 1_000, &mut rng).unwrap();
            println!(
                "| {direction:?} | {} | {:.3} | {:.3} | {:.3} | {} |",
                if presence > 0.0 { "λ_P·T = 10" } else { "none" },
                r.success_rate,
                r.failure_rate,
                r.undecided_rate,
                r.mean_epochs_to_identify.map_or("—".into(), |m| format!("{m:.1}"))
            );
        }
    }

    println!("\nCompromised nodes, 3 × 5 topology, 100 000 sampled paths:\n");
    println!("| model | per layer | f | measured full path | exact Π c_l/W_l | naive f³ | entry+exit | any hop |");
    println!("|---|---|---|---|---|---|---|---|");
    let topology = Topology::uniform(3, 5);
    for model in [
        CompromiseModel::PerLayer { fraction: 0.2 },
        CompromiseModel::PerLayer { fraction: 0.4 },
        CompromiseModel::Uniform { fraction: 0.2 },
        CompromiseModel::Uniform { fraction: 0.4 },
    ] {
        let r = compromised_paths(&topology, model, 100_000, &mut rng).unwrap();
        println!(
            "| {model:?} | {:?} | {:.3} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |",
            r.compromised_per_layer,
            r.fraction,
            r.measured_full_path_rate,
            r.exact_layered_rate,
            r.naive_rate,
            r.measured_entry_and_exit_rate,
            r.measured_any_rate
        );
    }
}
