//! `nox bench registry`: the cost of one verified topology refresh from the on-chain
//! `NodeRegistry` (docs/spec/registry.md) for 9, 100 and 1,000 registered nodes.
//!
//! One Anvil, the contracts deployed once, nodes registered in batches (9, then 91 more, then
//! 900 more) with generated keys, each from a fresh operator account. After each batch:
//!
//! - **RPC calls and bytes** of one refresh, counted by a loopback HTTP proxy between the reader
//!   and Anvil (every JSON-RPC method of every request; HTTP bytes both ways, headers included),
//!   checked against the count the paging implies;
//! - **wall time** of `RegistryReader::snapshot_at` and of `RegistryView::refresh` (what nodes and
//!   clients run: `eth_blockNumber` + `snapshot_at`), straight to Anvil, ≥ 10 repetitions;
//! - the **local verification** alone (fingerprint recomputation + membership build) and the
//!   verification of a topology document of those nodes under `Trust::Registry`;
//! - the `eth_call` **gas** of `fingerprint()`, `registryState()`, one `nodesPage` and the whole
//!   list in one `nodesPage`, from `eth_estimateGas` (what RPC providers' gas caps apply to).
//!
//! Registration is fast because nothing waits per transaction: gas ETH is set with Anvil's
//! `anvil_setBalance`, and the stake transfers (from the deployer) and each operator's
//! `approve` + `register` are signed locally with explicit nonces, gas limits and fees and sent
//! with many in flight; receipts are checked after each phase.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use alloy::{
    network::{EthereumWallet, TransactionBuilder},
    primitives::{Address, B256, Bytes, TxHash, U256},
    providers::{DynProvider, Provider, ProviderBuilder},
    rpc::types::TransactionRequest,
    signers::local::PrivateKeySigner,
    sol_types::SolCall,
};
use nox_chain::{
    ChainConfig, Deployment, RegistryParams, RegistryReader, RegistryView,
    anvil::{Anvil, AnvilOptions, DEV_KEY},
    bindings::{NodeRegistry, NoxStakeToken},
    deploy, fingerprint,
    reader::PAGE,
    snapshot::{ROLE_RELAY, RegistrySnapshot},
};
use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{
    EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, Signature, SigningKey, TopologyDocument,
    VERSION, VerifyConfig, node_id_of,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
    task::JoinSet,
};

use crate::harness::{BenchError, chart, envelope, err, percentile, round3, write_json};

mod proxy;
mod register;
mod report;
use proxy::*;
use register::*;
use report::*;

/// Options of `nox bench registry`.
#[derive(clap::Args, Clone)]
pub struct RegistryArgs {
    /// CI-sized: 9 and 100 nodes, 10 repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Registered-node counts to measure, ascending (default 9,100,1000; quick 9,100).
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<usize>,
    /// Timed repetitions per measurement (default 50; quick 10).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Transactions (and cheatcode calls) in flight while registering.
    #[arg(long, default_value_t = 64)]
    pub in_flight: usize,
    /// Seed of the generated keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output JSON.
    #[arg(long, default_value = "bench/data/registry.json")]
    pub out: PathBuf,
}

const EXPERIMENT: &str = "registry";
/// Stake each generated node locks (the registry's minimum).
const STAKE: u64 = 1_000;
/// Gas limits of the registration transactions (above what they use: gas.md).
const GAS_TRANSFER: u64 = 100_000;
const GAS_APPROVE: u64 = 100_000;
const GAS_REGISTER: u64 = 600_000;
/// EIP-1559 fees: Anvil starts at a 1 gwei base fee, which only falls with one-transaction blocks.
const MAX_FEE: u128 = 100_000_000_000;
const PRIORITY_FEE: u128 = 1_000_000_000;
/// First link port of the generated nodes (`127.0.0.1:<port>`; nothing listens there).
const BASE_PORT: u16 = 20_000;

/// Runs the benchmark and writes the JSON.
pub fn run(args: &RegistryArgs) -> Result<(), BenchError> {
    let mut sizes = if args.nodes.is_empty() {
        if args.quick { vec![9, 100] } else { vec![9, 100, 1000] }
    } else {
        args.nodes.clone()
    };
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.first() == Some(&0) || sizes.last().is_some_and(|&n| n > usize::from(u16::MAX - BASE_PORT)) {
        return Err(BenchError::Failed(format!("node counts must be 1..={}", u16::MAX - BASE_PORT)));
    }
    let reps = args.reps.unwrap_or(if args.quick { 10 } else { 50 }).max(2);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let started = Instant::now();
    let results = runtime.block_on(measure_all(args, &sizes, reps))?;
    let elapsed = started.elapsed().as_secs_f64();

    let summary = summarise(&results);
    let charts = charts(&results);
    let parameters = json!({
        "node_counts": sizes, "repetitions": reps, "seed": args.seed, "quick": args.quick,
        "page_size": PAGE, "stake_per_node": STAKE, "in_flight": args.in_flight,
        "chain": "Anvil (nox_chain::anvil, pinned npm @foundry-rs/anvil), instant mining, one block per transaction, default 30 M block gas limit",
        "registration": "gas ETH set with the anvil_setBalance cheatcode (raw JSON-RPC); stake tokens transferred from the deployer; approve + register signed by each node's own fresh operator key; every transaction signed locally with explicit nonce, gas limit and fees and sent without waiting for its receipt (in_flight concurrent sends; one sender's transactions in nonce order); receipts checked after each phase (the transfers before any register), evm_mine only if a receipt is still missing after 100 ms (counted)",
        "nodes": "generated from the seed: distinct Ed25519 identity keys (drawn so layers fill round-robin), distinct X25519 link keys, link addresses 127.0.0.1:20000+i, role relay, stake 1000",
        "rpc_counting": "a loopback HTTP proxy between the reader and Anvil counts each JSON-RPC method in every request body and the HTTP bytes both ways (headers included); timings are taken without the proxy",
        "timing": "RegistryReader::snapshot_at(block) and RegistryView::refresh() (eth_blockNumber + snapshot_at) with the reader already connected, straight to Anvil on loopback; local verification = snapshot::fingerprint over the list + RegistrySnapshot::membership; topology = TopologyDocument::verify of a document of all N nodes (2 epoch keys each) under Trust::Registry",
        "gas": "eth_estimateGas of the view calls at the latest block: includes the 21,000 intrinsic gas and calldata, as an eth_call's gas cap counts it",
    });
    let report = envelope(EXPERIMENT, parameters, Value::Array(results), &summary, charts);
    let report = with_elapsed(report, elapsed);
    write_json(&args.out, &report)?;
    println!("{EXPERIMENT}: {summary}\nwrote {}", args.out.display());
    Ok(())
}

fn with_elapsed(mut report: Value, elapsed: f64) -> Value {
    if let Some(object) = report.as_object_mut() {
        object.insert("elapsed_seconds".into(), json!(round3(elapsed)));
    }
    report
}

/// One generated node.
struct GenNode {
    operator: PrivateKeySigner,
    identity: SigningKey,
    link_key: [u8; 32],
    address: SocketAddr,
}

fn generate(rng: &mut ChaCha20Rng, index: usize) -> Result<GenNode, BenchError> {
    let layers = LayerCount::new(3).ok_or_else(|| err("3 layers"))?;
    let mut key = [0u8; 32];
    // Draw identities until this one falls in layer `index % 3`: every prefix of the list has
    // balanced layers, so a topology document of the first N nodes verifies for any N ≥ 3.
    let identity = loop {
        rng.fill_bytes(&mut key);
        let candidate = SigningKey::from_bytes(&key);
        if layers.assign(&node_id_of(&candidate.verifying_key())).index() == index % 3 {
            break candidate;
        }
    };
    rng.fill_bytes(&mut key);
    let link_key = LinkPublicKey::from_secret(&key).to_bytes();
    let operator = loop {
        rng.fill_bytes(&mut key);
        if let Ok(signer) = PrivateKeySigner::from_bytes(&B256::from(key)) {
            break signer;
        }
    };
    let port = BASE_PORT + u16::try_from(index).map_err(err)?;
    Ok(GenNode { operator, identity, link_key, address: SocketAddr::from(([127, 0, 0, 1], port)) })
}

async fn measure_all(args: &RegistryArgs, sizes: &[usize], reps: usize) -> Result<Vec<Value>, BenchError> {
    let port = free_port()?;
    let anvil = Anvil::spawn(&AnvilOptions::on_port(port)).map_err(err)?;
    let url = anvil.url().to_string();
    let deployer = deploy::signer(DEV_KEY).map_err(err)?;
    let stake = U256::from(STAKE);
    let params = RegistryParams {
        min_stake: stake,
        unstake_delay: 3600,
        slash_reporter_bps: 1000,
        token_supply: stake * U256::from(1_000_000u64),
    };
    let deployment = deploy::deploy(&url, &deployer, params).await.map_err(err)?;
    let proxy = CountingProxy::start(SocketAddr::from(([127, 0, 0, 1], port))).await?;

    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut nodes: Vec<GenNode> = Vec::new();
    let mut results = Vec::new();
    for &n in sizes {
        let first = nodes.len();
        for i in first..n {
            nodes.push(generate(&mut rng, i)?);
        }
        let t0 = Instant::now();
        let nudges = AtomicU64::new(0);
        register_batch(&url, &deployment, &deployer, &nodes[first..], args.in_flight, &nudges).await?;
        let registration_s = t0.elapsed().as_secs_f64();
        println!("registry: registered nodes {first}..{n} in {registration_s:.2} s");
        let mut result = measure(&url, &proxy, &deployment, &nodes, reps).await?;
        result["registration"] = json!({ "new_nodes": n - first, "seconds": round3(registration_s),
            "transactions": 3 * (n - first), "evm_mine_nudges": nudges.load(Ordering::SeqCst),
            "per_node_ms": round3(registration_s * 1e3 / (n - first).max(1) as f64) });
        println!("registry: {n} nodes: {}", result["brief"]);
        results.push(result);
    }
    drop(anvil);
    Ok(results)
}

fn free_port() -> Result<u16, BenchError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(err)?;
    Ok(listener.local_addr().map_err(err)?.port())
}

// ------------------------------------------------------------------ measurement

async fn measure(
    url: &str,
    proxy: &CountingProxy,
    deployment: &Deployment,
    nodes: &[GenNode],
    reps: usize,
) -> Result<Value, BenchError> {
    let n = nodes.len();
    let registry = deployment.registry;
    let chain_id = deployment.chain_id;
    let reader = RegistryReader::connect(url, registry, Some(chain_id)).await.map_err(err)?;
    let block = reader.latest_block().await.map_err(err)?;
    let snapshot = reader.snapshot_at(block).await.map_err(err)?;
    if snapshot.nodes.len() != n {
        return Err(BenchError::Failed(format!(
            "the registry lists {} nodes, {n} were registered",
            snapshot.nodes.len()
        )));
    }
    let pages = n.div_ceil(PAGE as usize);

    // RPC calls and bytes, through the counting proxy.
    let proxied = proxy.url();
    let before = proxy.read();
    let counted_reader = RegistryReader::connect(&proxied, registry, Some(chain_id)).await.map_err(err)?;
    let connect = proxy.read().since(&before);
    let before = proxy.read();
    counted_reader.snapshot_at(block).await.map_err(err)?;
    let snapshot_at_rpc = proxy.read().since(&before);
    let config =
        ChainConfig { rpc_urls: vec![proxied.clone()], registry, chain_id, confirmations: 0, operator_key_file: None };
    let mut counted_view = RegistryView::new(config).map_err(err)?;
    let before = proxy.read();
    counted_view.refresh().await.map_err(err)?;
    let cold_refresh = proxy.read().since(&before);
    let mut steady = Vec::new();
    for _ in 0..3 {
        let before = proxy.read();
        counted_view.refresh().await.map_err(err)?;
        steady.push(proxy.read().since(&before));
    }
    let refresh_rpc = steady[0].clone();
    if steady.iter().any(|s| s.calls != refresh_rpc.calls) {
        return Err(BenchError::Failed("steady-state refreshes made different numbers of RPC calls".into()));
    }
    let expected_snapshot_at = 1 + pages as u64;
    if snapshot_at_rpc.calls != expected_snapshot_at {
        return Err(BenchError::Failed(format!(
            "snapshot_at made {} RPC calls, paging implies {expected_snapshot_at}",
            snapshot_at_rpc.calls
        )));
    }

    // Wall time, straight to Anvil: a few untimed warm-up rounds, then `snapshot_at` and
    // `refresh` alternate so that both see the same machine and Anvil conditions.
    let config =
        ChainConfig { rpc_urls: vec![url.to_string()], registry, chain_id, confirmations: 0, operator_key_file: None };
    let mut view = RegistryView::new(config).map_err(err)?;
    let t0 = Instant::now();
    view.refresh().await.map_err(err)?;
    let cold_refresh_ms = t0.elapsed().as_secs_f64() * 1e3;
    for _ in 0..3 {
        std::hint::black_box(reader.snapshot_at(block).await.map_err(err)?);
        std::hint::black_box(view.refresh().await.map_err(err)?);
    }
    let mut snapshot_at_ms = Vec::with_capacity(reps);
    let mut refresh_ms = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        let s = reader.snapshot_at(block).await.map_err(err)?;
        snapshot_at_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(s);
        let t0 = Instant::now();
        let s = view.refresh().await.map_err(err)?;
        refresh_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(s);
    }

    // The local part alone: fingerprint recomputation + membership build.
    let local_reps = (reps * 5).max(50);
    let mut local_ms = Vec::with_capacity(local_reps);
    for _ in 0..local_reps {
        let t0 = Instant::now();
        let computed = fingerprint(chain_id, registry, &snapshot.nodes);
        let (membership, unusable) = snapshot.membership();
        local_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        if computed != snapshot.fingerprint || membership.len() != n || !unusable.is_empty() {
            return Err(BenchError::Failed("local verification disagrees with the snapshot".into()));
        }
    }

    let mut topology_ms = verify_topology(&snapshot, nodes, reps)?;
    let gas = view_gas(&reader, registry, n).await?;

    let snapshot_at = timing(&mut snapshot_at_ms);
    let refresh = timing(&mut refresh_ms);
    let local = timing(&mut local_ms);
    let topology = timing(&mut topology_ms);
    let p50 = |v: &Value| v["p50"].as_f64().unwrap_or(f64::NAN);
    let per_node_us = |ms: f64| round3(ms * 1e3 / n as f64);
    let brief = format!(
        "{} RPC calls, {} bytes, refresh p50 {:.2} ms (p95 {:.2}), local verify p50 {:.3} ms, topology verify p50 {:.2} ms",
        refresh_rpc.calls,
        refresh_rpc.total_bytes(),
        p50(&refresh),
        refresh["p95"].as_f64().unwrap_or(f64::NAN),
        p50(&local),
        p50(&topology)
    );
    Ok(json!({
        "nodes": n,
        "block": block,
        "version": snapshot.version,
        "pages": pages,
        "rpc": {
            "snapshot_at": snapshot_at_rpc.to_json(),
            "snapshot_at_calls_expected": expected_snapshot_at,
            "refresh": refresh_rpc.to_json(),
            "refresh_calls_expected": expected_snapshot_at + 1,
            "cold_refresh": cold_refresh.to_json(),
            "connect": connect.to_json(),
        },
        "time_ms": {
            "snapshot_at": snapshot_at,
            "refresh": refresh,
            "cold_refresh_once": round3(cold_refresh_ms),
            "local_verification": local,
            "topology_document_verify": topology,
        },
        "gas": gas,
        "per_node": {
            "refresh_us": per_node_us(p50(&refresh)),
            "snapshot_at_us": per_node_us(p50(&snapshot_at)),
            "local_verification_us": per_node_us(p50(&local)),
            "topology_document_verify_us": per_node_us(p50(&topology)),
            "refresh_bytes": round3(refresh_rpc.total_bytes() as f64 / n as f64),
            "response_bytes": round3(refresh_rpc.response_bytes as f64 / n as f64),
        },
        "brief": brief,
    }))
}

/// `{n, p50, p95, min, max, mean, samples}` in ms.
fn timing(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
    json!({
        "n": samples.len(),
        "p50": percentile(samples, 0.5).map(round4),
        "p95": percentile(samples, 0.95).map(round4),
        "min": samples.first().copied().map(round4),
        "max": samples.last().copied().map(round4),
        "mean": round4(mean),
        "samples": samples.iter().map(|v| round4(*v)).collect::<Vec<_>>(),
    })
}

fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// Builds a topology document of every registered node (self-signed descriptors with two epoch
/// keys) and times its verification under `Trust::Registry` with the snapshot's membership.
fn verify_topology(snapshot: &RegistrySnapshot, nodes: &[GenNode], reps: usize) -> Result<Vec<f64>, BenchError> {
    let geometry = Geometry::default();
    let layers = LayerCount::new(3).ok_or_else(|| err("3 layers"))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(err)?.as_secs();
    let schedule = EpochSchedule::with_defaults(now - 7200);
    let epoch = schedule.epoch_at(now);
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed);
    let mut descriptors = Vec::with_capacity(nodes.len());
    for node in nodes {
        let keys = (epoch..=epoch + 1)
            .map(|e| EpochKey { epoch: e, key: SecretKey::generate(&mut rng).public_key() })
            .collect();
        let descriptor = NodeDescriptor::new(
            node.identity.verifying_key(),
            LinkPublicKey::from_bytes(node.link_key).map_err(err)?,
            node.address,
            layers,
            0,
            keys,
        );
        let signed = descriptor.sign(&node.identity).map_err(err)?;
        // With the operator's EIP-712 statement for each key, as nodes publish them (verified too).
        let signed = nox_chain::slash::attach_statements(&node.operator, snapshot.chain_id, snapshot.registry, signed)
            .map_err(err)?;
        descriptors.push(signed);
    }
    let document = TopologyDocument {
        version: VERSION,
        geometry: geometry.identifier(),
        schedule,
        layers: 3,
        issued_at: now,
        nodes: descriptors,
        // Not checked under Trust::Registry: the document is an untrusted cache.
        signature: Signature::from_bytes(&[0; 64]),
    };
    let config = VerifyConfig::registry(Arc::new(snapshot.membership().0), geometry);
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        let verified = document.verify(&config, now).map_err(err)?;
        samples.push(t0.elapsed().as_secs_f64() * 1e3);
        if verified.nodes().len() != nodes.len() || !verified.rejected().is_empty() {
            return Err(BenchError::Failed(format!(
                "topology verification kept {} of {} nodes",
                verified.nodes().len(),
                nodes.len()
            )));
        }
    }
    Ok(samples)
}

/// `eth_estimateGas` of the views a snapshot reads, at the latest block.
async fn view_gas(reader: &RegistryReader, registry: Address, n: usize) -> Result<Value, BenchError> {
    let contract = NodeRegistry::new(registry, reader.provider());
    let fingerprint = contract.fingerprint().estimate_gas().await.map_err(err)?;
    let state = contract.registryState().estimate_gas().await.map_err(err)?;
    let count = contract.nodeCount().estimate_gas().await.map_err(err)?;
    let page = contract.nodesPage(U256::ZERO, U256::from(PAGE)).estimate_gas().await.map_err(err)?;
    let all = contract.nodesPage(U256::ZERO, U256::from(n)).estimate_gas().await.map_err(err)?;
    // The pages a snapshot actually reads, each estimated.
    let mut pages = Vec::new();
    for start in (0..n).step_by(PAGE as usize) {
        let count = (n - start).min(PAGE as usize);
        pages.push(contract.nodesPage(U256::from(start), U256::from(count)).estimate_gas().await.map_err(err)?);
    }
    let paged: u64 = pages.iter().sum();
    Ok(json!({
        "fingerprint": fingerprint,
        "registry_state": state,
        "node_count": count,
        "nodes_page_first": page,
        "nodes_page_first_size": n.min(PAGE as usize),
        "nodes_page_all": all,
        "nodes_pages_sum": paged,
        "nodes_page_max": pages.iter().max(),
        "snapshot_total": state + paged,
        "fingerprint_per_node": round3((fingerprint as f64 - count as f64) / n as f64),
        "nodes_page_all_per_node": round3((all as f64 - count as f64) / n as f64),
    }))
}
