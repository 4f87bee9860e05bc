//! The wallet and prover side of the module natively (no proof here: the proofs are made in
//! WebAssembly by js/test/prover.test.mjs and verified natively): the committed note vectors,
//! and the refusals the ABI turns into status codes 1, 2, 3, 10 and 11.

use nox_wasm::{KEY_COMPRESSED, KEY_UNCOMPRESSED, Module, WasmError};

fn vectors() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/spec/vectors/notes.json"))
        .expect("docs/spec/vectors/notes.json");
    serde_json::from_str(&text).expect("notes.json is JSON")
}

fn unhex(v: &serde_json::Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("a hex string")).expect("hex")
}

#[test]
fn seed_gives_the_committed_address_and_notes_open_as_the_vectors_say() {
    let v = vectors();
    let module = Module::new();
    let seed = unhex(&v["seed"]);
    assert_eq!(module.wallet_address(&seed).unwrap(), v["payment_address"].as_str().unwrap());
    for scan in v["scans"].as_array().unwrap() {
        let out = module
            .wallet_open_note(&seed, &unhex(&scan["ciphertext"]), &unhex(&scan["asset"]), &unhex(&scan["commitment"]))
            .unwrap();
        let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["result"], scan["result"], "{}", scan["name"]);
        if scan["result"] == "mine" {
            assert_eq!(out["value"], scan["value"]);
            assert_eq!(out["blinding"], scan["blinding"]);
        }
    }
    assert_eq!(module.wallet_address(&[0; 31]).unwrap_err().code(), 1);
    assert_eq!(module.wallet_open_note(&seed, &[], &[0; 31], &[0; 32]).unwrap_err().code(), 1);
}

#[test]
fn refusals() {
    let request = br#"{"outputs":[{"to":"nox1qqttjr0fgkk2ww2n60djpvcdssfsuefnh4pg0lr358hmldwx2chshkn3jy8h3fa8wfrgv6ezmnjc82wzx9g0thnpe76lumzqc3suegrztfpclt","value":"5"}],"pool":"4444444444444444444444444444444444444444","chain_id":1,"deadline":4000000000}"#;
    let seed = [0x42; 32];
    // Randomness is needed to prepare (blindings, ciphertext keys).
    let mut module = Module::new();
    assert!(matches!(module.wallet_prepare(&seed, b"", request), Err(WasmError::NotSeeded)));
    assert!(module.seed(&[1; 32]).is_ok());
    // An empty view has nothing to spend: the wallet refuses (10).
    assert_eq!(module.wallet_prepare(&seed, b"", request).unwrap_err().code(), 10);
    // A malformed view, an unknown field, a bad address (1 or 10, never a panic).
    assert_eq!(module.wallet_balances(b"{}").unwrap_err().code(), 10);
    let unknown = String::from_utf8_lossy(request).replace("\"chain_id\"", "\"extra\":1,\"chain_id\"");
    assert_eq!(module.wallet_prepare(&seed, b"", unknown.as_bytes()).unwrap_err().code(), 1);
    let bad_to = String::from_utf8_lossy(request).replace("nox1qq", "nox1qz");
    assert_eq!(module.wallet_prepare(&seed, b"", bad_to.as_bytes()).unwrap_err().code(), 1);
    // Keys that are not transfer proving keys (11), an unknown format (1).
    assert_eq!(module.prover_load(&[], KEY_COMPRESSED).unwrap_err().code(), 11);
    assert_eq!(module.prover_load(&[0; 1000], KEY_UNCOMPRESSED).unwrap_err().code(), 11);
    assert_eq!(module.prover_load(&[0; 1000], 7).unwrap_err().code(), 1);
    // Unknown handles (3); wrong kinds (4) are in js/test/prover.test.mjs (they need a
    // prepared transaction, so a funded view).
    assert!(matches!(module.transfer_prove(1, 2), Err(WasmError::UnknownHandle(1))));
    assert!(matches!(module.prover_key_bytes(9), Err(WasmError::UnknownHandle(9))));
    // The split prover's phases (issue 31): unknown handles (3) before any decoding; the rest of
    // its refusals (index ≥ n, lengths, missing parts) are in js/test/prover.test.mjs.
    assert!(matches!(module.split_prepare(2), Err(WasmError::UnknownHandle(2))));
    assert!(matches!(module.split_part(1, &[], 0, 1), Err(WasmError::UnknownHandle(1))));
    assert!(matches!(module.split_finish(1, &[], &[]), Err(WasmError::UnknownHandle(1))));
    let empty = module.wallet_balances(b"").unwrap();
    let empty: serde_json::Value = serde_json::from_slice(&empty).unwrap();
    assert_eq!(empty["assets"], serde_json::json!([]));
}
