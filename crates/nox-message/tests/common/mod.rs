//! Shared helpers: deterministic nodes, SURBs and sample messages.
#![allow(dead_code)]

use nox_message::{HttpRequestMsg, HttpResponseMsg, Request, RequestBody};
use nox_sphinx::{BuildOptions, Geometry, NodeId, PathHop, Surb, SurbRecovery, build_surb};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub use nox_test_support::sphinx::TestNode;

pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

pub fn nodes(count: usize, rng: &mut ChaCha20Rng) -> Vec<TestNode> {
    nox_test_support::sphinx::nodes(nox_sphinx::Scheme::Ristretto255, count, rng)
}

/// The path through `nodes`, hop `i` with delay 10 + i (the committed vectors' paths).
pub fn path(nodes: &[TestNode]) -> Vec<PathHop> {
    nox_test_support::sphinx::path(nodes, 10)
}

pub const CLIENT: NodeId = NodeId([0xC1; 32]);

/// `count` real SURBs for a return path through `nodes`.
pub fn surbs(
    geometry: &Geometry,
    nodes: &[TestNode],
    count: usize,
    rng: &mut ChaCha20Rng,
) -> (Vec<Surb>, Vec<SurbRecovery>) {
    (0..count).map(|_| build_surb(geometry, &BuildOptions::new(1), &path(nodes), CLIENT, rng).unwrap()).unzip()
}

/// A syntactically valid SURB for `geometry` without any crypto: the
/// geometry tag, then a byte pattern. `Surb::from_bytes` only checks the
/// length and the tag.
pub fn fake_surb(geometry: &Geometry, seed: u8) -> Surb {
    let len = Surb::encoded_len(geometry);
    let mut bytes: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)).collect();
    bytes[64..68].copy_from_slice(&geometry.tag());
    Surb::from_bytes(geometry, &bytes).unwrap()
}

pub fn http_request() -> HttpRequestMsg {
    HttpRequestMsg {
        method: "POST".into(),
        url: "https://example.org/api?q=1".into(),
        headers: vec![("Content-Type".into(), "application/json".into()), ("X-Empty".into(), String::new())],
        body: br#"{"a":1}"#.to_vec(),
    }
}

pub fn http_response() -> HttpResponseMsg {
    HttpResponseMsg { status: 200, headers: vec![("content-length".into(), "5".into())], body: b"hello".to_vec() }
}

pub fn request(geometry: &Geometry, n_surbs: usize, body: RequestBody) -> Request {
    Request { surbs: (0..n_surbs).map(|i| fake_surb(geometry, i as u8)).collect(), body }
}

/// Requests are compared by their encoding (a SURB has no `PartialEq`).
pub fn same(a: &Request, b: &Request) -> bool {
    a.encode() == b.encode()
}
