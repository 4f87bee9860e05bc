//! Poseidon over BN254 with the circom parameters (x^5 S-box, 8 full rounds, width-dependent
//! partial rounds, `state = [0, inputs…]`, output `state[0]`): the native hash, the R1CS gadget
//! and, by construction of the test vectors, the npm `poseidon-solidity` libraries all agree.
//!
//! The round constants and MDS matrices come from the `light-poseidon` crate (its circom
//! parameter set); [`hash`] and [`hash_gadget`] apply the same rounds to scalars and to
//! constraint variables, and the tests check [`hash`] against that crate's own hash.

use crate::error::ZkError;
use ark_bn254::Fr;
use ark_ff::Field;
use ark_r1cs_std::fields::{FieldVar, fp::FpVar};
use ark_relations::gr1cs::SynthesisError;
use light_poseidon::{Poseidon, PoseidonHasher, PoseidonParameters, parameters::bn254_x5};
use std::sync::OnceLock;

/// Parameters for `n` inputs (width `n + 1`), `n` in 1..=4, built once.
fn params(n: usize) -> Result<&'static PoseidonParameters<Fr>, ZkError> {
    static P: [OnceLock<Option<PoseidonParameters<Fr>>>; 4] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = P.get(n.wrapping_sub(1)).ok_or_else(|| ZkError::Poseidon(format!("unsupported arity {n}")))?;
    slot.get_or_init(|| {
        let width = u8::try_from(n + 1).ok()?;
        bn254_x5::get_poseidon_parameters::<Fr>(width).ok()
    })
    .as_ref()
    .ok_or_else(|| ZkError::Poseidon(format!("no parameters for arity {n}")))
}

/// Native Poseidon of 1 to 4 field elements (circom-compatible): the rounds of [`hash_gadget`]
/// on plain scalars. Cross-checked against `light-poseidon`'s own hash in the tests.
pub fn hash(inputs: &[Fr]) -> Result<Fr, ZkError> {
    let p = params(inputs.len())?;
    let width = p.width;
    let mut state = Vec::with_capacity(width);
    state.push(Fr::from(0u64));
    state.extend_from_slice(inputs);
    let half = p.full_rounds / 2;
    for round in 0..p.full_rounds + p.partial_rounds {
        for (i, s) in state.iter_mut().enumerate() {
            *s += p.ark[round * width + i];
        }
        let full = round < half || round >= half + p.partial_rounds;
        for s in state.iter_mut().take(if full { width } else { 1 }) {
            let x2 = s.square();
            *s *= x2.square();
        }
        state = (0..width).map(|i| state.iter().zip(&p.mds[i]).map(|(s, m)| *s * m).sum()).collect();
    }
    Ok(state[0])
}

/// `light-poseidon`'s circom hash, for cross-checking [`hash`] (tests and vectors).
pub fn reference_hash(inputs: &[Fr]) -> Result<Fr, ZkError> {
    let mut h = Poseidon::<Fr>::new_circom(inputs.len()).map_err(|e| ZkError::Poseidon(e.to_string()))?;
    h.hash(inputs).map_err(|e| ZkError::Poseidon(e.to_string()))
}

/// Poseidon of 1 to 4 constraint variables: the same permutation as [`hash`], in R1CS.
///
/// Cost: 3 constraints per S-box (x², x⁴, x⁵); `width` S-boxes in each of the 8 full rounds and
/// one in each partial round. Width 3 (two inputs): 8·3·3 + 57·3 = 243 constraints.
pub fn hash_gadget(inputs: &[FpVar<Fr>]) -> Result<FpVar<Fr>, SynthesisError> {
    let p = params(inputs.len()).map_err(|_| SynthesisError::Unsatisfiable)?;
    let width = p.width;
    let mut state: Vec<FpVar<Fr>> = Vec::with_capacity(width);
    state.push(FpVar::zero());
    state.extend(inputs.iter().cloned());
    let half = p.full_rounds / 2;
    let rounds = p.full_rounds + p.partial_rounds;
    for round in 0..rounds {
        for (i, s) in state.iter_mut().enumerate() {
            *s += p.ark[round * width + i];
        }
        let full = round < half || round >= half + p.partial_rounds;
        let sboxed = if full { width } else { 1 };
        for s in state.iter_mut().take(sboxed) {
            *s = sbox(s)?;
        }
        state =
            (0..width).map(|i| state.iter().zip(&p.mds[i]).fold(FpVar::zero(), |acc, (s, m)| acc + s * *m)).collect();
    }
    Ok(state.swap_remove(0))
}

fn sbox(x: &FpVar<Fr>) -> Result<FpVar<Fr>, SynthesisError> {
    let x2 = x.square()?;
    let x4 = x2.square()?;
    Ok(x4 * x)
}
