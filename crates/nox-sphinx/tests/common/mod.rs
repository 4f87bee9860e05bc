//! Shared helpers for the integration tests: a deterministic mixnet of nodes.
#![allow(dead_code)]

use nox_sphinx::{
    BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, Scheme, SecretKey, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const EPOCH: u32 = 7;

pub struct TestNode {
    pub id: NodeId,
    pub secret: SecretKey,
}

pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

pub fn nodes(count: usize, rng: &mut ChaCha20Rng) -> Vec<TestNode> {
    nodes_for(Scheme::Ristretto255, count, rng)
}

pub fn nodes_for(scheme: Scheme, count: usize, rng: &mut ChaCha20Rng) -> Vec<TestNode> {
    (0..count)
        .map(|i| {
            let mut id = [0u8; 32];
            id[0] = i as u8;
            id[31] = 0xAA;
            TestNode { id: NodeId(id), secret: SecretKey::generate_for(scheme, rng) }
        })
        .collect()
}

pub fn path(nodes: &[TestNode]) -> Vec<PathHop> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| PathHop {
            node: n.id,
            public_key: n.secret.public_key(),
            delay: Delay(1000 + i as u32),
            pow_difficulty: 0,
        })
        .collect()
}

pub fn options() -> BuildOptions {
    BuildOptions::new(EPOCH)
}

/// Runs `packet` through `nodes` in order, checking the routing on the way;
/// returns the final outcome and the headers seen at every hop.
pub fn run_path(
    geometry: &Geometry,
    nodes: &[TestNode],
    packet: &mut [u8],
) -> (Result<Processed, nox_sphinx::SphinxError>, Vec<Vec<u8>>) {
    let mut headers = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        headers.push(packet[..geometry.header_len()].to_vec());
        let view = HeaderView::parse(geometry, packet).expect("geometry");
        assert_eq!(view.key_epoch(), EPOCH);
        let outcome = process_packet(geometry, &node.secret, packet);
        match outcome {
            Ok(Processed::Forward { next_hop, .. }) if i + 1 < nodes.len() => {
                assert_eq!(next_hop, nodes[i + 1].id);
            }
            other => return (other, headers),
        }
    }
    panic!("packet still forwarding after the last node");
}
