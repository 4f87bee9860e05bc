//! Note memos: a note's secrets encrypted to its owner's viewing key, published with the deposit
//! so that the owner recovers the note from the chain alone (docs/spec/notes.md §4).
//!
//! ```text
//! memo   = eph_pub (32) ‖ ChaCha20-Poly1305(key, nonce = 0¹², aad = asset word (32),
//!                                           value (16, big-endian) ‖ blinding (32, big-endian))
//! shared = X25519(eph_secret, viewing_pub)                      refused if all zero
//! key    = BLAKE3 derive_key("NOX note memo v1", shared ‖ eph_pub ‖ viewing_pub)
//! ```
//! 96 bytes. Every memo has a fresh ephemeral key, so the fixed nonce is never reused under one
//! key. The owner tag is not in the memo: the owner knows it, and the commitment check
//! ([`crate::state`]) refuses a memo that does not open to the published commitment.

use ark_bn254::Fr;
use chacha20poly1305::{
    ChaCha20Poly1305, KeyInit,
    aead::{Aead, Payload},
};
use curve25519_dalek::montgomery::MontgomeryPoint;
use nox_zk::field;
use rand_core_06::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use crate::keys::ViewingSecret;

/// Length of a memo.
pub const MEMO_LEN: usize = 32 + PLAINTEXT_LEN + 16;
const PLAINTEXT_LEN: usize = 16 + 32;
const MEMO_CONTEXT: &str = "NOX note memo v1";

fn key(shared: &[u8; 32], eph: &[u8; 32], viewing: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut h = blake3::Hasher::new_derive_key(MEMO_CONTEXT);
    h.update(shared).update(eph).update(viewing);
    Zeroizing::new(*h.finalize().as_bytes())
}

/// Encrypts `(value, blinding)` of a note of `asset` to the viewing key `viewing`.
pub fn seal<R: RngCore + CryptoRng>(
    viewing: &[u8; 32],
    asset: &Fr,
    value: u128,
    blinding: &Fr,
    rng: &mut R,
) -> Option<[u8; MEMO_LEN]> {
    let mut eph_secret = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut eph_secret[..]);
    let eph = MontgomeryPoint::mul_base_clamped(*eph_secret).to_bytes();
    let shared = Zeroizing::new(MontgomeryPoint(*viewing).mul_clamped(*eph_secret).to_bytes());
    if *shared == [0u8; 32] {
        return None; // a low-order "viewing key": nobody could open the memo
    }
    let mut plaintext = Zeroizing::new([0u8; PLAINTEXT_LEN]);
    plaintext[..16].copy_from_slice(&value.to_be_bytes());
    plaintext[16..].copy_from_slice(&field::to_be32(blinding));
    let cipher = ChaCha20Poly1305::new((&*key(&shared, &eph, viewing)).into());
    let aad = field::to_be32(asset);
    let sealed = cipher.encrypt(&[0u8; 12].into(), Payload { msg: &plaintext[..], aad: &aad }).ok()?;
    let mut memo = [0u8; MEMO_LEN];
    memo[..32].copy_from_slice(&eph);
    memo[32..].copy_from_slice(&sealed);
    Some(memo)
}

/// Opens a memo with the viewing secret: `(value, blinding)`, or `None` if it is not for this
/// key, was modified, or is malformed (any length other than [`MEMO_LEN`]).
pub fn open(secret: &ViewingSecret, asset: &Fr, memo: &[u8]) -> Option<(u128, Fr)> {
    if memo.len() != MEMO_LEN {
        return None;
    }
    let mut eph = [0u8; 32];
    eph.copy_from_slice(&memo[..32]);
    let shared = Zeroizing::new(MontgomeryPoint(eph).mul_clamped(secret.0).to_bytes());
    if *shared == [0u8; 32] {
        return None;
    }
    let cipher = ChaCha20Poly1305::new((&*key(&shared, &eph, &secret.public())).into());
    let aad = field::to_be32(asset);
    let plaintext = Zeroizing::new(cipher.decrypt(&[0u8; 12].into(), Payload { msg: &memo[32..], aad: &aad }).ok()?);
    let value = u128::from_be_bytes(plaintext[..16].try_into().ok()?);
    let blinding = field::from_be32(&plaintext[16..].try_into().ok()?).ok()?;
    Some((value, blinding))
}
