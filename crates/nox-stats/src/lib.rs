#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod chi_square;
pub mod correlation;
pub mod exponential;
pub mod ks;
