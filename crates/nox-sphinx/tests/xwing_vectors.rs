//! X-Wing as composed in `kem.rs` against the test vectors of
//! draft-connolly-cfrg-xwing-kem-06 (`docs/spec/vectors/xwing-draft06.json`,
//! copied from the draft's repository): key generation from the seed,
//! encapsulation with the given randomness, and decapsulation.

use nox_sphinx::{PublicKey, Scheme, SecretKey, bench_internals as inner};

fn hex_bytes(value: &serde_json::Value, field: &str) -> Vec<u8> {
    hex::decode(value[field].as_str().expect("hex string")).expect("hex")
}

#[test]
fn xwing_matches_the_draft_vectors() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/spec/vectors/xwing-draft06.json"))
            .expect("vectors");
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&text).expect("json");
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        let seed: [u8; 32] = hex_bytes(vector, "seed").try_into().expect("32-byte seed");
        let eseed: [u8; 64] = hex_bytes(vector, "eseed").try_into().expect("64-byte eseed");
        // The decapsulation key is the 32-byte seed itself.
        assert_eq!(hex_bytes(vector, "sk"), seed);
        let pk = hex_bytes(vector, "pk");
        assert_eq!(inner::xwing_public_key(&seed), pk);

        let secret = SecretKey::from_seed(Scheme::XWing, &seed).expect("every seed is a key");
        assert_eq!(secret.public_key().as_bytes(), &pk[..]);
        let public = PublicKey::decode(Scheme::XWing, &pk).expect("valid key");
        let (ct, ss) = inner::encapsulate(&public, &eseed).expect("encapsulate");
        assert_eq!(ct, hex_bytes(vector, "ct"));
        assert_eq!(ss.to_vec(), hex_bytes(vector, "ss"));
        assert_eq!(inner::decapsulate(&secret, &ct).map(|s| s.to_vec()), Some(hex_bytes(vector, "ss")));

        // A changed ciphertext (either half) gives another secret.
        for at in [0, ct.len() - 1] {
            let mut bad = ct.clone();
            bad[at] ^= 1;
            assert_ne!(inner::decapsulate(&secret, &bad).map(|s| s.to_vec()), Some(hex_bytes(vector, "ss")));
        }
    }
}

#[test]
fn x25519_matches_rfc7748() {
    // RFC 7748 §5.2, first test vector.
    let scalar: [u8; 32] =
        hex::decode("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4").unwrap().try_into().unwrap();
    let u: [u8; 32] =
        hex::decode("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c").unwrap().try_into().unwrap();
    assert_eq!(
        hex::encode(inner::x25519(&scalar, &u)),
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
    );
}
