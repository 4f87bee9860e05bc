//! The batch-insertion circuit: honest batches verify, every input is bound, and the attacks an
//! inserter could try (overwriting leaves, an unaligned batch, a made-up root) have no witness.

use crate::common::*;
use ark_bn254::Fr;
use nox_zk::{
    Tree, ZkError,
    insert::{self, BATCH_SIZE, InsertPublic, InsertWitness},
    note::random_scalar,
};

fn leaves(seed: u8, n: usize) -> Vec<Fr> {
    let mut r = rng(seed);
    (0..n).map(|_| random_scalar(&mut r)).collect()
}

/// A tree with one full batch already in, and the statement of a second batch of 5 leaves.
fn second_batch() -> (Tree, InsertPublic, InsertWitness) {
    let mut tree = Tree::new();
    tree.insert_batch(&leaves(1, BATCH_SIZE)).expect("first batch");
    let before = tree.clone();
    let (public, witness) = tree.insert_batch(&leaves(2, 5)).expect("second batch");
    (before, public, witness)
}

#[test]
fn batches_give_the_roots_of_plain_appends() {
    let mut batched = Tree::new();
    let mut plain = Tree::new();
    for (seed, n) in [(3u8, BATCH_SIZE), (4, 1), (5, 7)] {
        let ls = leaves(seed, n);
        let (public, witness) = batched.insert_batch(&ls).expect("batch");
        for l in &ls {
            plain.push(*l).expect("push");
        }
        while !plain.len().is_multiple_of(BATCH_SIZE as u64) {
            plain.push(Fr::from(0u64)).expect("pad");
        }
        assert_eq!(public.new_root, plain.root());
        assert_eq!(batched.root(), plain.root());
        assert!(insert::is_satisfied(&public, &witness).expect("synthesis"));
    }
    assert_eq!(batched.len(), 3 * BATCH_SIZE as u64);
}

#[test]
fn malformed_batches_are_refused_before_proving() {
    let mut tree = Tree::new();
    assert!(matches!(tree.insert_batch(&[]), Err(ZkError::BadBatch(_))));
    assert!(matches!(tree.insert_batch(&leaves(1, BATCH_SIZE + 1)), Err(ZkError::BadBatch(_))));
    tree.push(Fr::from(1u64)).expect("push");
    assert!(matches!(tree.insert_batch(&leaves(1, 2)), Err(ZkError::BadBatch(_))), "unaligned tree");
}

#[test]
fn honest_insertion_verifies_and_every_input_is_bound() {
    let (_, public, witness) = second_batch();
    let (pk, vk) = insert_keys();
    let proof = insert::prove(pk, &public, &witness, &mut rng(7)).expect("prove");
    insert::verify(vk, &public, &proof).expect("verifies");
    let inputs = public.to_vec();
    assert_eq!(inputs.len(), insert::INSERT_NUM_PUBLIC_INPUTS);
    for i in 0..inputs.len() {
        let mut changed = inputs.clone();
        changed[i] += Fr::from(1u64);
        let ok = ark_groth16::Groth16::<ark_bn254::Bn254>::verify_proof(
            &ark_groth16::prepare_verifying_key(vk),
            &proof,
            &changed,
        )
        .expect("verify");
        assert!(!ok, "input {i} changed and the proof still verifies");
    }
}

#[test]
fn overwriting_existing_leaves_is_unsatisfiable() {
    // The "batch" claims slots 0..BATCH_SIZE, which already hold the first batch.
    let (before, mut public, witness) = second_batch();
    public.start_index = 0;
    assert!(!insert::is_satisfied(&public, &witness).expect("synthesis"));
    // Even with the siblings of slot 0 and the root the overwrite would produce.
    let mut tree = Tree::new();
    let (_, w0) = tree.insert_batch(&leaves(9, BATCH_SIZE)).expect("batch");
    let attack = InsertPublic { old_root: before.root(), new_root: tree.root(), start_index: 0, leaves: public.leaves };
    assert!(!insert::is_satisfied(&attack, &w0).expect("synthesis"));
    assert!(insert::prove(&insert_keys().0, &attack, &w0, &mut rng(1)).is_err(), "prove refuses");
}

#[test]
fn unaligned_start_and_made_up_roots_are_unsatisfiable() {
    let (_, public, witness) = second_batch();
    // Unaligned (including the old batch size's alignment, 16), and aligned but elsewhere (the
    // next, still empty, slot: the witness's path does not lead there).
    let s = public.start_index;
    for start in [s + 1, s + 8, s + 16, s + BATCH_SIZE as u64 / 2, s - 1, s + BATCH_SIZE as u64, s - BATCH_SIZE as u64]
    {
        let bad = InsertPublic { start_index: start, ..public.clone() };
        assert!(!insert::is_satisfied(&bad, &witness).expect("synthesis"), "start {start}");
    }
    let bad = InsertPublic { new_root: public.new_root + Fr::from(1u64), ..public.clone() };
    assert!(!insert::is_satisfied(&bad, &witness).expect("synthesis"));
    // A wrong leaf anywhere (a queued one, a padding zero, the last slot) or two swapped.
    for i in [0, 4, 5, BATCH_SIZE / 2, BATCH_SIZE - 1] {
        let mut other = public.clone();
        other.leaves[i] += Fr::from(5u64);
        assert!(!insert::is_satisfied(&other, &witness).expect("synthesis"), "leaf {i} not in the new root");
    }
    let mut swapped = public.clone();
    swapped.leaves.swap(0, 1);
    assert!(!insert::is_satisfied(&swapped, &witness).expect("synthesis"), "two leaves swapped");
    // Beyond the tree: position 2^UPPER_LEVELS.
    let bad = InsertPublic { start_index: 1u64 << 32, ..public.clone() };
    assert!(!insert::is_satisfied(&bad, &witness).expect("synthesis"));
}

/// Documented in docs/design/zk-payment.md §4.3 and docs/benchmarks/zk.md.
#[test]
fn insert_constraint_count_is_what_the_docs_say() {
    let (constraints, _, instance) = insert::constraint_count().expect("count");
    assert_eq!(instance, 1 + insert::INSERT_NUM_PUBLIC_INPUTS);
    assert_eq!(constraints, INSERT_CONSTRAINTS);
}

/// The non-generic entry points a service calls (issue 35: the generic `prove` instantiated in
/// an unoptimised caller took 10–30× longer): the seeded prover is `prove` with that seed, and
/// the key decoder reads exactly one insertion key.
#[test]
fn seeded_prover_and_key_decoder_are_the_generic_ones() {
    use ark_serialize::CanonicalSerialize;
    let (_, public, witness) = second_batch();
    let (pk, vk) = insert_keys();
    let seeded = insert::prove_seeded(pk, &public, &witness, [7; 32]).expect("prove");
    insert::verify(vk, &public, &seeded).expect("verifies");
    assert_eq!(seeded, insert::prove(pk, &public, &witness, &mut rng(7)).expect("prove"), "the same randomness");
    assert_ne!(seeded, insert::prove_seeded(pk, &public, &witness, [8; 32]).expect("prove"), "fresh per seed");

    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).expect("serialise");
    assert!(insert::proving_key_from_bytes(&bytes).expect("decodes") == *pk);
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(insert::proving_key_from_bytes(&trailing), Err(ZkError::Encoding(_))));
    assert!(matches!(insert::proving_key_from_bytes(&bytes[..bytes.len() - 1]), Err(ZkError::Encoding(_))));
    // The transfer key is a well-formed Groth16 key of another circuit.
    let mut transfer = Vec::new();
    nox_zk::transfer::testnet_keys().expect("setup").0.serialize_compressed(&mut transfer).expect("serialise");
    assert!(matches!(insert::proving_key_from_bytes(&transfer), Err(ZkError::Encoding(_))));
}
