//! Parses arbitrary bytes as a NOX fragment (crates/nox-fec). Must never
//! panic; whatever parses must re-encode to the same bytes and satisfy the
//! bounds the parser promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_fec::{Fragment, MAX_TOTAL_SHARDS, decode_fragments};

fuzz_target!(|data: &[u8]| {
    let Ok(fragment) = Fragment::parse(data) else {
        return;
    };
    let layout = fragment.layout();
    assert_eq!(fragment.to_bytes(), data);
    assert_eq!(data.len(), layout.fragment_len());
    assert!(fragment.shard_index() < layout.total_shards());
    assert!(layout.total_shards() <= MAX_TOTAL_SHARDS);
    assert_eq!(layout.shard_len() % 2, 0);
    // One fragment alone rebuilds the message exactly when d = 1.
    match decode_fragments(&[fragment]) {
        Ok((id, message)) => {
            assert_eq!(layout.data_shards(), 1);
            assert_eq!(id, fragment.message_id());
            assert_eq!(message.len(), layout.message_len());
        }
        Err(_) => assert!(layout.data_shards() > 1),
    }
});
