//! The wallet's keys, all derived from one 32-byte seed (docs/spec/notes.md §2).
//!
//! ```text
//! spending key  sk = wide_reduce(BLAKE3-XOF(derive_key("NOX wallet v1 spending key", seed), 64 bytes))
//! viewing key   vk = BLAKE3 derive_key("NOX wallet v1 viewing key", seed)   (an X25519 secret)
//! address       = (owner = Poseidon(sk), viewing public = X25519(vk, 9))
//! ```
//! The spending key spends (it derives nullifiers); the viewing key only reads memos.

use crate::error::WalletError;
use ark_bn254::Fr;
use curve25519_dalek::montgomery::MontgomeryPoint;
use nox_zk::{SpendingKey, field};
use rand_core_06::{CryptoRng, RngCore};
use std::{fmt, str::FromStr};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

const SPENDING_CONTEXT: &str = "NOX wallet v1 spending key";
const VIEWING_CONTEXT: &str = "NOX wallet v1 viewing key";

/// The wallet seed: everything else is derived from it. Zeroized on drop; no `Debug`.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct Seed([u8; 32]);

impl Seed {
    /// A fresh seed from a cryptographic RNG.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut s = [0u8; 32];
        rng.fill_bytes(&mut s);
        Seed(s)
    }

    /// A seed from its bytes (a backup, or a test vector).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Seed(bytes)
    }

    /// The seed's bytes, for the encrypted wallet file only.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The spending key (a fresh value each call: the prover's witness takes ownership of one).
    pub fn spending_key(&self) -> SpendingKey {
        let mut wide = Zeroizing::new([0u8; 64]);
        blake3::Hasher::new_derive_key(SPENDING_CONTEXT).update(&self.0).finalize_xof().fill(&mut wide[..]);
        SpendingKey::from_wide_bytes(&wide)
    }

    /// The X25519 viewing secret.
    pub fn viewing_secret(&self) -> ViewingSecret {
        ViewingSecret(blake3::derive_key(VIEWING_CONTEXT, &self.0))
    }

    /// The payment address others use to make notes for this wallet.
    pub fn address(&self) -> Result<PaymentAddress, WalletError> {
        Ok(PaymentAddress { owner: self.spending_key().owner()?, viewing: self.viewing_secret().public() })
    }
}

/// An X25519 secret that opens note memos. Zeroized on drop; no `Debug`.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct ViewingSecret(pub(crate) [u8; 32]);

impl ViewingSecret {
    /// The X25519 public key.
    pub fn public(&self) -> [u8; 32] {
        MontgomeryPoint::mul_base_clamped(self.0).to_bytes()
    }
}

/// What a payer needs to make a note for this wallet: the owner tag `Poseidon(sk)` and the
/// viewing public key. Written `noxpay:` followed by 128 hex digits (owner as a 32-byte
/// big-endian word, then the X25519 key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaymentAddress {
    /// `Poseidon(sk)`.
    pub owner: Fr,
    /// X25519 public viewing key.
    pub viewing: [u8; 32],
}

const ADDRESS_PREFIX: &str = "noxpay:";

impl fmt::Display for PaymentAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ADDRESS_PREFIX}{}{}", hex::encode(field::to_be32(&self.owner)), hex::encode(self.viewing))
    }
}

impl FromStr for PaymentAddress {
    type Err = WalletError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let body = s.strip_prefix(ADDRESS_PREFIX).ok_or(WalletError::BadAddress("missing the noxpay: prefix"))?;
        let bytes = hex::decode(body).map_err(|_| WalletError::BadAddress("not hexadecimal"))?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| WalletError::BadAddress("not 64 bytes"))?;
        let mut owner = [0u8; 32];
        owner.copy_from_slice(&bytes[..32]);
        let mut viewing = [0u8; 32];
        viewing.copy_from_slice(&bytes[32..]);
        let owner = field::from_be32(&owner).map_err(|_| WalletError::BadAddress("owner is not a BN254 scalar"))?;
        Ok(PaymentAddress { owner, viewing })
    }
}
