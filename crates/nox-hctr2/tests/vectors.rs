//! The HCTR2 designers' test vectors for AES-128 (HCTR2 and its XCTR mode),
//! from github.com/google/hctr2 (`test_vectors/ours`), committed unchanged in
//! `tests/data/`: 200 HCTR2 vectors (messages of 16 to 255 bytes, tweaks of
//! 0 to 47 bytes) and the XCTR ones, each checked on the dispatched and on
//! every POLYVAL backend this CPU runs.

use nox_hctr2::{Backend, Hctr2};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vector {
    description: String,
    input: Input,
    plaintext_hex: String,
    ciphertext_hex: String,
}

#[derive(Deserialize)]
struct Input {
    key_hex: String,
    #[serde(default)]
    tweak_hex: String,
    #[serde(default)]
    nonce_hex: String,
}

fn load(name: &str) -> Vec<Vector> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("vector file");
    serde_json::from_str(&text).expect("vector JSON")
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

#[test]
fn hctr2_aes128_designers_vectors() {
    let vectors = load("HCTR2_AES128.json");
    assert_eq!(vectors.len(), 200);
    for v in &vectors {
        let key: [u8; 16] = unhex(&v.input.key_hex).try_into().expect("AES-128 key");
        let tweak = unhex(&v.input.tweak_hex);
        let plain = unhex(&v.plaintext_hex);
        let cipher = unhex(&v.ciphertext_hex);
        for c in Backend::all().into_iter().filter_map(|b| Hctr2::with_backend(&key, b)) {
            let mut buf = plain.clone();
            c.encrypt(&tweak, &mut buf).expect("long enough");
            assert_eq!(hex::encode(&buf), v.ciphertext_hex, "encrypt: {}", v.description);
            c.decrypt(&tweak, &mut buf).expect("long enough");
            assert_eq!(buf, plain, "decrypt: {}", v.description);
            let mut back = cipher.clone();
            c.decrypt(&tweak, &mut back).expect("long enough");
            assert_eq!(back, plain, "decrypt of the vector: {}", v.description);
        }
    }
}

#[test]
fn xctr_aes128_designers_vectors() {
    let vectors = load("XCTR_AES128.json");
    assert!(!vectors.is_empty());
    for v in &vectors {
        let key: [u8; 16] = unhex(&v.input.key_hex).try_into().expect("AES-128 key");
        let iv: [u8; 16] = unhex(&v.input.nonce_hex).try_into().expect("16-byte IV");
        let mut buf = unhex(&v.plaintext_hex);
        nox_hctr2::xctr_for_tests(&key, &iv, &mut buf);
        assert_eq!(hex::encode(&buf), v.ciphertext_hex, "{}", v.description);
    }
}
