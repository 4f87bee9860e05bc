//! The Sphinx failure vectors (`docs/spec/vectors/sphinx.json`, `failures`)
//! run through the relay's real ingest path: [`Relay::admit`], then
//! [`Relay::process`], then [`Relay::record`]. Each case must be dropped for
//! the reason its spec error maps to (docs/spec/sphinx.md §5.4), which checks
//! that the relay runs the checks in the spec's order.

use nox_relay::{Admitted, DropReason, Relay, RelayOutput};
use nox_replay::BloomParameters;
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
    let output = relay.process(&admitted, &mut buffer)?;
    relay.record(&admitted)?;
    Ok(match output {
        RelayOutput::Forward { .. } => "Forward",
        RelayOutput::Deliver { .. } => "Deliver",
        RelayOutput::Reply { .. } => "Reply",
    })
}

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
        let mut relay = Relay::new(geometry);
        relay.open_epoch(epoch, SecretKey::from_bytes(&secret).expect("key"), bloom);
        for tag in case["seen_replay_tags"].as_array().expect("tags") {
            let tag = ReplayTag(unhex(tag).try_into().expect("32"));
            relay.record(&Admitted { epoch, tag }).expect("fresh tag");
        }
        let got = run(&mut relay, difficulty, &unhex(&case["input"]));
        match (case.get("error"), got) {
            (Some(error), Err(reason)) => {
                assert_eq!(reason, drop_reason(error.as_str().expect("name")), "{}", case["name"])
            }
            (None, Ok(outcome)) => assert_eq!(outcome, case["outcome"].as_str().expect("outcome"), "{}", case["name"]),
            (_, got) => panic!("{}: relay gave {got:?}", case["name"]),
        }
    }
}
