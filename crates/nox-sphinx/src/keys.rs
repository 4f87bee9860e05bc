//! Node keys and identities, for every [`Scheme`].

use curve25519_dalek::{
    constants::RISTRETTO_BASEPOINT_TABLE,
    edwards::EdwardsPoint,
    ristretto::{CompressedRistretto, RistrettoPoint},
    scalar::Scalar,
};
use std::sync::Arc;

use rand_core::{CryptoRng, RngCore};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::{crypto::kdf, error::SphinxError, geometry::Scheme, kem};

/// Opaque 32-byte identifier of a node (or of a client, as a SURB recipient).
/// The outer layers define it (e.g. a hash of the node's link key); the
/// packet format only carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub [u8; 32]);

/// Bytes of the largest public key of any scheme (X-Wing's).
pub const MAX_PUBLIC_KEY_LEN: usize = crate::kem::XWING_PUBLIC_KEY_LEN;

/// A node's Sphinx public key for one key epoch, of one [`Scheme`]: a
/// ristretto255 point, an X25519 key, an ML-KEM-768 key or an X-Wing key.
/// Always valid: decoding checks the encoding (canonical non-identity point;
/// FIPS 203 modulus check).
/// Cheap to clone: the unpacked ML-KEM key is shared.
#[derive(Clone)]
pub struct PublicKey {
    scheme: Scheme,
    bytes: [u8; MAX_PUBLIC_KEY_LEN],
    /// The decoded point for [`Scheme::Ristretto255`] (identity otherwise).
    point: RistrettoPoint,
    /// The Edwards form of the X25519 key ([`Scheme::X25519Kem`],
    /// [`Scheme::XWing`]), computed once for every encapsulation.
    x25519: Option<EdwardsPoint>,
    /// The unpacked ML-KEM-768 key ([`Scheme::MlKem768`], [`Scheme::XWing`]).
    ml_kem: Option<Arc<kem::MlKemPublic>>,
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.scheme == other.scheme && self.as_bytes() == other.as_bytes()
    }
}
impl Eq for PublicKey {}

impl core::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let head: String = self.as_bytes()[..8].iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "PublicKey({}, {head}…)", self.scheme)
    }
}

impl PublicKey {
    /// Parses a canonical, non-identity ristretto255 encoding
    /// ([`Scheme::Ristretto255`]).
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, SphinxError> {
        Self::decode(Scheme::Ristretto255, bytes)
    }

    /// Parses a public key of `scheme`: [`Scheme::public_key_len`] bytes.
    pub fn decode(scheme: Scheme, bytes: &[u8]) -> Result<Self, SphinxError> {
        let expected = scheme.public_key_len();
        if bytes.len() != expected {
            return Err(SphinxError::WrongLength { what: "public key", expected, actual: bytes.len() });
        }
        let mut point = RistrettoPoint::default();
        match scheme {
            Scheme::Ristretto255 => {
                let mut compressed = [0u8; 32];
                compressed.copy_from_slice(bytes);
                point = decode_point(&compressed).ok_or(SphinxError::InvalidPublicKey)?;
            }
            // Every u-coordinate is an X25519 public key (RFC 7748); the
            // low-order ones give an all-zero secret, refused at encapsulation.
            Scheme::X25519Kem => {}
            Scheme::MlKem768 | Scheme::XWing => {
                kem::mlkem_public_key(&bytes[..kem::MLKEM768_PUBLIC_KEY_LEN]).ok_or(SphinxError::InvalidPublicKey)?;
            }
        }
        Ok(Self::checked(scheme, bytes, point))
    }

    /// The scheme this key belongs to.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// A key whose bytes are valid for `scheme` (decoded and checked, or
    /// generated here), with what every encapsulation to it needs computed
    /// once: the Edwards form of its X25519 part and its unpacked ML-KEM key.
    fn checked(scheme: Scheme, bytes: &[u8], point: RistrettoPoint) -> Self {
        let mut key = Self { scheme, bytes: [0u8; MAX_PUBLIC_KEY_LEN], point, x25519: None, ml_kem: None };
        key.bytes[..bytes.len()].copy_from_slice(bytes);
        if matches!(scheme, Scheme::X25519Kem | Scheme::XWing) {
            key.x25519 = kem::x25519_edwards(&key.x25519_bytes());
        }
        if matches!(scheme, Scheme::MlKem768 | Scheme::XWing) {
            let ml_kem = libcrux_ml_kem::mlkem768::MlKem768PublicKey::try_from(&bytes[..kem::MLKEM768_PUBLIC_KEY_LEN]);
            key.ml_kem = ml_kem.ok().map(|k| Arc::new(kem::MlKemPublic::new(&k)));
        }
        key
    }

    /// The X25519 part: the whole key of [`Scheme::X25519Kem`], the last 32
    /// bytes of an X-Wing key.
    fn x25519_bytes(&self) -> [u8; 32] {
        let len = self.scheme.public_key_len();
        let mut u = [0u8; 32];
        u.copy_from_slice(&self.bytes[len - 32..len]);
        u
    }

    /// The encoding ([`Scheme::public_key_len`] bytes).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.scheme.public_key_len()]
    }

    /// The 32-byte encoding of a [`Scheme::Ristretto255`] or
    /// [`Scheme::X25519Kem`] key; `None` for the larger post-quantum keys.
    pub fn to_bytes(&self) -> Option<[u8; 32]> {
        let mut out = [0u8; 32];
        (self.scheme.public_key_len() == 32).then(|| {
            out.copy_from_slice(&self.bytes[..32]);
            out
        })
    }

    pub(crate) fn point(&self) -> &RistrettoPoint {
        &self.point
    }
}

/// A node's Sphinx secret key for one key epoch, of one [`Scheme`].
/// Zeroized on drop. Every scheme's key is stored as 32 bytes
/// ([`SecretKey::to_bytes`]): the ristretto255 scalar, or the seed the KEM
/// key is expanded from (kept expanded in memory, so decapsulation does no
/// key generation).
#[derive(Clone)]
pub struct SecretKey(Secret);

#[derive(Clone)]
enum Secret {
    Ristretto255(Scalar),
    X25519Kem { scalar: Zeroizing<[u8; 32]>, public: Box<PublicKey> },
    MlKem768 { seed: Zeroizing<[u8; 32]>, key: kem::MlKemSecret, public: Box<PublicKey> },
    XWing { seed: Zeroizing<[u8; 32]>, key: Box<kem::XWingSecret>, public: Box<PublicKey> },
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        if let Secret::Ristretto255(scalar) = &mut self.0 {
            scalar.zeroize();
        }
        // The other variants zeroize their own fields on drop.
    }
}

impl ZeroizeOnDrop for SecretKey {}

impl core::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SecretKey({}, ..)", self.scheme())
    }
}

impl SecretKey {
    /// A fresh uniformly random [`Scheme::Ristretto255`] key.
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        Self(Secret::Ristretto255(random_scalar(rng)))
    }

    /// A fresh key of `scheme`.
    pub fn generate_for<R: RngCore + CryptoRng>(scheme: Scheme, rng: &mut R) -> Self {
        if scheme == Scheme::Ristretto255 {
            return Self::generate(rng);
        }
        // Every seed is a KEM key: the loop ends at its first turn.
        loop {
            let mut seed = Zeroizing::new([0u8; 32]);
            rng.fill_bytes(&mut seed[..]);
            if let Some(key) = Self::from_seed(scheme, &seed) {
                return key;
            }
        }
    }

    /// Restores a [`Scheme::Ristretto255`] key from its 32-byte canonical
    /// scalar encoding.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        Option::<Scalar>::from(Scalar::from_canonical_bytes(*bytes))
            .filter(|s| *s != Scalar::ZERO)
            .map(|scalar| Self(Secret::Ristretto255(scalar)))
    }

    /// Restores a key of `scheme` from its 32 bytes ([`SecretKey::to_bytes`]).
    /// `None` only for a ristretto255 scalar that is not canonical or zero;
    /// every 32-byte string is a KEM seed.
    pub fn from_seed(scheme: Scheme, seed: &[u8; 32]) -> Option<Self> {
        let seed = Zeroizing::new(*seed);
        let secret = match scheme {
            Scheme::Ristretto255 => return Self::from_bytes(&seed),
            Scheme::X25519Kem => {
                let public = Box::new(PublicKey::checked(scheme, &kem::x25519_base(&seed), RistrettoPoint::default()));
                Secret::X25519Kem { scalar: seed, public }
            }
            Scheme::MlKem768 => {
                let mut d_z = Zeroizing::new([0u8; 64]);
                kdf(CTX_MLKEM_SEED, &[&seed[..]], &mut d_z[..]);
                let (key, public) = kem::mlkem_keygen(&d_z);
                let public = Box::new(PublicKey::checked(scheme, public.as_slice(), RistrettoPoint::default()));
                Secret::MlKem768 { seed, key, public }
            }
            Scheme::XWing => {
                let (key, public) = kem::xwing_keygen(&seed);
                let public = Box::new(PublicKey::checked(scheme, &public, RistrettoPoint::default()));
                Secret::XWing { seed, key: Box::new(key), public }
            }
        };
        Some(Self(secret))
    }

    /// The 32 bytes this key is restored from: the scalar encoding or the KEM
    /// seed. Handle with care: this is the secret.
    pub fn to_bytes(&self) -> [u8; 32] {
        match &self.0 {
            Secret::Ristretto255(scalar) => scalar.to_bytes(),
            Secret::X25519Kem { scalar: seed, .. } | Secret::MlKem768 { seed, .. } | Secret::XWing { seed, .. } => {
                **seed
            }
        }
    }

    /// The scheme this key belongs to.
    pub fn scheme(&self) -> Scheme {
        match &self.0 {
            Secret::Ristretto255(_) => Scheme::Ristretto255,
            Secret::X25519Kem { .. } => Scheme::X25519Kem,
            Secret::MlKem768 { .. } => Scheme::MlKem768,
            Secret::XWing { .. } => Scheme::XWing,
        }
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        match &self.0 {
            Secret::Ristretto255(scalar) => {
                let point = RISTRETTO_BASEPOINT_TABLE * scalar;
                PublicKey::checked(Scheme::Ristretto255, &point.compress().to_bytes(), point)
            }
            Secret::X25519Kem { public, .. } | Secret::MlKem768 { public, .. } | Secret::XWing { public, .. } => {
                (**public).clone()
            }
        }
    }

    /// The ristretto255 scalar; `None` for KEM keys.
    pub(crate) fn scalar(&self) -> Option<&Scalar> {
        match &self.0 {
            Secret::Ristretto255(scalar) => Some(scalar),
            _ => None,
        }
    }

    /// Decapsulates a KEM ciphertext `ct` of this key's scheme. `None` for a
    /// ristretto255 key, a ciphertext of the wrong length, or an X25519
    /// ciphertext of low order (all-zero secret).
    pub(crate) fn decapsulate(&self, ct: &[u8]) -> Option<Zeroizing<[u8; 32]>> {
        match &self.0 {
            Secret::Ristretto255(_) => None,
            Secret::X25519Kem { scalar, .. } => {
                let u: [u8; 32] = ct.try_into().ok()?;
                let shared = Zeroizing::new(kem::x25519(scalar, &u));
                contributory(shared)
            }
            Secret::MlKem768 { key, .. } => Some(kem::mlkem_decapsulate(key, ct.try_into().ok()?)),
            Secret::XWing { key, .. } => Some(kem::xwing_decapsulate(key, ct.try_into().ok()?)),
        }
    }
}

/// Context of the ML-KEM-768 seed expansion: `d ‖ z` = 64 bytes of
/// `BLAKE3-derive_key(CTX, seed)`.
const CTX_MLKEM_SEED: &str = "NOX sphinx v1 ml-kem-768 key seed";

/// Refuses the all-zero X25519 output of a low-order point (RFC 7748 §6.1).
fn contributory(shared: Zeroizing<[u8; 32]>) -> Option<Zeroizing<[u8; 32]>> {
    let zero: bool = shared.ct_eq(&[0u8; 32]).into();
    (!zero).then_some(shared)
}

/// Encapsulates to `public` with `randomness`; returns the ciphertext
/// (ε-field bytes) and the shared secret. `None` for a ristretto255 key or
/// a low-order X25519 key.
pub(crate) fn encapsulate(
    public: &PublicKey,
    randomness: &[u8; kem::ENCAPSULATION_RANDOMNESS_LEN],
) -> Option<(Vec<u8>, Zeroizing<[u8; 32]>)> {
    match public.scheme {
        Scheme::Ristretto255 => None,
        Scheme::X25519Kem => {
            let mut ephemeral = Zeroizing::new([0u8; 32]);
            ephemeral.copy_from_slice(&randomness[..32]);
            let (ct, shared) = kem::x25519_encapsulate(&public.x25519_bytes(), public.x25519.as_ref(), &ephemeral);
            Some((ct.to_vec(), contributory(shared)?))
        }
        Scheme::MlKem768 => {
            let mut m = Zeroizing::new([0u8; 32]);
            m.copy_from_slice(&randomness[..32]);
            let (ct, shared) = public.ml_kem.as_ref()?.encapsulate(&m);
            Some((ct.to_vec(), shared))
        }
        Scheme::XWing => {
            let ml_kem = public.ml_kem.as_ref()?;
            let (ct, shared) =
                kem::xwing_encapsulate(ml_kem, &public.x25519_bytes(), public.x25519.as_ref(), randomness);
            Some((ct.to_vec(), shared))
        }
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
