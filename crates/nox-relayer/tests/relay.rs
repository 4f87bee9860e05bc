//! The relayer against a real Anvil with the real contracts and real Groth16 proofs: a paid
//! bundle is simulated, priced, submitted and credited; each refusal of the relay issue is
//! shown; a relayer killed mid-flight is replaced by a new one that resumes from the journal,
//! bumps the stuck transaction's fee, tracks it to its receipt and never reuses its nonce.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::sol_types::{SolCall, SolValue};
use ark_bn254::Fr;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::bindings::{NoxStakeToken, RewardLedger};
use nox_chain::deploy::{self, Deployment, RegistryParams};
use nox_chain::pool::{PoolDeployment, ShieldedPool, deploy_pool};
use nox_relayer::abi::{Action, Bundle, Spend};
use nox_relayer::price::TokenPrice;
use nox_relayer::{
    Outcome, Policy, PriceFeed, PriceFuture, Reason, RelayRequest, Relayer, RelayerConfig, Submission,
    encode_verifying_key,
};
use nox_wallet::{PoolView, Seed, SpendKind, SpendRequest};
use nox_zk::field;
use nox_zk::groth16::ProvingKey;
use rand_chacha_03::ChaCha20Rng;
use rand_chacha_03::rand_core::SeedableRng;

/// A price source other than Uniswap: a fixed number of token units per wei.
struct FixedPrice(U256);

impl TokenPrice for FixedPrice {
    fn value_in_wei(&self, amount: U256) -> U256 {
        amount / self.0
    }
    fn asset_for_wei(&self, wei: U256) -> Option<U256> {
        Some(wei * self.0)
    }
}

/// A feed that prices one token at 2,000 units per wei.
struct FixedFeed(Address);

impl PriceFeed for FixedFeed {
    fn tokens(&self) -> Vec<Address> {
        vec![self.0]
    }
    fn price<'a>(&'a self, _: &'a DynProvider, token: Address) -> PriceFuture<'a> {
        let known = token == self.0;
        Box::pin(async move { Ok(known.then(|| Box::new(FixedPrice(U256::from(2_000u64))) as Box<dyn TokenPrice>)) })
    }
}

/// Anvil's second and third dev accounts.
const RELAYER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const OTHER_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdf443a6";
const ETH: Address = Address::ZERO;

struct World {
    _anvil: Anvil,
    url: String,
    deployment: Deployment,
    pool: PoolDeployment,
    provider: DynProvider,
    seed: Seed,
    view: PoolView,
    pk: Arc<ProvingKey<ark_bn254::Bn254>>,
    vk_hex: String,
    rng: ChaCha20Rng,
}

impl World {
    async fn sync(&mut self) {
        nox_chain::pool_sync::sync(&self.provider, self.pool.pool, self.pool.block, &self.seed, &mut self.view)
            .await
            .expect("sync");
    }

    /// A bundle paying `fee` wei to `relayer` for the action (target, data), proven now.
    async fn bundle(
        &mut self,
        relayer: Address,
        fee: u128,
        target: Address,
        data: Vec<u8>,
        valid_for: u64,
    ) -> Submission {
        let now = self.provider.get_block_by_number(Default::default()).await.unwrap().unwrap().header.timestamp;
        let deadline = now + valid_for;
        let (action_hash, _) = field::execution_hash(&target.0.0, &data, fee, ACTION_GAS);
        let req = SpendRequest {
            asset: Fr::from(0u64),
            amount: fee,
            kind: SpendKind::Pay { relayer: relayer.0.0, action_hash },
            chain_id: self.deployment.chain_id,
            pool: self.pool.pool.0.0,
            deadline,
        };
        let prepared = self.view.prepare_spend(&self.seed, &req).expect("a note to spend");
        let pk = self.pk.clone();
        let rng = ChaCha20Rng::from_rng(&mut self.rng).unwrap();
        let proof = tokio::task::spawn_blocking(move || {
            let mut rng = rng;
            let proof = nox_zk::groth16::prove(&pk, &prepared.public, &prepared.witness, &mut rng).expect("proves");
            (nox_zk::groth16::proof_to_evm(&proof), prepared.public)
        })
        .await
        .unwrap();
        let (bytes, public) = proof;
        let u = |x: &Fr| U256::from_be_bytes(field::to_be32(x));
        let mut words = [U256::ZERO; 8];
        for (w, c) in words.iter_mut().zip(bytes.chunks_exact(32)) {
            *w = U256::from_be_slice(c);
        }
        let spend = Spend {
            proof: words,
            root: u(&public.root),
            nullifier: u(&public.nullifier),
            changeCommitment: u(&public.change_commitment),
            asset: ETH,
            fee: U256::from(fee),
            deadline: U256::from(deadline),
        };
        let bundle = Bundle {
            payment: self.pool.pool,
            paymentData: Bytes::from(spend.abi_encode()),
            asset: ETH,
            fee: U256::from(fee),
            action: Action { target, value: U256::ZERO, gas: U256::from(ACTION_GAS), data: Bytes::from(data) },
        };
        Submission::new(self.deployment.chain_id, self.deployment.executor, relayer, bundle)
    }
}

/// The gas every test action is bound to (`Action.gas`): ample for the test targets.
const ACTION_GAS: u64 = 100_000;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

async fn world() -> World {
    let port = free_port();
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .unwrap()
        .expect("anvil starts");
    let url = anvil.url().to_owned();
    let deployer = deploy::signer(DEV_KEY).unwrap();
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(10u64).pow(U256::from(24u64)),
    };
    let deployment = deploy::deploy(&url, &deployer, params).await.expect("deploys");
    let pool = deploy_pool(&url, &deployer, deployment.executor, 64).await.expect("pool deploys");
    let provider = deploy::wallet_provider(&url, &deployer).unwrap();

    let (spend_keys, insert_keys) = tokio::task::spawn_blocking(|| {
        (nox_zk::groth16::testnet_setup().expect("spend setup"), nox_zk::insert::testnet_setup().expect("insert setup"))
    })
    .await
    .unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let seed = Seed::random(&mut rng);
    let me = seed.address().unwrap();
    // Six notes of 1 ETH, inserted in one batch.
    let contract = ShieldedPool::new(pool.pool, provider.clone());
    for _ in 0..6 {
        let amount = 10u128.pow(18);
        let note = nox_zk::Note::new(amount, Fr::from(0u64), me.owner, &mut rng);
        let memo = nox_wallet::memo::seal(&me.viewing, &Fr::from(0u64), amount, &note.blinding, &mut rng).unwrap();
        let inner = U256::from_be_bytes(field::to_be32(&note.inner().unwrap()));
        let receipt = contract
            .deposit(ETH, U256::from(amount), inner, Bytes::from(memo.to_vec()))
            .value(U256::from(amount))
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        assert!(receipt.status());
    }
    let mut w = World {
        _anvil: anvil,
        url,
        deployment,
        pool,
        provider,
        seed,
        view: PoolView::new(),
        pk: Arc::new(spend_keys.0),
        vk_hex: encode_verifying_key(&spend_keys.1),
        rng,
    };
    w.sync().await;
    let queued: Vec<Fr> = w.view.queued().map(|(_, c)| c).collect();
    let mut tree = w.view.tree().clone();
    let (public, witness) = tree.insert_batch(&queued).unwrap();
    let insert_pk = insert_keys.0;
    let mut prng = ChaCha20Rng::seed_from_u64(8);
    let proof = tokio::task::spawn_blocking(move || {
        let proof = nox_zk::insert::prove(&insert_pk, &public, &witness, &mut prng).unwrap();
        (nox_zk::groth16::proof_to_evm(&proof), public.new_root)
    })
    .await
    .unwrap();
    let mut words = [U256::ZERO; 8];
    for (x, c) in words.iter_mut().zip(proof.0.chunks_exact(32)) {
        *x = U256::from_be_slice(c);
    }
    let new_root = U256::from_be_bytes(field::to_be32(&proof.1));
    let count = U256::from(queued.len());
    let receipt =
        contract.insertBatch(words, new_root, count).send().await.unwrap().get_receipt().await.expect("insertBatch");
    assert!(receipt.status());
    w.sync().await;
    assert_eq!(w.view.balance(&Fr::from(0u64)).spendable, 6 * 10u128.pow(18));
    w
}

fn config(w: &World, dir: &Path, vk_hex: &str, policy: Policy) -> RelayerConfig {
    let key_file = dir.join("relayer.key");
    std::fs::write(&key_file, RELAYER_KEY).unwrap();
    let vk = dir.join("spend.vk");
    std::fs::write(&vk, vk_hex).unwrap();
    RelayerConfig {
        rpc_url: w.url.clone(),
        key_file,
        journal: dir.join("nonces.json"),
        verifying_key: vk,
        chain_id: w.deployment.chain_id,
        executor: w.deployment.executor,
        pool: w.pool.pool,
        tokens: Vec::new(),
        policy,
    }
}

fn refused(outcome: &Outcome) -> Reason {
    match outcome {
        Outcome::Refused { reason, .. } => *reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn submit(r: &Arc<Relayer>, s: &Submission) -> Outcome {
    // Through the byte interface the exit serves, as a client's request arrives.
    let body = RelayRequest::Submit(Box::new(s.clone())).encode();
    serde_json::from_slice(&r.handle(&body).await.expect("an answer")).expect("an outcome")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_bundle_is_relayed_and_every_refusal_holds() {
    let mut w = world().await;
    let vk_hex = w.vk_hex.clone();
    let dir = tempfile::tempdir().unwrap();
    let relayer = Relayer::start(config(&w, dir.path(), &vk_hex, Policy::default())).await.expect("relayer starts");
    let me = relayer.account();
    let other = deploy::signer(OTHER_KEY).unwrap().address();

    // The quote, through the byte interface.
    let quote: nox_relayer::Quote =
        serde_json::from_slice(&relayer.handle(&RelayRequest::Quote.encode()).await.unwrap()).unwrap();
    assert_eq!((quote.relayer, quote.executor, quote.pool), (me, w.deployment.executor, w.pool.pool));
    let quoted = quote.fee_for_action(ETH, 60_000).expect("ETH is priced");
    // Another price source plugs in: a relayer started with a feed quotes the feed's token at
    // the feed's price (and nothing else besides ETH).
    let feed_dir = tempfile::tempdir().unwrap();
    let priced = Address::repeat_byte(0x70);
    let fed =
        Relayer::start_with_feed(config(&w, feed_dir.path(), &vk_hex, Policy::default()), Arc::new(FixedFeed(priced)))
            .await
            .expect("a relayer with a price feed starts");
    let q: nox_relayer::Quote =
        serde_json::from_slice(&fed.handle(&RelayRequest::Quote.encode()).await.unwrap()).unwrap();
    let per_million = |asset: Address| q.prices.iter().find(|p| p.asset == asset).map(|p| p.per_million_gas);
    let eth_price = per_million(ETH).expect("ETH is priced");
    assert_eq!(per_million(priced), Some(eth_price * U256::from(2_000u64)), "the feed's price");
    assert_eq!(q.prices.len(), 2);
    drop(fed);
    let fee = u128::try_from(quoted).unwrap() * 3 / 2;

    // An action that succeeds: a view call on the stake token.
    let token = w.deployment.stake_token;
    let ok_call = NoxStakeToken::balanceOfCall { account: me }.abi_encode();
    let good = w.bundle(me, fee, token, ok_call.clone(), 600).await;

    // Cheap refusals, before any chain call.
    let mut wrong_exec = good.clone();
    wrong_exec.executor = Address::repeat_byte(9);
    assert_eq!(refused(&submit(&relayer, &wrong_exec).await), Reason::WrongExecutor);
    let mut wrong_chain = good.clone();
    wrong_chain.chain_id = 1;
    assert_eq!(refused(&submit(&relayer, &wrong_chain).await), Reason::WrongChain);
    // A payment to another relayer: named as such, or passed off as ours (the proof fails).
    let theirs = w.bundle(other, fee, token, ok_call.clone(), 600).await;
    assert_eq!(refused(&submit(&relayer, &theirs).await), Reason::WrongRelayer);
    let mut passed_off = theirs.clone();
    passed_off.relayer = me;
    assert_eq!(refused(&submit(&relayer, &passed_off).await), Reason::BadProof);
    // The proof binds the action: another calldata under the same payment fails.
    let mut swapped = good.clone();
    swapped.bundle.action.data = Bytes::from(NoxStakeToken::balanceOfCall { account: other }.abi_encode());
    let swapped = Submission::new(swapped.chain_id, swapped.executor, swapped.relayer, swapped.bundle);
    assert_eq!(refused(&submit(&relayer, &swapped).await), Reason::BadProof);
    let expiring = w.bundle(me, fee, token, ok_call.clone(), 20).await;
    assert_eq!(refused(&submit(&relayer, &expiring).await), Reason::Expired);
    assert_eq!(
        refused(&serde_json::from_slice(&relayer.handle(&[0x02, 0x00]).await.unwrap()).unwrap()),
        Reason::Malformed
    );

    // Unprofitable: a fee of 1000 wei, with the fee that would do in the answer.
    let cheap = w.bundle(me, 1000, token, ok_call.clone(), 600).await;
    match submit(&relayer, &cheap).await {
        Outcome::Refused { reason: Reason::Unprofitable, required_fee: Some(required), .. } => {
            assert!(required > U256::from(1000u64) && required <= U256::from(fee))
        }
        other => panic!("expected unprofitable, got {other:?}"),
    }

    // An action that reverts in simulation: refused, unless the client pays anyway.
    let bad_call = NoxStakeToken::transferCall { to: other, value: U256::from(1u64) }.abi_encode();
    let reverting = w.bundle(me, fee, token, bad_call.clone(), 600).await;
    assert_eq!(refused(&submit(&relayer, &reverting).await), Reason::ActionReverts);

    // Simulate-only: priced, never sent.
    let mut dry = good.clone();
    dry.simulate_only = true;
    let Outcome::Simulated { gas_limit, action_success: true, required_fee, .. } = submit(&relayer, &dry).await else {
        panic!("expected a simulation")
    };
    assert!(required_fee <= U256::from(fee) && gas_limit > 100_000);
    assert_eq!(relayer.next_nonce().await, 0, "nothing was sent so far");

    // The paid bundle, sent twice at once: one is included, the other refused as in flight
    // (or, if the first already landed, as spent).
    let ledger = RewardLedger::new(w.deployment.ledger, w.provider.clone());
    let (a, b) = tokio::join!(submit(&relayer, &good), submit(&relayer, &good));
    let (included, other_outcome) = if matches!(a, Outcome::Included { .. }) { (a, b) } else { (b, a) };
    let Outcome::Included { action_success: true, fee: paid, block, .. } = included else {
        panic!("expected inclusion, got {included:?}")
    };
    assert!(matches!(refused(&other_outcome), Reason::Replayed | Reason::Spent), "second copy: {other_outcome:?}");
    assert_eq!(paid, U256::from(fee));
    assert!(block > 0);
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(fee), "the relayer is credited");
    // Replayed after inclusion: the nullifier is spent.
    assert_eq!(refused(&submit(&relayer, &good).await), Reason::Spent);
    // Paying anyway for the reverting action: included, the fee credited, the action failed.
    // (Proven again: every bundle so far spent the same note, which is now spent.)
    w.sync().await;
    let mut anyway = w.bundle(me, fee, token, bad_call, 600).await;
    anyway.pay_on_revert = true;
    assert!(matches!(submit(&relayer, &anyway).await, Outcome::Included { action_success: false, .. }));
    assert_eq!(relayer.next_nonce().await, 2);
    assert!(relayer.pending().await.is_empty());

    // Killed mid-flight. Blocks stop being mined; a relayer in its own runtime sends a bundle
    // and dies with the runtime (its tasks with it) while the transaction is unmined.
    w.sync().await;
    let stuck = w.bundle(me, fee, token, ok_call.clone(), 600).await;
    w.provider.raw_request::<_, ()>("evm_setAutomine".into(), (false,)).await.unwrap();
    let cfg = config(&w, dir.path(), &vk_hex, Policy { wait_ms: 1_500, ..Policy::default() });
    let first = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            let r = Relayer::start(cfg).await.unwrap();
            let outcome = submit(&r, &stuck).await;
            (outcome, r.pending().await)
        })
    })
    .join()
    .unwrap();
    let (Outcome::Pending { tx_hash, .. }, journaled) = first else { panic!("expected pending, got {:?}", first.0) };
    assert_eq!(journaled.len(), 1);
    assert_eq!(journaled[0].nonce, 2);
    assert_eq!(journaled[0].hashes, vec![tx_hash]);

    // The new relayer resumes: rebroadcast, a fee bump while it stays unmined, then the receipt.
    let policy = Policy { bump_after_ms: 400, poll_ms: 100, ..Policy::default() };
    let resumed = Relayer::start(config(&w, dir.path(), &vk_hex, policy)).await.expect("restarts");
    assert_eq!(resumed.next_nonce().await, 3);
    let mut bumped = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if resumed.pending().await.first().is_some_and(|p| p.bumps >= 1) {
            bumped = true;
            break;
        }
    }
    assert!(bumped, "the stuck transaction's fee was bumped");
    w.provider.raw_request::<_, ()>("evm_setAutomine".into(), (true,)).await.unwrap();
    w.provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await.unwrap();
    for _ in 0..100 {
        if resumed.pending().await.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(resumed.pending().await.is_empty(), "tracked to its receipt");
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(3 * fee));
    // The next bundle takes the next nonce: none reused, none skipped.
    w.sync().await;
    let next = w.bundle(me, fee, token, ok_call.clone(), 600).await;
    let Outcome::Included { tx_hash, .. } = submit(&resumed, &next).await else { panic!("expected inclusion") };
    let tx = w.provider.get_transaction_by_hash(tx_hash).await.unwrap().unwrap();
    use alloy::consensus::Transaction;
    assert_eq!(tx.nonce(), 3);
    assert_eq!(w.provider.get_transaction_count(me).await.unwrap(), 4);

    // The chain node gone: the refusal and the failed quote say so without naming the node.
    w.sync().await;
    let late = w.bundle(me, fee, token, ok_call, 600).await;
    let host = w.url.trim_start_matches("http://").to_owned();
    drop(w);
    let outcome = submit(&resumed, &late).await;
    let Outcome::Refused { reason: Reason::Chain, detail, .. } = &outcome else {
        panic!("expected a chain refusal, got {outcome:?}")
    };
    assert!(!detail.contains(&host), "{detail}");
    let quote = resumed.handle(&RelayRequest::Quote.encode()).await.expect_err("no quote without a node");
    assert!(!quote.contains(&host), "{quote}");
}
