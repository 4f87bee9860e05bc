//! The relay test's world: Anvil with the real contracts, ten deposited notes inserted with a real
//! insertion proof, bundles proven with the testnet transfer key, and the relayer's configuration.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::sol_types::SolValue;
use ark_bn254::Fr;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
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
pub(crate) struct FixedFeed(pub(crate) Address);

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
pub(crate) const OTHER_KEY: &str = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
pub(crate) const ETH: Address = Address::ZERO;
pub(crate) const NOTE_VALUE: u128 = 1_000_000_000_000_000_000;
/// Deposited notes (one insertion batch holds 16).
pub(crate) const NOTES: usize = 10;
/// Output ciphertexts: any bytes of the one length the pool accepts (`ShieldedPool.NOTE_LEN`;
/// it binds them, reads nothing in them).
const NOTE_LEN: usize = 104;

/// The gas every calling test action is bound to (`Action.gas`): ample for the test targets.
pub(crate) const ACTION_GAS: u64 = 100_000;

pub(crate) struct World {
    _anvil: Anvil,
    pub(crate) url: String,
    pub(crate) deployment: Deployment,
    pub(crate) pool: PoolDeployment,
    pub(crate) provider: DynProvider,
    /// The spending key's bytes (`SpendingKey` is not `Clone`: a witness consumes one).
    sk: [u8; 64],
    /// The deposited notes, in queue (= leaf) order.
    notes: Vec<Note>,
    tree: Tree,
    pub(crate) vk_hex: String,
    rng: ChaCha20Rng,
}

/// What a test transaction does besides paying its fee.
#[derive(Clone)]
pub(crate) struct Spec {
    pub(crate) relayer: Address,
    pub(crate) fee: u128,
    /// Indexes into `World::notes`, in input order.
    pub(crate) inputs: Vec<usize>,
    pub(crate) action: Action,
    pub(crate) public_out: u128,
    pub(crate) recipient: Address,
    pub(crate) valid_for: u64,
}

impl World {
    pub(crate) fn payment_only(&self, relayer: Address, fee: u128, inputs: Vec<usize>) -> Spec {
        Spec { relayer, fee, inputs, action: payment_only(), public_out: 0, recipient: ETH, valid_for: 600 }
    }

    pub(crate) fn calling(
        &self,
        relayer: Address,
        fee: u128,
        inputs: Vec<usize>,
        target: Address,
        data: Vec<u8>,
    ) -> Spec {
        let action = Action { target, value: U256::ZERO, gas: U256::from(ACTION_GAS), data: Bytes::from(data) };
        Spec { action, ..self.payment_only(relayer, fee, inputs) }
    }

    /// A bundle whose payment is one private transaction spending `spec.inputs` into a note to
    /// someone else and the change, proven now for the context the pool will compute.
    pub(crate) async fn bundle(&mut self, spec: &Spec) -> Submission {
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
pub(crate) fn transaction(s: &Submission) -> Transaction {
    Transaction::abi_decode(&s.bundle.paymentData).unwrap()
}

/// `s` with its payment replaced by `t` (and the calldata re-encoded).
pub(crate) fn with_transaction(s: &Submission, t: &Transaction) -> Submission {
    let mut bundle = s.bundle.clone();
    bundle.paymentData = Bytes::from(t.abi_encode());
    let mut out = Submission::new(s.chain_id, s.executor, s.relayer, bundle);
    (out.pay_on_revert, out.simulate_only) = (s.pay_on_revert, s.simulate_only);
    out
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

pub(crate) async fn world() -> World {
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

pub(crate) fn config(w: &World, dir: &Path, vk_hex: &str, policy: Policy) -> RelayerConfig {
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

pub(crate) fn refused(outcome: &Outcome) -> Reason {
    match outcome {
        Outcome::Refused { reason, .. } => *reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub(crate) async fn submit(r: &Arc<Relayer>, s: &Submission) -> Outcome {
    // Through the byte interface the exit serves, as a client's request arrives.
    let body = RelayRequest::Submit(Box::new(s.clone())).encode();
    serde_json::from_slice(&r.handle(&body).await.expect("an answer")).expect("an outcome")
}
