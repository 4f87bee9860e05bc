//! `nox bench relayer-flood`: does a relayer keep answering honest quotes while it is flooded
//! with bundles that cost it work (issue 29 item 5; docs/benchmarks/defi.md, "Relayer under a
//! flood")? One Anvil with the NOX contracts and shielded pool, one relayer (`nox-relayer`,
//! shipped policy), called in process through the byte interface the exit serves
//! (`Relayer::handle`), so the mixnet is not in the measurement.
//!
//! Phases of equal length, same run: **quiet** (an honest client asks for a quote every
//! `--quote-every-ms`); **flood** (the same, while `--flooders` tasks send simulate-only bundles
//! as fast as the relayer answers: each a fresh forged payment — a full Groth16 check to refuse
//! — or a resend of a refused one); **flood, no quote cache** (the same flood against a second
//! relayer with `quote_cache_ms = 0`, every quote reading the chain). A quote not answered within
//! `--quote-timeout-ms` counts as unanswered. Reported: quote latency p50/p99, answered
//! fraction, flood requests served and their outcomes, proof verifications spent.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolValue;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::deploy_pool;
use nox_relayer::abi::{Action, Bundle, Transaction};
use nox_relayer::{Outcome, Policy, RelayRequest, Relayer, RelayerConfig, Submission, encode_verifying_key};
use serde_json::{Value, json};

use crate::harness::{BenchError, write_json};
use crate::harness::{envelope, err, percentile, round3};

/// Options of `nox bench relayer-flood`.
#[derive(clap::Args, Clone)]
pub struct RelayerFloodArgs {
    /// CI-sized: 5 s phases.
    #[arg(long)]
    pub quick: bool,
    /// Seconds per phase (default 20; quick 5).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Flooding tasks, each sending its next bundle as soon as the last is answered.
    #[arg(long, default_value_t = 64)]
    pub flooders: usize,
    /// Milliseconds between the honest client's quote requests.
    #[arg(long, default_value_t = 50)]
    pub quote_every_ms: u64,
    /// A quote not answered within this is unanswered.
    #[arg(long, default_value_t = 2_000)]
    pub quote_timeout_ms: u64,
    /// Output JSON.
    #[arg(long, default_value = "bench/data/relayer-flood.json")]
    pub out: PathBuf,
}

const EXPERIMENT: &str = "relayer-flood";
/// Anvil's development account 1: the relayer.
const RELAYER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// Runs the benchmark.
pub fn run(args: &RelayerFloodArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    runtime.block_on(run_async(args))
}

struct Setup {
    _anvil: Anvil,
    config: RelayerConfig,
    bad_proof: [U256; 8],
    pool: Address,
    executor: Address,
    chain_id: u64,
}

async fn setup(dir: &Path) -> Result<Setup, BenchError> {
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(err)?.port();
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .map_err(err)?
        .map_err(err)?;
    let deployer = deploy::signer(DEV_KEY).map_err(err)?;
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(10u64).pow(U256::from(24u64)),
    };
    let deployment = deploy::deploy(anvil.url(), &deployer, params).await.map_err(err)?;
    let pool = deploy_pool(anvil.url(), &deployer, deployment.executor, 64).await.map_err(err)?;
    let vk = tokio::task::spawn_blocking(|| nox_zk::transfer::testnet_keys().map(|k| k.1.clone()))
        .await
        .map_err(err)?
        .map_err(err)?;
    // Points on the curve that do not verify: refusing one costs a full pairing check.
    let proof = nox_zk::groth16::Proof { a: vk.alpha_g1, b: vk.beta_g2, c: vk.alpha_g1 };
    let bytes = nox_zk::groth16::proof_to_evm(&proof);
    let mut bad_proof = [U256::ZERO; 8];
    for (w, c) in bad_proof.iter_mut().zip(bytes.chunks_exact(32)) {
        *w = U256::from_be_slice(c);
    }
    let key_file = dir.join("relayer.key");
    std::fs::write(&key_file, RELAYER_KEY).map_err(err)?;
    let vk_file = dir.join("transfer.vk");
    std::fs::write(&vk_file, encode_verifying_key(&vk)).map_err(err)?;
    let config = RelayerConfig {
        rpc_url: anvil.url().to_owned(),
        key_file: Some(key_file),
        keystore: None,
        password_file: None,
        journal: dir.join("nonces.json"),
        verifying_key: vk_file,
        chain_id: deployment.chain_id,
        executor: deployment.executor,
        pool: pool.pool,
        tokens: Vec::new(),
        policy: Policy::default(),
    };
    Ok(Setup {
        _anvil: anvil,
        config,
        bad_proof,
        pool: pool.pool,
        executor: deployment.executor,
        chain_id: deployment.chain_id,
    })
}

/// A simulate-only bundle for `relayer` with a forged payment (`salt` makes it unique).
fn forged(s: &Setup, relayer: Address, deadline: u64, salt: u64) -> Vec<u8> {
    let fee = U256::from(10u64).pow(U256::from(15u64));
    // A private transaction (issue 30) whose proof is points that do not verify.
    let t = Transaction {
        proof: s.bad_proof,
        root: U256::from(1u64),
        nullifiers: [U256::from(salt), U256::from(salt) + (U256::from(1u64) << 200)],
        commitments: [U256::from(3u64), U256::from(4u64)],
        asset: Address::ZERO,
        fee,
        deadline: U256::from(deadline),
        notes: [Bytes::from(vec![5u8; 104]), Bytes::from(vec![6u8; 104])],
        ..Transaction::default()
    };
    let bundle = Bundle {
        payment: s.pool,
        paymentData: Bytes::from(t.abi_encode()),
        asset: Address::ZERO,
        fee,
        action: Action {
            target: Address::repeat_byte(0x42),
            value: U256::ZERO,
            gas: U256::from(100_000u64),
            data: Bytes::from(vec![1, 2, 3]),
        },
    };
    let mut sub = Submission::new(s.chain_id, s.executor, relayer, bundle);
    sub.simulate_only = true;
    RelayRequest::Submit(Box::new(sub)).encode()
}

#[derive(Default)]
struct Phase {
    latencies_ms: Vec<f64>,
    asked: u64,
    answered: u64,
}

/// The honest client: a quote every `every`, each with its own timeout, until `stop`.
async fn quoter(relayer: Arc<Relayer>, every: Duration, timeout: Duration, length: Duration) -> Phase {
    let started = Instant::now();
    let mut tasks = Vec::new();
    let mut tick = tokio::time::interval(every);
    while started.elapsed() < length {
        tick.tick().await;
        let r = relayer.clone();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let body = RelayRequest::Quote.encode();
            match tokio::time::timeout(timeout, r.handle(&body)).await {
                Ok(Ok(answer)) if serde_json::from_slice::<nox_relayer::Quote>(&answer).is_ok() => {
                    Some(t.elapsed().as_secs_f64() * 1e3)
                }
                _ => None,
            }
        }));
    }
    let mut phase = Phase::default();
    for t in tasks {
        phase.asked += 1;
        if let Ok(Some(ms)) = t.await {
            phase.answered += 1;
            phase.latencies_ms.push(ms);
        }
    }
    phase.latencies_ms.sort_by(f64::total_cmp);
    phase
}

#[derive(Default)]
struct Flood {
    sent: AtomicU64,
    by_reason: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

async fn flooder(relayer: Arc<Relayer>, bodies: Arc<Vec<Vec<u8>>>, flood: Arc<Flood>, stop: Arc<AtomicBool>, id: u64) {
    let mut i = id;
    while !stop.load(Ordering::Relaxed) {
        let body = &bodies[(i as usize) % bodies.len()];
        i = i.wrapping_add(7919);
        let answer = relayer.handle(body).await;
        flood.sent.fetch_add(1, Ordering::Relaxed);
        let class = match answer.ok().and_then(|a| serde_json::from_slice::<Outcome>(&a).ok()) {
            Some(Outcome::Refused { reason, .. }) => format!("{reason:?}"),
            Some(_) => "other".to_owned(),
            None => "error".to_owned(),
        };
        if let Ok(mut m) = flood.by_reason.lock() {
            *m.entry(class).or_default() += 1;
        }
        // A refusal from memory completes without waiting on anything: yield, as requests
        // arriving from the network would, or the flooders hold the runtime's threads.
        tokio::task::yield_now().await;
    }
}

fn summary(name: &str, p: &Phase, flood: Option<(&Flood, f64, u64)>) -> Value {
    let (sent, by_reason, verifications) = match flood {
        Some((f, secs, v)) => (
            json!(round3(f.sent.load(Ordering::Relaxed) as f64 / secs)),
            json!(f.by_reason.lock().map(|m| m.clone()).unwrap_or_default()),
            json!(v),
        ),
        None => (json!(0), json!({}), json!(0)),
    };
    json!({
        "phase": name,
        "quotes_asked": p.asked,
        "quotes_answered": p.answered,
        "answered_fraction": round3(p.answered as f64 / p.asked.max(1) as f64),
        "quote_p50_ms": percentile(&p.latencies_ms, 0.5).map(round3),
        "quote_p99_ms": percentile(&p.latencies_ms, 0.99).map(round3),
        "flood_requests_per_s": sent,
        "flood_outcomes": by_reason,
        "proof_verifications": verifications,
    })
}

async fn flood_phase(
    relayer: &Arc<Relayer>,
    bodies: &Arc<Vec<Vec<u8>>>,
    args: &RelayerFloodArgs,
    length: Duration,
) -> (Phase, Flood, u64) {
    let flood = Arc::new(Flood::default());
    let stop = Arc::new(AtomicBool::new(false));
    let before = relayer.stats().verifications;
    let mut tasks = Vec::new();
    for id in 0..args.flooders {
        tasks.push(tokio::spawn(flooder(relayer.clone(), bodies.clone(), flood.clone(), stop.clone(), id as u64)));
    }
    let phase = quoter(
        relayer.clone(),
        Duration::from_millis(args.quote_every_ms),
        Duration::from_millis(args.quote_timeout_ms),
        length,
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let verifications = relayer.stats().verifications - before;
    let flood = Arc::try_unwrap(flood).unwrap_or_default();
    (phase, flood, verifications)
}

async fn run_async(args: &RelayerFloodArgs) -> Result<(), BenchError> {
    let started = Instant::now();
    let secs = args.seconds.unwrap_or(if args.quick { 5 } else { 20 });
    let length = Duration::from_secs(secs);
    let dir = std::env::temp_dir().join(format!("nox-bench-relayer-flood-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(err)?;
    let s = setup(&dir).await?;
    let relayer = Relayer::start(s.config.clone()).await.map_err(err)?;
    let mut uncached_config = s.config.clone();
    uncached_config.journal = dir.join("nonces-uncached.json");
    uncached_config.policy.quote_cache_ms = 0;
    let uncached = Relayer::start(uncached_config).await.map_err(err)?;

    // The flood's bundles: 4,096 distinct forged payments (each a full proof check the first
    // time), valid for 10 minutes; the flooders cycle through them, so most are resends.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(err)?.as_secs();
    let account = relayer.account();
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new((0..4_096u64).map(|i| forged(&s, account, now + 600, 1 + i)).collect());

    eprintln!("relayer-flood: quiet phase ({secs} s)");
    let quiet = quoter(
        relayer.clone(),
        Duration::from_millis(args.quote_every_ms),
        Duration::from_millis(args.quote_timeout_ms),
        length,
    )
    .await;
    eprintln!("relayer-flood: flood phase ({secs} s, {} flooders)", args.flooders);
    let (flooded, flood, verifications) = flood_phase(&relayer, &bodies, args, length).await;
    eprintln!("relayer-flood: flood phase without the quote cache ({secs} s)");
    let (flooded_nc, flood_nc, verifications_nc) = flood_phase(&uncached, &bodies, args, length).await;

    let secs_f = secs as f64;
    let results = json!([
        summary("quiet", &quiet, None),
        summary("flood", &flooded, Some((&flood, secs_f, verifications))),
        summary("flood, no quote cache", &flooded_nc, Some((&flood_nc, secs_f, verifications_nc))),
    ]);
    let parameters = json!({
        "seconds_per_phase": secs, "flooders": args.flooders, "quote_every_ms": args.quote_every_ms,
        "quote_timeout_ms": args.quote_timeout_ms, "distinct_forged_bundles": bodies.len(),
        "policy": "shipped defaults (quote_cache_ms 1000, refusal_memory_s 300, max_simulating 4, simulate_per_s 4)",
        "elapsed_seconds": round3(started.elapsed().as_secs_f64()),
    });
    let report = envelope(EXPERIMENT, parameters, results.clone(), &json!({}), Vec::new());
    write_json(&args.out, &report)?;
    println!("{}", serde_json::to_string_pretty(&results).unwrap_or_default());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
