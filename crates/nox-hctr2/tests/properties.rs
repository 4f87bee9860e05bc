//! Properties: the AVX-512 POLYVAL agrees with RustCrypto's on every length
//! (so the whole cipher agrees), round trips, and the strong-PRP behaviour the
//! Sphinx body relies on: one flipped ciphertext bit garbles the whole
//! decryption, wherever it is.

use nox_hctr2::Hctr2;
use proptest::prelude::*;

/// The Sphinx body length of the default geometry.
const BODY: usize = 32_512;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn wide_and_portable_polyval_agree(
        key in any::<[u8; 16]>(),
        tweak in proptest::collection::vec(any::<u8>(), 0..40),
        data in proptest::collection::vec(any::<u8>(), 16..1100),
    ) {
        let mut a = data.clone();
        let mut b = data.clone();
        Hctr2::new(&key).encrypt(&tweak, &mut a).expect("long enough");
        Hctr2::new_portable(&key).encrypt(&tweak, &mut b).expect("long enough");
        prop_assert_eq!(&a, &b);
        Hctr2::new(&key).decrypt(&tweak, &mut a).expect("long enough");
        prop_assert_eq!(a, data);
    }
}

#[test]
fn agree_on_every_length_around_the_sixteen_block_step() {
    let key = [9u8; 16];
    let data: Vec<u8> = (0..BODY).map(|i| (i * 31 + 7) as u8).collect();
    let lens = (16..=600).chain([4096, 4111, 4112, 4113, BODY - 1, BODY, BODY + 1]);
    for len in lens {
        let (mut a, mut b) = (data[..len.min(BODY)].to_vec(), data[..len.min(BODY)].to_vec());
        if len > BODY {
            a.push(1);
            b.push(1);
        }
        Hctr2::new(&key).encrypt(b"t", &mut a).expect("long enough");
        Hctr2::new_portable(&key).encrypt(b"t", &mut b).expect("long enough");
        assert_eq!(a, b, "length {len}");
    }
}

#[test]
fn the_wide_path_is_the_one_tested_where_the_cpu_has_it() {
    // On x86_64 with AVX-512 the comparisons above are wide against portable;
    // say which ran so a CI log shows it.
    eprintln!("AVX-512 VPCLMULQDQ POLYVAL in use: {}", nox_hctr2::wide_polyval());
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("vpclmulqdq")
    {
        assert!(nox_hctr2::wide_polyval());
    }
}

#[test]
fn a_flipped_bit_anywhere_garbles_the_whole_body() {
    let c = Hctr2::new(&[3u8; 16]);
    let plain: Vec<u8> = (0..BODY).map(|i| i as u8).collect();
    let mut ct = plain.clone();
    c.encrypt(b"", &mut ct).expect("long enough");
    for pos in [0, 15, 16, 17, 4000, BODY / 2, BODY - 1] {
        let mut tampered = ct.clone();
        tampered[pos] ^= 0x10;
        c.decrypt(b"", &mut tampered).expect("long enough");
        let same = tampered.iter().zip(&plain).filter(|(a, b)| a == b).count();
        // A random byte equals a fixed one with probability 1/256: ~127 of
        // 32,512 bytes; 400 is > 20 standard deviations above that.
        assert!(same < 400, "bit flip at {pos}: {same} bytes survived");
        assert_ne!(&tampered[..16], &plain[..16], "bit flip at {pos}: first block survived");
    }
}

#[test]
fn the_tweak_and_the_key_change_everything() {
    let plain = vec![0u8; 1000];
    let mut a = plain.clone();
    let mut b = plain.clone();
    let mut k = plain.clone();
    Hctr2::new(&[1u8; 16]).encrypt(b"tweak 1", &mut a).expect("long enough");
    Hctr2::new(&[1u8; 16]).encrypt(b"tweak 2", &mut b).expect("long enough");
    Hctr2::new(&[2u8; 16]).encrypt(b"tweak 1", &mut k).expect("long enough");
    let same = |x: &[u8], y: &[u8]| x.iter().zip(y).filter(|(p, q)| p == q).count();
    assert!(same(&a, &b) < 30);
    assert!(same(&a, &k) < 30);
}
