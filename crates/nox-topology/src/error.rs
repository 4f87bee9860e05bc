//! Typed errors. All are `Clone + Eq` so callers can count and compare them.

use nox_sphinx::{NodeId, Scheme};

use crate::layer::Layer;

/// An epoch schedule that cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The epoch length must be a positive whole number of seconds.
    #[error("epoch length must be a positive whole number of seconds")]
    EpochLength,
    /// The overlap must be a whole number of seconds shorter than the epoch.
    #[error("overlap must be a whole number of seconds shorter than the epoch")]
    Overlap,
    /// Too many epochs published ahead.
    #[error("publish_ahead {0} exceeds the maximum")]
    PublishAhead(u32),
}

/// Why a topology document (or one of its descriptors) was refused.
///
/// Every variant means "do not use this document". Variants that concern one node carry its id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// The JSON text is malformed or has missing, unknown or mistyped fields.
    #[error("malformed topology JSON: {0}")]
    Json(String),
    /// The document is larger than [`crate::MAX_DOCUMENT_BYTES`].
    #[error("topology document of {0} bytes is too large")]
    TooLarge(usize),
    /// A hex field has the wrong length or is not hex.
    #[error("field `{0}` is not valid hex of the expected length")]
    Hex(&'static str),
    /// A document version this code does not understand.
    #[error("unsupported topology version {0}")]
    UnsupportedVersion(u16),
    /// The schedule parameters are invalid.
    #[error("invalid epoch schedule: {0}")]
    Schedule(#[from] ScheduleError),
    /// The document was built for another Sphinx geometry.
    #[error("document is for another Sphinx geometry")]
    GeometryMismatch,
    /// The document's geometry identifier is none of the geometries this code knows
    /// ([`crate::geometry_for`]): every scheme and blinding at the default packet length, with
    /// as many hops as the document has layers.
    #[error(
        "document is for an unknown Sphinx geometry {} (not ristretto255, x25519-kem, mlkem768 or xwing \
         at the default packet length with {layers} hops)",
        hex::encode(.identifier)
    )]
    UnknownGeometry {
        /// The document's `geometry` field.
        identifier: [u8; 32],
        /// The document's layer count (the hop count tried).
        layers: u8,
    },
    /// A node's Sphinx key is of another scheme than the geometry's.
    #[error("node {node:?} has a {found} key for epoch {epoch}; the network's geometry uses {expected}")]
    KeyScheme {
        /// The node.
        node: NodeId,
        /// The key's epoch.
        epoch: u32,
        /// The key's scheme.
        found: Scheme,
        /// The geometry's scheme.
        expected: Scheme,
    },
    /// The layer count is zero, above the maximum, or differs from the geometry's hop count.
    #[error("layer count {layers} does not match the geometry's {hops} hops (or is out of range)")]
    LayerCount {
        /// Layers in the document.
        layers: u8,
        /// Hops of the configured geometry.
        hops: usize,
    },
    /// Issued more than the allowed age before `now`.
    #[error("document issued at {issued_at} is too old at {now}")]
    Expired {
        /// Issue time (unix seconds).
        issued_at: u64,
        /// Verification time (unix seconds).
        now: u64,
    },
    /// Issued after `now` plus the allowed clock skew.
    #[error("document issued at {issued_at} is in the future at {now}")]
    IssuedInFuture {
        /// Issue time (unix seconds).
        issued_at: u64,
        /// Verification time (unix seconds).
        now: u64,
    },
    /// No nodes, or more than [`crate::MAX_NODES`].
    #[error("document lists {0} nodes (allowed: 1 to MAX_NODES)")]
    NodeCount(usize),
    /// The authority signature does not verify.
    #[error("bad authority signature")]
    BadDocumentSignature,
    /// An identity key is not a valid (non-weak) Ed25519 key.
    #[error("invalid identity key")]
    InvalidIdentityKey,
    /// A link key is not a valid X25519 public key of large order.
    #[error("invalid link key")]
    InvalidLinkKey,
    /// A Sphinx key is not valid for its scheme (a canonical non-identity
    /// ristretto255 point, an ML-KEM key passing the modulus check, …), or
    /// names an unknown scheme.
    #[error("invalid Sphinx public key")]
    InvalidSphinxKey,
    /// A link address is not `ip:port` with a usable IP and a nonzero port.
    #[error("invalid link address {0:?}")]
    InvalidAddress(String),
    /// The JSON `node_id` is not the hash of the identity key.
    #[error("node id does not match the identity key")]
    NodeIdMismatch,
    /// A node's descriptor signature does not verify, or the signing key is not its identity key.
    #[error("bad descriptor signature for node {0:?}")]
    BadDescriptorSignature(NodeId),
    /// A node's Sphinx keys are missing, too many, or not in strictly increasing epoch order.
    #[error("node {0:?} has an invalid list of epoch keys")]
    EpochKeys(NodeId),
    /// A node lists no key for the epoch the document was issued in.
    #[error("node {node:?} has no key for epoch {epoch}")]
    MissingEpochKey {
        /// The node.
        node: NodeId,
        /// The epoch containing `issued_at`.
        epoch: u32,
    },
    /// A node's claimed layer differs from the layer derived from its id.
    #[error("node {node:?} claims {claimed} but is assigned {computed}")]
    WrongLayer {
        /// The node.
        node: NodeId,
        /// Layer in the descriptor.
        claimed: Layer,
        /// Layer from the assignment rule.
        computed: Layer,
    },
    /// Two descriptors share a node id (identity key).
    #[error("duplicate node id {0:?}")]
    DuplicateNodeId(NodeId),
    /// Two descriptors share a link address.
    #[error("duplicate link address (node {0:?})")]
    DuplicateAddress(NodeId),
    /// Two descriptors share a link key.
    #[error("duplicate link key (node {0:?})")]
    DuplicateLinkKey(NodeId),
    /// A Sphinx key appears twice (in one descriptor or across descriptors).
    #[error("duplicate Sphinx key (node {0:?})")]
    DuplicateSphinxKey(NodeId),
    /// A layer has no nodes.
    #[error("{0} has no nodes")]
    EmptyLayer(Layer),
    /// The registry does not vouch for the node (docs/spec/registry.md).
    #[error("node {node:?} is not vouched for by the registry: {reason}")]
    Unvouched {
        /// The node.
        node: NodeId,
        /// What differs.
        reason: crate::Unvouched,
    },
    /// `sign` was called with a key that is not the descriptor's identity key.
    #[error("signing key does not match the descriptor's identity key")]
    SigningKeyMismatch,
}

/// Why no path could be selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// No node of this layer has a key for the epoch and passes the `avoid` filter.
    #[error("no usable node in {0}")]
    NoCandidate(Layer),
}
