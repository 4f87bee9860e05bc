//! `nox bench ...`: the top layer — the subcommands (their options are the experiments'
//! `clap::Args`) and the dispatch to [`crate::experiments`]. Nothing here measures anything.

use std::path::PathBuf;

pub use crate::harness::BenchError;

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
    Testnet(crate::experiments::net::NetworkBenchArgs),
    /// The same testnet on loopback and on many hosts over a WAN profile (a network namespace
    /// per node, the userspace delay relay): latency, throughput at 0 % loss, SURB round trips
    /// (bench/data/network-hosts.json; needs root).
    Hosts(crate::experiments::hosts::HostsBenchArgs),
    /// Throughput and latency CDF of real pipelines chained in one process
    /// (3 layers, no sockets) over a sweep of offered rates
    /// (bench/data/in-process.json).
    InProcess(crate::experiments::inprocess::InProcessArgs),
    /// Deterministic workload for the callgrind regression gate
    /// (scripts/bench/regression.sh): Sphinx hops, packet creation, FEC.
    HopInstructions(crate::experiments::gate::GateArgs),
    /// SURB round-trip time of echo requests, with and without FEC,
    /// sequential and concurrent (bench/data/surb-rtt.json).
    SurbRtt(crate::experiments::surb::SurbRttArgs),
    /// Delivery of multi-fragment replies under injected reply loss, vs
    /// Theorem 1 and vs no FEC (bench/data/reply-loss.json).
    ReplyLoss(crate::experiments::surb::ReplyLossArgs),
    /// HTTP fetch through the mixnet vs a direct fetch
    /// (bench/data/http-overhead.json).
    HttpOverhead(crate::experiments::http::HttpOverheadArgs),
    /// SOCKS5 CONNECT streams through the mixnet vs direct: time to first
    /// byte, one and 16 concurrent downloads, an upload; cover off and the
    /// shipped default cover (bench/data/streams.json).
    Streams(crate::experiments::streams::StreamsArgs),
    /// One-way latency and SURB RTT vs the mean mixing delay
    /// (bench/data/latency-vs-delay.json).
    LatencyVsDelay(crate::experiments::sweeps::LatencyVsDelayArgs),
    /// SURB RTT and completed requests/s vs requests in flight
    /// (bench/data/concurrency.json).
    Concurrency(crate::experiments::sweeps::ConcurrencyArgs),
    /// Startup, RSS and throughput vs testnet size (bench/data/scaling.json).
    Scaling(crate::experiments::sweeps::ScalingArgs),
    /// Anonymity scored from what a global passive adversary of the real
    /// testnet sees (`[observe]` capture): sender entropy vs μ and users,
    /// unlinkability, timing correlation, per-node delays, client cover.
    Anonymity(crate::experiments::anonymity::AnonymityArgs),
    /// Attack simulations (nox-anonymity adversary models): n−1 with PoW
    /// cost, intersection over epochs, compromised nodes.
    Attacks(crate::experiments::attacks::AttackArgs),
    /// The shielded pool's anonymity from what the chain shows (simulation): deposit→withdrawal
    /// linking by amount and time, and the input anonymity set, per wallet policy and pool size
    /// (bench/data/pool-anonymity.json).
    PoolAnonymity(crate::experiments::pool_anonymity::PoolAnonymityArgs),
    /// Sender anonymity at 100–10,000 users per client cover profile and the statistical
    /// disclosure attack over days (simulation, calibrated against the testnet's figures;
    /// bench/data/anonymity-scale.json).
    AnonymityScale(crate::experiments::disclosure::AnonymityScaleArgs),
    /// FEC (one round) vs ARQ (retransmission rounds) for an m-fragment reply.
    FecArq(crate::experiments::attacks::FecArqArgs),
    /// The testnet as shipped under load while it is broken on purpose: a node SIGKILLed and
    /// restarted every minute, loss and delay on every link, the directory killed, the chain's
    /// RPC frozen; reply delivery, replays across restarts, RSS slope (bench/data/soak.json;
    /// needs a `nox` built with `--features chaos`).
    Soak(crate::experiments::soak::SoakArgs),
    /// What client cover traffic buys and costs: sender entropy from a global observer's view,
    /// request round trip and upstream bytes vs λ_P (and μ), with real `nox-client`s on the
    /// testnet (needs the `observe` build).
    Cover(crate::experiments::cover::CoverArgs),
    /// What each client cover profile (`nox client --profile`) costs: upstream bytes per
    /// minute idle and in one session of requests, per day, and the session's round trip
    /// (bench/data/cover-profiles.json).
    Profiles(crate::experiments::profiles::ProfilesArgs),
    /// Topology refresh cost from the on-chain registry (RPC calls, bytes, time, eth_call gas)
    /// for 9, 100 and 1,000 nodes registered on Anvil (bench/data/registry.json).
    Registry(crate::experiments::registry::RegistryArgs),
    /// An anonymous paid transaction end to end on real processes: deposit, gas-paid action and
    /// private Uniswap swap through the mixnet and an exit's relayer, latency by part, gas and
    /// the relayer's realised margin (bench/data/defi.json).
    Defi(crate::experiments::defi::DefiArgs),
    /// A relayer flooded with bundles that cost it work, while an honest client asks for
    /// quotes: quote latency and answered fraction with and without the flood
    /// (bench/data/relayer-flood.json).
    RelayerFlood(crate::experiments::relayer_flood::RelayerFloodArgs),
    /// Packet length trade-offs (issue 32): cover bytes/day, RTT, SURBs, stream bounds,
    /// per-hop CPU per geometry (bench/data/packet-size.json).
    PacketSize(crate::experiments::packet_size::PacketSizeArgs),
    /// The frontier of anonymity, cost and round trip over λ_P × μ; the defaults' choice
    /// (bench/data/frontier.json).
    Frontier(crate::experiments::frontier::FrontierArgs),
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

/// Runs one bench subcommand.
pub fn run(command: &BenchCommand) -> Result<(), BenchError> {
    match command {
        BenchCommand::Testnet(args) => crate::experiments::net::run(args),
        BenchCommand::Hosts(args) => crate::experiments::hosts::run(args),
        BenchCommand::InProcess(args) => crate::experiments::inprocess::run(args),
        BenchCommand::HopInstructions(args) => crate::experiments::gate::run(args),
        BenchCommand::SurbRtt(args) => crate::experiments::surb::surb_rtt(args),
        BenchCommand::ReplyLoss(args) => crate::experiments::surb::reply_loss(args),
        BenchCommand::HttpOverhead(args) => crate::experiments::http::run(args),
        BenchCommand::Streams(args) => crate::experiments::streams::run(args),
        BenchCommand::Soak(args) => crate::experiments::soak::run(args),
        BenchCommand::Cover(args) => crate::experiments::cover::run(args),
        BenchCommand::Profiles(args) => crate::experiments::profiles::run(args),
        BenchCommand::LatencyVsDelay(args) => crate::experiments::sweeps::latency_vs_delay(args),
        BenchCommand::Concurrency(args) => crate::experiments::sweeps::concurrency(args),
        BenchCommand::Scaling(args) => crate::experiments::sweeps::scaling(args),
        BenchCommand::Anonymity(args) => crate::experiments::anonymity::run(args),
        BenchCommand::Attacks(args) => crate::experiments::attacks::run_attacks(args),
        BenchCommand::FecArq(args) => crate::experiments::attacks::run_fec_arq(args),
        BenchCommand::PoolAnonymity(args) => crate::experiments::pool_anonymity::run(args),
        BenchCommand::AnonymityScale(args) => crate::experiments::disclosure::run(args),
        BenchCommand::Registry(args) => crate::experiments::registry::run(args),
        BenchCommand::Defi(args) => crate::experiments::defi::run(args),
        BenchCommand::RelayerFlood(args) => crate::experiments::relayer_flood::run(args),
        BenchCommand::PacketSize(args) => crate::experiments::packet_size::run(args),
        BenchCommand::Frontier(args) => crate::experiments::frontier::run(args),
        BenchCommand::FecCurve { data_shards, losses, ratios_per_mille, trials, seed, out } => {
            crate::experiments::fec_curve::run(*data_shards, losses, ratios_per_mille, *trials, *seed, out)
        }
        BenchCommand::CriterionReport { criterion_dir, groups, command, since_unix, out } => {
            crate::experiments::criterion_report::run(criterion_dir, groups, command, *since_unix, out)
        }
    }
}
