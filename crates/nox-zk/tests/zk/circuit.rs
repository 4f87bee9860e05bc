//! Soundness of the gas-payment statement: what must verify does, and every substitution the
//! binding exists to stop is refused — by the verifier (a changed public input) or by the
//! constraint system (a statement no witness satisfies, so no proof exists).

use crate::common::{self, *};
use ark_bn254::Fr;
use ark_ff::{Field, PrimeField};
use nox_zk::{
    PublicInputs, SpendingKey, ZkError, constraint_count,
    field::{address, execution_hash},
    groth16::{proof_from_evm, proof_to_evm, prove, verify},
    is_satisfied,
};

#[test]
fn honest_payment_verifies_and_roundtrips_through_evm_encoding() {
    let (_, vk) = common::keys();
    let (p, proof) = common::honest();
    verify(vk, &p.public, proof).expect("verifies");
    let bytes = proof_to_evm(proof);
    assert_eq!(bytes.len(), 256);
    assert_eq!(&proof_from_evm(&bytes).expect("decode"), proof);
}

/// One proof, every public input changed in turn: each must be refused.
#[test]
fn proof_is_bound_to_every_public_input() {
    let (_, vk) = common::keys();
    let (p, proof) = common::honest();
    let (_, other_action) = execution_hash(&TARGET, b"another action", 250, ACTION_GAS);
    let (_, other_fee_hash) = execution_hash(&TARGET, ACTION_CALLDATA, 251, ACTION_GAS);
    type Edit = fn(&mut PublicInputs, Fr, Fr);
    let edits: [(&str, Edit); 12] = [
        ("execution hash (other action)", |p, a, _| p.execution_hash = a),
        ("execution hash (other fee)", |p, _, f| p.execution_hash = f),
        ("fee", |p, _, _| p.fee = Fr::from(251u64)),
        ("relayer", |p, _, _| p.relayer = address(&[0x66; 20])),
        ("root", |p, _, _| p.root += Fr::ONE),
        ("chain id", |p, _, _| p.chain_id = Fr::from(1u64)),
        ("pool", |p, _, _| p.pool = address(&[0xb1; 20])),
        ("deadline", |p, _, _| p.deadline += Fr::ONE),
        ("nullifier", |p, _, _| p.nullifier += Fr::ONE),
        ("change commitment", |p, _, _| p.change_commitment += Fr::ONE),
        ("asset", |p, _, _| p.asset = address(&[0x71; 20])),
        ("fee and change swapped", |p, _, _| p.fee = Fr::from(750u64)),
    ];
    for (what, edit) in edits {
        let mut public = p.public.clone();
        edit(&mut public, other_action, other_fee_hash);
        assert_ne!(public, p.public, "{what}: the edit must change something");
        assert_eq!(verify(vk, &public, proof), Err(ZkError::ProofRejected), "{what}");
    }
}

#[test]
fn paying_more_than_the_note_holds_is_unsatisfiable() {
    let (pk, _) = common::keys();
    // change = value − fee would underflow; any u128 change fails value = fee + change.
    let mut p = payment(3, 100, 101);
    for change in [0u128, 1, u128::MAX] {
        p.witness.change = change;
        assert!(!is_satisfied(&p.public, &p.witness).expect("synth"), "change {change}");
    }
    assert!(prove(pk, &p.public, &p.witness, &mut rng(1)).is_err());
}

/// The field wrap-around of the published reference: fee = value + k and change = p − k satisfy
/// `value = fee + change (mod p)`. Here `change` must fit in 128 bits, so it cannot be p − k;
/// and a fee ≥ 2^128 fails its own range check.
#[test]
fn value_wrap_around_is_unsatisfiable() {
    let mut p = payment(4, 100, 100);
    // The honest statement with fee = value (change 0) holds.
    assert!(is_satisfied(&p.public, &p.witness).expect("synth"));
    // A fee of value + 5 with change ≡ −5 (mod p): the integer change would be p − 5.
    p.public.fee = Fr::from(105u64);
    for change in [u128::MAX, u128::MAX - 4] {
        p.witness.change = change;
        assert!(!is_satisfied(&p.public, &p.witness).expect("synth"));
    }
    // A fee of 2^128 + 100 with change... the fee's range check alone fails.
    let mut q = payment(5, 100, 0);
    q.public.fee = Fr::from(2u64).pow([128]) + Fr::from(100u64);
    q.witness.change = 0;
    assert!(!is_satisfied(&q.public, &q.witness).expect("synth"));
    // A "fee" of p − 5 (that is, −5): the pool would credit a huge fee; refused.
    let mut r = payment(6, 100, 0);
    r.public.fee = -Fr::from(5u64);
    r.witness.change = 105;
    assert!(!is_satisfied(&r.public, &r.witness).expect("synth"));
}

#[test]
fn another_spending_key_cannot_spend_or_derive_the_nullifier() {
    let mut p = payment(7, 1_000, 10);
    let thief = SpendingKey::random(&mut rng(77));
    let cm = p.witness.note.commitment().expect("cm");
    // The thief knows the whole note (value, asset, owner, blinding) and its position.
    let thief_nf = thief.nullifier(&cm, p.witness.path.index).expect("nf");
    assert_ne!(thief_nf, p.public.nullifier);
    p.witness.sk = thief;
    assert!(!is_satisfied(&p.public, &p.witness).expect("synth"));
    p.public.nullifier = thief_nf;
    assert!(!is_satisfied(&p.public, &p.witness).expect("synth"));
}

#[test]
fn a_note_outside_the_tree_or_at_another_position_is_unsatisfiable() {
    let mut p = payment(8, 1_000, 10);
    assert!(is_satisfied(&p.public, &p.witness).expect("synth"));
    p.witness.path.index ^= 1;
    assert!(!is_satisfied(&p.public, &p.witness).expect("synth"));
    let mut q = payment(8, 1_000, 10);
    q.witness.note.value += 1;
    q.witness.change += 1;
    assert!(!is_satisfied(&q.public, &q.witness).expect("synth"));
}

#[test]
fn inputs_at_or_above_the_field_are_not_scalars() {
    let p_bytes = {
        let mut b = [0u8; 32];
        b.copy_from_slice(&ark_ff::BigInteger::to_bytes_be(&Fr::MODULUS));
        b
    };
    assert_eq!(nox_zk::field::from_be32(&p_bytes), Err(ZkError::NonCanonicalScalar));
}

#[test]
fn constraint_count_is_what_the_docs_say() {
    let (constraints, witnesses, instances) = constraint_count().expect("count");
    println!("constraints {constraints}, witness vars {witnesses}, instance vars {instances}");
    assert_eq!(instances, 11); // the constant 1 and ten public inputs
    // docs/design/zk-payment.md §5 and docs/benchmarks/zk.md quote this figure.
    assert_eq!(constraints, 9_408);
}
