//! What a phase cost in packets: the client's counters and the testnet nodes' metrics
//! (exit and node counters), as differences around the phase.

use super::*;

/// The client counters that tell what a phase cost.
pub(crate) fn client_delta(before: &ClientStats, after: &ClientStats) -> Value {
    json!({ "real_packets": after.real_packets - before.real_packets,
        "cover_packets": after.cover_packets - before.cover_packets,
        "loops_sent": after.loops_sent - before.loops_sent,
        "loops_returned": after.loops_returned - before.loops_returned,
        "reply_fragments": after.replies - before.replies,
        "bad_replies": after.bad_replies - before.bad_replies,
        "late_replies": after.late_replies - before.late_replies,
        "reused_surb": after.reused_surb - before.reused_surb,
        "unknown_surb": after.unknown_surb - before.unknown_surb })
}

/// Exit counters (summed over the exits; absent names read 0).
pub(crate) const EXIT_COUNTERS: [&str; 5] = [
    "nox_packets_delivered_total",
    "nox_exit_reply_packets_total",
    "nox_exit_streams_messages_total",
    "nox_exit_streams_replies_total",
    "nox_exit_streams_dropped_total",
];

/// Counters summed over every node, one entry per label set: where a reply
/// packet the exit sent went (handed to a client by its gateway, or dropped
/// on the way, by reason).
pub(crate) const NODE_COUNTERS: [&str; 2] = ["nox_replies_delivered_total", "nox_packets_dropped_total"];

/// The exits' [`EXIT_COUNTERS`] and every node's [`NODE_COUNTERS`]
/// (keys `all_nodes:<name>{labels}`).
pub(crate) async fn network_counters(dir: &Path) -> BTreeMap<String, u64> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let all = testnet::nodes(&dir);
        let last = all.iter().map(|n| n.layer).max().unwrap_or(0);
        let texts: Vec<(bool, String)> =
            all.iter().map(|n| (n.layer == last, testnet::scrape(n.metrics).unwrap_or_default())).collect();
        let mut out: BTreeMap<String, u64> = EXIT_COUNTERS
            .iter()
            .map(|&name| {
                let sum = texts.iter().filter(|(exit, _)| *exit).map(|(_, t)| testnet::metric(t, name)).sum();
                (name.to_owned(), sum)
            })
            .collect();
        for (_, text) in &texts {
            for line in text.lines().filter(|l| NODE_COUNTERS.iter().any(|n| l.starts_with(n))) {
                if let Some((key, value)) = line.rsplit_once(' ')
                    && let Ok(value) = value.parse::<f64>()
                {
                    *out.entry(format!("all_nodes:{key}")).or_default() += value as u64;
                }
            }
        }
        out
    })
    .await
    .unwrap_or_default()
}

/// Counter increases; node counters only where they moved.
pub(crate) fn network_delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Value {
    let map: serde_json::Map<String, Value> = after
        .iter()
        .map(|(k, v)| (k, v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(k, d)| *d > 0 || !k.starts_with("all_nodes:"))
        .map(|(k, d)| (k.clone(), json!(d)))
        .collect();
    Value::Object(map)
}
