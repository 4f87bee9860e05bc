//! Shared fixtures: one testnet setup per test binary, and an honest payment.

use ark_bn254::Bn254 as E;
use ark_bn254::{Bn254, Fr};
use ark_groth16::Proof;
use nox_zk::{
    Note, PublicInputs, SpendingKey, Tree, Witness,
    field::{address, execution_hash},
    groth16::{ProvingKey, VerifyingKey, testnet_setup},
    note::random_scalar,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::OnceLock;

pub fn keys() -> &'static (ProvingKey<Bn254>, VerifyingKey<Bn254>) {
    static K: OnceLock<(ProvingKey<Bn254>, VerifyingKey<Bn254>)> = OnceLock::new();
    K.get_or_init(|| testnet_setup().expect("testnet setup"))
}

pub fn rng(seed: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([seed; 32])
}

pub const TOKEN: [u8; 20] = [0x70; 20];
pub const RELAYER: [u8; 20] = [0x5e; 20];
pub const POOL: [u8; 20] = [0xb0; 20];
pub const TARGET: [u8; 20] = [0xa1; 20];
pub const ACTION_CALLDATA: &[u8] = b"\x12\x34\x56\x78 the action";
/// The gas the vectors' action is bound to (`Action.gas`).
pub const ACTION_GAS: u64 = 100_000;

/// An honest payment: a note of `value` at leaf 3 of a small tree, paying `fee`.
pub struct Payment {
    pub public: PublicInputs,
    pub witness: Witness,
}

pub fn payment(seed: u8, value: u128, fee: u128) -> Payment {
    let mut r = rng(seed);
    let sk = SpendingKey::random(&mut r);
    let owner = sk.owner().expect("owner");
    let note = Note::new(value, address(&TOKEN), owner, &mut r);
    let mut tree = Tree::new();
    for _ in 0..3 {
        tree.push(random_scalar(&mut r)).expect("push");
    }
    let cm = note.commitment().expect("cm");
    let index = tree.push(cm).expect("push");
    tree.push(random_scalar(&mut r)).expect("push");
    let path = tree.path(index).expect("path");
    let change = value.saturating_sub(fee);
    let change_note = Note::new(change, note.asset, owner, &mut r);
    let change_inner = change_note.inner().expect("inner");
    let (_, eh) = execution_hash(&TARGET, ACTION_CALLDATA, fee, ACTION_GAS);
    let public = PublicInputs {
        root: tree.root(),
        nullifier: sk.nullifier(&cm, index).expect("nf"),
        change_commitment: change_note.commitment().expect("cm'"),
        fee: Fr::from(fee),
        asset: note.asset,
        relayer: address(&RELAYER),
        execution_hash: eh,
        chain_id: Fr::from(31337u64),
        pool: address(&POOL),
        deadline: Fr::from(1_900_000_000u64),
    };
    Payment { public, witness: Witness { sk, note, path, change_inner, change } }
}

/// The honest payment `payment(1, 1_000, 250)` and its proof (prover randomness `rng(9)`): the
/// committed EVM vector.
pub fn honest() -> &'static (Payment, Proof<E>) {
    static H: OnceLock<(Payment, Proof<E>)> = OnceLock::new();
    H.get_or_init(|| {
        let p = payment(1, 1_000, 250);
        let proof = nox_zk::groth16::prove(&keys().0, &p.public, &p.witness, &mut rng(9)).expect("prove");
        (p, proof)
    })
}

/// The insertion circuit's size (docs/design/zk-payment.md §4.3).
pub const INSERT_CONSTRAINTS: usize = 17_183;

pub fn insert_keys() -> &'static (ProvingKey<Bn254>, VerifyingKey<Bn254>) {
    static K: OnceLock<(ProvingKey<Bn254>, VerifyingKey<Bn254>)> = OnceLock::new();
    K.get_or_init(|| nox_zk::insert::testnet_setup().expect("insert testnet setup"))
}
