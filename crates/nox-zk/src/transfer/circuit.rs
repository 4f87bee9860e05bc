//! The constraints of the 2-in/2-out statement (items 1–6 of the module doc of `transfer`),
//! and the satisfaction check and constraint count over them.

use super::{INS, OUTS, TransferPublic, TransferWitness};
use crate::{VALUE_BITS, error::ZkError, groth16, merkle::TREE_DEPTH, poseidon::hash_gadget};
use ark_bn254::Fr;
use ark_r1cs_std::{
    alloc::AllocVar,
    boolean::Boolean,
    eq::EqGadget,
    fields::{FieldVar, fp::FpVar},
    select::CondSelectGadget,
};
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};

/// The 2-in/2-out transfer circuit. With `witness == None` it only shapes the system (setup).
/// `DEPTH` is the tree depth the paths are checked to: [`TREE_DEPTH`] for the pool; other depths
/// exist only to measure what the depth costs (docs/design/zk-payment.md §9).
pub struct TransferCircuit<'a, const DEPTH: usize = TREE_DEPTH> {
    /// Public inputs (any values for setup).
    pub public: TransferPublic,
    /// The witness, `None` for setup.
    pub witness: Option<&'a TransferWitness>,
}

impl TransferCircuit<'static> {
    /// The circuit for key generation and for the constraint matrices: zero inputs, no witness.
    pub fn blank() -> Self {
        TransferCircuit::<'static, TREE_DEPTH>::blank_at_depth()
    }
}

impl<const DEPTH: usize> TransferCircuit<'static, DEPTH> {
    /// [`TransferCircuit::blank`] with paths of `DEPTH` levels (measurements only).
    pub fn blank_at_depth() -> Self {
        let z = Fr::from(0u64);
        TransferCircuit {
            public: TransferPublic {
                root: z,
                nullifiers: [z; INS],
                commitments: [z; OUTS],
                public_amount: z,
                asset: z,
                context: z,
            },
            witness: None,
        }
    }
}

fn missing() -> SynthesisError {
    SynthesisError::AssignmentMissing
}
/// The low 128 bits of a scalar: the prover's bit witnesses. If `x ≥ 2^128` no assignment of the
/// bits recomposes to it and the statement is unsatisfiable.
pub(super) fn low128(x: &Fr) -> u128 {
    let b = crate::field::to_be32(x);
    let mut low = [0u8; 16];
    low.copy_from_slice(&b[16..]);
    u128::from_be_bytes(low)
}

/// `x < 2^bits` by `bits` boolean witnesses that recompose to `x`.
fn range_check(
    cs: &ConstraintSystemRef<Fr>,
    x: &FpVar<Fr>,
    native: Option<u128>,
    bits: usize,
) -> Result<(), SynthesisError> {
    let mut vars = Vec::with_capacity(bits);
    for i in 0..bits {
        vars.push(Boolean::new_witness(cs.clone(), || {
            let v = native.ok_or_else(missing)?;
            Ok(i < 128 && (v >> i) & 1 == 1)
        })?);
    }
    Boolean::le_bits_to_fp(&vars)?.enforce_equal(x)
}

impl<const DEPTH: usize> ConstraintSynthesizer<Fr> for TransferCircuit<'_, DEPTH> {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        crate::quiet(|| self.synthesize(cs))
    }
}

impl<const DEPTH: usize> TransferCircuit<'_, DEPTH> {
    fn synthesize(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let w = self.witness;
        let p = &self.public;
        let bits = VALUE_BITS as usize;
        let input = |v: Fr| FpVar::new_input(cs.clone(), || Ok(v));
        let root = input(p.root)?;
        let nullifiers = [input(p.nullifiers[0])?, input(p.nullifiers[1])?];
        let commitments = [input(p.commitments[0])?, input(p.commitments[1])?];
        let public_amount = input(p.public_amount)?;
        let asset = input(p.asset)?;
        let context = input(p.context)?;

        let sk = FpVar::new_witness(cs.clone(), || w.map(|w| w.sk.scalar()).ok_or_else(missing))?;
        // 1. One owner for both inputs.
        let owner = hash_gadget(std::slice::from_ref(&sk))?;

        let mut total_in = FpVar::zero();
        let mut nf_vars = Vec::with_capacity(INS);
        for (i, nullifier) in nullifiers.iter().enumerate() {
            let inp = w.map(|w| &w.inputs[i]);
            let value = FpVar::new_witness(cs.clone(), || inp.map(|s| Fr::from(s.note.value)).ok_or_else(missing))?;
            let blinding = FpVar::new_witness(cs.clone(), || inp.map(|s| s.note.blinding).ok_or_else(missing))?;
            range_check(&cs, &value, inp.map(|s| s.note.value), bits)?;
            let inner = hash_gadget(&[owner.clone(), blinding])?;
            let cm = hash_gadget(&[value.clone(), asset.clone(), inner])?;

            // 2. Membership, unless the input is a zero-value dummy.
            let mut index_bits = Vec::with_capacity(DEPTH);
            let mut cur = cm.clone();
            for lvl in 0..DEPTH {
                let bit = Boolean::new_witness(cs.clone(), || {
                    inp.map(|s| (s.path.index >> lvl) & 1 == 1).ok_or_else(missing)
                })?;
                let sib = FpVar::new_witness(cs.clone(), || {
                    inp.and_then(|s| s.path.siblings.get(lvl).copied()).ok_or_else(missing)
                })?;
                // One select per level: left = bit ? sib : cur, right = cur + sib − left.
                let left = FpVar::conditionally_select(&bit, &sib, &cur)?;
                let right = &cur + &sib - &left;
                cur = hash_gadget(&[left, right])?;
                index_bits.push(bit);
            }
            ((cur - &root) * &value).enforce_equal(&FpVar::zero())?;
            let index = Boolean::le_bits_to_fp(&index_bits)?;

            // 3. The nullifier, for dummies too.
            let nf = hash_gadget(&[sk.clone(), cm, index])?;
            nf.enforce_equal(nullifier)?;
            nf_vars.push(nf);
            total_in += &value;
        }
        // 3. nullifier₁ ≠ nullifier₂: (nf₁ − nf₂) has an inverse.
        if let [a, b] = nf_vars.as_slice() {
            a.enforce_not_equal(b)?;
        }

        // 4. Outputs: any owner, the transaction's asset.
        let mut total_out = FpVar::zero();
        for (j, commitment) in commitments.iter().enumerate() {
            let out = w.map(|w| &w.outputs[j]);
            let value = FpVar::new_witness(cs.clone(), || out.map(|o| o.value).ok_or_else(missing))?;
            let inner = FpVar::new_witness(cs.clone(), || out.map(|o| o.inner).ok_or_else(missing))?;
            range_check(&cs, &value, out.map(|o| low128(&o.value)), bits)?;
            hash_gadget(&[value.clone(), asset.clone(), inner])?.enforce_equal(commitment)?;
            total_out += &value;
        }

        // 5. publicAmount = ±m, m < 2^128: (2·neg) · m = m − publicAmount.
        let neg = Boolean::new_witness(cs.clone(), || w.map(|w| w.public_negative).ok_or_else(missing))?;
        let magnitude = FpVar::new_witness(cs.clone(), || w.map(|w| w.public_magnitude).ok_or_else(missing))?;
        range_check(&cs, &magnitude, w.map(|w| low128(&w.public_magnitude)), bits)?;
        let neg_fp: FpVar<Fr> = neg.into();
        (neg_fp.double()? * &magnitude).enforce_equal(&(&magnitude - &public_amount))?;
        (total_in + &public_amount).enforce_equal(&total_out)?;

        // 6. Bind the context.
        let _ = context.square()?;
        Ok(())
    }
}

/// Whether `witness` satisfies the statement for `public` (no proof is made).
pub fn is_satisfied(public: &TransferPublic, witness: &TransferWitness) -> Result<bool, ZkError> {
    groth16::is_satisfied(TransferCircuit::<'_, TREE_DEPTH> { public: public.clone(), witness: Some(witness) })
}

/// Number of R1CS constraints (and of witness and instance variables).
pub fn constraint_count() -> Result<(usize, usize, usize), ZkError> {
    groth16::constraint_count(TransferCircuit::blank())
}
