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

use crate::{
    bench::BenchError,
    bench_common::{CommonArgs, Net, cdf_series, chart, client, err, round3, stats, write_envelope},
};
use nox_testnet::servers::bind_loopback;
use nox_testnet::servers::{http_server_plain_on, pattern, sha256_hex};
use nox_testnet::{self as testnet, Layout};
use nox_topology::PacketLen;

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

/// How a transfer reaches the server.
#[derive(Clone, Copy)]
enum Via {
    /// Straight to the server over loopback.
    Direct,
    /// Through this SOCKS5 endpoint (a stream through the mixnet).
    Socks(SocketAddr),
}

/// Timings of one successful transfer, ms from the start of the TCP connect.
struct Transfer {
    /// SOCKS: the `CONNECT` answered; direct: the TCP connection established.
    connected_ms: f64,
    /// First response byte.
    first_byte_ms: f64,
    /// Last body byte (GET) or the whole answer (POST).
    done_ms: f64,
    /// `[ms, bytes]`: response bytes read (GET) or request bytes the local
    /// socket took (POST), every [`TRACE_STEP`] bytes.
    progress: Vec<[f64; 2]>,
}

/// Bytes between two points of a transfer's progress trace.
const TRACE_STEP: usize = 256 << 10;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Opens a connection to `server`, through the SOCKS endpoint if asked
/// (greeting, then `CONNECT` to the server's IPv4 address, as curl does it).
async fn open(via: Via, server: SocketAddr) -> Result<TcpStream, String> {
    let proxy = match via {
        Via::Direct => {
            let s = TcpStream::connect(server).await.map_err(|e| format!("connect: {e}"))?;
            let _ = s.set_nodelay(true);
            return Ok(s);
        }
        Via::Socks(proxy) => proxy,
    };
    let mut s = TcpStream::connect(proxy).await.map_err(|e| format!("connect to SOCKS: {e}"))?;
    let _ = s.set_nodelay(true);
    let io = |e: std::io::Error| format!("SOCKS exchange: {e}");
    s.write_all(&[5, 1, 0]).await.map_err(io)?;
    let mut method = [0u8; 2];
    s.read_exact(&mut method).await.map_err(io)?;
    if method != [5, 0] {
        return Err(format!("SOCKS method reply {method:?}"));
    }
    let IpAddr::V4(ip) = server.ip() else { return Err("the server is not IPv4".into()) };
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&ip.octets());
    request.extend_from_slice(&server.port().to_be_bytes());
    s.write_all(&request).await.map_err(io)?;
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.map_err(io)?;
    if reply[1] != 0 {
        return Err(format!("CONNECT refused, SOCKS5 reply code {}", reply[1]));
    }
    Ok(s)
}

/// Reads an HTTP/1.1 response to the end; returns the body and the times of
/// the first byte and of the last body byte (ms since `started`). Refuses a
/// status other than 200 and a body whose length differs from
/// `content-length`.
async fn read_response(
    s: &mut TcpStream,
    started: Instant,
    size_hint: usize,
    progress: &mut Vec<[f64; 2]>,
) -> Result<(Vec<u8>, f64, f64), String> {
    let mut buf = Vec::with_capacity(size_hint + 512);
    let mut next_point = TRACE_STEP;
    let mut first_byte = None;
    let mut done = None;
    let mut expected_end = None;
    loop {
        let n = s.read_buf(&mut buf).await.map_err(|e| format!("read after {} bytes: {e}", buf.len()))?;
        if n == 0 {
            break;
        }
        if first_byte.is_none() {
            first_byte = Some(ms(started));
        }
        if buf.len() >= next_point {
            progress.push([round3(ms(started)), buf.len() as f64]);
            next_point = (buf.len() / TRACE_STEP + 1) * TRACE_STEP;
        }
        if expected_end.is_none()
            && let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            if !head.starts_with("HTTP/1.1 200") {
                return Err(format!("status line {:?}", head.lines().next().unwrap_or("")));
            }
            let length = head
                .lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .ok_or("no content-length")?;
            expected_end = Some(head_end + 4 + length);
        }
        if let Some(end) = expected_end {
            if buf.len() > end {
                return Err(format!("{} bytes after the body", buf.len() - end));
            }
            if buf.len() == end && done.is_none() {
                done = Some(ms(started));
            }
        }
    }
    let (Some(end), Some(first), Some(done)) = (expected_end, first_byte, done) else {
        return Err(format!("connection closed after {} bytes, response incomplete", buf.len()));
    };
    let body_start = buf.windows(4).position(|w| w == b"\r\n\r\n").map_or(end, |p| p + 4);
    Ok((buf.split_off(body_start.min(end)), first, done))
}

/// `GET /bytes/<n>`; checks the body against the pattern.
async fn get(via: Via, server: SocketAddr, n: usize, expected: &[u8]) -> Result<Transfer, String> {
    let started = Instant::now();
    let mut s = open(via, server).await?;
    let connected_ms = ms(started);
    let request = format!("GET /bytes/{n} HTTP/1.1\r\nhost: {server}\r\nconnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.map_err(|e| format!("write request: {e}"))?;
    let mut progress = Vec::new();
    let (body, first_byte_ms, done_ms) = read_response(&mut s, started, n, &mut progress).await?;
    if body.len() != n {
        return Err(format!("body of {} bytes, not {n}", body.len()));
    }
    if let Some(at) = body.iter().zip(&expected[..n]).position(|(a, b)| a != b) {
        return Err(format!("body differs from the pattern at byte {at}"));
    }
    Ok(Transfer { connected_ms, first_byte_ms, done_ms, progress })
}

/// `POST /sha256` of `body`; checks the hash the server answers.
async fn post(via: Via, server: SocketAddr, body: &[u8], hash: &str) -> Result<Transfer, String> {
    let started = Instant::now();
    let mut s = open(via, server).await?;
    let connected_ms = ms(started);
    let head = format!(
        "POST /sha256 HTTP/1.1\r\nhost: {server}\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.map_err(|e| format!("write head: {e}"))?;
    let mut progress = Vec::new();
    for (i, chunk) in body.chunks(TRACE_STEP).enumerate() {
        s.write_all(chunk).await.map_err(|e| format!("write body: {e}"))?;
        progress.push([round3(ms(started)), (i * TRACE_STEP + chunk.len()) as f64]);
    }
    let (answer, first_byte_ms, done_ms) = read_response(&mut s, started, 128, &mut Vec::new()).await?;
    if answer.trim_ascii() != hash.as_bytes() {
        return Err(format!("server hashed {:?}, expected {hash}", String::from_utf8_lossy(&answer).trim()));
    }
    Ok(Transfer { connected_ms, first_byte_ms, done_ms, progress })
}

/// Runs `f` with a deadline; a timeout is a failure.
async fn deadline<F: Future<Output = Result<Transfer, String>>>(limit: Duration, f: F) -> Result<Transfer, String> {
    tokio::time::timeout(limit, f).await.unwrap_or_else(|_| Err(format!("timed out after {} s", limit.as_secs())))
}

/// Counts and reports a failure.
fn failed(what: &str, errors: &mut Vec<String>, error: String) {
    if errors.len() < ERRORS_SHOWN {
        eprintln!("  {what}: FAILED: {error}");
    }
    errors.push(error);
}

/// MiB/s of `bytes` in `ms` milliseconds.
fn mib_per_s(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (1 << 20) as f64 / (ms / 1e3).max(1e-9)
}

/// Median of a few samples (`None` if empty).
fn median(samples: &mut [f64]) -> Option<f64> {
    samples.sort_by(f64::total_cmp);
    crate::bench_common::percentile(samples, 0.5)
}

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

/// The client counters that tell what a phase cost.
fn client_delta(before: &ClientStats, after: &ClientStats) -> Value {
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
const EXIT_COUNTERS: [&str; 5] = [
    "nox_packets_delivered_total",
    "nox_exit_reply_packets_total",
    "nox_exit_streams_messages_total",
    "nox_exit_streams_replies_total",
    "nox_exit_streams_dropped_total",
];

/// Counters summed over every node, one entry per label set: where a reply
/// packet the exit sent went (handed to a client by its gateway, or dropped
/// on the way, by reason).
const NODE_COUNTERS: [&str; 2] = ["nox_replies_delivered_total", "nox_packets_dropped_total"];

/// The exits' [`EXIT_COUNTERS`] and every node's [`NODE_COUNTERS`]
/// (keys `all_nodes:<name>{labels}`).
async fn network_counters(dir: &Path) -> BTreeMap<String, u64> {
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
fn network_delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Value {
    let map: serde_json::Map<String, Value> = after
        .iter()
        .map(|(k, v)| (k, v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(k, d)| *d > 0 || !k.starts_with("all_nodes:"))
        .map(|(k, d)| (k.clone(), json!(d)))
        .collect();
    Value::Object(map)
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

/// Ratio `a / b` of two JSON numbers, to 3 significant digits (the ratios
/// span 10⁻⁵ to 10⁴).
fn ratio(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 && a > 0.0 => {
            let r = a / b;
            let scale = 10f64.powi(2 - r.log10().floor() as i32);
            json!((r * scale).round() / scale)
        }
        _ => Value::Null,
    }
}

/// The headline figures of one row.
fn pick(r: &Value) -> Value {
    json!({ "connect_answered_p50_ms": r["time_to_first_byte"]["connect_answered_ms"]["p50"],
        "first_byte_p50_ms": r["time_to_first_byte"]["first_byte_ms"]["p50"],
        "first_byte_p90_ms": r["time_to_first_byte"]["first_byte_ms"]["p90"],
        "download_mib_per_s": r["download"]["mib_per_s"],
        "concurrent_aggregate_mib_per_s": r["concurrent"]["aggregate_mib_per_s"],
        "concurrent_per_stream_p50_ms": r["concurrent"]["per_stream_complete_ms"]["p50"],
        "upload_mib_per_s": r["upload"]["mib_per_s"] })
}

/// Row `r`'s headline figures over `base`'s.
fn ratios(r: &Value, base: &Value) -> Value {
    let (r, base) = (pick(r), pick(base));
    let keys = [
        "first_byte_p50_ms",
        "first_byte_p90_ms",
        "download_mib_per_s",
        "concurrent_aggregate_mib_per_s",
        "upload_mib_per_s",
    ];
    Value::Object(keys.iter().map(|k| ((*k).to_owned(), ratio(&r[*k], &base[*k]))).collect())
}

/// The figures of one testnet's rows, and their ratios to the direct row and to cover off.
fn summarize(rows: &[Value]) -> Value {
    let direct = &rows[0];
    let mut out = serde_json::Map::new();
    for (i, row) in rows.iter().enumerate() {
        let mut entry = pick(row);
        if i > 0 {
            entry["ratio_to_direct"] = ratios(row, direct);
        }
        if i > 1 {
            entry["ratio_to_cover_off"] = ratios(row, &rows[1]);
        }
        out.insert(row["configuration"].as_str().unwrap_or("?").to_owned(), entry);
    }
    Value::Object(out)
}

fn charts(rows: &[Value], mean_delay_ms: f64) -> Vec<Value> {
    let bars: Vec<Value> = rows
        .iter()
        .map(|r| {
            let concurrent = format!("{} streams, aggregate", r["concurrent"]["streams"]);
            let points = [
                ("one stream, download".to_owned(), &r["download"]["mib_per_s"]),
                (concurrent, &r["concurrent"]["aggregate_mib_per_s"]),
                ("one stream, upload".to_owned(), &r["upload"]["mib_per_s"]),
            ];
            // A failed measurement has no figure: no bar rather than a zero.
            let (x, y): (Vec<String>, Vec<Value>) =
                points.into_iter().filter(|(_, v)| v.is_number()).map(|(k, v)| (k, v.clone())).unzip();
            json!({ "label": r["configuration"], "x": x, "y": y })
        })
        .collect();
    let cdfs: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut samples: Vec<f64> = r["time_to_first_byte"]["first_byte_samples_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            samples.sort_by(f64::total_cmp);
            cdf_series(r["configuration"].as_str().unwrap_or("?"), &samples)
        })
        .collect();
    vec![
        chart(
            "streams-throughput",
            &format!("SOCKS5 streams: throughput, mixnet (μ = {mean_delay_ms} ms) vs direct loopback"),
            "bar",
            ("transfer", "MiB/s"),
            (false, true),
            bars,
        ),
        chart(
            "streams-ttfb-cdf",
            &format!("SOCKS5 streams: time to first byte of GET /bytes/1024 (μ = {mean_delay_ms} ms)"),
            "cdf",
            ("time to first byte (ms)", "fraction"),
            (true, false),
            cdfs,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(ratio(&json!(0.057), &json!(1154.239)), json!(4.94e-5));
        assert_eq!(ratio(&json!(1087.82), &json!(0.128)), json!(8500.0));
        assert_eq!(ratio(&json!(1.0), &json!(3.0)), json!(0.333));
        assert_eq!(ratio(&json!(1.0), &Value::Null), Value::Null);
    }

    /// The direct path against the real test server: bodies and hashes are
    /// checked, and a wrong expectation is a failure, not a figure.
    #[test]
    fn transfers_are_checked() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let server = http_server_plain_on(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
            let expected = pattern(100_000);
            let t = get(Via::Direct, server, 100_000, &expected).await.unwrap();
            assert!(t.connected_ms <= t.first_byte_ms && t.first_byte_ms <= t.done_ms);
            let mut wrong = expected.clone();
            wrong[500] ^= 1;
            let e = get(Via::Direct, server, 100_000, &wrong).await.err().unwrap();
            assert!(e.contains("byte 500"), "{e}");
            let hash = sha256_hex(&expected);
            post(Via::Direct, server, &expected, &hash).await.unwrap();
            let e = post(Via::Direct, server, &expected[1..], &hash).await.err().unwrap();
            assert!(e.contains("expected"), "{e}");
            let e =
                get(Via::Direct, server, (nox_testnet::servers::MAX_BODY + 1) as usize, &expected).await.err().unwrap();
            assert!(e.contains("400"), "{e}");
        });
    }
}
