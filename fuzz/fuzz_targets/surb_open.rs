//! Opening arbitrary reply bodies with a SURB's recovery keys must fail
//! cleanly (a forgery passes with probability 2^-128) and never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, SecretKey, build_surb};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fuzz_target!(|data: &[u8]| {
    let geometry = Geometry::new(2048, 2).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let path: Vec<PathHop> = (0..2)
        .map(|i| PathHop {
            node: NodeId([i; 32]),
            public_key: SecretKey::generate(&mut rng).public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        })
        .collect();
    let (_surb, recovery) = build_surb(&geometry, &BuildOptions::new(0), &path, NodeId([9; 32]), &mut rng).unwrap();
    let id = recovery.id();
    assert!(recovery.open(&id, data).is_err(), "forged reply accepted");
});
