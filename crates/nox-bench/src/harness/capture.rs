//! Joins what the testnet recorded — every node's `[observe]` events and ground truth, plus the
//! harness's own client→entry send log — into the `nox-anonymity` model: the adversary's
//! [`Observation`], the [`GroundTruth`] kept apart to grade it, the [`Topology`], and per-node
//! hold times (ground truth, for the delay checks).
//!
//! The harness puts `NXA1 ‖ destination (u32 BE) ‖ message id (u64 BE)` in the first 16 bytes of
//! each real payload. The destination is what the exit would visibly contact (public); the
//! message id is private and used only through the ground truth.

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
};

use nox_anonymity::{Endpoint, GroundTruth, LinkEvent, MessageId, Observation, Topology};
use nox_node::observe::{EventRecord, TruthRecord, parse_event, parse_truth};

/// Marks a harness payload.
pub const MAGIC: &[u8; 4] = b"NXA1";

/// The observed network's nodes as the capture names them (`observe::short_id`).
pub struct NodeNames {
    /// `(short id, layer)` of every node, for [`join`].
    pub nodes: Vec<(String, u8)>,
    /// Short id by node id.
    pub by_id: HashMap<nox_sphinx::NodeId, String>,
    /// Short id by link key (what a raw send names its entry by).
    pub by_link: HashMap<nox_link::LinkPublicKey, String>,
}

/// Names every node of `topology` as the nodes' observation logs do.
pub fn node_names(topology: &nox_topology::VerifiedTopology) -> NodeNames {
    let mut names = NodeNames { nodes: Vec::new(), by_id: HashMap::new(), by_link: HashMap::new() };
    for node in topology.nodes() {
        let short = nox_node::observe::short_id(&node.id);
        let layer = topology.layer_of(&node.id).map_or(0, |l| l.0);
        names.by_id.insert(node.id, short.clone());
        names.by_link.insert(nox_link::LinkPublicKey(node.descriptor.link_key.to_bytes()), short.clone());
        names.nodes.push((short, layer));
    }
    names
}

/// Wall-clock microseconds since the Unix epoch, the time base of the nodes' logs.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// How long after the last send a window stays open for the packets' way out: three hops of
/// Exp(μ) are all but surely through after 1 s + 30 μ.
pub fn drain_time(mu_ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(1.0 + 0.030 * mu_ms)
}

/// The first 16 payload bytes for `message` to `destination`.
pub fn message_head(message: u64, destination: u32) -> [u8; 16] {
    let mut head = [0u8; 16];
    head[..4].copy_from_slice(MAGIC);
    head[4..8].copy_from_slice(&destination.to_be_bytes());
    head[8..].copy_from_slice(&message.to_be_bytes());
    head
}

/// `(message, destination)` from a harness payload head; `None` for any other payload.
pub fn decode_head(head: &[u8; 16]) -> Option<(u64, u32)> {
    if &head[..4] != MAGIC {
        return None;
    }
    let destination = u32::from_be_bytes(head[4..8].try_into().ok()?);
    let message = u64::from_be_bytes(head[8..].try_into().ok()?);
    Some((message, destination))
}

/// One client→entry send recorded by the harness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSend {
    /// Microseconds since the Unix epoch, when handed to the link.
    pub time_us: u64,
    /// Simulated client.
    pub client: u32,
    /// Entry node (short id).
    pub entry: String,
    /// The message id; `None` for client cover.
    pub message: Option<u64>,
}

/// One node's two files.
#[derive(Clone, Debug, Default)]
pub struct NodeLog {
    /// Adversary-visible records.
    pub events: Vec<EventRecord>,
    /// Ground truth records.
    pub truth: Vec<TruthRecord>,
    /// The `# dropped <n>` count the writer left (records lost to a full queue).
    pub dropped: u64,
}

/// Reads `<events>` and `<events>.truth`; a missing file reads as empty.
pub fn read_node_log(events: &Path) -> NodeLog {
    let text = std::fs::read_to_string(events).unwrap_or_default();
    let truth_path = events.with_extension("events.truth");
    let truth_text = std::fs::read_to_string(truth_path).unwrap_or_default();
    let dropped = truth_text
        .lines()
        .filter_map(|l| l.strip_prefix("# dropped ").and_then(|n| n.trim().parse::<u64>().ok()))
        .sum();
    NodeLog {
        events: text.lines().filter_map(parse_event).collect(),
        truth: truth_text.lines().filter_map(parse_truth).collect(),
        dropped,
    }
}

/// The joined capture of one time window.
#[derive(Clone, Debug)]
pub struct Captured {
    /// What the GPA saw.
    pub observation: Observation,
    /// Who really sent what (never given to the adversary scorer).
    pub truth: GroundTruth,
    /// Nodes by layer, indices as in the observation.
    pub topology: Topology,
    /// Per-node hold times (arrival to departure), microseconds: ground truth.
    pub holds_us: BTreeMap<u16, Vec<f64>>,
    /// Real messages sent in the window.
    pub sent: usize,
    /// Real messages whose delivery was observed.
    pub delivered: usize,
    /// Records naming a node not in the topology (skipped).
    pub unknown_nodes: usize,
}

/// Joins node logs and the harness's sends over `[start_us, end_us]`; event times in the
/// observation are relative to `start_us`. `nodes` lists every topology node as
/// `(short id, layer)`.
pub fn join(nodes: &[(String, u8)], logs: &[NodeLog], sends: &[ClientSend], start_us: u64, end_us: u64) -> Captured {
    join_with(nodes, logs, sends, start_us, end_us, decode_head)
}

/// [`join`] with another reading of the exits' delivery heads: `decode` names the message and
/// destination of a delivered payload's first 16 bytes, or `None` for a delivery that is not a
/// real message of the run (cover, loops, another harness's traffic).
pub fn join_with(
    nodes: &[(String, u8)],
    logs: &[NodeLog],
    sends: &[ClientSend],
    start_us: u64,
    end_us: u64,
    decode: impl Fn(&[u8; 16]) -> Option<(u64, u32)>,
) -> Captured {
    let mut ordered: Vec<(String, u8)> = nodes.to_vec();
    ordered.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    let index: HashMap<&str, (u16, u8)> =
        ordered.iter().enumerate().map(|(i, (id, layer))| (id.as_str(), (i as u16, *layer))).collect();
    let layer_count = ordered.iter().map(|n| usize::from(n.1) + 1).max().unwrap_or(0);
    let mut layers = vec![Vec::new(); layer_count];
    for (i, (_, layer)) in ordered.iter().enumerate() {
        layers[usize::from(*layer)].push(i as u16);
    }
    let inside = |t: u64| t >= start_us && t <= end_us;

    // (time, rank, event, delivered message): arrivals before the departures they cause.
    let mut rows: Vec<(u64, u8, LinkEvent, Option<u64>)> = Vec::new();
    let mut unknown_nodes = 0;
    let mut truth = GroundTruth::default();
    let mut sent = 0;
    for send in sends.iter().filter(|s| inside(s.time_us)) {
        let Some(&(entry, _)) = index.get(send.entry.as_str()) else {
            unknown_nodes += 1;
            continue;
        };
        if let Some(message) = send.message {
            truth.message_sender.insert(MessageId(message), send.client);
            sent += 1;
        }
        rows.push((
            send.time_us,
            0,
            LinkEvent { time_us: send.time_us, from: Endpoint::Client(send.client), to: Endpoint::Node(entry) },
            None,
        ));
    }
    let mut holds_us: BTreeMap<u16, Vec<f64>> = BTreeMap::new();
    for log in logs {
        let Some(me) = log
            .events
            .iter()
            .map(|e| match e {
                EventRecord::Forward { from, .. } | EventRecord::Deliver { from, .. } => from.as_str(),
            })
            .next()
        else {
            continue;
        };
        let Some(&(me_index, me_layer)) = index.get(me) else {
            unknown_nodes += log.events.len();
            continue;
        };
        let mut heads: HashMap<u64, [u8; 16]> = HashMap::new();
        for record in &log.truth {
            let (time_us, held_us) = match record {
                TruthRecord::Forward { time_us, held_us } => (*time_us, *held_us),
                TruthRecord::Deliver { seq, time_us, held_us, head } => {
                    heads.insert(*seq, *head);
                    (*time_us, *held_us)
                }
                TruthRecord::Cover { .. } => continue,
            };
            if inside(time_us) {
                holds_us.entry(me_index).or_default().push(held_us as f64);
            }
        }
        for record in &log.events {
            match record {
                EventRecord::Forward { time_us, to, .. } if inside(*time_us) => match index.get(to.as_str()) {
                    Some(&(to_index, _)) => rows.push((
                        *time_us,
                        me_layer + 1,
                        LinkEvent { time_us: *time_us, from: Endpoint::Node(me_index), to: Endpoint::Node(to_index) },
                        None,
                    )),
                    None => unknown_nodes += 1,
                },
                EventRecord::Deliver { time_us, seq, .. } if inside(*time_us) => {
                    let Some((message, destination)) = heads.get(seq).and_then(&decode) else { continue };
                    rows.push((
                        *time_us,
                        me_layer + 1,
                        LinkEvent {
                            time_us: *time_us,
                            from: Endpoint::Node(me_index),
                            to: Endpoint::Destination(destination),
                        },
                        Some(message),
                    ));
                }
                _ => {}
            }
        }
    }
    rows.sort_by_key(|r| (r.0, r.1));
    let mut events = Vec::with_capacity(rows.len());
    for (position, (_, _, mut event, message)) in rows.into_iter().enumerate() {
        // Relative to the window start: the adversary's clock origin is arbitrary, and the
        // scorers bin time from zero.
        event.time_us -= start_us;
        if let Some(message) = message
            && truth.message_sender.contains_key(&MessageId(message))
        {
            truth.message_delivery.insert(MessageId(message), position);
        }
        events.push(event);
    }
    let delivered = truth.message_delivery.len();
    Captured {
        observation: Observation { events },
        truth,
        topology: Topology { layers },
        holds_us,
        sent,
        delivered,
        unknown_nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fwd(time_us: u64, from: &str, to: &str) -> EventRecord {
        EventRecord::Forward { time_us, from: from.into(), to: to.into() }
    }

    #[test]
    fn head_round_trips_and_rejects_foreign_payloads() {
        assert_eq!(decode_head(&message_head(42, 7)), Some((42, 7)));
        assert_eq!(decode_head(&[0; 16]), None);
    }

    #[test]
    fn joins_a_path_in_order_with_truth_and_window() {
        let nodes = vec![("cc".to_string(), 2), ("aa".to_string(), 0), ("bb".to_string(), 1)];
        let entry = NodeLog {
            events: vec![fwd(110, "aa", "bb"), fwd(900, "aa", "bb")],
            truth: vec![TruthRecord::Forward { time_us: 110, held_us: 10 }],
            dropped: 0,
        };
        let mix = NodeLog { events: vec![fwd(120, "bb", "cc")], truth: vec![], dropped: 0 };
        let exit = NodeLog {
            events: vec![
                EventRecord::Deliver { time_us: 120, from: "cc".into(), seq: 0 },
                EventRecord::Deliver { time_us: 130, from: "cc".into(), seq: 1 },
            ],
            truth: vec![
                TruthRecord::Deliver { seq: 0, time_us: 120, held_us: 0, head: message_head(5, 3) },
                TruthRecord::Deliver { seq: 1, time_us: 130, held_us: 1, head: [0; 16] },
            ],
            dropped: 0,
        };
        let sends = vec![
            ClientSend { time_us: 100, client: 9, entry: "aa".into(), message: Some(5) },
            ClientSend { time_us: 101, client: 8, entry: "aa".into(), message: None },
            ClientSend { time_us: 101, client: 8, entry: "zz".into(), message: None },
        ];
        let c = join(&nodes, &[entry, mix, exit], &sends, 0, 500);
        assert_eq!(c.topology.layers, vec![vec![0], vec![1], vec![2]]);
        assert_eq!(c.unknown_nodes, 1);
        // 2 client sends, entry→mix, mix→exit, exit→destination (same µs: forward first); the
        // foreign delivery and the forward outside the window are left out.
        assert_eq!(c.observation.events.len(), 5);
        assert_eq!(c.observation.events[3].to, Endpoint::Node(2));
        assert_eq!(c.observation.events[4].to, Endpoint::Destination(3));
        assert_eq!(c.truth.message_delivery.get(&MessageId(5)), Some(&4));
        assert_eq!(c.truth.message_sender.get(&MessageId(5)), Some(&9));
        assert_eq!((c.sent, c.delivered), (1, 1));
        assert_eq!(c.holds_us.get(&0), Some(&vec![10.0]));
        assert!(c.observation.validate(&c.topology).is_ok());
    }
}
