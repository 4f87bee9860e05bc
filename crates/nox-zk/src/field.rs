//! Conversions between BN254 scalars and the EVM's 32-byte big-endian words.

use crate::error::ZkError;
use ark_bn254::Fr;
use ark_ff::{BigInteger, PrimeField};

/// A scalar as a 32-byte big-endian word (`uint256` in Solidity).
pub fn to_be32(x: &Fr) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&x.into_bigint().to_bytes_be());
    out
}

/// A 32-byte big-endian word as a scalar; refuses values ≥ p (the verifier contract refuses them
/// too, so the two sides never disagree on an input).
pub fn from_be32(bytes: &[u8; 32]) -> Result<Fr, ZkError> {
    let x = Fr::from_be_bytes_mod_order(bytes);
    if to_be32(&x) == *bytes { Ok(x) } else { Err(ZkError::NonCanonicalScalar) }
}

/// A 20-byte Ethereum address as a scalar (`uint160(address)`).
pub fn address(addr: &[u8; 20]) -> Fr {
    Fr::from_be_bytes_mod_order(addr)
}

/// `keccak256(target ‖ calldata ‖ fee ‖ gas) mod p`, the execution hash of paper eq. (18) with
/// the action's gas bound in (issue 29), exactly as `BatchExecutor.executionHash` computes it
/// (`abi.encodePacked(address, bytes, uint256, uint256)`). `gas` is the gas the executor must
/// forward to the action (`Action.gas`). Returns the raw 32-byte digest and its reduction.
pub fn execution_hash(target: &[u8; 20], calldata: &[u8], fee: u128, gas: u64) -> ([u8; 32], Fr) {
    use sha3::{Digest, Keccak256};
    let mut h = Keccak256::new();
    h.update(target);
    h.update(calldata);
    let mut fee_word = [0u8; 32];
    fee_word[16..].copy_from_slice(&fee.to_be_bytes());
    h.update(fee_word);
    let mut gas_word = [0u8; 32];
    gas_word[24..].copy_from_slice(&gas.to_be_bytes());
    h.update(gas_word);
    let raw: [u8; 32] = h.finalize().into();
    (raw, Fr::from_be_bytes_mod_order(&raw))
}
