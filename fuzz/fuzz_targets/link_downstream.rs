//! Downstream frames (node → client, `docs/spec/link.md` §2.4): arbitrary
//! records must parse or be refused, never panic; a parsed reply's body is
//! exactly the bytes after the header region, and re-encoding a parsed frame
//! gives back the record (one encoding per frame).
//!
//! cargo +nightly fuzz run link_downstream
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_link::{Downstream, encode_difficulty, encode_reply_in_place, parse_downstream};

fuzz_target!(|data: &[u8]| {
    let Some((&h, record)) = data.split_first() else { return };
    let header_len = usize::from(h);
    match parse_downstream(record, header_len) {
        Ok(Downstream::Reply { surb_id, body }) => {
            assert_eq!(body.len(), record.len() - header_len);
            let mut again = record.to_vec();
            encode_reply_in_place(&mut again, header_len, &surb_id).expect("a parsed reply re-encodes");
            assert_eq!(again, record);
        }
        Ok(Downstream::Difficulty(d)) => assert_eq!(encode_difficulty(record.len(), d), record),
        Err(_) => {}
    }
});
