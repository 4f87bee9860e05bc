//! Signed test topologies: nodes with an identity, a link key, Sphinx keys for some epochs and a
//! signed descriptor, drawn until every layer has its share.

use std::{net::SocketAddr, ops::RangeInclusive};

use nox_sphinx::{Scheme, SecretKey};
use nox_topology::{EpochKey, LayerCount, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey};
use rand_core::{CryptoRng, RngCore};

/// One test node and all its secrets.
pub struct TestNode {
    /// Long-term identity (signs the descriptor).
    pub identity: SigningKey,
    /// Static link secret (X25519).
    pub link_secret: [u8; 32],
    /// Sphinx secret keys, one per epoch of the node's range.
    pub sphinx: Vec<(u32, SecretKey)>,
    /// The descriptor, signed by `identity`.
    pub signed: SignedDescriptor,
}

impl TestNode {
    /// The node's link public key.
    pub fn link_key(&self) -> LinkPublicKey {
        LinkPublicKey::from_secret(&self.link_secret)
    }

    /// The public half of the Sphinx keys, as a descriptor lists them.
    pub fn epoch_keys(&self) -> Vec<EpochKey> {
        self.sphinx.iter().map(|(epoch, key)| EpochKey { epoch: *epoch, key: key.public_key() }).collect()
    }

    /// The Sphinx secret key of `epoch`, if the node has one.
    pub fn sphinx_key(&self, epoch: u32) -> Option<&SecretKey> {
        self.sphinx.iter().find(|(e, _)| *e == epoch).map(|(_, k)| k)
    }

    /// The node's layer among the topology's layers.
    pub fn layer(&self) -> usize {
        self.signed.descriptor.layer.index()
    }
}

/// 32 random bytes.
pub fn key32<R: RngCore>(rng: &mut R) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    bytes
}

/// What every node of a test network shares.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Scheme of the Sphinx keys (the geometry's).
    pub scheme: Scheme,
    /// Epochs a node has Sphinx keys for.
    pub epochs: RangeInclusive<u32>,
    /// The topology's layer count (a node's layer follows from its identity).
    pub layers: LayerCount,
    /// PoW difficulty each node announces.
    pub difficulty: u8,
}

/// A node at `address`: identity, link secret, then one Sphinx key per epoch, drawn from `rng`
/// in that order; the descriptor signed.
pub fn make_node<R: RngCore + CryptoRng>(rng: &mut R, spec: &NodeSpec, address: SocketAddr) -> TestNode {
    let identity = SigningKey::from_bytes(&key32(rng));
    let link_secret = key32(rng);
    let sphinx: Vec<(u32, SecretKey)> =
        spec.epochs.clone().map(|e| (e, SecretKey::generate_for(spec.scheme, rng))).collect();
    let keys = sphinx.iter().map(|(e, k)| EpochKey { epoch: *e, key: k.public_key() }).collect();
    let descriptor = NodeDescriptor::new(
        identity.verifying_key(),
        LinkPublicKey::from_secret(&link_secret),
        address,
        spec.layers,
        spec.difficulty,
        keys,
    );
    let signed = descriptor.sign(&identity).expect("a fresh descriptor signs");
    TestNode { identity, link_secret, sphinx, signed }
}

/// Draws nodes with `draw(i)` (`i` = 0, 1, …) until every one of `layers` layers holds
/// `per_layer` of them; a node whose layer is already full is skipped. Returns them in the
/// order drawn.
pub fn fill_layers(layers: LayerCount, per_layer: usize, mut draw: impl FnMut(u16) -> TestNode) -> Vec<TestNode> {
    let mut counts = vec![0usize; usize::from(layers.get())];
    let mut nodes = Vec::new();
    let mut index = 0u16;
    while counts.iter().any(|&c| c < per_layer) {
        let node = draw(index);
        index = index.checked_add(1).expect("a layer stays empty after 65,536 draws");
        let layer = node.layer();
        if counts[layer] < per_layer {
            counts[layer] += 1;
            nodes.push(node);
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;

    #[test]
    fn every_layer_gets_its_share_and_the_descriptors_verify() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let spec = NodeSpec {
            scheme: Scheme::Ristretto255,
            epochs: 4..=5,
            layers: LayerCount::new(3).unwrap(),
            difficulty: 2,
        };
        let nodes = fill_layers(spec.layers, 2, |i| make_node(&mut rng, &spec, ([127, 0, 0, 1], 9000 + i).into()));
        assert_eq!(nodes.len(), 6);
        for layer in 0..3 {
            assert_eq!(nodes.iter().filter(|n| n.layer() == layer).count(), 2);
        }
        for node in &nodes {
            assert!(node.signed.verify_signature().is_ok());
            assert_eq!(node.signed.descriptor.link_key, node.link_key());
            assert_eq!(node.signed.descriptor.sphinx_keys, node.epoch_keys());
            assert!(node.sphinx_key(5).is_some() && node.sphinx_key(6).is_none());
        }
    }
}
