//! Shared fixtures: the insertion key once per test binary (the transfer key is
//! `nox_zk::transfer::testnet_keys`, once per process), seeded randomness, and the execution-hash
//! vector's action.

use ark_bn254::Bn254;
use nox_zk::groth16::{ProvingKey, VerifyingKey};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::OnceLock;

pub fn rng(seed: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([seed; 32])
}

pub const TARGET: [u8; 20] = [0xa1; 20];
pub const ACTION_CALLDATA: &[u8] = b"\x12\x34\x56\x78 the action";
/// The gas the vectors' action is bound to (`Action.gas`).
pub const ACTION_GAS: u64 = 100_000;

/// The insertion circuit's size (docs/design/zk-payment.md §4.3).
pub const INSERT_CONSTRAINTS: usize = 20_538;

pub fn insert_keys() -> &'static (ProvingKey<Bn254>, VerifyingKey<Bn254>) {
    static K: OnceLock<(ProvingKey<Bn254>, VerifyingKey<Bn254>)> = OnceLock::new();
    K.get_or_init(|| nox_zk::insert::testnet_setup().expect("insert testnet setup"))
}
