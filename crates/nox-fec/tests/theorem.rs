//! Theorem 1 (NOX paper §4.5): the closed form against exact arithmetic and the
//! published figures, the Monte Carlo simulator against the closed form, and
//! parity planning.

use nox_fec::{
    LayoutError, ParityChoice, ParityRatio, PlanningError, choose_parity, delivery_without_fec, plan_reply,
    recovery_curve, recovery_probability, simulate_recovery, surbs_for_reply,
};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;

/// Theorem 1 with loss = num / den, in exact integers (den^n fits in u128).
fn exact(d: u32, p: u32, num: u128, den: u128) -> f64 {
    let n = d + p;
    let mut choose: u128 = 1;
    let mut sum: u128 = 0;
    for k in 0..=p {
        if k > 0 {
            choose = choose * u128::from(n - k + 1) / u128::from(k);
        }
        sum += choose * num.pow(k) * (den - num).pow(n - k);
    }
    sum as f64 / den.pow(n) as f64
}

#[test]
fn closed_form_matches_exact_arithmetic() {
    for percent in [1u128, 5, 7, 10, 20, 30, 50, 90, 99] {
        for (d, p) in [(11, 4), (1, 0), (1, 3), (4, 3), (10, 5), (15, 0)] {
            let got = recovery_probability(d as usize, p as usize, percent as f64 / 100.0);
            let want = exact(d, p, percent, 100);
            assert!((got - want).abs() < 1e-12, "d={d} p={p} loss={percent}%: {got} vs {want}");
        }
    }
    for num in 1..4u128 {
        let got = recovery_probability(30, 10, num as f64 / 4.0);
        assert!((got - exact(30, 10, num, 4)).abs() < 1e-12);
    }
}

#[test]
fn closed_form_matches_published_figures() {
    // Paper Corollary 1 / benchmark report "Tier 6", in percent, d = 11, p = 4.
    // The report's 51.6 % at 30 % loss is its Monte Carlo figure; the closed
    // form is 51.55 %, hence a tolerance of 0.1 point.
    for (loss, published) in [(0.05, 99.9), (0.10, 98.7), (0.20, 83.6), (0.30, 51.6)] {
        let theory = 100.0 * recovery_probability(11, 4, loss);
        assert!((theory - published).abs() <= 0.1, "loss {loss}: {theory:.3} vs {published}");
    }
    assert!((recovery_probability(11, 4, 0.075) - 0.996).abs() < 5e-4);
    assert!((delivery_without_fec(11, 0.10) - 0.314).abs() < 5e-4);
}

#[test]
fn closed_form_edge_cases() {
    assert_eq!(recovery_probability(11, 4, 0.0), 1.0);
    assert_eq!(recovery_probability(11, 4, 1.0), 0.0);
    assert_eq!(recovery_probability(11, 4, -3.0), 1.0);
    assert!(recovery_probability(11, 4, f64::NAN).is_nan());
    // Large counts: finite, in range, increasing in p.
    let mut previous = 0.0;
    for p in 0..=55 {
        let value = recovery_probability(200, p, 0.2);
        assert!((0.0..=1.0).contains(&value) && value >= previous);
        previous = value;
    }
    assert!(recovery_probability(1, 254, 0.99) > 0.9);
}

/// Monte Carlo through the real codec and reassembler must agree with the
/// closed form within 4 binomial standard errors.
fn assert_simulation_matches(d: usize, p: usize, loss: f64, trials: u64, seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let run = simulate_recovery(d, p, loss, trials, &mut rng).unwrap();
    assert_eq!(run.corrupted, 0, "wrong bytes delivered");
    let theory = recovery_probability(d, p, loss);
    let sigma = (theory * (1.0 - theory) / trials as f64).sqrt();
    let measured = run.recovery_rate();
    assert!(
        (measured - theory).abs() <= 4.0 * sigma,
        "d={d} p={p} loss={loss}: measured {measured} theory {theory} (4σ = {})",
        4.0 * sigma
    );
}

// d = 11, p = 4 at the four published loss rates. 3 000 trials each: every
// trial that lost a data shard runs a Reed-Solomon decode, whose fixed cost
// (~0.3 ms, a 2^16-point transform) dominates the test time.
const TRIALS: u64 = 3_000;

#[test]
fn monte_carlo_matches_theorem_d11_p4_loss_5() {
    assert_simulation_matches(11, 4, 0.05, TRIALS, 11);
}

#[test]
fn monte_carlo_matches_theorem_d11_p4_loss_10() {
    assert_simulation_matches(11, 4, 0.10, TRIALS, 12);
}

#[test]
fn monte_carlo_matches_theorem_d11_p4_loss_20() {
    assert_simulation_matches(11, 4, 0.20, TRIALS, 13);
}

#[test]
fn monte_carlo_matches_theorem_d11_p4_loss_30() {
    assert_simulation_matches(11, 4, 0.30, TRIALS, 14);
}

#[test]
fn monte_carlo_without_parity_matches_all_must_arrive() {
    assert_simulation_matches(11, 0, 0.10, 10_000, 15);
    let theory = recovery_probability(11, 0, 0.10);
    assert!((theory - delivery_without_fec(11, 0.10)).abs() < 1e-12);
}

#[test]
fn curve_is_serializable_and_consistent() {
    let ratios = [ParityRatio::percent(0).unwrap(), ParityRatio::percent(30).unwrap()];
    let mut rng = ChaCha20Rng::seed_from_u64(16);
    let curve = recovery_curve(11, &[0.0, 0.1, 0.5], &ratios, 200, &mut rng).unwrap();
    assert_eq!(curve.points.len(), 6);
    let paper = curve.points.iter().find(|p| p.ratio_per_mille == 300 && p.loss == 0.1).unwrap();
    assert_eq!(paper.parity_shards, 4);
    assert!((paper.overhead - 4.0 / 15.0).abs() < 1e-12);
    assert!((paper.theory - 0.98728).abs() < 1e-5);
    assert!(paper.simulated.is_some());
    let json = serde_json::to_string(&curve).unwrap();
    let back: nox_fec::RecoveryCurve = serde_json::from_str(&json).unwrap();
    assert_eq!(back, curve);
    let theory_only = recovery_curve(11, &[0.1], &ratios, 0, &mut rng).unwrap();
    assert!(theory_only.points.iter().all(|p| p.simulated.is_none()));
}

#[test]
fn choose_parity_takes_the_smallest_sufficient_p() {
    let choice = choose_parity(11, 15, 0.10, 0.98).unwrap();
    assert_eq!((choice.parity_shards, choice.total_shards()), (4, 15));
    assert!((choice.delivery_probability - 0.98728).abs() < 1e-5);
    let choice = choose_parity(11, 100, 0.10, 0.99).unwrap();
    assert_eq!(choice.parity_shards, 5);
    assert!(recovery_probability(11, 4, 0.10) < 0.99);
    assert_eq!(choose_parity(11, 11, 0.0, 1.0).unwrap().parity_shards, 0);
}

#[test]
fn choose_parity_reports_an_insufficient_budget() {
    match choose_parity(11, 15, 0.10, 0.99) {
        Err(PlanningError::TargetUnreachable { target, best }) => {
            assert_eq!(target, 0.99);
            assert_eq!((best.data_shards, best.parity_shards), (11, 4));
            assert!((best.delivery_probability - 0.98728).abs() < 1e-5);
        }
        other => panic!("expected TargetUnreachable, got {other:?}"),
    }
    // The 255-shard limit bounds the budget too.
    match choose_parity(200, 10_000, 0.5, 0.999) {
        Err(PlanningError::TargetUnreachable { best, .. }) => assert_eq!(best.parity_shards, 55),
        other => panic!("expected TargetUnreachable, got {other:?}"),
    }
    assert_eq!(
        choose_parity(11, 10, 0.1, 0.9),
        Err(PlanningError::BudgetBelowDataShards { data_shards: 11, surb_budget: 10 })
    );
    assert_eq!(choose_parity(0, 10, 0.1, 0.9), Err(PlanningError::Layout(LayoutError::NoDataShards)));
    assert!(matches!(
        choose_parity(11, 20, f64::NAN, 0.9),
        Err(PlanningError::InvalidProbability { name: "loss", .. })
    ));
    assert!(matches!(choose_parity(11, 20, 0.1, 1.5), Err(PlanningError::InvalidProbability { name: "target", .. })));
}

#[test]
fn client_and_exit_planning() {
    // 300 KiB in 32 400-byte payloads: 10 data shards; 99 % at 10 % loss needs 4 parity.
    let surbs = surbs_for_reply(300 * 1024, 32_400, 0.10, 0.99, 255).unwrap();
    assert_eq!((surbs.data_shards, surbs.parity_shards, surbs.total_shards()), (10, 4, 14));
    let plan = plan_reply(300 * 1024, 32_400, surbs.total_shards(), 0.10, 0.99).unwrap();
    assert_eq!((plan.layout.data_shards(), plan.layout.parity_shards()), (10, 4));
    assert_eq!(plan.delivery_probability, surbs.delivery_probability);
    // An exit with fewer SURBs is told the best it can do.
    let short = plan_reply(300 * 1024, 32_400, 12, 0.10, 0.99);
    assert!(matches!(short, Err(PlanningError::TargetUnreachable { best: ParityChoice { parity_shards: 2, .. }, .. })));
}
