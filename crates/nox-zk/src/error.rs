//! Typed errors.

use thiserror::Error;

/// Everything that can go wrong in this crate.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ZkError {
    /// A value (note value, amount, fee) does not fit in [`crate::VALUE_BITS`] bits.
    #[error("value does not fit in {bits} bits")]
    ValueOutOfRange {
        /// The bound in bits.
        bits: u32,
    },
    /// A byte string is not the canonical encoding of a BN254 scalar (≥ p or wrong length).
    #[error("not a canonical BN254 scalar")]
    NonCanonicalScalar,
    /// A Merkle path has the wrong length or its leaf index does not fit the tree.
    #[error("malformed Merkle path: {0}")]
    BadPath(&'static str),
    /// A batch insertion is malformed (size, alignment).
    #[error("bad batch: {0}")]
    BadBatch(&'static str),
    /// A private transaction (docs/design/zk-payment.md §9) cannot be built as asked: too many
    /// inputs or outputs, an input of another owner or asset, the same note twice, or values
    /// that do not balance.
    #[error("bad transfer: {0}")]
    BadTransfer(&'static str),
    /// The Merkle tree is full.
    #[error("Merkle tree is full")]
    TreeFull,
    /// A point or proof encoding is not valid.
    #[error("malformed encoding: {0}")]
    Encoding(&'static str),
    /// The Poseidon implementation refused its input (wrong arity).
    #[error("poseidon: {0}")]
    Poseidon(String),
    /// Constraint synthesis or proving failed (the witness does not satisfy the circuit, or
    /// arkworks reported an internal error).
    #[error("proving system: {0}")]
    Snark(String),
    /// A phase of the split prover (`split_prover`) got a bad input: a part index not below the
    /// number of parts, a missing or repeated part, a truncated or foreign encoding.
    #[error("split prover: {0}")]
    BadPart(&'static str),
    /// The public inputs and proof were well formed but the proof does not verify.
    #[error("proof does not verify")]
    ProofRejected,
}

impl From<ark_relations::gr1cs::SynthesisError> for ZkError {
    fn from(e: ark_relations::gr1cs::SynthesisError) -> Self {
        ZkError::Snark(e.to_string())
    }
}
