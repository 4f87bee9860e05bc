//! Deterministic test networks.
#![allow(dead_code)]

use core::time::Duration;

use nox_sphinx::{Geometry, Scheme};
use nox_test_support::topology::{NodeSpec, fill_layers};
use nox_topology::{
    DocumentBuilder, EpochSchedule, LayerCount, SignedDescriptor, SigningKey, TopologyDocument, VERSION,
    VerifiedTopology, VerifyConfig,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

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

pub use nox_test_support::topology::{TestNode, key32};

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

/// One node with a fresh identity, listening on 127.0.0.1:(9000 + index), PoW difficulty
/// `index % 4`, Sphinx keys for EPOCH and EPOCH + 1.
pub fn make_node(rng: &mut ChaCha20Rng, index: u16) -> TestNode {
    let spec = NodeSpec {
        scheme: Scheme::Ristretto255,
        epochs: EPOCH..=EPOCH + 1,
        layers: layers(),
        difficulty: (index % 4) as u8,
    };
    nox_test_support::topology::make_node(rng, &spec, ([127, 0, 0, 1], 9000 + index).into())
}

/// A network with exactly `per_layer` nodes in each of the 3 layers (identities are drawn until
/// every layer is full; surplus identities are skipped).
pub fn network(seed: u64, per_layer: usize) -> Net {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let authority = SigningKey::from_bytes(&key32(&mut rng));
    let nodes = fill_layers(layers(), per_layer, |index| make_node(&mut rng, index));
    Net { authority, nodes }
}
