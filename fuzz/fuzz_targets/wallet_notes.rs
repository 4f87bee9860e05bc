//! Shielded addresses, viewing keys and note ciphertexts (docs/spec/notes.md §2, §4, §5) on
//! arbitrary input. No panic; an address or viewing key that parses re-encodes to the input's
//! lower-case form (one encoding per value); arbitrary bytes never open as a note; and the input
//! XORed into a real note for the wallet gives back exactly that note when the XOR is zero,
//! "not mine" when only the ephemeral key or view tag changed, and "corrupt" otherwise — never
//! another value. Seed corpus: docs/spec/vectors/notes.json's address, viewing key and note.
#![no_main]

use ark_bn254::Fr;
use libfuzzer_sys::fuzz_target;
use nox_wallet::{
    PaymentAddress, Seed, ViewingKey,
    memo::{self, NOTE_LEN, Opened},
};

/// notes.json `ciphertexts[0]`: 10^18 wei of ETH, blinding 0x12345678, to the wallet of seed 42…42.
const NOTE: &str = "5855784cb3c8c796d84ac93e8f4a53dab0bb31e80960042cfa87f03a4293b3086bbe923bddf710a7729692da767fee1a5eb1fda4f8407ba089fd6ac4c1676bf71c5cc85e7feb387d6efc8f8ba1e5e6c2a779f10f0490cb1458a16e86f295e94629171034b8bb2f89";

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match text.parse::<PaymentAddress>() {
            Ok(a) => {
                let s = a.to_string();
                assert_eq!(s, text.trim().to_ascii_lowercase(), "one encoding per address");
                assert_eq!(s.parse::<PaymentAddress>(), Ok(a), "address round trip");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        if let Ok(k) = text.parse::<ViewingKey>() {
            let s = k.export().expect("a parsed viewing key exports");
            assert_eq!(*s, text.trim().to_ascii_lowercase(), "one encoding per viewing key");
            assert_eq!(s.parse::<ViewingKey>().map(|b| b.address()), Ok(k.address()), "viewing key round trip");
        }
    }
    static VK: std::sync::OnceLock<ViewingKey> = std::sync::OnceLock::new();
    let vk = VK.get_or_init(|| Seed::from_bytes([0x42; 32]).viewing_key().expect("viewing key"));
    let eth = Fr::from(0u64);
    // Arbitrary bytes: never a note (forging one means forging the AEAD).
    assert!(!matches!(memo::open(vk, data, &eth), Opened::Mine { .. }) || data == hex_note().as_slice());
    // The input XORed into a real note.
    let mut ct = hex_note();
    for (c, d) in ct.iter_mut().zip(data) {
        *c ^= d;
    }
    let changed = |r: std::ops::Range<usize>| ct[r.clone()] != hex_note()[r];
    let want_value = 1_000_000_000_000_000_000u128;
    match memo::open(vk, &ct, &eth) {
        Opened::Mine { value, blinding } => {
            assert!(!changed(0..NOTE_LEN), "a changed note opened");
            assert_eq!((value, blinding), (want_value, Fr::from(0x1234_5678u64)));
        }
        Opened::NotMine => assert!(changed(0..40), "only a changed ephemeral key or view tag looks foreign"),
        Opened::Corrupt(_) => assert!(!changed(0..40) && changed(40..NOTE_LEN)),
    }
});

fn hex_note() -> Vec<u8> {
    (0..NOTE.len()).step_by(2).map(|i| u8::from_str_radix(&NOTE[i..i + 2], 16).expect("hex")).collect()
}
