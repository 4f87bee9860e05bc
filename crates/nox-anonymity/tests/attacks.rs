//! The attacks succeed without defences and fail (or get dearer) with them.

use nox_anonymity::Topology;
use nox_anonymity::attacks::{
    CompromiseModel, Direction, IntersectionConfig, NMinusOneConfig, compromised_paths, intersection_attack,
    n_minus_one, n_minus_one_sweep,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

#[test]
fn n_minus_one_always_succeeds_without_cover() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let config = NMinusOneConfig::default(); // μ = 50 ms, no cover
    let report = n_minus_one(&config, 500, &mut rng).unwrap();
    assert!(report.success_rate > 0.99, "{}", report.success_rate);
    // Cost: 1000 packets/s over 10μ + 10μ = 1 s, each with 2^16 hashes.
    assert!((report.mean_packets - 1_000.0).abs() < 10.0, "{}", report.mean_packets);
    assert!((report.hash_evaluations - report.mean_packets * 65_536.0).abs() < 1e-6);
    assert!((report.hashing_seconds - report.hash_evaluations / 1e7).abs() < 1e-9);
}

#[test]
fn n_minus_one_against_node_cover_matches_the_analytic_rate() {
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    // λ_c μ = 20/s · 50 ms = 1: success ≈ 1/2.
    let config = NMinusOneConfig { node_cover_rate_per_s: 20.0, ..NMinusOneConfig::default() };
    let report = n_minus_one(&config, 2_000, &mut rng).unwrap();
    assert!((report.analytic_success_rate - 0.5).abs() < 1e-12);
    assert!(
        (report.success_rate - 0.5).abs() < 4.0 * report.standard_error,
        "{} ± {}",
        report.success_rate,
        report.standard_error
    );
    // Longer delays at a fixed cover rate defend better; with μ = 0 cover does not help.
    let sweep = n_minus_one_sweep(&config, &[0.0, 10_000.0, 100_000.0], &[20.0], 1_000, &mut rng).unwrap();
    assert_eq!(sweep[0].success_rate, 1.0);
    assert!(sweep[1].success_rate > sweep[2].success_rate + 0.3);
}

fn population(direction: Direction, cover_presence: f64) -> IntersectionConfig {
    IntersectionConfig {
        direction,
        clients: 50,
        destinations: 50,
        target_activity: 0.7,
        other_activity: 0.5,
        cover_presence,
        max_epochs: 100,
    }
}

#[test]
fn intersection_attack_identifies_without_client_cover_and_fails_with_it() {
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let presence = IntersectionConfig::cover_presence(1.0, 10.0); // λ_P = 1/s, 10 s epochs
    assert!(presence > 0.9999);
    for direction in [Direction::SenderOfDestination, Direction::PartnerOfClient] {
        let report = intersection_attack(&population(direction, 0.0), 300, &mut rng).unwrap();
        assert!(report.success_rate > 0.95, "{report:?}");
        assert!(report.mean_epochs_to_identify.unwrap() < 20.0, "{report:?}");
    }
    // Watching the destination: everyone is always active, nothing is ever eliminated.
    let covered = population(Direction::SenderOfDestination, presence);
    let report = intersection_attack(&covered, 300, &mut rng).unwrap();
    assert!(report.success_rate < 0.01, "{report:?}");
    assert!(report.undecided_rate > 0.99, "{report:?}");
    // Watching the client: idle epochs now count and usually eliminate the partner, but a
    // quick convergence still wins sometimes — cover halves the attack, it does not end it.
    let covered = population(Direction::PartnerOfClient, presence);
    let report = intersection_attack(&covered, 300, &mut rng).unwrap();
    assert!(report.success_rate < 0.6, "{report:?}");
    assert!(report.failure_rate > 0.4, "{report:?}");
}

#[test]
fn compromised_path_rate_matches_the_layered_product() {
    let mut rng = ChaCha20Rng::seed_from_u64(24);
    let topology = Topology::uniform(3, 5);
    let paths = 20_000;
    for model in [CompromiseModel::PerLayer { fraction: 0.4 }, CompromiseModel::Uniform { fraction: 0.4 }] {
        for _ in 0..5 {
            let r = compromised_paths(&topology, model, paths, &mut rng).unwrap();
            let tolerance = 4.0 * r.standard_error + 1e-12;
            assert!((r.measured_full_path_rate - r.exact_layered_rate).abs() <= tolerance, "{r:?}");
            let expected: f64 = r.compromised_per_layer.iter().map(|&c| c as f64 / 5.0).product();
            assert!((r.exact_layered_rate - expected).abs() < 1e-12);
            assert!(r.measured_any_rate >= r.measured_entry_and_exit_rate);
        }
    }
    // Per layer, the naive f^L is exact: (2/5)^3.
    let r = compromised_paths(&topology, CompromiseModel::PerLayer { fraction: 0.4 }, 10, &mut rng).unwrap();
    assert!((r.exact_layered_rate - 0.064).abs() < 1e-12 && (r.naive_rate - 0.064).abs() < 1e-12);
    // Uniformly, 6 of 15 nodes landing 4/1/1 gives (4·1·1)/125 = 0.032 ≠ 0.064: the layered
    // product is the one to quote. Extremes are exact.
    for (fraction, rate) in [(0.0, 0.0), (1.0, 1.0)] {
        let r = compromised_paths(&topology, CompromiseModel::Uniform { fraction }, 1_000, &mut rng).unwrap();
        assert_eq!(r.measured_full_path_rate, rate);
    }
}
