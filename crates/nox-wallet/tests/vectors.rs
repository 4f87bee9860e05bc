//! Known-answer vectors for docs/spec/notes.md (`docs/spec/vectors/notes.json`), version 2:
//! keys, the `nox1…` address and `noxview1…` viewing key, notes, and note ciphertexts with their
//! intermediate values; strings that must be refused, with the error's kind; ciphertexts and what
//! a wallet makes of them. The intermediate values are computed here from the spec text (X25519,
//! BLAKE3, ChaCha20-Poly1305 called directly) and must equal what the library produces. The
//! file is regenerated with `NOX_REGENERATE_VECTORS=1 cargo test -p nox-wallet --test vectors`
//! and is otherwise checked byte for byte; `scripts/spec-check` recomputes it in Python.

use ark_bn254::Fr;
use bech32::{Bech32m, Hrp};
use chacha20poly1305::{
    ChaCha20Poly1305, KeyInit,
    aead::{Aead, Payload},
};
use curve25519_dalek::montgomery::MontgomeryPoint;
use nox_wallet::{
    PaymentAddress, Seed, ViewingKey,
    memo::{self, Opened},
};
use nox_zk::{field::to_be32, note, poseidon};
use rand_chacha_03::rand_core::{CryptoRng, Error, RngCore};
use serde_json::{Value, json};

fn w(x: &Fr) -> String {
    hex::encode(to_be32(x))
}

/// An RNG that hands out fixed bytes: the ephemeral secret of a vector.
struct Fixed([u8; 32]);

impl RngCore for Fixed {
    fn next_u32(&mut self) -> u32 {
        unreachable!("seal draws bytes only")
    }
    fn next_u64(&mut self) -> u64 {
        unreachable!("seal draws bytes only")
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        dest.copy_from_slice(&self.0[..dest.len()]);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for Fixed {}

/// One ciphertext vector: the spec's steps written out, checked against `memo::seal`.
fn ciphertext(name: &str, to: &PaymentAddress, asset: Fr, value: u128, blinding: Fr, e: [u8; 32]) -> Value {
    let eph = MontgomeryPoint::mul_base_clamped(e).to_bytes();
    let shared = MontgomeryPoint(*to.viewing_public()).mul_clamped(e).to_bytes();
    let mut okm = [0u8; 40];
    let mut kdf_input = shared.to_vec();
    kdf_input.extend_from_slice(&eph);
    kdf_input.extend_from_slice(to.viewing_public());
    blake3::Hasher::new_derive_key("NOX note v2").update(&kdf_input).finalize_xof().fill(&mut okm);
    let (tag, key) = okm.split_at(8);
    let aad = [to_be32(&asset), to_be32(&to.owner())].concat();
    let plain = [&value.to_be_bytes()[..], &to_be32(&blinding)].concat();
    let key: [u8; 32] = key.try_into().unwrap();
    let sealed =
        ChaCha20Poly1305::new(&key.into()).encrypt(&[0u8; 12].into(), Payload { msg: &plain, aad: &aad }).unwrap();
    let ct = [&eph[..], tag, &sealed].concat();
    assert_eq!(ct, memo::seal(to, &asset, value, &blinding, &mut Fixed(e)), "{name}: the spec and seal agree");
    let inner = poseidon::hash(&[to.owner(), blinding]).unwrap();
    json!({
        "name": name,
        "to": to.to_string(),
        "asset": w(&asset),
        "value": value.to_string(),
        "blinding": w(&blinding),
        "commitment": w(&note::commitment(value, asset, inner).unwrap()),
        "ephemeral_secret": hex::encode(e),
        "ephemeral_public": hex::encode(eph),
        "shared_secret": hex::encode(shared),
        "view_tag": hex::encode(tag),
        "key": hex::encode(key),
        "aad": hex::encode(&aad),
        "ciphertext": hex::encode(&ct),
    })
}

fn opened(o: &Opened) -> Value {
    match o {
        Opened::NotMine => json!({ "result": "not_mine" }),
        Opened::Mine { value, blinding } => {
            json!({ "result": "mine", "value": value.to_string(), "blinding": w(blinding) })
        }
        Opened::Corrupt(_) => json!({ "result": "corrupt" }),
    }
}

#[test]
fn notes_vectors_match_the_committed_file() {
    let seed_bytes = [0x42u8; 32];
    let seed = Seed::from_bytes(seed_bytes);
    let sk = seed.spending_key();
    let owner = sk.owner().unwrap();
    let vk = seed.viewing_key().unwrap();
    let address = seed.address().unwrap();
    let exported = vk.export().unwrap();
    assert_eq!(exported.parse::<ViewingKey>().unwrap().address(), address);
    let other = Seed::from_bytes([0x43; 32]).address().unwrap();

    let eth = Fr::from(0u64);
    let token = nox_zk::field::address(&[0x11; 20]);
    let value: u128 = 1_000_000_000_000_000_000;
    let blinding = Fr::from(0x1234_5678u64);
    let inner = poseidon::hash(&[owner, blinding]).unwrap();
    let commitment = note::commitment(value, eth, inner).unwrap();
    assert_eq!(vk.commitment(value, eth, blinding).unwrap(), commitment);
    let leaf_index = 5u64;
    let nullifier = sk.nullifier(&commitment, leaf_index).unwrap();

    let ciphertexts = vec![
        ciphertext("1 ETH to the wallet", &address, eth, value, blinding, [0x0e; 32]),
        ciphertext("zero-value padding note of a token to the wallet", &address, token, 0, Fr::from(7u64), [0x1f; 32]),
        ciphertext("a note to another wallet", &other, eth, 5, Fr::from(9u64), [0x2a; 32]),
    ];
    let ct = |i: usize| hex::decode(ciphertexts[i]["ciphertext"].as_str().unwrap()).unwrap();
    let flip = |i: usize, byte: usize| {
        let mut c = ct(i);
        c[byte] ^= 1;
        c
    };
    let other_commitment = note::commitment(value + 1, eth, inner).unwrap();
    // What the wallet of `seed` makes of ciphertexts, with the asset and commitment published beside them.
    let cases: Vec<(&str, Vec<u8>, Fr, Fr)> = vec![
        ("its own note", ct(0), eth, commitment),
        ("another wallet's note", ct(2), eth, commitment),
        ("its own note, ephemeral key byte 3 flipped", flip(0, 3), eth, commitment),
        ("its own note, view tag byte 35 flipped", flip(0, 35), eth, commitment),
        ("its own note, sealed byte 60 flipped", flip(0, 60), eth, commitment),
        ("its own note, AEAD tag byte 103 flipped", flip(0, 103), eth, commitment),
        ("its own note published under another asset", ct(0), token, commitment),
        ("its own note published with another commitment (re-targeted)", ct(0), eth, other_commitment),
        ("one byte short", ct(0)[..103].to_vec(), eth, commitment),
    ];
    let scans: Vec<Value> = cases
        .iter()
        .map(|(name, c, asset, cm)| {
            let mut v = json!({ "name": name, "ciphertext": hex::encode(c), "asset": w(asset), "commitment": w(cm) });
            let o = opened(&memo::scan(&vk, c, asset, cm));
            v.as_object_mut().unwrap().extend(o.as_object().unwrap().clone());
            v
        })
        .collect();

    // Strings that must be refused, with the error's kind (notes.md §2.2, checked in that order).
    let a = address.to_string();
    let enc = |hrp: &str, data: &[u8]| bech32::encode_lower::<Bech32m>(Hrp::parse(hrp).unwrap(), data).unwrap();
    let data = |version: u8, first: &[u8], second: &[u8]| [&[version][..], first, second].concat();
    let sub = |i: usize, c: &str| {
        let mut t = a.clone();
        t.replace_range(i..i + 1, c);
        t
    };
    let swapped = {
        let mut b = a.clone().into_bytes();
        let i = (40..b.len() - 1).find(|&i| b[i] != b[i + 1]).unwrap();
        b.swap(i, i + 1);
        String::from_utf8(b).unwrap()
    };
    let mut mixed = a.clone();
    mixed.replace_range(4..5, &a[4..5].to_uppercase());
    let owner_be = to_be32(&owner);
    let vk_pub = *address.viewing_public();
    let bad: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("an Ethereum address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed".into()),
        ("the retired noxpay: form", format!("noxpay:{}{}", hex::encode(owner_be), hex::encode(vk_pub))),
        ("the viewing key", exported.to_string()),
        ("no separator", "nox".into()),
        ("one character substituted (position 50)", sub(50, if &a[50..51] == "q" { "p" } else { "q" })),
        ("two neighbours swapped", swapped),
        ("mixed case", mixed),
        ("a character outside the alphabet", sub(30, "b")),
        ("another prefix", enc("noy", &data(0, &owner_be, &vk_pub))),
        ("64 data bytes", enc("nox", &data(0, &owner_be, &vk_pub)[..64])),
        ("version 1", enc("nox", &data(1, &owner_be, &vk_pub))),
        ("owner not below r", enc("nox", &data(0, &[0xff; 32], &vk_pub))),
        ("small-order viewing key (u = 1)", enc("nox", &data(0, &owner_be, &Fr::from(1u64).then_le()))),
    ];
    let refused: Vec<Value> = bad
        .iter()
        .map(|(name, s)| {
            let err = s.parse::<PaymentAddress>().expect_err(name);
            json!({ "name": name, "input": s, "error": err.kind() })
        })
        .collect();

    let got = json!({
        "description": "docs/spec/notes.md v2 known-answer vectors; words are 32-byte big-endian hex",
        "seed": hex::encode(seed_bytes),
        "spending_key": w(&sk_scalar(&seed_bytes)),
        "owner": w(&owner),
        "viewing_secret": hex::encode(blake3::derive_key("NOX wallet v1 viewing key", &seed_bytes)),
        "viewing_public": hex::encode(vk_pub),
        "payment_address": a,
        "viewing_key": exported.to_string(),
        "note": { "value": value.to_string(), "asset": w(&eth), "blinding": w(&blinding) },
        "inner": w(&inner),
        "commitment": w(&commitment),
        "leaf_index": leaf_index,
        "nullifier": w(&nullifier),
        "ciphertexts": ciphertexts,
        "scans": scans,
        "refused_addresses": refused,
    });
    let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/spec/vectors/notes.json");
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        std::fs::write(path, &text).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(have == text, "docs/spec/vectors/notes.json is stale or the formats changed");
}

/// `sk` from §2, computed here from the text (the library's `SpendingKey` does not show it).
fn sk_scalar(seed: &[u8; 32]) -> Fr {
    use ark_ff::PrimeField;
    let mut wide = [0u8; 64];
    blake3::Hasher::new_derive_key("NOX wallet v1 spending key").update(seed).finalize_xof().fill(&mut wide);
    Fr::from_le_bytes_mod_order(&wide)
}

trait ThenLe {
    fn then_le(&self) -> [u8; 32];
}

impl ThenLe for Fr {
    /// The little-endian 32 bytes (an X25519 u-coordinate is little-endian).
    fn then_le(&self) -> [u8; 32] {
        let mut b = to_be32(self);
        b.reverse();
        b
    }
}
