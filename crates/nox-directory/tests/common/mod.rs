//! Shared fixtures: a three-node network and its registry.
#![allow(dead_code)]

use core::time::Duration;

use nox_directory::Registry;
use nox_sphinx::{Geometry, Scheme, SecretKey};
use nox_test_support::topology::{NodeSpec, fill_layers, make_node};
use nox_topology::{
    DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Epochs of 100 s from genesis 0, 20 s overlap, one epoch ahead.
pub struct Node {
    pub identity: SigningKey,
    pub link: LinkPublicKey,
    pub port: u16,
    pub keys: Vec<EpochKey>,
}

impl Node {
    pub fn descriptor(&self) -> SignedDescriptor {
        self.with(|_| {})
    }

    pub fn with(&self, change: impl FnOnce(&mut NodeDescriptor)) -> SignedDescriptor {
        let mut d = NodeDescriptor::new(
            self.identity.verifying_key(),
            self.link,
            ([127, 0, 0, 1], self.port).into(),
            LayerCount::new(3).unwrap(),
            0,
            self.keys.clone(),
        );
        change(&mut d);
        d.sign(&self.identity).unwrap()
    }
}

pub fn key(rng: &mut ChaCha20Rng, epoch: u32) -> EpochKey {
    EpochKey { epoch, key: SecretKey::generate(rng).public_key() }
}

pub struct Net {
    pub rng: ChaCha20Rng,
    pub nodes: Vec<Node>,
    pub registry: Registry,
    pub schedule: EpochSchedule,
}

/// One node per layer, each with keys for the epoch of `t0` and the next, registered at `t0`.
pub fn net(t0: u64) -> Net {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let schedule = EpochSchedule::new(0, Duration::from_secs(100), Duration::from_secs(20), 1).unwrap();
    let e = schedule.epoch_at(t0);
    let spec = NodeSpec {
        scheme: Scheme::Ristretto255,
        epochs: e..=e + 1,
        layers: LayerCount::new(3).unwrap(),
        difficulty: 0,
    };
    let nodes: Vec<Node> =
        fill_layers(spec.layers, 1, |i| make_node(&mut rng, &spec, ([127, 0, 0, 1], 9001 + i).into()))
            .into_iter()
            .map(|n| Node {
                link: n.link_key(),
                port: n.signed.descriptor.address.port(),
                keys: n.epoch_keys(),
                identity: n.identity,
            })
            .collect();
    let mut builder = DocumentBuilder::new(Geometry::default(), schedule);
    for n in &nodes {
        builder.add_node(n.descriptor());
    }
    let authority = SigningKey::from_bytes(&[9; 32]);
    let initial = builder.sign(&authority, t0).unwrap().document().clone();
    let registry = Registry::from_document(authority, Geometry::default(), &initial, None, 25).unwrap();
    Net { rng, nodes, registry, schedule }
}
