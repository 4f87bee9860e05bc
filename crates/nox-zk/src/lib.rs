#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod field;
pub mod groth16;
pub mod insert;
pub mod merkle;
pub mod note;
pub mod poseidon;
pub mod solidity;
pub mod split_prover;
pub mod transfer;

pub use error::ZkError;
pub use merkle::{MerklePath, TREE_DEPTH, Tree};
pub use note::{Note, SpendingKey};

/// Bits of every value, amount and fee: values are below 2^128, so sums of a few of them never
/// reach p (≈ 2^254) and conservation holds over the integers.
pub const VALUE_BITS: u32 = 128;

/// Runs a circuit's synthesis with `tracing` switched off on this thread.
///
/// arkworks' gadgets (`ark-r1cs-std`, e.g. `FpVar::add_constant`) are `#[tracing::instrument]`ed
/// with their variables as span fields, and a variable's `Debug` prints its whole constraint
/// system. In a process with a subscriber at INFO (a node, the relayer's inserter, the CLI) every
/// gadget call therefore formatted the constraint system built so far: synthesis became quadratic
/// (an insertion proof took minutes of CPU instead of ≈ 2 s), and ark-relations also kept a span
/// per constraint. The statements are ours; nothing in them is worth a span.
pub(crate) fn quiet<T>(f: impl FnOnce() -> T) -> T {
    tracing::dispatcher::with_default(&tracing::Dispatch::none(), f)
}
