//! `nox bench latency-vs-delay`, `nox bench concurrency` and
//! `nox bench scaling`: sweeps over the mixing delay, the requests in flight
//! and the testnet size, each on real node processes. One-way latency and
//! throughput use the exits' UDP sink ([`crate::harness::measure_rate`]); round
//! trips use the real client.

use std::time::Duration;

use nox_client::ClientConfig;
use serde_json::{Value, json};

use crate::harness::{
    BenchError, CommonArgs, Net, chart, client, echo_run, err, measure_rate, quiet_layout, round3, stats,
    write_envelope,
};
use nox_testnet::{Layout, TestnetClient};

/// Options of `nox bench latency-vs-delay`.
#[derive(clap::Args)]
pub struct LatencyVsDelayArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Mean mixing delays per hop, ms (quick: 0,1,10).
    #[arg(long, value_delimiter = ',', default_value = "0,1,5,10,50,100")]
    delays_ms: Vec<f64>,
}

/// Options of `nox bench concurrency`.
#[derive(clap::Args)]
pub struct ConcurrencyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Requests in flight.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    levels: Vec<usize>,
    /// Requests per level (quick: 60).
    #[arg(long, default_value_t = 400)]
    requests: u64,
}

/// Options of `nox bench scaling`.
#[derive(clap::Args)]
pub struct ScalingArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Nodes per layer (3 layers each); quick: 1,3.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5,10")]
    per_layer: Vec<usize>,
    /// Offered rate of the throughput measurement, packets/s.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Seconds of traffic (quick: 1).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
}

fn runtime() -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)
}

/// A UDP socket for the exits' measurement sink, and a layout that uses it.
fn sink_layout(base: Layout) -> Result<(std::net::UdpSocket, Layout), BenchError> {
    let sink = std::net::UdpSocket::bind(("127.0.0.1", 0)).map_err(err)?;
    sink.set_nonblocking(true).map_err(err)?;
    let layout = Layout { exit_sink: Some(sink.local_addr().map_err(err)?), ..base };
    Ok((sink, layout))
}

/// One-way latencies and the rate row at `rate` for `seconds`, on the running testnet.
async fn one_way(net: &Net, sink: std::net::UdpSocket, rate: f64, seconds: f64) -> Result<Value, BenchError> {
    let sink = tokio::net::UdpSocket::from_std(sink).map_err(err)?;
    let mut probe = TestnetClient::connect(&net.dir).map_err(err)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut next_seq = 0;
    measure_rate(&net.dir, &mut probe, &sink, rate, seconds, &mut next_seq).await
}

fn client_config() -> ClientConfig {
    ClientConfig { timeout: Duration::from_secs(5), ..ClientConfig::default() }
}

fn line(label: &str, x: &[f64], y: Vec<Value>) -> Value {
    json!({ "label": label, "x": x, "y": y })
}

/// Runs `nox bench latency-vs-delay`.
pub fn latency_vs_delay(args: &LatencyVsDelayArgs) -> Result<(), BenchError> {
    let quick = args.common.quick;
    let delays = if quick { vec![0.0, 1.0, 10.0] } else { args.delays_ms.clone() };
    let (rate, seconds, rtt_count, rtt_concurrency) = if quick { (200.0, 1.0, 20, 4) } else { (200.0, 2.0, 100, 4) };
    let mut rows = Vec::new();
    for &mu in &delays {
        let (sink, layout) = sink_layout(Layout { mean_delay_ms: mu, ..quiet_layout(args.common.base_port) })?;
        let net = Net::up(&args.common.dir, &layout)?;
        let row = runtime()?.block_on(async {
            let forward = one_way(&net, sink, rate, seconds).await?;
            let handle = client(&net.dir, client_config()).await?;
            let mut rtt = echo_run(&handle, 64, rtt_count, rtt_concurrency).await;
            let rtt_stats = stats(&mut rtt.rtts_ms);
            Ok::<_, BenchError>(json!({ "mean_delay_ms": mu, "one_way_ms": forward["latency_ms"],
                "one_way_lost": forward["lost"], "one_way_samples_ms": forward["latency_samples_ms"],
                "rtt_ms": rtt_stats, "rtt_failures": rtt.failures,
                "rtt_samples_ms": rtt.rtts_ms.iter().map(|v| round3(*v)).collect::<Vec<_>>(),
                "gamma3_median_ms": 2.674 * mu, "gamma6_median_ms": 5.670 * mu }))
        })?;
        println!("μ = {mu} ms: one-way {} RTT {}", row["one_way_ms"], row["rtt_ms"]);
        rows.push(row);
    }
    let pick = |path: [&str; 2]| rows.iter().map(|r| r[path[0]][path[1]].clone()).collect::<Vec<_>>();
    let charts = vec![chart(
        "latency-vs-delay",
        "Latency vs mean mixing delay per hop (3 hops each way)",
        "line",
        ("μ (ms)", "latency (ms)"),
        (false, false),
        vec![
            line("one-way p50", &delays, pick(["one_way_ms", "p50"])),
            line("one-way p99", &delays, pick(["one_way_ms", "p99"])),
            line("SURB RTT p50", &delays, pick(["rtt_ms", "p50"])),
            line("SURB RTT p99", &delays, pick(["rtt_ms", "p99"])),
            line(
                "Gamma(3, μ) median (mixing only)",
                &delays,
                delays.iter().map(|m| json!(round3(2.674 * m))).collect(),
            ),
        ],
    )];
    let summary: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({ "mean_delay_ms": r["mean_delay_ms"], "one_way_p50_ms": r["one_way_ms"]["p50"],
            "rtt_p50_ms": r["rtt_ms"]["p50"], "rtt_p99_ms": r["rtt_ms"]["p99"] })
        })
        .collect();
    let parameters = json!({ "nodes": 9, "layers": 3, "delays_ms": delays, "one_way_rate_pps": rate,
        "one_way_seconds": seconds, "rtt_requests": rtt_count, "rtt_concurrency": rtt_concurrency,
        "rtt_reply_bytes": 64, "client": "ClientConfig::default (1-fragment reply: d=1, p=1)" });
    write_envelope(&args.common, "latency-vs-delay", parameters, json!(rows), json!(summary), charts)
}

/// Runs `nox bench concurrency`.
pub fn concurrency(args: &ConcurrencyArgs) -> Result<(), BenchError> {
    let requests = if args.common.quick { 60 } else { args.requests };
    let net = Net::up(&args.common.dir, &quiet_layout(args.common.base_port))?;
    let rows = runtime()?.block_on(async {
        let handle = client(&net.dir, client_config()).await?;
        let _warm = echo_run(&handle, 64, 5, 1).await;
        let mut rows = Vec::new();
        for &level in &args.levels {
            let count = requests.max(level as u64 * 2);
            let mut run = echo_run(&handle, 64, count, level).await;
            let rate = run.rate();
            let row = json!({ "in_flight": level, "requests": count, "completed_per_s": rate,
                "failures": run.failures, "rtt_ms": stats(&mut run.rtts_ms), "peak_rss_kb": net.rss_kb().iter().max(),
                "rtt_samples_ms": run.rtts_ms.iter().map(|v| round3(*v)).collect::<Vec<_>>() });
            println!("{level} in flight: {rate:.0} req/s, RTT {}", row["rtt_ms"]);
            rows.push(row);
        }
        Ok::<_, BenchError>(rows)
    })?;
    drop(net);
    let x: Vec<f64> = args.levels.iter().map(|l| *l as f64).collect();
    let pick = |path: [&str; 2]| rows.iter().map(|r| r[path[0]][path[1]].clone()).collect::<Vec<_>>();
    let charts = vec![
        chart(
            "concurrency-rtt",
            "SURB RTT vs requests in flight (μ = 1 ms)",
            "line",
            ("in flight", "RTT (ms)"),
            (true, false),
            vec![
                line("p50", &x, pick(["rtt_ms", "p50"])),
                line("p90", &x, pick(["rtt_ms", "p90"])),
                line("p99", &x, pick(["rtt_ms", "p99"])),
            ],
        ),
        chart(
            "concurrency-throughput",
            "Completed requests/s vs requests in flight",
            "line",
            ("in flight", "requests/s"),
            (true, false),
            vec![line("completed/s", &x, rows.iter().map(|r| r["completed_per_s"].clone()).collect())],
        ),
    ];
    let summary: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({ "in_flight": r["in_flight"], "completed_per_s": r["completed_per_s"],
            "rtt_p50_ms": r["rtt_ms"]["p50"], "rtt_p99_ms": r["rtt_ms"]["p99"], "failures": r["failures"] })
        })
        .collect();
    let parameters = json!({ "nodes": 9, "layers": 3, "mean_delay_ms": 1.0, "levels": args.levels,
        "requests_per_level": requests, "reply_bytes": 64, "client": "one nox-client, ClientConfig::default" });
    write_envelope(&args.common, "concurrency", parameters, json!(rows), json!(summary), charts)
}

/// Runs `nox bench scaling`.
pub fn scaling(args: &ScalingArgs) -> Result<(), BenchError> {
    let (per_layer, seconds) =
        if args.common.quick { (vec![1, 3], 1.0) } else { (args.per_layer.clone(), args.seconds) };
    let mut rows = Vec::new();
    for &n in &per_layer {
        let (sink, layout) = sink_layout(Layout { per_layer: n, ..quiet_layout(args.common.base_port) })?;
        let net = Net::up(&args.common.dir, &layout)?;
        std::thread::sleep(Duration::from_secs(1));
        let mut idle: Vec<f64> = net.rss_kb().into_iter().map(|kb| kb as f64).collect();
        let idle_stats = stats(&mut idle);
        let load = runtime()?.block_on(one_way(&net, sink, args.rate, seconds))?;
        let mut after: Vec<f64> = net.rss_kb().into_iter().map(|kb| kb as f64).collect();
        let row = json!({ "nodes": 3 * n, "layers": 3, "per_layer": n, "startup_s": net.startup_s,
            "idle_rss_kb": idle_stats, "rss_after_load_kb": stats(&mut after), "peak_rss_kb_under_load": load["peak_rss_kb"],
            "offered_rate": args.rate, "delivered_rate": load["delivered_rate"], "lost": load["lost"],
            "one_way_ms": load["latency_ms"] });
        println!(
            "{} nodes: startup {:.2} s, idle RSS p50 {} kB, delivered {} pkt/s, lost {}",
            3 * n,
            net.startup_s,
            row["idle_rss_kb"]["p50"],
            row["delivered_rate"],
            row["lost"]
        );
        rows.push(row);
    }
    let x: Vec<f64> = per_layer.iter().map(|n| (3 * n) as f64).collect();
    let col = |f: &dyn Fn(&Value) -> Value| rows.iter().map(f).collect::<Vec<_>>();
    let charts = vec![
        chart(
            "scaling-startup",
            "Startup time (testnet up → every node serving)",
            "line",
            ("nodes", "seconds"),
            (false, false),
            vec![line("startup", &x, col(&|r| r["startup_s"].clone()))],
        ),
        chart(
            "scaling-rss",
            "RSS per node",
            "line",
            ("nodes", "RSS (kB)"),
            (false, false),
            vec![
                line("idle, median node", &x, col(&|r| r["idle_rss_kb"]["p50"].clone())),
                line("after load, median node", &x, col(&|r| r["rss_after_load_kb"]["p50"].clone())),
                line("under load, max node", &x, col(&|r| r["peak_rss_kb_under_load"].clone())),
            ],
        ),
        chart(
            "scaling-throughput",
            &format!("Delivered at {} packets/s offered", args.rate),
            "line",
            ("nodes", "packets/s"),
            (false, false),
            vec![line("delivered", &x, col(&|r| r["delivered_rate"].clone()))],
        ),
    ];
    let summary = col(&|r| {
        json!({ "nodes": r["nodes"], "startup_s": r["startup_s"],
        "idle_rss_kb_median": r["idle_rss_kb"]["p50"], "delivered_rate": r["delivered_rate"],
        "one_way_p50_ms": r["one_way_ms"]["p50"] })
    });
    let parameters = json!({ "layers": 3, "per_layer": per_layer, "mean_delay_ms": 1.0, "offered_rate_pps": args.rate,
        "seconds": seconds, "packet_bytes": 32768, "topology": "3 layers × n nodes (testnet up places nodes by id)" });
    write_envelope(&args.common, "scaling", parameters, json!(rows), json!(summary), charts)
}
