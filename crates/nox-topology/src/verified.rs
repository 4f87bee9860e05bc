//! A verified topology and the queries clients and nodes make of it.

use std::collections::HashMap;

use nox_sphinx::{Delay, Geometry, NodeId, PathHop, PublicKey};
use rand_core::CryptoRng;

use crate::descriptor::NodeDescriptor;
use crate::document::TopologyDocument;
use crate::error::PathError;
use crate::layer::{Layer, LayerCount};
use crate::schedule::EpochSchedule;

/// A 32-byte digest of the network parameters and every node's descriptor (addresses and keys),
/// independent of the issue time: equal fingerprints mean the same network view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl core::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// Who handed a packet to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sender {
    /// A client (not a node of the topology).
    Client,
    /// An authenticated node of the topology.
    Node(NodeId),
}

/// One node of a verified topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyNode {
    /// Its node id.
    pub id: NodeId,
    /// Its verified descriptor.
    pub descriptor: NodeDescriptor,
}

/// A topology whose signatures and invariants have been checked. Only
/// [`TopologyDocument::verify`] makes one.
#[derive(Clone, Debug)]
pub struct VerifiedTopology {
    document: TopologyDocument,
    /// The geometry it was verified for (its identifier is the document's).
    geometry: Geometry,
    layers: LayerCount,
    fingerprint: Fingerprint,
    /// Sorted by id.
    nodes: Vec<TopologyNode>,
    index: HashMap<NodeId, usize>,
    /// Indices into `nodes`, per layer, in id order.
    by_layer: Vec<Vec<usize>>,
    /// Nodes of the document left out under [`crate::Trust::Registry`], with the reason.
    rejected: Vec<(NodeId, crate::TopologyError)>,
}

impl VerifiedTopology {
    pub(crate) fn new(
        document: TopologyDocument,
        geometry: Geometry,
        layers: LayerCount,
        fingerprint: Fingerprint,
        rejected: Vec<(NodeId, crate::TopologyError)>,
    ) -> Self {
        let mut nodes: Vec<TopologyNode> =
            document.nodes.iter().map(|n| TopologyNode { id: n.node_id(), descriptor: n.descriptor.clone() }).collect();
        nodes.sort_by_key(|a| a.id);
        let index = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let mut by_layer = vec![Vec::new(); usize::from(layers.get())];
        for (i, n) in nodes.iter().enumerate() {
            if let Some(layer) = by_layer.get_mut(n.descriptor.layer.index()) {
                layer.push(i);
            }
        }
        Self { document, geometry, layers, fingerprint, nodes, index, by_layer, rejected }
    }

    /// The verified document (to store or serve further).
    pub fn document(&self) -> &TopologyDocument {
        &self.document
    }

    /// The Sphinx geometry the document was verified for: every packet on this network has it,
    /// and every node's keys are of its scheme.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The network's epoch schedule.
    pub fn schedule(&self) -> &EpochSchedule {
        &self.document.schedule
    }

    /// Number of layers `L`.
    pub fn layers(&self) -> LayerCount {
        self.layers
    }

    /// Issue time (unix seconds).
    pub fn issued_at(&self) -> u64 {
        self.document.issued_at
    }

    /// The fingerprint (docs/spec/topology.md §4).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The document's nodes that were left out, with the reason (only under
    /// [`crate::Trust::Registry`]; under an authority any bad node refuses the document).
    pub fn rejected(&self) -> &[(NodeId, crate::TopologyError)] {
        &self.rejected
    }

    /// All nodes, sorted by id.
    pub fn nodes(&self) -> &[TopologyNode] {
        &self.nodes
    }

    /// The nodes of `layer` (none if `layer ≥ L`), sorted by id.
    pub fn nodes_in_layer(&self, layer: Layer) -> impl ExactSizeIterator<Item = &TopologyNode> {
        let members: &[usize] = self.by_layer.get(layer.index()).map_or(&[], Vec::as_slice);
        members.iter().map(|&i| &self.nodes[i])
    }

    /// The node with this id.
    pub fn node(&self, id: &NodeId) -> Option<&TopologyNode> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// The node's layer.
    pub fn layer_of(&self, id: &NodeId) -> Option<Layer> {
        self.node(id).map(|n| n.descriptor.layer)
    }

    /// The node's Sphinx public key for `epoch`.
    pub fn sphinx_key(&self, id: &NodeId, epoch: u32) -> Option<PublicKey> {
        self.node(id)?.descriptor.sphinx_key(epoch)
    }

    /// Layer enforcement: may `node` accept a packet handed over by `from`?
    ///
    /// Paths always run layer 0 → 1 → … → L−1, forward paths and SURB return paths alike. So a
    /// layer-0 node accepts from clients (new packets) and from exit-layer nodes (an exit starting
    /// a SURB reply); a layer-k node, k > 0, accepts only from layer k−1. In short: clients reach
    /// layer 0 only, and a node accepts from a node whose layer it cyclically succeeds. Unknown
    /// nodes (either side) are refused.
    pub fn position_allowed(&self, node: &NodeId, from: Sender) -> bool {
        let Some(layer) = self.layer_of(node) else { return false };
        match from {
            Sender::Client => layer == Layer(0),
            Sender::Node(sender) => self.layer_of(&sender).is_some_and(|s| self.layers.successor(s) == layer),
        }
    }

    /// The key epoch a client should build packets for at `now_unix`: the
    /// schedule's [`crate::EpochSchedule::client_epoch`] (which lags the
    /// current epoch by half an overlap, to tolerate clock skew) when every
    /// layer has a node publishing a key for it, else the current epoch (a
    /// network created just after a boundary has no key for the lagging one).
    pub fn client_epoch(&self, now_unix: u64) -> u32 {
        let lagging = self.schedule().client_epoch(now_unix);
        let covered = self
            .layers
            .iter()
            .all(|layer| self.nodes_in_layer(layer).any(|n| n.descriptor.sphinx_key(lagging).is_some()));
        if covered { lagging } else { self.schedule().epoch_at(now_unix) }
    }

    /// A random path for `epoch`: one node per layer, 0 to L−1, each uniform among the layer's
    /// nodes that list a key for `epoch` and for which `avoid(id)` is false. Hops carry the
    /// node's advertised PoW difficulty and `Delay(0)` (the node draws its own delay).
    pub fn random_path<R: CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
        epoch: u32,
        avoid: &dyn Fn(NodeId) -> bool,
    ) -> Result<Vec<nox_sphinx::PathHop>, PathError> {
        let mut candidates: Vec<(NodeId, PublicKey, u8)> = Vec::new();
        let mut path = Vec::with_capacity(usize::from(self.layers.get()));
        for layer in self.layers.iter() {
            candidates.clear();
            for n in self.nodes_in_layer(layer) {
                if let Some(key) = n.descriptor.sphinx_key(epoch).filter(|_| !avoid(n.id)) {
                    candidates.push((n.id, key, n.descriptor.pow_difficulty));
                }
            }
            if candidates.is_empty() {
                return Err(PathError::NoCandidate(layer));
            }
            let (node, public_key, pow_difficulty) = &candidates[uniform_index(rng, candidates.len())];
            path.push(PathHop {
                node: *node,
                public_key: public_key.clone(),
                delay: Delay(0),
                pow_difficulty: *pow_difficulty,
            });
        }
        Ok(path)
    }
}

/// A uniform index in `0..n` (`n > 0`) by rejection sampling: no modulo bias.
fn uniform_index<R: CryptoRng + ?Sized>(rng: &mut R, n: usize) -> usize {
    let n = n as u64;
    // 2^64 mod n: values at or above 2^64 − r would bias the reduction.
    let r = (u64::MAX % n + 1) % n;
    loop {
        let x = rng.next_u64();
        if r == 0 || x < 0u64.wrapping_sub(r) {
            return (x % n) as usize;
        }
    }
}
