//! The failure cases' reference (docs/spec/sphinx.md §5.4), shared by both vector generators
//! (`vectors`: the classical geometries, `kem_vectors`: the KEM ones): the ingest order on the
//! public API and the spec's error names, the nonce re-solved after an edit, and one case run,
//! checked and written or read back.

use nox_sphinx::{Geometry, HeaderView, Processed, ReplayTag, SecretKey, SphinxError, pow, process_packet};
use serde_json::Value;

/// The node every failure case is given to.
pub struct FailureNode {
    pub key: SecretKey,
    pub epoch: u32,
    pub difficulty: u8,
}

/// The spec's name of an error a failure case may give.
pub fn error_name(e: SphinxError) -> String {
    match e {
        SphinxError::WrongLength { .. } => "WrongLength".into(),
        SphinxError::WrongGeometry { .. } => "WrongGeometry".into(),
        SphinxError::InvalidEphemeralKey => "InvalidEphemeralKey".into(),
        SphinxError::MacMismatch => "MacMismatch".into(),
        SphinxError::UnknownCommand(_) => "UnknownCommand".into(),
        SphinxError::MalformedRoutingBlock => "MalformedRoutingBlock".into(),
        SphinxError::PayloadIntegrity => "PayloadIntegrity".into(),
        SphinxError::BadPadding => "BadPadding".into(),
        SphinxError::InsufficientWork { .. } => "InsufficientWork".into(),
        other => format!("unexpected {other:?}"),
    }
}

/// Ingest and processing in the order of docs/spec/sphinx.md §5.4, on the public API, by a node
/// that has recorded the replay tags `seen`; returns the spec's error name or the outcome.
pub fn reference_ingest(
    geometry: &Geometry,
    node: &FailureNode,
    seen: &[ReplayTag],
    input: &[u8],
) -> Result<String, String> {
    let view = HeaderView::parse(geometry, input).map_err(error_name)?;
    if view.key_epoch() != node.epoch {
        return Err("UnknownEpoch".into());
    }
    let tag = view.replay_tag();
    if seen.contains(&tag) {
        return Err("Replay".into());
    }
    view.check_work(&tag, node.difficulty).map_err(error_name)?;
    let mut buffer = input.to_vec();
    match process_packet(geometry, &node.key, &mut buffer).map_err(error_name)? {
        Processed::Forward { .. } => Ok("Forward".into()),
        Processed::Deliver { .. } => Ok("Deliver".into()),
        Processed::Reply { .. } => Ok("Reply".into()),
    }
}

/// Re-solves the nonce of a modified header so the PoW check passes again.
pub fn resolve_nonce(geometry: &Geometry, packet: &mut [u8], difficulty: u8) {
    let tag = HeaderView::parse(geometry, packet).expect("view").replay_tag();
    let nonce = pow::solve(&tag, difficulty, 1).expect("solve");
    packet[geometry.nonce_range()].copy_from_slice(&nonce);
}

/// Runs one generated case and checks it gives `expected` (`label` names it in the failure
/// message); returns the field the committed case records it under: `"error"` or `"outcome"`.
pub fn expected_field(
    geometry: &Geometry,
    node: &FailureNode,
    seen: &[ReplayTag],
    input: &[u8],
    expected: &str,
    label: &str,
) -> &'static str {
    let (field, got) = match reference_ingest(geometry, node, seen, input) {
        Ok(outcome) => ("outcome", outcome),
        Err(error) => ("error", error),
    };
    assert_eq!(got, expected, "{label}");
    field
}

/// Checks a committed case's `error` or `outcome` against what the reference gives
/// (`label` names the case in the failure message).
pub fn check_committed(got: &Result<String, String>, case: &Value, label: &str) {
    match (got, case.get("error")) {
        (Err(e), Some(want)) => assert_eq!(e, want.as_str().expect("name"), "{label}"),
        (Ok(o), None) => assert_eq!(o, case["outcome"].as_str().expect("outcome"), "{label}"),
        _ => panic!("{label}: got {got:?}"),
    }
}
