//! The KEM geometries (X25519-KEM, ML-KEM-768, X-Wing): the first byte picks
//! the scheme. Public-key parsing and SURB parsing of arbitrary bytes; per-hop
//! processing of arbitrary bytes and of a valid 3-hop packet with the rest
//! XORed in, through every hop, so every KEM ciphertext (the one in ε and the
//! ones carried inside β) meets fuzzer-chosen bytes. Errors are fine, panics
//! are not, and a modified header must never pass the first hop's MAC.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nox_sphinx::{
    BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, PublicKey, Scheme, SecretKey, Surb,
    build_forward, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const SCHEMES: [Scheme; 3] = [Scheme::X25519Kem, Scheme::MlKem768, Scheme::XWing];

/// Three hop keys per scheme, generated once (ML-KEM key generation is the
/// slowest step, and does not depend on the input).
fn keys(index: usize) -> &'static [SecretKey] {
    static KEYS: OnceLock<Vec<Vec<SecretKey>>> = OnceLock::new();
    &KEYS.get_or_init(|| {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        SCHEMES.iter().map(|s| (0..3).map(|_| SecretKey::generate_for(*s, &mut rng)).collect()).collect()
    })[index]
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, data)) = data.split_first() else { return };
    let index = usize::from(selector) % SCHEMES.len();
    let scheme = SCHEMES[index];
    let geometry = Geometry::with_scheme(4096, 3, scheme).unwrap();
    let keys = keys(index);

    let _ = PublicKey::decode(scheme, data);
    let _ = Surb::from_bytes(&geometry, data);
    if let Ok(view) = HeaderView::parse(&geometry, data) {
        let _ = view.replay_tag();
    }
    let mut raw = data.to_vec();
    let _ = process_packet(&geometry, &keys[0], &mut raw);

    let mut rng = ChaCha20Rng::seed_from_u64(u64::from(selector));
    let path: Vec<PathHop> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop { node: NodeId([i as u8; 32]), public_key: k.public_key(), delay: Delay(0), pow_difficulty: 0 })
        .collect();
    let mut packet = build_forward(&geometry, &BuildOptions::new(0), &path, b"fuzz", &mut rng).unwrap();
    let header_changed = data.iter().take(geometry.nonce_range().start).any(|b| *b != 0);
    for (p, d) in packet.iter_mut().zip(data) {
        *p ^= d;
    }
    for (hop, key) in keys.iter().enumerate() {
        match process_packet(&geometry, key, &mut packet) {
            Ok(Processed::Forward { .. }) => {
                assert!(!(hop == 0 && header_changed), "tampered header accepted");
            }
            Ok(_) => {
                assert!(!header_changed, "tampered header delivered");
                break;
            }
            Err(_) => break,
        }
    }
});
