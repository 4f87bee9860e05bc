//! The link-level simulator beside the testnet (its traffic and delay model are
//! [`crate::harness::calibration`]'s): the simulated runs at a phase's settings with their tolerance against the measured row.

use super::*;

/// Calibration tolerance of the link-level simulator against the testnet (bits, top-1), as in
/// `nox bench anonymity-scale`.
pub(super) const TOLERANCE_BITS: f64 = 0.35;
pub(super) const TOLERANCE_TOP1: f64 = 0.12;

/// `args.simulate` runs of the link-level simulator at the phase's settings (clients, active,
/// request rate, λ_P, shape, μ, window, and the shipped loops, replies and node cover of
/// [`shipped_traffic`]), scored by the same tracer and delay model, against the measured row.
pub(super) fn simulated(
    args: &CoverArgs,
    phase: &Phase,
    layout: &Layout,
    seconds: f64,
    rng: &mut ChaCha20Rng,
    measured: &Value,
) -> Value {
    let bare = SubstitutionConfig {
        clients: args.clients,
        active: args.active,
        request_rate_per_s: phase.request_rate,
        cover_rate_per_s: phase.cover_rate,
        layers: usize::from(layout.layers),
        width: u16::try_from(layout.per_layer).unwrap_or(u16::MAX),
        mean_delay_us: phase.mu_ms * 1e3,
        processing_us: PROCESSING_FLOOR_US,
        duration_us: (seconds * 1e6) as u64,
        ..SubstitutionConfig::default()
    };
    let config = match shipped_traffic(bare, layout) {
        Ok(config) => config,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let model = testnet_model(phase.mu_ms);
    let (mut bits, mut top1, mut messages, mut per_run) = (0.0, 0.0, 0usize, Vec::new());
    for _ in 0..args.simulate {
        let sim = simulate_substitution(&config, rng);
        let Ok(report) = sender_entropy(&sim.observation, &sim.topology, &model, Some(&sim.truth)) else { continue };
        let t = report.top1_accuracy.unwrap_or(f64::NAN);
        bits += report.mean_entropy_bits * report.messages as f64;
        top1 += t * report.messages as f64;
        messages += report.messages;
        per_run.push(round(report.mean_entropy_bits, 3));
    }
    let (bits, top1) = (bits / messages.max(1) as f64, top1 / messages.max(1) as f64);
    let (m_bits, m_top1) = (get(measured, &["entropy", "mean_bits"]), get(measured, &["entropy", "top1_accuracy"]));
    let lo = per_run.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_run.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "runs": args.simulate, "messages": messages, "config": config, "adversary_model": model,
        "mean_bits": round(bits, 3), "top1_accuracy": round(top1, 3), "per_run_bits": [round(lo, 3), round(hi, 3)],
        "difference_bits": round(bits - m_bits, 3), "difference_top1": round(top1 - m_top1, 3),
        "tolerance_bits": TOLERANCE_BITS, "tolerance_top1": TOLERANCE_TOP1,
        "within_tolerance": (bits - m_bits).abs() <= TOLERANCE_BITS && (top1 - m_top1).abs() <= TOLERANCE_TOP1,
    })
}
