//! The replay check across a restart: a packet sent to an entry before its SIGKILL is sent
//! again after its restart and must be dropped as a replay, never delivered twice.

use super::*;

/// A replay probe sent to entry `index` before its crash: the packet, its id, the entry's link
/// key, and whether its delivery was seen (so the entry certainly processed it).
pub(super) struct Probe {
    pub(super) id: u64,
    pub(super) entry: nox_link::LinkPublicKey,
    pub(super) packet: Vec<u8>,
    pub(super) delivered: bool,
}

pub(super) async fn probe_before(
    client: &mut testnet::TestnetClient,
    target: nox_link::LinkPublicKey,
    load: &Load,
) -> Probe {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut last = None;
    // Up to 5 probes: one may be lost on a lossy link after the entry.
    for _ in 0..5 {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut payload = [0u8; 64];
        payload[..8].copy_from_slice(PROBE);
        payload[8..16].copy_from_slice(&id.to_be_bytes());
        let Some((entry, packet)) = (0..64).find_map(|_| client.build(&payload).ok().filter(|(e, _)| *e == target))
        else {
            break;
        };
        if client.send(&entry, packet.clone()).await.is_err() {
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if probe_count(load, id) > 0 {
                return Probe { id, entry, packet, delivered: true };
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        last = Some(Probe { id, entry, packet, delivered: false });
    }
    last.unwrap_or(Probe { id: 0, entry: nox_link::LinkPublicKey([0; 32]), packet: Vec::new(), delivered: false })
}

/// The link key of every node, in index order (matched by the `listen` address of its
/// `node.toml` in the current topology).
pub(super) fn link_keys(dir: &Path, nodes: &[testnet::NodeEntry]) -> Result<Vec<nox_link::LinkPublicKey>, BenchError> {
    let topology = nox_testnet::directory::topology(dir).map_err(err)?;
    nodes
        .iter()
        .map(|node| {
            let config = std::fs::read_to_string(node.dir.join("node.toml")).map_err(err)?;
            let listen: Option<SocketAddr> = config
                .lines()
                .find_map(|l| l.strip_prefix("listen = "))
                .and_then(|v| v.trim().trim_matches('"').parse().ok());
            topology
                .nodes()
                .iter()
                .find(|n| Some(n.descriptor.address) == listen)
                .map(|n| nox_link::LinkPublicKey(n.descriptor.link_key.to_bytes()))
                .ok_or_else(|| err(format!("{} is not in the topology", node.dir.display())))
        })
        .collect()
}

pub(super) fn probe_count(load: &Load, id: u64) -> u32 {
    load.probes_delivered.lock().map(|m| m.get(&id).copied().unwrap_or(0)).unwrap_or(0)
}

/// Sends the probe again to the restarted entry: it must be dropped as a replay (the entry's
/// `replay` drop counter, reset by the restart, counts it) and never delivered twice.
pub(super) async fn probe_after(
    client: &testnet::TestnetClient,
    nodes: &[testnet::NodeEntry],
    index: usize,
    probe: Probe,
    load: &Load,
    log: &mut Log,
) -> Value {
    if !probe.delivered {
        return json!({ "checked": false, "reason": "no probe delivery was seen before the crash (lost on a lossy link)" });
    }
    let Some(node) = nodes.get(index) else { return json!({ "checked": false }) };
    let replays = || {
        testnet::metric(
            &testnet::scrape(node.metrics).unwrap_or_default(),
            "nox_packets_dropped_total{reason=\"replay\"}",
        )
    };
    let before = replays();
    let sent = client.send(&probe.entry, probe.packet.clone()).await.is_ok();
    let deadline = Instant::now() + Duration::from_secs(5);
    while replays() == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Leave a replay that was accepted time to reach the sink.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rejected, deliveries) = (replays() > before, probe_count(load, probe.id));
    if !sent || !rejected || deliveries > 1 {
        log.failures.push(format!(
            "node-{index}: a packet it forwarded before its SIGKILL was not refused as a replay after the restart \
             (sent again: {sent}, replay drops +{}, deliveries {deliveries})",
            replays().saturating_sub(before)
        ));
    }
    json!({ "checked": true, "probe": probe.id, "rejected_as_replay": rejected, "deliveries": deliveries })
}
