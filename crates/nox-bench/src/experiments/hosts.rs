//! `nox bench hosts`: the same testnet on loopback and on many hosts over a WAN profile
//! (`nox testnet up --hosts --wan <profile>`: a namespace per node, the userspace delay relay
//! between them), measured in one run and one binary, one after the other:
//!
//! - one-way latency (client → entry → mix → exit) percentiles and throughput at 0 % loss, by
//!   `nox bench testnet`'s method ([`crate::harness::measure_rate`]: pre-built packets paced
//!   onto the entry links, deliveries timed at the exits' UDP sink on this machine's clock;
//!   the sink is reached directly, not through the WAN);
//! - SURB round trips: echoes through the real client (`nox-client`), request out and reply
//!   back through SURBs, and one echo of a reply of several fragments;
//! - the WAN floor of each echo's path is not known to the client (it picks paths itself):
//!   the profile's floors of the fastest and slowest paths are reported beside.
//!
//! The sender entropy under WAN delay is measured by `nox bench cover --wan` (the anonymity
//! harness needs the `observe` build and its own capture; docs/benchmarks/network.md).

use std::{path::PathBuf, time::Duration};

use serde_json::{Value, json};

use crate::harness::{BenchError, err, machine, percentile, write_json};
use nox_client::{Client, ClientConfig, ShellConfig};
use nox_testnet::{
    self as testnet, Layout, TestnetClient,
    wan::{Profile, Wan},
};

/// Options of `nox bench hosts`.
#[derive(clap::Args)]
pub struct HostsBenchArgs {
    /// Offered rates to try, packets per second.
    #[arg(long, value_delimiter = ',', default_value = "250,500,1000,2000,3000")]
    rates: Vec<f64>,
    /// Seconds of traffic per rate.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// SURB round trips (echoes) per setup.
    #[arg(long, default_value_t = 40)]
    echoes: usize,
    /// KiB of the fragmented reply (one echo).
    #[arg(long, default_value_t = 64)]
    bulk_kib: usize,
    /// The WAN profile of the hosts setup.
    #[arg(long, value_enum, default_value = "three-regions")]
    wan: Wan,
    /// First link port of the testnets.
    #[arg(long, default_value_t = 19_000)]
    base_port: u16,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-hosts")]
    dir: PathBuf,
    /// Output JSON.
    #[arg(long, default_value = "bench/data/network-hosts.json")]
    out: PathBuf,
}

/// Runs both setups and writes the report.
pub fn run(args: &HostsBenchArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let load_before = machine::describe();
    let mut setups = Vec::new();
    for hosts in [false, true] {
        let name = if hosts { format!("hosts, wan {}", wan_name(args.wan)) } else { "loopback".to_owned() };
        println!("== {name}");
        // Bound on every address: with --hosts the exits send from their namespaces to the hub.
        let sink = std::net::UdpSocket::bind(("0.0.0.0", 0)).map_err(err)?;
        let sink_port = sink.local_addr().map_err(err)?.port();
        let layout = Layout {
            base_port: args.base_port,
            exit_sink: Some(([127, 0, 0, 1], sink_port).into()),
            no_chain: true,
            hosts,
            wan: args.wan,
            ..Layout::default()
        };
        testnet::up(&args.dir, &layout).map_err(err)?;
        let result = runtime.block_on(measure(args, sink));
        let _ = testnet::down(&args.dir);
        let mut row = result?;
        row["setup"] = json!(name);
        setups.push(row);
    }
    let profile = Profile::new(args.wan, 0.0);
    let regions = profile.regions.len();
    let floors: Vec<f64> = (0..regions.pow(3))
        .map(|i| profile.round_trip_floor(&[i % regions, i / regions % regions, i / regions / regions]))
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    let report = json!({
        "kind": "testnet-hosts",
        "command": format!("nox bench hosts --rates {} --seconds {} --echoes {} --bulk-kib {} --wan {}",
            args.rates.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(","), args.seconds, args.echoes,
            args.bulk_kib, wan_name(args.wan)),
        "parameters": { "nodes": 9, "layers": 3, "packet_bytes": Layout::default().packet_len.bytes(),
            "mean_delay_ms": Layout::default().mean_delay_ms, "chain": false, "seconds_per_rate": args.seconds },
        "wan": { "regions": profile.regions, "rtt_ms": profile.rtt_ms, "jitter_ms": profile.jitter_ms,
            "nodes": "node i in region i mod 3; clients, directory in region 0",
            "echo_floor_ms": { "min": floors.iter().copied().fold(f64::INFINITY, f64::min),
                "max": floors.iter().copied().fold(0.0, f64::max) } },
        "machine_before": load_before,
        "machine_after": machine::describe(),
        "setups": setups,
    });
    write_json(&args.out, &report)?;
    println!("wrote {}", args.out.display());
    Ok(())
}

fn wan_name(wan: Wan) -> &'static str {
    match wan {
        Wan::ThreeRegions => "three-regions",
        Wan::Loopback => "loopback",
    }
}

/// One setup: the rate sweep, then the SURB round trips.
async fn measure(args: &HostsBenchArgs, sink: std::net::UdpSocket) -> Result<Value, BenchError> {
    sink.set_nonblocking(true).map_err(err)?;
    let sink = tokio::net::UdpSocket::from_std(sink).map_err(err)?;
    let mut client = TestnetClient::connect(&args.dir).map_err(err)?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut rates = Vec::new();
    let mut next_seq = 0;
    for &rate in &args.rates {
        let mut row =
            crate::harness::measure_rate(&args.dir, &mut client, &sink, rate, args.seconds, &mut next_seq).await?;
        let ms = |q: &str| row["latency_ms"][q].as_f64().unwrap_or(f64::NAN);
        println!(
            "{rate:>6.0} pps offered: delivered {:>6.0}/s, lost {}, one-way p50 {:.1} p90 {:.1} p99 {:.1} ms",
            row["delivered_rate"].as_f64().unwrap_or(0.0),
            row["lost"],
            ms("p50"),
            ms("p90"),
            ms("p99")
        );
        if let Some(map) = row.as_object_mut() {
            map.remove("latency_samples_ms");
        }
        rates.push(row);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    drop(client);
    // As `nox bench testnet`.
    let throughput = crate::harness::throughput_at_zero_loss(&rates);

    let topology = testnet::directory::topology_async(&args.dir).await.map_err(err)?;
    let client = Client::start(ShellConfig { topology, core: ClientConfig::default() }).await.map_err(err)?;
    let rtts = crate::harness::echo_round_trips(&client, args.echoes, "hosts").await?;
    // The first echo also opened the client's links: reported, not in the percentiles.
    let first = rtts.first().copied();
    let mut steady: Vec<f64> = rtts.iter().skip(1).copied().collect();
    steady.sort_by(f64::total_cmp);
    let (bulk_ms, fragments) = crate::harness::bulk_echo(&client, args.bulk_kib, "on the hosts").await?;
    let p = |q: f64| percentile(&steady, q).unwrap_or(f64::NAN);
    println!(
        "throughput at 0 % loss {throughput:.0} pps; SURB round trip p50 {:.1} p90 {:.1} p99 {:.1} ms (first {:.1}); {} KiB reply in {bulk_ms:.0} ms ({fragments} reply packets)",
        p(0.5),
        p(0.9),
        p(0.99),
        first.unwrap_or(f64::NAN),
        args.bulk_kib
    );
    Ok(json!({
        "throughput_at_zero_loss_pps": throughput,
        "rates": rates,
        "surb_round_trip_ms": { "p50": percentile(&steady, 0.5), "p90": percentile(&steady, 0.9),
            "p99": percentile(&steady, 0.99), "min": steady.first(), "max": steady.last(), "first": first,
            "samples": rtts.iter().map(|r| (r * 1000.0).round() / 1000.0).collect::<Vec<_>>() },
        "fragmented_reply": { "kib": args.bulk_kib, "ms": bulk_ms, "reply_packets": fragments },
    }))
}
