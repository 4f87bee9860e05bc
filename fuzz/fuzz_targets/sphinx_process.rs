//! Per-hop processing of arbitrary bytes, and of a valid packet with
//! fuzzer-chosen bytes XORed in: errors are fine, panics are not, and a
//! modified header must never pass the MAC.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, SecretKey, build_forward, process_packet};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fuzz_target!(|data: &[u8]| {
    let geometry = Geometry::new(2048, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let key = SecretKey::generate(&mut rng);
    let mut raw = data.to_vec();
    let _ = process_packet(&geometry, &key, &mut raw);

    let hop = PathHop { node: NodeId([1; 32]), public_key: key.public_key(), delay: Delay(0), pow_difficulty: 0 };
    let mut packet = build_forward(&geometry, &BuildOptions::new(0), &[hop], b"fuzz", &mut rng).unwrap();
    let header_changed = data.iter().take(geometry.nonce_range().start).any(|b| *b != 0);
    for (p, d) in packet.iter_mut().zip(data) {
        *p ^= d;
    }
    let result = process_packet(&geometry, &key, &mut packet);
    if header_changed {
        assert!(result.is_err(), "tampered header accepted");
    }
});
