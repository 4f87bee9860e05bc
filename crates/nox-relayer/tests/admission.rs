//! Admission of a private transaction (`check::admit`), without a chain: one real transfer proof
//! (testnet key) for a payment-only bundle to relayer R is admitted by R, and each rule the pool's
//! `pay` would enforce refuses a changed copy before any chain call — the recipient rule both
//! ways, `publicIn`, amounts, equal nullifiers, inputs not below the field order, the fee and
//! asset against the bundle's — while a copy admitted by another relayer, on another chain or
//! for another pool fails the proof (the context the relayer computes names its own).

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolValue;
use ark_bn254::Fr;
use nox_relayer::abi::{Action, Bundle, Transaction};
use nox_relayer::check::{Admission, admit, claimed};
use nox_relayer::{Reason, Submission};
use nox_zk::merkle::Tree;
use nox_zk::transfer::{self, OutputNote, SpentNote, TransferContext, TransferRequest};
use nox_zk::{Note, SpendingKey, field};
use rand_chacha_03::ChaCha20Rng;
use rand_chacha_03::rand_core::{RngCore, SeedableRng};

const NOW: u64 = 1_800_000_000;
const FEE: u128 = 3_000_000_000_000_000;

fn admission() -> Admission {
    Admission {
        chain_id: 31337,
        executor: Address::repeat_byte(0xe0),
        relayer: Address::repeat_byte(0x7e),
        pool: Address::repeat_byte(0x90),
        assets: vec![Address::ZERO],
        min_validity: 60,
    }
}

/// A payment-only bundle to `a.relayer` spending one 1-ETH note, with a real proof.
fn good(a: &Admission) -> Submission {
    let mut rng = ChaCha20Rng::seed_from_u64(30);
    let mut sk_bytes = [0u8; 64];
    rng.fill_bytes(&mut sk_bytes);
    let sk = SpendingKey::from_wide_bytes(&sk_bytes);
    let owner = sk.owner().unwrap();
    let note = Note::new(10u128.pow(18), Fr::from(0u64), owner, &mut rng);
    let mut tree = Tree::new();
    tree.insert_batch(&[note.commitment().unwrap()]).unwrap();
    let action = Action { target: Address::ZERO, value: U256::ZERO, gas: U256::ZERO, data: Bytes::new() };
    let deadline = NOW + 600;
    let notes = [vec![1u8; 104], vec![2u8; 104]];
    let context = TransferContext {
        public_in: 0,
        public_out: 0,
        fee: FEE,
        relayer: a.relayer.0.0,
        execution_hash: field::execution_hash(&[0u8; 20], &[], FEE, 0).0,
        recipient: [0u8; 20],
        chain_id: a.chain_id,
        pool: a.pool.0.0,
        deadline,
        notes_hash: transfer::notes_hash(&notes[0], &notes[1]),
    };
    let left = 10u128.pow(18) - FEE;
    let to = nox_zk::poseidon::hash(&[Fr::from(5u64), Fr::from(6u64)]).unwrap();
    let change = nox_zk::poseidon::hash(&[owner, Fr::from(7u64)]).unwrap();
    let req = TransferRequest {
        sk,
        root: tree.root(),
        inputs: vec![SpentNote { note, path: tree.path(0).unwrap() }],
        outputs: vec![OutputNote::new(left / 2, to), OutputNote::new(left - left / 2, change)],
        asset: Fr::from(0u64),
        public_in: 0,
        public_out: 0,
        fee: FEE,
        context: context.hash(),
    };
    let (public, witness) = transfer::build(req, &mut rng).unwrap();
    let (pk, _) = transfer::testnet_keys().unwrap();
    let proof = transfer::prove_evm(pk, &public, &witness, &mut rng).unwrap();
    let u = |x: &Fr| U256::from_be_bytes(field::to_be32(x));
    let t = Transaction {
        proof: std::array::from_fn(|i| U256::from_be_slice(&proof[32 * i..32 * (i + 1)])),
        root: u(&public.root),
        nullifiers: public.nullifiers.each_ref().map(u),
        commitments: public.commitments.each_ref().map(u),
        asset: Address::ZERO,
        publicIn: U256::ZERO,
        publicOut: U256::ZERO,
        fee: U256::from(FEE),
        recipient: Address::ZERO,
        deadline: U256::from(deadline),
        notes: notes.map(Bytes::from),
    };
    let bundle = Bundle {
        payment: a.pool,
        paymentData: Bytes::from(t.abi_encode()),
        asset: Address::ZERO,
        fee: U256::from(FEE),
        action,
    };
    Submission::new(a.chain_id, a.executor, a.relayer, bundle)
}

fn with(s: &Submission, change: impl FnOnce(&mut Transaction)) -> Submission {
    let mut t = Transaction::abi_decode(&s.bundle.paymentData).unwrap();
    change(&mut t);
    let mut bundle = s.bundle.clone();
    bundle.paymentData = Bytes::from(t.abi_encode());
    Submission::new(s.chain_id, s.executor, s.relayer, bundle)
}

fn reason(a: &Admission, s: &Submission) -> (Reason, String) {
    let (_, vk) = transfer::testnet_keys().unwrap();
    admit(a, vk, s, NOW).expect_err("refused")
}

#[test]
fn a_private_transaction_is_admitted_only_as_the_pool_would_take_it() {
    let a = admission();
    let s = good(&a);
    let (_, vk) = transfer::testnet_keys().unwrap();
    let ok = admit(&a, vk, &s, NOW).expect("admitted");
    let t = Transaction::abi_decode(&s.bundle.paymentData).unwrap();
    assert_eq!((ok.nullifiers, ok.fee, ok.deadline), (t.nullifiers, U256::from(FEE), NOW + 600));
    assert_eq!(claimed(&s.bundle.paymentData), Some((t.nullifiers, NOW + 600)));

    // The recipient rule, both ways, and publicIn: refused before the proof.
    let r = reason(&a, &with(&s, |t| t.recipient = Address::repeat_byte(1)));
    assert_eq!(r.0, Reason::Malformed, "{}", r.1);
    assert!(r.1.contains("recipient"), "{}", r.1);
    let r = reason(&a, &with(&s, |t| t.publicOut = U256::from(1u64)));
    assert!(r.0 == Reason::Malformed && r.1.contains("recipient"), "{r:?}");
    let r = reason(&a, &with(&s, |t| t.publicIn = U256::from(1u64)));
    assert!(r.0 == Reason::Malformed && r.1.contains("publicIn"), "{r:?}");
    // Amounts: publicOut ≥ 2^128, publicOut + fee ≥ 2^128.
    let big = U256::from(1u64) << 128;
    let r = reason(
        &a,
        &with(&s, |t| {
            t.publicOut = big;
            t.recipient = Address::repeat_byte(1)
        }),
    );
    assert_eq!(r.0, Reason::Malformed, "{}", r.1);
    let r = reason(
        &a,
        &with(&s, |t| {
            t.publicOut = big - U256::from(1u64);
            t.recipient = Address::repeat_byte(1)
        }),
    );
    assert!(r.0 == Reason::Malformed && r.1.contains("publicOut + fee"), "{r:?}");
    // The same note twice; an input not below the field order.
    let r = reason(&a, &with(&s, |t| t.nullifiers[1] = t.nullifiers[0]));
    assert!(r.0 == Reason::Malformed && r.1.contains("equal"), "{r:?}");
    let r = reason(&a, &with(&s, |t| t.commitments[0] = U256::MAX));
    assert!(r.0 == Reason::Malformed && r.1.contains("field element"), "{r:?}");
    // Fee and asset must be the bundle's.
    let r = reason(&a, &with(&s, |t| t.fee += U256::from(1u64)));
    assert!(r.0 == Reason::Malformed && r.1.contains("fee"), "{r:?}");
    let r = reason(&a, &with(&s, |t| t.asset = Address::repeat_byte(5)));
    assert!(r.0 == Reason::Malformed && r.1.contains("asset"), "{r:?}");
    // Not a Transaction at all.
    let mut garbage = s.clone();
    garbage.bundle.paymentData = Bytes::from(vec![7u8; 100]);
    assert_eq!(reason(&a, &garbage).0, Reason::Malformed);
    assert_eq!(claimed(&garbage.bundle.paymentData), None);

    // The context names the admitting relayer, chain and pool: the same bundle admitted by a
    // relayer it was not made for (after the addressing checks pass) fails the proof.
    let other = Admission { relayer: Address::repeat_byte(0x7f), ..admission() };
    let passed_off = Submission::new(s.chain_id, s.executor, other.relayer, s.bundle.clone());
    assert_eq!(reason(&other, &passed_off).0, Reason::BadProof);
    let other_chain = Admission { chain_id: 1, ..admission() };
    let on_chain_1 = Submission::new(1, s.executor, s.relayer, s.bundle.clone());
    assert_eq!(reason(&other_chain, &on_chain_1).0, Reason::BadProof);
    let other_pool = Admission { pool: Address::repeat_byte(0x91), ..admission() };
    let mut to_pool = s.bundle.clone();
    to_pool.payment = other_pool.pool;
    assert_eq!(reason(&other_pool, &Submission::new(s.chain_id, s.executor, s.relayer, to_pool)).0, Reason::BadProof);
    // The recipient is bound too: set with a publicOut the proof did not make, the amounts and
    // the context both change.
    let r = reason(
        &a,
        &with(&s, |t| {
            t.publicOut = U256::from(1u64);
            t.recipient = Address::repeat_byte(1)
        }),
    );
    assert_eq!(r.0, Reason::BadProof);
    // The unchanged bundle is still admitted (none of the above was remembered here).
    assert!(admit(&a, vk, &s, NOW).is_ok());
}
