//! HCTR2 (crates/nox-hctr2) on arbitrary keys, tweaks and messages: the
//! AVX-512 POLYVAL path (where the CPU has it) and the portable one must give
//! the same ciphertext, decryption must invert it, and a message shorter than
//! one block must be refused and left as it was. Input: key (16 bytes),
//! tweak length (1 byte, mod 48), tweak, message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_hctr2::{Hctr2, TooShort};

fuzz_target!(|data: &[u8]| {
    let Some((key, rest)) = data.split_first_chunk::<16>() else { return };
    let Some((&t, rest)) = rest.split_first() else { return };
    let tweak_len = usize::from(t % 48).min(rest.len());
    let (tweak, message) = rest.split_at(tweak_len);
    let (wide, portable) = (Hctr2::new(key), Hctr2::new_portable(key));
    let mut a = message.to_vec();
    let mut b = message.to_vec();
    let ra = wide.encrypt(tweak, &mut a);
    let rb = portable.encrypt(tweak, &mut b);
    assert_eq!(ra, rb);
    assert_eq!(a, b, "wide and portable POLYVAL disagree");
    if message.len() < nox_hctr2::MIN_LEN {
        assert_eq!(ra, Err(TooShort(message.len())));
        assert_eq!(a, message, "a refused message must be left untouched");
        return;
    }
    wide.decrypt(tweak, &mut a).expect("long enough");
    assert_eq!(a, message, "decryption does not invert encryption");
});
