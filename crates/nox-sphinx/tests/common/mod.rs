//! Shared helpers for the integration tests: a deterministic mixnet of nodes.
#![allow(dead_code)]

use nox_sphinx::{
    BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, Scheme, SecretKey, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};

pub mod ingest;

pub const EPOCH: u32 = 7;

pub use nox_test_support::sphinx::TestNode;

pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

pub fn nodes(count: usize, rng: &mut ChaCha20Rng) -> Vec<TestNode> {
    nodes_for(Scheme::Ristretto255, count, rng)
}

pub fn nodes_for(scheme: Scheme, count: usize, rng: &mut ChaCha20Rng) -> Vec<TestNode> {
    nox_test_support::sphinx::nodes(scheme, count, rng)
}

/// The path through `nodes`, hop `i` with delay 1000 + i (the committed vectors' paths).
pub fn path(nodes: &[TestNode]) -> Vec<PathHop> {
    nox_test_support::sphinx::path(nodes, 1000)
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

/// Logs every byte the construction draws, so a second implementation can
/// replay them in the documented order.
pub struct RecordingRng {
    pub inner: ChaCha20Rng,
    pub log: Vec<u8>,
}

impl RngCore for RecordingRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.inner.fill_bytes(dest);
        self.log.extend_from_slice(dest);
    }
}
impl CryptoRng for RecordingRng {}

/// The path the vector files use for `keys`: node ids `BLAKE3([i])`, delays
/// 1000·(i+1) µs, one difficulty.
pub fn vector_path(keys: &[SecretKey], pow_difficulty: u8) -> Vec<PathHop> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId(*blake3::hash(&[i as u8]).as_bytes()),
            public_key: k.public_key(),
            delay: Delay(1000 * (i as u32 + 1)),
            pow_difficulty,
        })
        .collect()
}

/// The vector files' `nodes` array for `keys` on `path` (from [`vector_path`]); `secret` names
/// the field holding the key's bytes (`secret_key` in the classical file, `seed` in the KEM one).
pub fn vector_nodes(keys: &[SecretKey], path: &[PathHop], secret: &str) -> serde_json::Value {
    let hex = |bytes: &[u8]| serde_json::Value::from(hex::encode(bytes));
    keys.iter()
        .zip(path)
        .map(|(k, p)| {
            let mut node = serde_json::Map::new();
            node.insert("id".into(), hex(&p.node.0));
            node.insert(secret.into(), hex(&k.to_bytes()));
            node.insert("public_key".into(), hex(p.public_key.as_bytes()));
            node.insert("delay_us".into(), p.delay.0.into());
            node.insert("pow_difficulty".into(), p.pow_difficulty.into());
            serde_json::Value::Object(node)
        })
        .collect()
}
