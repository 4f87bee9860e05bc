//! HCTR2 (crates/nox-hctr2) on arbitrary keys, tweaks and messages: the
//! AVX-512 and AVX2 POLYVAL paths (those the CPU has) and the portable one
//! must give the same ciphertext, decryption must invert it, and a message shorter than
//! one block must be refused and left as it was. Input: key (16 bytes),
//! tweak length (1 byte, mod 48), tweak, message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_hctr2::{Backend, Hctr2, TooShort};

fuzz_target!(|data: &[u8]| {
    let Some((key, rest)) = data.split_first_chunk::<16>() else { return };
    let Some((&t, rest)) = rest.split_first() else { return };
    let tweak_len = usize::from(t % 48).min(rest.len());
    let (tweak, message) = rest.split_at(tweak_len);
    let portable = Hctr2::with_backend(key, Backend::Portable).expect("runs everywhere");
    let mut expected = message.to_vec();
    let r = portable.encrypt(tweak, &mut expected);
    if message.len() < nox_hctr2::MIN_LEN {
        assert_eq!(r, Err(TooShort(message.len())));
        assert_eq!(expected, message, "a refused message must be left untouched");
    }
    for backend in [Backend::Avx512, Backend::Avx2] {
        let Some(wide) = Hctr2::with_backend(key, backend) else { continue };
        let mut a = message.to_vec();
        assert_eq!(wide.encrypt(tweak, &mut a), r);
        assert_eq!(a, expected, "{backend:?} and portable POLYVAL disagree");
        if r.is_ok() {
            wide.decrypt(tweak, &mut a).expect("long enough");
            assert_eq!(a, message, "decryption does not invert encryption ({backend:?})");
        }
    }
});
