//! Deterministic test networks.
#![allow(dead_code)]

use core::time::Duration;

use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{
    DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey,
    TopologyDocument, VERSION, VerifiedTopology, VerifyConfig,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// Genesis of the test schedule.
pub const GENESIS: u64 = 1_700_000_000;
/// Issue time: 3 s into epoch 5 of the test schedule.
pub const ISSUED: u64 = GENESIS + 5 * 60 + 3;
/// The epoch containing `ISSUED`.
pub const EPOCH: u32 = 5;

/// 60 s epochs, 10 s overlap, one epoch published ahead.
pub fn schedule() -> EpochSchedule {
    EpochSchedule::new(GENESIS, Duration::from_secs(60), Duration::from_secs(10), 1).unwrap()
}

/// The default geometry with a smaller packet (the topology only uses its identifier and hops).
pub fn geometry() -> Geometry {
    Geometry::new(2048, 3).unwrap()
}

pub fn layers() -> LayerCount {
    LayerCount::new(3).unwrap()
}

pub struct TestNode {
    pub identity: SigningKey,
    pub link_secret: [u8; 32],
    /// Sphinx secret keys for epochs EPOCH and EPOCH + 1.
    pub sphinx: Vec<(u32, SecretKey)>,
    pub signed: SignedDescriptor,
}

pub struct Net {
    pub authority: SigningKey,
    pub nodes: Vec<TestNode>,
}

impl Net {
    pub fn descriptors(&self) -> Vec<SignedDescriptor> {
        self.nodes.iter().map(|n| n.signed.clone()).collect()
    }

    pub fn config(&self) -> VerifyConfig {
        VerifyConfig::new(self.authority.verifying_key(), geometry())
    }

    /// The valid document, verified.
    pub fn verified(&self) -> VerifiedTopology {
        let mut b = DocumentBuilder::new(geometry(), schedule());
        for d in self.descriptors() {
            b.add_node(d);
        }
        b.sign(&self.authority, ISSUED).unwrap()
    }

    /// A document over `nodes`, signed by the authority but not verified.
    pub fn document(&self, nodes: Vec<SignedDescriptor>) -> TopologyDocument {
        let mut doc = TopologyDocument {
            version: VERSION,
            geometry: geometry().identifier(),
            schedule: schedule(),
            layers: 3,
            issued_at: ISSUED,
            nodes,
            signature: nox_topology::Signature::from_bytes(&[0; 64]),
        };
        doc.sign(&self.authority);
        doc
    }
}

pub fn key32(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b
}

/// One node with a fresh identity, listening on 127.0.0.1:(9000 + index).
pub fn make_node(rng: &mut ChaCha20Rng, index: u16) -> TestNode {
    let identity = SigningKey::from_bytes(&key32(rng));
    let link_secret = key32(rng);
    let sphinx: Vec<(u32, SecretKey)> = (EPOCH..=EPOCH + 1).map(|e| (e, SecretKey::generate(rng))).collect();
    let keys = sphinx.iter().map(|(e, k)| EpochKey { epoch: *e, key: k.public_key() }).collect();
    let address = format!("127.0.0.1:{}", 9000 + index).parse().unwrap();
    let descriptor = NodeDescriptor::new(
        identity.verifying_key(),
        LinkPublicKey::from_secret(&link_secret),
        address,
        layers(),
        u8::try_from(index % 4).unwrap(),
        keys,
    );
    let signed = descriptor.sign(&identity).unwrap();
    TestNode { identity, link_secret, sphinx, signed }
}

/// A network with exactly `per_layer` nodes in each of the 3 layers (identities are drawn until
/// every layer is full; surplus identities are skipped).
pub fn network(seed: u64, per_layer: usize) -> Net {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let authority = SigningKey::from_bytes(&key32(&mut rng));
    let mut counts = [0usize; 3];
    let mut nodes = Vec::new();
    let mut index = 0u16;
    while counts.iter().any(|&c| c < per_layer) {
        let node = make_node(&mut rng, index);
        index += 1;
        let layer = node.signed.descriptor.layer.index();
        if counts[layer] < per_layer {
            counts[layer] += 1;
            nodes.push(node);
        }
    }
    Net { authority, nodes }
}
