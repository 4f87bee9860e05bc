//! The node's long-term secrets: the Ed25519 identity key and the X25519 link key.

use core::net::SocketAddr;
use std::path::Path;

use nox_sphinx::NodeId;
use nox_topology::{
    EpochKey, Layer, LayerCount, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey, TopologyError,
    VerifyingKey, node_id_of,
};
use rand_core::CryptoRng;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::error::KeystoreError;
use crate::file::{KeyKind, encode, ensure_private_dir, read_key, write_atomic};

/// File name of the identity key inside the key directory.
pub const IDENTITY_FILE: &str = "identity.key";
/// File name of the link key inside the key directory.
pub const LINK_FILE: &str = "link.key";

/// The node's X25519 static secret for its links (Noise). Zeroized on drop; `Debug` redacts.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct LinkSecret([u8; 32]);

impl LinkSecret {
    /// The 32 secret bytes (as the Noise library wants them).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The matching public key.
    pub fn public_key(&self) -> LinkPublicKey {
        LinkPublicKey::from_secret(&self.0)
    }
}

impl core::fmt::Debug for LinkSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("LinkSecret(..)")
    }
}

/// A node's long-term secrets. Both are zeroized on drop.
#[derive(Clone)]
pub struct NodeIdentity {
    identity: SigningKey,
    link: LinkSecret,
}

impl core::fmt::Debug for NodeIdentity {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NodeIdentity").field("node_id", &self.node_id()).finish_non_exhaustive()
    }
}

/// The public parts `nox keygen` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicIdentity {
    /// `BLAKE3-DK("NOX topology v1 node id", identity_key)`.
    pub node_id: NodeId,
    /// Ed25519 identity public key.
    pub identity_key: VerifyingKey,
    /// X25519 link public key.
    pub link_key: LinkPublicKey,
}

impl PublicIdentity {
    /// The layer this node gets in a network of `layers` layers.
    pub fn layer(&self, layers: LayerCount) -> Layer {
        layers.assign(&self.node_id)
    }
}

impl core::fmt::Display for PublicIdentity {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "node_id      {}", hex::encode(self.node_id.0))?;
        writeln!(f, "identity_key {}", hex::encode(self.identity_key.as_bytes()))?;
        write!(f, "link_key     {}", hex::encode(self.link_key.to_bytes()))
    }
}

fn random32<R: CryptoRng>(rng: &mut R) -> Zeroizing<[u8; 32]> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut bytes[..]);
    bytes
}

impl NodeIdentity {
    /// Fresh secrets from `rng` (in memory only; see [`generate_identity`] to store them).
    pub fn generate<R: CryptoRng>(rng: &mut R) -> Self {
        let identity = SigningKey::from_bytes(&random32(rng));
        Self { identity, link: LinkSecret(*random32(rng)) }
    }

    /// The node id.
    pub fn node_id(&self) -> NodeId {
        node_id_of(&self.identity.verifying_key())
    }

    /// The Ed25519 signing key (for descriptors and link authentication).
    pub fn signing_key(&self) -> &SigningKey {
        &self.identity
    }

    /// The X25519 link secret.
    pub fn link_secret(&self) -> &LinkSecret {
        &self.link
    }

    /// The public parts.
    pub fn public(&self) -> PublicIdentity {
        PublicIdentity {
            node_id: self.node_id(),
            identity_key: self.identity.verifying_key(),
            link_key: self.link.public_key(),
        }
    }

    /// A self-signed descriptor for this node (layer assigned from its id).
    pub fn descriptor(
        &self,
        address: SocketAddr,
        layers: LayerCount,
        pow_difficulty: u8,
        sphinx_keys: Vec<EpochKey>,
    ) -> Result<SignedDescriptor, TopologyError> {
        self.descriptor_with_websocket(address, None, layers, pow_difficulty, sphinx_keys)
    }

    /// [`Self::descriptor`], advertising a WebSocket client endpoint (entries and gateways).
    pub fn descriptor_with_websocket(
        &self,
        address: SocketAddr,
        websocket: Option<SocketAddr>,
        layers: LayerCount,
        pow_difficulty: u8,
        sphinx_keys: Vec<EpochKey>,
    ) -> Result<SignedDescriptor, TopologyError> {
        self.descriptor_with_endpoints(address, websocket, false, layers, pow_difficulty, sphinx_keys)
    }

    /// [`Self::descriptor_with_websocket`], saying whether the endpoint is `wss://` (TLS).
    pub fn descriptor_with_endpoints(
        &self,
        address: SocketAddr,
        websocket: Option<SocketAddr>,
        websocket_tls: bool,
        layers: LayerCount,
        pow_difficulty: u8,
        sphinx_keys: Vec<EpochKey>,
    ) -> Result<SignedDescriptor, TopologyError> {
        let p = self.public();
        NodeDescriptor::new(p.identity_key, p.link_key, address, layers, pow_difficulty, sphinx_keys)
            .with_websocket(websocket)
            .with_websocket_tls(websocket.is_some() && websocket_tls)
            .sign(&self.identity)
    }
}

/// Generates a node identity and stores it in `dir` (created with mode 0700 if needed) as
/// `identity.key` and `link.key` (mode 0600). Refuses if either file exists.
pub fn generate_identity<R: CryptoRng>(dir: &Path, rng: &mut R) -> Result<NodeIdentity, KeystoreError> {
    ensure_private_dir(dir)?;
    for name in [IDENTITY_FILE, LINK_FILE] {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(KeystoreError::AlreadyExists(path));
        }
    }
    let identity = NodeIdentity::generate(rng);
    write_atomic(dir, LINK_FILE, &encode(KeyKind::Link, 0, identity.link.as_bytes())[..])?;
    write_atomic(dir, IDENTITY_FILE, &encode(KeyKind::Identity, 0, identity.identity.as_bytes())[..])?;
    Ok(identity)
}

/// Loads the identity stored in `dir`, checking permissions, format and checksums.
pub fn load_identity(dir: &Path) -> Result<NodeIdentity, KeystoreError> {
    crate::file::check_private(dir, true)?;
    let (_, seed) = read_key(&dir.join(IDENTITY_FILE), KeyKind::Identity)?;
    let (_, link) = read_key(&dir.join(LINK_FILE), KeyKind::Link)?;
    Ok(NodeIdentity { identity: SigningKey::from_bytes(&seed), link: LinkSecret(*link) })
}

/// Loads the identity in `dir`, generating it first if neither key file exists.
pub fn load_or_generate_identity<R: CryptoRng>(dir: &Path, rng: &mut R) -> Result<NodeIdentity, KeystoreError> {
    let absent =
        |name| matches!(std::fs::symlink_metadata(dir.join(name)), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if absent(IDENTITY_FILE) && absent(LINK_FILE) { generate_identity(dir, rng) } else { load_identity(dir) }
}
