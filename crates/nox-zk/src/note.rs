//! Keys, notes, commitments and nullifiers (docs/design/zk-payment.md §3).
//!
//! ```text
//! owner      = Poseidon(sk)                        (width 2)
//! inner      = Poseidon(owner, blinding)           (width 3)
//! commitment = Poseidon(value, asset, inner)       (width 4)   — the Merkle leaf
//! nullifier  = Poseidon(sk, commitment, index)     (width 4)   — index = leaf position
//! ```
//! Only the holder of `sk` can compute the nullifier, and the circuit recomputes `owner` from
//! `sk`, so knowing a note (value, asset, owner, blinding) is not enough to spend it.

use crate::{error::ZkError, poseidon};
use ark_bn254::Fr;
use ark_ff::PrimeField;
use rand_core::{CryptoRng, RngCore};
use zeroize::{Zeroize, ZeroizeOnDrop};

/// The spending key: a secret BN254 scalar. Zeroized on drop; no `Debug`, no `Clone`.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct SpendingKey(Fr);

impl SpendingKey {
    /// A fresh random key.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        SpendingKey(random_scalar(rng))
    }

    /// A key from 64 uniformly random bytes (wide reduction mod p, so the bias is < 2^-250).
    pub fn from_wide_bytes(bytes: &[u8; 64]) -> Self {
        SpendingKey(Fr::from_le_bytes_mod_order(bytes))
    }

    /// The note owner tag of this key, `Poseidon(sk)`: public, safe to give to a payer.
    pub fn owner(&self) -> Result<Fr, ZkError> {
        poseidon::hash(&[self.0])
    }

    /// The nullifier of the note with `commitment` at leaf `index`.
    pub fn nullifier(&self, commitment: &Fr, index: u64) -> Result<Fr, ZkError> {
        poseidon::hash(&[self.0, *commitment, Fr::from(index)])
    }

    /// The secret scalar, for the prover's witness only.
    pub(crate) fn scalar(&self) -> Fr {
        self.0
    }
}

/// A note: `value` of `asset`, spendable by the key whose owner tag is `owner`. Its blinding is
/// secret (it hides the note in its commitment): zeroized on drop, and no `Debug`.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct Note {
    /// Amount in the asset's smallest unit; below 2^[`crate::VALUE_BITS`] by type.
    pub value: u128,
    /// The asset: `uint160` of the ERC-20 address, 0 for ETH.
    pub asset: Fr,
    /// `Poseidon(sk)` of the owner's spending key.
    pub owner: Fr,
    /// Random blinding: hides the note inside its commitment.
    pub blinding: Fr,
}

impl Note {
    /// A note with a fresh random blinding.
    pub fn new<R: RngCore + CryptoRng>(value: u128, asset: Fr, owner: Fr, rng: &mut R) -> Self {
        Note { value, asset, owner, blinding: random_scalar(rng) }
    }

    /// `Poseidon(owner, blinding)`: what a depositor hands the pool, which computes the
    /// commitment itself from the amount it received (no proof needed for a deposit).
    pub fn inner(&self) -> Result<Fr, ZkError> {
        poseidon::hash(&[self.owner, self.blinding])
    }

    /// The note commitment, `Poseidon(value, asset, inner)`: the Merkle leaf.
    pub fn commitment(&self) -> Result<Fr, ZkError> {
        commitment(self.value, self.asset, self.inner()?)
    }
}

/// `Poseidon(value, asset, inner)`.
pub fn commitment(value: u128, asset: Fr, inner: Fr) -> Result<Fr, ZkError> {
    poseidon::hash(&[Fr::from(value), asset, inner])
}

/// A uniformly random scalar (wide reduction of 64 random bytes).
pub fn random_scalar<R: RngCore + CryptoRng>(rng: &mut R) -> Fr {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    let x = Fr::from_le_bytes_mod_order(&wide);
    wide.zeroize();
    x
}
