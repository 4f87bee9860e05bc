//! The topology document on arbitrary bytes: parsing, the JSON round trip, verification as
//! received, and verification after re-signing whatever parsed (so every check past the
//! authority signature is reached), then the queries, must never panic.
//! Seed corpus: the `document` object of docs/spec/vectors/topology.json (vectors-websocket.json,
//! one node advertising a WebSocket endpoint) and of its version before that field (vectors.json).
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_sphinx::Geometry;
use nox_topology::{Sender, SigningKey, TopologyDocument, VerifyConfig};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fuzz_target!(|data: &[u8]| {
    let Ok(mut doc) = TopologyDocument::from_json(data) else { return };
    let json = doc.to_json().expect("a parsed document serialises");
    assert_eq!(TopologyDocument::from_json(json.as_bytes()).as_ref(), Ok(&doc), "JSON round trip");

    let authority = SigningKey::from_bytes(&[7; 32]);
    let hops = usize::from(doc.layers.clamp(1, 16));
    let geometry = Geometry::new(2048, hops).expect("2048 bytes fit 16 hops");
    let config = VerifyConfig::new(authority.verifying_key(), geometry);
    let _ = doc.verify(&config, doc.issued_at);

    doc.geometry = geometry.identifier();
    doc.sign(&authority);
    let Ok(topology) = doc.verify(&config, doc.issued_at) else { return };
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let epoch = topology.schedule().epoch_at(doc.issued_at);
    if let Ok(path) = topology.random_path(&mut rng, epoch, &|_| false) {
        assert_eq!(path.len(), hops);
        assert!(topology.position_allowed(&path[0].node, Sender::Client));
        for pair in path.windows(2) {
            assert!(topology.position_allowed(&pair[1].node, Sender::Node(pair[0].node)));
        }
    }
});
