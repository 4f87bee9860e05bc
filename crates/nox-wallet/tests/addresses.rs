//! Payment addresses (`nox1…`) and viewing keys (`noxview1…`), docs/spec/notes.md §2: every typo
//! a person can make in one character, or by swapping two neighbours, is refused, and each kind
//! of wrong string gets the error that says what it is.

use ark_bn254::Fr;
use bech32::{Bech32m, Hrp};
use nox_wallet::{PaymentAddress, Seed, ViewingKey, error::AddressError, memo};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

fn address(n: u8) -> PaymentAddress {
    Seed::from_bytes([n; 32]).address().unwrap()
}

fn parse(s: &str) -> Result<PaymentAddress, AddressError> {
    s.parse()
}

/// The characters a person could type in place of another: bech32's alphabet, the four
/// alphanumerics it leaves out (`1`, `b`, `i`, `o`), and the other letters' upper case.
const TYPED: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l1bioQPZRY";

#[test]
fn an_address_round_trips_in_its_canonical_form() {
    for n in 0..8u8 {
        let a = address(n);
        let s = a.to_string();
        assert!(s.starts_with("nox1") && s.len() == 114, "{s}");
        assert_eq!(s, s.to_lowercase());
        assert_eq!(parse(&s), Ok(a));
        assert_eq!(parse(&format!("  {s}\n")), Ok(a), "surrounding white space is ignored");
    }
}

#[test]
fn every_one_character_substitution_is_refused() {
    let s = address(1).to_string();
    let mut tried = 0;
    for (i, original) in s.char_indices() {
        for c in TYPED.chars().filter(|&c| c != original) {
            let mut t = s.clone();
            t.replace_range(i..i + 1, &c.to_string());
            let err = parse(&t).expect_err(&format!("position {i}: {original:?} → {c:?} accepted"));
            // A substitution by another bech32 character in the data part is exactly what the
            // checksum is for: the message must say "typo".
            if i >= 4 && "qpzry9x8gf2tvdw0s3jn54khce6mua7l".contains(c) {
                assert_eq!(err, AddressError::Checksum, "position {i}: {original:?} → {c:?}");
                assert_eq!(err.to_string(), "typo: the checksum does not match");
            }
            tried += 1;
        }
    }
    assert!(tried > 114 * 30, "{tried}");
}

#[test]
fn every_swap_of_two_neighbours_is_refused() {
    for n in 0..4u8 {
        let s = address(n).to_string().into_bytes();
        for i in 0..s.len() - 1 {
            if s[i] == s[i + 1] {
                continue;
            }
            let mut t = s.clone();
            t.swap(i, i + 1);
            let t = String::from_utf8(t).unwrap();
            assert!(parse(&t).is_err(), "swap at {i} accepted: {t}");
        }
    }
}

#[test]
fn upper_case_is_accepted_mixed_case_is_not() {
    let a = address(2);
    let s = a.to_string();
    assert_eq!(parse(&s.to_uppercase()), Ok(a), "bech32 allows one case, either");
    let mut mixed = s.clone();
    mixed.replace_range(10..11, &s[10..11].to_uppercase());
    assert_ne!(mixed, s);
    assert_eq!(parse(&mixed), Err(AddressError::MixedCase));
}

#[test]
fn an_ethereum_address_is_named_as_such() {
    for eth in [
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "0x0000000000000000000000000000000000000000",
        "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed",
    ] {
        let err = parse(eth).unwrap_err();
        assert_eq!(err, AddressError::EthereumAddress, "{eth}");
        assert!(err.to_string().contains("Ethereum address, not a shielded address"), "{err}");
    }
}

#[test]
fn the_retired_noxpay_form_is_refused_with_its_name() {
    let old = format!("noxpay:{}", "ab".repeat(64));
    let err = parse(&old).unwrap_err();
    assert_eq!(err, AddressError::RetiredForm);
    assert!(err.to_string().contains("old noxpay:"), "{err}");
}

#[test]
fn other_strings_get_the_error_that_says_what_they_are() {
    let seed = Seed::from_bytes([3; 32]);
    let vk = seed.viewing_key().unwrap();
    let exported = vk.export().unwrap();
    assert_eq!(parse(&exported), Err(AddressError::ViewingKeyNotAddress), "a viewing key is not an address");
    let a = seed.address().unwrap().to_string();
    assert!(matches!(a.parse::<ViewingKey>(), Err(AddressError::AddressNotViewingKey)));
    assert_eq!(parse(""), Err(AddressError::Empty));
    assert_eq!(parse("hello"), Err(AddressError::NotBech32));
    assert_eq!(parse("nox"), Err(AddressError::NotBech32));
    assert_eq!(parse("nox1"), Err(AddressError::WrongLength { chars: 4 }));
    assert_eq!(parse(&a[..60]), Err(AddressError::Checksum), "truncated");
    // Another bech32m string (a Bitcoin taproot address).
    let other = "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0";
    assert!(matches!(parse(other), Err(AddressError::WrongPrefix { expected: "nox1" })));
    let encode = |data: &[u8]| bech32::encode_lower::<Bech32m>(Hrp::parse("nox").unwrap(), data).unwrap();
    let mut data = vec![0u8];
    data.extend_from_slice(&nox_zk::field::to_be32(&a.parse::<PaymentAddress>().unwrap().owner()));
    data.extend_from_slice(seed.address().unwrap().viewing_public());
    assert_eq!(parse(&encode(&data)).unwrap().to_string(), a, "the layout is version ‖ owner ‖ VK");
    assert!(matches!(parse(&encode(&data[..64])), Err(AddressError::WrongLength { .. })));
    let mut v1 = data.clone();
    v1[0] = 1;
    assert_eq!(parse(&encode(&v1)), Err(AddressError::UnknownVersion(1)));
    let mut big = data.clone();
    big[1..33].copy_from_slice(&[0xff; 32]);
    assert_eq!(parse(&encode(&big)), Err(AddressError::OwnerOutOfRange));
    let mut bad_char = a.clone();
    bad_char.replace_range(20..21, "b");
    assert_eq!(parse(&bad_char), Err(AddressError::InvalidCharacter('b')));
}

#[test]
fn a_small_order_viewing_key_is_refused() {
    // The X25519 points of order 1, 2, 4 and 8 (u = 0, 1, p − 1, and the order-8 pair), and
    // their non-canonical forms: every shared secret with them is zero.
    let low = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ];
    let owner = address(4).owner();
    for h in low {
        let vk: [u8; 32] = hex::decode(h).unwrap().try_into().unwrap();
        assert_eq!(PaymentAddress::new(owner, vk), Err(AddressError::LowOrderViewingKey), "{h}");
        let mut data = vec![0u8];
        data.extend_from_slice(&nox_zk::field::to_be32(&owner));
        data.extend_from_slice(&vk);
        let s = bech32::encode_lower::<Bech32m>(Hrp::parse("nox").unwrap(), &data).unwrap();
        assert_eq!(parse(&s), Err(AddressError::LowOrderViewingKey), "{h}");
    }
    assert!(PaymentAddress::new(owner, *address(4).viewing_public()).is_ok());
}

#[test]
fn a_viewing_key_exports_imports_and_reads_but_does_not_print_its_secret() {
    let seed = Seed::from_bytes([5; 32]);
    let vk = seed.viewing_key().unwrap();
    let s = vk.export().unwrap();
    assert!(s.starts_with("noxview1") && s.len() == 118, "{}", &s[..8]);
    let back: ViewingKey = s.parse().unwrap();
    assert_eq!(back.address(), seed.address().unwrap());
    assert_eq!(back.owner(), vk.owner());
    assert_eq!(s.to_uppercase().parse::<ViewingKey>().unwrap().address(), vk.address());
    // It opens what was sealed to the address, and recognises the commitment.
    let asset = Fr::from(0u64);
    let blinding = Fr::from(99u64);
    let ct = memo::seal(&seed.address().unwrap(), &asset, 7, &blinding, &mut ChaCha20Rng::from_seed([1; 32]));
    let commitment = vk.commitment(7, asset, blinding).unwrap();
    assert_eq!(memo::scan(&back, &ct, &asset, &commitment), memo::Opened::Mine { value: 7, blinding });
    // Debug shows the public key only.
    let debug = format!("{back:?}");
    let secret_hex = hex::encode(blake3::derive_key("NOX wallet v1 viewing key", &[5; 32]));
    assert!(!debug.contains(&secret_hex) && debug.contains(&hex::encode(vk.public())), "{debug}");
    // One typo in a viewing key is caught too.
    let mut t = s.to_string();
    let c = if &t[50..51] == "q" { "p" } else { "q" };
    t.replace_range(50..51, c);
    assert!(matches!(t.parse::<ViewingKey>(), Err(AddressError::Checksum)));
}
