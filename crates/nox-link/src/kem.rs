//! The post-quantum half of the hybrid handshake (`docs/spec/link.md` §1.3):
//! one ephemeral ML-KEM-768 key pair per link (FIPS 203, libcrux), and the
//! combiner that derives the transport keys from the Noise split, the KEM
//! shared secret and the Noise handshake hash.
//!
//! Secret hygiene: the decapsulation key, the shared secret, the seeds and
//! the combiner's hasher are zeroized by us. Copies that libcrux makes on its
//! own stack while computing (it takes seeds by value) are out of our reach.

use libcrux_ml_kem::mlkem768::{self, MlKem768Ciphertext, MlKem768PrivateKey, MlKem768PublicKey};
use libcrux_ml_kem::{ENCAPS_SEED_SIZE, KEY_GENERATION_SEED_SIZE, SHARED_SECRET_SIZE};
#[cfg(feature = "os-rng")]
use snow::resolvers::{CryptoResolver, DefaultResolver};
use zeroize::{Zeroize, Zeroizing};

use crate::error::LinkError;

/// Bytes of an ML-KEM-768 encapsulation key (FIPS 203: 384·k + 32, k = 3),
/// sent by the initiator in Noise message 1.
pub const KEM_EK_LEN: usize = 1184;
/// Bytes of an ML-KEM-768 ciphertext, sent by the responder in Noise message 2.
pub const KEM_CT_LEN: usize = 1088;
/// Seed of one key generation: `d ‖ z` (FIPS 203 `ML-KEM.KeyGen_internal`).
pub(crate) const KEYGEN_SEED_LEN: usize = KEY_GENERATION_SEED_SIZE;
/// Seed of one encapsulation: `m` (FIPS 203 `ML-KEM.Encaps_internal`).
pub(crate) const ENCAPS_SEED_LEN: usize = ENCAPS_SEED_SIZE;

const _: () = assert!(KEM_EK_LEN == MlKem768PublicKey::len());
const _: () = assert!(KEM_CT_LEN == MlKem768Ciphertext::len());
const _: () = assert!(KEYGEN_SEED_LEN == 64 && ENCAPS_SEED_LEN == 32 && SHARED_SECRET_SIZE == 32);

/// BLAKE3 `derive_key` context of the initiator → responder transport key.
pub(crate) const CONTEXT_I2R: &str = "NOX link v2 hybrid i2r";
/// BLAKE3 `derive_key` context of the responder → initiator transport key.
pub(crate) const CONTEXT_R2I: &str = "NOX link v2 hybrid r2i";

/// `N` bytes from the operating system (getrandom, through snow's resolver:
/// the same source as the Noise ephemeral keys).
#[cfg(feature = "os-rng")]
pub(crate) fn os_random<const N: usize>() -> Result<Zeroizing<[u8; N]>, LinkError> {
    let mut rng = DefaultResolver.resolve_rng().ok_or_else(|| LinkError::Noise("no RNG".into()))?;
    let mut out = Zeroizing::new([0u8; N]);
    rng.try_fill_bytes(&mut out[..]).map_err(LinkError::from_snow)?;
    Ok(out)
}

/// The initiator's ephemeral ML-KEM-768 decapsulation key (2,400 bytes),
/// held between message 1 and message 2; zeroized on drop.
pub(crate) struct DecapsulationKey(Box<MlKem768PrivateKey>);

impl DecapsulationKey {
    /// A fresh key pair from `seed`, and the encapsulation key to send.
    pub(crate) fn generate(seed: &[u8; KEYGEN_SEED_LEN]) -> (Self, Box<[u8; KEM_EK_LEN]>) {
        let (mut sk, pk) = mlkem768::generate_key_pair(*seed).into_parts();
        let key = Self(Box::new(sk.clone()));
        sk[0..].zeroize();
        (key, Box::new(*pk.as_slice()))
    }

    /// The shared secret for `ct`. ML-KEM rejects implicitly: a ciphertext
    /// that is not the responder's yields an unrelated secret, not an error
    /// (and then the keys of the two ends differ). Message 2 is
    /// authenticated by Noise anyway.
    pub(crate) fn decapsulate(&self, ct: &[u8; KEM_CT_LEN]) -> Zeroizing<[u8; SHARED_SECRET_SIZE]> {
        let ct = MlKem768Ciphertext::from(ct);
        let mut ss = mlkem768::decapsulate(&self.0, &ct);
        let out = Zeroizing::new(ss);
        ss.zeroize();
        out
    }
}

impl Drop for DecapsulationKey {
    fn drop(&mut self) {
        self.0[0..].zeroize();
    }
}

/// The initiator's encapsulation key, checked: exactly [`KEM_EK_LEN`] bytes
/// that pass the FIPS 203 §7.2 modulus check (every coefficient below q).
pub(crate) struct EncapsulationKey(Box<MlKem768PublicKey>);

impl EncapsulationKey {
    /// Parses and validates the key sent in message 1.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, LinkError> {
        let key = MlKem768PublicKey::try_from(bytes)
            .map_err(|_| LinkError::HandshakePayload { got: bytes.len(), expected: KEM_EK_LEN })?;
        if !mlkem768::validate_public_key(&key) {
            return Err(LinkError::KemKey);
        }
        Ok(Self(Box::new(key)))
    }

    /// Encapsulates to this key with `seed`: the ciphertext to send and the
    /// shared secret.
    pub(crate) fn encapsulate(
        &self,
        seed: &[u8; ENCAPS_SEED_LEN],
    ) -> (Box<[u8; KEM_CT_LEN]>, Zeroizing<[u8; SHARED_SECRET_SIZE]>) {
        let (ct, mut ss) = mlkem768::encapsulate(&self.0, *seed);
        let out = Zeroizing::new(ss);
        ss.zeroize();
        (Box::new(*ct.as_slice()), out)
    }
}

/// One transport key: `BLAKE3-derive_key(context, k ‖ ss ‖ h)` with `k` a
/// Noise split key, `ss` the ML-KEM shared secret and `h` the Noise
/// handshake hash (all 32 bytes, so the concatenation is unambiguous).
pub(crate) fn combine(context: &str, k: &[u8; 32], ss: &[u8; 32], h: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut hasher = blake3::Hasher::new_derive_key(context);
    hasher.update(k);
    hasher.update(ss);
    hasher.update(h);
    let mut hash = hasher.finalize();
    let out = Zeroizing::new(*hash.as_bytes());
    hash.zeroize();
    hasher.zeroize();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encapsulation_round_trip_and_modulus_check() {
        let (dk, ek) = DecapsulationKey::generate(&[7; KEYGEN_SEED_LEN]);
        let ek_checked = EncapsulationKey::parse(&ek[..]).unwrap();
        let (ct, ss) = ek_checked.encapsulate(&[9; ENCAPS_SEED_LEN]);
        assert_eq!(dk.decapsulate(&ct), ss);
        // A coefficient ≥ q = 3329: the first 12 bits set to 0xFFF.
        let mut bad = *ek;
        bad[0] = 0xFF;
        bad[1] |= 0x0F;
        assert_eq!(EncapsulationKey::parse(&bad[..]).err(), Some(LinkError::KemKey));
        assert_eq!(
            EncapsulationKey::parse(&ek[..100]).err(),
            Some(LinkError::HandshakePayload { got: 100, expected: KEM_EK_LEN })
        );
        // A different ciphertext: implicit rejection, another secret.
        let mut ct2 = *ct;
        ct2[0] ^= 1;
        assert_ne!(dk.decapsulate(&ct2), ss);
    }

    #[test]
    fn combine_depends_on_every_input_and_the_context() {
        let base = combine(CONTEXT_I2R, &[1; 32], &[2; 32], &[3; 32]);
        assert_ne!(base, combine(CONTEXT_R2I, &[1; 32], &[2; 32], &[3; 32]));
        assert_ne!(base, combine(CONTEXT_I2R, &[0; 32], &[2; 32], &[3; 32]));
        assert_ne!(base, combine(CONTEXT_I2R, &[1; 32], &[0; 32], &[3; 32]));
        assert_ne!(base, combine(CONTEXT_I2R, &[1; 32], &[2; 32], &[0; 32]));
        let mut material = [1u8; 96];
        material[32..64].fill(2);
        material[64..].fill(3);
        assert_eq!(*base, blake3::derive_key("NOX link v2 hybrid i2r", &material));
    }
}
