//! Static X25519 link keys.

use core::fmt;

use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};
use zeroize::{Zeroize, Zeroizing};

use crate::error::LinkError;

/// A node's static X25519 link public key, as published in the topology.
/// It is the node's identity on links ([`crate::Remote::Node`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkPublicKey(pub [u8; 32]);

impl LinkPublicKey {
    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for LinkPublicKey {
    /// Only a 4-byte prefix: enough to tell keys apart in a debugger, short
    /// enough to discourage logging whole keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.0;
        write!(f, "LinkPublicKey({:02x}{:02x}{:02x}{:02x}…)", p[0], p[1], p[2], p[3])
    }
}

/// A static X25519 link key pair. The secret is zeroized on drop and never
/// printed.
#[derive(Clone)]
pub struct LinkKeypair {
    secret: Zeroizing<[u8; 32]>,
    public: LinkPublicKey,
}

impl LinkKeypair {
    /// A fresh key pair from the operating system's RNG.
    #[cfg(feature = "os-rng")]
    pub fn generate() -> Result<Self, LinkError> {
        let resolver = DefaultResolver;
        let mut rng = resolver.resolve_rng().ok_or_else(|| LinkError::Noise("no RNG".into()))?;
        let mut dh = resolver.resolve_dh(&DHChoice::Curve25519).ok_or_else(|| LinkError::Noise("no X25519".into()))?;
        dh.generate(&mut *rng).map_err(LinkError::from_snow)?;
        let mut secret = Zeroizing::new([0u8; 32]);
        secret.copy_from_slice(dh.privkey());
        let mut public = [0u8; 32];
        public.copy_from_slice(dh.pubkey());
        // Overwrite snow's copy before the box is freed.
        dh.set(&[0u8; 32]);
        Ok(Self { secret, public: LinkPublicKey(public) })
    }

    /// A fresh key pair from `rng` (hosts with no OS RNG): 32 bytes drawn
    /// from it become the X25519 secret.
    pub fn generate_with_rng(rng: &mut dyn rand_core::CryptoRng) -> Result<Self, LinkError> {
        let secret = crate::rng::random_from::<32, _>(rng);
        Self::from_secret_bytes(*secret)
    }

    /// The key pair of a stored 32-byte X25519 secret (clamped by X25519).
    /// The caller's array is zeroized.
    pub fn from_secret_bytes(mut secret: [u8; 32]) -> Result<Self, LinkError> {
        let mut dh =
            DefaultResolver.resolve_dh(&DHChoice::Curve25519).ok_or_else(|| LinkError::Noise("no X25519".into()))?;
        dh.set(&secret);
        let mut public = [0u8; 32];
        public.copy_from_slice(dh.pubkey());
        dh.set(&[0u8; 32]);
        let kp = Self { secret: Zeroizing::new(secret), public: LinkPublicKey(public) };
        secret.zeroize();
        Ok(kp)
    }

    /// The public half.
    pub fn public(&self) -> LinkPublicKey {
        self.public
    }

    /// The secret bytes, for writing to a key file.
    pub fn secret_bytes(&self) -> &[u8; 32] {
        &self.secret
    }
}

impl fmt::Debug for LinkKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkKeypair").field("public", &self.public).field("secret", &"<redacted>").finish()
    }
}
