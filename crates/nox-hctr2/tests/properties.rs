//! Properties: each wide POLYVAL (AVX-512, AVX2) agrees with RustCrypto's on
//! every length (so the whole cipher agrees), round trips, and the strong-PRP behaviour the
//! Sphinx body relies on: one flipped ciphertext bit garbles the whole
//! decryption, wherever it is.

use nox_hctr2::{Backend, Hctr2};
use proptest::prelude::*;

/// The Sphinx body length of the default geometry.
const BODY: usize = 32_512;

fn portable(key: &[u8; 16]) -> Hctr2 {
    Hctr2::with_backend(key, Backend::Portable).expect("portable runs everywhere")
}

/// The wide backends this CPU runs.
fn wide(key: &[u8; 16]) -> Vec<Hctr2> {
    [Backend::Avx512, Backend::Avx2].into_iter().filter_map(|b| Hctr2::with_backend(key, b)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn wide_and_portable_polyval_agree(
        key in any::<[u8; 16]>(),
        tweak in proptest::collection::vec(any::<u8>(), 0..40),
        data in proptest::collection::vec(any::<u8>(), 16..1100),
    ) {
        let mut expected = data.clone();
        portable(&key).encrypt(&tweak, &mut expected).expect("long enough");
        for c in wide(&key) {
            let mut a = data.clone();
            c.encrypt(&tweak, &mut a).expect("long enough");
            prop_assert_eq!(&a, &expected);
            c.decrypt(&tweak, &mut a).expect("long enough");
            prop_assert_eq!(&a, &data);
        }
    }
}

#[test]
fn agree_on_every_length_around_the_wide_steps() {
    // Every length up to a few 16-block (256-bit) and 32-block (512-bit)
    // steps of the hashed input, and around the body.
    let key = [9u8; 16];
    let data: Vec<u8> = (0..BODY).map(|i| (i * 31 + 7) as u8).collect();
    let lens = (16..=1100).chain([4096, 4111, 4112, 4113, BODY - 1, BODY, BODY + 1]);
    let wide = wide(&key);
    for len in lens {
        let mut input = data[..len.min(BODY)].to_vec();
        if len > BODY {
            input.push(1);
        }
        let mut expected = input.clone();
        portable(&key).encrypt(b"t", &mut expected).expect("long enough");
        for c in &wide {
            let mut a = input.clone();
            c.encrypt(b"t", &mut a).expect("long enough");
            assert_eq!(a, expected, "length {len}");
        }
    }
}

#[test]
fn the_wide_paths_are_the_ones_tested_where_the_cpu_has_them() {
    // Say which backends the comparisons above ran, so a CI log shows it,
    // and check detection against the CPU's own flags.
    let available: Vec<Backend> = Backend::all().into_iter().filter(|b| b.available()).collect();
    eprintln!("POLYVAL backends on this CPU: {available:?}; Hctr2::new uses {:?}", Backend::detect());
    assert_eq!(Backend::detect(), available[0]);
    #[cfg(target_arch = "x86_64")]
    {
        let vpclmul = std::is_x86_feature_detected!("vpclmulqdq") && std::is_x86_feature_detected!("avx2");
        assert_eq!(Backend::Avx2.available(), vpclmul);
        assert_eq!(
            Backend::Avx512.available(),
            vpclmul && std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw")
        );
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
