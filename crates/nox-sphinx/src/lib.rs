#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod body;
mod construct;
mod crypto;
mod error;
mod geometry;
mod header;
mod kem;
mod keys;
mod padding;
pub mod pow;
mod process;
mod routing;
mod surb;

pub use construct::{BuildOptions, PathHop, build_forward};
pub use error::SphinxError;
pub use geometry::{
    ALPHA_LEN, Blinding, DEFAULT_HOPS, DEFAULT_PACKET_LEN, Geometry, GeometryError, INTEGRITY_LEN, MAC_LEN, MAX_HOPS,
    MIN_BODY_LEN, POW_NONCE_LEN, PREFIX_LEN, ROUTING_BLOCK_LEN, Scheme,
};
pub use header::{HeaderView, ReplayTag};
pub use kem::{MLKEM768_CIPHERTEXT_LEN, MLKEM768_PUBLIC_KEY_LEN, XWING_CIPHERTEXT_LEN, XWING_PUBLIC_KEY_LEN};
pub use keys::{MAX_PUBLIC_KEY_LEN, NodeId, PublicKey, SecretKey};
pub use process::{MacVerified, Processed, process_packet, verify_header};
pub use routing::{Delay, SurbId};
pub use surb::{Surb, SurbRecovery, build_surb};

/// Primitives exposed for the per-step benchmarks and the known-answer vector
/// generator (`tests/vectors.rs`) only; not a stable API.
#[doc(hidden)]
pub mod bench_internals {
    /// Header MAC over prefix and routing field.
    pub fn header_mac(key: &[u8; 32], prefix: &[u8], routing: &[u8]) -> [u8; 16] {
        crate::crypto::header_mac(key, prefix, routing)
    }

    /// AES-128-CTR keystream XOR.
    pub fn xor_keystream(key: &[u8; 16], data: &mut [u8]) {
        crate::crypto::xor_keystream(key, data)
    }
    pub use curve25519_dalek::{ristretto::RistrettoPoint, scalar::Scalar};

    /// The hop key schedule; returns the MAC key.
    pub fn derive_hop_keys(alpha: &[u8; 32], shared: &[u8; 32]) -> [u8; 32] {
        crate::crypto::HopKeys::derive(alpha, shared).mac
    }

    /// The hop key schedule's outputs as bytes, split as in
    /// docs/spec/sphinx.md §4.1: ρ (16), μ (32), π (16, the body's HCTR2
    /// key) and the blinding factor b as its canonical 32-byte scalar encoding.
    pub fn hop_key_schedule(alpha: &[u8], shared: &[u8; 32]) -> ([u8; 16], [u8; 32], [u8; 16], [u8; 32]) {
        let okm = zeroize::Zeroizing::new(crate::crypto::hop_key_material(alpha, shared));
        let keys = crate::crypto::HopKeys::derive(alpha, shared);
        let mut pi = [0u8; 16];
        pi.copy_from_slice(&okm[48..64]);
        (keys.routing, keys.mac, pi, keys.blinding.to_bytes())
    }

    /// HCTR2 encryption of a body under π (one forward layer).
    pub fn body_encrypt(pi: &[u8; 16], body: &mut [u8]) {
        crate::body::BodyKey::from_bytes(pi).encrypt(body);
    }

    /// HCTR2 decryption of a body under π (what a hop does).
    pub fn body_decrypt(pi: &[u8; 16], body: &mut [u8]) {
        crate::body::BodyKey::from_bytes(pi).decrypt(body);
    }

    /// HCTR2 encryption under the key a SURB's reply key `k_r` gives.
    pub fn reply_body_encrypt(reply_key: &[u8; 32], body: &mut [u8]) {
        crate::body::BodyKey::from_reply_key(reply_key).encrypt(body);
    }

    /// Decode α (ristretto255 decompression).
    pub fn decode_alpha(alpha: &[u8; 32]) -> Option<RistrettoPoint> {
        crate::keys::decode_point(alpha)
    }

    /// Shared secret: multiply by the node key and compress (zeros for a
    /// KEM key).
    pub fn shared_secret(key: &crate::SecretKey, alpha: &RistrettoPoint) -> [u8; 32] {
        key.scalar().map(|scalar| (alpha * scalar).compress().to_bytes()).unwrap_or_default()
    }

    /// KEM decapsulation with a node key (`None` for a ristretto255 key or a
    /// refused ciphertext).
    pub fn decapsulate(key: &crate::SecretKey, ct: &[u8]) -> Option<[u8; 32]> {
        key.decapsulate(ct).map(|shared| *shared)
    }

    /// KEM encapsulation to a public key with 64 bytes of randomness.
    pub fn encapsulate(key: &crate::PublicKey, randomness: &[u8; 64]) -> Option<(Vec<u8>, [u8; 32])> {
        crate::keys::encapsulate(key, randomness).map(|(ct, shared)| (ct, *shared))
    }

    /// X-Wing key generation from its 32-byte seed: the public key (for the
    /// draft's test vectors).
    pub fn xwing_public_key(seed: &[u8; 32]) -> Vec<u8> {
        crate::kem::xwing_keygen(seed).1.to_vec()
    }

    /// X25519 (RFC 7748) as the KEM schemes compute it.
    pub fn x25519(scalar: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
        crate::kem::x25519(scalar, u)
    }

    /// Multiplicative blinding (b·α), then compress.
    pub fn blind_multiplicative(alpha: &RistrettoPoint, blinding: &Scalar) -> [u8; 32] {
        (alpha * blinding).compress().to_bytes()
    }

    /// Additive blinding (α + b·B), then compress.
    pub fn blind_additive(alpha: &RistrettoPoint, blinding: &Scalar) -> [u8; 32] {
        let table = curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
        (alpha + table * blinding).compress().to_bytes()
    }
}
