//! Proofs of knowledge of a contribution's secret: a Schnorr signature in G1 with public key
//! `K = x·G1` on a message naming the transcript it extends, plus `x·G2` so that pairing checks
//! can tie `K` to the update. Only someone who knows `x` can produce it, and it cannot be lifted
//! onto another transcript.

use ark_bn254::{Fr, G1Affine, G1Projective, G2Affine};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{PrimeField, Zero};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use rand_core::{CryptoRng, RngCore};

/// A proof of knowledge of `x`.
#[derive(Clone, Debug, PartialEq, Eq, CanonicalSerialize, CanonicalDeserialize)]
pub struct Pok {
    /// `x·G1`.
    pub g1: G1Affine,
    /// `x·G2`.
    pub g2: G2Affine,
    /// Schnorr commitment `k·G1`.
    pub r: G1Affine,
    /// Schnorr response `k + c·x`.
    pub s: Fr,
}

fn challenge(message: &[u8], g1: &G1Affine, g2: &G2Affine, r: &G1Affine) -> Fr {
    let mut h = blake3::Hasher::new_derive_key("NOX zk setup v1 proof of knowledge");
    let mut buf = Vec::new();
    // Serialising curve points into a Vec cannot fail.
    let _ = (g1, g2, r).serialize_compressed(&mut buf);
    h.update(&(message.len() as u64).to_le_bytes());
    h.update(message);
    h.update(&buf);
    let mut wide = [0u8; 64];
    h.finalize_xof().fill(&mut wide);
    Fr::from_le_bytes_mod_order(&wide)
}

/// A random nonzero scalar.
pub fn random_nonzero<R: RngCore + CryptoRng>(rng: &mut R) -> Fr {
    loop {
        let mut wide = [0u8; 64];
        rng.fill_bytes(&mut wide);
        let x = Fr::from_le_bytes_mod_order(&wide);
        zeroize::Zeroize::zeroize(&mut wide);
        if !x.is_zero() {
            return x;
        }
    }
}

impl Pok {
    /// Proves knowledge of `x` for `message`.
    pub fn prove<R: RngCore + CryptoRng>(x: &Fr, message: &[u8], rng: &mut R) -> Pok {
        let g1 = (G1Affine::generator() * x).into_affine();
        let g2 = (G2Affine::generator() * x).into_affine();
        let mut k = random_nonzero(rng);
        let r = (G1Affine::generator() * k).into_affine();
        let c = challenge(message, &g1, &g2, &r);
        let s = k + c * x;
        zeroize::Zeroize::zeroize(&mut k);
        Pok { g1, g2, r, s }
    }

    /// Checks the signature and that `g1` and `g2` hold the same exponent.
    pub fn verify(&self, message: &[u8]) -> bool {
        use ark_ec::pairing::Pairing;
        if self.g1.is_zero() || self.g2.is_zero() {
            return false;
        }
        let c = challenge(message, &self.g1, &self.g2, &self.r);
        let lhs: G1Projective = G1Affine::generator() * self.s;
        let rhs = self.r.into_group() + self.g1 * c;
        lhs == rhs
            && ark_bn254::Bn254::pairing(self.g1, G2Affine::generator())
                == ark_bn254::Bn254::pairing(G1Affine::generator(), self.g2)
    }
}
