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
pub mod transfer;

pub use error::ZkError;
pub use merkle::{MerklePath, TREE_DEPTH, Tree};
pub use note::{Note, SpendingKey};

/// Bits of every value, amount and fee: values are below 2^128, so sums of a few of them never
/// reach p (≈ 2^254) and conservation holds over the integers.
pub const VALUE_BITS: u32 = 128;
