//! Node ids, layers and the deterministic layer assignment (paper eq. (1), over the node id).

use ed25519_dalek::VerifyingKey;
use nox_sphinx::NodeId;

/// BLAKE3 `derive_key` context of the node id.
pub const NODE_ID_CONTEXT: &str = "NOX topology v1 node id";
/// BLAKE3 `derive_key` context of the layer assignment hash.
pub const LAYER_CONTEXT: &str = "NOX topology v1 layer";
/// Largest number of layers (the Sphinx format's maximum hop count).
pub const MAX_LAYERS: u8 = nox_sphinx::MAX_HOPS as u8;

/// The node id: `BLAKE3-DK("NOX topology v1 node id", identity_public_key)`.
///
/// Binding the id to the Ed25519 identity key means the id (and so the layer) cannot change
/// without changing the key that signs the descriptor.
pub fn node_id_of(identity: &VerifyingKey) -> NodeId {
    NodeId(blake3::derive_key(NODE_ID_CONTEXT, identity.as_bytes()))
}

/// A mix layer, `0..L`. Layer 0 is the entry layer, `L − 1` the exit layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Layer(pub u8);

impl Layer {
    /// The layer as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl core::fmt::Display for Layer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "layer {}", self.0)
    }
}

/// The number of layers `L`, `1..=MAX_LAYERS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayerCount(u8);

impl LayerCount {
    /// `None` unless `1 ≤ layers ≤ MAX_LAYERS`.
    pub fn new(layers: u8) -> Option<Self> {
        (1..=MAX_LAYERS).contains(&layers).then_some(Self(layers))
    }

    /// `L`.
    pub fn get(self) -> u8 {
        self.0
    }

    /// All layers in path order, `0..L`.
    pub fn iter(self) -> impl ExactSizeIterator<Item = Layer> {
        (0..self.0).map(Layer)
    }

    /// Whether `layer < L`.
    pub fn contains(self, layer: Layer) -> bool {
        layer.0 < self.0
    }

    /// The exit layer `L − 1`.
    pub fn exit(self) -> Layer {
        Layer(self.0 - 1)
    }

    /// The layer that accepts packets from `layer`: `(layer + 1) mod L`. The exit layer's
    /// successor is the entry layer, where SURB replies start their return path.
    pub fn successor(self, layer: Layer) -> Layer {
        Layer(((u16::from(layer.0) + 1) % u16::from(self.0)) as u8)
    }

    /// The layer of `node`: `u64_le(BLAKE3-DK("NOX topology v1 layer", node_id)[0..8]) mod L`.
    ///
    /// Paper eq. (1) hashes the lowercase address and takes byte 0; this hashes the node id and
    /// reduces 64 bits, so the bias is below 2⁻⁶⁰ instead of up to 1/256 per layer.
    pub fn assign(self, node: &NodeId) -> Layer {
        let hash = blake3::derive_key(LAYER_CONTEXT, &node.0);
        let mut word = [0u8; 8];
        word.copy_from_slice(&hash[..8]);
        Layer((u64::from_le_bytes(word) % u64::from(self.0)) as u8)
    }
}
