//! `nox bench packet-size --testnet`: the figures timed and counted on real testnets.

use std::time::{Duration, Instant};

use nox_client::{Client, ClientConfig, ShellConfig};
use nox_link::LinkConfig;
use nox_testnet::{self as net, Layout};
use nox_topology::PacketLen;
use serde_json::{Value, json};

use super::{PacketSizeArgs, SECONDS_PER_DAY, positive};
use crate::harness::BenchError;
use crate::harness::{err, percentile, round3, write_envelope};

/// Linux's `USER_HZ`: the unit of utime and stime in `/proc/<pid>/stat`.
const CLOCK_TICKS_PER_S: f64 = 100.0;

pub(super) fn run(args: &PacketSizeArgs) -> Result<(), BenchError> {
    let quick = args.common.quick;
    let sizes = crate::harness::given_or(&args.sizes, quick, &[32_768, 4096], &[32_768, 4096, 2048]);
    let lens = sizes.iter().map(|s| PacketLen::new(*s).map_err(err)).collect::<Result<Vec<_>, _>>()?;
    let (echoes, idle) =
        if quick { (args.echoes.min(5), args.idle_secs.min(3.0)) } else { (args.echoes, args.idle_secs) };
    if echoes == 0 || args.rounds == 0 || !positive(idle) || !positive(args.cover_rate) || args.bulk_kib == 0 {
        return Err(err("--echoes, --rounds, --idle-secs, --cover-rate and --bulk-kib must be positive"));
    }
    let started = Instant::now();
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        for len in &lens {
            let run = one_testnet(args, *len, echoes, idle)?;
            eprintln!(
                "packet-size --testnet: round {round}, {len} B: rtt p50 {} ms, load {} ({:.0} s)",
                run["rtt_ms"]["p50"],
                run["load_avg_1m"],
                started.elapsed().as_secs_f64()
            );
            runs.push(json!({ "round": round, "packet_len": len.bytes(), "run": run }));
        }
    }
    let rows: Vec<Value> = lens.iter().map(|len| aggregate(&runs, len.bytes())).collect();
    let summary = json!({ "by_length": rows.iter().map(|r| json!({
        "packet_len": r["packet_len"], "rtt_p50_ms": r["rtt_ms"]["p50"], "rtt_p99_ms": r["rtt_ms"]["p99"],
        "bulk_ms_median": r["bulk_ms_median"], "cover_gb_per_day": r["cover_gb_per_day_mean"],
        "hop_cpu_us": r["hop_cpu_us_mean"] })).collect::<Vec<_>>() });
    let parameters = json!({
        "mode": "testnet", "sizes": sizes, "rounds": args.rounds, "echoes": echoes, "idle_secs": idle,
        "bulk_kib": args.bulk_kib, "mean_delay_ms": args.mean_delay_ms, "cover_rate_per_s": args.cover_rate,
        "nodes_per_layer": 1, "layers": 3, "quick": quick,
        "method": "real testnets (nox testnet up --packet-len), lengths interleaved per round, one binary; \
                   an always-on nox-client at λ_P; node cover off",
        "elapsed_s": round3(started.elapsed().as_secs_f64()) });
    let out = crate::harness::CommonArgs {
        out: Some(args.common.out.clone().unwrap_or_else(|| "bench/data/packet-size-testnet.json".into())),
        ..args.common.clone()
    };
    write_envelope(&out, "packet-size-testnet", parameters, json!({ "rows": rows, "runs": runs }), summary, Vec::new())
}

/// Pools the runs of one length: the round trips of every round, the other figures' mean.
fn aggregate(runs: &[Value], len: usize) -> Value {
    let mine: Vec<&Value> = runs.iter().filter(|r| r["packet_len"] == len).map(|r| &r["run"]).collect();
    let mut rtts: Vec<f64> = mine
        .iter()
        .flat_map(|r| r["rtt_samples_ms"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_f64())
        .collect();
    rtts.sort_by(f64::total_cmp);
    let mean = |key: &str| {
        let values: Vec<f64> = mine.iter().filter_map(|r| r[key].as_f64()).collect();
        round3(values.iter().sum::<f64>() / values.len().max(1) as f64)
    };
    let mut bulk: Vec<f64> = mine.iter().filter_map(|r| r["bulk_ms"].as_f64()).collect();
    bulk.sort_by(f64::total_cmp);
    json!({ "packet_len": len, "runs": mine.len(),
        "rtt_ms": { "n": rtts.len(), "p50": pct(&rtts, 0.5), "p90": pct(&rtts, 0.9),
            "p99": pct(&rtts, 0.99) },
        "bulk_ms_median": pct(&bulk, 0.5),
        "cover_gb_per_day_mean": mean("cover_gb_per_day"), "hop_cpu_us_mean": mean("hop_cpu_us"),
        "load_avg_1m_mean": mean("load_avg_1m") })
}

/// One testnet at `len`: up, the measurements, down.
fn one_testnet(args: &PacketSizeArgs, len: PacketLen, echoes: usize, idle: f64) -> Result<Value, BenchError> {
    let layout = Layout {
        base_port: args.common.base_port,
        per_layer: 1,
        mean_delay_ms: args.mean_delay_ms,
        loop_rate: 0.0,
        drop_rate: 0.0,
        no_chain: true,
        packet_len: len,
        ..Layout::default()
    };
    let dir = &args.common.dir;
    net::up(dir, &layout).map_err(err)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let result = runtime.block_on(measure(args, dir, echoes, idle));
    let _ = net::down(dir);
    result
}

/// Counters of every node: (packets received at the entries, processed, CPU seconds).
fn counters(dir: &std::path::Path) -> (u64, u64, f64) {
    let (mut entry_received, mut processed, mut cpu) = (0, 0, 0.0);
    for node in net::nodes(dir) {
        let text = net::scrape(node.metrics).unwrap_or_default();
        if node.layer == 0 {
            entry_received += net::metric(&text, "nox_packets_received_total");
        }
        processed += net::metric(&text, "nox_packets_processed_total");
        cpu += cpu_seconds(&node.dir).unwrap_or(0.0);
    }
    (entry_received, processed, cpu)
}

/// utime + stime of a node's process, seconds.
fn cpu_seconds(node_dir: &std::path::Path) -> Option<f64> {
    let pid = std::fs::read_to_string(node_dir.join("pid")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).ok()?;
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = rest.get(11)?.parse::<f64>().ok()? + rest.get(12)?.parse::<f64>().ok()?;
    Some(ticks / CLOCK_TICKS_PER_S)
}

/// The `q` quantile of sorted samples, rounded (NaN, written as null, for none).
fn pct(sorted: &[f64], q: f64) -> f64 {
    round3(percentile(sorted, q).unwrap_or(f64::NAN))
}

fn load_avg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

async fn measure(args: &PacketSizeArgs, dir: &std::path::Path, echoes: usize, idle: f64) -> Result<Value, BenchError> {
    let load_before = load_avg();
    let topology = net::directory::topology_async(dir).await.map_err(err)?;
    let geometry = *topology.geometry();
    let record_len = LinkConfig::new(geometry).map_err(err)?.record_len();
    let core = ClientConfig { cover_rate: args.cover_rate, ..ClientConfig::default() };
    let client = Client::start(ShellConfig { topology, core }).await.map_err(err)?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Cover only: what the entry receives from the always-on client.
    // The client's own counters of packets handed to its entry link (each one link record)
    // give its upstream; the entry's received counter also counts the loop replies that
    // pass it on their way back, so it is reported beside, not used.
    let (entry_a, processed_a, cpu_a) = counters(dir);
    let sent = |c: &nox_client::ClientHandle| {
        let stats = c.stats();
        stats.real_packets + stats.cover_packets + stats.loops_sent
    };
    let sent_a = sent(&client);
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(idle)).await;
    let (entry_b, _, _) = counters(dir);
    let elapsed = idle_started.elapsed().as_secs_f64();
    let packets_per_s = (sent(&client) - sent_a) as f64 / elapsed;
    let entry_per_s = (entry_b - entry_a) as f64 / elapsed;
    let cover_bytes_day = packets_per_s * record_len as f64 * SECONDS_PER_DAY;

    let label = format!("packet-size {} B", geometry.packet_len());
    let mut rtts = crate::harness::echo_round_trips(&client, echoes, &label).await?;
    let (bulk_ms, reply_fragments) =
        crate::harness::bulk_echo(&client, args.bulk_kib, &format!("at {} B", geometry.packet_len())).await?;
    let (_, processed_c, cpu_c) = counters(dir);
    let processed = processed_c.saturating_sub(processed_a);
    let hop_cpu_us = if processed == 0 { f64::NAN } else { (cpu_c - cpu_a) / processed as f64 * 1e6 };
    let samples = rtts.clone();
    rtts.sort_by(f64::total_cmp);
    Ok(json!({
        "packet_len": geometry.packet_len(), "header_len": geometry.header_len(), "record_len": record_len,
        "rtt_ms": { "p50": pct(&rtts, 0.5), "p99": pct(&rtts, 0.99),
            "max": rtts.last().map(|v| round3(*v)) },
        "rtt_samples_ms": samples.iter().map(|v| round3(*v)).collect::<Vec<_>>(),
        "bulk_kib": args.bulk_kib, "bulk_ms": round3(bulk_ms), "bulk_reply_fragments": reply_fragments,
        "client_packets_per_s_cover_only": round3(packets_per_s),
        "entry_received_per_s_cover_only": round3(entry_per_s),
        "cover_gb_per_day": round3(cover_bytes_day / 1e9),
        "nodes_processed": processed, "nodes_cpu_s": round3(cpu_c - cpu_a), "hop_cpu_us": round3(hop_cpu_us),
        "load_avg_1m": load_before.max(load_avg()),
    }))
}
