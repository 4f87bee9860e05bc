//! The gas-payment circuit (docs/design/zk-payment.md §5).
//!
//! Statement, with public inputs in this order ([`PublicInputs::to_vec`]):
//! `root, nullifier, change_commitment, fee, asset, relayer, execution_hash, chain_id, pool,
//! deadline`. Private: `sk`, the note's `value` and `blinding`, its Merkle path, and the change
//! note's `inner` (`Poseidon(owner', blinding')`). The circuit enforces
//!
//! 1. `owner = Poseidon(sk)`; `cm = Poseidon(value, asset, Poseidon(owner, blinding))`;
//! 2. `cm` is the leaf at `index` (the path bits) under `root`;
//! 3. `nullifier = Poseidon(sk, cm, index)`;
//! 4. `value`, `fee`, `change = value − fee` each fit in [`VALUE_BITS`] bits (so `value = fee +
//!    change` holds over the integers, not only mod p);
//! 5. `change_commitment = Poseidon(change, asset, change_inner)`;
//! 6. `relayer, execution_hash, chain_id, pool, deadline` take part in no relation, but are bound
//!    to the proof all the same: each appears in one constraint (`x · x = x²`), so the binding does
//!    not rest on the QAP reduction's extra input rows alone (a Groth16 public input that appears
//!    in no constraint has a zero verifying-key point and would be malleable).

use crate::{
    VALUE_BITS,
    merkle::{MerklePath, TREE_DEPTH},
    note::{Note, SpendingKey},
    poseidon::hash_gadget,
};
use ark_bn254::Fr;
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{FieldVar, fp::FpVar},
    select::CondSelectGadget,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

/// Number of public inputs.
pub const NUM_PUBLIC_INPUTS: usize = 10;

/// The public inputs of one gas payment, each as the pool contract recomputes or checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicInputs {
    /// A root in the pool's window of recent roots.
    pub root: Fr,
    /// The spent note's nullifier (the pool refuses one it has seen).
    pub nullifier: Fr,
    /// The change note, inserted by the pool.
    pub change_commitment: Fr,
    /// The fee (the executor's bundle fee), below 2^128.
    pub fee: Fr,
    /// The asset (`uint160` of the token address, 0 for ETH).
    pub asset: Fr,
    /// The relayer (`uint160` of the bundle's `msg.sender`, passed by the executor).
    pub relayer: Fr,
    /// `keccak256(target ‖ calldata ‖ fee) mod p`, recomputed by the executor.
    pub execution_hash: Fr,
    /// `block.chainid`.
    pub chain_id: Fr,
    /// `uint160(address(pool))`.
    pub pool: Fr,
    /// Unix time after which the pool refuses the payment.
    pub deadline: Fr,
}

impl PublicInputs {
    /// The inputs in the verifier's order.
    pub fn to_vec(&self) -> Vec<Fr> {
        vec![
            self.root,
            self.nullifier,
            self.change_commitment,
            self.fee,
            self.asset,
            self.relayer,
            self.execution_hash,
            self.chain_id,
            self.pool,
            self.deadline,
        ]
    }
}

/// The private witness: zeroized on drop.
#[derive(zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
pub struct Witness {
    /// Spending key of the note's owner.
    pub sk: SpendingKey,
    /// The note being spent.
    pub note: Note,
    /// Its path in the tree under `root`.
    pub path: MerklePath,
    /// `Poseidon(owner', blinding')` of the change note.
    pub change_inner: Fr,
    /// The change value (`note.value − fee` for an honest prover).
    pub change: u128,
}

/// The gas-payment circuit. With `witness == None` it only shapes the constraint system (setup).
pub struct GasPaymentCircuit<'a> {
    /// Public inputs (any values for setup).
    pub public: PublicInputs,
    /// The witness, `None` for setup.
    pub witness: Option<&'a Witness>,
}

impl GasPaymentCircuit<'_> {
    /// The circuit for key generation: zero inputs, no witness.
    pub fn blank() -> GasPaymentCircuit<'static> {
        let z = Fr::from(0u64);
        GasPaymentCircuit {
            public: PublicInputs {
                root: z,
                nullifier: z,
                change_commitment: z,
                fee: z,
                asset: z,
                relayer: z,
                execution_hash: z,
                chain_id: z,
                pool: z,
                deadline: z,
            },
            witness: None,
        }
    }
}

fn missing() -> SynthesisError {
    SynthesisError::AssignmentMissing
}

/// Allocates `bits` boolean witnesses for `x` (little-endian) and enforces that they recompose to
/// `x`: a range check `x < 2^bits`. `bits` booleanity constraints plus one linear equality.
fn range_check(
    cs: &ConstraintSystemRef<Fr>,
    x: &FpVar<Fr>,
    native: Option<u128>,
    bits: usize,
) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
    let mut vars = Vec::with_capacity(bits);
    for i in 0..bits {
        let b = Boolean::new_witness(cs.clone(), || {
            let v = native.ok_or_else(missing)?;
            Ok(i < 128 && (v >> i) & 1 == 1)
        })?;
        vars.push(b);
    }
    Boolean::le_bits_to_fp(&vars)?.enforce_equal(x)?;
    Ok(vars)
}

impl ConstraintSynthesizer<Fr> for GasPaymentCircuit<'_> {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let w = self.witness;
        let p = &self.public;
        let input = |v: Fr| FpVar::new_input(cs.clone(), || Ok(v));
        let root = input(p.root)?;
        let nullifier = input(p.nullifier)?;
        let change_cm = input(p.change_commitment)?;
        let fee = input(p.fee)?;
        let asset = input(p.asset)?;
        let relayer = input(p.relayer)?;
        let exec_hash = input(p.execution_hash)?;
        let chain_id = input(p.chain_id)?;
        let pool = input(p.pool)?;
        let deadline = input(p.deadline)?;

        let wit = |f: &dyn Fn(&Witness) -> Fr| FpVar::new_witness(cs.clone(), || w.map(f).ok_or_else(missing));
        let sk = wit(&|w| w.sk.scalar())?;
        let value = wit(&|w| Fr::from(w.note.value))?;
        let blinding = wit(&|w| w.note.blinding)?;
        let change = wit(&|w| Fr::from(w.change))?;
        let change_inner = wit(&|w| w.change_inner)?;

        // 1. Ownership: the note's owner tag is recomputed from the spending key.
        let owner = hash_gadget(std::slice::from_ref(&sk))?;
        let inner = hash_gadget(&[owner, blinding])?;
        let cm = hash_gadget(&[value.clone(), asset.clone(), inner])?;

        // 2. Membership: the path bits are the leaf index.
        let mut index_bits = Vec::with_capacity(TREE_DEPTH);
        let mut cur = cm.clone();
        for lvl in 0..TREE_DEPTH {
            let bit =
                Boolean::new_witness(cs.clone(), || w.map(|w| (w.path.index >> lvl) & 1 == 1).ok_or_else(missing))?;
            let sib = FpVar::new_witness(cs.clone(), || {
                w.and_then(|w| w.path.siblings.get(lvl).copied()).ok_or_else(missing)
            })?;
            let left = FpVar::conditionally_select(&bit, &sib, &cur)?;
            let right = FpVar::conditionally_select(&bit, &cur, &sib)?;
            cur = hash_gadget(&[left, right])?;
            index_bits.push(bit);
        }
        cur.enforce_equal(&root)?;
        let index = Boolean::le_bits_to_fp(&index_bits)?;

        // 3. Nullifier: needs sk, and is unique per (note, position).
        hash_gadget(&[sk, cm, index])?.enforce_equal(&nullifier)?;

        // 4. Value conservation over the integers.
        let bits = VALUE_BITS as usize;
        range_check(&cs, &value, w.map(|w| w.note.value), bits)?;
        range_check(&cs, &fee, fee_native(w, p), bits)?;
        range_check(&cs, &change, w.map(|w| w.change), bits)?;
        (&fee + &change).enforce_equal(&value)?;

        // 5. The change note: same asset.
        hash_gadget(&[change, asset, change_inner])?.enforce_equal(&change_cm)?;

        // 6. Bind the context inputs with one constraint each (x · x = x²), so that none is a
        //    free variable of the constraint system whatever the QAP reduction does.
        for x in [&relayer, &exec_hash, &chain_id, &pool, &deadline] {
            let _ = x.square()?;
        }
        Ok(())
    }
}

/// The fee's low 128 bits, for the prover's bit witnesses. If the fee does not fit in 128 bits,
/// no assignment of the bits recomposes to it and the statement is unsatisfiable.
fn fee_native(w: Option<&Witness>, p: &PublicInputs) -> Option<u128> {
    w?;
    let bytes = crate::field::to_be32(&p.fee);
    Some(u128::from_be_bytes(bytes[16..].try_into().ok()?))
}
