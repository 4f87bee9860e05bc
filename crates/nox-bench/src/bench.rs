//! `nox bench ...`: measurement tooling that writes JSON with the machine
//! description, commit and parameters.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::machine;

/// `nox bench` subcommands.
#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// FEC recovery curve: Theorem 1, no-FEC delivery and a Monte Carlo
    /// measurement through the real encoder and reassembler, over a sweep of
    /// loss rates and parity ratios.
    FecCurve {
        /// Data shards d.
        #[arg(long, default_value_t = 11)]
        data_shards: usize,
        /// Loss rates to sweep (fractions).
        #[arg(long, value_delimiter = ',', default_value = "0,0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5")]
        losses: Vec<f64>,
        /// Parity ratios r (p = ceil(d·r)), in per mille.
        #[arg(long, value_delimiter = ',', default_value = "0,100,200,300,500,700,1000")]
        ratios_per_mille: Vec<u32>,
        /// Monte Carlo trials per point (0: theory only).
        #[arg(long, default_value_t = 1000)]
        trials: u64,
        /// RNG seed, recorded in the output.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output JSON path.
        #[arg(long, default_value = "bench/data/fec_curve.json")]
        out: PathBuf,
    },
    /// Throughput and latency of the multi-process testnet (9 nodes, 3
    /// layers): a sweep of offered rates, one-way latency via the exits'
    /// measurement sink, RSS idle and under load.
    Testnet(crate::bench_net::NetworkBenchArgs),
    /// The same testnet on loopback and on many hosts over a WAN profile (a network namespace
    /// per node, the userspace delay relay): latency, throughput at 0 % loss, SURB round trips
    /// (bench/data/network-hosts.json; needs root).
    Hosts(crate::bench_hosts::HostsBenchArgs),
    /// Throughput and latency CDF of real pipelines chained in one process
    /// (3 layers, no sockets) over a sweep of offered rates
    /// (bench/data/in-process.json).
    InProcess(crate::bench_inprocess::InProcessArgs),
    /// Deterministic workload for the callgrind regression gate
    /// (scripts/bench/regression.sh): Sphinx hops, packet creation, FEC.
    HopInstructions(crate::bench_gate::GateArgs),
    /// SURB round-trip time of echo requests, with and without FEC,
    /// sequential and concurrent (bench/data/surb-rtt.json).
    SurbRtt(crate::bench_surb::SurbRttArgs),
    /// Delivery of multi-fragment replies under injected reply loss, vs
    /// Theorem 1 and vs no FEC (bench/data/reply-loss.json).
    ReplyLoss(crate::bench_surb::ReplyLossArgs),
    /// HTTP fetch through the mixnet vs a direct fetch
    /// (bench/data/http-overhead.json).
    HttpOverhead(crate::bench_http::HttpOverheadArgs),
    /// SOCKS5 CONNECT streams through the mixnet vs direct: time to first
    /// byte, one and 16 concurrent downloads, an upload; cover off and the
    /// shipped default cover (bench/data/streams.json).
    Streams(crate::bench_streams::StreamsArgs),
    /// One-way latency and SURB RTT vs the mean mixing delay
    /// (bench/data/latency-vs-delay.json).
    LatencyVsDelay(crate::bench_sweeps::LatencyVsDelayArgs),
    /// SURB RTT and completed requests/s vs requests in flight
    /// (bench/data/concurrency.json).
    Concurrency(crate::bench_sweeps::ConcurrencyArgs),
    /// Startup, RSS and throughput vs testnet size (bench/data/scaling.json).
    Scaling(crate::bench_sweeps::ScalingArgs),
    /// Anonymity scored from what a global passive adversary of the real
    /// testnet sees (`[observe]` capture): sender entropy vs μ and users,
    /// unlinkability, timing correlation, per-node delays, client cover.
    Anonymity(crate::bench_anonymity::AnonymityArgs),
    /// Attack simulations (nox-anonymity adversary models): n−1 with PoW
    /// cost, intersection over epochs, compromised nodes.
    Attacks(crate::bench_attacks::AttackArgs),
    /// The shielded pool's anonymity from what the chain shows (simulation): deposit→withdrawal
    /// linking by amount and time, and the input anonymity set, per wallet policy and pool size
    /// (bench/data/pool-anonymity.json).
    PoolAnonymity(crate::bench_pool_anonymity::PoolAnonymityArgs),
    /// Sender anonymity at 100–10,000 users per client cover profile and the statistical
    /// disclosure attack over days (simulation, calibrated against the testnet's figures;
    /// bench/data/anonymity-scale.json).
    AnonymityScale(crate::bench_disclosure::AnonymityScaleArgs),
    /// FEC (one round) vs ARQ (retransmission rounds) for an m-fragment reply.
    FecArq(crate::bench_attacks::FecArqArgs),
    /// The testnet as shipped under load while it is broken on purpose: a node SIGKILLed and
    /// restarted every minute, loss and delay on every link, the directory killed, the chain's
    /// RPC frozen; reply delivery, replays across restarts, RSS slope (bench/data/soak.json;
    /// needs a `nox` built with `--features chaos`).
    Soak(crate::bench_soak::SoakArgs),
    /// What client cover traffic buys and costs: sender entropy from a global observer's view,
    /// request round trip and upstream bytes vs λ_P (and μ), with real `nox-client`s on the
    /// testnet (needs the `observe` build).
    Cover(crate::bench_cover::CoverArgs),
    /// What each client cover profile (`nox client --profile`) costs: upstream bytes per
    /// minute idle and in one session of requests, per day, and the session's round trip
    /// (bench/data/cover-profiles.json).
    Profiles(crate::bench_profiles::ProfilesArgs),
    /// Topology refresh cost from the on-chain registry (RPC calls, bytes, time, eth_call gas)
    /// for 9, 100 and 1,000 nodes registered on Anvil (bench/data/registry.json).
    Registry(crate::bench_registry::RegistryArgs),
    /// An anonymous paid transaction end to end on real processes: deposit, gas-paid action and
    /// private Uniswap swap through the mixnet and an exit's relayer, latency by part, gas and
    /// the relayer's realised margin (bench/data/defi.json).
    Defi(crate::bench_defi::DefiArgs),
    /// A relayer flooded with bundles that cost it work, while an honest client asks for
    /// quotes: quote latency and answered fraction with and without the flood
    /// (bench/data/relayer-flood.json).
    RelayerFlood(crate::bench_relayer_flood::RelayerFloodArgs),
    /// Packet length trade-offs (issue 32): cover bytes/day, RTT, SURBs, stream bounds,
    /// per-hop CPU per geometry (bench/data/packet-size.json).
    PacketSize(crate::bench_packet_size::PacketSizeArgs),
    /// The frontier of anonymity, cost and round trip over λ_P × μ; the defaults' choice
    /// (bench/data/frontier.json).
    Frontier(crate::bench_frontier::FrontierArgs),
    /// Collect Criterion results (median and 95% interval of every benchmark
    /// under a group directory) into one JSON file with the machine description.
    CriterionReport {
        /// Criterion output directory, e.g. `$CARGO_TARGET_DIR/criterion`.
        #[arg(long)]
        criterion_dir: PathBuf,
        /// Only benchmark groups whose name starts with one of these.
        #[arg(long, value_delimiter = ',')]
        groups: Vec<String>,
        /// The command that produced the results (recorded verbatim).
        #[arg(long)]
        command: String,
        /// Skip results older than this Unix time (stale runs of renamed
        /// or filtered-out benchmarks).
        #[arg(long, default_value_t = 0)]
        since_unix: u64,
        /// Output JSON path.
        #[arg(long)]
        out: PathBuf,
    },
}

/// Errors of the bench tooling.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The experiment could not run.
    #[error("{0}")]
    Failed(String),
    /// A Criterion estimates file is not what we expect.
    #[error("{0}: unexpected Criterion estimates format")]
    Format(PathBuf),
}

/// Runs one bench subcommand.
pub fn run(command: &BenchCommand) -> Result<(), BenchError> {
    match command {
        BenchCommand::Testnet(args) => crate::bench_net::run(args),
        BenchCommand::Hosts(args) => crate::bench_hosts::run(args),
        BenchCommand::InProcess(args) => crate::bench_inprocess::run(args),
        BenchCommand::HopInstructions(args) => crate::bench_gate::run(args),
        BenchCommand::SurbRtt(args) => crate::bench_surb::surb_rtt(args),
        BenchCommand::ReplyLoss(args) => crate::bench_surb::reply_loss(args),
        BenchCommand::HttpOverhead(args) => crate::bench_http::run(args),
        BenchCommand::Streams(args) => crate::bench_streams::run(args),
        BenchCommand::Soak(args) => crate::bench_soak::run(args),
        BenchCommand::Cover(args) => crate::bench_cover::run(args),
        BenchCommand::Profiles(args) => crate::bench_profiles::run(args),
        BenchCommand::LatencyVsDelay(args) => crate::bench_sweeps::latency_vs_delay(args),
        BenchCommand::Concurrency(args) => crate::bench_sweeps::concurrency(args),
        BenchCommand::Scaling(args) => crate::bench_sweeps::scaling(args),
        BenchCommand::Anonymity(args) => crate::bench_anonymity::run(args),
        BenchCommand::Attacks(args) => crate::bench_attacks::run_attacks(args),
        BenchCommand::FecArq(args) => crate::bench_attacks::run_fec_arq(args),
        BenchCommand::PoolAnonymity(args) => crate::bench_pool_anonymity::run(args),
        BenchCommand::AnonymityScale(args) => crate::bench_disclosure::run(args),
        BenchCommand::Registry(args) => crate::bench_registry::run(args),
        BenchCommand::Defi(args) => crate::bench_defi::run(args),
        BenchCommand::RelayerFlood(args) => crate::bench_relayer_flood::run(args),
        BenchCommand::PacketSize(args) => crate::bench_packet_size::run(args),
        BenchCommand::Frontier(args) => crate::bench_frontier::run(args),
        BenchCommand::FecCurve { data_shards, losses, ratios_per_mille, trials, seed, out } => {
            let ratios = ratios_per_mille
                .iter()
                .map(|&r| nox_fec::ParityRatio::per_mille(r))
                .collect::<Result<Vec<_>, _>>()
                .map_err(crate::bench_common::err)?;
            let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(*seed);
            let started = std::time::Instant::now();
            let curve = nox_fec::recovery_curve(*data_shards, losses, &ratios, *trials, &mut rng)
                .map_err(crate::bench_common::err)?;
            let report = json!({
                "kind": "fec-recovery-curve",
                "parameters": { "data_shards": data_shards, "losses": losses,
                    "ratios_per_mille": ratios_per_mille, "trials_per_point": trials, "seed": seed },
                "machine": machine::describe(),
                "elapsed_seconds": started.elapsed().as_secs_f64(),
                "curve": curve,
            });
            write_json(out, &report)?;
            println!("wrote {} ({} points)", out.display(), curve.points.len());
            Ok(())
        }
        BenchCommand::CriterionReport { criterion_dir, groups, command, since_unix, out } => {
            let results = collect(criterion_dir, groups, *since_unix)?;
            let report = json!({
                "kind": "criterion-report",
                "command": command,
                "machine": machine::describe(),
                "unit": "ns",
                "results": results,
            });
            write_json(out, &report)?;
            println!("wrote {} ({} benchmarks)", out.display(), report["results"].as_array().map_or(0, Vec::len));
            Ok(())
        }
    }
}

/// Reads `<dir>/<group>/<bench>/new/estimates.json` for every benchmark.
fn collect(dir: &Path, groups: &[String], since_unix: u64) -> Result<Vec<Value>, BenchError> {
    let mut results = Vec::new();
    for group in sorted_dirs(dir)? {
        let group_name = file_name(&group);
        if !groups.is_empty() && !groups.iter().any(|g| group_name.starts_with(g.as_str())) {
            continue;
        }
        for bench in sorted_dirs(&group)? {
            let estimates = bench.join("new").join("estimates.json");
            if !estimates.exists() || modified_unix(&estimates) < since_unix {
                continue;
            }
            let text = std::fs::read_to_string(&estimates)
                .map_err(|source| BenchError::Io { path: estimates.clone(), source })?;
            let value: Value = serde_json::from_str(&text).map_err(|_| BenchError::Format(estimates.clone()))?;
            let median = &value["median"];
            let point = median["point_estimate"].as_f64().ok_or_else(|| BenchError::Format(estimates.clone()))?;
            results.push(json!({
                "group": group_name,
                "benchmark": file_name(&bench),
                "median_ns": point,
                "median_ci95_ns": [median["confidence_interval"]["lower_bound"], median["confidence_interval"]["upper_bound"]],
                "mean_ns": value["mean"]["point_estimate"],
            }));
        }
    }
    Ok(results)
}

fn modified_unix(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let entries = std::fs::read_dir(dir).map_err(|source| BenchError::Io { path: dir.to_path_buf(), source })?;
    let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Writes pretty JSON, creating parent directories.
pub fn write_json(path: &Path, value: &Value) -> Result<(), BenchError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| BenchError::Io { path: parent.to_path_buf(), source })?;
    }
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(|source| BenchError::Io { path: path.to_path_buf(), source })
}
