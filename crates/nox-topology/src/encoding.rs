//! The canonical binary encoding (docs/spec/topology.md §3). Signatures and the fingerprint are
//! computed over these bytes, never over JSON text. Integers are little-endian; every variable
//! part is preceded by its length or count, so the encoding is prefix-free and injective.

use core::net::SocketAddr;

use crate::descriptor::{NodeDescriptor, SignedDescriptor};
use crate::schedule::EpochSchedule;

/// BLAKE3 `derive_key` context of the descriptor signing message.
pub const DESCRIPTOR_CONTEXT: &str = "NOX topology v1 descriptor";
/// BLAKE3 `derive_key` context of the document signing message.
pub const DOCUMENT_CONTEXT: &str = "NOX topology v1 document";
/// BLAKE3 `derive_key` context of the fingerprint.
pub const FINGERPRINT_CONTEXT: &str = "NOX topology v1 fingerprint";

/// Appends a count or length as `u32` LE. Verification bounds nodes (10,000) and keys per node
/// (16) before it hashes anything, so the clamp to `u32::MAX` is never reached by a document
/// that verifies; it only keeps this function total.
fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_address(out: &mut Vec<u8>, address: &SocketAddr) {
    match address {
        SocketAddr::V4(a) => {
            out.push(4);
            out.extend_from_slice(&a.ip().octets());
        }
        SocketAddr::V6(a) => {
            out.push(6);
            out.extend_from_slice(&a.ip().octets());
        }
    }
    out.extend_from_slice(&address.port().to_le_bytes());
}

/// Tag (`W`) of the optional WebSocket endpoint that may end a descriptor.
pub const WEBSOCKET_TAG: u8 = 0x57;

/// Tag (`S`) of the optional WebSocket endpoint when it speaks TLS (`wss://`), in place of
/// [`WEBSOCKET_TAG`].
pub const WEBSOCKET_TLS_TAG: u8 = 0x53;

/// `identity(32) ‖ link(32) ‖ address ‖ layer(1) ‖ pow(1) ‖ n(4) ‖ n × (epoch(4) ‖ key(32))
/// [‖ (0x57 | 0x53) ‖ websocket address]`: the WebSocket endpoint only when present, so a
/// descriptor without one encodes (and is signed) exactly as before it existed; `0x53` marks
/// a `wss://` endpoint, so a plain one encodes as before TLS existed.
pub(crate) fn encode_descriptor(out: &mut Vec<u8>, d: &NodeDescriptor) {
    out.extend_from_slice(d.identity_key.as_bytes());
    out.extend_from_slice(&d.link_key.to_bytes());
    put_address(out, &d.address);
    out.push(d.layer.0);
    out.push(d.pow_difficulty);
    put_len(out, d.sphinx_keys.len());
    for k in &d.sphinx_keys {
        out.extend_from_slice(&k.epoch.to_le_bytes());
        // A KEM key is preceded by its scheme's code; a ristretto255 key is
        // the 32 bytes alone, as in the first release (docs/spec/topology.md).
        if k.key.scheme().is_kem() {
            out.push(k.key.scheme().code());
        }
        out.extend_from_slice(k.key.as_bytes());
    }
    if let Some(websocket) = &d.websocket {
        out.push(if d.websocket_tls { WEBSOCKET_TLS_TAG } else { WEBSOCKET_TAG });
        put_address(out, websocket);
    }
}

/// The network parameters shared by the body and the fingerprint:
/// `version(2) ‖ geometry(32) ‖ genesis(8) ‖ epoch_length(8) ‖ overlap(8) ‖ publish_ahead(4) ‖ layers(1)`.
fn encode_params(out: &mut Vec<u8>, version: u16, geometry: &[u8; 32], schedule: &EpochSchedule, layers: u8) {
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(geometry);
    out.extend_from_slice(&schedule.genesis_unix().to_le_bytes());
    out.extend_from_slice(&schedule.epoch_length().as_secs().to_le_bytes());
    out.extend_from_slice(&schedule.overlap().as_secs().to_le_bytes());
    out.extend_from_slice(&schedule.publish_ahead().to_le_bytes());
    out.push(layers);
}

/// The nodes in canonical order: ascending node id (ties, which verification rejects, keep
/// their input order).
pub(crate) fn sorted(nodes: &[SignedDescriptor]) -> Vec<(nox_sphinx::NodeId, &SignedDescriptor)> {
    let mut v: Vec<_> = nodes.iter().map(|n| (n.node_id(), n)).collect();
    v.sort_by_key(|a| a.0);
    v
}

/// Inputs of the body encoding.
pub(crate) struct BodyFields<'a> {
    pub version: u16,
    pub geometry: &'a [u8; 32],
    pub schedule: &'a EpochSchedule,
    pub layers: u8,
    pub issued_at: u64,
    pub nodes: &'a [SignedDescriptor],
}

/// `params ‖ issued_at(8) ‖ n(4) ‖ n × (len(4) ‖ descriptor ‖ signature(64))`, nodes sorted.
pub(crate) fn encode_body(f: &BodyFields<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + f.nodes.len() * 256);
    encode_params(&mut out, f.version, f.geometry, f.schedule, f.layers);
    out.extend_from_slice(&f.issued_at.to_le_bytes());
    put_len(&mut out, f.nodes.len());
    let mut scratch = Vec::with_capacity(256);
    for (_, node) in sorted(f.nodes) {
        scratch.clear();
        encode_descriptor(&mut scratch, &node.descriptor);
        put_len(&mut out, scratch.len());
        out.extend_from_slice(&scratch);
        out.extend_from_slice(&node.signature.to_bytes());
    }
    out
}

/// `BLAKE3-DK(FINGERPRINT_CONTEXT, params ‖ n(4) ‖ n × (len(4) ‖ descriptor))`, nodes sorted:
/// binds every address and key, but not the issue time or the (re-signable) signatures.
pub(crate) fn fingerprint(f: &BodyFields<'_>) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new_derive_key(FINGERPRINT_CONTEXT);
    let mut out = Vec::with_capacity(256);
    encode_params(&mut out, f.version, f.geometry, f.schedule, f.layers);
    put_len(&mut out, f.nodes.len());
    hasher.update(&out);
    for (_, node) in sorted(f.nodes) {
        out.clear();
        encode_descriptor(&mut out, &node.descriptor);
        hasher.update(&u32::try_from(out.len()).unwrap_or(u32::MAX).to_le_bytes());
        hasher.update(&out);
    }
    *hasher.finalize().as_bytes()
}
