//! Typed errors.

use thiserror::Error;

/// Everything that can go wrong in a ceremony.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SetupError {
    /// A file is not a ceremony file of the expected kind.
    #[error("malformed file: {0}")]
    Format(&'static str),
    /// A point or scalar encoding is invalid (off the curve, outside the subgroup, truncated).
    #[error("invalid encoding: {0}")]
    Encoding(String),
    /// The requested size is unsupported (a power of two from 2 to 2^20).
    #[error("unsupported size {0}: a power of two from 2 to 2^20")]
    BadSize(usize),
    /// The circuit does not fit the phase-1 transcript.
    #[error("the circuit needs a domain of {needed} but the powers of tau cover {have}")]
    TooSmall {
        /// Domain size the circuit needs.
        needed: usize,
        /// Size of the phase-1 transcript.
        have: usize,
    },
    /// A check failed: the transcript is not a valid update of its predecessor.
    #[error("verification failed: {0}")]
    Invalid(&'static str),
    /// The transcript's secrets are the public starting ones: no contribution, a contribution
    /// whose proof of knowledge does not verify, or points that are still the generators. Anyone
    /// can forge proofs of false statements under a key made from it (`tests/forgery.rs`).
    #[error(
        "phase {phase} transcript has no secret contribution ({why}): anyone could forge proofs under a key made from it"
    )]
    Uncontributed {
        /// 1 (powers of tau: τ = α = β = 1) or 2 (δ = 1).
        phase: u8,
        /// What is missing.
        why: &'static str,
    },
    /// Constraint synthesis failed.
    #[error("circuit: {0}")]
    Circuit(String),
}
