//! Node keys and identities.

use curve25519_dalek::{
    constants::RISTRETTO_BASEPOINT_TABLE,
    ristretto::{CompressedRistretto, RistrettoPoint},
    scalar::Scalar,
};
use rand_core::{CryptoRng, RngCore};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::SphinxError;

/// Opaque 32-byte identifier of a node (or of a client, as a SURB recipient).
/// The outer layers define it (e.g. a hash of the node's link key); the
/// packet format only carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub [u8; 32]);

/// A node's Sphinx public key for one key epoch: a ristretto255 point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey {
    compressed: [u8; 32],
    point: RistrettoPoint,
}

impl PublicKey {
    /// Parses a canonical, non-identity ristretto255 encoding.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, SphinxError> {
        let point = decode_point(bytes).ok_or(SphinxError::InvalidPublicKey)?;
        Ok(Self { compressed: *bytes, point })
    }

    /// The 32-byte encoding.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.compressed
    }

    pub(crate) fn point(&self) -> &RistrettoPoint {
        &self.point
    }
}

/// A node's Sphinx secret key for one key epoch. Zeroized on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SecretKey {
    scalar: Scalar,
}

impl core::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// A fresh uniformly random key.
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        Self { scalar: random_scalar(rng) }
    }

    /// Restores a key from its 32-byte canonical scalar encoding.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        Option::<Scalar>::from(Scalar::from_canonical_bytes(*bytes))
            .filter(|s| *s != Scalar::ZERO)
            .map(|scalar| Self { scalar })
    }

    /// The 32-byte scalar encoding. Handle with care: this is the secret.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.scalar.to_bytes()
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        let point = RISTRETTO_BASEPOINT_TABLE * &self.scalar;
        PublicKey { compressed: point.compress().to_bytes(), point }
    }

    pub(crate) fn scalar(&self) -> &Scalar {
        &self.scalar
    }
}

/// A uniformly random nonzero scalar from 64 random bytes.
pub(crate) fn random_scalar<R: RngCore + CryptoRng>(rng: &mut R) -> Scalar {
    loop {
        let mut wide = [0u8; 64];
        rng.fill_bytes(&mut wide);
        let s = Scalar::from_bytes_mod_order_wide(&wide);
        wide.zeroize();
        if s != Scalar::ZERO {
            return s;
        }
    }
}

/// Decodes a canonical ristretto255 point, refusing the identity.
pub(crate) fn decode_point(bytes: &[u8; 32]) -> Option<RistrettoPoint> {
    CompressedRistretto(*bytes).decompress().filter(|p| *p != RistrettoPoint::default())
}
