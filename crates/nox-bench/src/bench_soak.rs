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

use crate::{
    bench::BenchError,
    bench_common::{CommonArgs, Net, chart, client, err, round3, shard_capacity, wilson95},
};
use nox_testnet::servers::bind_loopback;
use nox_testnet::{self as testnet, Layout};

/// Magic of a background packet's payload (then its sequence number).
const BACKGROUND: &[u8; 8] = b"SOAK-BG\0";
/// Magic of a replay probe's payload (then its id).
const PROBE: &[u8; 8] = b"SOAK-RP\0";
/// RSS and counter sampling period.
const SAMPLE: Duration = Duration::from_secs(5);

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

/// Whether `tc netem` can be used here (root, `ip`, `tc` and the kernel's `sch_netem`): tried
/// in a throw-away network namespace.
fn probe_netem() -> Value {
    use std::process::Command;
    let ns = format!("nox-soak-probe-{}", std::process::id());
    let ok = |c: &mut Command| {
        c.output().map(|o| (o.status.success(), String::from_utf8_lossy(&o.stderr).trim().to_owned()))
    };
    match ok(Command::new("ip").args(["netns", "add", &ns])) {
        Ok((true, _)) => {}
        Ok((false, e)) => return json!({ "status": "unavailable", "reason": format!("ip netns add: {e}") }),
        Err(e) => return json!({ "status": "unavailable", "reason": format!("ip: {e}") }),
    }
    let tried = ok(Command::new("ip")
        .args(["netns", "exec", &ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]));
    let _ = ok(Command::new("ip").args(["netns", "del", &ns]));
    match tried {
        Ok((true, _)) => {
            json!({ "status": "available (not used: loopback TCP turns netem loss into retransmission delay)" })
        }
        Ok((false, e)) => json!({ "status": "unavailable", "reason": format!("tc qdisc add … netem: {e}") }),
        Err(e) => json!({ "status": "unavailable", "reason": format!("tc: {e}") }),
    }
}

/// Kills in turn over the layers (entry, mix, exit, entry, …), one every `kill_every`
/// seconds, plus the directory and RPC outages; sorted by time.
fn schedule(
    nodes: &[testnet::NodeEntry],
    seconds: u64,
    kill_every: u64,
    directory_down: u64,
    rpc_down: u64,
    has_chain: bool,
) -> Vec<(u64, Fault)> {
    let layers = nodes.iter().map(|n| n.layer).max().map_or(0, |l| usize::from(l) + 1);
    let by_layer: Vec<Vec<usize>> =
        (0..layers).map(|l| (0..nodes.len()).filter(|&i| usize::from(nodes[i].layer) == l).collect()).collect();
    let rotation: Vec<usize> = (0..nodes.len())
        .filter_map(|k| by_layer.get(k % layers.max(1)).and_then(|layer| layer.get(k / layers.max(1))).copied())
        .collect();
    let mut plan = Vec::new();
    let mut at = kill_every;
    let mut k = 0;
    while at + 5 < seconds && !rotation.is_empty() {
        plan.push((at, Fault::KillNode(rotation[k % rotation.len()])));
        at += kill_every;
        k += 1;
    }
    let directory_at = seconds * 3 / 10;
    plan.push((directory_at, Fault::DirectoryDown));
    plan.push(((directory_at + directory_down).min(seconds), Fault::DirectoryUp));
    if has_chain {
        let rpc_at = seconds * 65 / 100;
        plan.push((rpc_at, Fault::RpcDown));
        plan.push(((rpc_at + rpc_down).min(seconds), Fault::RpcUp));
    }
    plan.sort_by_key(|(at, _)| *at);
    plan
}

/// The testnet the faults apply to: its state directory, the `nox` binary that restarts its
/// processes, its nodes and their link keys (index order).
struct Target<'a> {
    dir: &'a Path,
    exe: &'a Path,
    nodes: &'a [testnet::NodeEntry],
    link_keys: &'a [nox_link::LinkPublicKey],
}

async fn apply(
    fault: &Fault,
    target: &Target<'_>,
    probe_client: &mut testnet::TestnetClient,
    load: &Arc<Load>,
    log: &mut Log,
) {
    let Target { dir, exe, nodes, link_keys } = *target;
    let at = round3(load.now());
    let blocking = |f: Box<dyn FnOnce() -> Result<String, String> + Send>| async move {
        tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| Err(e.to_string()))
    };
    match *fault {
        Fault::KillNode(index) => {
            let layer = nodes.get(index).map_or(0, |n| n.layer);
            // An entry is sent a packet before its crash and the same bytes after its restart.
            let target = link_keys.get(index).copied();
            let probe = match target {
                Some(target) if layer == 0 => Some(probe_before(probe_client, target, load).await),
                _ => None,
            };
            let (dir2, exe2) = (dir.to_path_buf(), exe.to_path_buf());
            let started = Instant::now();
            let result = blocking(Box::new(move || {
                testnet::kill_node(&dir2, index)?;
                testnet::restart_with(&dir2, index, &exe2).map(|()| String::new())
            }))
            .await;
            let back_s = round3(started.elapsed().as_secs_f64());
            let mut event =
                json!({ "t_s": at, "fault": "sigkill+restart", "node": index, "layer": layer, "back_after_s": back_s });
            if let Err(e) = &result {
                log.failures.push(format!("node-{index} did not come back: {e}"));
                event["error"] = json!(e);
            }
            match probe {
                Some(probe) if result.is_ok() => {
                    event["replay_probe"] = probe_after(probe_client, nodes, index, probe, load, log).await;
                }
                Some(_) => event["replay_probe"] = json!({ "checked": false, "reason": "the node did not come back" }),
                None => {}
            }
            println!("soak t={at:.0}s: {event}");
            log.events.push(event);
        }
        Fault::DirectoryDown => {
            let killed = nox_testnet::directory::kill(dir);
            log.events.push(json!({ "t_s": at, "fault": "directory sigkill", "was_running": killed }));
            println!("soak t={at:.0}s: directory SIGKILLed");
        }
        Fault::DirectoryUp => {
            let (dir2, exe2) = (dir.to_path_buf(), exe.to_path_buf());
            let result =
                blocking(Box::new(move || nox_testnet::directory::restart(&dir2, &exe2).map(|a| a.to_string()))).await;
            if let Err(e) = &result {
                log.failures.push(format!("the directory did not come back: {e}"));
            }
            log.events.push(json!({ "t_s": at, "fault": "directory restarted", "ok": result.is_ok() }));
            println!("soak t={at:.0}s: directory restarted: {result:?}");
        }
        Fault::RpcDown | Fault::RpcUp => {
            let signal = if matches!(fault, Fault::RpcDown) { "STOP" } else { "CONT" };
            let done = testnet::signal_process(&nox_testnet::chain::process_dir(dir), signal);
            log.events.push(json!({ "t_s": at, "fault": format!("chain RPC SIG{signal}"), "ok": done }));
            println!("soak t={at:.0}s: Anvil SIG{signal}: {done}");
        }
    }
}

/// A replay probe sent to entry `index` before its crash: the packet, its id, the entry's link
/// key, and whether its delivery was seen (so the entry certainly processed it).
struct Probe {
    id: u64,
    entry: nox_link::LinkPublicKey,
    packet: Vec<u8>,
    delivered: bool,
}

async fn probe_before(client: &mut testnet::TestnetClient, target: nox_link::LinkPublicKey, load: &Load) -> Probe {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut last = None;
    // Up to 5 probes: one may be lost on a lossy link after the entry.
    for _ in 0..5 {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut payload = [0u8; 64];
        payload[..8].copy_from_slice(PROBE);
        payload[8..16].copy_from_slice(&id.to_be_bytes());
        let Some((entry, packet)) = (0..64).find_map(|_| client.build(&payload).ok().filter(|(e, _)| *e == target))
        else {
            break;
        };
        if client.send(&entry, packet.clone()).await.is_err() {
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if probe_count(load, id) > 0 {
                return Probe { id, entry, packet, delivered: true };
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        last = Some(Probe { id, entry, packet, delivered: false });
    }
    last.unwrap_or(Probe { id: 0, entry: nox_link::LinkPublicKey([0; 32]), packet: Vec::new(), delivered: false })
}

/// The link key of every node, in index order (matched by the `listen` address of its
/// `node.toml` in the current topology).
fn link_keys(dir: &Path, nodes: &[testnet::NodeEntry]) -> Result<Vec<nox_link::LinkPublicKey>, BenchError> {
    let topology = nox_testnet::directory::topology(dir).map_err(err)?;
    nodes
        .iter()
        .map(|node| {
            let config = std::fs::read_to_string(node.dir.join("node.toml")).map_err(err)?;
            let listen: Option<SocketAddr> = config
                .lines()
                .find_map(|l| l.strip_prefix("listen = "))
                .and_then(|v| v.trim().trim_matches('"').parse().ok());
            topology
                .nodes()
                .iter()
                .find(|n| Some(n.descriptor.address) == listen)
                .map(|n| nox_link::LinkPublicKey(n.descriptor.link_key.to_bytes()))
                .ok_or_else(|| err(format!("{} is not in the topology", node.dir.display())))
        })
        .collect()
}

fn probe_count(load: &Load, id: u64) -> u32 {
    load.probes_delivered.lock().map(|m| m.get(&id).copied().unwrap_or(0)).unwrap_or(0)
}

/// Sends the probe again to the restarted entry: it must be dropped as a replay (the entry's
/// `replay` drop counter, reset by the restart, counts it) and never delivered twice.
async fn probe_after(
    client: &testnet::TestnetClient,
    nodes: &[testnet::NodeEntry],
    index: usize,
    probe: Probe,
    load: &Load,
    log: &mut Log,
) -> Value {
    if !probe.delivered {
        return json!({ "checked": false, "reason": "no probe delivery was seen before the crash (lost on a lossy link)" });
    }
    let Some(node) = nodes.get(index) else { return json!({ "checked": false }) };
    let replays = || {
        testnet::metric(
            &testnet::scrape(node.metrics).unwrap_or_default(),
            "nox_packets_dropped_total{reason=\"replay\"}",
        )
    };
    let before = replays();
    let sent = client.send(&probe.entry, probe.packet.clone()).await.is_ok();
    let deadline = Instant::now() + Duration::from_secs(5);
    while replays() == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Leave a replay that was accepted time to reach the sink.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rejected, deliveries) = (replays() > before, probe_count(load, probe.id));
    if !sent || !rejected || deliveries > 1 {
        log.failures.push(format!(
            "node-{index}: a packet it forwarded before its SIGKILL was not refused as a replay after the restart \
             (sent again: {sent}, replay drops +{}, deliveries {deliveries})",
            replays().saturating_sub(before)
        ));
    }
    json!({ "checked": true, "probe": probe.id, "rejected_as_replay": rejected, "deliveries": deliveries })
}

/// Background packets at `rate`, each with its sequence number, until stopped.
async fn background(dir: PathBuf, rate: f64, load: Arc<Load>) {
    let Ok(mut client) = testnet::TestnetClient::connect(&dir) else {
        load.background_send_errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let started = Instant::now();
    let mut refreshed = Instant::now();
    let mut payload = [0u8; 64];
    payload[..8].copy_from_slice(BACKGROUND);
    for seq in 0u64.. {
        if load.stop.load(Ordering::Relaxed) {
            break;
        }
        // New epoch keys; while the directory is down the last topology stays in use.
        if refreshed.elapsed() > Duration::from_secs(10) {
            // Bounded: with the chain's RPC frozen the registry read would wait for it.
            let _ = tokio::time::timeout(Duration::from_secs(2), client.refresh(&dir)).await;
            refreshed = Instant::now();
        }
        payload[8..16].copy_from_slice(&seq.to_be_bytes());
        if let Ok(mut sent) = load.background_sent.lock() {
            sent.push(load.now() as f32);
        }
        let sent = match client.build(&payload) {
            Ok((entry, packet)) => tokio::time::timeout(Duration::from_millis(500), client.send(&entry, packet))
                .await
                .is_ok_and(|r| r.is_ok()),
            Err(_) => false,
        };
        if !sent {
            load.background_send_errors.fetch_add(1, Ordering::Relaxed);
        }
        let due = started + Duration::from_secs_f64((seq + 1) as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
    }
}

/// Counts what the exits deliver: background sequence numbers and probe ids.
async fn sink_reader(socket: std::net::UdpSocket, load: Arc<Load>) {
    let Ok(socket) = socket.set_nonblocking(true).and_then(|()| tokio::net::UdpSocket::from_std(socket)) else {
        return;
    };
    let mut buf = [0u8; 128];
    while let Ok(n) = socket.recv(&mut buf).await {
        if n < 16 {
            continue;
        }
        let value = u64::from_be_bytes(buf[8..16].try_into().unwrap_or_default());
        if &buf[..8] == BACKGROUND {
            if let (Ok(mut delivered), Ok(index)) = (load.background_delivered.lock(), usize::try_from(value)) {
                if delivered.len() <= index {
                    delivered.resize(index + 1, 0);
                }
                delivered[index] = delivered[index].saturating_add(1);
            }
        } else if &buf[..8] == PROBE
            && let Ok(mut probes) = load.probes_delivered.lock()
        {
            *probes.entry(value).or_insert(0) += 1;
        }
    }
}

/// One client request at a time: `GET /soak/<id>`, a reply of `reply_bytes`.
async fn request_worker(
    handle: nox_client::ClientHandle,
    server: SocketAddr,
    reply_bytes: usize,
    next_id: Arc<AtomicU64>,
    load: Arc<Load>,
) {
    while !load.stop.load(Ordering::Relaxed) {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let body = RequestBody::Http(HttpRequestMsg {
            method: "GET".into(),
            url: format!("http://{server}/soak/{id}"),
            headers: vec![],
            body: vec![],
        });
        let sent_at = load.now();
        let started = Instant::now();
        let ok = match handle.request(body, reply_bytes + 512).await {
            Ok(response) if response.status == Status::Ok => {
                HttpResponseMsg::decode(&response.body).is_ok_and(|r| r.body.len() == reply_bytes)
            }
            _ => false,
        };
        let rtt = ok.then(|| round3(started.elapsed().as_secs_f64() * 1e3));
        if let Ok(mut requests) = load.requests.lock() {
            requests.push((id, sent_at, rtt));
        }
    }
}

/// The HTTP server the exits fetch from: records every `/soak/<id>` it answers.
fn http_server(listener: std::net::TcpListener, reply_bytes: usize, load: Arc<Load>) -> Result<(), BenchError> {
    let body = Arc::new(vec![0x5a; reply_bytes]);
    testnet::servers::http_server_with(listener, move |path| {
        let id: Option<u64> = path.strip_prefix("/soak/").and_then(|i| i.parse().ok());
        if let (Some(id), Ok(mut served)) = (id, load.served.lock()) {
            served.insert(id);
        }
        let body = id.map(|_| body.clone());
        async move { body }
    })
    .map_err(err)?;
    Ok(())
}

/// RSS samples: `(t_s, node index, incarnation pid, kB)`; node index `usize::MAX` is this
/// process (the client and the load generators).
type RssSample = (f64, usize, u32, u64);

async fn sampler(dir: PathBuf, load: Arc<Load>) -> Vec<RssSample> {
    let mut samples = Vec::new();
    let nodes = testnet::nodes(&dir);
    while !load.stop.load(Ordering::Relaxed) {
        let t = round3(load.now());
        for (index, node) in nodes.iter().enumerate() {
            let pid = std::fs::read_to_string(node.dir.join("pid")).ok().and_then(|p| p.trim().parse().ok());
            if let (Some(pid), Some(kb)) = (pid, testnet::rss_kb(&node.dir)) {
                samples.push((t, index, pid, kb));
            }
        }
        if let Some(kb) = testnet::rss_kb_of("self") {
            samples.push((t, usize::MAX, std::process::id(), kb));
        }
        tokio::time::sleep(SAMPLE).await;
    }
    samples
}

/// Least-squares slope of `(x, y)`, y per unit x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Per process: the RSS slope (kB/min) over the second half of its longest incarnation (the
/// first half holds the warm-up), its RSS at the start and end of that half.
fn rss_slopes(samples: &[RssSample], processes: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for index in (0..processes).chain([usize::MAX]) {
        let mine: Vec<&RssSample> = samples.iter().filter(|s| s.1 == index).collect();
        let mut pids: Vec<u32> = mine.iter().map(|s| s.2).collect();
        pids.dedup();
        let longest = pids
            .iter()
            .map(|pid| mine.iter().filter(|s| s.2 == *pid).map(|s| (s.0, s.3 as f64)).collect::<Vec<_>>())
            .max_by(|a, b| span(a).total_cmp(&span(b)))
            .unwrap_or_default();
        let half: Vec<(f64, f64)> = longest.iter().skip(longest.len() / 2).copied().collect();
        let per_min = slope(&half).map(|s| round3(s * 60.0));
        out.push(json!({
            "process": if index == usize::MAX { "bench (client + load)".to_string() } else { format!("node-{index}") },
            "incarnations": pids.len(),
            "window_s": round3(span(&half)),
            "rss_kb_start": half.first().map(|p| p.1),
            "rss_kb_end": half.last().map(|p| p.1),
            "slope_kb_per_min": per_min,
        }));
    }
    out
}

fn span(points: &[(f64, f64)]) -> f64 {
    match (points.first(), points.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    }
}

struct ReportInputs {
    seconds: u64,
    kill_every: u64,
    directory_down: u64,
    rpc_down: u64,
    rate: f64,
    rate_source: String,
    link_loss: f64,
    reply_bytes: usize,
    netem: Value,
    load_seconds: f64,
}

fn report(
    args: &SoakArgs,
    inputs: &ReportInputs,
    schedule: &[(u64, Fault)],
    load: &Load,
    mut log: Log,
    rss: &[RssSample],
) -> Result<(), BenchError> {
    let quick = args.common.quick;
    // Outage windows as they happened (a restart in progress can delay the next event).
    let happened = |fault: &str| log.events.iter().find(|e| e["fault"] == fault).and_then(|e| e["t_s"].as_f64());
    let mut windows = vec![("whole run".to_owned(), 0.0, inputs.load_seconds)];
    for (name, down, up) in [
        ("directory down", "directory sigkill", "directory restarted"),
        ("chain RPC frozen", "chain RPC SIGSTOP", "chain RPC SIGCONT"),
    ] {
        if let (Some(a), Some(b)) = (happened(down), happened(up)) {
            windows.push((name.to_owned(), a, b));
        }
    }
    let sent = load.background_sent.lock().map(|v| v.clone()).unwrap_or_default();
    let delivered = load.background_delivered.lock().map(|v| v.clone()).unwrap_or_default();
    let requests = load.requests.lock().map(|v| v.clone()).unwrap_or_default();
    let served = load.served.lock().map(|v| v.clone()).unwrap_or_default();
    let duplicates = delivered.iter().filter(|&&d| d > 1).count();
    if duplicates > 0 {
        log.failures.push(format!("{duplicates} background packets were delivered more than once (a replay accepted)"));
    }
    let phase = |from: f64, to: f64| {
        let in_window: Vec<usize> =
            (0..sent.len()).filter(|&i| f64::from(sent[i]) >= from && f64::from(sent[i]) < to).collect();
        let bg_delivered = in_window.iter().filter(|&&i| delivered.get(i).copied().unwrap_or(0) > 0).count();
        let reqs: Vec<&(u64, f64, Option<f64>)> = requests.iter().filter(|r| r.1 >= from && r.1 < to).collect();
        let reached = reqs.iter().filter(|r| served.contains(&r.0)).count() as u64;
        let answered = reqs.iter().filter(|r| r.2.is_some() && served.contains(&r.0)).count() as u64;
        let (lo, hi) = wilson95(answered, reached);
        let mut rtts: Vec<f64> = reqs.iter().filter_map(|r| r.2).collect();
        json!({
            "background_sent": in_window.len(), "background_delivered": bg_delivered,
            "background_delivery": ratio(bg_delivered as u64, in_window.len() as u64),
            "requests_sent": reqs.len(), "requests_reached_server": reached, "replies_delivered": answered,
            "forward_delivery": ratio(reached, reqs.len() as u64),
            "reply_delivery": ratio(answered, reached), "reply_delivery_wilson95": [round3(lo), round3(hi)],
            "rtt_ms": crate::bench_common::stats(&mut rtts),
        })
    };
    let phases: Vec<Value> = windows
        .iter()
        .map(|(name, a, b)| json!({ "window": name, "from_s": a, "to_s": b, "result": phase(*a, *b) }))
        .collect();
    let whole = phase(0.0, inputs.load_seconds);
    // Quick mode is a smoke gate: ~90 requests under a kill every 12 s (five CI-sized runs:
    // 94.6–100 %); without FEC, 10 % loss over 3 data shards would give ~73 %.
    let threshold = if quick { 0.85 } else { 0.98 };
    let reply_delivery = whole["reply_delivery"].as_f64().unwrap_or(0.0);
    if whole["requests_reached_server"].as_u64().unwrap_or(0) == 0 || reply_delivery < threshold {
        log.failures.push(format!("multi-fragment reply delivery {reply_delivery:.4} < {threshold}"));
    }
    let baseline = whole["background_delivery"].as_f64().unwrap_or(0.0);
    if let Some(down) = phases.iter().find(|p| p["window"] == "directory down") {
        let during = down["result"]["background_delivery"].as_f64().unwrap_or(0.0);
        if during < 0.8 * baseline {
            log.failures.push(format!(
                "with the directory down the network delivered {during:.3} of background packets (whole run {baseline:.3})"
            ));
        }
    }
    let probes: Vec<&Value> = log.events.iter().filter_map(|e| e.get("replay_probe")).collect();
    let probes_checked = probes.iter().filter(|p| p["checked"] == true).count();
    if probes_checked == 0 {
        log.failures.push("no replay probe could be checked (no entry was killed after a seen delivery)".into());
    }
    let slopes = rss_slopes(rss, testnet::nodes(&args.common.dir).len().max(9));
    let max_node_slope = slopes
        .iter()
        .filter(|s| s["process"] != "bench (client + load)")
        .filter_map(|s| s["slope_kb_per_min"].as_f64())
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    // Timeline: per 5 s bucket, background delivery and reply delivery by send time.
    let buckets = (inputs.load_seconds / SAMPLE.as_secs_f64()).ceil() as usize;
    let mut timeline = Vec::new();
    for b in 0..buckets {
        let (from, to) = (b as f64 * SAMPLE.as_secs_f64(), (b + 1) as f64 * SAMPLE.as_secs_f64());
        let p = phase(from, to);
        timeline.push(json!({ "t_s": from, "background_delivery": p["background_delivery"], "reply_delivery": p["reply_delivery"] }));
    }
    let series = |label: &str, key: &str| {
        json!({ "label": label, "x": timeline.iter().map(|p| p["t_s"].clone()).collect::<Vec<_>>(),
            "y": timeline.iter().map(|p| p[key].clone()).collect::<Vec<_>>() })
    };
    let mut rss_series = Vec::new();
    for index in 0..testnet::nodes(&args.common.dir).len().max(9) {
        let points: Vec<&RssSample> = rss.iter().filter(|s| s.1 == index).collect();
        if points.is_empty() {
            continue;
        }
        rss_series.push(json!({ "label": format!("node-{index}"), "x": points.iter().map(|s| s.0).collect::<Vec<_>>(),
            "y": points.iter().map(|s| round3(s.3 as f64 / 1024.0)).collect::<Vec<_>>() }));
    }
    let charts = vec![
        chart(
            "soak-delivery",
            "Soak: delivery per 5 s under kills, link loss, directory and RPC outages",
            "line",
            ("time (s)", "delivered fraction"),
            (false, false),
            vec![
                series("background packets (one way)", "background_delivery"),
                series("multi-fragment replies", "reply_delivery"),
            ],
        ),
        chart(
            "soak-rss",
            "Soak: node RSS (a drop is a SIGKILL and restart)",
            "line",
            ("time (s)", "RSS (MiB)"),
            (false, false),
            rss_series,
        ),
    ];
    let parameters = json!({
        "quick": quick, "seconds": inputs.seconds, "kill_every_s": inputs.kill_every,
        "directory_down_s": inputs.directory_down, "rpc_down_s": inputs.rpc_down,
        "background_rate_pps": round3(inputs.rate), "background_rate_source": inputs.rate_source,
        "loss_per_reply": args.loss, "link_loss": round3(inputs.link_loss * 1e4) / 1e4,
        "link_delay_ms": args.link_delay_ms, "link_jitter_ms": args.link_jitter_ms,
        "fault_layer": "nodes' [chaos] link layer (nox built with --features chaos)", "netem": inputs.netem,
        "reply_bytes": inputs.reply_bytes, "concurrency": args.concurrency, "client_cover_rate": args.cover_rate,
        "client_loss_budget": args.loss, "client_target": 0.99, "layers": 3,
        "nodes": testnet::nodes(&args.common.dir).len(), "reply_delivery_threshold": threshold,
        "testnet": "shipped defaults (loop and drop cover on, chain registry, a directory), mean delay 1 ms",
    });
    let planned: Vec<Value> = schedule.iter().map(|(at, f)| json!({ "t_s": at, "fault": format!("{f:?}") })).collect();
    let results = json!({
        "schedule": planned, "phases": phases, "events": log.events, "rss": slopes, "timeline": timeline,
        "background_duplicates": duplicates,
        "background_send_errors": load.background_send_errors.load(Ordering::Relaxed),
        "replay_probes_checked": probes_checked, "failures": log.failures,
    });
    let summary = json!({
        "reply_delivery": whole["reply_delivery"], "reply_delivery_wilson95": whole["reply_delivery_wilson95"],
        "replies": whole["replies_delivered"], "requests_reached_server": whole["requests_reached_server"],
        "forward_delivery": whole["forward_delivery"], "background_delivery": whole["background_delivery"],
        "kills": log.events.iter().filter(|e| e["fault"] == "sigkill+restart").count(),
        "replay_probes_checked": probes_checked, "replays_accepted": log.failures.iter().filter(|f| f.contains("replay")).count(),
        "max_node_rss_slope_kb_per_min": max_node_slope, "failures": log.failures.len(),
    });
    let failures = log.failures.clone();
    crate::bench_common::write_envelope(&args.common, "soak", parameters, results, summary, charts)?;
    if failures.is_empty() { Ok(()) } else { Err(err(format!("soak checks failed: {}", failures.join("; ")))) }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| round3(a as f64 / b as f64 * 1000.0) / 1000.0)
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
