//! Test vectors for stream messages: `docs/spec/vectors/streams.json`.
//! `NOX_REGENERATE_VECTORS=1 cargo test -p nox-stream --test vectors`
//! rewrites the file from this code; otherwise the committed file must match,
//! and every vector must decode (or be refused) as it says.

use nox_stream::{Ack, Data, Pool, ResetCode, StreamId, StreamMessage, SurbBatch, Target};
use serde_json::{Value, json};

fn valid() -> Vec<(&'static str, StreamMessage)> {
    let id = StreamId(*b"0123456789abcdef");
    let m = StreamMessage::new(id);
    vec![
        ("no frame", m.clone()),
        (
            "open example.org:443 with 16 SURBs",
            StreamMessage {
                open: Some(Target { host: "example.org".into(), port: 443 }),
                surbs: Some(SurbBatch { seq: 1, count: 16 }),
                ack: Some(Ack { offset: 0, window: 1 << 20 }),
                ..m.clone()
            },
        ),
        (
            "opened, pool, ack",
            StreamMessage {
                opened: true,
                pool: Some(Pool { held: 15, seen_seq: 1 }),
                ack: Some(Ack { offset: 0, window: 1 << 20 }),
                ..m.clone()
            },
        ),
        (
            "data and fin",
            StreamMessage {
                ack: Some(Ack { offset: 517, window: 1_049_093 }),
                data: Some(Data { offset: 1000, bytes: b"HTTP/1.1 200 OK\r\n".to_vec() }),
                fin: Some(1017),
                ..m.clone()
            },
        ),
        ("reset: connection refused", StreamMessage { reset: Some(ResetCode::Refused), ..m.clone() }),
        ("reset: unknown stream", StreamMessage { reset: Some(ResetCode::UnknownStream), ..m }),
    ]
}

fn invalid() -> Vec<(&'static str, Vec<u8>)> {
    let head = [&[1u8][..], b"0123456789abcdef"].concat();
    let with = |frames: &[u8]| [&head[..], frames].concat();
    vec![
        ("unknown version", [&[2u8][..], b"0123456789abcdef"].concat()),
        ("truncated id", head[..10].to_vec()),
        ("unknown frame", with(&[0x09])),
        ("frames out of order", with(&[0x08, 0x01, 0x02])),
        ("repeated frame", with(&[0x02, 0x02])),
        ("open with port 0", with(&[0x01, 0, 0, 1, b'a'])),
        ("open with a space in the host", with(&[0x01, 80, 0, 3, b'a', b' ', b'b'])),
        ("empty data", with(&[0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
        ("data longer than the message", with(&[0x06, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1])),
        ("surb batch 0", with(&[0x03, 0, 0, 0, 0, 1, 0])),
        ("unknown reset code", with(&[0x08, 0x99])),
        ("data beyond fin", with(&[0x06, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 2, 0x07, 1, 0, 0, 0, 0, 0, 0, 0])),
    ]
}

fn generate() -> Value {
    json!({
        "spec": "docs/spec/streams.md §2",
        "valid": valid().iter().map(|(name, m)| json!({ "name": name, "encoded": hex::encode(m.encode()) })).collect::<Vec<_>>(),
        "invalid": invalid().iter().map(|(name, b)| json!({ "name": name, "encoded": hex::encode(b) })).collect::<Vec<_>>(),
    })
}

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/streams.json")
}

#[test]
fn committed_vectors_match_and_decode() {
    let generated = generate();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some_and(|v| v == "1") {
        std::fs::write(path(), serde_json::to_string_pretty(&generated).unwrap() + "\n").unwrap();
    }
    let committed: Value = serde_json::from_str(&std::fs::read_to_string(path()).expect("vector file")).unwrap();
    assert_eq!(committed, generated, "vectors differ from the implementation");
    for (v, (name, message)) in committed["valid"].as_array().unwrap().iter().zip(valid()) {
        let bytes = hex::decode(v["encoded"].as_str().unwrap()).unwrap();
        assert_eq!(StreamMessage::decode(&bytes).unwrap(), message, "{name}");
    }
    for v in committed["invalid"].as_array().unwrap() {
        let bytes = hex::decode(v["encoded"].as_str().unwrap()).unwrap();
        assert!(StreamMessage::decode(&bytes).is_err(), "{} accepted", v["name"]);
    }
}
