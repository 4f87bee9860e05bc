//! The proving-key cache refuses what it must not use, by name, without deriving anything.

use nox_wallet_io::keys::{self, KeyError};

#[test]
fn no_cache_is_none_and_a_mismatched_or_undecodable_cache_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(matches!(keys::load_cached(dir.path(), &keys::TRANSFER), Ok(None)));

    // Bytes whose recorded length/hash does not match: refused before decoding.
    std::fs::write(dir.path().join("testnet-transfer.pk"), b"not a key").expect("write");
    std::fs::write(dir.path().join("testnet-transfer.pk.keccak"), "9 0x00\n").expect("write");
    let Err(why) = keys::load_cached(dir.path(), &keys::TRANSFER) else { panic!("a bad cache was used") };
    assert!(why.contains("length or hash does not match"), "{why}");

    // The right record for bytes that are no key: refused by the decoder.
    let digest = format!("9 {}\n", alloy::primitives::keccak256(b"not a key"));
    std::fs::write(dir.path().join("testnet-transfer.pk.keccak"), digest).expect("write");
    let Err(why) = keys::load_cached(dir.path(), &keys::TRANSFER) else { panic!("a bad cache was used") };
    assert!(!why.contains("length or hash"), "{why}");
}

#[test]
fn a_ceremony_key_file_that_is_no_key_is_refused_with_its_length_and_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.key");
    assert!(matches!(keys::ceremony_transfer_key(&missing), Err(KeyError::ReadCeremony { .. })));
    let file = dir.path().join("proving.key");
    std::fs::write(&file, [7u8; 40]).expect("write");
    match keys::ceremony_transfer_key(&file) {
        Err(e @ KeyError::BadCeremony { len: 40, .. }) => {
            let text = e.to_string();
            assert!(text.starts_with("--proving-key "), "{text}");
            assert!(text.contains("(40 bytes, keccak 0x"), "{text}");
        }
        Err(e) => panic!("wrong refusal: {e}"),
        Ok(_) => panic!("40 bytes accepted as a proving key"),
    }
}
