//! `nox client --help` describes what the endpoints do (issue 35): `--socks` is a SOCKS5
//! `CONNECT` stream through the mixnet (docs/spec/streams.md), not one plain HTTP request per
//! connection, and `--rpc` is what `nox wallet`/`nox tx --rpc` point at.

mod common;

use std::process::Command;

use common::NOX;

#[test]
fn client_help_describes_socks_as_connect_streams_and_rpc_for_wallets() {
    let out = Command::new(NOX).args(["client", "--help"]).output().expect("run nox client --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    // clap folds long help; compare with whitespace collapsed.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!help.contains("one request per connection"), "the old description is gone: {help}");
    assert!(help.contains("each `CONNECT` opens a TCP stream through the mixnet"), "{help}");
    assert!(help.contains("docs/spec/streams.md"), "{help}");
    assert!(help.contains("--socks5-hostname"), "{help}");
    assert!(help.contains("nox wallet`/`nox tx --rpc http://127.0.0.1:8645"), "{help}");
}
