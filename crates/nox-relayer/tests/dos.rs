//! The relayer's denial-of-service rules (issue 29 item 5) on a real Anvil with the real
//! contracts: a refused bundle resent 1,000 times costs one proof verification and no chain
//! call; a payment whose deadline lies beyond the horizon is refused before its proof is
//! checked; quotes come from a cache while bundles flood in. The per-nullifier and
//! simulate-only budgets are the guard's (unit tests in `src/guard.rs`), fed here by the
//! service.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::sol_types::SolValue;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, Deployment, RegistryParams};
use nox_chain::pool::{PoolDeployment, deploy_pool};
use nox_relayer::abi::{Action, Bundle, Transaction};
use nox_relayer::{
    Outcome, Policy, Quote, Reason, RelayRequest, Relayer, RelayerConfig, Submission, encode_verifying_key,
};

/// Anvil's second dev account.
const RELAYER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

struct World {
    _anvil: Anvil,
    url: String,
    deployment: Deployment,
    pool: PoolDeployment,
    provider: DynProvider,
    vk_hex: String,
    /// A proof of points on the curve that does not verify (a full pairing check to refuse).
    bad_proof: [U256; 8],
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

async fn world() -> World {
    let port = free_port();
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .expect("spawn task")
        .expect("anvil starts");
    let url = anvil.url().to_owned();
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(10u64).pow(U256::from(24u64)),
    };
    let deployment = deploy::deploy(&url, &deployer, params).await.expect("deploys");
    let pool = deploy_pool(&url, &deployer, deployment.executor, 64).await.expect("pool deploys");
    let provider = ProviderBuilder::new().connect_http(url.parse().expect("url")).erased();
    let vk = tokio::task::spawn_blocking(|| nox_zk::transfer::testnet_keys().expect("transfer setup").1.clone())
        .await
        .expect("setup task");
    let proof = nox_zk::groth16::Proof { a: vk.alpha_g1, b: vk.beta_g2, c: vk.alpha_g1 };
    let bytes = nox_zk::groth16::proof_to_evm(&proof);
    let mut bad_proof = [U256::ZERO; 8];
    for (w, c) in bad_proof.iter_mut().zip(bytes.chunks_exact(32)) {
        *w = U256::from_be_slice(c);
    }
    World { _anvil: anvil, url, deployment, pool, provider, vk_hex: encode_verifying_key(&vk), bad_proof }
}

fn config(w: &World, dir: &Path, policy: Policy) -> RelayerConfig {
    let key_file = dir.join("relayer.key");
    std::fs::write(&key_file, RELAYER_KEY).expect("key file");
    let vk = dir.join("transfer.vk");
    std::fs::write(&vk, &w.vk_hex).expect("vk file");
    RelayerConfig {
        rpc_url: w.url.clone(),
        key_file: Some(key_file),
        keystore: None,
        password_file: None,
        journal: dir.join("nonces.json"),
        verifying_key: vk,
        chain_id: w.deployment.chain_id,
        executor: w.deployment.executor,
        pool: w.pool.pool,
        tokens: Vec::new(),
        policy,
    }
}

/// A bundle addressed to `relayer` whose payment proof is garbage (it fails verification):
/// what anyone can send without owning a note.
async fn forged(w: &World, relayer: Address, valid_for: u64, salt: u64) -> Submission {
    let now =
        w.provider.get_block_by_number(Default::default()).await.expect("block").expect("latest").header.timestamp;
    let fee = U256::from(10u64).pow(U256::from(15u64));
    let t = Transaction {
        proof: w.bad_proof,
        root: U256::from(1u64),
        nullifiers: [U256::from(1_000 + salt), U256::from(2_000 + salt)],
        commitments: [U256::from(3u64), U256::from(4u64)],
        asset: Address::ZERO,
        fee,
        deadline: U256::from(now + valid_for),
        notes: [Bytes::from(vec![5u8; 104]), Bytes::from(vec![6u8; 104])],
        ..Transaction::default()
    };
    let bundle = Bundle {
        payment: w.pool.pool,
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
    let mut s = Submission::new(w.deployment.chain_id, w.deployment.executor, relayer, bundle);
    s.simulate_only = true;
    s
}

async fn submit(r: &Arc<Relayer>, s: &Submission) -> Outcome {
    let body = RelayRequest::Submit(Box::new(s.clone())).encode();
    serde_json::from_slice(&r.handle(&body).await.expect("an answer")).expect("an outcome")
}

async fn quote(r: &Arc<Relayer>) -> Quote {
    serde_json::from_slice(&r.handle(&RelayRequest::Quote.encode()).await.expect("a quote")).expect("quote json")
}

fn refusal(o: &Outcome) -> (Reason, String) {
    match o {
        Outcome::Refused { reason, detail, .. } => (*reason, detail.clone()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_bundles_cost_one_verification_and_far_deadlines_none() {
    let w = world().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = Policy { quote_cache_ms: 60_000, ..Policy::default() };
    let relayer = Relayer::start(config(&w, dir.path(), policy)).await.expect("relayer starts");
    let me = relayer.account();

    // A bad bundle resent 1,000 times: one verification, then refused from memory.
    let bad = forged(&w, me, 600, 1).await;
    let first = submit(&relayer, &bad).await;
    assert_eq!(refusal(&first).0, Reason::BadProof, "{first:?}");
    for _ in 0..999 {
        let again = submit(&relayer, &bad).await;
        let (reason, detail) = refusal(&again);
        assert_eq!(reason, Reason::BadProof);
        assert!(detail.contains("refused recently"), "{detail}");
    }
    let stats = relayer.stats();
    assert_eq!(stats.verifications, 1, "{stats:?}");
    assert_eq!(stats.simulation_rounds, 0);
    assert_eq!(stats.guard.remembered, 999);
    // Another bundle is checked on its own.
    let other = forged(&w, me, 600, 2).await;
    assert_eq!(refusal(&submit(&relayer, &other).await).0, Reason::BadProof);
    assert_eq!(relayer.stats().verifications, 2);

    // A deadline two hours away (the default horizon is one hour): refused, proof unchecked.
    let far = forged(&w, me, 7_200, 3).await;
    let (reason, detail) = refusal(&submit(&relayer, &far).await);
    assert_eq!(reason, Reason::DeadlineTooFar);
    assert!(detail.contains("at most 3600 s"), "{detail}");
    assert_eq!(relayer.stats().verifications, 2);
    assert_eq!(relayer.stats().guard.too_far, 1);

    // Quotes come from the cache: a block mined since does not change the answer within the
    // cache period, and a flood of 200 concurrent quotes is answered in full.
    let q1 = quote(&relayer).await;
    let _: serde_json::Value = w.provider.raw_request("evm_mine".into(), ()).await.expect("evm_mine");
    let q2 = quote(&relayer).await;
    assert_eq!(q1, q2);
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let r = relayer.clone();
        tasks.push(tokio::spawn(async move { quote(&r).await }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("quote task"), q1);
    }
    // Without the cache, the next block's quote is read afresh.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let uncached = Policy { quote_cache_ms: 0, ..Policy::default() };
    let fresh = Relayer::start(config(&w, dir2.path(), uncached)).await.expect("second relayer starts");
    let a = quote(&fresh).await;
    let _: serde_json::Value = w.provider.raw_request("evm_mine".into(), ()).await.expect("evm_mine");
    assert_eq!(quote(&fresh).await.block, a.block + 1);
}
