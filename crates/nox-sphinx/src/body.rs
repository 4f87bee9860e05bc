//! The body cipher: HCTR2-AES-128 (`nox-hctr2`) with an empty tweak, under a
//! fresh 16-byte key per hop (π of the hop key schedule) or per SURB reply
//! (derived from the reply key). HCTR2 is a strong PRP on the whole body:
//! flipping any ciphertext bit randomises the whole decryption, so a tag
//! placed by one hop garbles the body at the next honest hop and the
//! 16-byte zero prefix catches any change (docs/spec/sphinx.md §6).

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::crypto::{CTX_REPLY_BODY, kdf};

/// One layer's HCTR2 key.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct BodyKey([u8; 16]);

impl BodyKey {
    /// π straight from the hop key schedule.
    pub(crate) fn from_bytes(key: &[u8; 16]) -> Self {
        Self(*key)
    }

    /// The reply layer's key: `BLAKE3-derive_key(CTX_REPLY_BODY, k_r)[..16]`.
    pub(crate) fn from_reply_key(reply_key: &[u8; 32]) -> Self {
        let mut key = Self([0u8; 16]);
        kdf(CTX_REPLY_BODY, &[reply_key], &mut key.0);
        key
    }

    /// Enciphers `body` in place. Bodies are at least `MIN_BODY_LEN` bytes
    /// (the geometry guarantees it), more than HCTR2's 16; a shorter slice
    /// would be left unchanged rather than panic.
    pub(crate) fn encrypt(&self, body: &mut [u8]) {
        let _ = nox_hctr2::Hctr2::new(&self.0).encrypt(b"", body);
    }

    /// Deciphers `body` in place (inverse of [`BodyKey::encrypt`]).
    pub(crate) fn decrypt(&self, body: &mut [u8]) {
        let _ = nox_hctr2::Hctr2::new(&self.0).decrypt(b"", body);
    }
}
