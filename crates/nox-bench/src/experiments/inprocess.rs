//! `nox bench in-process`: throughput and one-way latency of real
//! [`nox_node::Pipeline`]s in one process (the paper's Table 8 "in-process"
//! rows). Layers of nodes are chained by their channels — the egress of one
//! node feeds the inbound queue of the next, no sockets and no link crypto —
//! so the figure is the pipelines' own ceiling (ingest, Sphinx workers, replay
//! record, mixer) on this machine, without the kernel and the link layer that
//! `nox bench testnet` includes.
//!
//! Packets are real 3-hop Sphinx packets (32 KiB, 256-byte payload carrying a
//! sequence number) built before each rate point (client cost is not network
//! throughput), paced onto the entry nodes with `try_send` (a full inbound
//! queue is a refusal, counted as loss), and timed at the exits' egress.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock, mpsc as std_mpsc},
    time::{Duration, Instant},
};

use nox_mixing::MixingConfig;
use nox_node::{Egress, Inbound, IngestAdmission, NodeMetrics, Origin, Pipeline, PipelineConfig};
use nox_relay::{DropReason, Relay};
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::{BenchError, CommonArgs, cdf_series, chart, err, round3, stats, write_envelope};

/// Options of `nox bench in-process`.
#[derive(clap::Args)]
pub struct InProcessArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Offered rates, packets per second (`--quick`: 2000,8000).
    #[arg(long, value_delimiter = ',', default_value = "2000,3000,4000,5000,6000,7000,8000,10000,12000,16000,20000")]
    rates: Vec<f64>,
    /// Seconds of traffic per rate (`--quick`: 0.5).
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// At most this many packets per rate (pre-built 32 KiB packets live in
    /// memory); a high rate is offered for a shorter time.
    #[arg(long, default_value_t = 10_000)]
    max_packets: usize,
    /// Mean mixing delay per hop μ, milliseconds.
    #[arg(long, default_value_t = 1.0)]
    mean_delay_ms: f64,
    /// Nodes per layer (3 layers).
    #[arg(long, default_value_t = 1)]
    per_layer: usize,
    /// Sphinx worker threads per node (the testnet runs 1).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Queue sizes of every stage (the node's default `[pipeline] queue`).
    #[arg(long, default_value_t = 4096)]
    queue: usize,
    /// Seed of keys, paths and packets.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const LAYERS: usize = 3;
const PACKET_LEN: usize = 32_768;
const PAYLOAD_LEN: usize = 256;
const MAGIC: &[u8; 8] = b"NOXINPRO";
const EPOCH: u32 = 1;

struct Node {
    id: NodeId,
    key: SecretKey,
    metrics: Arc<NodeMetrics>,
}

/// The chained pipelines: entry inbound queues and every node's metrics.
struct Mixnet {
    nodes: Vec<Vec<Node>>,
    entries: Vec<mpsc::Sender<Inbound>>,
    delivered: std_mpsc::Receiver<(u64, Instant)>,
    forwarded_refused: Arc<std::sync::atomic::AtomicU64>,
}

/// Runs `nox bench in-process`.
pub fn run(args: &InProcessArgs) -> Result<(), BenchError> {
    let (rates, seconds) =
        if args.common.quick { (vec![2000.0, 8000.0], 0.5) } else { (args.rates.clone(), args.seconds) };
    if args.per_layer == 0 || rates.iter().any(|r| !r.is_finite() || *r <= 0.0) || seconds <= 0.0 {
        return Err(err("--per-layer, --rates and --seconds must be positive"));
    }
    let counts: Vec<usize> =
        rates.iter().map(|r| ((r * seconds).ceil() as usize).clamp(1, args.max_packets.max(1))).collect();
    let total: usize = counts.iter().sum();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let geometry = Geometry::new(PACKET_LEN, LAYERS).map_err(err)?;
    let net = runtime.block_on(async { start(args, geometry, total as u64, &mut rng) })?;
    println!(
        "{:>8} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>8}",
        "offered", "sent/s", "deliv/s", "refused", "lost", "p50 ms", "p90 ms", "p99 ms"
    );
    let mut rows = Vec::new();
    let mut next_seq = 0u64;
    for (&rate, &count) in rates.iter().zip(&counts) {
        let packets = build_packets(&net.nodes, geometry, count, &mut next_seq, &mut rng)?;
        let row = measure(&net, rate, packets);
        let ms = |q: &str| row["latency_ms"][q].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:>8.0} {:>9.0} {:>9.0} {:>9} {:>7} {:>8.2} {:>8.2} {:>8.2}",
            rate,
            row["achieved_send_rate"].as_f64().unwrap_or(0.0),
            row["delivered_rate"].as_f64().unwrap_or(0.0),
            row["refused_at_entry"],
            row["lost"],
            ms("p50"),
            ms("p90"),
            ms("p99")
        );
        rows.push(row);
        std::thread::sleep(Duration::from_millis(300));
    }
    let drops = drop_totals(&net);
    drop(net);
    runtime.shutdown_timeout(Duration::from_secs(2));
    report(args, &rates, seconds, rows, drops)
}

/// Spawns `LAYERS × per_layer` pipelines and the forwarders between them.
fn start(args: &InProcessArgs, geometry: Geometry, tags: u64, rng: &mut ChaCha20Rng) -> Result<Mixnet, BenchError> {
    let mut mixing = MixingConfig::new(Duration::from_secs_f64(args.mean_delay_ms.max(0.0) / 1e3), 100_000);
    mixing.max_given_delay = Duration::from_secs(60);
    let config = PipelineConfig {
        workers: args.workers.max(1),
        inbound_queue: args.queue,
        worker_queue: args.queue,
        mixer_queue: args.queue,
        egress_queue: args.queue,
        mixing,
    };
    let bloom = BloomParameters::for_capacity(tags.max(1) * 2, 0.001).map_err(err)?;
    let mut nodes: Vec<Vec<Node>> = Vec::new();
    let mut inbound: HashMap<NodeId, mpsc::Sender<Inbound>> = HashMap::new();
    let mut egress = Vec::new();
    for layer in 0..LAYERS {
        let previous: Vec<NodeId> =
            if layer == 0 { Vec::new() } else { nodes[layer - 1].iter().map(|n| n.id).collect() };
        let mut row = Vec::new();
        for index in 0..args.per_layer {
            let mut id = [0u8; 32];
            id[0] = layer as u8 + 1;
            id[1..9].copy_from_slice(&(index as u64).to_be_bytes());
            let key = SecretKey::generate(rng);
            let mut relay = Relay::new(geometry);
            relay.open_epoch(EPOCH, key.clone(), bloom);
            let allowed = previous.clone();
            let check: Arc<dyn Fn(&Origin) -> bool + Send + Sync> = Arc::new(move |origin| match origin {
                Origin::Client => allowed.is_empty(),
                Origin::Node(id) => allowed.contains(id),
            });
            let metrics = Arc::new(NodeMetrics::default());
            let handles = Pipeline::spawn(
                Arc::new(RwLock::new(relay)),
                None,
                check,
                Arc::new(IngestAdmission::fixed(0)),
                config.clone(),
                metrics.clone(),
            )
            .map_err(err)?;
            inbound.insert(NodeId(id), handles.inbound);
            egress.push((NodeId(id), handles.egress));
            row.push(Node { id: NodeId(id), key, metrics });
        }
        nodes.push(row);
    }
    let entries = nodes[0].iter().filter_map(|n| inbound.get(&n.id).cloned()).collect();
    let (delivered_tx, delivered) = std_mpsc::channel();
    let forwarded_refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let inbound = Arc::new(inbound);
    for (me, mut rx) in egress {
        let (inbound, delivered_tx, refused) = (inbound.clone(), delivered_tx.clone(), forwarded_refused.clone());
        tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                match out {
                    Egress::Forward { to, packet, .. } => {
                        let frame =
                            Inbound { origin: Origin::Node(me), received_at: Instant::now(), packet, client_ip: None };
                        if inbound.get(&to).is_none_or(|next| next.try_send(frame).is_err()) {
                            refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    Egress::Deliver { packet, payload, .. } => {
                        let at = Instant::now();
                        if let Some(seq) = packet.get(payload).and_then(sequence) {
                            let _ = delivered_tx.send((seq, at));
                        }
                    }
                    Egress::Reply { .. } => {}
                }
            }
        });
    }
    Ok(Mixnet { nodes, entries, delivered, forwarded_refused })
}

fn sequence(payload: &[u8]) -> Option<u64> {
    if payload.len() < 16 || &payload[..8] != MAGIC {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&payload[8..16]);
    Some(u64::from_be_bytes(seq))
}

/// Builds `count` packets on random paths (one node per layer), two threads.
fn build_packets(
    nodes: &[Vec<Node>],
    geometry: Geometry,
    count: usize,
    next_seq: &mut u64,
    rng: &mut ChaCha20Rng,
) -> Result<Vec<(usize, u64, Vec<u8>)>, BenchError> {
    let first = *next_seq;
    *next_seq += count as u64;
    let seeds = [rng.next_u64(), rng.next_u64()];
    let half = count / 2;
    let build = |seed: u64, range: std::ops::Range<usize>| -> Result<Vec<(usize, u64, Vec<u8>)>, BenchError> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let options = BuildOptions::new(EPOCH);
        range
            .map(|i| {
                let picks: Vec<usize> = (0..LAYERS).map(|_| rng.next_u32() as usize % nodes[0].len()).collect();
                let path: Vec<PathHop> = picks
                    .iter()
                    .enumerate()
                    .map(|(layer, &pick)| {
                        let node = &nodes[layer][pick];
                        PathHop { node: node.id, public_key: node.key.public_key(), delay: Delay(0), pow_difficulty: 0 }
                    })
                    .collect();
                let seq = first + i as u64;
                let mut payload = [0u8; PAYLOAD_LEN];
                payload[..8].copy_from_slice(MAGIC);
                payload[8..16].copy_from_slice(&seq.to_be_bytes());
                let packet = build_forward(&geometry, &options, &path, &payload, &mut rng).map_err(err)?;
                Ok((picks[0], seq, packet))
            })
            .collect()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| build(seeds[0], 0..half));
        let b = build(seeds[1], half..count);
        (a.join(), b)
    });
    let mut packets = a.map_err(|_| err("a packet builder panicked"))??;
    packets.extend(b?);
    Ok(packets)
}

/// Offers `packets` at `rate` onto the entries; one row of the sweep.
fn measure(net: &Mixnet, rate: f64, packets: Vec<(usize, u64, Vec<u8>)>) -> Value {
    while net.delivered.try_recv().is_ok() {}
    let refused_before = net.forwarded_refused.load(std::sync::atomic::Ordering::Relaxed);
    let mut sent_at: HashMap<u64, Instant> = HashMap::with_capacity(packets.len());
    let mut delivered: HashMap<u64, Instant> = HashMap::with_capacity(packets.len());
    let mut refused_at_entry = 0u64;
    let started = Instant::now();
    for (index, (entry, seq, packet)) in packets.into_iter().enumerate() {
        let due = started + Duration::from_secs_f64(index as f64 / rate);
        let now = Instant::now();
        if due > now + Duration::from_micros(200) {
            std::thread::sleep(due - now);
        }
        let frame = Inbound { origin: Origin::Client, received_at: Instant::now(), packet, client_ip: None };
        let sent = Instant::now();
        match net.entries.get(entry).map(|tx| tx.try_send(frame)) {
            Some(Ok(())) => {
                sent_at.insert(seq, sent);
            }
            _ => refused_at_entry += 1,
        }
        while let Ok((seq, at)) = net.delivered.try_recv() {
            delivered.entry(seq).or_insert(at);
        }
    }
    let offered = sent_at.len() as u64 + refused_at_entry;
    let send_elapsed = started.elapsed().as_secs_f64();
    // Drain: until everything accepted arrived or 2 s without a delivery.
    while delivered.len() < sent_at.len() {
        match net.delivered.recv_timeout(Duration::from_secs(2)) {
            Ok((seq, at)) => {
                delivered.entry(seq).or_insert(at);
            }
            Err(_) => break,
        }
    }
    let mut latencies: Vec<f64> = delivered
        .iter()
        .filter_map(|(seq, at)| sent_at.get(seq).map(|sent| at.duration_since(*sent).as_secs_f64() * 1e3))
        .collect();
    let last = delivered.values().max().map_or(send_elapsed, |t| t.duration_since(started).as_secs_f64());
    let count = latencies.len() as u64;
    let latency = stats(&mut latencies);
    json!({
        "offered_rate": rate,
        "offered": offered,
        "achieved_send_rate": round3(offered as f64 / send_elapsed.max(1e-9)),
        "refused_at_entry": refused_at_entry,
        "refused_between_nodes": net.forwarded_refused.load(std::sync::atomic::Ordering::Relaxed) - refused_before,
        "delivered": count,
        "lost": offered - count,
        "loss": round3(1.0 - count as f64 / offered.max(1) as f64),
        "delivered_rate": round3(count as f64 / last.max(1e-9)),
        "latency_ms": latency,
        "latency_cdf": cdf_series(&format!("{rate:.0} pkt/s offered"), &downsample(&latencies, 400)),
    })
}

/// At most `m` evenly spaced order statistics of sorted samples.
fn downsample(sorted: &[f64], m: usize) -> Vec<f64> {
    if sorted.len() <= m || m < 2 {
        return sorted.to_vec();
    }
    (0..m).map(|i| sorted[i * (sorted.len() - 1) / (m - 1)]).collect()
}

fn drop_totals(net: &Mixnet) -> Value {
    let mut totals = serde_json::Map::new();
    for reason in DropReason::ALL {
        let n: u64 = net.nodes.iter().flatten().map(|node| node.metrics.drops(reason)).sum();
        if n > 0 {
            totals.insert(reason.label().to_string(), json!(n));
        }
    }
    Value::Object(totals)
}

fn report(args: &InProcessArgs, rates: &[f64], seconds: f64, rows: Vec<Value>, drops: Value) -> Result<(), BenchError> {
    // Sustained without loss: every packet delivered and the median latency
    // at most twice the lightest load's (beyond, queues grow: saturation).
    let base_p50 = rows.first().and_then(|r| r["latency_ms"]["p50"].as_f64()).unwrap_or(f64::INFINITY);
    let best = rows
        .iter()
        .filter(|r| r["lost"] == 0)
        .filter(|r| r["latency_ms"]["p50"].as_f64().is_some_and(|p| p <= 2.0 * base_p50))
        .filter_map(|r| r["delivered_rate"].as_f64())
        .fold(0.0f64, f64::max);
    let peak = rows.iter().filter_map(|r| r["delivered_rate"].as_f64()).fold(0.0f64, f64::max);
    let pick = |key: &str| rows.iter().map(|r| r[key].clone()).collect::<Vec<_>>();
    // Chart files are named after the output file (`in-process-3x3.json`
    // must not overwrite the charts of `in-process.json`).
    let stem =
        args.common.out.as_ref().and_then(|p| p.file_stem()).map_or("in-process".into(), |s| s.to_string_lossy());
    let charts = vec![
        chart(
            &format!("{stem}-throughput"),
            "In-process pipelines: delivered vs offered rate",
            "line",
            ("offered (packets/s)", "delivered (packets/s)"),
            (false, false),
            vec![
                json!({ "label": "delivered", "x": rates, "y": pick("delivered_rate") }),
                json!({ "label": "offered (ideal)", "x": rates, "y": rates }),
            ],
        ),
        chart(
            &format!("{stem}-latency-cdf"),
            "In-process pipelines: one-way latency CDF per offered rate",
            "cdf",
            ("one-way latency (ms)", "fraction of packets"),
            (true, false),
            rows.iter().map(|r| r["latency_cdf"].clone()).collect(),
        ),
    ];
    let parameters = json!({ "layers": LAYERS, "nodes_per_layer": args.per_layer, "nodes": LAYERS * args.per_layer,
        "hops": LAYERS, "packet_bytes": PACKET_LEN, "payload_bytes": PAYLOAD_LEN, "mean_delay_ms": args.mean_delay_ms,
        "workers_per_node": args.workers.max(1), "queue": args.queue, "rates": rates, "seconds_per_rate": seconds,
        "max_packets_per_rate": args.max_packets, "seed": args.seed, "link": "in-memory channels (no sockets, no link crypto)",
        "tokio_worker_threads": 2 });
    let summary = json!({ "throughput_at_zero_loss_pps": round3(best), "peak_delivered_pps": round3(peak),
        "drops_by_reason": drops });
    write_envelope(&args.common, "in-process", parameters, json!({ "rates": rows }), summary, charts)
}
