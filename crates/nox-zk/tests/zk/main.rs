//! One test binary, so each Groth16 setup is made once (`transfer::testnet_keys`,
//! `common::insert_keys`) and shared by every test.

mod common;
mod evm;
mod insert;
mod pool_vectors;
mod poseidon;
mod quiet;
mod split_prover;
mod transfer;
mod transfer_vectors;
