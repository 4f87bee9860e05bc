//! Handshake randomness injected by the caller, for hosts without an
//! operating-system RNG that the link core may call (wasm32 in a browser:
//! the host seeds a `ChaCha20Rng` from `crypto.getRandomValues` and passes
//! it in).
//!
//! A handshake draws three things: the X25519 ephemeral key (inside snow),
//! the ML-KEM-768 key generation seed (initiator) and the encapsulation seed
//! (responder). With the `*_with_rng` constructors all three come from the
//! caller's RNG: the KEM seeds directly, the ephemeral through a snow
//! [`CryptoResolver`] whose RNG is a ChaCha20 stream keyed with 32 bytes
//! drawn from the caller's RNG. Everything else (X25519, the ciphers,
//! BLAKE2s) is snow's default resolver, as in the native build.
//!
//! The resolver hands its RNG out **once**: a second `resolve_rng` returns
//! `None` (snow then fails the build), so one seed can never key two
//! handshake states.

use std::sync::Mutex;

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use zeroize::Zeroizing;

/// A snow resolver whose RNG is a ChaCha20 stream from an injected seed.
pub(crate) struct SeededResolver {
    seed: Mutex<Option<Zeroizing<[u8; 32]>>>,
}

impl SeededResolver {
    /// A resolver keyed with 32 bytes drawn from `rng`.
    pub(crate) fn from_rng<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(&mut seed[..]);
        Self { seed: Mutex::new(Some(seed)) }
    }
}

/// snow's view of the seeded stream.
struct SeededRandom(ChaCha20Rng);

impl Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        // A poisoned lock only means another thread panicked while holding
        // it; the seed inside is still whole (or already taken).
        let mut slot = self.seed.lock().unwrap_or_else(|p| p.into_inner());
        let seed = slot.take()?;
        Some(Box::new(SeededRandom(ChaCha20Rng::from_seed(*seed))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

/// `N` bytes from the caller's RNG.
pub(crate) fn random_from<const N: usize, R: CryptoRng + ?Sized>(rng: &mut R) -> Zeroizing<[u8; N]> {
    let mut out = Zeroizing::new([0u8; N]);
    rng.fill_bytes(&mut out[..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeded_rng_is_handed_out_once() {
        let resolver = SeededResolver::from_rng(&mut ChaCha20Rng::from_seed([1; 32]));
        let mut first = resolver.resolve_rng().expect("first call yields the RNG");
        assert!(resolver.resolve_rng().is_none(), "a second handshake state must not reuse the seed");
        let mut a = [0u8; 32];
        first.try_fill_bytes(&mut a).unwrap();
        // The stream is the one the seed drawn from the caller's RNG keys.
        let mut caller = ChaCha20Rng::from_seed([1; 32]);
        let mut expected = ChaCha20Rng::from_seed(*random_from::<32, _>(&mut caller));
        let mut b = [0u8; 32];
        expected.fill_bytes(&mut b);
        assert_eq!(a, b);
        assert!(resolver.resolve_dh(&DHChoice::Curve25519).is_some());
    }
}
