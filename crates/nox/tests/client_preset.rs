//! A client from a chain preset alone (issue 33): `nox client … --chain <preset>` without
//! `--directory` fetches from the directory mirrors the preset's deployment record lists;
//! with none there, a clear error naming both ways. The second test needs Anvil: run it under
//! the e2e lock, `flock /tmp/nox-e2e.lock cargo test -p nox --test client_preset`.

use std::path::Path;

use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_operator::DeploymentRecord;

mod common;

use common::{free_port, nox_in};

/// Runs `nox args…` in `dir`; returns (success, stdout + stderr).
fn nox(dir: &Path, args: &[&str]) -> (bool, String) {
    let (success, out, err) = nox_in(dir, args, &[]);
    (success, out + &err)
}

/// The built-in `anvil` preset lists no mirror: without `--directory` the client stops before
/// any network I/O, naming `--directory` and the record's `mirrors`.
#[test]
fn a_preset_without_mirrors_and_no_directory_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (success, text) = nox(tmp.path(), &["client", "echo", "--chain", "anvil", "hello"]);
    assert!(!success, "a client started with no directory mirror:\n{text}");
    assert!(text.contains("no directory mirror"), "{text}");
    assert!(text.contains("--directory") && text.contains("mirrors"), "the error names neither way:\n{text}");
    // The daemon form says the same.
    let (success, text) = nox(tmp.path(), &["client", "--chain", "anvil", "--rpc", "127.0.0.1:0"]);
    assert!(!success && text.contains("no directory mirror"), "{text}");
}

/// A record listing a mirror: the client (on the record's chain, verifying by its registry)
/// fetches from that mirror — here a closed port, so the failure names it. `--directory` given
/// as well replaces the record's list.
#[test]
fn a_preset_with_mirrors_is_fetched_from() {
    let anvil = Anvil::spawn(&AnvilOptions::on_port(free_port())).expect("anvil");
    let rpc = anvil.url().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("dev.key"), DEV_KEY).unwrap();
    std::fs::write(dir.join("pass"), "deployer passphrase\n").unwrap();
    let pw = ["--password-file", "pass"];
    let (success, text) =
        nox(dir, &["operator", "new-key", "--keystore", "deployer.json", pw[0], pw[1], "--import-key-file", "dev.key"]);
    assert!(success, "{text}");
    let (success, text) =
        nox(dir, &["deploy", "--rpc", &rpc, "--keystore", "deployer.json", pw[0], pw[1], "--no-pool"]);
    assert!(success, "{text}");
    let mut record = DeploymentRecord::load(&dir.join("deployments/31337.json")).unwrap();
    let closed = free_port();
    let mirror = format!("127.0.0.1:{closed}");
    record.mirrors = vec![format!("http://{mirror}")];
    std::fs::write(dir.join("record.json"), record.to_json()).unwrap();

    let echo = ["client", "echo", "--timeout-secs", "5", "--chain", "record.json", "--chain-rpc", &rpc];
    let (success, text) = nox(dir, &[&echo[..], &["hello"]].concat());
    assert!(!success, "an echo through a closed mirror succeeded:\n{text}");
    assert!(text.contains(&mirror), "the client did not fetch from the record's mirror {mirror}:\n{text}");
    assert!(!text.contains("no directory mirror"), "{text}");

    // `--directory` overrides the record's list.
    let other = format!("127.0.0.1:{}", free_port());
    let (success, text) = nox(dir, &[&echo[..], &["--directory", &format!("http://{other}"), "hello"]].concat());
    assert!(!success, "{text}");
    assert!(
        text.contains(&other) && !text.contains(&mirror),
        "--directory did not replace the record's mirrors:\n{text}"
    );
}
