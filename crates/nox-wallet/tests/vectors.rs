//! Known-answer vectors for docs/spec/notes.md (`docs/spec/vectors/notes.json`). The file is
//! regenerated with `NOX_REGENERATE_VECTORS=1 cargo test -p nox-wallet --test vectors` and is
//! otherwise checked byte for byte.

use ark_bn254::Fr;
use nox_wallet::{Seed, memo, spend::withdraw_domain};
use nox_zk::{field::to_be32, note, poseidon};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};
use serde_json::json;

fn w(x: &Fr) -> String {
    hex::encode(to_be32(x))
}

#[test]
fn notes_vectors_match_the_committed_file() {
    let seed_bytes = [0x42u8; 32];
    let seed = Seed::from_bytes(seed_bytes);
    let sk = seed.spending_key();
    let owner = sk.owner().unwrap();
    let viewing = seed.viewing_secret();
    let address = seed.address().unwrap();

    let asset = Fr::from(0u64);
    let value: u128 = 1_000_000_000_000_000_000;
    let blinding = Fr::from(0x1234_5678u64);
    let inner = poseidon::hash(&[owner, blinding]).unwrap();
    let commitment = note::commitment(value, asset, inner).unwrap();
    let leaf_index = 5u64;
    let nullifier = sk.nullifier(&commitment, leaf_index).unwrap();
    let fee: u128 = 3_000_000_000_000_000;
    let change = note::change_note(&sk, &nullifier, value - fee, asset).unwrap();

    // The memo's ephemeral secret is the first 32 bytes of this RNG stream.
    let mut rng = ChaCha20Rng::from_seed([9; 32]);
    let m = memo::seal(&address.viewing, &asset, value, &blinding, &mut rng).unwrap();
    assert_eq!(memo::open(&viewing, &asset, &m), Some((value, blinding)));
    let mut eph_rng = ChaCha20Rng::from_seed([9; 32]);
    let mut eph_secret = [0u8; 32];
    rand_chacha_03::rand_core::RngCore::fill_bytes(&mut eph_rng, &mut eph_secret);

    let got = json!({
        "description": "docs/spec/notes.md known-answer vectors; words are 32-byte big-endian hex",
        "seed": hex::encode(seed_bytes),
        "owner": w(&owner),
        "viewing_secret": hex::encode(blake3::derive_key("NOX wallet v1 viewing key", &seed_bytes)),
        "viewing_public": hex::encode(address.viewing),
        "payment_address": address.to_string(),
        "note": { "value": value.to_string(), "asset": w(&asset), "blinding": w(&blinding) },
        "inner": w(&inner),
        "commitment": w(&commitment),
        "leaf_index": leaf_index,
        "nullifier": w(&nullifier),
        "fee": fee.to_string(),
        "change": {
            "value": (value - fee).to_string(),
            "blinding": w(&change.blinding),
            "commitment": w(&change.commitment().unwrap()),
        },
        "memo": { "ephemeral_secret": hex::encode(eph_secret), "memo": hex::encode(m) },
        "withdraw_domain": w(&withdraw_domain()),
    });
    let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/spec/vectors/notes.json");
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        std::fs::write(path, &text).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(have == text, "docs/spec/vectors/notes.json is stale or the formats changed");
}
