//! HCTR2 with AES-128: a tweakable wide-block cipher, i.e. a strong
//! pseudorandom permutation on byte strings of any length ≥ 16
//! (Crowley, Huckleberry, Biggers, "Length-preserving encryption with HCTR2",
//! IACR ePrint 2021/1441).
//!
//! NOX uses it for the Sphinx body: every bit of a ciphertext influences
//! every bit of its decryption, so a body altered anywhere decrypts to noise
//! and its 16-byte zero prefix catches the change (docs/spec/sphinx.md §6).
//!
//! ```text
//! M ‖ N = P, |M| = 16
//! MM = M ⊕ H(T, N);  UU = E(MM);  S = MM ⊕ UU ⊕ L
//! V  = N ⊕ XCTR(S);  U  = UU ⊕ H(T, V);  C = U ‖ V
//! H(T, X) = POLYVAL(h, le128(2·8|T| + 2 + [16 ∤ |X|]) ‖ pad(T) ‖ pad(X ‖ 0x01?))
//! h = E(le128(0)),  L = E(le128(1)),  XCTR(S)_i = E(S ⊕ le128(i)), i = 1, 2, …
//! ```
//!
//! One AES pass and two POLYVAL passes over the message; the POLYVAL passes
//! run sixteen blocks at a time with VPCLMULQDQ (512- or 256-bit) where the
//! CPU has it (`polyval.rs`). Checked against the designers' test vectors
//! (`tests/vectors.rs`).

#![deny(unsafe_op_in_unsafe_fn)]

mod polyval;
mod xctr;

use aes::{
    Aes128,
    cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit},
};
use zeroize::Zeroize;

pub use crate::polyval::Backend;
use crate::polyval::{BLOCK, Polyval};

/// Smallest message HCTR2 enciphers: one block.
pub const MIN_LEN: usize = BLOCK;

/// A message shorter than [`MIN_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("HCTR2 needs at least {MIN_LEN} bytes, got {0}")]
pub struct TooShort(pub usize);

/// HCTR2-AES-128 under one key. The AES key schedules, the hash key's powers
/// and `L` are wiped on drop.
pub struct Hctr2 {
    aes: Aes128,
    hash_key: [u8; BLOCK],
    l: [u8; BLOCK],
    backend: Backend,
}

impl Drop for Hctr2 {
    fn drop(&mut self) {
        self.hash_key.zeroize();
        self.l.zeroize();
        // `Aes128` wipes its round keys on drop (the `aes` crate's `zeroize` feature).
    }
}

impl Hctr2 {
    /// Key setup: the AES-128 key schedule, `h = E(0)` and `L = E(1)`;
    /// POLYVAL on the fastest [`Backend`] this CPU runs.
    pub fn new(key: &[u8; 16]) -> Self {
        Self::build(key, Backend::detect())
    }

    /// As [`Hctr2::new`] on a chosen POLYVAL backend, or `None` if this CPU
    /// does not run it (differential tests, benchmarks).
    pub fn with_backend(key: &[u8; 16], backend: Backend) -> Option<Self> {
        backend.available().then(|| Self::build(key, backend))
    }

    fn build(key: &[u8; 16], backend: Backend) -> Self {
        let aes = Aes128::new(key.into());
        let mut h = Array::from(le128(0));
        let mut l = Array::from(le128(1));
        aes.encrypt_block(&mut h);
        aes.encrypt_block(&mut l);
        let out = Self { aes, hash_key: h.into(), l: l.into(), backend };
        h.as_mut_slice().zeroize();
        l.as_mut_slice().zeroize();
        out
    }

    /// Enciphers `data` in place under `tweak`.
    pub fn encrypt(&self, tweak: &[u8], data: &mut [u8]) -> Result<(), TooShort> {
        self.crypt(tweak, data, false)
    }

    /// Deciphers `data` in place under `tweak` (inverse of [`Hctr2::encrypt`]).
    pub fn decrypt(&self, tweak: &[u8], data: &mut [u8]) -> Result<(), TooShort> {
        self.crypt(tweak, data, true)
    }

    /// Both directions are the same steps with AES or its inverse in the
    /// middle: encryption maps `M ‖ N` through `MM`, `UU` to `U ‖ V`,
    /// decryption maps `U ‖ V` through `UU`, `MM` back to `M ‖ N`.
    fn crypt(&self, tweak: &[u8], data: &mut [u8], decrypt: bool) -> Result<(), TooShort> {
        let (head, tail) = split(data)?;
        let prefix = self.tweak_state(tweak, tail.len());
        let mut x = xor(head, &self.hash(&prefix, tail));
        let mut y = if decrypt { self.aes_decrypt(&x) } else { self.aes_encrypt(&x) };
        let mut s = xor(&xor(&x, &y), &self.l);
        xctr::apply(&self.aes, &s, tail);
        head.copy_from_slice(&xor(&y, &self.hash(&prefix, tail)));
        x.zeroize();
        y.zeroize();
        s.zeroize();
        Ok(())
    }

    /// POLYVAL after the length block and the padded tweak, which both
    /// hashes of one call share.
    fn tweak_state(&self, tweak: &[u8], tail_len: usize) -> Polyval {
        let mut p = Polyval::new(&self.hash_key, self.backend);
        let bits = 8 * tweak.len() as u128;
        let flag = u128::from(!tail_len.is_multiple_of(BLOCK));
        p.update(&le128(2 * bits + 2 + flag));
        let whole = tweak.len() - tweak.len() % BLOCK;
        p.update(&tweak[..whole]);
        if whole < tweak.len() {
            let mut last = [0u8; BLOCK];
            last[..tweak.len() - whole].copy_from_slice(&tweak[whole..]);
            p.update(&last);
        }
        p
    }

    /// `H(T, X)` from the tweak's state: X's whole blocks, then its partial
    /// block with a 0x01 byte appended and zero padding.
    fn hash(&self, prefix: &Polyval, x: &[u8]) -> [u8; BLOCK] {
        let mut p = prefix.duplicate();
        let whole = x.len() - x.len() % BLOCK;
        p.update(&x[..whole]);
        if whole < x.len() {
            let mut last = [0u8; BLOCK];
            last[..x.len() - whole].copy_from_slice(&x[whole..]);
            last[x.len() - whole] = 1;
            p.update(&last);
            last.zeroize();
        }
        p.finish()
    }

    fn aes_encrypt(&self, block: &[u8; BLOCK]) -> [u8; BLOCK] {
        let mut b = Array::from(*block);
        self.aes.encrypt_block(&mut b);
        b.into()
    }

    fn aes_decrypt(&self, block: &[u8; BLOCK]) -> [u8; BLOCK] {
        let mut b = Array::from(*block);
        self.aes.decrypt_block(&mut b);
        b.into()
    }
}

/// XCTR alone (for its own test vectors); not a stable API.
#[doc(hidden)]
pub fn xctr_for_tests(key: &[u8; 16], iv: &[u8; BLOCK], data: &mut [u8]) {
    xctr::apply(&Aes128::new(key.into()), iv, data);
}

/// Splits a message into its first block and the rest.
fn split(data: &mut [u8]) -> Result<(&mut [u8; BLOCK], &mut [u8]), TooShort> {
    let len = data.len();
    let (head, tail) = data.split_first_chunk_mut::<BLOCK>().ok_or(TooShort(len))?;
    Ok((head, tail))
}

fn xor(a: &[u8; BLOCK], b: &[u8; BLOCK]) -> [u8; BLOCK] {
    (u128::from_ne_bytes(*a) ^ u128::from_ne_bytes(*b)).to_ne_bytes()
}

fn le128(x: u128) -> [u8; BLOCK] {
    x.to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_an_error_and_untouched() {
        let c = Hctr2::new(&[1; 16]);
        let mut data = [7u8; 15];
        assert_eq!(c.encrypt(b"", &mut data), Err(TooShort(15)));
        assert_eq!(c.decrypt(b"", &mut data), Err(TooShort(15)));
        assert_eq!(data, [7u8; 15]);
        let mut one = [7u8; 16];
        c.encrypt(b"", &mut one).expect("one block is enough");
        assert_ne!(one, [7u8; 16]);
        c.decrypt(b"", &mut one).expect("one block is enough");
        assert_eq!(one, [7u8; 16]);
    }
}
