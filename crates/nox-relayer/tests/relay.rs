//! The relayer against a real Anvil with the real contracts and real Groth16 proofs of the
//! 2-in/2-out transfer statement (testnet key): a payment-only private transfer (action target
//! 0) is priced with its outputs' insertion share, submitted and credited; every refusal of the
//! relay issue and of issue 30 is shown (publicIn, a bad proof, a payment made for another
//! relayer, the same note's budget reached again by swapping the inputs, a spent second
//! nullifier, a call with calldata to an address with no code); a relayer killed mid-flight is
//! replaced by a new one that resumes from the journal, bumps the stuck transaction's fee,
//! tracks it to its receipt and never reuses its nonce.
//!
//! The notes are made here with `nox_zk` directly (deposits, then one insertion batch proven
//! with the testnet insertion key), so the test depends on the pool and the statement only.

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
use nox_relayer::abi::{Action, Bundle, Transaction};
use nox_relayer::price::TokenPrice;
use nox_relayer::{
    Outcome, Policy, PriceFeed, PriceFuture, Reason, RelayRequest, Relayer, RelayerConfig, Submission,
    encode_verifying_key,
};
use nox_zk::merkle::Tree;
use nox_zk::transfer::{self, OutputNote, SpentNote, TransferContext, TransferRequest};
use nox_zk::{Note, SpendingKey, field};
use rand_chacha_03::ChaCha20Rng;
use rand_chacha_03::rand_core::{RngCore, SeedableRng};

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
const OTHER_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const ETH: Address = Address::ZERO;
const NOTE_VALUE: u128 = 1_000_000_000_000_000_000;
/// Deposited notes (one insertion batch holds 16).
const NOTES: usize = 10;
/// Output ciphertexts: any bytes of the one length the pool accepts (`ShieldedPool.NOTE_LEN`;
/// it binds them, reads nothing in them).
const NOTE_LEN: usize = 104;

/// The gas every calling test action is bound to (`Action.gas`): ample for the test targets.
const ACTION_GAS: u64 = 100_000;

struct World {
    _anvil: Anvil,
    url: String,
    deployment: Deployment,
    pool: PoolDeployment,
    provider: DynProvider,
    /// The spending key's bytes (`SpendingKey` is not `Clone`: a witness consumes one).
    sk: [u8; 64],
    /// The deposited notes, in queue (= leaf) order.
    notes: Vec<Note>,
    tree: Tree,
    vk_hex: String,
    rng: ChaCha20Rng,
}

/// What a test transaction does besides paying its fee.
#[derive(Clone)]
struct Spec {
    relayer: Address,
    fee: u128,
    /// Indexes into `World::notes`, in input order.
    inputs: Vec<usize>,
    action: Action,
    public_out: u128,
    recipient: Address,
    valid_for: u64,
}

impl World {
    fn payment_only(&self, relayer: Address, fee: u128, inputs: Vec<usize>) -> Spec {
        Spec { relayer, fee, inputs, action: payment_only(), public_out: 0, recipient: ETH, valid_for: 600 }
    }

    fn calling(&self, relayer: Address, fee: u128, inputs: Vec<usize>, target: Address, data: Vec<u8>) -> Spec {
        let action = Action { target, value: U256::ZERO, gas: U256::from(ACTION_GAS), data: Bytes::from(data) };
        Spec { action, ..self.payment_only(relayer, fee, inputs) }
    }

    /// A bundle whose payment is one private transaction spending `spec.inputs` into a note to
    /// someone else and the change, proven now for the context the pool will compute.
    async fn bundle(&mut self, spec: &Spec) -> Submission {
        let now = self.provider.get_block_by_number(Default::default()).await.unwrap().unwrap().header.timestamp;
        let deadline = now + spec.valid_for;
        let fee = spec.fee;
        let gas = u64::try_from(spec.action.gas).unwrap();
        let (execution_hash, _) = field::execution_hash(&spec.action.target.0.0, &spec.action.data, fee, gas);
        let mut notes = [vec![0u8; NOTE_LEN], vec![0u8; NOTE_LEN]];
        for n in &mut notes {
            self.rng.fill_bytes(n);
        }
        let context = TransferContext {
            public_in: 0,
            public_out: spec.public_out,
            fee,
            relayer: spec.relayer.0.0,
            execution_hash,
            recipient: spec.recipient.0.0,
            chain_id: self.deployment.chain_id,
            pool: self.pool.pool.0.0,
            deadline,
            notes_hash: transfer::notes_hash(&notes[0], &notes[1]),
        };
        let inputs: Vec<SpentNote> = spec
            .inputs
            .iter()
            .map(|&i| SpentNote { note: self.notes[i].clone(), path: self.tree.path(i as u64).unwrap() })
            .collect();
        let total: u128 = spec.inputs.iter().map(|&i| self.notes[i].value).sum();
        let left = total - fee - spec.public_out;
        // A note to someone else (a random owner) and the change back to the spender.
        let someone = nox_zk::note::random_scalar(&mut self.rng);
        let owner = SpendingKey::from_wide_bytes(&self.sk).owner().unwrap();
        let to = nox_zk::poseidon::hash(&[someone, nox_zk::note::random_scalar(&mut self.rng)]).unwrap();
        let change = nox_zk::poseidon::hash(&[owner, nox_zk::note::random_scalar(&mut self.rng)]).unwrap();
        let req = TransferRequest {
            sk: SpendingKey::from_wide_bytes(&self.sk),
            root: self.tree.root(),
            inputs,
            outputs: vec![OutputNote::new(left / 4, to), OutputNote::new(left - left / 4, change)],
            asset: Fr::from(0u64),
            public_in: 0,
            public_out: spec.public_out,
            fee,
            context: context.hash(),
        };
        let mut rng = ChaCha20Rng::from_rng(&mut self.rng).unwrap();
        let started = std::time::Instant::now();
        let (public, proof) = tokio::task::spawn_blocking(move || {
            let (pk, _) = transfer::testnet_keys().expect("testnet transfer key");
            let (public, witness) = transfer::build(req, &mut rng).expect("a balanced transaction");
            let proof = transfer::prove_evm(pk, &public, &witness, &mut rng).expect("proves");
            (public, proof)
        })
        .await
        .unwrap();
        eprintln!("proof for inputs {:?}: {:?}", spec.inputs, started.elapsed());
        let u = |x: &Fr| U256::from_be_bytes(field::to_be32(x));
        let mut words = [U256::ZERO; 8];
        for (w, c) in words.iter_mut().zip(proof.chunks_exact(32)) {
            *w = U256::from_be_slice(c);
        }
        let t = Transaction {
            proof: words,
            root: u(&public.root),
            nullifiers: public.nullifiers.each_ref().map(u),
            commitments: public.commitments.each_ref().map(u),
            asset: ETH,
            publicIn: U256::ZERO,
            publicOut: U256::from(spec.public_out),
            fee: U256::from(fee),
            recipient: spec.recipient,
            deadline: U256::from(deadline),
            notes: notes.map(Bytes::from),
        };
        let bundle = Bundle {
            payment: self.pool.pool,
            paymentData: Bytes::from(t.abi_encode()),
            asset: ETH,
            fee: U256::from(fee),
            action: spec.action.clone(),
        };
        Submission::new(self.deployment.chain_id, self.deployment.executor, spec.relayer, bundle)
    }
}

/// The action of a payment-only bundle (a private transfer, split, join or withdrawal paid
/// through the mixnet): nothing to call.
fn payment_only() -> Action {
    Action { target: Address::ZERO, value: U256::ZERO, gas: U256::ZERO, data: Bytes::new() }
}

/// The payment of `s`, decoded.
fn transaction(s: &Submission) -> Transaction {
    Transaction::abi_decode(&s.bundle.paymentData).unwrap()
}

/// `s` with its payment replaced by `t` (and the calldata re-encoded).
fn with_transaction(s: &Submission, t: &Transaction) -> Submission {
    let mut bundle = s.bundle.clone();
    bundle.paymentData = Bytes::from(t.abi_encode());
    let mut out = Submission::new(s.chain_id, s.executor, s.relayer, bundle);
    (out.pay_on_revert, out.simulate_only) = (s.pay_on_revert, s.simulate_only);
    out
}

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

    let (vk, insert_pk) = tokio::task::spawn_blocking(|| {
        let (_, vk) = transfer::testnet_keys().expect("transfer setup");
        (vk.clone(), nox_zk::insert::testnet_setup().expect("insert setup").0)
    })
    .await
    .unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let mut sk = [0u8; 64];
    rng.fill_bytes(&mut sk);
    let owner = SpendingKey::from_wide_bytes(&sk).owner().unwrap();
    let contract = ShieldedPool::new(pool.pool, provider.clone());
    let mut notes = Vec::new();
    let mut tree = Tree::new();
    for _ in 0..NOTES {
        let note = Note::new(NOTE_VALUE, Fr::from(0u64), owner, &mut rng);
        let inner = U256::from_be_bytes(field::to_be32(&note.inner().unwrap()));
        let receipt = contract
            .deposit(ETH, U256::from(NOTE_VALUE), inner, Bytes::from(vec![2u8; NOTE_LEN]))
            .value(U256::from(NOTE_VALUE))
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        assert!(receipt.status());
        notes.push(note);
    }
    let leaves: Vec<Fr> = notes.iter().map(|n| n.commitment().unwrap()).collect();
    let (public, witness) = tree.insert_batch(&leaves).unwrap();
    let mut prng = ChaCha20Rng::seed_from_u64(8);
    let (proof, new_root) = tokio::task::spawn_blocking(move || {
        let proof = nox_zk::insert::prove(&insert_pk, &public, &witness, &mut prng).unwrap();
        (nox_zk::groth16::proof_to_evm(&proof), public.new_root)
    })
    .await
    .unwrap();
    let mut words = [U256::ZERO; 8];
    for (x, c) in words.iter_mut().zip(proof.chunks_exact(32)) {
        *x = U256::from_be_slice(c);
    }
    let new_root = U256::from_be_bytes(field::to_be32(&new_root));
    let receipt = contract
        .insertBatch(words, new_root, leaves.iter().map(|c| U256::from_be_bytes(field::to_be32(c))).collect())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .expect("insertBatch");
    assert!(receipt.status());
    assert_eq!(contract.currentRoot().call().await.unwrap(), U256::from_be_bytes(field::to_be32(&tree.root())));
    World { _anvil: anvil, url, deployment, pool, provider, sk, notes, tree, vk_hex: encode_verifying_key(&vk), rng }
}

fn config(w: &World, dir: &Path, vk_hex: &str, policy: Policy) -> RelayerConfig {
    let key_file = dir.join("relayer.key");
    std::fs::write(&key_file, RELAYER_KEY).unwrap();
    let vk = dir.join("transfer.vk");
    std::fs::write(&vk, vk_hex).unwrap();
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
async fn private_transactions_are_relayed_and_every_refusal_holds() {
    let mut w = world().await;
    let vk_hex = w.vk_hex.clone();
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::default();
    let relayer = Relayer::start(config(&w, dir.path(), &vk_hex, policy.clone())).await.expect("relayer starts");
    let me = relayer.account();
    let other = deploy::signer(OTHER_KEY).unwrap().address();
    let pool = ShieldedPool::new(w.pool.pool, w.provider.clone());

    // The quote, through the byte interface: a payment-only bundle (action gas 0) is priced
    // for its gas limit and the insertion share of its two outputs.
    let quote: nox_relayer::Quote =
        serde_json::from_slice(&relayer.handle(&RelayRequest::Quote.encode()).await.unwrap()).unwrap();
    assert_eq!((quote.relayer, quote.executor, quote.pool), (me, w.deployment.executor, w.pool.pool));
    assert_eq!(quote.insertion_gas, policy.insertion_gas());
    assert_eq!(quote.insertion_gas, 34_250, "2 × 548,000 / 32");
    let limit = nox_relayer::price::gas_limit(quote.payment_gas, 0, quote.gas_extra_bps);
    let quoted = quote.fee_for_action(ETH, 0).expect("ETH is priced");
    assert_eq!(Some(quoted), quote.fee_for(ETH, limit + quote.insertion_gas));
    assert!(quoted > quote.fee_for(ETH, limit).unwrap(), "the insertion share is charged");
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
    assert_eq!(per_million(priced), Some(per_million(ETH).expect("ETH is priced") * U256::from(2_000u64)));
    assert_eq!(q.prices.len(), 2);
    drop(fed);
    let fee = u128::try_from(quote.fee_for_action(ETH, ACTION_GAS).unwrap()).unwrap() * 3 / 2;

    // A payment-only private transfer: note 0 → a note to someone else + change, fee to us.
    let spec = w.payment_only(me, fee, vec![0]);
    let good = w.bundle(&spec).await;
    let good_tx = transaction(&good);

    // Cheap refusals, before any chain call.
    let mut wrong_exec = good.clone();
    wrong_exec.executor = Address::repeat_byte(9);
    assert_eq!(refused(&submit(&relayer, &wrong_exec).await), Reason::WrongExecutor);
    let mut wrong_chain = good.clone();
    wrong_chain.chain_id = 1;
    assert_eq!(refused(&submit(&relayer, &wrong_chain).await), Reason::WrongChain);
    // publicIn: a paid transaction cannot bring value in (the pool refuses it in `pay`).
    let mut t = good_tx.clone();
    t.publicIn = U256::from(1u64);
    let Outcome::Refused { reason: Reason::Malformed, detail, .. } =
        submit(&relayer, &with_transaction(&good, &t)).await
    else {
        panic!("publicIn must be refused")
    };
    assert!(detail.contains("publicIn"), "{detail}");
    // The same note twice (two equal nullifiers): refused before the proof.
    let mut t = good_tx.clone();
    t.nullifiers[1] = t.nullifiers[0];
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::Malformed);
    // A bad proof: one word changed.
    let mut t = good_tx.clone();
    t.proof[7] ^= U256::from(1u64);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // A tampered ciphertext (the notes are bound through the context): the proof fails.
    let mut t = good_tx.clone();
    let mut n0 = t.notes[0].to_vec();
    n0[0] ^= 1;
    t.notes[0] = Bytes::from(n0);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // Swapping the outputs' ciphertexts, or the nullifiers' order: the proof fails.
    let mut t = good_tx.clone();
    t.notes.swap(0, 1);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    let mut t = good_tx.clone();
    t.nullifiers.swap(0, 1);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // A payment to another relayer: named as such, or passed off as ours (the context the
    // relayer computes names itself, so the proof fails).
    let theirs = w.bundle(&w.payment_only(other, fee, vec![1])).await;
    assert_eq!(refused(&submit(&relayer, &theirs).await), Reason::WrongRelayer);
    let mut passed_off = theirs.clone();
    passed_off.relayer = me;
    assert_eq!(refused(&submit(&relayer, &passed_off).await), Reason::BadProof);
    // The proof binds the action: a call put under the payment-only payment fails.
    let mut swapped = good.clone();
    swapped.bundle.action = Action {
        target: w.deployment.stake_token,
        value: U256::ZERO,
        gas: U256::from(ACTION_GAS),
        data: Bytes::from(NoxStakeToken::balanceOfCall { account: other }.abi_encode()),
    };
    let swapped = Submission::new(swapped.chain_id, swapped.executor, swapped.relayer, swapped.bundle);
    assert_eq!(refused(&submit(&relayer, &swapped).await), Reason::BadProof);
    // Too close to its deadline (checked before the proof: the deadline is changed here).
    let mut t = good_tx.clone();
    t.deadline -= U256::from(600 - 20);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::Expired);
    assert_eq!(
        refused(&serde_json::from_slice(&relayer.handle(&[0x02, 0x00]).await.unwrap()).unwrap()),
        Reason::Malformed
    );

    // Unprofitable: a fee of 1000 wei, with the fee that would do in the answer — at least the
    // gas limit and the insertion share at the quoted price.
    let cheap = w.bundle(&w.payment_only(me, 1000, vec![1])).await;
    match submit(&relayer, &cheap).await {
        Outcome::Refused { reason: Reason::Unprofitable, required_fee: Some(required), detail } => {
            assert!(required > U256::from(1000u64) && required <= U256::from(fee), "{required}");
            assert!(detail.contains("insertion share 34250 gas"), "{detail}");
        }
        other => panic!("expected unprofitable, got {other:?}"),
    }

    // The payment-only bundle, sent twice at once: one is included, the other refused as in
    // flight (or, if the first already landed, as spent).
    let ledger = RewardLedger::new(w.deployment.ledger, w.provider.clone());
    let (a, b) = tokio::join!(submit(&relayer, &good), submit(&relayer, &good));
    let (included, other_outcome) = if matches!(a, Outcome::Included { .. }) { (a, b) } else { (b, a) };
    let Outcome::Included { action_success: true, fee: paid, gas_used, .. } = included else {
        panic!("expected inclusion, got {included:?}")
    };
    assert!(matches!(refused(&other_outcome), Reason::Replayed | Reason::Spent), "second copy: {other_outcome:?}");
    assert_eq!(paid, U256::from(fee));
    eprintln!("payment-only private transfer relayed: {gas_used} gas (executor, pool, verifier, relayer credit)");
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(fee), "the relayer is credited");
    for n in good_tx.nullifiers {
        assert!(pool.isSpent(n).call().await.unwrap(), "both nullifiers spent on chain");
    }
    assert_eq!(pool.nextQueueIndex().call().await.unwrap(), U256::from(NOTES + 2), "both outputs queued");
    // Replayed after inclusion: its nullifiers are spent.
    assert_eq!(refused(&submit(&relayer, &good).await), Reason::Spent);

    // A spent SECOND nullifier: note 2 first, the spent note 0 second. Refused from the
    // relayer's memory of its own inclusion, and by a relayer that never saw it, from the pool.
    let second_spent = w.bundle(&w.payment_only(me, fee, vec![2, 0])).await;
    assert_eq!(transaction(&second_spent).nullifiers[1], good_tx.nullifiers[0]);
    assert_eq!(refused(&submit(&relayer, &second_spent).await), Reason::Spent);
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Relayer::start(config(&w, fresh_dir.path(), &vk_hex, Policy::default())).await.unwrap();
    let Outcome::Refused { reason: Reason::Spent, detail, .. } = submit(&fresh, &second_spent).await else {
        panic!("a spent second nullifier must be refused")
    };
    assert!(!detail.contains("refused recently"), "checked on the pool, not remembered: {detail}");
    assert_eq!(fresh.stats().verifications, 1);
    drop(fresh);

    // The same notes' budget is not bought again by swapping the inputs: with two simulation
    // rounds per nullifier, (3, 4) simulated twice leaves no round for (4, 3).
    let budget_dir = tempfile::tempdir().unwrap();
    let budgeted = Relayer::start(config(
        &w,
        budget_dir.path(),
        &vk_hex,
        Policy { per_nullifier_simulations: 2, ..Policy::default() },
    ))
    .await
    .unwrap();
    let mut forward = w.bundle(&w.payment_only(me, fee, vec![3, 4])).await;
    let mut backward = w.bundle(&w.payment_only(me, fee, vec![4, 3])).await;
    forward.simulate_only = true;
    backward.simulate_only = true;
    let (f, b) = (transaction(&forward).nullifiers, transaction(&backward).nullifiers);
    assert_eq!((f[0], f[1]), (b[1], b[0]), "the same two nullifiers, swapped");
    for _ in 0..2 {
        assert!(matches!(submit(&budgeted, &forward).await, Outcome::Simulated { .. }));
    }
    let Outcome::Refused { reason: Reason::Throttled, detail, .. } = submit(&budgeted, &backward).await else {
        panic!("the swapped payment must hit the same budget")
    };
    assert!(detail.contains("simulated 2 times"), "{detail}");
    assert_eq!(budgeted.stats().guard.nullifier_throttled, 1);
    drop(budgeted);

    // A call with calldata to an address with no code (a typo'd target) "succeeds" doing
    // nothing: refused, the fee not taken (issue 35).
    let typo = Address::repeat_byte(0xab);
    let data = NoxStakeToken::balanceOfCall { account: me }.abi_encode();
    let nowhere = w.bundle(&w.calling(me, fee, vec![3], typo, data.clone())).await;
    assert_eq!(refused(&submit(&relayer, &nowhere).await), Reason::NoCode);

    // A paid withdrawal: note 3 → publicOut to a fresh address, the fee to us, change kept.
    let fresh_address = Address::repeat_byte(0xfe);
    let out = NOTE_VALUE / 2;
    let withdrawal =
        w.bundle(&Spec { public_out: out, recipient: fresh_address, ..w.payment_only(me, fee, vec![3]) }).await;
    let Outcome::Included { action_success: true, gas_used, gas_limit, .. } = submit(&relayer, &withdrawal).await
    else {
        panic!("the paid withdrawal must be included")
    };
    eprintln!("paid withdrawal relayed: {gas_used} gas (limit {gas_limit})");
    assert_eq!(w.provider.get_balance(fresh_address).await.unwrap(), U256::from(out));
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(2 * fee));

    // An action that succeeds (a view call on the stake token), and one that reverts: refused,
    // unless the client pays anyway.
    let token = w.deployment.stake_token;
    let bad_call = NoxStakeToken::transferCall { to: other, value: U256::from(1u64) }.abi_encode();
    let mut reverting = w.bundle(&w.calling(me, fee, vec![4], token, bad_call)).await;
    assert_eq!(refused(&submit(&relayer, &reverting).await), Reason::ActionReverts);
    reverting.pay_on_revert = true;
    assert!(matches!(submit(&relayer, &reverting).await, Outcome::Included { action_success: false, .. }));
    assert_eq!(relayer.next_nonce().await, 3);
    assert!(relayer.pending().await.is_empty());

    // Killed mid-flight. Blocks stop being mined; a relayer in its own runtime sends a bundle
    // and dies with the runtime (its tasks with it) while the transaction is unmined.
    let stuck = w.bundle(&w.calling(me, fee, vec![5], token, data.clone())).await;
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
    assert_eq!(journaled[0].nonce, 3);
    assert_eq!(journaled[0].hashes, vec![tx_hash]);

    // The new relayer resumes: rebroadcast, a fee bump while it stays unmined, then the receipt.
    let policy = Policy { bump_after_ms: 400, poll_ms: 100, ..Policy::default() };
    let resumed = Relayer::start(config(&w, dir.path(), &vk_hex, policy)).await.expect("restarts");
    assert_eq!(resumed.next_nonce().await, 4);
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
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(4 * fee));
    // The next bundle takes the next nonce: none reused, none skipped.
    let next = w.bundle(&w.payment_only(me, fee, vec![6])).await;
    let Outcome::Included { tx_hash, .. } = submit(&resumed, &next).await else { panic!("expected inclusion") };
    let tx = w.provider.get_transaction_by_hash(tx_hash).await.unwrap().unwrap();
    use alloy::consensus::Transaction as _;
    assert_eq!(tx.nonce(), 4);
    assert_eq!(w.provider.get_transaction_count(me).await.unwrap(), 5);

    // The chain node gone: the refusal and the failed quote say so without naming the node.
    // (The cheap bundle's proof still verifies; this relayer never refused it.)
    let late = cheap;
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
