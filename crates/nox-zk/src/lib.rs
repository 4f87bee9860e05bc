#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod circuit;
pub mod error;
pub mod field;
pub mod groth16;
pub mod insert;
pub mod merkle;
pub mod note;
pub mod poseidon;
pub mod solidity;
pub mod transfer;

pub use circuit::{GasPaymentCircuit, NUM_PUBLIC_INPUTS, PublicInputs, Witness};
pub use error::ZkError;
pub use merkle::{MerklePath, TREE_DEPTH, Tree};
pub use note::{Note, SpendingKey};

use ark_bn254::Fr;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem};

/// Bits of every value, fee and change: values are below 2^128, so `fee + change` never reaches
/// p (≈ 2^254) and conservation holds over the integers.
pub const VALUE_BITS: u32 = 128;

/// Whether `witness` satisfies the gas-payment statement for `public` (no proof is made).
pub fn is_satisfied(public: &PublicInputs, witness: &Witness) -> Result<bool, ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    GasPaymentCircuit { public: public.clone(), witness: Some(witness) }.generate_constraints(cs.clone())?;
    cs.is_satisfied().map_err(|e| ZkError::Snark(e.to_string()))
}

/// Number of R1CS constraints of the gas-payment circuit (and of witness and instance variables).
pub fn constraint_count() -> Result<(usize, usize, usize), ZkError> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(ark_relations::gr1cs::SynthesisMode::Setup);
    GasPaymentCircuit::blank().generate_constraints(cs.clone())?;
    cs.finalize();
    Ok((cs.num_constraints(), cs.num_witness_variables(), cs.num_instance_variables()))
}
