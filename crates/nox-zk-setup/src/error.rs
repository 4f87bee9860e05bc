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
    /// Constraint synthesis failed.
    #[error("circuit: {0}")]
    Circuit(String),
}
