//! Decodes arbitrary bytes as a signed Ethereum transaction the way the exit checks
//! `eth_sendRawTransaction` (crates/nox-exit). Must never panic; an accepted transaction
//! followed by any extra byte is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_exit::decode_transaction;

fuzz_target!(|data: &[u8]| {
    if decode_transaction(data, 1).is_ok() {
        let mut longer = data.to_vec();
        longer.push(0);
        assert!(decode_transaction(&longer, 1).is_err(), "trailing bytes accepted");
    }
});
