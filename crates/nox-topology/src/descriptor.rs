//! Node descriptors: what a node publishes about itself, self-signed by its identity key.

use core::net::SocketAddr;

use curve25519_dalek::montgomery::MontgomeryPoint;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use nox_sphinx::{NodeId, PublicKey};

use crate::encoding::{DESCRIPTOR_CONTEXT, encode_descriptor};
use crate::error::TopologyError;
use crate::layer::{Layer, LayerCount, node_id_of};

/// Most Sphinx keys one descriptor may list.
pub const MAX_EPOCH_KEYS: usize = 16;

/// A node's X25519 static public key for the link layer (Noise). Only keys of large order on
/// the curve (not its twist) are accepted, so a Diffie-Hellman with it is never all-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkPublicKey([u8; 32]);

impl LinkPublicKey {
    /// Validates a 32-byte X25519 public key.
    pub fn from_bytes(bytes: [u8; 32]) -> Result<Self, TopologyError> {
        let point = MontgomeryPoint(bytes).to_edwards(0).ok_or(TopologyError::InvalidLinkKey)?;
        if point.is_small_order() {
            return Err(TopologyError::InvalidLinkKey);
        }
        Ok(Self(bytes))
    }

    /// The public key of an X25519 secret: `X25519(secret, 9)` with the usual clamping.
    pub fn from_secret(secret: &[u8; 32]) -> Self {
        Self(MontgomeryPoint::mul_base_clamped(*secret).to_bytes())
    }

    /// The 32-byte encoding.
    pub fn to_bytes(self) -> [u8; 32] {
        self.0
    }
}

/// A Sphinx public key for one epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochKey {
    /// The key epoch (as named in Sphinx headers).
    pub epoch: u32,
    /// The node's Sphinx public key for that epoch.
    pub key: PublicKey,
}

/// What a node publishes: plain data; [`crate::TopologyDocument::verify`] checks every field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDescriptor {
    /// Ed25519 identity key; the node id is its hash and it signs the descriptor.
    pub identity_key: VerifyingKey,
    /// X25519 static key of the node's link (Noise) endpoint.
    pub link_key: LinkPublicKey,
    /// Where the node listens for links.
    pub address: SocketAddr,
    /// The node's layer; must equal `LayerCount::assign(node_id)`.
    pub layer: Layer,
    /// Proof-of-work difficulty (leading zero bits) the node currently asks of packets.
    pub pow_difficulty: u8,
    /// Sphinx public keys, strictly increasing epochs; must include the issue epoch.
    pub sphinx_keys: Vec<EpochKey>,
    /// Where the node accepts client links over WebSocket (`ws://websocket/`,
    /// docs/spec/link.md §5), for browsers; `None` for a node that offers none. Encoded only
    /// when present, so descriptors without it (and their signatures) are unchanged.
    pub websocket: Option<SocketAddr>,
    /// Whether the WebSocket endpoint speaks TLS (`wss://websocket/`, docs/spec/link.md §5.3):
    /// pages served over `https://` can only open `wss://` sockets. Meaningless without
    /// `websocket`; encoded as the endpoint's tag (`S` instead of `W`), so descriptors with a
    /// plain endpoint (and their signatures) are unchanged.
    pub websocket_tls: bool,
}

impl NodeDescriptor {
    /// A descriptor whose layer is the one assigned to the identity key's node id.
    pub fn new(
        identity_key: VerifyingKey,
        link_key: LinkPublicKey,
        address: SocketAddr,
        layers: LayerCount,
        pow_difficulty: u8,
        sphinx_keys: Vec<EpochKey>,
    ) -> Self {
        let layer = layers.assign(&node_id_of(&identity_key));
        Self {
            identity_key,
            link_key,
            address,
            layer,
            pow_difficulty,
            sphinx_keys,
            websocket: None,
            websocket_tls: false,
        }
    }

    /// The same descriptor advertising a WebSocket client endpoint.
    #[must_use]
    pub fn with_websocket(mut self, websocket: Option<SocketAddr>) -> Self {
        self.websocket = websocket;
        self
    }

    /// The same descriptor saying whether its WebSocket endpoint is `wss://`.
    #[must_use]
    pub fn with_websocket_tls(mut self, tls: bool) -> Self {
        self.websocket_tls = tls;
        self
    }

    /// The WebSocket endpoint as a URL (`ws://ip:port/` or `wss://ip:port/`), if any.
    pub fn websocket_url(&self) -> Option<String> {
        let scheme = if self.websocket_tls { "wss" } else { "ws" };
        self.websocket.map(|w| format!("{scheme}://{w}/"))
    }

    /// `BLAKE3-DK("NOX topology v1 node id", identity_key)`.
    pub fn node_id(&self) -> NodeId {
        node_id_of(&self.identity_key)
    }

    /// The Sphinx key for `epoch`, if listed.
    pub fn sphinx_key(&self, epoch: u32) -> Option<PublicKey> {
        self.sphinx_keys.iter().find(|k| k.epoch == epoch).map(|k| k.key.clone())
    }

    /// The canonical encoding (docs/spec/topology.md §3).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_descriptor(&mut out, self);
        out
    }

    /// The 32-byte message the identity key signs: `BLAKE3-DK(DESCRIPTOR_CONTEXT, encoding)`.
    pub fn signing_message(&self) -> [u8; 32] {
        blake3::derive_key(DESCRIPTOR_CONTEXT, &self.canonical_bytes())
    }

    /// Self-signs the descriptor. `identity` must be the secret of `identity_key`.
    pub fn sign(self, identity: &SigningKey) -> Result<SignedDescriptor, TopologyError> {
        if identity.verifying_key() != self.identity_key {
            return Err(TopologyError::SigningKeyMismatch);
        }
        let signature = identity.sign(&self.signing_message());
        Ok(SignedDescriptor { descriptor: self, signature, operator_statements: Vec::new() })
    }
}

/// A descriptor with its identity key's signature (unverified until checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedDescriptor {
    /// The descriptor.
    pub descriptor: NodeDescriptor,
    /// Ed25519 signature by `descriptor.identity_key` over `descriptor.signing_message()`.
    pub signature: Signature,
    /// The operator's statements naming the node's Sphinx key per epoch (docs/spec/registry.md
    /// §5): outside the identity signature and the canonical encoding, because each one
    /// authenticates itself against the operator the registry lists. Required under
    /// [`crate::Trust::Registry`] when the membership checks statements; two statements for one
    /// epoch naming different keys are slashing evidence.
    pub operator_statements: Vec<OperatorStatement>,
}

/// An operator's EIP-712 `EpochKeys(operator, epoch, keccak256(sphinx_key))` signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorStatement {
    /// The key epoch.
    pub epoch: u32,
    /// 65-byte secp256k1 signature `r ‖ s ‖ v`.
    pub signature: [u8; 65],
}

impl SignedDescriptor {
    /// The statement for `epoch`, if any.
    pub fn operator_statement(&self, epoch: u32) -> Option<&OperatorStatement> {
        self.operator_statements.iter().find(|s| s.epoch == epoch)
    }
}

impl SignedDescriptor {
    /// The node id.
    pub fn node_id(&self) -> NodeId {
        self.descriptor.node_id()
    }

    /// Checks the self-signature (strict Ed25519: no weak keys, no malleable signatures).
    pub fn verify_signature(&self) -> Result<(), TopologyError> {
        self.descriptor
            .identity_key
            .verify_strict(&self.descriptor.signing_message(), &self.signature)
            .map_err(|_| TopologyError::BadDescriptorSignature(self.node_id()))
    }
}

/// Checks that an address can be bound by the canonical encoding and dialled: nonzero port,
/// specified, not multicast, no IPv4-mapped IPv6 (one endpoint, one encoding), no IPv6 flow
/// label or scope id (they are not encoded, so they must not be set).
pub fn check_address(address: &SocketAddr) -> Result<(), TopologyError> {
    let ok = address.port() != 0
        && !address.ip().is_unspecified()
        && !address.ip().is_multicast()
        && match address {
            SocketAddr::V4(a) => !a.ip().is_broadcast(),
            SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_none() && a.flowinfo() == 0 && a.scope_id() == 0,
        };
    if ok { Ok(()) } else { Err(TopologyError::InvalidAddress(address.to_string())) }
}
