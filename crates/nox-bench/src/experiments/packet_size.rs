//! `nox bench packet-size`: what the Sphinx packet length costs and buys (issue 32), for
//! several lengths side by side on one machine in one run.
//!
//! A network runs at one length: `nox_topology::network_geometry` fixes every testnet and
//! topology document at one length (`nox_sphinx::DEFAULT_PACKET_LEN`, 4 KiB since issue 32, unless `--packet-len`), so a multi-process
//! testnet cannot be started at 2 KiB without changing that default. This experiment
//! therefore measures, per length, with the real code of every layer at that geometry:
//!
//! * **wire bytes**: real packets sealed by a real link (Noise handshake, AES-GCM records),
//!   bytes counted at the sealer's output and checked against `LinkConfig::record_len`;
//!   cover bytes per day per always-on client = λ_P × 86 400 × that figure;
//! * **message shapes**: real SURBs (`build_surb`) in a real encoded JSON-RPC request
//!   (`Request::encode`), cut by `request_fragments`; the SURB budget (`surbs_needed`,
//!   the client's default loss and target) and the data shards of 40 B, 6 KB and 16 KiB replies;
//! * **CPU**: per-hop `process_packet`, client `build_forward` / `build_surb`, link
//!   seal + open, timed per operation (median of many);
//! * **round trip** of a JSON-RPC request (p50/p90), by Monte Carlo from those figures:
//!   real packets wait for the client's Poisson slots (λ_P), each hop adds an exponential
//!   delay of mean μ (the shipped values), the measured CPU and the serialisation of one
//!   record on a link of `--link-mbit`; a request needs all its data fragments, a reply
//!   its first d of n reply packets. Both at the shipped λ_P and at an *equal budget*
//!   (λ_P scaled so the day's cover bytes equal 32 KiB at λ_P);
//! * **stream throughput bounds** from the client's stream rules: one forward packet per
//!   slot, carrying either data or as many SURBs as fit (each bringing back one reply shard).
//!
//! The RTT and throughput figures of that mode are derived (model + measured inputs).
//!
//! `--testnet` measures instead on real multi-process testnets, one per length
//! (`nox testnet up --packet-len`, one node per layer, no chain, the nodes' own cover off so the
//! counters are the client's), the lengths interleaved over `--rounds` rounds on one binary:
//! an always-on client (`nox-client`, λ_P = `--cover-rate`) sends `--echoes` echo requests one
//! after the other (round trip p50/p99, at μ = `--mean-delay-ms` per hop), then one
//! `--bulk-kib` echo whose reply comes back in several SURB fragments (completion time);
//! cover bytes per day per client = the client's sent-packet counters (real, drop, loop) over a
//! cover-only interval × the link record length (the entry's received counter is reported
//! beside it: it also counts loop replies passing back through the entry); per-hop CPU = the nodes' CPU time (/proc) over their
//! processed-packet counters. The load average is recorded with every run.

use std::{hint::black_box, time::Instant};

use nox_client::{ClientConfig, DAEMON_COVER_RATE, StreamConfig};
use nox_link::LinkConfig;
use nox_message::{Request, RequestBody};
use nox_sphinx::{
    BuildOptions, DEFAULT_HOPS, Delay, Geometry, NodeId, PathHop, Processed, Scheme, SecretKey, Surb, build_forward,
    build_surb, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::harness::{BenchError, CommonArgs, chart, err, round3, stats, write_envelope};

/// Options of `nox bench packet-size`.
#[derive(clap::Args)]
pub struct PacketSizeArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Packet lengths in bytes (`--quick`: 2048,4096,32768).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Timed operations per CPU figure (`--quick`: 100).
    #[arg(long, default_value_t = 1000)]
    ops: u32,
    /// Monte Carlo round trips per size and budget (`--quick`: 2000).
    #[arg(long, default_value_t = 20_000)]
    trials: usize,
    /// Mean mixing delay per hop μ, ms (the nodes' shipped default).
    #[arg(long, default_value_t = nox_node::DEFAULT_MEAN_DELAY_MS)]
    mean_delay_ms: f64,
    /// Client cover rate λ_P, packets/s (the daemon's shipped default).
    #[arg(long, default_value_t = DAEMON_COVER_RATE)]
    cover_rate: f64,
    /// Link speed for the serialisation of one record per hop, Mbit/s.
    #[arg(long, default_value_t = 100.0)]
    link_mbit: f64,
    /// Seed of keys, packets and the Monte Carlo.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measure on real testnets instead (see the module documentation); `--sizes` defaults to
    /// 32768,4096,2048 and must be supported lengths (`nox testnet up --packet-len`).
    #[arg(long)]
    testnet: bool,
    /// `--testnet`: rounds; each starts one testnet per length, in turn.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// `--testnet`: echo round trips per testnet (`--quick`: 5).
    #[arg(long, default_value_t = 30)]
    echoes: usize,
    /// `--testnet`: seconds of cover only per testnet, for the bytes per day (`--quick`: 3).
    #[arg(long, default_value_t = 10.0)]
    idle_secs: f64,
    /// `--testnet`: KiB of the echo whose reply needs several fragments.
    #[arg(long, default_value_t = 16)]
    bulk_kib: usize,
}

/// An `eth_blockNumber` request as a wallet sends it.
const ETH_BLOCK_NUMBER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
/// Reply bodies measured: `eth_blockNumber`'s (~40 B), a 6 KB reply (a receipt, a small
/// `eth_getLogs`) and 16 KiB (a block header with transactions' hashes).
const REPLY_LENS: [usize; 3] = [40, 6_000, 16_384];
const SECONDS_PER_DAY: f64 = 86_400.0;
/// The reference length of the equal-budget comparison: 32 KiB, the NOX paper's and the
/// default before issue 32 (the default is now 4 KiB).
const REFERENCE_LEN: usize = 32_768;

/// Runs `nox bench packet-size`.
pub fn run(args: &PacketSizeArgs) -> Result<(), BenchError> {
    if args.testnet {
        return testnet::run(args);
    }
    let quick = args.common.quick;
    let sizes = crate::harness::given_or(
        &args.sizes,
        quick,
        &[2048, 4096, REFERENCE_LEN],
        &[2048, 4096, 8192, 16_384, REFERENCE_LEN],
    );
    let (ops, trials) = if quick { (args.ops.min(100), args.trials.min(2000)) } else { (args.ops, args.trials) };
    if ops == 0
        || trials == 0
        || !(args.mean_delay_ms.is_finite() && args.mean_delay_ms >= 0.0)
        || !positive(args.cover_rate)
        || !positive(args.link_mbit)
    {
        return Err(err("--ops, --trials, --cover-rate and --link-mbit must be positive, --mean-delay-ms ≥ 0"));
    }
    let client = ClientConfig::default();
    let started = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut rows = Vec::new();
    for &len in &sizes {
        let geometry = Geometry::with_scheme(len, DEFAULT_HOPS, Scheme::default()).map_err(err)?;
        rows.push(measure(args, &client, geometry, ops, trials, &mut rng)?);
        eprintln!("packet-size: {len} B done ({:.1} s)", started.elapsed().as_secs_f64());
    }
    let summary = summary(&rows);
    let charts = charts(&rows);
    let parameters = json!({
        "sizes": sizes, "hops": DEFAULT_HOPS, "scheme": Scheme::default().name(), "ops": ops, "trials": trials,
        "mean_delay_ms": args.mean_delay_ms, "cover_rate_per_s": args.cover_rate, "link_mbit": args.link_mbit,
        "seed": args.seed, "client_loss": client.loss, "client_target": client.target,
        "request_parity_percent": client.parity_percent, "request": String::from_utf8_lossy(ETH_BLOCK_NUMBER),
        "reply_lens": REPLY_LENS, "quick": quick,
        "method": "real link/Sphinx/FEC/message code per geometry; RTT and stream throughput derived \
                   (Monte Carlo / slot bounds) from measured CPU and wire bytes, the shipped μ and λ_P",
        "elapsed_s": round3(started.elapsed().as_secs_f64()) });
    write_envelope(&args.common, "packet-size", parameters, Value::Array(rows), summary, charts)
}

/// Every figure of one packet length.
fn measure(
    args: &PacketSizeArgs,
    client: &ClientConfig,
    geometry: Geometry,
    ops: u32,
    trials: usize,
    rng: &mut ChaCha20Rng,
) -> Result<Value, BenchError> {
    let (keys, path) = path(rng);
    let link = LinkConfig::new(geometry).map_err(err)?;
    let (mut sealer, mut opener) = nox_gate::link(&link, 0).map_err(err)?;

    // Wire bytes: real packets through a real link, counted at the sealer's output.
    let payload = vec![7u8; 64];
    let mut wire = Vec::new();
    let mut counted = 0usize;
    let mut seal_ns = Vec::new();
    let packet = build_forward(&geometry, &BuildOptions::new(1), &path, &payload, rng).map_err(err)?;
    for _ in 0..ops {
        wire.clear();
        let t = Instant::now();
        sealer.seal_into(&packet, &mut wire).map_err(err)?;
        let (_, opened) = opener.feed(black_box(&wire)).map_err(err)?;
        seal_ns.push(t.elapsed().as_nanos() as f64);
        if opened.as_deref() != Some(&packet[..]) {
            return Err(err("the link did not return the sealed packet"));
        }
        counted += wire.len();
    }
    let wire_bytes = counted as f64 / f64::from(ops);
    let record_len = link.record_len();
    if (wire_bytes - record_len as f64).abs() > 0.5 {
        return Err(err(format!(
            "{} B packets: {wire_bytes} B counted per record, record_len says {record_len}",
            geometry.packet_len()
        )));
    }

    // CPU per hop and per client operation.
    let mut hop_ns = Vec::new();
    for _ in 0..ops {
        let mut copy = packet.clone();
        let t = Instant::now();
        let out = process_packet(&geometry, &keys[0], black_box(&mut copy)).map_err(err)?;
        hop_ns.push(t.elapsed().as_nanos() as f64);
        if !matches!(out, Processed::Forward { .. }) {
            return Err(err("the first hop did not forward"));
        }
    }
    let mut build_ns = Vec::new();
    let mut surb_ns = Vec::new();
    for _ in 0..ops {
        let t = Instant::now();
        black_box(build_forward(&geometry, &BuildOptions::new(1), &path, &payload, rng).map_err(err)?);
        build_ns.push(t.elapsed().as_nanos() as f64);
        let t = Instant::now();
        black_box(build_surb(&geometry, &BuildOptions::new(1), &path, NodeId([9; 32]), rng).map_err(err)?);
        surb_ns.push(t.elapsed().as_nanos() as f64);
    }
    let hop_us = median(&mut hop_ns) / 1000.0;
    let seal_open_us = median(&mut seal_ns) / 1000.0;
    let build_us = median(&mut build_ns) / 1000.0;
    let surb_us = median(&mut surb_ns) / 1000.0;

    // Message shapes: real SURBs in a real request, per reply size.
    let capacity = geometry.payload_capacity();
    let shard = nox_fec::shard_capacity(capacity).map_err(err)?;
    let mut shapes = Vec::new();
    for reply_len in REPLY_LENS {
        shapes.push(shape(&geometry, &path, client, reply_len, rng)?);
    }

    // Round trips, at the shipped λ_P and at the 32 KiB budget.
    let per_hop_ms = hop_us / 1000.0 + seal_open_us / 1000.0 + record_len as f64 * 8.0 / (args.link_mbit * 1e3);
    let equal_rate = args.cover_rate * link_record(REFERENCE_LEN)? as f64 / record_len as f64;
    let mut mc = ChaCha20Rng::seed_from_u64(args.seed ^ geometry.packet_len() as u64);
    let mut rtt = serde_json::Map::new();
    for shape in &shapes {
        let name = format!("reply_{}", shape["reply_len"]);
        let model = |rate: f64, mc: &mut ChaCha20Rng| {
            let mut samples = round_trips(shape, rate, args.mean_delay_ms, per_hop_ms, build_us / 1000.0, trials, mc);
            stats(&mut samples)
        };
        rtt.insert(
            name,
            json!({ "shipped_rate_ms": model(args.cover_rate, &mut mc),
            "equal_budget_rate_ms": model(equal_rate, &mut mc) }),
        );
    }

    // Stream bounds (nox-exit-streams through the client's slots): a slot carries one
    // forward packet, with data or with SURBs; each SURB brings back one reply shard.
    let streams = StreamConfig::default();
    let surb_bytes = Surb::encoded_len(&geometry);
    // Request header (3 B) and the stream message's frames (~64 B), as `nox bench streams` counts.
    let forward_room = shard.saturating_sub(3 + 64);
    let surbs_per_packet = forward_room / surb_bytes;
    let per_slot_surbs = surbs_per_packet.min(usize::from(streams.surb_target));
    let cover_bytes_day = args.cover_rate * SECONDS_PER_DAY * wire_bytes;
    Ok(json!({
        "packet_len": geometry.packet_len(), "header_len": geometry.header_len(), "payload_capacity": capacity,
        "reply_shard_bytes": shard, "surb_bytes": surb_bytes,
        "payload_efficiency": round3(shard as f64 / wire_bytes),
        "link": { "record_len": record_len, "bytes_counted_per_packet": wire_bytes, "packets_counted": ops },
        "cover": {
            "rate_per_s": args.cover_rate,
            "bytes_per_day": cover_bytes_day.round(),
            "gb_per_day": round3(cover_bytes_day / 1e9),
            "equal_budget_rate_per_s": round3(equal_rate),
            "kind": "measured bytes per record × λ_P × 86 400 (link records; TCP/IP headers not counted)" },
        "cpu_us": { "hop_process_p50": round3(hop_us), "link_seal_open_p50": round3(seal_open_us),
            "client_build_forward_p50": round3(build_us), "client_build_surb_p50": round3(surb_us),
            "hop_per_payload_kib": round3(hop_us / (shard as f64 / 1024.0)) },
        "messages": shapes,
        "rtt": Value::Object(rtt),
        "rtt_kind": "Monte Carlo: Poisson slots at λ, 3+3 hops of Exp(μ) + measured CPU + serialisation",
        "stream": {
            "forward_data_bytes_per_packet": forward_room, "surbs_per_forward_packet": surbs_per_packet,
            "upload_bound_kib_per_s": round3(args.cover_rate * forward_room as f64 / 1024.0),
            "download_bound_kib_per_s": round3(args.cover_rate * (per_slot_surbs * shard) as f64 / 1024.0),
            "download_bound_equal_budget_kib_per_s": round3(equal_rate * (per_slot_surbs * shard) as f64 / 1024.0),
            "kind": "bound: slots × bytes per slot (stream rules of nox-client), not a timed stream" },
    }))
}

/// Wire bytes of one record at `packet_len` bytes (the 32 KiB reference of the equal budget).
fn link_record(packet_len: usize) -> Result<usize, BenchError> {
    let geometry = Geometry::with_scheme(packet_len, DEFAULT_HOPS, Scheme::default()).map_err(err)?;
    Ok(LinkConfig::new(geometry).map_err(err)?.record_len())
}

/// The request and reply shape of a JSON-RPC call whose reply body is `reply_len` bytes.
fn shape(
    geometry: &Geometry,
    path: &[PathHop],
    client: &ClientConfig,
    reply_len: usize,
    rng: &mut ChaCha20Rng,
) -> Result<Value, BenchError> {
    let surbs_n = nox_message::surbs_needed(geometry, reply_len, client.loss, client.target).map_err(err)?;
    let mut surbs = Vec::with_capacity(surbs_n);
    for _ in 0..surbs_n {
        surbs.push(build_surb(geometry, &BuildOptions::new(1), path, NodeId([9; 32]), rng).map_err(err)?.0);
    }
    let request = Request { surbs, body: RequestBody::JsonRpc(ETH_BLOCK_NUMBER.to_vec()) };
    let encoded = request.encode();
    let fragments = nox_message::request_fragments(geometry, &encoded, client.parity_percent, rng).map_err(err)?;
    let request_data = nox_fec::data_shards_for(encoded.len(), geometry.payload_capacity()).map_err(err)?;
    let reply_data =
        nox_fec::data_shards_for(reply_len + nox_message::RESPONSE_HEADER_LEN, geometry.payload_capacity())
            .map_err(err)?;
    Ok(json!({ "reply_len": reply_len, "request_bytes": encoded.len(),
        "request_packets": fragments.len(), "request_data_shards": request_data,
        "surbs": surbs_n, "reply_data_shards": reply_data, "reply_parity_surbs": surbs_n.saturating_sub(reply_data) }))
}

/// `trials` round trips (ms) of a request of `shape`: its `request_packets` fragments take
/// the next Poisson slots at `rate`, the exit answers once `request_data_shards` of them are
/// in, and the reply is complete at the `reply_data_shards`-th of `surbs` reply packets
/// (sent back to back). Each of the 3 hops each way: Exp(μ) + `per_hop_ms`.
fn round_trips(
    shape: &Value,
    rate: f64,
    mean_delay_ms: f64,
    per_hop_ms: f64,
    build_ms: f64,
    trials: usize,
    rng: &mut ChaCha20Rng,
) -> Vec<f64> {
    let field = |k: &str| shape[k].as_u64().unwrap_or(1).max(1) as usize;
    let (req_n, req_d, rep_n, rep_d) =
        (field("request_packets"), field("request_data_shards"), field("surbs"), field("reply_data_shards"));
    let exp = |rng: &mut ChaCha20Rng, mean: f64| -> f64 {
        -mean * (1.0 - (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64).ln()
    };
    let through =
        |rng: &mut ChaCha20Rng| -> f64 { (0..DEFAULT_HOPS).map(|_| exp(rng, mean_delay_ms) + per_hop_ms).sum::<f64>() };
    let mut out = Vec::with_capacity(trials);
    let mut arrivals = Vec::with_capacity(req_n.max(rep_n));
    for _ in 0..trials {
        // The client builds the request's packets and SURBs, then waits for slots.
        let mut at = build_ms * (req_n + rep_n) as f64;
        arrivals.clear();
        for _ in 0..req_n {
            at += exp(rng, 1000.0 / rate);
            arrivals.push(at + through(rng));
        }
        arrivals.sort_by(f64::total_cmp);
        let answered = arrivals[req_d.min(req_n) - 1];
        arrivals.clear();
        for j in 0..rep_n {
            arrivals.push(answered + j as f64 * per_hop_ms + through(rng));
        }
        arrivals.sort_by(f64::total_cmp);
        out.push(arrivals[rep_d.min(rep_n) - 1]);
    }
    out
}

/// Three hops with fresh keys (zero delays in the header: the model adds μ).
fn path(rng: &mut ChaCha20Rng) -> (Vec<SecretKey>, Vec<PathHop>) {
    let keys: Vec<SecretKey> = (0..DEFAULT_HOPS).map(|_| SecretKey::generate(rng)).collect();
    let path = keys
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId([i as u8; 32]),
            public_key: k.public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        })
        .collect();
    (keys, path)
}

/// Finite and > 0 (false for NaN).
fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    crate::harness::percentile(samples, 0.5).unwrap_or(0.0)
}

fn rtt_p(row: &Value, reply: usize, budget: &str, q: &str) -> Value {
    row["rtt"][format!("reply_{reply}")][budget][q].clone()
}

fn summary(rows: &[Value]) -> Value {
    let per: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({ "packet_len": r["packet_len"], "cover_gb_per_day": r["cover"]["gb_per_day"],
                "rtt_eth_block_number_p50_ms": rtt_p(r, REPLY_LENS[0], "shipped_rate_ms", "p50"),
                "rtt_6kb_p50_ms": rtt_p(r, REPLY_LENS[1], "shipped_rate_ms", "p50"),
                "rtt_6kb_p90_ms": rtt_p(r, REPLY_LENS[1], "shipped_rate_ms", "p90"),
                "rtt_16kib_p50_ms": rtt_p(r, REPLY_LENS[2], "shipped_rate_ms", "p50"),
                "rtt_6kb_p50_equal_budget_ms": rtt_p(r, REPLY_LENS[1], "equal_budget_rate_ms", "p50"),
                "surbs_16kib": r["messages"][2]["surbs"], "request_packets_16kib": r["messages"][2]["request_packets"],
                "stream_download_bound_kib_s": r["stream"]["download_bound_kib_per_s"],
                "hop_cpu_us": r["cpu_us"]["hop_process_p50"] })
        })
        .collect();
    json!({ "per_size": per })
}

fn charts(rows: &[Value]) -> Vec<Value> {
    let x: Vec<String> = rows.iter().map(|r| format!("{} B", r["packet_len"])).collect();
    let series = |label: &str, f: &dyn Fn(&Value) -> Value| json!({ "label": label, "x": x, "y": rows.iter().map(f).collect::<Vec<_>>() });
    vec![
        chart(
            "packet-size-cover",
            "Cover upstream per always-on client (λ_P = 2/s)",
            "bar",
            ("packet length", "GB per day"),
            (false, false),
            vec![series("GB/day", &|r| r["cover"]["gb_per_day"].clone())],
        ),
        chart(
            "packet-size-rtt",
            "JSON-RPC round trip p50 (model from measured inputs)",
            "bar",
            ("packet length", "ms"),
            (false, false),
            REPLY_LENS
                .iter()
                .flat_map(|&n| {
                    [
                        series(&format!("{n} B reply, λ_P = 2/s"), &|r| rtt_p(r, n, "shipped_rate_ms", "p50")),
                        series(&format!("{n} B reply, equal budget"), &|r| rtt_p(r, n, "equal_budget_rate_ms", "p50")),
                    ]
                })
                .collect(),
        ),
        chart(
            "packet-size-stream",
            "Stream download bound (cover slots × SURBs per slot)",
            "bar",
            ("packet length", "KiB/s"),
            (false, false),
            vec![
                series("λ_P = 2/s", &|r| r["stream"]["download_bound_kib_per_s"].clone()),
                series("equal budget", &|r| r["stream"]["download_bound_equal_budget_kib_per_s"].clone()),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests;

mod testnet;
