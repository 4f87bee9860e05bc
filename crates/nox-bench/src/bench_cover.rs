//! `nox bench cover`: what the client's cover traffic buys and what it costs, measured on the
//! real multi-process testnet with real `nox-client`s — the curve the daemon's default λ_P is
//! chosen from (docs/benchmarks/cover.md).
//!
//! For each mean delay μ one testnet runs with the shipped settings and `[observe]` on (every
//! node logs its departures and ground truth). For each cover rate λ_P a fresh set of clients
//! starts — `nox-client` exactly as the daemon runs it (`ClientConfig::default()` with
//! `cover_rate` = λ_P: Loopix substitution, real packets in Poisson slots, loops and drops in
//! the rest); half of them send echo requests at a Poisson rate, half stay idle. Each client
//! reports what it hands its entry link (`ClientHandle::observe_sends`): the global observer's
//! view of the client links, plus the ground truth (which packets are fragments of which
//! request). Joined with the node logs (`anon_capture`), the adversary's sender entropy is
//! scored by `nox-anonymity` as in `nox bench anonymity`. Beside it: the request round trip
//! (what the user waits) and the client's upstream bytes (what the user pays).

use std::{
    collections::HashMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use nox_anonymity::activity::{SubstitutionConfig, simulate_substitution};
use nox_anonymity::{DelayModel, sender_entropy};
use nox_client::{ClientConfig, PacketKind, SentPacket};
use nox_message::RequestBody;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::{
    anon_capture::{self, Captured, ClientSend, now_us},
    bench::BenchError,
    bench_common::{client, err, given_or, percentile, round3},
    bench_json::{line, round, series, write_experiment},
};
use nox_testnet::{self as testnet, Layout, TestnetClient};
use nox_topology::PacketLen;

/// Options of `nox bench cover`.
#[derive(clap::Args, Clone)]
pub struct CoverArgs {
    /// CI-sized: μ = 1 ms only, λ_P ∈ {0, the shipped 2.75}, 6 s windows.
    #[arg(long)]
    pub quick: bool,
    /// Client cover rates λ_P to sweep, packets/s (default 0,0.5,1,2,2.75,4,8: 2.75 the shipped rate).
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// Mean delays per hop μ, ms, one testnet each (default 1,10,50; 50 ms is the node's
    /// shipped default, 1 ms the testnet's).
    #[arg(long, value_delimiter = ',')]
    pub delays_ms: Vec<f64>,
    /// Clients per phase.
    #[arg(long, default_value_t = 10)]
    pub clients: u32,
    /// Of which this many send requests; the rest are idle (cover only).
    #[arg(long, default_value_t = 5)]
    pub active: u32,
    /// Echo requests per second per active client (Poisson), below the smallest λ_P swept
    /// so that no client's send queue grows without bound.
    #[arg(long, default_value_t = 0.25)]
    pub request_rate: f64,
    /// Seconds of requests per phase (default 40; quick 6).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// First link port of the bench testnets.
    #[arg(long, default_value_t = 25_000)]
    pub base_port: u16,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-cover")]
    pub dir: PathBuf,
    /// Output JSON (default bench/data/cover.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the request schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Phases per (μ, λ_P) point, one after another on the same testnet: the JSON keeps every
    /// phase, and the summary and charts give each point's mean with its range.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,
    /// Sweep the active clients' request rate instead of `--request-rate`, requests/s each
    /// (the traffic-rate independence experiment, docs/benchmarks/anonymity.md).
    #[arg(long, value_delimiter = ',')]
    pub request_rates: Vec<f64>,
    /// Testnet shapes, `LAYERSxNODES` (e.g. `3x2,3x3,3x5,2x3,4x3`), one testnet per shape and
    /// μ (default 3x3).
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    pub topologies: Vec<(u8, usize)>,
    /// The testnets' packet length in bytes (default nox-sphinx's `DEFAULT_PACKET_LEN`).
    #[arg(long, value_parser = testnet::parse_packet_len)]
    pub packet_len: Option<PacketLen>,
    /// Beside every phase, this many runs of the link-level simulator
    /// (`nox_anonymity::activity::simulate_substitution`) at the phase's settings, scored by the
    /// same tracer: simulated vs measured in one run (0 = none).
    #[arg(long, default_value_t = 0)]
    pub simulate: u32,
    /// Every node on a host of its own over this WAN profile (`nox testnet up --hosts --wan`;
    /// needs root): the observer's figures under WAN delay (docs/benchmarks/network.md).
    #[arg(long, value_enum)]
    pub wan: Option<nox_testnet::wan::Wan>,
}

/// Parses a testnet shape `LAYERSxNODES` (layers 2–8, 1–32 nodes per layer).
pub fn parse_shape(text: &str) -> Result<(u8, usize), String> {
    let (l, n) = text.split_once(['x', 'X', '×']).ok_or_else(|| format!("{text}: expected LAYERSxNODES, e.g. 3x3"))?;
    let layers: u8 = l.trim().parse().map_err(|e| format!("{text}: layers: {e}"))?;
    let nodes: usize = n.trim().parse().map_err(|e| format!("{text}: nodes per layer: {e}"))?;
    if !(2..=8).contains(&layers) || !(1..=32).contains(&nodes) {
        return Err(format!("{text}: layers 2–8 and 1–32 nodes per layer"));
    }
    Ok((layers, nodes))
}

/// The processing floor of the adversary's delay model, µs: what a node takes without mixing
/// (the floor `nox bench anonymity` measures and uses; a global observer calibrates it with its
/// own packets).
const PROCESSING_FLOOR_US: f64 = 300.0;
/// Bytes of an echo request body.
const ECHO_BYTES: usize = 64;
/// A setting is "near the maximum" at this share of the best mean entropy of its μ.
const NEAR_MAX: f64 = 0.9;

impl CoverArgs {
    fn resolved(&self) -> (Vec<f64>, Vec<f64>, f64) {
        let shipped = nox_client::DAEMON_COVER_RATE;
        let rates = given_or(&self.rates, self.quick, &[0.0, shipped], &[0.0, 0.5, 1.0, 2.0, shipped, 4.0, 8.0]);
        let delays = given_or(&self.delays_ms, self.quick, &[1.0], &[1.0, 10.0, 50.0]);
        (rates, delays, self.seconds.unwrap_or(if self.quick { 6.0 } else { 40.0 }))
    }
}

/// One phase: what the clients did in the window.
struct Phase {
    mu_ms: f64,
    cover_rate: f64,
    /// Requests per second of each active client.
    request_rate: f64,
    /// Which repetition of its (μ, λ_P) point this is (0-based).
    repeat: u32,
    sends: Vec<ClientSend>,
    /// Message number of each request fragment head.
    heads: HashMap<[u8; 16], u64>,
    start_us: u64,
    end_us: u64,
    rtts_ms: Vec<f64>,
    failures: u64,
    /// Packets each client handed its entry link in the window.
    per_client: Vec<u64>,
    window_s: f64,
}

/// Runs every μ and λ_P, scores them and writes the JSON.
pub fn run(args: &CoverArgs) -> Result<(), BenchError> {
    if !nox_node::observe::COMPILED_IN {
        return Err(err(format!(
            "nox bench cover captures the nodes' [observe] logs: {} (scripts/bench/run_all.sh builds one)",
            nox_node::observe::NOT_BUILT
        )));
    }
    if args.active > args.clients || args.clients < 2 {
        return Err(err("need at least 2 clients and no more active ones than clients"));
    }
    let (rates, delays, seconds) = args.resolved();
    let request_rates =
        if args.request_rates.is_empty() { vec![args.request_rate] } else { args.request_rates.clone() };
    let shapes = if args.topologies.is_empty() { vec![(3, 3)] } else { args.topologies.clone() };
    if rates.iter().chain(&delays).any(|v| !v.is_finite() || *v < 0.0)
        || request_rates.iter().any(|r| r.is_nan() || *r <= 0.0)
    {
        return Err(err("rates, delays and the request rate must be finite and not negative"));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let started = Instant::now();
    let mut rows = Vec::new();
    let packet_len = args.packet_len.unwrap_or_default();
    for &mu_ms in &delays {
        for &(layers, per_layer) in &shapes {
            let layout = Layout {
                mean_delay_ms: mu_ms,
                base_port: args.base_port,
                observe: true,
                layers,
                per_layer,
                packet_len,
                hosts: args.wan.is_some(),
                wan: args.wan.unwrap_or(Layout::default().wan),
                ..Layout::default()
            };
            let up_uptime = uptime();
            testnet::up(&args.dir, &layout).map_err(err)?;
            let result = runtime.block_on(run_phases(args, mu_ms, (&rates, &request_rates), seconds, &mut rng));
            let _ = testnet::down(&args.dir);
            let (nodes, phases) = result?;
            let logs: Vec<anon_capture::NodeLog> = testnet::nodes(&args.dir)
                .iter()
                .map(|n| anon_capture::read_node_log(&n.dir.join("observe.events")))
                .collect();
            let dropped: u64 = logs.iter().map(|l| l.dropped).sum();
            for phase in &phases {
                let heads = &phase.heads;
                let captured =
                    anon_capture::join_with(&nodes, &logs, &phase.sends, phase.start_us, phase.end_us, |h| {
                        heads.get(h).map(|&m| (m, 0))
                    });
                let mut row = score(args, phase, &captured, dropped, packet_len.bytes());
                row["layers"] = json!(layers);
                let wan = args.wan.and_then(|w| clap::ValueEnum::to_possible_value(&w));
                row["wan"] = json!(wan.map(|v| v.get_name().to_owned()));
                row["nodes_per_layer"] = json!(per_layer);
                row["uptime_at_testnet_start"] = json!(up_uptime);
                if args.simulate > 0 {
                    row["simulated"] = simulated(args, phase, &layout, seconds, &mut rng, &row);
                }
                println!(
                    "{layers}x{per_layer}, μ = {mu_ms} ms, λ_P = {}/s, {}/s requests (phase {}): {} requests ({} failed), H = {} bits ({} of log₂ {}), RTT p50 {} ms, {} GB/day up",
                    phase.cover_rate,
                    phase.request_rate,
                    phase.repeat + 1,
                    phase.rtts_ms.len(),
                    phase.failures,
                    row["entropy"]["mean_bits"],
                    row["entropy"]["share_of_log2_clients"],
                    args.clients,
                    row["rtt_ms"]["p50"],
                    row["upstream"]["measured_gb_per_day"],
                );
                if args.simulate > 0 {
                    println!("    simulated: {}", row["simulated"]);
                }
                rows.push(row);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    write(args, &rates, &delays, seconds, rows, elapsed, packet_len.bytes())
}

/// The machine's load average (`/proc/loadavg`'s first three fields), recorded with each
/// testnet: the machine is shared, and the timing of a mix depends on it.
fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Calibration tolerance of the link-level simulator against the testnet (bits, top-1), as in
/// `nox bench anonymity-scale`.
const TOLERANCE_BITS: f64 = 0.35;
const TOLERANCE_TOP1: f64 = 0.12;

/// The traffic the testnet carries besides the clients' requests and drop cover, as the shipped
/// crates set it, for the link-level simulator (issue 32's calibration): the client's share of
/// loop cover (`ClientConfig::default().loop_fraction`), the SURB reply packets per request and
/// per loop (`nox_message::surbs_needed` for an echo reply of `2 × ECHO_BYTES` at the client's
/// loss and target, on `layout`'s geometry; the exit sends one fragment per SURB up to its own
/// target, 0.999 ≥ the client's 0.99), and the nodes' loop and drop cover (`layout`'s
/// λ_L, λ_D, the node's `[cover]` defaults unless set). The testnet capture does not log the
/// exit's emission of a reply (it bypasses the logged egress), so neither does the simulation.
pub(crate) fn shipped_traffic(config: SubstitutionConfig, layout: &Layout) -> Result<SubstitutionConfig, BenchError> {
    let client = ClientConfig::default();
    let geometry =
        nox_sphinx::Geometry::with_scheme(layout.packet_len.bytes(), usize::from(layout.layers), layout.geometry)
            .map_err(err)?;
    let replies = nox_message::surbs_needed(&geometry, 2 * ECHO_BYTES, client.loss, client.target).map_err(err)?;
    Ok(SubstitutionConfig {
        loop_fraction: client.loop_fraction,
        reply_packets: u32::try_from(replies).map_err(err)?,
        reply_first_hop_observed: false,
        node_loop_rate_per_s: layout.loop_rate,
        node_drop_rate_per_s: layout.drop_rate,
        ..config
    })
}

/// The adversary's delay model of the testnet scoring ([`score`]): Exp(μ) with the processing
/// floor as its scale floor. The simulated runs are scored with the same model, so simulated and
/// measured differ only in the traffic, not in the observer.
pub(crate) fn testnet_model(mu_ms: f64) -> DelayModel {
    DelayModel { mean_delay_us: mu_ms * 1e3, processing_us: 0.0, jitter_floor_us: PROCESSING_FLOOR_US }
}

/// `args.simulate` runs of the link-level simulator at the phase's settings (clients, active,
/// request rate, λ_P, shape, μ, window, and the shipped loops, replies and node cover of
/// [`shipped_traffic`]), scored by the same tracer and delay model, against the measured row.
fn simulated(
    args: &CoverArgs,
    phase: &Phase,
    layout: &Layout,
    seconds: f64,
    rng: &mut ChaCha20Rng,
    measured: &Value,
) -> Value {
    let bare = SubstitutionConfig {
        clients: args.clients,
        active: args.active,
        request_rate_per_s: phase.request_rate,
        cover_rate_per_s: phase.cover_rate,
        layers: usize::from(layout.layers),
        width: u16::try_from(layout.per_layer).unwrap_or(u16::MAX),
        mean_delay_us: phase.mu_ms * 1e3,
        processing_us: PROCESSING_FLOOR_US,
        duration_us: (seconds * 1e6) as u64,
        ..SubstitutionConfig::default()
    };
    let config = match shipped_traffic(bare, layout) {
        Ok(config) => config,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let model = testnet_model(phase.mu_ms);
    let (mut bits, mut top1, mut messages, mut per_run) = (0.0, 0.0, 0usize, Vec::new());
    for _ in 0..args.simulate {
        let sim = simulate_substitution(&config, rng);
        let Ok(report) = sender_entropy(&sim.observation, &sim.topology, &model, Some(&sim.truth)) else { continue };
        let t = report.top1_accuracy.unwrap_or(f64::NAN);
        bits += report.mean_entropy_bits * report.messages as f64;
        top1 += t * report.messages as f64;
        messages += report.messages;
        per_run.push(round(report.mean_entropy_bits, 3));
    }
    let (bits, top1) = (bits / messages.max(1) as f64, top1 / messages.max(1) as f64);
    let (m_bits, m_top1) = (get(measured, &["entropy", "mean_bits"]), get(measured, &["entropy", "top1_accuracy"]));
    let lo = per_run.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_run.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "runs": args.simulate, "messages": messages, "config": config, "adversary_model": model,
        "mean_bits": round(bits, 3), "top1_accuracy": round(top1, 3), "per_run_bits": [round(lo, 3), round(hi, 3)],
        "difference_bits": round(bits - m_bits, 3), "difference_top1": round(top1 - m_top1, 3),
        "tolerance_bits": TOLERANCE_BITS, "tolerance_top1": TOLERANCE_TOP1,
        "within_tolerance": (bits - m_bits).abs() <= TOLERANCE_BITS && (top1 - m_top1).abs() <= TOLERANCE_TOP1,
    })
}

type Run = (Vec<(String, u8)>, Vec<Phase>);

async fn run_phases(
    args: &CoverArgs,
    mu_ms: f64,
    (rates, request_rates): (&[f64], &[f64]),
    seconds: f64,
    rng: &mut ChaCha20Rng,
) -> Result<Run, BenchError> {
    let names = anon_capture::node_names(&TestnetClient::connect(&args.dir).map_err(err)?.topology);
    let mut phases = Vec::new();
    for &request_rate in request_rates {
        for &cover_rate in rates {
            for repeat in 0..args.repeats {
                let point = (mu_ms, cover_rate, request_rate, repeat);
                phases.push(phase(args, point, seconds, &names.by_id, rng).await?);
            }
        }
    }
    Ok((names.nodes, phases))
}

/// One phase of the point `(μ ms, λ_P, requests/s, repeat index)`.
async fn phase(
    args: &CoverArgs,
    (mu_ms, cover_rate, request_rate, repeat): (f64, f64, f64, u32),
    seconds: f64,
    short_of: &HashMap<nox_sphinx::NodeId, String>,
    rng: &mut ChaCha20Rng,
) -> Result<Phase, BenchError> {
    // The daemon's client: the core's defaults (loops, parity, timeout) with λ_P set.
    let config = ClientConfig { cover_rate, ..ClientConfig::default() };
    let mut handles = Vec::new();
    let mut observed = Vec::new();
    for _ in 0..args.clients {
        let handle = client(&args.dir, config.clone()).await?;
        observed.push(handle.observe_sends());
        handles.push(handle);
    }
    // Links up and the Poisson timers running before the window opens.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for rx in &mut observed {
        while rx.try_recv().is_ok() {}
    }
    let start_us = now_us();
    let opened = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..args.active {
        let mut t = 0.0;
        loop {
            let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            t += -u.ln() / request_rate;
            if t >= seconds {
                break;
            }
            let handle = handles[c as usize].clone();
            let due = opened + Duration::from_secs_f64(t);
            let body = vec![u8::try_from(c % 251).unwrap_or(0); ECHO_BYTES];
            tasks.spawn(async move {
                tokio::time::sleep_until(due.into()).await;
                let sent = Instant::now();
                let result = handle.request(RequestBody::Echo(body.clone()), 2 * ECHO_BYTES).await;
                match result {
                    Ok(response) if response.body == body => Some(sent.elapsed().as_secs_f64() * 1e3),
                    _ => None,
                }
            });
        }
    }
    let (mut rtts_ms, mut failures) = (Vec::new(), 0u64);
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Some(rtt)) => rtts_ms.push(rtt),
            _ => failures += 1,
        }
    }
    // At least the whole request window, then the last packets' way out.
    let rest = Duration::from_secs_f64((seconds - opened.elapsed().as_secs_f64()).max(0.0));
    tokio::time::sleep(rest + anon_capture::drain_time(mu_ms)).await;
    let end_us = now_us();
    let window_s = (end_us - start_us) as f64 / 1e6;
    drop(handles);
    let mut sends = Vec::new();
    let mut heads = HashMap::new();
    let mut per_client = vec![0u64; args.clients as usize];
    for (c, rx) in observed.iter_mut().enumerate() {
        while let Ok(SentPacket { unix_us, entry, kind }) = rx.try_recv() {
            if unix_us > end_us {
                continue;
            }
            per_client[c] += 1;
            let message = match kind {
                PacketKind::Fragment { head } => {
                    let next = heads.len() as u64;
                    Some(*heads.entry(head).or_insert(next))
                }
                PacketKind::Loop | PacketKind::Drop => None,
            };
            let entry = short_of.get(&entry).cloned().unwrap_or_default();
            sends.push(ClientSend { time_us: unix_us, client: c as u32, entry, message });
        }
    }
    sends.sort_by_key(|s| s.time_us);
    // The clients' links close with their handles; let the nodes settle before the next phase.
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(Phase {
        mu_ms,
        cover_rate,
        request_rate,
        repeat,
        sends,
        heads,
        start_us,
        end_us,
        rtts_ms,
        failures,
        per_client,
        window_s,
    })
}

/// Share of clients a volume classifier gets right when it calls the `active` busiest
/// clients active (the first `active` indices are the active ones): 1.0 when active clients
/// send more (cover off, or additive cover), around 0.5 for 5 of 10 when every client sends at
/// the same rate (substitution), as a coin would.
fn volume_classifier_accuracy(per_client: &[u64], active: usize) -> f64 {
    let mut order: Vec<usize> = (0..per_client.len()).collect();
    order.sort_by(|a, b| per_client[*b].cmp(&per_client[*a]).then(a.cmp(b)));
    let called: Vec<bool> = {
        let mut called = vec![false; per_client.len()];
        for &i in order.iter().take(active) {
            called[i] = true;
        }
        called
    };
    let right = called.iter().enumerate().filter(|(i, c)| **c == (*i < active)).count();
    right as f64 / per_client.len().max(1) as f64
}

fn score(args: &CoverArgs, phase: &Phase, c: &Captured, dropped: u64, packet_len: usize) -> Value {
    let model = testnet_model(phase.mu_ms);
    let max_bits = f64::from(args.clients).log2();
    let entropy = sender_entropy(&c.observation, &c.topology, &model, Some(&c.truth));
    let mut rtts = phase.rtts_ms.clone();
    rtts.sort_by(f64::total_cmp);
    let active = args.active as usize;
    let rate = |range: std::ops::Range<usize>| {
        let n = range.len().max(1) as f64;
        phase.per_client[range].iter().sum::<u64>() as f64 / n / phase.window_s.max(1e-9)
    };
    let (active_rate, idle_rate) = (rate(0..active), rate(active..phase.per_client.len()));
    let all_rate = rate(0..phase.per_client.len());
    let per_day = |packets_per_s: f64| round3(packets_per_s * packet_len as f64 * 86_400.0 / 1e9);
    json!({
        "mu_ms": phase.mu_ms, "cover_rate": phase.cover_rate, "request_rate": phase.request_rate, "repeat": phase.repeat,
        "clients": args.clients, "active_clients": args.active,
        "requests": phase.rtts_ms.len() as u64 + phase.failures, "request_failures": phase.failures,
        "messages_sent": c.sent, "messages_delivered_observed": c.delivered, "events": c.observation.events.len(),
        "unknown_node_records": c.unknown_nodes, "observation_records_dropped": dropped,
        "distinct_request_heads": phase.heads.len(),
        "adversary_model": model,
        "entropy": entropy.as_ref().map(|e| json!({
            "messages": e.messages, "untraceable": e.untraceable, "clients_seen": e.clients,
            "mean_bits": round(e.mean_entropy_bits, 3), "median_bits": round(e.median_entropy_bits, 3),
            "min_bits": round(e.min_entropy_bits, 3),
            "max_possible_bits": round(max_bits, 3),
            "share_of_log2_clients": round(e.mean_entropy_bits / max_bits, 3),
            "effective_anonymity_set": round(e.effective_anonymity_set, 2),
            "mean_p_true_sender": e.mean_true_sender_probability.map(|p| round(p, 3)),
            "top1_accuracy": e.top1_accuracy.map(|p| round(p, 3)),
        })).unwrap_or_else(|e| json!({ "error": e.to_string() })),
        "rtt_ms": json!({
            "n": rtts.len(), "p50": percentile(&rtts, 0.5).map(round3), "p90": percentile(&rtts, 0.9).map(round3),
            "p99": percentile(&rtts, 0.99).map(round3), "max": rtts.last().copied().map(round3),
        }),
        "upstream": json!({
            "packets_per_s_active": round3(active_rate), "packets_per_s_idle": round3(idle_rate),
            "measured_gb_per_day": per_day(all_rate),
            "lambda_gb_per_day": per_day(phase.cover_rate),
            "packet_bytes": packet_len,
        }),
        "volume_classifier_accuracy": round3(volume_classifier_accuracy(&phase.per_client, active)),
        "window_s": round3(phase.window_s),
    })
}

fn get(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(f64::NAN)
}

/// Mean, minimum and maximum of the finite values (`None` if there are none).
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = finite.len();
    (n > 0).then(|| {
        let mean = finite.iter().sum::<f64>() / n as f64;
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (mean, lo, hi)
    })
}

/// Per μ: the smallest λ_P whose mean entropy is at least [`NEAR_MAX`] of the best of that μ.
pub fn smallest_near_max(points: &[(f64, f64)]) -> Option<f64> {
    let best = points.iter().map(|p| p.1).filter(|h| h.is_finite()).fold(f64::NAN, f64::max);
    if !best.is_finite() || best <= 0.0 {
        return None;
    }
    let mut near: Vec<f64> = points.iter().filter(|p| p.1.is_finite() && p.1 >= NEAR_MAX * best).map(|p| p.0).collect();
    near.sort_by(f64::total_cmp);
    near.first().copied()
}

fn write(
    args: &CoverArgs,
    rates: &[f64],
    delays: &[f64],
    seconds: f64,
    rows: Vec<Value>,
    elapsed_s: f64,
    packet_len: usize,
) -> Result<(), BenchError> {
    let daemon = nox_client::DAEMON_COVER_RATE;
    let mut per_mu = Vec::new();
    let (mut entropy, mut rtt) = (Vec::new(), Vec::new());
    for &mu in delays {
        // One point per λ_P: the mean over its phases, with the range.
        let (mut x, mut h, mut p50, mut detail) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &rate in rates {
            let phases: Vec<&Value> =
                rows.iter().filter(|r| get(r, &["mu_ms"]) == mu && get(r, &["cover_rate"]) == rate).collect();
            let of = |path: &[&str]| spread(&phases.iter().map(|r| get(r, path)).collect::<Vec<_>>());
            let (bits, top1, rtt) =
                (of(&["entropy", "mean_bits"]), of(&["entropy", "top1_accuracy"]), of(&["rtt_ms", "p50"]));
            x.push(rate);
            h.push(bits.map_or(f64::NAN, |b| b.0));
            p50.push(rtt.map_or(f64::NAN, |r| r.0));
            let range = |v: Option<(f64, f64, f64)>, digits| {
                v.map(|(mean, lo, hi)| json!({ "mean": round(mean, digits), "min": round(lo, digits), "max": round(hi, digits) }))
            };
            detail.push(json!({ "cover_rate": rate, "phases": phases.len(), "mean_bits": range(bits, 3),
                "top1_accuracy": range(top1, 3), "rtt_p50_ms": range(rtt, 1) }));
        }
        let points: Vec<(f64, f64)> = x.iter().copied().zip(h.iter().copied()).collect();
        let best = h.iter().copied().filter(|v| v.is_finite()).fold(f64::NAN, f64::max);
        let at_daemon = points.iter().find(|p| p.0 == daemon).map(|p| p.1);
        per_mu.push(json!({
            "mu_ms": mu,
            "best_mean_bits": round(best, 3),
            "best_share_of_log2_clients": round(best / f64::from(args.clients).log2(), 3),
            "smallest_rate_near_best": smallest_near_max(&points),
            "daemon_rate": daemon,
            "daemon_share_of_best": at_daemon.map(|v| round(v / best, 3)),
            "points": detail,
        }));
        entropy.push(series(&format!("μ = {mu} ms"), &x, &h));
        rtt.push(series(&format!("μ = {mu} ms"), &x, &p50));
    }
    let bandwidth_x: Vec<f64> = rates.to_vec();
    let bandwidth_y: Vec<f64> = rates.iter().map(|r| r * packet_len as f64 * 86_400.0 / 1e9).collect();
    let parameters = json!({
        "testnet": "nox testnet up defaults (3 layers × 3 nodes, node cover λ_L = λ_D = 0.05/s, chain registry) with [observe]; one testnet per μ",
        "client": "nox-client as the daemon runs it: ClientConfig::default() with cover_rate = λ_P (substitution: real packets take Poisson slots; loop_fraction of the rest are loops)",
        "clients": args.clients, "active_clients": args.active,
        "requests": format!("echo of {ECHO_BYTES} B, Poisson {} /s per active client", args.request_rate),
        "seconds_per_phase": seconds, "quick": args.quick, "seed": args.seed, "repeats": args.repeats,
        "adversary": "global passive observer of every link (client sends from the clients' own send reports, node departures from [observe]); sender entropy as nox bench anonymity (Exp(μ) likelihood, processing floor below)",
        "processing_floor_us": PROCESSING_FLOOR_US,
        "near_best": NEAR_MAX,
        "packet_len": packet_len,
        "request_rates": args.request_rates, "topologies": args.topologies.iter().map(|(l, n)| format!("{l}x{n}")).collect::<Vec<_>>(),
        "simulator_runs_per_phase": args.simulate,
        "wall_seconds": round(elapsed_s, 1),
    });
    let summary = json!({ "per_mu": per_mu, "daemon_cover_rate": daemon });
    let out_dir =
        args.out.as_ref().and_then(|p| p.parent().map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("bench/data"));
    let name = args
        .out
        .as_ref()
        .and_then(|p| p.file_stem())
        .map_or_else(|| "cover".to_string(), |s| s.to_string_lossy().into_owned());
    let mut charts = vec![
        line(
            "entropy",
            "Sender entropy vs client cover λ_P (real testnet, GPA)",
            "λ_P (packets/s per client)",
            "mean bits",
        )
        .with(&name, entropy),
        line("rtt", "Echo round trip vs client cover λ_P", "λ_P (packets/s per client)", "p50 ms").with(&name, rtt),
        line("bandwidth", "Client upstream vs λ_P (one packet length)", "λ_P (packets/s per client)", "GB/day")
            .with(&name, vec![series("λ_P × packet × 86,400 s", &bandwidth_x, &bandwidth_y)]),
    ];
    charts.extend(sweep_charts(args, &rows, rates, delays, &name));
    write_experiment(&out_dir, &name, parameters, json!(rows), summary, charts)
}

/// Mean of `path` over the rows that match `keep`.
fn mean_of(rows: &[Value], keep: impl Fn(&Value) -> bool, path: &[&str]) -> f64 {
    spread(&rows.iter().filter(|r| keep(r)).map(|r| get(r, path)).collect::<Vec<_>>()).map_or(f64::NAN, |s| s.0)
}

/// Entropy and the volume classifier against the request rate (with `--request-rates`), and
/// entropy against the layer width and count (with `--topologies`).
fn sweep_charts(args: &CoverArgs, rows: &[Value], rates: &[f64], delays: &[f64], name: &str) -> Vec<Value> {
    let mut charts = Vec::new();
    if args.request_rates.len() > 1 {
        let (mut h, mut vol) = (Vec::new(), Vec::new());
        for &mu in delays {
            for &rate in rates {
                let at = |path: &[&str]| -> Vec<f64> {
                    args.request_rates
                        .iter()
                        .map(|&q| {
                            mean_of(
                                rows,
                                |r| {
                                    get(r, &["mu_ms"]) == mu
                                        && get(r, &["cover_rate"]) == rate
                                        && get(r, &["request_rate"]) == q
                                },
                                path,
                            )
                        })
                        .collect()
                };
                let label = format!("μ = {mu} ms, λ_P = {rate}/s");
                h.push(series(&label, &args.request_rates, &at(&["entropy", "mean_bits"])));
                vol.push(series(&label, &args.request_rates, &at(&["volume_classifier_accuracy"])));
            }
        }
        charts.push(
            line(
                "entropy-vs-request-rate",
                "Sender entropy vs each active client's request rate (real testnet, GPA)",
                "requests/s per active client",
                "mean bits",
            )
            .with(name, h),
        );
        charts.push(
            line(
                "volume-vs-request-rate",
                "Volume classifier accuracy vs request rate (0.5 = chance)",
                "requests/s per active client",
                "accuracy",
            )
            .with(name, vol),
        );
    }
    if args.topologies.len() > 1 {
        let mut by_width = Vec::new();
        let mut by_layers = Vec::new();
        for &mu in delays {
            let point = |l: u8, n: usize| {
                mean_of(
                    rows,
                    |r| {
                        get(r, &["mu_ms"]) == mu
                            && get(r, &["layers"]) == f64::from(l)
                            && get(r, &["nodes_per_layer"]) == n as f64
                    },
                    &["entropy", "mean_bits"],
                )
            };
            let mut widths: Vec<usize> = args.topologies.iter().filter(|t| t.0 == 3).map(|t| t.1).collect();
            widths.sort_unstable();
            let mut layers: Vec<u8> = args.topologies.iter().filter(|t| t.1 == 3).map(|t| t.0).collect();
            layers.sort_unstable();
            let wy: Vec<f64> = widths.iter().map(|&n| point(3, n)).collect();
            let ly: Vec<f64> = layers.iter().map(|&l| point(l, 3)).collect();
            let wx: Vec<f64> = widths.iter().map(|&n| n as f64).collect();
            let lx: Vec<f64> = layers.iter().map(|&l| f64::from(l)).collect();
            by_width.push(series(&format!("3 layers, μ = {mu} ms"), &wx, &wy));
            by_layers.push(series(&format!("3 nodes per layer, μ = {mu} ms"), &lx, &ly));
        }
        charts.push(
            line(
                "entropy-vs-width",
                "Sender entropy vs nodes per layer (real testnet, GPA)",
                "nodes per layer",
                "mean bits",
            )
            .with(name, by_width),
        );
        charts.push(
            line("entropy-vs-layers", "Sender entropy vs layers (real testnet, GPA)", "layers", "mean bits")
                .with(name, by_layers),
        );
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_gets_the_shipped_loops_replies_and_node_cover() {
        // Issue 32: the calibrated simulator runs the traffic the testnet's clients and nodes
        // send, read from their crates (a change there moves the simulation with it).
        let layout = Layout::default();
        let bare = SubstitutionConfig::default();
        let c = shipped_traffic(bare, &layout).unwrap();
        assert_eq!(c.loop_fraction, ClientConfig::default().loop_fraction);
        assert!(c.loop_fraction > 0.0);
        // A small echo reply: one data shard and one parity at loss 0.05, target 0.99.
        assert_eq!(c.reply_packets, 2);
        assert!(!c.reply_first_hop_observed, "the capture does not log the exit's reply emission");
        assert_eq!((c.node_loop_rate_per_s, c.node_drop_rate_per_s), (layout.loop_rate, layout.drop_rate));
        assert_eq!((c.clients, c.mean_delay_us), (bare.clients, bare.mean_delay_us), "the rest is kept");
        // Simulated and measured rows are scored with one delay model.
        assert_eq!(testnet_model(50.0).processing_us, 0.0);
        assert_eq!(testnet_model(50.0).jitter_floor_us, PROCESSING_FLOOR_US);
    }

    #[test]
    fn the_smallest_rate_near_the_best_is_picked() {
        let points = [(0.0, 0.5), (0.5, 1.8), (1.0, 2.7), (2.0, 2.95), (4.0, 3.0)];
        assert_eq!(smallest_near_max(&points), Some(1.0));
        assert_eq!(smallest_near_max(&[(0.0, f64::NAN)]), None);
        assert_eq!(smallest_near_max(&[(0.0, 0.0), (1.0, 0.0)]), None);
    }

    #[test]
    fn the_volume_classifier_is_right_only_when_volumes_differ() {
        assert_eq!(volume_classifier_accuracy(&[9, 8, 7, 1, 2, 3], 3), 1.0);
        // Equal volumes: ties broken by index, as good as a guess that happens to be right;
        // swapped volumes: always wrong.
        assert_eq!(volume_classifier_accuracy(&[1, 2, 3, 9, 8, 7], 3), 0.0);
        assert_eq!(volume_classifier_accuracy(&[5, 5, 9, 5], 2), 0.5);
    }

    #[test]
    fn repeated_phases_average_with_their_range() {
        assert_eq!(spread(&[2.0, 1.0, f64::NAN, 3.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[f64::NAN]), None);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn shapes_parse_and_bounds_hold() {
        assert_eq!(parse_shape("3x5"), Ok((3, 5)));
        assert_eq!(parse_shape("4×3"), Ok((4, 3)));
        assert!(parse_shape("1x3").is_err(), "one layer is no mixnet");
        assert!(parse_shape("3x0").is_err());
        assert!(parse_shape("33").is_err());
    }

    #[test]
    fn quick_and_full_sweeps() {
        let mut args = CoverArgs {
            quick: true,
            rates: vec![],
            delays_ms: vec![],
            clients: 10,
            active: 5,
            request_rate: 0.25,
            seconds: None,
            base_port: 25_000,
            dir: ".x".into(),
            out: None,
            seed: 1,
            repeats: 1,
            request_rates: vec![],
            topologies: vec![],
            packet_len: None,
            simulate: 0,
            wan: None,
        };
        assert_eq!(args.resolved(), (vec![0.0, nox_client::DAEMON_COVER_RATE], vec![1.0], 6.0));
        args.quick = false;
        let (rates, delays, seconds) = args.resolved();
        assert!(rates.contains(&nox_client::DAEMON_COVER_RATE), "the shipped rate is on the curve");
        assert_eq!((delays[0], seconds), (1.0, 40.0));
    }
}
