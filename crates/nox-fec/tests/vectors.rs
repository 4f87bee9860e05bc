//! Known-answer vectors for the fragment format (`docs/spec/vectors/fragments.json`).
//!
//! The vectors are rebuilt here from their inputs and compared with the
//! committed file. To rewrite the file after an intended format change:
//!
//! ```text
//! NOX_REGENERATE_VECTORS=1 cargo test -p nox-fec --test vectors -- committed_vectors_match
//! ```

use std::path::PathBuf;

use nox_fec::{
    Fragment, FragmentError, HEADER_LEN, Layout, LayoutError, MessageId, Parity, ParityRatio, decode_fragments, encode,
};
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/fragments.json")
}

/// Message bytes anyone can reproduce: byte i is (31·i + 7) mod 251.
fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((31 * i + 7) % 251) as u8).collect()
}

/// Message id 00 11 22 .. ff.
const ID: MessageId = MessageId::from_bytes([
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
]);

struct Case {
    name: &'static str,
    message_len: usize,
    max_fragment_len: usize,
    parity: Parity,
}

fn cases() -> Vec<Case> {
    let ratio = |per_mille| Parity::Ratio(ParityRatio::per_mille(per_mille).expect("valid ratio"));
    vec![
        Case { name: "empty message", message_len: 0, max_fragment_len: 64, parity: Parity::None },
        Case { name: "one fragment, no parity", message_len: 21, max_fragment_len: 64, parity: Parity::None },
        Case { name: "one data shard, two parity", message_len: 21, max_fragment_len: 64, parity: Parity::Fixed(2) },
        Case {
            name: "three data shards, last one padded",
            message_len: 100,
            max_fragment_len: 64,
            parity: Parity::Fixed(2),
        },
        Case { name: "paper ratio 0.3: d = 11, p = 4", message_len: 435, max_fragment_len: 64, parity: ratio(300) },
        Case {
            name: "odd max_fragment_len rounds the shard down",
            message_len: 81,
            max_fragment_len: 65,
            parity: ratio(500),
        },
        Case { name: "two-byte shards", message_len: 7, max_fragment_len: 26, parity: Parity::Fixed(3) },
        Case {
            name: "100-byte shards: one 64-byte block and a 36-byte tail",
            message_len: 300,
            max_fragment_len: 124,
            parity: Parity::Fixed(2),
        },
        Case {
            name: "128-byte shards, high rate in five chunks: d = 9, p = 2",
            message_len: 1152,
            max_fragment_len: 152,
            parity: Parity::Fixed(2),
        },
        Case {
            name: "low rate: d = 2, p = 20, 100-byte shards",
            message_len: 200,
            max_fragment_len: 124,
            parity: Parity::Fixed(20),
        },
        Case {
            name: "equal powers of two with d <= p use high rate: d = 3, p = 4, 64-byte shards",
            message_len: 192,
            max_fragment_len: 88,
            parity: Parity::Fixed(4),
        },
    ]
}

/// Which construction of fragments.md §4 produces the parity shards: no
/// parity, copies of the single data shard, or the high- or low-rate
/// Reed-Solomon encoder (§4.2, the choice `reed-solomon-simd` makes).
fn parity_construction(d: usize, p: usize) -> &'static str {
    if p == 0 {
        "none"
    } else if d == 1 {
        "copy"
    } else {
        let (n, m) = (d.next_power_of_two(), p.next_power_of_two());
        if n > m || (n == m && d <= p) { "high" } else { "low" }
    }
}

fn valid_vector(case: &Case) -> Value {
    let message = message(case.message_len);
    let layout =
        Layout::for_message(case.message_len, case.max_fragment_len, case.parity).expect("vector layout is valid");
    let fragments = encode(&message, ID, &layout).expect("vector encodes");
    json!({
        "name": case.name,
        "message_id": hex::encode(ID.as_bytes()),
        "message": hex::encode(&message),
        "max_fragment_len": case.max_fragment_len,
        "data_shards": layout.data_shards(),
        "parity_shards": layout.parity_shards(),
        "shard_len": layout.shard_len(),
        "parity_construction": parity_construction(layout.data_shards(), layout.parity_shards()),
        "fragments": fragments.iter().map(hex::encode).collect::<Vec<_>>(),
    })
}

/// A stable name per parse error, as written in the vectors.
fn error_name(err: &FragmentError) -> &'static str {
    match err {
        FragmentError::Truncated { .. } => "Truncated",
        FragmentError::UnsupportedVersion(_) => "UnsupportedVersion",
        FragmentError::InvalidLayout(LayoutError::NoDataShards) => "NoDataShards",
        FragmentError::InvalidLayout(LayoutError::TooManyShards { .. }) => "TooManyShards",
        FragmentError::InvalidLayout(LayoutError::PaddingOnlyShard { .. }) => "PaddingOnlyShard",
        FragmentError::InvalidLayout(LayoutError::MessageTooLarge { .. }) => "MessageTooLarge",
        FragmentError::InvalidLayout(_) => "InvalidLayout",
        FragmentError::IndexOutOfRange { .. } => "IndexOutOfRange",
        FragmentError::ShardLengthMismatch { .. } => "ShardLengthMismatch",
    }
}

fn invalid_vectors() -> Vec<Value> {
    // Base: fragment 1 of "three data shards, last one padded" (34-byte shards).
    let layout = Layout::new(100, 3, 2).expect("valid");
    let base = encode(&message(100), ID, &layout).expect("encodes").swap_remove(1);
    let edit = |at: usize, value: u8| {
        let mut bytes = base.clone();
        bytes[at] = value;
        bytes
    };
    let mut huge = base.clone();
    huge[17..24].copy_from_slice(&[0, 1, 0, 0xff, 0xff, 0xff, 0xff]);
    let mut longer = base.clone();
    longer.push(0);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("header cut at 23 bytes", base[..HEADER_LEN - 1].to_vec()),
        ("version 2", edit(0, 2)),
        ("zero data shards", edit(18, 0)),
        ("d + p = 256", edit(19, 253)),
        ("index equal to d + p", edit(17, 5)),
        ("shard one byte short", base[..base.len() - 1].to_vec()),
        ("shard one byte long", longer),
        ("a data shard of padding only (60 shards for 100 bytes)", edit(18, 60)),
        ("length 2^32 - 1 in one shard", huge),
    ];
    cases
        .into_iter()
        .map(|(name, bytes)| {
            let error = match Fragment::parse(&bytes) {
                Ok(_) => "accepted",
                Err(err) => error_name(&err),
            };
            json!({ "name": name, "fragment": hex::encode(&bytes), "error": error })
        })
        .collect()
}

fn all_vectors() -> Value {
    json!({
        "description": "NOX fragment format v1 test vectors; see docs/spec/fragments.md. \
            message[i] = (31*i + 7) mod 251. Fragments are listed by shard index: \
            data shards first, then parity shards (fragments.md §4: Reed-Solomon over GF(2^16), \
            parity_construction names the encoder).",
        "format_version": 1,
        "header_len": HEADER_LEN,
        "valid": cases().iter().map(valid_vector).collect::<Vec<_>>(),
        "invalid": invalid_vectors(),
    })
}

#[test]
fn committed_vectors_match_the_implementation() {
    let generated = all_vectors();
    let path = vectors_path();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&generated).expect("serializes") + "\n";
        std::fs::write(&path, text).expect("writes the vector file");
    }
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).expect("vector file exists (NOX_REGENERATE_VECTORS=1 writes it)"),
    )
    .expect("vector file is JSON");
    assert_eq!(committed, generated, "vectors differ; see the comment at the top of this file");
}

/// Reads the committed file as a second implementation would: parse every
/// fragment, rebuild the message, and check the expected errors.
#[test]
fn committed_vectors_parse_and_decode() {
    let text = std::fs::read_to_string(vectors_path()).expect("vector file exists");
    let vectors: Value = serde_json::from_str(&text).expect("JSON");
    let valid = vectors["valid"].as_array().expect("valid vectors");
    assert_eq!(valid.len(), cases().len());
    for vector in valid {
        let bytes: Vec<Vec<u8>> = vector["fragments"]
            .as_array()
            .expect("fragments")
            .iter()
            .map(|hex_text| hex::decode(hex_text.as_str().expect("hex")).expect("hex"))
            .collect();
        let fragments: Vec<Fragment<'_>> = bytes.iter().map(|b| Fragment::parse(b).expect("valid fragment")).collect();
        let d = vector["data_shards"].as_u64().expect("d") as usize;
        assert_eq!(fragments.len(), d + vector["parity_shards"].as_u64().expect("p") as usize);
        let want = hex::decode(vector["message"].as_str().expect("hex")).expect("hex");
        // All fragments, and the last d only (parity first when p >= 1).
        let (_, all) = decode_fragments(&fragments).expect("decodes");
        let (_, tail) = decode_fragments(&fragments[fragments.len() - d..]).expect("decodes");
        assert_eq!((all, tail), (want.clone(), want));
    }
    for vector in vectors["invalid"].as_array().expect("invalid vectors") {
        let bytes = hex::decode(vector["fragment"].as_str().expect("hex")).expect("hex");
        let err = Fragment::parse(&bytes).expect_err("invalid vector is refused");
        assert_eq!(error_name(&err), vector["error"].as_str().expect("error name"));
    }
}
