//! `nox zk setup` as separate processes: a phase-1 transcript started, extended by two
//! contributors and verified step by step; a tampered or out-of-order file refused; phase 2 and
//! finalize refusing powers with no contribution, and powers too small for the circuit. (The full phase 2 of a real circuit needs 2^15
//! powers and takes minutes: crates/nox-zk-setup's tests run it in-process, and
//! docs/spec/ceremony.md records a full command-line run.)

use std::path::Path;
use std::process::Command;

mod common;

use common::{NOX, run};

fn nox(args: &[&str]) -> Result<String, String> {
    let (success, text) = run(Command::new(NOX).args(args));
    if success { Ok(text) } else { Err(text) }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn a_phase1_ceremony_on_the_command_line() {
    let dir = std::env::temp_dir().join(format!("nox-it-zk-setup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (p0, p1, p2) = (dir.join("pot0"), dir.join("pot1"), dir.join("pot2"));

    let out = nox(&["zk", "setup", "phase1", "new", "--power", "5", "--out", s(&p0)]).expect("new");
    assert!(out.contains("transcript hash"), "{out}");
    nox(&["zk", "setup", "phase1", "contribute", "--in", s(&p0), "--out", s(&p1), "--entropy", "alice's dice"])
        .expect("first contribution");
    nox(&["zk", "setup", "phase1", "contribute", "--in", s(&p1), "--out", s(&p2)]).expect("second contribution");
    let out = nox(&["zk", "setup", "phase1", "verify", s(&p0), s(&p1)]).expect("verify 0 → 1");
    assert!(out.contains("plus one valid contribution"), "{out}");
    nox(&["zk", "setup", "phase1", "verify", s(&p1), s(&p2)]).expect("verify 1 → 2");

    // Skipping a contribution, going backwards, a flipped byte, a truncated file: refused.
    let err = nox(&["zk", "setup", "phase1", "verify", s(&p0), s(&p2)]).expect_err("skips one");
    assert!(err.contains("does not extend"), "{err}");
    assert!(nox(&["zk", "setup", "phase1", "verify", s(&p2), s(&p1)]).is_err(), "backwards");
    let mut bytes = std::fs::read(&p2).expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0x20;
    let tampered = dir.join("pot2-tampered");
    std::fs::write(&tampered, &bytes).expect("write");
    assert!(nox(&["zk", "setup", "phase1", "verify", s(&p1), s(&tampered)]).is_err(), "tampered");
    let bytes = std::fs::read(&p2).expect("read");
    std::fs::write(&tampered, &bytes[..bytes.len() - 7]).expect("write");
    let err = nox(&["zk", "setup", "phase1", "verify", s(&p1), s(&tampered)]).expect_err("truncated");
    assert!(err.contains("invalid encoding") || err.contains("malformed"), "{err}");

    // Powers with no contribution (τ = α = β = 1, public) make forgeable keys (issue 29 item 4,
    // crates/nox-zk-setup/tests/forgery.rs): refused wherever a key would be made from them.
    let k0 = dir.join("k0");
    for args in [
        &["phase2", "new", "--phase1", s(&p0), "--circuit", "transfer", "--out", s(&k0)][..],
        &["phase2", "verify", "--phase1", s(&p0), "--circuit", "insert", s(&p0), s(&p1)][..],
        &["finalize", "--phase1", s(&p0), "--circuit", "transfer", "--in", s(&p1), "--out", s(&k0)][..],
    ] {
        let err = nox(&[&["zk", "setup"][..], args].concat()).expect_err("uncontributed powers");
        assert!(err.contains("no secret contribution"), "{args:?}: {err}");
    }
    assert!(!k0.exists(), "nothing written");

    // Phase 2 needs powers that cover the circuit's domain.
    let err =
        nox(&["zk", "setup", "phase2", "new", "--phase1", s(&p2), "--circuit", "transfer", "--out", s(&dir.join("k"))])
            .expect_err("too small");
    assert!(err.contains("needs a domain of 32768"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
