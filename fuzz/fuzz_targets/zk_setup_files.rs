//! The ceremony's transcript parsers on arbitrary bytes (crates/nox-zk-setup, docs/spec/ceremony.md
//! §1): never panic, refuse what is malformed, and what parses re-encodes to the same bytes.
//! Seed corpus: a size-2 phase-1 transcript, fresh and after one contribution.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_zk_setup::{Phase1, Phase2};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Phase1::from_bytes(data) {
        assert_eq!(p.to_bytes().expect("a parsed transcript encodes"), data, "phase 1 round trip");
    }
    if let Ok(p) = Phase2::from_bytes(data) {
        assert_eq!(p.to_bytes().expect("a parsed transcript encodes"), data, "phase 2 round trip");
    }
});
