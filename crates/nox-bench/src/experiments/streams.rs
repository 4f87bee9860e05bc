//! `nox bench streams`: SOCKS5 `CONNECT` streams through the mixnet
//! (docs/spec/streams.md) against the same transfers over a direct loopback
//! connection, measured in one run on one testnet.
//!
//! For each client configuration — **cover off** (`cover_rate` 0, the
//! fastest) and **the shipped default** (the `nox client` daemon's
//! `--cover-rate`, read from its argument parser) — a SOCKS5 endpoint
//! (`nox_client::serve_socks`) is started on a fresh client, and a small
//! SOCKS5 client in this process measures, against the plain-HTTP test server
//! (`test_servers::http_server_plain_on`, allow-listed at the exit):
//!
//! - time to first byte of `GET /bytes/1024` (and, separately, the time until
//!   the `CONNECT` is answered), timed from the start of the TCP connect to the
//!   SOCKS endpoint;
//! - one stream downloading `GET /bytes/N`;
//! - `concurrent` streams at once, each downloading `GET /bytes/N/4`;
//! - one upload, `POST /sha256` of N bytes.
//!
//! The same requests go straight from this process to the server ("direct").
//! Every body is checked (status, length, content against
//! [`test_servers::pattern`], the upload's hash); a failed transfer is counted
//! and never contributes a figure.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use nox_client::{ClientConfig, ClientHandle, ClientStats, SocksConfig};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::harness::{BenchError, CommonArgs, Net, cdf_series, chart, client, err, round3, stats, write_envelope};
use nox_testnet::servers::bind_loopback;
use nox_testnet::servers::{http_server_plain_on, pattern, sha256_hex};
use nox_testnet::{self as testnet, Layout};
use nox_topology::PacketLen;

mod counters;
mod report;
mod transfer;
use counters::*;
use report::*;
use transfer::*;

/// Options of `nox bench streams`.
#[derive(clap::Args)]
pub struct StreamsArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Time-to-first-byte repetitions per configuration (quick: 5).
    #[arg(long, default_value_t = 30)]
    repetitions: usize,
    /// Bytes of the single download and of the upload; each concurrent stream
    /// downloads a quarter of it (quick: 1 MiB).
    #[arg(long, default_value_t = 8 << 20)]
    bytes: usize,
    /// Streams downloading at once.
    #[arg(long, default_value_t = 16)]
    concurrent: usize,
    /// Seconds one transfer may take before it counts as failed.
    #[arg(long, default_value_t = 300)]
    transfer_timeout_s: u64,
    /// Mean mixing delay per hop μ of the testnet, ms (default: the testnet's 1 ms; 50 is what
    /// nodes outside a testnet ship with). Use with `--out` to keep the default run's file.
    #[arg(long)]
    mean_delay_ms: Option<f64>,
    /// Packet lengths to measure, one testnet each, in one run (e.g.
    /// `--packet-len 4096 --packet-len 32768`; default: the shipped length). Every figure of a
    /// later length also gets its ratio to the first length's.
    #[arg(long, value_parser = testnet::parse_packet_len)]
    packet_len: Vec<PacketLen>,
}

/// Size of the time-to-first-byte object.
const SMALL: usize = 1024;
/// Direct transfers are cheap: each is repeated this often and the median kept.
const DIRECT_REPEATS: usize = 5;
/// Errors printed per measurement (the rest are only counted).
const ERRORS_SHOWN: usize = 3;

/// What the measurements of one configuration need.
struct Ctx<'a> {
    via: Via,
    server: SocketAddr,
    expected: &'a [u8],
    upload_hash: &'a str,
    bytes: usize,
    repetitions: usize,
    concurrent: usize,
    limit: Duration,
    /// Each transfer this many times, the median kept (1 through the mixnet).
    repeats: usize,
}

/// Time to first byte of `GET /bytes/1024`, sequential; through a client,
/// each repetition starts once the previous stream's closing is sent.
async fn ttfb(ctx: &Ctx<'_>, client: Option<(&ClientHandle, bool)>) -> Value {
    let (mut connected, mut first, mut done, mut errors) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..ctx.repetitions {
        if let Some((handle, cover_on)) = client.filter(|_| i > 0) {
            settle(handle, cover_on).await;
        }
        match deadline(ctx.limit, get(ctx.via, ctx.server, SMALL, ctx.expected)).await {
            Ok(t) => {
                connected.push(t.connected_ms);
                first.push(t.first_byte_ms);
                done.push(t.done_ms);
            }
            Err(e) => failed("time to first byte", &mut errors, e),
        }
    }
    let samples: Vec<f64> = first.iter().map(|v| round3(*v)).collect();
    let row = json!({ "object_bytes": SMALL, "repetitions": ctx.repetitions, "failures": errors.len(),
        "connect_answered_ms": stats(&mut connected), "first_byte_ms": stats(&mut first),
        "complete_ms": stats(&mut done), "first_byte_samples_ms": samples, "errors": errors });
    println!(
        "  time to first byte ({SMALL} B): CONNECT answered p50 {} ms, first byte p50 {} / p90 {} ms, {} failed",
        row["connect_answered_ms"]["p50"],
        row["first_byte_ms"]["p50"],
        row["first_byte_ms"]["p90"],
        errors_len(&row)
    );
    row
}

fn errors_len(row: &Value) -> u64 {
    row["failures"].as_u64().unwrap_or(0)
}

/// One stream downloading `bytes` (median of `repeats`).
async fn download(ctx: &Ctx<'_>) -> Value {
    let (mut times, mut firsts, mut errors, mut trace) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ctx.repeats {
        match deadline(ctx.limit, get(ctx.via, ctx.server, ctx.bytes, ctx.expected)).await {
            Ok(t) => {
                times.push(t.done_ms);
                firsts.push(t.first_byte_ms);
                trace = t.progress;
            }
            Err(e) => failed("download", &mut errors, e),
        }
    }
    let ok = errors.is_empty();
    let done = median(&mut times).filter(|_| ok);
    let row = json!({ "bytes": ctx.bytes, "runs": ctx.repeats, "failures": errors.len(),
        "complete_ms": done.map(round3), "first_byte_ms": median(&mut firsts).filter(|_| ok).map(round3),
        "mib_per_s": done.map(|d| round3(mib_per_s(ctx.bytes, d))), "errors": errors,
        "progress_ms_bytes": if ok { json!(trace) } else { Value::Null } });
    println!(
        "  download of {} B: {} ms, {} MiB/s, {} failed",
        ctx.bytes,
        row["complete_ms"],
        row["mib_per_s"],
        errors_len(&row)
    );
    row
}

/// `concurrent` streams at once, each downloading `bytes / 4` (median over
/// `repeats` of the aggregate).
async fn concurrent(ctx: &Ctx<'_>) -> Value {
    let each = ctx.bytes / 4;
    let (mut walls, mut completions, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ctx.repeats {
        let started = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        let expected: Arc<Vec<u8>> = Arc::new(ctx.expected[..each].to_vec());
        for _ in 0..ctx.concurrent {
            let (via, server, limit, expected) = (ctx.via, ctx.server, ctx.limit, expected.clone());
            set.spawn(async move { deadline(limit, get(via, server, each, &expected)).await });
        }
        let mut round_failed = false;
        while let Some(joined) = set.join_next().await {
            match joined.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(t) => completions.push(t.done_ms),
                Err(e) => {
                    round_failed = true;
                    failed("concurrent download", &mut errors, e);
                }
            }
        }
        if !round_failed {
            walls.push(ms(started));
        }
    }
    let ok = errors.is_empty();
    let wall = median(&mut walls).filter(|_| ok);
    let total = each * ctx.concurrent;
    let completion = if ok { stats(&mut completions) } else { Value::Null };
    let row = json!({ "streams": ctx.concurrent, "bytes_each": each, "runs": ctx.repeats, "failures": errors.len(),
        "wall_ms": wall.map(round3), "aggregate_mib_per_s": wall.map(|w| round3(mib_per_s(total, w))),
        "per_stream_complete_ms": completion, "errors": errors });
    println!(
        "  {} streams × {each} B: {} ms, aggregate {} MiB/s, per-stream p50 {} ms, {} failed",
        ctx.concurrent,
        row["wall_ms"],
        row["aggregate_mib_per_s"],
        row["per_stream_complete_ms"]["p50"],
        errors_len(&row)
    );
    row
}

/// One upload of `bytes`, hash checked (median of `repeats`).
async fn upload(ctx: &Ctx<'_>) -> Value {
    let body = &ctx.expected[..ctx.bytes];
    let (mut times, mut errors, mut trace) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ctx.repeats {
        match deadline(ctx.limit, post(ctx.via, ctx.server, body, ctx.upload_hash)).await {
            Ok(t) => {
                times.push(t.done_ms);
                trace = t.progress;
            }
            Err(e) => failed("upload", &mut errors, e),
        }
    }
    let ok = errors.is_empty();
    let done = median(&mut times).filter(|_| ok);
    let row = json!({ "bytes": ctx.bytes, "runs": ctx.repeats, "failures": errors.len(), "sha256_checked": true,
        "complete_ms": done.map(round3), "mib_per_s": done.map(|d| round3(mib_per_s(ctx.bytes, d))), "errors": errors,
        "written_ms_bytes": if ok { json!(trace) } else { Value::Null } });
    println!(
        "  upload of {} B: {} ms, {} MiB/s, {} failed",
        ctx.bytes,
        row["complete_ms"],
        row["mib_per_s"],
        errors_len(&row)
    );
    row
}

/// Waits until the client's streams are quiet (the previous transfer's
/// closing messages sent), so that a measurement does not share cover slots
/// with the last one's tear-down. Cover on: two slots in a row carried
/// cover; cover off: no stream packet for 250 ms. Returns the wait, s
/// (`None`: still busy after 60 s).
async fn settle(handle: &ClientHandle, cover_on: bool) -> Option<f64> {
    let started = Instant::now();
    let mut last = handle.stats();
    let mut quiet_since = Instant::now();
    let mut cover_slots = 0;
    while started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = handle.stats();
        if now.real_packets != last.real_packets {
            cover_slots = 0;
            quiet_since = Instant::now();
        } else {
            cover_slots += (now.cover_packets + now.loops_sent) - (last.cover_packets + last.loops_sent);
        }
        last = now;
        let quiet = if cover_on { cover_slots >= 2 } else { quiet_since.elapsed() >= Duration::from_millis(250) };
        if quiet {
            return Some(started.elapsed().as_secs_f64());
        }
    }
    None
}

/// Samples the client's counters every [`SAMPLE_EVERY`] until `stop`:
/// `[ms, stream and request packets, cover and loop packets, reply fragments]`.
async fn sample_stats(handle: ClientHandle, stop: tokio::sync::watch::Receiver<bool>) -> Vec<[f64; 4]> {
    let started = Instant::now();
    let mut samples = Vec::new();
    while !*stop.borrow() {
        let s = handle.stats();
        samples.push([
            round3(ms(started)),
            s.real_packets as f64,
            (s.cover_packets + s.loops_sent) as f64,
            s.replies as f64,
        ]);
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    samples
}

/// Interval of [`sample_stats`].
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Runs the four measurements through one client (or directly for `None`),
/// with the counters of each phase.
async fn measure(ctx: &Ctx<'_>, handle: Option<&ClientHandle>, cover_on: bool, dir: &Path) -> Value {
    let started = Instant::now();
    let mut row = serde_json::Map::new();
    let mut counters = serde_json::Map::new();
    for phase in ["time_to_first_byte", "download", "concurrent", "upload"] {
        let settled = match handle {
            Some(h) => settle(h, cover_on).await.map(round3),
            None => Some(0.0),
        };
        let (client_before, net_before) = (handle.map(ClientHandle::stats), network_counters(dir).await);
        let phase_started = Instant::now();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let sampler =
            handle.filter(|_| phase != "time_to_first_byte").map(|h| tokio::spawn(sample_stats(h.clone(), stopped)));
        let value = match phase {
            "time_to_first_byte" => ttfb(ctx, handle.map(|h| (h, cover_on))).await,
            "download" => download(ctx).await,
            "concurrent" => concurrent(ctx).await,
            _ => upload(ctx).await,
        };
        let elapsed = phase_started.elapsed().as_secs_f64();
        let _ = stop.send(true);
        let timeline = match sampler {
            Some(task) => task.await.ok().map(|samples| json!(samples)),
            None => None,
        };
        row.insert(phase.to_owned(), value);
        if let (Some(h), Some(before)) = (handle, client_before) {
            let net_after = network_counters(dir).await;
            let after = h.stats();
            let slots = (after.real_packets + after.cover_packets + after.loops_sent)
                - (before.real_packets + before.cover_packets + before.loops_sent);
            counters.insert(
                phase.to_owned(),
                json!({ "elapsed_s": round3(elapsed), "settled_before_s": settled,
                    "forward_packets_per_s": round3(slots as f64 / elapsed.max(1e-9)),
                    "client": client_delta(&before, &after), "network": network_delta(&net_before, &net_after),
                    "timeline_ms_real_cover_replies": timeline }),
            );
        }
    }
    row.insert("counters".into(), Value::Object(counters));
    row.insert("elapsed_s".into(), json!(round3(started.elapsed().as_secs_f64())));
    Value::Object(row)
}

/// Geometry figures that bound a stream's speed (the testnet's geometry at `packet_len`).
fn bounds(cover_rate: f64, packet_len: PacketLen) -> Result<Value, BenchError> {
    let defaults = Layout::default();
    let geometry = nox_topology::network_geometry_with_len(defaults.geometry, usize::from(defaults.layers), packet_len)
        .map_err(err)?;
    let shard = nox_fec::shard_capacity(geometry.payload_capacity()).unwrap_or(1);
    let surb = nox_sphinx::Surb::encoded_len(&geometry);
    let streams = nox_client::StreamConfig::default();
    // A forward stream message: one packet, its request header (3 B) and the
    // message's own frames (~60 B) around the data and the SURBs.
    let forward_room = shard.saturating_sub(3 + 64);
    Ok(
        json!({ "packet_bytes": packet_len.bytes(), "payload_capacity": geometry.payload_capacity(), "reply_shard_bytes": shard, "surb_bytes": surb,
        "forward_data_bytes_without_surbs": forward_room,
        "surb_target": streams.surb_target, "initial_surbs": streams.initial_surbs,
        "recv_window_bytes": streams.endpoint.recv_capacity,
        "send_buffer_bytes": streams.endpoint.send_capacity,
        "initial_peer_window_bytes": streams.endpoint.initial_peer_window,
        "default_cover_rate": cover_rate,
        "upload_bound_cover_on_mib_per_s": round3(cover_rate * forward_room as f64 / (1 << 20) as f64),
        // All of a client's streams together: a cover slot tops up one stream's pool by at most
        // `surb_target` SURBs, each bringing back at most one reply shard (parity not counted).
        "download_bound_cover_on_no_parity_mib_per_s":
            round3(cover_rate * f64::from(streams.surb_target) * shard as f64 / (1 << 20) as f64) }),
    )
}

/// Runs `nox bench streams`.
pub fn run(args: &StreamsArgs) -> Result<(), BenchError> {
    let quick = args.common.quick;
    let repetitions = if quick { 5 } else { args.repetitions };
    let bytes = if quick { 1 << 20 } else { args.bytes };
    let cover_default = nox_client::DAEMON_COVER_RATE;
    if !cover_default.is_finite() {
        return Err(err("could not read the default --cover-rate of `nox client`"));
    }
    let lengths = if args.packet_len.is_empty() { vec![PacketLen::DEFAULT] } else { args.packet_len.clone() };
    let configurations =
        [("cover off".to_owned(), 0.0), (format!("default (cover on, λ = {cover_default} /s)"), cover_default)];
    let started = Instant::now();
    let defaults = Layout::default();
    let mean_delay_ms = args.mean_delay_ms.unwrap_or(defaults.mean_delay_ms);
    let node_cover = (defaults.loop_rate, defaults.drop_rate);
    let mut segments = Vec::new();
    for &len in &lengths {
        // With several lengths every configuration is named with its length.
        let label = |name: &str| {
            if lengths.len() > 1 { format!("{} B: {name}", len.bytes()) } else { name.to_owned() }
        };
        let rows = run_length(args, len, bytes, repetitions, &configurations, mean_delay_ms, &label)?;
        segments.push((len, rows));
    }
    let rows: Vec<Value> = segments.iter().flat_map(|(_, r)| r.iter().cloned()).collect();
    let mut summary = serde_json::Map::new();
    for (_, seg) in &segments {
        if let Value::Object(m) = summarize(seg) {
            summary.extend(m);
        }
    }
    // Each later length against the first, configuration by configuration.
    if let Some((first_len, first)) = segments.first() {
        for (len, seg) in segments.iter().skip(1) {
            let mut by_config = serde_json::Map::new();
            for (row, base) in seg.iter().zip(first).skip(1) {
                by_config.insert(base["configuration_base"].as_str().unwrap_or("?").to_owned(), ratios(row, base));
            }
            summary.insert(format!("ratio_{}_to_{}", len.bytes(), first_len.bytes()), Value::Object(by_config));
        }
    }
    let charts = charts(&rows, mean_delay_ms);
    let failures: u64 = rows
        .iter()
        .flat_map(|r| {
            ["time_to_first_byte", "download", "concurrent", "upload"].map(|p| r[p]["failures"].as_u64().unwrap_or(0))
        })
        .sum();
    let bounds: Vec<Value> = lengths.iter().map(|&l| bounds(cover_default, l)).collect::<Result<_, _>>()?;
    let parameters = json!({ "nodes": 3, "layers": 3, "nodes_per_layer": 1, "mean_delay_ms": mean_delay_ms,
        "packet_bytes": lengths.iter().map(|l| l.bytes()).collect::<Vec<_>>(),
        "node_cover_loop_rate": node_cover.0, "node_cover_drop_rate": node_cover.1,
        "ttfb_object_bytes": SMALL, "ttfb_repetitions": repetitions, "bytes": bytes,
        "concurrent_streams": args.concurrent, "concurrent_bytes_each": bytes / 4,
        "direct_repeats_median": DIRECT_REPEATS, "mixnet_repeats": 1,
        "transfer_timeout_s": args.transfer_timeout_s, "quick": quick,
        "configurations": configurations.iter().map(|(n, r)| json!({ "name": n, "cover_rate": r })).collect::<Vec<_>>(),
        "shipped_default": configurations[1].0,
        "client": "ClientConfig::default() with cover_rate as named (the daemon's config); SocksConfig::default()",
        "server": "test_servers::http_server_plain_on in the bench process, allow-listed at the exit",
        "bounds": if bounds.len() == 1 { bounds[0].clone() } else { json!(bounds) },
        "total_failures": failures,
        "elapsed_s": round3(started.elapsed().as_secs_f64()) });
    write_envelope(&args.common, "streams", parameters, json!(rows), summary.into(), charts)?;
    if failures > 0 {
        return Err(err(format!("{failures} transfers failed (see the errors in the JSON)")));
    }
    Ok(())
}

/// One testnet at `len`: the direct row, then one row per client configuration.
fn run_length(
    args: &StreamsArgs,
    len: PacketLen,
    bytes: usize,
    repetitions: usize,
    configurations: &[(String, f64)],
    mean_delay_ms: f64,
    label: &dyn Fn(&str) -> String,
) -> Result<Vec<Value>, BenchError> {
    let expected = pattern(bytes.max(SMALL));
    let upload_hash = sha256_hex(&expected[..bytes]);
    let limit = Duration::from_secs(args.transfer_timeout_s);
    // The server is bound before the testnet starts: the exit may reach it
    // and nothing else on loopback.
    let listener = bind_loopback().map_err(err)?;
    let server = listener.local_addr().map_err(err)?;
    let layout = Layout {
        exit_allow: vec![server],
        per_layer: 1,
        base_port: args.common.base_port,
        mean_delay_ms,
        packet_len: len,
        ..Layout::default()
    };
    let net = Net::up(&args.common.dir, &layout)?;
    println!(
        "testnet up in {:.1} s (3 layers × 1 node, μ = {mean_delay_ms} ms, {} B packets)",
        net.startup_s,
        len.bytes()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let rows = runtime.block_on(async {
        http_server_plain_on(listener).map_err(err)?;
        let ctx = |via, repeats| Ctx {
            via,
            server,
            expected: &expected,
            upload_hash: &upload_hash,
            bytes,
            repetitions,
            concurrent: args.concurrent,
            limit,
            repeats,
        };
        let mut rows = Vec::new();
        println!("direct (loopback, no mixnet):");
        let mut direct = measure(&ctx(Via::Direct, DIRECT_REPEATS), None, false, &net.dir).await;
        direct["configuration"] = json!(label("direct"));
        direct["configuration_base"] = json!("direct");
        direct["cover_rate"] = Value::Null;
        direct["packet_bytes"] = json!(len.bytes());
        rows.push(direct);
        for (name, cover_rate) in configurations {
            println!("{}:", label(name));
            let config = ClientConfig { cover_rate: *cover_rate, ..ClientConfig::default() };
            let handle = client(&net.dir, config).await?;
            let socks = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
            let socks_addr = socks.local_addr().map_err(err)?;
            let serving = tokio::spawn(nox_client::serve_socks(socks, handle.clone(), SocksConfig::default()));
            // One fetch before measuring: paths, links and the cover queue warm up.
            if let Err(e) = deadline(limit, get(Via::Socks(socks_addr), server, SMALL, &expected)).await {
                eprintln!("  warm-up fetch FAILED: {e}");
            }
            let mut row = measure(&ctx(Via::Socks(socks_addr), 1), Some(&handle), *cover_rate > 0.0, &net.dir).await;
            serving.abort();
            row["configuration"] = json!(label(name));
            row["configuration_base"] = json!(name);
            row["cover_rate"] = json!(cover_rate);
            row["packet_bytes"] = json!(len.bytes());
            row["client_stats_total"] = json!(format!("{:?}", handle.stats()));
            rows.push(row);
            drop(handle);
        }
        Ok::<_, BenchError>(rows)
    })?;
    drop(runtime);
    drop(net);
    Ok(rows)
}
