//! Known-answer vectors for the replay journal (`docs/spec/vectors/replay-journal.json`):
//! a version 2 journal built slot by slot, and how readers must classify its torn and
//! damaged variants. To rewrite the file after an intended format change:
//!
//! ```text
//! NOX_REGENERATE_VECTORS=1 cargo test -p nox-replay --test vectors
//! ```

use std::path::PathBuf;

use nox_replay::{JournalError, ParsedJournal, journal};
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/replay-journal.json")
}

const EPOCH: u32 = 7;

fn tag(i: u8) -> [u8; 32] {
    core::array::from_fn(|j| i.wrapping_mul(31).wrapping_add(j as u8))
}

/// The reader's verdict on `bytes`, as JSON.
fn verdict(bytes: &[u8]) -> Value {
    match ParsedJournal::parse(bytes) {
        Ok(parsed) => json!({
            "ok": {
                "version": parsed.version(),
                "epoch": parsed.epoch(),
                "tags": parsed.tags().map(hex::encode).collect::<Vec<_>>(),
                "valid_len": parsed.valid_len(),
                "durable_len": parsed.durable_len(),
                "discarded_bytes": parsed.discarded_bytes(),
            }
        }),
        Err(JournalError::Damaged { offset, durable_len }) => {
            json!({ "error": "Damaged", "offset": offset, "durable_len": durable_len })
        }
        Err(error) => json!({ "error": format!("{error:?}") }),
    }
}

fn build() -> Value {
    // Three batches of two records; each batch after the first starts with the commit slot for
    // the previous batch's sync.
    let mut file = journal::encode_header(EPOCH).to_vec();
    for batch in 0..3u8 {
        if batch > 0 {
            file.extend_from_slice(&journal::encode_commit(EPOCH, file.len() as u64));
        }
        for i in 0..2 {
            file.extend_from_slice(&journal::encode_record(EPOCH, &tag(batch * 2 + i)));
        }
    }
    let slot = |index: usize| journal::HEADER_LEN + index * journal::RECORD_LEN;
    let mut cases = vec![("intact", file.clone())];
    cases.push(("torn: 13 bytes of the last record missing", file[..file.len() - 13].to_vec()));
    let mut flipped = file.clone();
    flipped[slot(0) + 5] ^= 0x01;
    cases.push(("damaged: bit flipped in the first record (committed by the slots after it)", flipped));
    let mut last = file.clone();
    last[slot(6) + 1] ^= 0x80;
    cases.push(("torn: last batch's first record bad, its second intact (never committed)", last));
    let mut commit = file.clone();
    commit[slot(2)] ^= 0x01;
    cases.push(("damaged: first commit slot bad, the second still commits past it", commit));
    let mut v1 = journal::encode_header_version(EPOCH, journal::VERSION_1).to_vec();
    for i in 0..3 {
        v1.extend_from_slice(&journal::encode_record(EPOCH, &tag(i)));
    }
    let mut v1_damaged = v1.clone();
    v1_damaged[slot(1) + 32] ^= 0x01;
    cases.push(("version 1, intact", v1));
    cases.push(("version 1, damaged: a bad record followed by an intact one", v1_damaged));
    cases.push(("unsupported version 3", journal::encode_header_version(EPOCH, 3).to_vec()));
    json!({
        "description": "NOX replay journal v2 vectors; see docs/spec/replay-cache.md §3. Epoch 7. Tag i is bytes (31*i + j) mod 256, j = 0..31. Each case gives the file and the reader's verdict: ok (tags in order, valid_len to truncate to, durable_len proven by commit slots, discarded torn-tail bytes) or an error.",
        "epoch": EPOCH,
        "header_v2": hex::encode(journal::encode_header(EPOCH)),
        "header_v1": hex::encode(journal::encode_header_version(EPOCH, journal::VERSION_1)),
        "record_tag_0": hex::encode(journal::encode_record(EPOCH, &tag(0))),
        "commit_durable_len_112": hex::encode(journal::encode_commit(EPOCH, 112)),
        "cases": cases.iter().map(|(name, bytes)| json!({
            "name": name,
            "file": hex::encode(bytes),
            "verdict": verdict(bytes),
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn committed_vectors_match() {
    let built = build();
    let path = vectors_path();
    if std::env::var_os("NOX_REGENERATE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&built).expect("json") + "\n";
        std::fs::write(&path, text).expect("write vectors");
    }
    let committed: Value = serde_json::from_slice(&std::fs::read(&path).expect("vectors file")).expect("json");
    assert_eq!(committed, built, "docs/spec/vectors/replay-journal.json is out of date");
}

#[test]
fn every_committed_case_parses_to_its_verdict() {
    let committed: Value = serde_json::from_slice(&std::fs::read(vectors_path()).expect("vectors file")).expect("json");
    for case in committed["cases"].as_array().expect("cases") {
        let bytes = hex::decode(case["file"].as_str().expect("file")).expect("hex");
        assert_eq!(verdict(&bytes), case["verdict"], "{}", case["name"]);
    }
}
