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
//! request). Joined with the node logs ([`crate::harness::capture`]), the adversary's sender entropy is
//! scored by `nox-anonymity` as in `nox bench anonymity`. Beside it: the request round trip
//! (what the user waits) and the client's upstream bytes (what the user pays).
//!
//! Files: this one holds the options and the run over the μ values; `cover/` the
//! measurement on the testnet (`phases.rs`), its scoring (`score.rs`), the link-level
//! simulator run beside it (`simulated.rs`) and the report (`report.rs`).

use std::{
    collections::HashMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use nox_anonymity::activity::{SubstitutionConfig, simulate_substitution};
use nox_anonymity::sender_entropy;
use nox_client::{ClientConfig, PacketKind, SentPacket};
use nox_message::RequestBody;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::harness::{
    BenchError, ECHO_BYTES, PROCESSING_FLOOR_US,
    capture::{self, Captured, ClientSend, now_us},
    client, err, given_or, line, percentile, round, round3, series, shipped_traffic, spread, testnet_model,
    write_experiment,
};
use nox_testnet::{self as testnet, Layout, TestnetClient};
use nox_topology::PacketLen;

mod phases;
mod report;
mod score;
mod simulated;
use phases::*;
use report::*;
use score::*;
use simulated::*;

pub use score::smallest_near_max;

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
            let logs: Vec<capture::NodeLog> = testnet::nodes(&args.dir)
                .iter()
                .map(|n| capture::read_node_log(&n.dir.join("observe.events")))
                .collect();
            let dropped: u64 = logs.iter().map(|l| l.dropped).sum();
            for phase in &phases {
                let heads = &phase.heads;
                let captured = capture::join_with(&nodes, &logs, &phase.sends, phase.start_us, phase.end_us, |h| {
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

#[cfg(test)]
mod tests {
    use super::*;

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
