//! The wallet's file parsers on arbitrary bytes: the sealed seed and state files, and the pool
//! view's JSON (which rebuilds the tree and checks its root). None may panic; whatever parses
//! must round-trip. Argon2id runs only for headers with small cost parameters (a real file's
//! cost would make the fuzzer crawl, not find bugs). Addresses, viewing keys and note
//! ciphertexts: the `wallet_notes` target. Seed corpus: a sealed seed file and a view.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_wallet::{PoolView, Seed, file};

fuzz_target!(|data: &[u8]| {
    let seed = Seed::from_bytes([7; 32]);
    if let Ok(plain) = file::open_state(&seed, data) {
        let _ = PoolView::from_json(&plain);
    }
    if let Ok(view) = PoolView::from_json(data) {
        let again = view.to_json().expect("a parsed view serialises");
        let back = PoolView::from_json(&again).expect("a serialised view parses");
        assert_eq!(back.root(), view.root(), "view round trip");
    }
    // Seed file: m_cost (KiB) at bytes 8..12, t_cost at 12..16, lanes at 16..20.
    let word = |i: usize| data.get(i..i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    if matches!((word(8), word(12), word(16)), (Some(m), Some(t), Some(l)) if m <= 64 && t <= 2 && l <= 2) {
        let _ = file::open_seed(data, b"passphrase");
    }
});
