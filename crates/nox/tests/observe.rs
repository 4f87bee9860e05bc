//! The default `nox` binary has no per-packet timing log: `nox node` refuses a configuration
//! with `[observe]`, naming the cargo feature, and `nox testnet up --observe` refuses too.
//! (Built with `--features observe`, the benchmark build, these tests do not apply.)
#![cfg(not(feature = "observe"))]

use std::process::Command;

mod common;

use common::NOX;

#[test]
fn the_default_binary_refuses_observe() {
    let dir = std::env::temp_dir().join(format!("nox-it-observe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("node.toml");
    let events = dir.join("observe.events");
    std::fs::write(
        &config,
        format!(
            "[observe]\nevents = {:?}\n[node]\nkey_dir = {:?}\nlisten = \"127.0.0.1:0\"\n[topology]\nfile = {:?}\nauthority_key = \"00\"\n",
            events.display().to_string(),
            dir.join("keys").display().to_string(),
            dir.join("topology.json").display().to_string(),
        ),
    )
    .unwrap();
    let out = Command::new(NOX).args(["node", "--config"]).arg(&config).output().expect("run nox");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the default build started a node with [observe]");
    assert!(stderr.contains("[observe]") && stderr.contains("--features observe"), "{stderr}");
    assert!(!events.exists(), "no timing log was written");

    let out = Command::new(NOX)
        .args(["testnet", "up", "--observe", "--dir"])
        .arg(dir.join("testnet"))
        .output()
        .expect("run nox");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--features observe"));
    let _ = std::fs::remove_dir_all(&dir);
}
