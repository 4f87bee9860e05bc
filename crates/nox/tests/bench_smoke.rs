//! The benchmark harness still works: `nox bench <experiment>` runs and writes its JSON, for the
//! experiments cheap enough for CI.
//!
//! Since session 30 the test command no longer runs the benchmark suite (`scripts/bench/run_all.sh
//! --quick`, ~10 minutes of measurements and a separate optimised build; docs/ci.md): the suite is
//! a benchmark, run before committing `bench/data`. What CI keeps is this smoke run, on the test
//! build's `nox`: the in-process and simulated experiments at their quick sizes and one experiment
//! on a real testnet (surb-rtt, 9 node processes). `scripts/test.sh` runs this binary in lane A,
//! after the money binary and beside lanes B and C, so its testnet takes ports no other binary
//! binds while the lanes run: [`SURB_RTT_BASE_PORT`] (9,400–9,700; the money binary's blocks end
//! below 7,100, lane B's lowest block, operator_network's, below 9,000, every other lane-B block
//! starts at 10,000, lane C takes the kernel's ports ≥ 32,768). Each must exit 0 and write a JSON document with
//! the harness's envelope (the machine block with the commit, the command, the results); the
//! numbers are not checked (a debug-profile build on a loaded machine), only that they exist.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;

use common::{NOX, run_ok};

/// The surb-rtt testnet's first port (links; metrics at +100, the chain at +200): see above.
const SURB_RTT_BASE_PORT: u16 = 9_400;

/// Runs `nox bench <args>` from the repository root (the experiments find Anvil and the contracts
/// there); the shared harness's [`common::run_ok`] panics with its output if it fails.
fn bench(args: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    run_ok(Command::new(NOX).arg("bench").args(args).current_dir(&root), format!("nox bench {}", args.join(" ")));
}

/// Reads a result file and checks the envelope every experiment writes: the machine it ran on
/// (with the commit), and results that are not empty.
fn envelope(path: &Path, results_key: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let machine = &doc["machine"];
    assert!(machine["cpu_model"].is_string(), "{}: no machine.cpu_model", path.display());
    assert!(machine["logical_cpus"].as_u64().is_some_and(|n| n > 0), "{}: no machine.logical_cpus", path.display());
    assert!(machine.get("git_commit").is_some(), "{}: no machine.git_commit", path.display());
    let results = &doc[results_key];
    let filled = match results {
        Value::Array(items) => !items.is_empty(),
        Value::Object(fields) => !fields.is_empty(),
        _ => false,
    };
    assert!(filled, "{}: {results_key} is missing or empty: {results}", path.display());
    doc
}

/// The envelope of the experiments written with the common report writer: the command line
/// that produced it is recorded too.
fn report(path: &Path, command: &str) -> Value {
    let doc = envelope(path, "results");
    let recorded = doc["command"].as_str().unwrap_or_default();
    assert!(recorded.starts_with(command), "{}: command {recorded:?}, expected {command:?}…", path.display());
    doc
}

#[test]
fn fec_curve_writes_the_curve() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("fec_curve.json");
    bench(&["fec-curve", "--trials", "20", "--out", out.to_str().expect("utf-8 path")]);
    let doc = envelope(&out, "curve");
    assert_eq!(doc["parameters"]["trials_per_point"], 20, "the trials asked for are recorded");
}

#[test]
fn fec_arq_pool_anonymity_and_attacks_write_their_reports() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().to_str().expect("utf-8 path");
    bench(&["fec-arq", "--quick", "--out-dir", out]);
    report(&dir.path().join("fec-arq.json"), "nox bench fec-arq");
    bench(&["pool-anonymity", "--quick", "--out-dir", out]);
    report(&dir.path().join("pool-anonymity.json"), "nox bench pool-anonymity");
    bench(&["attacks", "--quick", "--out-dir", out]);
    for name in ["attacks-n-minus-one", "attacks-intersection", "attacks-compromised"] {
        report(&dir.path().join(format!("{name}.json")), "nox bench attacks");
    }
}

#[test]
fn packet_size_and_frontier_write_their_reports() {
    let dir = tempfile::tempdir().expect("temp dir");
    let packet_size = dir.path().join("packet-size.json");
    bench(&["packet-size", "--quick", "--out", packet_size.to_str().expect("utf-8 path")]);
    report(&packet_size, "nox bench packet-size");
    bench(&["frontier", "--quick", "--out-dir", dir.path().to_str().expect("utf-8 path")]);
    report(&dir.path().join("frontier-quick.json"), "nox bench frontier");
}

#[test]
fn surb_rtt_runs_on_a_real_testnet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("surb-rtt.json");
    let base_port = SURB_RTT_BASE_PORT.to_string();
    bench(&["surb-rtt", "--quick", "--base-port", &base_port, "--out", out.to_str().expect("utf-8 path")]);
    let doc = report(&out, "nox bench surb-rtt");
    let rtt = &doc["summary"]["single_packet_no_fec_sequential_ms"];
    assert!(rtt["n"].as_u64().is_some_and(|n| n > 0), "no round trip measured: {rtt}");
    assert!(rtt["p50"].as_f64().is_some_and(|ms| ms > 0.0), "no median round trip: {rtt}");
}
