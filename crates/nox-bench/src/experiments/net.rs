//! `nox bench testnet`: throughput and one-way latency of the multi-process
//! testnet. The bench is the client and, through the exits' UDP sink, the
//! observer of deliveries: send and receive instants come from one clock.
//!
//! For each offered rate it pre-builds the packets (client-side Sphinx cost
//! is not network throughput), paces them onto the entry links, and records
//! which sequence numbers the exits delivered and when. Throughput at 0 %
//! loss is the highest offered rate whose packets were all delivered with a
//! median latency at most twice the lightest load's (past that point the
//! queues grow and the rate is not sustainable).

use std::{path::PathBuf, time::Duration};

use serde_json::{Value, json};

use crate::harness::{BenchError, err, machine, measure_rate, write_json};
use nox_testnet::{self as testnet, Layout, TestnetClient};

/// Options of `nox bench testnet`.
#[derive(clap::Args)]
pub struct NetworkBenchArgs {
    /// Offered rates to try, packets per second.
    #[arg(long, value_delimiter = ',', default_value = "500,1000,2000,3000,4000,5000")]
    rates: Vec<f64>,
    /// Seconds of traffic per rate.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Mean mixing delay per hop, milliseconds.
    #[arg(long, default_value_t = 1.0)]
    mean_delay_ms: f64,
    /// The Sphinx geometry's scheme of the testnet (`nox testnet up --geometry`): ristretto255
    /// (classical), x25519-kem, mlkem768 or xwing.
    #[arg(long, default_value = "ristretto255", value_parser = testnet::parse_scheme)]
    geometry: nox_sphinx::Scheme,
    /// The testnet's packet length in bytes (`nox testnet up --packet-len`).
    #[arg(long, default_value_t = nox_topology::PacketLen::DEFAULT, value_parser = testnet::parse_packet_len)]
    packet_len: nox_topology::PacketLen,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-testnet")]
    dir: PathBuf,
    /// Output JSON.
    #[arg(long, default_value = "bench/data/network.json")]
    out: PathBuf,
}

/// Runs the benchmark: up, idle RSS, the rate sweep, down.
pub fn run(args: &NetworkBenchArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(err)?;
    let sink = std::net::UdpSocket::bind(("127.0.0.1", 0)).map_err(err)?;
    let layout = Layout {
        mean_delay_ms: args.mean_delay_ms,
        exit_sink: Some(sink.local_addr().map_err(err)?),
        geometry: args.geometry,
        packet_len: args.packet_len,
        ..Layout::default()
    };
    testnet::up(&args.dir, &layout).map_err(err)?;
    let result = runtime.block_on(sweep(args, sink));
    let _ = testnet::down(&args.dir);
    let (results, idle_rss) = result?;
    let header_len =
        nox_topology::network_geometry_with_len(args.geometry, usize::from(layout.layers), args.packet_len)
            .map_err(err)?
            .header_len();
    let best = crate::harness::throughput_at_zero_loss(&results);
    let report = json!({
        "kind": "testnet-network",
        "command": format!("nox bench testnet --rates {} --seconds {} --mean-delay-ms {} --geometry {} --packet-len {}",
            args.rates.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(","), args.seconds, args.mean_delay_ms,
            args.geometry, args.packet_len),
        "parameters": { "nodes": 9, "layers": 3, "hops": 3, "packet_bytes": args.packet_len.bytes(), "payload_bytes": 256,
            "geometry": args.geometry.name(), "header_bytes": header_len,
            "mean_delay_ms": args.mean_delay_ms, "seconds_per_rate": args.seconds, "workers_per_node": 1 },
        "machine": machine::describe(),
        "idle_rss_kb_per_node": idle_rss,
        "throughput_at_zero_loss_pps": best,
        "rates": results,
    });
    write_json(&args.out, &report)?;
    println!("throughput at 0 % loss ({}): {best:.0} packets/s; wrote {}", args.geometry, args.out.display());
    Ok(())
}

async fn sweep(args: &NetworkBenchArgs, sink: std::net::UdpSocket) -> Result<(Vec<Value>, Vec<u64>), BenchError> {
    sink.set_nonblocking(true).map_err(err)?;
    let sink = tokio::net::UdpSocket::from_std(sink).map_err(err)?;
    let mut client = TestnetClient::connect(&args.dir).map_err(err)?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_rss: Vec<u64> = testnet::nodes(&args.dir).iter().filter_map(|n| testnet::rss_kb(&n.dir)).collect();
    println!(
        "{:>8} {:>10} {:>10} {:>7} {:>8} {:>8} {:>8} {:>10} {:>9} {:>9}",
        "offered", "sent/s", "deliv/s", "lost", "p50 ms", "p90 ms", "p99 ms", "max rss kB", "held p99", "over-del"
    );
    let mut results = Vec::new();
    let mut next_seq = 0u64;
    for &rate in &args.rates {
        let row = measure_rate(&args.dir, &mut client, &sink, rate, args.seconds, &mut next_seq).await?;
        let ms = |q: &str| row["latency_ms"][q].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:>8.0} {:>10.0} {:>10.0} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>9} {:>9.4}",
            rate,
            row["achieved_send_rate"].as_f64().unwrap_or(0.0),
            row["delivered_rate"].as_f64().unwrap_or(0.0),
            row["lost"],
            ms("p50"),
            ms("p90"),
            ms("p99"),
            row["peak_rss_kb"],
            row["queue_depth"]["all_nodes"]["mixer_held"]["p99"],
            row["over_delayed"]["fraction"].as_f64().unwrap_or(f64::NAN)
        );
        results.push(row);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok((results, idle_rss))
}
