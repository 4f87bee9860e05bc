//! Scoring one phase: the sender entropy of the captured traffic, the volume classifier, and
//! the statistics over repeats (mean and range, the smallest λ_P near the best).

use super::*;

/// Share of clients a volume classifier gets right when it calls the `active` busiest
/// clients active (the first `active` indices are the active ones): 1.0 when active clients
/// send more (cover off, or additive cover), around 0.5 for 5 of 10 when every client sends at
/// the same rate (substitution), as a coin would.
pub(super) fn volume_classifier_accuracy(per_client: &[u64], active: usize) -> f64 {
    let mut order: Vec<usize> = (0..per_client.len()).collect();
    order.sort_by(|a, b| per_client[*b].cmp(&per_client[*a]).then(a.cmp(b)));
    let called: Vec<bool> = {
        let mut called = vec![false; per_client.len()];
        for &i in order.iter().take(active) {
            called[i] = true;
        }
        called
    };
    let right = called.iter().enumerate().filter(|(i, c)| **c == (*i < active)).count();
    right as f64 / per_client.len().max(1) as f64
}

pub(super) fn score(args: &CoverArgs, phase: &Phase, c: &Captured, dropped: u64, packet_len: usize) -> Value {
    let model = testnet_model(phase.mu_ms);
    let max_bits = f64::from(args.clients).log2();
    let entropy = sender_entropy(&c.observation, &c.topology, &model, Some(&c.truth));
    let mut rtts = phase.rtts_ms.clone();
    rtts.sort_by(f64::total_cmp);
    let active = args.active as usize;
    let rate = |range: std::ops::Range<usize>| {
        let n = range.len().max(1) as f64;
        phase.per_client[range].iter().sum::<u64>() as f64 / n / phase.window_s.max(1e-9)
    };
    let (active_rate, idle_rate) = (rate(0..active), rate(active..phase.per_client.len()));
    let all_rate = rate(0..phase.per_client.len());
    let per_day = |packets_per_s: f64| round3(packets_per_s * packet_len as f64 * 86_400.0 / 1e9);
    json!({
        "mu_ms": phase.mu_ms, "cover_rate": phase.cover_rate, "request_rate": phase.request_rate, "repeat": phase.repeat,
        "clients": args.clients, "active_clients": args.active,
        "requests": phase.rtts_ms.len() as u64 + phase.failures, "request_failures": phase.failures,
        "messages_sent": c.sent, "messages_delivered_observed": c.delivered, "events": c.observation.events.len(),
        "unknown_node_records": c.unknown_nodes, "observation_records_dropped": dropped,
        "distinct_request_heads": phase.heads.len(),
        "adversary_model": model,
        "entropy": entropy.as_ref().map(|e| json!({
            "messages": e.messages, "untraceable": e.untraceable, "clients_seen": e.clients,
            "mean_bits": round(e.mean_entropy_bits, 3), "median_bits": round(e.median_entropy_bits, 3),
            "min_bits": round(e.min_entropy_bits, 3),
            "max_possible_bits": round(max_bits, 3),
            "share_of_log2_clients": round(e.mean_entropy_bits / max_bits, 3),
            "effective_anonymity_set": round(e.effective_anonymity_set, 2),
            "mean_p_true_sender": e.mean_true_sender_probability.map(|p| round(p, 3)),
            "top1_accuracy": e.top1_accuracy.map(|p| round(p, 3)),
        })).unwrap_or_else(|e| json!({ "error": e.to_string() })),
        "rtt_ms": json!({
            "n": rtts.len(), "p50": percentile(&rtts, 0.5).map(round3), "p90": percentile(&rtts, 0.9).map(round3),
            "p99": percentile(&rtts, 0.99).map(round3), "max": rtts.last().copied().map(round3),
        }),
        "upstream": json!({
            "packets_per_s_active": round3(active_rate), "packets_per_s_idle": round3(idle_rate),
            "measured_gb_per_day": per_day(all_rate),
            "lambda_gb_per_day": per_day(phase.cover_rate),
            "packet_bytes": packet_len,
        }),
        "volume_classifier_accuracy": round3(volume_classifier_accuracy(&phase.per_client, active)),
        "window_s": round3(phase.window_s),
    })
}

pub(super) fn get(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
}

/// Per μ: the smallest λ_P whose mean entropy is at least [`NEAR_MAX`] of the best of that μ.
pub fn smallest_near_max(points: &[(f64, f64)]) -> Option<f64> {
    let best = points.iter().map(|p| p.1).filter(|h| h.is_finite()).fold(f64::NAN, f64::max);
    if !best.is_finite() || best <= 0.0 {
        return None;
    }
    let mut near: Vec<f64> = points.iter().filter(|p| p.1.is_finite() && p.1 >= NEAR_MAX * best).map(|p| p.0).collect();
    near.sort_by(f64::total_cmp);
    near.first().copied()
}
