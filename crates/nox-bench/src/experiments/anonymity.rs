//! `nox bench anonymity`: anonymity scored from what a global passive adversary (GPA) of the
//! **real multi-process testnet** sees. For each mean delay μ the harness starts a testnet with
//! `[observe]` on (every node logs its departures), runs phases of simulated clients sending
//! Poisson traffic (raw forward packets carrying a message id) through it, logs its own
//! client→entry sends, and joins everything ([`crate::harness::capture`]) into the `nox-anonymity` model.
//! Scoring is in `score`. Node cover (λ_L, λ_D) is off except in the node cover runs (the
//! cover task records its own packets in `[observe]`).

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::harness::{
    BenchError,
    capture::{self, Captured, ClientSend, now_us},
    err, given_or,
};

mod delays;
mod score;
use nox_testnet::{self as testnet, Layout, TestnetClient};

/// Options of `nox bench anonymity`.
#[derive(clap::Args, Clone)]
pub struct AnonymityArgs {
    /// CI-sized: μ ∈ {0, 50} ms, users {5, 20}, cover {0, 2}/s, 3 s phases.
    #[arg(long)]
    pub quick: bool,
    /// Mean delays per hop to sweep, ms (default 0,1,10,50).
    #[arg(long, value_delimiter = ',')]
    pub delays_ms: Vec<f64>,
    /// Numbers of users for the users sweep (default 5,20,50).
    #[arg(long, value_delimiter = ',')]
    pub users: Vec<u32>,
    /// Client cover rates λ_P for the cover analysis, packets/s (default 0,1,2,5).
    #[arg(long, value_delimiter = ',')]
    pub cover_rates: Vec<f64>,
    /// Node cover rates, λ_L = λ_D per node, packets/s, each on its own testnet at the sweep μ
    /// with `--node-cover-clients` users (default 5; quick: 5 only; 0 alone disables).
    #[arg(long, value_delimiter = ',')]
    pub node_cover_rates: Vec<f64>,
    /// Users in the node cover runs (low traffic, where node cover matters most).
    #[arg(long, default_value_t = 5)]
    pub node_cover_clients: u32,
    /// μ of the users and cover sweeps, ms.
    #[arg(long, default_value_t = 50.0)]
    pub sweep_delay_ms: f64,
    /// Clients in the delay sweep.
    #[arg(long, default_value_t = 20)]
    pub clients: u32,
    /// Clients in the cover analysis (half active, half idle).
    #[arg(long, default_value_t = 10)]
    pub cover_clients: u32,
    /// Real messages per second per active client (Poisson).
    #[arg(long, default_value_t = 2.0)]
    pub rate: f64,
    /// Seconds of traffic per phase (default 10; quick 3).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// First link port of the bench testnets (away from `nox testnet`'s 19000).
    #[arg(long, default_value_t = 23_000)]
    pub base_port: u16,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-anonymity")]
    pub dir: PathBuf,
    /// Where the JSON files go.
    #[arg(long, default_value = "bench/data")]
    pub out_dir: PathBuf,
    /// Seed of the traffic schedule and the scorer.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// What one phase runs: `clients` clients, the first `active` sending real traffic, every one
/// sending cover at `cover_rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseSpec {
    /// μ per hop, ms.
    pub mu_ms: f64,
    /// Clients.
    pub clients: u32,
    /// Active (real-traffic) clients.
    pub active: u32,
    /// Client cover rate λ_P, packets/s.
    pub cover_rate: f64,
    /// Node cover λ_L = λ_D per node, packets/s (a testnet setting).
    pub node_cover: f64,
}

/// A finished phase.
pub struct PhaseRun {
    /// What ran.
    pub spec: PhaseSpec,
    /// The joined capture.
    pub captured: Captured,
    /// The harness's send log of the phase.
    pub sends: Vec<ClientSend>,
    /// Observation records the nodes dropped (writer queue full).
    pub dropped_records: u64,
}

impl AnonymityArgs {
    fn node_cover(&self) -> Vec<f64> {
        let mut rates = if !self.node_cover_rates.is_empty() {
            self.node_cover_rates.clone()
        } else if self.quick {
            vec![5.0]
        } else {
            vec![2.0, 10.0]
        };
        rates.retain(|r| *r > 0.0);
        rates
    }

    fn resolved(&self) -> (Vec<f64>, Vec<u32>, Vec<f64>, f64) {
        let delays = given_or(&self.delays_ms, self.quick, &[0.0, 50.0], &[0.0, 1.0, 10.0, 50.0]);
        let users = given_or(&self.users, self.quick, &[5, 20], &[5, 20, 50]);
        let cover = given_or(&self.cover_rates, self.quick, &[0.0, 2.0], &[0.0, 1.0, 2.0, 5.0]);
        (delays, users, cover, self.seconds.unwrap_or(if self.quick { 3.0 } else { 10.0 }))
    }
}

/// The phases to run, grouped by testnet (μ, node cover), μ ascending, duplicates removed.
pub fn plan(args: &AnonymityArgs) -> Vec<(f64, f64, Vec<PhaseSpec>)> {
    let (delays, users, cover, _) = args.resolved();
    let mut mus = delays.clone();
    mus.push(args.sweep_delay_ms);
    mus.sort_by(f64::total_cmp);
    mus.dedup();
    let mut groups = Vec::new();
    for mu_ms in mus {
        let mut phases: Vec<PhaseSpec> = Vec::new();
        let mut add = |spec: PhaseSpec| {
            if !phases.contains(&spec) {
                phases.push(spec);
            }
        };
        if delays.contains(&mu_ms) {
            add(PhaseSpec { mu_ms, clients: args.clients, active: args.clients, cover_rate: 0.0, node_cover: 0.0 });
        }
        if mu_ms == args.sweep_delay_ms {
            for &n in &users {
                add(PhaseSpec { mu_ms, clients: n, active: n, cover_rate: 0.0, node_cover: 0.0 });
            }
            for &cover_rate in &cover {
                add(PhaseSpec {
                    mu_ms,
                    clients: args.cover_clients,
                    active: args.cover_clients / 2,
                    cover_rate,
                    node_cover: 0.0,
                });
            }
            if !args.node_cover().is_empty() {
                let n = args.node_cover_clients;
                add(PhaseSpec { mu_ms, clients: n, active: n, cover_rate: 0.0, node_cover: 0.0 });
            }
        }
        groups.push((mu_ms, 0.0, phases));
    }
    for node_cover in args.node_cover() {
        let (mu_ms, n) = (args.sweep_delay_ms, args.node_cover_clients);
        groups.push((mu_ms, node_cover, vec![PhaseSpec { mu_ms, clients: n, active: n, cover_rate: 0.0, node_cover }]));
    }
    groups
}

/// Runs every testnet and phase, then scores and writes the JSON files.
pub fn run(args: &AnonymityArgs) -> Result<(), BenchError> {
    if !nox_node::observe::COMPILED_IN {
        return Err(err(format!(
            "nox bench anonymity captures the nodes' [observe] logs: {} (scripts/bench/anonymity.sh builds one)",
            nox_node::observe::NOT_BUILT
        )));
    }
    let (_, _, _, seconds) = args.resolved();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(err)?;
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut runs = Vec::new();
    let started = Instant::now();
    for (mu_ms, node_cover, phases) in plan(args) {
        let layout = Layout {
            mean_delay_ms: mu_ms,
            base_port: args.base_port,
            loop_rate: node_cover,
            drop_rate: node_cover,
            observe: true,
            ..Layout::default()
        };
        testnet::up(&args.dir, &layout).map_err(err)?;
        let result = runtime.block_on(run_phases(args, &phases, seconds, &mut rng));
        let _ = testnet::down(&args.dir);
        let (nodes, windows) = result?;
        let logs: Vec<capture::NodeLog> =
            testnet::nodes(&args.dir).iter().map(|n| capture::read_node_log(&n.dir.join("observe.events"))).collect();
        let dropped: u64 = logs.iter().map(|l| l.dropped).sum();
        for (spec, sends, start_us, end_us) in windows {
            let captured = capture::join(&nodes, &logs, &sends, start_us, end_us);
            println!(
                "μ = {mu_ms} ms, node cover {node_cover}/s, {} clients ({} active, client cover {}/s): {} sent, {} delivered, {} events",
                spec.clients,
                spec.active,
                spec.cover_rate,
                captured.sent,
                captured.delivered,
                captured.observation.events.len()
            );
            runs.push(PhaseRun { spec, captured, sends, dropped_records: dropped });
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    score::write_all(args, seconds, &runs, elapsed, &mut rng)
}

type Window = (PhaseSpec, Vec<ClientSend>, u64, u64);

async fn run_phases(
    args: &AnonymityArgs,
    phases: &[PhaseSpec],
    seconds: f64,
    rng: &mut ChaCha20Rng,
) -> Result<(Vec<(String, u8)>, Vec<Window>), BenchError> {
    let mut client = TestnetClient::connect(&args.dir).map_err(err)?;
    let names = capture::node_names(&client.topology);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut windows = Vec::new();
    let mut next_message = 0u64;
    for spec in phases {
        client.refresh(&args.dir).await.map_err(err)?;
        // Pre-build every packet: client-side Sphinx cost must not distort the send times.
        let schedule = schedule(spec, args.rate, seconds, rng);
        let mut packets = Vec::with_capacity(schedule.len());
        for &(offset_s, client_id, real) in &schedule {
            let mut payload = vec![0u8; 64];
            let message = if real {
                payload[..16].copy_from_slice(&capture::message_head(next_message, client_id));
                next_message += 1;
                Some(next_message - 1)
            } else {
                payload[..8].copy_from_slice(nox_node::DROP_MAGIC);
                rng.fill_bytes(&mut payload[8..]);
                None
            };
            let (entry, packet) = client.build(&payload).map_err(err)?;
            let short = names.by_link.get(&entry).cloned().unwrap_or_default();
            packets.push((offset_s, client_id, message, entry, short, packet));
        }
        let start_us = now_us();
        let started = Instant::now();
        let mut sends = Vec::with_capacity(packets.len());
        for (offset_s, client_id, message, entry, short, packet) in packets {
            let due = started + Duration::from_secs_f64(offset_s);
            if due > Instant::now() {
                tokio::time::sleep_until(due.into()).await;
            }
            sends.push(ClientSend { time_us: now_us(), client: client_id, entry: short, message });
            client.send(&entry, packet).await.map_err(err)?;
        }
        let rest = Duration::from_secs_f64((seconds - started.elapsed().as_secs_f64()).max(0.0));
        tokio::time::sleep(rest).await;
        tokio::time::sleep(capture::drain_time(spec.mu_ms)).await;
        windows.push((*spec, sends, start_us, now_us()));
    }
    Ok((names.nodes, windows))
}

/// Poisson send times `(offset s, client, real?)` over `seconds`, sorted: real traffic at
/// `rate` for the active clients, cover at `spec.cover_rate` for everyone.
pub fn schedule(spec: &PhaseSpec, rate: f64, seconds: f64, rng: &mut ChaCha20Rng) -> Vec<(f64, u32, bool)> {
    let mut out = Vec::new();
    let mut poisson = |rate: f64, client: u32, real: bool, out: &mut Vec<(f64, u32, bool)>| {
        if rate <= 0.0 {
            return;
        }
        let mut t = 0.0;
        loop {
            let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            t += -u.ln() / rate;
            if t >= seconds {
                break;
            }
            out.push((t, client, real));
        }
    };
    for client in 0..spec.clients {
        if client < spec.active {
            poisson(rate, client, true, &mut out);
        }
        poisson(spec.cover_rate, client, false, &mut out);
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_plan_shares_testnets_and_dedups() {
        let args = AnonymityArgs {
            quick: true,
            delays_ms: vec![],
            users: vec![],
            cover_rates: vec![],
            sweep_delay_ms: 50.0,
            node_cover_rates: vec![],
            node_cover_clients: 5,
            clients: 20,
            cover_clients: 10,
            rate: 2.0,
            seconds: None,
            base_port: 23_000,
            dir: ".x".into(),
            out_dir: "y".into(),
            seed: 1,
        };
        let plan = plan(&args);
        assert_eq!(plan.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(), vec![(0.0, 0.0), (50.0, 0.0), (50.0, 5.0)]);
        assert_eq!(plan[0].2.len(), 1);
        // μ = 50: N = 20 (shared by both sweeps), N = 5 (also the node cover baseline), cover 0 and 2.
        assert_eq!(plan[1].2.len(), 4);
        assert_eq!(plan[2].2.len(), 1);
    }

    #[test]
    fn schedule_is_sorted_and_near_the_rate() {
        let spec = PhaseSpec { mu_ms: 0.0, clients: 10, active: 5, cover_rate: 1.0, node_cover: 0.0 };
        let s = schedule(&spec, 4.0, 100.0, &mut ChaCha20Rng::seed_from_u64(3));
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
        let real = s.iter().filter(|e| e.2).count() as f64;
        assert!((real - 2000.0).abs() < 200.0, "{real}");
        assert!(s.iter().filter(|e| e.2).all(|e| e.1 < 5));
    }
}
