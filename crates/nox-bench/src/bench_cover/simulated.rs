//! The link-level simulator beside the testnet: the traffic the shipped crates add (loops,
//! SURB replies, node cover), the adversary's delay model shared with the testnet's scoring,
//! and the simulated runs at a phase's settings with their tolerance against the measured row.

use super::*;

/// Calibration tolerance of the link-level simulator against the testnet (bits, top-1), as in
/// `nox bench anonymity-scale`.
pub(super) const TOLERANCE_BITS: f64 = 0.35;
pub(super) const TOLERANCE_TOP1: f64 = 0.12;

/// The traffic the testnet carries besides the clients' requests and drop cover, as the shipped
/// crates set it, for the link-level simulator (issue 32's calibration): the client's share of
/// loop cover (`ClientConfig::default().loop_fraction`), the SURB reply packets per request and
/// per loop (`nox_message::surbs_needed` for an echo reply of `2 × ECHO_BYTES` at the client's
/// loss and target, on `layout`'s geometry; the exit sends one fragment per SURB up to its own
/// target, 0.999 ≥ the client's 0.99), and the nodes' loop and drop cover (`layout`'s
/// λ_L, λ_D, the node's `[cover]` defaults unless set). The testnet capture does not log the
/// exit's emission of a reply (it bypasses the logged egress), so neither does the simulation.
pub(crate) fn shipped_traffic(config: SubstitutionConfig, layout: &Layout) -> Result<SubstitutionConfig, BenchError> {
    let client = ClientConfig::default();
    let geometry =
        nox_sphinx::Geometry::with_scheme(layout.packet_len.bytes(), usize::from(layout.layers), layout.geometry)
            .map_err(err)?;
    let replies = nox_message::surbs_needed(&geometry, 2 * ECHO_BYTES, client.loss, client.target).map_err(err)?;
    Ok(SubstitutionConfig {
        loop_fraction: client.loop_fraction,
        reply_packets: u32::try_from(replies).map_err(err)?,
        reply_first_hop_observed: false,
        node_loop_rate_per_s: layout.loop_rate,
        node_drop_rate_per_s: layout.drop_rate,
        ..config
    })
}

/// The adversary's delay model of the testnet scoring ([`score`]): Exp(μ) with the processing
/// floor as its scale floor. The simulated runs are scored with the same model, so simulated and
/// measured differ only in the traffic, not in the observer.
pub(crate) fn testnet_model(mu_ms: f64) -> DelayModel {
    DelayModel { mean_delay_us: mu_ms * 1e3, processing_us: 0.0, jitter_floor_us: PROCESSING_FLOOR_US }
}

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
