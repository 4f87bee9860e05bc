//! The Sphinx failure vectors (`docs/spec/vectors/sphinx.json`, `failures`)
//! run through the relay's real ingest path: [`Relay::admit`], then
//! [`Relay::verify`], then [`Relay::record`], then
//! [`nox_relay::Recorded::finish`]. Each case must be dropped for the reason
//! its spec error maps to (docs/spec/sphinx.md §5.4), which checks that the
//! relay runs the checks in the spec's order; and its tag must be recorded
//! exactly when the MAC verified (§5.4 check 8), so a second copy of the
//! same input is then refused as a replay at admission.

use nox_relay::{DropReason, Relay, RelayOutput};
use nox_replay::{BloomParameters, ReplayCache};
use nox_sphinx::{Geometry, ReplayTag, SecretKey};
use serde_json::Value;

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex string")).expect("hex")
}

/// The drop reason (metrics label) each spec error is counted under.
fn drop_reason(spec_error: &str) -> DropReason {
    match spec_error {
        "WrongLength" => DropReason::WrongLength,
        "WrongGeometry" => DropReason::WrongGeometry,
        "UnknownEpoch" => DropReason::UnknownEpoch,
        "Replay" => DropReason::Replay,
        "InsufficientWork" => DropReason::InsufficientWork,
        "MacMismatch" => DropReason::MacMismatch,
        "InvalidEphemeralKey" | "UnknownCommand" | "MalformedRoutingBlock" => DropReason::Malformed,
        "PayloadIntegrity" | "BadPadding" => DropReason::PayloadIntegrity,
        other => panic!("no drop reason for spec error {other}"),
    }
}

fn run(relay: &mut Relay, difficulty: u8, input: &[u8]) -> Result<&'static str, DropReason> {
    let admitted = relay.admit(input, difficulty)?;
    let mut buffer = input.to_vec();
    let verified = relay.verify(&admitted, &mut buffer)?;
    let output = relay.record(verified)?.finish()?;
    Ok(match output {
        RelayOutput::Forward { .. } => "Forward",
        RelayOutput::Deliver { .. } => "Deliver",
        RelayOutput::Reply { .. } => "Reply",
    })
}

/// Spec errors of the checks that run after the tag is recorded (§5.4
/// checks 9–10): the MAC verified, so the tag is recorded when they fail.
const AFTER_MAC: [&str; 4] = ["MalformedRoutingBlock", "UnknownCommand", "PayloadIntegrity", "BadPadding"];

#[test]
fn relay_drops_each_failure_vector_for_its_spec_reason() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec/vectors/sphinx.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("vectors")).expect("json");
    let f = &all["failures"];
    let g = &f["geometry"];
    let geometry =
        Geometry::new(g["packet_len"].as_u64().expect("len") as usize, g["hops"].as_u64().expect("hops") as usize)
            .expect("geometry");
    assert_eq!(g["blinding"], "additive");
    assert_eq!(hex::encode(geometry.identifier()), g["identifier"].as_str().expect("id"));
    let secret: [u8; 32] = unhex(&f["node"]["secret_key"]).try_into().expect("32");
    let epoch = f["node"]["key_epoch"].as_u64().expect("epoch") as u32;
    let difficulty = f["node"]["pow_difficulty"].as_u64().expect("difficulty") as u8;
    let bloom = BloomParameters::for_capacity(1_000, 0.001).expect("bloom");
    let cases = f["cases"].as_array().expect("cases");
    assert!(!cases.is_empty());
    for case in cases {
        let mut cache = ReplayCache::new(epoch, bloom);
        for tag in case["seen_replay_tags"].as_array().expect("tags") {
            let tag = ReplayTag(unhex(tag).try_into().expect("32"));
            assert!(!cache.insert(&tag.0).is_replay(), "{}: seen tags are distinct", case["name"]);
        }
        let mut relay = Relay::new(geometry);
        relay.open_epoch_with(epoch, SecretKey::from_bytes(&secret).expect("key"), cache);
        let inserted_before = relay.replay_cache(epoch).expect("cache").inserted();
        let input = unhex(&case["input"]);
        let got = run(&mut relay, difficulty, &input);
        let error = case.get("error").map(|e| e.as_str().expect("name"));
        match (error, got) {
            (Some(error), Err(reason)) => assert_eq!(reason, drop_reason(error), "{}", case["name"]),
            (None, Ok(outcome)) => assert_eq!(outcome, case["outcome"].as_str().expect("outcome"), "{}", case["name"]),
            (_, got) => panic!("{}: relay gave {got:?}", case["name"]),
        }
        // §5.4: the tag is recorded iff checks 1–7 passed (MAC verified),
        // whatever checks 9–10 then said.
        let recorded = relay.replay_cache(epoch).expect("cache").inserted() - inserted_before;
        let mac_verified = error.is_none_or(|e| AFTER_MAC.contains(&e));
        assert_eq!(recorded, u64::from(mac_verified), "{}: tags recorded", case["name"]);
        if mac_verified {
            // The same bytes again: a replay at admission, no public-key work.
            assert_eq!(relay.admit(&input, difficulty), Err(DropReason::Replay), "{}: second copy", case["name"]);
        }
    }
}
