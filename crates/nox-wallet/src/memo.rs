//! Note ciphertexts, version 2: a note's secrets encrypted to its owner's address, published with
//! every deposit and with both outputs of every transaction, so that the owner finds the note
//! from the chain and its keys alone (docs/spec/notes.md §4).
//!
//! ```text
//! note   = E (32) ‖ tag (8) ‖ ChaCha20-Poly1305(key, nonce = 0¹², aad = BE256(asset) ‖ BE256(owner),
//!                                              BE128(value) ‖ BE256(blinding))            104 bytes
//! E      = X25519(e, 9)             e: 32 fresh random bytes per note
//! shared = X25519(e, VK)            VK: the address's viewing key (never of small order)
//! tag ‖ key = BLAKE3-XOF(derive_key("NOX note v2", shared ‖ E ‖ VK), 8 + 32 bytes)
//! ```
//! Every note has its own ephemeral key, so the fixed nonce is never reused under one key. One
//! length ([`NOTE_LEN`]) for every note, zero-value outputs included, so outputs look alike.
//!
//! **Scanning.** The receiver computes `shared = X25519(vk, E)` and the 8-byte view tag: a
//! note for somebody else fails there (one X25519 and one BLAKE3 call) and is [`Opened::NotMine`].
//! A matching tag means the note was sealed to this key — a foreign note matches by chance with
//! probability 2⁻⁶⁴ — so if the AEAD then fails, the note is [`Opened::Corrupt`], never silently
//! skipped. A change to `E` or to the tag makes a note look foreign (`NotMine`): that is what
//! makes a note for someone else unlinkable, and on chain it cannot happen to a transaction's
//! notes, whose hash is bound into the proof's context (a relayer's change makes the proof fail).
//! A note that opens is the wallet's only if it matches the commitment published with it
//! ([`scan`]).

use ark_bn254::Fr;
use chacha20poly1305::{
    AeadInPlace, ChaCha20Poly1305, KeyInit,
    aead::{Aead, Payload},
};
use curve25519_dalek::montgomery::MontgomeryPoint;
use nox_zk::field;
use rand_core_06::{CryptoRng, RngCore};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::keys::{PaymentAddress, ViewingKey};

/// Length of every note ciphertext: ephemeral key, view tag, sealed value and blinding, AEAD tag.
pub const NOTE_LEN: usize = EPH_LEN + TAG_LEN + PLAINTEXT_LEN + AEAD_TAG_LEN;
/// Length of the view tag.
pub const VIEW_TAG_LEN: usize = TAG_LEN;
const EPH_LEN: usize = 32;
const TAG_LEN: usize = 8;
const PLAINTEXT_LEN: usize = 16 + 32;
const AEAD_TAG_LEN: usize = 16;
const NOTE_CONTEXT: &str = "NOX note v2";

/// What a wallet learns from one note ciphertext.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// Not sealed to this key (or not a note at all: wrong length, invalid ephemeral key).
    NotMine,
    /// Sealed to this key and authentic: the note's value and blinding.
    Mine {
        /// The note's value.
        value: u128,
        /// The note's blinding.
        blinding: Fr,
    },
    /// The view tag says this note was sealed to this key, but it does not open or does not
    /// match what was published with it: tampered, re-targeted or mis-built. A wallet reports
    /// it rather than dropping it silently.
    Corrupt(&'static str),
}

/// View tag ‖ AEAD key from the shared secret, the ephemeral key `eph` and the viewing public key.
fn derive(shared: &[u8; 32], eph: &[u8; 32], vk_pub: &[u8; 32]) -> Zeroizing<[u8; TAG_LEN + 32]> {
    let mut okm = Zeroizing::new([0u8; TAG_LEN + 32]);
    blake3::Hasher::new_derive_key(NOTE_CONTEXT)
        .update(shared)
        .update(eph)
        .update(vk_pub)
        .finalize_xof()
        .fill(&mut okm[..]);
    okm
}

fn aad(asset: &Fr, owner: &Fr) -> [u8; 64] {
    let mut a = [0u8; 64];
    a[..32].copy_from_slice(&field::to_be32(asset));
    a[32..].copy_from_slice(&field::to_be32(owner));
    a
}

fn cipher(okm: &[u8; TAG_LEN + 32]) -> ChaCha20Poly1305 {
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&okm[TAG_LEN..]);
    ChaCha20Poly1305::new((&*key).into())
}

/// Seals the note `(value, asset, to.owner(), blinding)` to the address `to`: [`NOTE_LEN`] bytes.
pub fn seal<R: RngCore + CryptoRng>(
    to: &PaymentAddress,
    asset: &Fr,
    value: u128,
    blinding: &Fr,
    rng: &mut R,
) -> Vec<u8> {
    let mut e = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut e[..]);
    let eph = MontgomeryPoint::mul_base_clamped(*e).to_bytes();
    // Never all zeros: a PaymentAddress's viewing key is checked not to have small order.
    let shared = Zeroizing::new(MontgomeryPoint(*to.viewing_public()).mul_clamped(*e).to_bytes());
    let okm = derive(&shared, &eph, to.viewing_public());
    let mut note = Vec::with_capacity(NOTE_LEN);
    note.extend_from_slice(&eph);
    note.extend_from_slice(&okm[..TAG_LEN]);
    let mut body = Zeroizing::new([0u8; PLAINTEXT_LEN]);
    body[..16].copy_from_slice(&value.to_be_bytes());
    body[16..].copy_from_slice(&field::to_be32(blinding));
    let tag = cipher(&okm)
        .encrypt_in_place_detached(&[0u8; 12].into(), &aad(asset, &to.owner()), &mut body[..])
        .expect("ChaCha20-Poly1305 seals any 48-byte plaintext (its limit is 2^38 bytes)");
    note.extend_from_slice(&body[..]);
    note.extend_from_slice(&tag);
    note
}

/// Opens a note ciphertext with the viewing key, for a note of `asset` (authenticated: a note
/// published under another asset does not open). Does not check a commitment; see [`scan`].
pub fn open(vk: &ViewingKey, ct: &[u8], asset: &Fr) -> Opened {
    let Ok(note) = <&[u8; NOTE_LEN]>::try_from(ct) else {
        return Opened::NotMine;
    };
    let mut eph = [0u8; EPH_LEN];
    eph.copy_from_slice(&note[..EPH_LEN]);
    let shared = Zeroizing::new(MontgomeryPoint(eph).mul_clamped(*vk.secret()).to_bytes());
    if *shared == [0u8; 32] {
        return Opened::NotMine; // a small-order E: no sender makes one
    }
    let okm = derive(&shared, &eph, vk.public());
    if !bool::from(okm[..TAG_LEN].ct_eq(&note[EPH_LEN..EPH_LEN + TAG_LEN])) {
        return Opened::NotMine;
    }
    let sealed = &note[EPH_LEN + TAG_LEN..];
    let Ok(plain) = cipher(&okm)
        .decrypt(&[0u8; 12].into(), Payload { msg: sealed, aad: &aad(asset, &vk.owner()) })
        .map(Zeroizing::new)
    else {
        return Opened::Corrupt(
            "a note for this wallet does not authenticate: modified, or published under another asset",
        );
    };
    let mut value = [0u8; 16];
    value.copy_from_slice(&plain[..16]);
    let mut blinding = Zeroizing::new([0u8; 32]);
    blinding.copy_from_slice(&plain[16..]);
    match field::from_be32(&blinding) {
        Ok(blinding) => Opened::Mine { value: u128::from_be_bytes(value), blinding },
        Err(_) => Opened::Corrupt("a note for this wallet carries a blinding that is not a BN254 scalar"),
    }
}

/// Opens a note and checks it against the commitment published with it: [`Opened::Mine`] only
/// if `Poseidon(value, asset, Poseidon(owner, blinding)) == commitment`. A note that opens but
/// does not match (a ciphertext for this wallet published beside another note's commitment, or
/// a sender's mistake) is [`Opened::Corrupt`]: the wallet cannot spend it and says so.
pub fn scan(vk: &ViewingKey, ct: &[u8], asset: &Fr, commitment: &Fr) -> Opened {
    match open(vk, ct, asset) {
        Opened::Mine { value, blinding } => match vk.commitment(value, *asset, blinding) {
            Ok(c) if c == *commitment => Opened::Mine { value, blinding },
            Ok(_) => Opened::Corrupt(
                "a note for this wallet does not match the commitment published with it: re-targeted or mis-built",
            ),
            Err(_) => Opened::Corrupt("a note for this wallet has no commitment (value out of range)"),
        },
        other => other,
    }
}
