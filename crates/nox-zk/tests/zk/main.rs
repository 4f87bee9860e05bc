//! One test binary, so the Groth16 setup and the honest proof are made once (`common::keys`,
//! `common::honest`) and shared by every test.

mod circuit;
mod common;
mod evm;
mod insert;
mod pool_vectors;
mod poseidon;
mod transfer;
mod transfer_vectors;
