//! Lioness: a four-round unbalanced Feistel cipher over the whole body, a
//! strong pseudorandom permutation (Anderson–Biham; paper eqs. 7–10).
//!
//! The body cipher until 2026-11-26 (the paper's choice); HCTR2
//! (`src/body.rs`) replaced it at 0.4 × its cost. Kept here, in the
//! benchmarks and not in the library, as the baseline `per_hop/body_*`
//! measures HCTR2 against in the same run.
//!
//! The body is split into `R` (first 32 bytes) and `L` (the rest).
//! Encryption:
//!
//! ```text
//! L ^= S(k1, R)     S(k, R) = AES-128-CTR keystream, key = BLAKE3-keyed(k, R)[..16], IV 0
//! R ^= H(k2, L)     H(k, L) = BLAKE3-keyed(k, L ‖ 0^z), z = (-|L|) mod 1024
//! L ^= S(k3, R)
//! R ^= H(k4, L)
//! ```
//!
//! The zero padding of `H`'s input (at most one BLAKE3 chunk) makes the
//! default 32,480-byte `L` exactly 32 chunks, which BLAKE3 hashes 16 chunks
//! at a time with AVX-512; unpadded, its tree splits into 16+8+4+2+1-chunk
//! subtrees and hashing costs ~45% more. `|L|` is fixed per geometry, so the
//! padding is injective and `H` stays a PRF of `L`.
//!
//! Decryption runs the rounds in reverse. Flipping any bit of a ciphertext
//! changes about half the bits of the decryption: a tag placed by one hop
//! garbles the whole body at the next honest hop.

use zeroize::{Zeroize, ZeroizeOnDrop};

use nox_sphinx::bench_internals::xor_keystream;

/// The key expansion's context string (the format's until 2026-11-26).
const CTX_LIONESS: &str = "NOX sphinx v1 lioness subkeys";

/// Length of the right half `R`.
const R_LEN: usize = 32;

/// The four round keys, derived from one 32-byte body key.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Lioness {
    k1: [u8; 32],
    k2: [u8; 32],
    k3: [u8; 32],
    k4: [u8; 32],
}

impl Lioness {
    /// Expands a 32-byte key: `BLAKE3-derive_key(CTX_LIONESS, key)` to 128 bytes.
    pub fn new(key: &[u8; 32]) -> Self {
        let mut okm = [0u8; 128];
        let mut hasher = blake3::Hasher::new_derive_key(CTX_LIONESS);
        hasher.update(key);
        hasher.finalize_xof().fill(&mut okm);
        let ks = Self::from_round_keys(&okm);
        okm.zeroize();
        ks
    }

    /// Uses 128 bytes of key material directly as k1 ‖ k2 ‖ k3 ‖ k4.
    fn from_round_keys(okm: &[u8; 128]) -> Self {
        let mut ks = Self { k1: [0; 32], k2: [0; 32], k3: [0; 32], k4: [0; 32] };
        ks.k1.copy_from_slice(&okm[0..32]);
        ks.k2.copy_from_slice(&okm[32..64]);
        ks.k3.copy_from_slice(&okm[64..96]);
        ks.k4.copy_from_slice(&okm[96..128]);
        ks
    }

    /// Encrypts `block` in place (used by the round-trip test only). Callers pass bodies, which the geometry
    /// makes longer than 32 bytes; a shorter block is left unchanged rather
    /// than panicking.
    pub fn encrypt(&self, block: &mut [u8]) {
        let Some((right, left)) = block.split_at_mut_checked(R_LEN) else { return };
        stream_round(&self.k1, right, left);
        hash_round(&self.k2, left, right);
        stream_round(&self.k3, right, left);
        hash_round(&self.k4, left, right);
    }

    /// Decrypts `block` in place (inverse of [`Lioness::encrypt`]).
    pub fn decrypt(&self, block: &mut [u8]) {
        let Some((right, left)) = block.split_at_mut_checked(R_LEN) else { return };
        hash_round(&self.k4, left, right);
        stream_round(&self.k3, right, left);
        hash_round(&self.k2, left, right);
        stream_round(&self.k1, right, left);
    }
}

/// `left ^= S(key, right)`.
fn stream_round(key: &[u8; 32], right: &[u8], left: &mut [u8]) {
    let digest = blake3::keyed_hash(key, right);
    let mut stream_key = [0u8; 16];
    stream_key.copy_from_slice(&digest.as_bytes()[..16]);
    xor_keystream(&stream_key, left);
    stream_key.zeroize();
}

/// BLAKE3 chunk length: `H` pads its input to a multiple of it.
const CHUNK_LEN: usize = 1024;
/// Input fed to BLAKE3 in pieces of this size reaches its widest SIMD path.
const WIDE_LEN: usize = 16 * CHUNK_LEN;

/// `right ^= H(key, left)`.
fn hash_round(key: &[u8; 32], left: &[u8], right: &mut [u8]) {
    let mut hasher = blake3::Hasher::new_keyed(key);
    let whole = left.len() - left.len() % WIDE_LEN;
    hasher.update(&left[..whole]);
    let rest = &left[whole..];
    if !rest.is_empty() {
        // On the stack: a heap buffer here costs more (allocator, page
        // faults) than zeroing 16 KiB.
        let mut scratch = [0u8; WIDE_LEN];
        scratch[..rest.len()].copy_from_slice(rest);
        hasher.update(&scratch[..rest.len().div_ceil(CHUNK_LEN) * CHUNK_LEN]);
    }
    let digest = hasher.finalize();
    for (r, d) in right.iter_mut().zip(digest.as_bytes()) {
        *r ^= d;
    }
}

/// Round trip and diffusion, checked once before the benchmark times
/// anything (a broken baseline would make the comparison meaningless).
pub fn check() {
    let cipher = Lioness::new(&[7u8; 32]);
    let plain: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    let mut buf = plain.clone();
    cipher.encrypt(&mut buf);
    assert_ne!(buf, plain);
    let mut flipped = buf.clone();
    flipped[500] ^= 1;
    cipher.decrypt(&mut buf);
    assert_eq!(buf, plain);
    cipher.decrypt(&mut flipped);
    let changed = flipped.iter().zip(&plain).filter(|(a, b)| a != b).count();
    // A random byte differs from a fixed one with probability 255/256.
    assert!(changed > 950, "only {changed} of 1000 bytes changed");
}
