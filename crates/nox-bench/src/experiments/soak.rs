//! `nox bench soak`: the testnet as shipped (cover traffic, the chain registry, a directory)
//! under sustained load while it is broken on purpose, measuring what survives
//! (bench/data/soak.json, docs/benchmarks/soak.md).
//!
//! - **Load**: anonymous background packets at a fixed rate (half the measured capacity by
//!   default) and a `nox-client` with its shipped send rate fetching multi-fragment HTTP
//!   replies from a local server.
//! - **Faults**: a node SIGKILLed and restarted every `--kill-every-s`, in turn over the
//!   layers; loss and delay on every node link (the nodes' `[chaos]` layer: `tc netem` is
//!   probed and reported, but loopback TCP would turn its loss into retransmission delay, not
//!   the packet loss FEC faces); the directory SIGKILLed and kept down; the chain's RPC
//!   frozen (Anvil SIGSTOPped).
//! - **Checks** (the run fails if one breaks): multi-fragment reply delivery (replies
//!   received / requests the server answered) ≥ 98 % (quick: 85 %); no replay accepted
//!   across a restart (an entry is sent, after its restart, a packet it forwarded before
//!   its SIGKILL, and must drop it as a replay; and no background packet is delivered
//!   twice anywhere); every restart comes back; the network keeps routing while the
//!   directory is down. RSS is sampled every 5 s and its slope reported per node.
//!
//! Files: this one holds the options, the shared load state and the run; `soak/`
//! the faults (`faults.rs`), the replay check across a restart (`replay.rs`), the load
//! generators (`load.rs`) and the report (`report.rs`).

use std::{
    collections::HashSet,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use nox_client::ClientConfig;
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody, Status};
use serde_json::{Value, json};

use crate::harness::{BenchError, CommonArgs, Net, chart, client, err, round3, shard_capacity, wilson95};
use nox_testnet::servers::bind_loopback;
use nox_testnet::{self as testnet, Layout};

/// Magic of a background packet's payload (then its sequence number).
const BACKGROUND: &[u8; 8] = b"SOAK-BG\0";
/// Magic of a replay probe's payload (then its id).
const PROBE: &[u8; 8] = b"SOAK-RP\0";
/// RSS and counter sampling period.
const SAMPLE: Duration = Duration::from_secs(5);

mod faults;
mod load;
mod replay;
mod report;
use faults::*;
use load::*;
use replay::*;
use report::*;

/// Options of `nox bench soak`.
#[derive(clap::Args, Clone)]
pub struct SoakArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Length of the loaded run, s (quick: 60).
    #[arg(long, default_value_t = 600)]
    pub seconds: u64,
    /// A node is SIGKILLed and restarted every this many seconds (quick: 12).
    #[arg(long, default_value_t = 60)]
    pub kill_every_s: u64,
    /// End-to-end loss of a reply packet, injected evenly on the links a reply crosses.
    #[arg(long, default_value_t = 0.10)]
    pub loss: f64,
    /// Fixed delay on every node link, ms.
    #[arg(long, default_value_t = 2.0)]
    pub link_delay_ms: f64,
    /// Uniform jitter on every node link, ms.
    #[arg(long, default_value_t = 3.0)]
    pub link_jitter_ms: f64,
    /// Background packets per second (default: half of `throughput_at_zero_loss_pps` in
    /// --capacity-file; quick: 300).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Where the measured capacity comes from (`nox bench testnet` output).
    #[arg(long, default_value = "bench/data/network.json")]
    pub capacity_file: PathBuf,
    /// Reply body bytes per request (default: 2.5 reply shards, so 3 data shards plus parity).
    #[arg(long)]
    pub reply_bytes: Option<usize>,
    /// Requests the client keeps in flight.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// The client's send rate λ_P (packets/s, real or cover): the daemon's default.
    #[arg(long, default_value_t = 2.0)]
    pub cover_rate: f64,
    /// The directory is SIGKILLed at 30 % of the run and restarted this many seconds later
    /// (quick: 15).
    #[arg(long, default_value_t = 120)]
    pub directory_down_s: u64,
    /// The chain's RPC (Anvil) is frozen with SIGSTOP at 65 % of the run for this many seconds
    /// (quick: 10).
    #[arg(long, default_value_t = 60)]
    pub rpc_down_s: u64,
}

/// A scheduled fault.
#[derive(Clone, Copy, Debug)]
enum Fault {
    KillNode(usize),
    DirectoryDown,
    DirectoryUp,
    RpcDown,
    RpcUp,
}

/// What happened, when (s from the start of the load).
#[derive(Default)]
struct Log {
    events: Vec<Value>,
    failures: Vec<String>,
}

/// Shared state of the load generators.
struct Load {
    started: Instant,
    stop: AtomicBool,
    /// Background packets: send time (s) per sequence number.
    background_sent: Mutex<Vec<f32>>,
    background_send_errors: AtomicU64,
    /// Deliveries per background sequence number (from the exits' sink).
    background_delivered: Mutex<Vec<u8>>,
    /// Deliveries per replay-probe id.
    probes_delivered: Mutex<std::collections::HashMap<u64, u32>>,
    /// Request ids the HTTP server answered.
    served: Mutex<HashSet<u64>>,
    /// Per request: (id, send time s, Some(rtt ms) when its reply arrived intact).
    requests: Mutex<Vec<(u64, f64, Option<f64>)>>,
}

impl Load {
    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// Runs `nox bench soak`.
pub fn run(args: &SoakArgs) -> Result<(), BenchError> {
    let quick = args.common.quick;
    let pick = |full: u64, q: u64| if quick { q } else { full };
    let seconds = pick(args.seconds, 60);
    let kill_every = pick(args.kill_every_s, 12).max(1);
    let directory_down = pick(args.directory_down_s, 15);
    let rpc_down = pick(args.rpc_down_s, 10);
    let (rate, rate_source) = background_rate(args)?;
    if !(0.0..1.0).contains(&args.loss) {
        return Err(err("--loss must be in [0, 1)"));
    }
    if !nox_node::chaos::COMPILED_IN {
        return Err(err(format!("nox bench soak injects link faults: {}", nox_node::chaos::NOT_BUILT)));
    }
    let netem = probe_netem();
    let layers: u8 = 3;
    // A reply crosses `layers` node links (exit → entry layer → … → gateway) and the gateway's
    // hand-over to the client: spread the end-to-end loss evenly over those.
    let links_per_reply = f64::from(layers) + 1.0;
    let link_loss = 1.0 - (1.0 - args.loss).powf(1.0 / links_per_reply);
    let reply_bytes = args.reply_bytes.unwrap_or(shard_capacity() * 5 / 2);
    let exe = std::env::current_exe().map_err(err)?;

    let http = bind_loopback().map_err(err)?;
    let http_addr = http.local_addr().map_err(err)?;
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").map_err(err)?;
    let sink_addr = sink.local_addr().map_err(err)?;
    let layout = Layout {
        base_port: args.common.base_port,
        layers,
        exit_sink: Some(sink_addr),
        exit_allow: vec![http_addr],
        reply_loss_estimate: args.loss,
        chaos_link_loss: link_loss,
        chaos_link_delay_ms: args.link_delay_ms,
        chaos_link_jitter_ms: args.link_jitter_ms,
        ..Layout::default()
    };
    println!(
        "soak: {seconds} s at {rate:.0} background packets/s ({rate_source}), a node killed every {kill_every} s, \
         {:.1} % loss per link ({} % per reply), {} ms + U(0, {}) ms per link; netem: {}",
        link_loss * 100.0,
        args.loss * 100.0,
        args.link_delay_ms,
        args.link_jitter_ms,
        netem["status"]
    );
    let net = Net::up(&args.common.dir, &layout)?;
    let nodes = testnet::nodes(&net.dir);
    // Link keys now: reading the topology later needs the directory and the chain, which the
    // run takes down.
    let link_keys = link_keys(&net.dir, &nodes)?;
    let has_chain = nox_testnet::chain::load(&net.dir).is_some();
    let schedule = schedule(&nodes, seconds, kill_every, directory_down, rpc_down, has_chain);

    let load = Arc::new(Load {
        started: Instant::now(),
        stop: AtomicBool::new(false),
        background_sent: Mutex::new(Vec::new()),
        background_send_errors: AtomicU64::new(0),
        background_delivered: Mutex::new(Vec::new()),
        probes_delivered: Mutex::default(),
        served: Mutex::default(),
        requests: Mutex::default(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let client_timeout = Duration::from_secs(pick(30, 20));
    let outcome = runtime.block_on(async {
        let load_ref = load.clone();
        http_server(http, reply_bytes, load_ref)?;
        tokio::spawn(sink_reader(sink, load.clone()));
        let handle = client(
            &net.dir,
            ClientConfig {
                loss: args.loss,
                target: 0.99,
                cover_rate: args.cover_rate,
                timeout: client_timeout,
                ..ClientConfig::default()
            },
        )
        .await?;
        let mut probe_client = testnet::TestnetClient::connect(&net.dir).map_err(err)?;
        let background = tokio::spawn(background(net.dir.clone(), rate, load.clone()));
        let mut workers = Vec::new();
        let next_id = Arc::new(AtomicU64::new(0));
        for _ in 0..args.concurrency.max(1) {
            workers.push(tokio::spawn(request_worker(
                handle.clone(),
                http_addr,
                reply_bytes,
                next_id.clone(),
                load.clone(),
            )));
        }
        let samples = tokio::spawn(sampler(net.dir.clone(), load.clone()));
        let mut log = Log::default();
        for (at, fault) in &schedule {
            let due = load.started + Duration::from_secs(*at);
            tokio::time::sleep_until(due.into()).await;
            let target = Target { dir: &net.dir, exe: &exe, nodes: &nodes, link_keys: &link_keys };
            apply(fault, &target, &mut probe_client, &load, &mut log).await;
        }
        tokio::time::sleep_until((load.started + Duration::from_secs(seconds)).into()).await;
        load.stop.store(true, Ordering::Relaxed);
        let load_seconds = load.now();
        let _ = background.await;
        for worker in workers {
            let _ = worker.await;
        }
        // Late background packets (mixing, link delay, a restart's queue): a short drain.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let rss = samples.await.unwrap_or_default();
        drop(handle);
        Ok::<_, BenchError>((log, rss, load_seconds))
    });
    let (mut log, rss, load_seconds) = outcome?;
    let alive: Vec<bool> = nodes.iter().map(|n| testnet::scrape(n.metrics).is_some()).collect();
    if alive.iter().any(|a| !a) {
        log.failures.push(format!("nodes not answering at the end: {alive:?}"));
    }
    drop(net);
    report(
        args,
        &ReportInputs {
            seconds,
            kill_every,
            directory_down,
            rpc_down,
            rate,
            rate_source,
            link_loss,
            reply_bytes,
            netem,
            load_seconds,
        },
        &schedule,
        &load,
        log,
        &rss,
    )
}

/// The background rate: `--rate`, else half the measured capacity, else (quick or no file) 300.
fn background_rate(args: &SoakArgs) -> Result<(f64, String), BenchError> {
    if let Some(rate) = args.rate {
        return if rate > 0.0 { Ok((rate, "--rate".into())) } else { Err(err("--rate must be > 0")) };
    }
    if args.common.quick {
        return Ok((300.0, "quick mode".into()));
    }
    let capacity = std::fs::read(&args.capacity_file)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|v| v["throughput_at_zero_loss_pps"].as_f64());
    match capacity {
        Some(c) if c > 0.0 => {
            Ok((c / 2.0, format!("half of {c:.0} packets/s measured in {}", args.capacity_file.display())))
        }
        _ => Err(err(format!(
            "no measured capacity in {} (run `nox bench testnet` first, or pass --rate)",
            args.capacity_file.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_rotate_over_the_layers_and_outages_are_scheduled() {
        let nodes: Vec<testnet::NodeEntry> = (0..9)
            .map(|i| testnet::NodeEntry {
                dir: PathBuf::from(format!("node-{i}")),
                metrics: ([127, 0, 0, 1], 1).into(),
                layer: (i / 3) as u8,
            })
            .collect();
        let plan = schedule(&nodes, 600, 60, 120, 60, true);
        let kills: Vec<usize> =
            plan.iter().filter_map(|(_, f)| if let Fault::KillNode(i) = f { Some(*i) } else { None }).collect();
        assert_eq!(kills, vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
        assert!(plan.windows(2).all(|w| w[0].0 <= w[1].0), "sorted by time");
        let at = |want: fn(&Fault) -> bool| plan.iter().find(|(_, f)| want(f)).map(|(t, _)| *t);
        assert_eq!(at(|f| matches!(f, Fault::DirectoryDown)), Some(180));
        assert_eq!(at(|f| matches!(f, Fault::DirectoryUp)), Some(300));
        assert_eq!(at(|f| matches!(f, Fault::RpcDown)), Some(390));
        assert!(
            schedule(&nodes, 600, 60, 120, 60, false).iter().all(|(_, f)| !matches!(f, Fault::RpcDown | Fault::RpcUp))
        );
    }

    #[test]
    fn slope_of_a_line() {
        let points: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), 3.0 * f64::from(i) + 1.0)).collect();
        assert!((slope(&points).unwrap_or(0.0) - 3.0).abs() < 1e-9);
        assert_eq!(slope(&points[..2]), None);
    }
}
