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
    tree.insert_batch(&leaves(1, 16)).expect("first batch");
    let before = tree.clone();
    let (public, witness) = tree.insert_batch(&leaves(2, 5)).expect("second batch");
    (before, public, witness)
}

#[test]
fn batches_give_the_roots_of_plain_appends() {
    let mut batched = Tree::new();
    let mut plain = Tree::new();
    for (seed, n) in [(3u8, 16usize), (4, 1), (5, 7)] {
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
    assert_eq!(batched.len(), 48);
}

#[test]
fn malformed_batches_are_refused_before_proving() {
    let mut tree = Tree::new();
    assert!(matches!(tree.insert_batch(&[]), Err(ZkError::BadBatch(_))));
    assert!(matches!(tree.insert_batch(&leaves(1, 17)), Err(ZkError::BadBatch(_))));
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
    // The "batch" claims slots 0..16, which already hold the first batch.
    let (before, mut public, witness) = second_batch();
    public.start_index = 0;
    assert!(!insert::is_satisfied(&public, &witness).expect("synthesis"));
    // Even with the siblings of slot 0 and the root the overwrite would produce.
    let mut tree = Tree::new();
    let (_, w0) = tree.insert_batch(&leaves(9, 16)).expect("batch");
    let attack = InsertPublic { old_root: before.root(), new_root: tree.root(), start_index: 0, leaves: public.leaves };
    assert!(!insert::is_satisfied(&attack, &w0).expect("synthesis"));
    assert!(insert::prove(&insert_keys().0, &attack, &w0, &mut rng(1)).is_err(), "prove refuses");
}

#[test]
fn unaligned_start_and_made_up_roots_are_unsatisfiable() {
    let (_, public, witness) = second_batch();
    for start in [public.start_index + 1, public.start_index + 8, public.start_index - 1] {
        let bad = InsertPublic { start_index: start, ..public.clone() };
        assert!(!insert::is_satisfied(&bad, &witness).expect("synthesis"), "start {start}");
    }
    let bad = InsertPublic { new_root: public.new_root + Fr::from(1u64), ..public.clone() };
    assert!(!insert::is_satisfied(&bad, &witness).expect("synthesis"));
    let mut other = public.clone();
    other.leaves[15] = Fr::from(5u64);
    assert!(!insert::is_satisfied(&other, &witness).expect("synthesis"), "a leaf not in the new root");
    // Beyond the tree: position 2^28.
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
