//! Prints headline figures from the simulator (run with `--release`).
use nox_anonymity::simulate::{SimConfig, simulate};
use nox_anonymity::{sender_entropy, timing_correlation, unlinkability};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn main() {
    let cases: Vec<(&str, SimConfig)> = vec![
        ("mu=0", SimConfig { mean_delay_us: 0.0, ..SimConfig::default() }),
        ("mu=1ms", SimConfig { mean_delay_us: 1_000.0, ..SimConfig::default() }),
        ("mu=50ms", SimConfig::default()),
        ("mu=50ms w=1", SimConfig { width: 1, ..SimConfig::default() }),
        ("mu=50ms w=3", SimConfig { width: 3, ..SimConfig::default() }),
        ("mu=50ms w=3 cover node 20/s", SimConfig { node_cover_rate_per_s: 20.0, ..SimConfig::default() }),
        ("mu=50ms w=1 cover node 20/s", SimConfig { width: 1, node_cover_rate_per_s: 20.0, ..SimConfig::default() }),
        ("mu=50ms N=5", SimConfig { clients: 5, ..SimConfig::default() }),
        ("mu=50ms N=50", SimConfig { clients: 50, ..SimConfig::default() }),
        ("mu=50ms N=1", SimConfig { clients: 1, ..SimConfig::default() }),
        ("mu=50ms client cover 5/s", SimConfig { client_cover_rate_per_s: 5.0, ..SimConfig::default() }),
    ];
    for (name, config) in cases {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let sim = simulate(&config, &mut rng);
        let t = std::time::Instant::now();
        let report =
            sender_entropy(&sim.observation, &sim.topology, &config.adversary_model(), Some(&sim.truth)).unwrap();
        let el = t.elapsed();
        let unl = unlinkability(&sim.observation, 20, 10, &mut rng).unwrap();
        let lag = (config.layers as f64 * (config.mean_delay_us + config.processing_us)) as u64;
        let cor = timing_correlation(&sim.observation, 100_000, lag, 4, Some(&sim.truth)).unwrap();
        println!(
            "{name:32} events={:6} msgs={:4} H={:.3}/{:.3} med={:.3} min={:.3} eff={:.2} ptrue={:.3} top1={:.3} ks p={:.2e} chi p={:.2e} r_agg={:?} r_true={:?} r_other={:?} link={:?} ({el:?})",
            sim.observation.events.len(),
            report.messages,
            report.mean_entropy_bits,
            report.max_entropy_bits,
            report.median_entropy_bits,
            report.min_entropy_bits,
            report.effective_anonymity_set,
            report.mean_true_sender_probability.unwrap(),
            report.top1_accuracy.unwrap(),
            unl.ks_p_value,
            unl.chi_square_p_value,
            cor.aggregate.pearson.map(|x| (x * 1000.0).round() / 1000.0),
            cor.true_pairs_mean_pearson.map(|x| (x * 1000.0).round() / 1000.0),
            cor.other_pairs_mean_pearson.map(|x| (x * 1000.0).round() / 1000.0),
            cor.linking_accuracy
        );
    }
}
