//! Shared fixtures: a three-node network and its registry.
#![allow(dead_code)]

use core::time::Duration;

use nox_directory::Registry;
use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{
    DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey,
    node_id_of,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

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
    let layers = LayerCount::new(3).unwrap();
    let mut nodes: Vec<Option<Node>> = vec![None, None, None];
    let mut port = 9000;
    while nodes.iter().any(Option::is_none) {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let identity = SigningKey::from_bytes(&seed);
        let layer = layers.assign(&node_id_of(&identity.verifying_key())).index();
        if nodes[layer].is_some() {
            continue;
        }
        rng.fill_bytes(&mut seed);
        let link = LinkPublicKey::from_secret(&seed);
        let e = schedule.epoch_at(t0);
        let keys = vec![key(&mut rng, e), key(&mut rng, e + 1)];
        port += 1;
        nodes[layer] = Some(Node { identity, link, port, keys });
    }
    let nodes: Vec<Node> = nodes.into_iter().flatten().collect();
    let mut builder = DocumentBuilder::new(Geometry::default(), schedule);
    for n in &nodes {
        builder.add_node(n.descriptor());
    }
    let authority = SigningKey::from_bytes(&[9; 32]);
    let initial = builder.sign(&authority, t0).unwrap().document().clone();
    let registry = Registry::from_document(authority, Geometry::default(), &initial, None, 25).unwrap();
    Net { rng, nodes, registry, schedule }
}
