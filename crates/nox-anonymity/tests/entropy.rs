//! Sender entropy from the GPA's view must drop whenever the adversary learns more.

use nox_anonymity::simulate::{SimConfig, simulate};
use nox_anonymity::{
    AnonymityError, DelayModel, Endpoint, EntropyReport, LinkEvent, Observation, Topology, sender_entropy,
    sender_posteriors,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Small runs: 1 s of traffic at 5 messages/s per client.
fn small(config: SimConfig) -> SimConfig {
    SimConfig { duration_us: 1_000_000, ..config }
}

fn entropy(config: &SimConfig, seed: u64) -> EntropyReport {
    let sim = simulate(config, &mut ChaCha20Rng::seed_from_u64(seed));
    let report = sender_entropy(&sim.observation, &sim.topology, &config.adversary_model(), Some(&sim.truth)).unwrap();
    for message in &report.per_message {
        assert!(message.entropy_bits >= 0.0);
        assert!(message.entropy_bits <= report.max_entropy_bits + 1e-9, "H > log2 N");
        let p = message.true_sender_probability.unwrap();
        assert!((0.0..=1.0 + 1e-12).contains(&p));
    }
    assert_eq!(report.messages, sim.truth.message_delivery.len());
    report
}

/// Mean entropy over a few seeds, so a comparison does not hang on one lucky run.
fn mean_entropy(config: &SimConfig) -> f64 {
    (1..=3).map(|seed| entropy(config, seed).mean_entropy_bits).sum::<f64>() / 3.0
}

#[test]
fn no_mixing_delay_lets_the_gpa_link_every_message() {
    let without = small(SimConfig { mean_delay_us: 0.0, ..SimConfig::default() });
    let with = small(SimConfig::default()); // μ = 50 ms
    let (h0, h50) = (mean_entropy(&without), mean_entropy(&with));
    assert!(h0 < 0.05, "μ = 0: H = {h0}");
    assert!(h50 > 2.5, "μ = 50 ms: H = {h50}");
    let report = entropy(&without, 1);
    assert!(report.top1_accuracy.unwrap() > 0.99);
    // The flaw of scoring random entry/exit pairs: it reports ~log2 N here. From the
    // observation, μ = 1 ms is almost fully linkable.
    let one_ms = entropy(&small(SimConfig { mean_delay_us: 1_000.0, ..SimConfig::default() }), 1);
    assert!(one_ms.normalized_entropy < 0.2, "{}", one_ms.normalized_entropy);
}

#[test]
fn entropy_grows_with_the_mixing_delay() {
    let h = |mu: f64| mean_entropy(&small(SimConfig { mean_delay_us: mu, ..SimConfig::default() }));
    let (h1, h10, h100) = (h(1_000.0), h(10_000.0), h(100_000.0));
    assert!(h1 < h10 && h10 < h100, "{h1} {h10} {h100}");
}

#[test]
fn fewer_users_give_a_smaller_anonymity_set() {
    let h5 = mean_entropy(&small(SimConfig { clients: 5, ..SimConfig::default() }));
    let h50 = mean_entropy(&small(SimConfig { clients: 50, ..SimConfig::default() }));
    assert!(h5 < h50 - 1.0, "N = 5: {h5}, N = 50: {h50}");
    assert!(h5 <= 5f64.log2());
}

/// Against a GPA every link is visible, so spreading a fixed load over more nodes per layer
/// splits the traffic each packet is mixed with: the wider topology tells the adversary more.
/// (Seed 000 claims the opposite — "route diversity" — because it scored random pairs.)
#[test]
fn wider_layers_give_the_gpa_more_information_at_fixed_load() {
    let narrow = mean_entropy(&small(SimConfig { width: 1, ..SimConfig::default() }));
    let wide = mean_entropy(&small(SimConfig { width: 3, ..SimConfig::default() }));
    assert!(wide < narrow, "width 1: {narrow}, width 3: {wide}");
}

#[test]
fn a_single_user_has_no_anonymity() {
    let report = entropy(&small(SimConfig { clients: 1, ..SimConfig::default() }), 1);
    assert_eq!(report.max_entropy_bits, 0.0);
    assert!(report.per_message.iter().all(|m| m.entropy_bits == 0.0));
    assert_eq!(report.top1_accuracy, Some(1.0));
    assert_eq!(report.mean_true_sender_probability, Some(1.0));
}

#[test]
fn cover_traffic_raises_entropy() {
    let base = small(SimConfig::default());
    let plain = mean_entropy(&base);
    let client_cover = mean_entropy(&SimConfig { client_cover_rate_per_s: 5.0, ..base.clone() });
    let node_cover = mean_entropy(&SimConfig { node_cover_rate_per_s: 20.0, ..base.clone() });
    let drop_cover = mean_entropy(&SimConfig { node_drop_rate_per_s: 20.0, ..base });
    assert!(drop_cover > plain, "{plain} vs node drop cover {drop_cover}");
    assert!(client_cover > plain, "{plain} vs client cover {client_cover}");
    assert!(node_cover > plain, "{plain} vs node cover {node_cover}");
}

#[test]
fn the_adversary_beats_uniform_guessing_under_mixing() {
    let report = entropy(&small(SimConfig::default()), 4);
    let uniform = 1.0 / report.clients as f64;
    let p = report.mean_true_sender_probability.unwrap();
    assert!(p > uniform, "true-sender probability {p} vs 1/N = {uniform}");
    assert!(report.mean_entropy_bits < report.max_entropy_bits);
}

/// Two sends into one node, one emission: the posterior is the normalised Exp(μ) density.
#[test]
fn posterior_known_answer() {
    let topology = Topology { layers: vec![vec![0]] };
    let event = |t: u64, from, to| LinkEvent { time_us: t, from, to };
    let observation = Observation {
        events: vec![
            event(0, Endpoint::Client(1), Endpoint::Node(0)),
            event(10_000, Endpoint::Client(2), Endpoint::Node(0)),
            event(20_000, Endpoint::Node(0), Endpoint::Destination(9)),
        ],
    };
    let posteriors = sender_posteriors(&observation, &topology, &DelayModel::mixing(10_000.0)).unwrap();
    assert_eq!(posteriors.len(), 1);
    let expected = 1.0 / (1.0 + std::f64::consts::E); // e^{-2} / (e^{-2} + e^{-1})
    assert!((posteriors[0].probability_of(1) - expected).abs() < 1e-12);
    assert!((posteriors[0].probability_of(2) - (1.0 - expected)).abs() < 1e-12);
    // A departure faster than the processing time is (almost) impossible.
    let model = DelayModel { processing_us: 15_000.0, ..DelayModel::mixing(10_000.0) };
    let posteriors = sender_posteriors(&observation, &topology, &model).unwrap();
    assert!(posteriors[0].probability_of(1) > 1.0 - 1e-12);
}

#[test]
fn malformed_observations_are_refused() {
    let topology = Topology::uniform(1, 1);
    let event = |t: u64, from, to| LinkEvent { time_us: t, from, to };
    let unsorted = Observation {
        events: vec![
            event(5, Endpoint::Client(0), Endpoint::Node(0)),
            event(4, Endpoint::Node(0), Endpoint::Destination(0)),
        ],
    };
    let model = DelayModel::mixing(1.0);
    assert_eq!(sender_entropy(&unsorted, &topology, &model, None), Err(AnonymityError::UnsortedEvents { index: 1 }));
    let unknown = Observation { events: vec![event(1, Endpoint::Client(0), Endpoint::Node(7))] };
    assert_eq!(
        sender_entropy(&unknown, &topology, &model, None),
        Err(AnonymityError::UnknownNode { index: 0, node: 7 })
    );
    assert!(matches!(sender_entropy(&Observation::default(), &topology, &model, None), Err(AnonymityError::Empty(_))));
}

#[test]
fn observations_and_reports_round_trip_through_json() {
    let config = small(SimConfig { clients: 3, ..SimConfig::default() });
    let sim = simulate(&config, &mut ChaCha20Rng::seed_from_u64(9));
    let json = serde_json::to_string(&sim.observation).unwrap();
    let back: Observation = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sim.observation);
    let truth_json = serde_json::to_string(&sim.truth).unwrap();
    assert_eq!(serde_json::from_str::<nox_anonymity::GroundTruth>(&truth_json).unwrap(), sim.truth);
    let report = sender_entropy(&back, &sim.topology, &config.adversary_model(), Some(&sim.truth)).unwrap();
    assert!(serde_json::to_string(&report).unwrap().contains("mean_entropy_bits"));
}

#[test]
fn the_simulator_is_deterministic() {
    let config = small(SimConfig { node_cover_rate_per_s: 5.0, ..SimConfig::default() });
    let a = simulate(&config, &mut ChaCha20Rng::seed_from_u64(3));
    let b = simulate(&config, &mut ChaCha20Rng::seed_from_u64(3));
    assert_eq!(a, b);
    // Every real message is delivered once, by an exit, to its sender's partner.
    for (message, &index) in &a.truth.message_delivery {
        let sender = a.truth.message_sender[message];
        assert_eq!(a.observation.events[index].to, Endpoint::Destination(sender % 20));
        assert!(matches!(a.observation.events[index].from, Endpoint::Node(n) if n >= 6));
    }
}
