//! What both benchmarks share: timing statistics, CPU time, and the provenance every JSON record
//! carries (commit, whether the crate had uncommitted changes, machine, load).

#![allow(dead_code)]

use std::time::Duration;

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (median, min, max).
pub fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let m = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (m, v[0], v[n - 1])
}

/// CPU time (user + system, all threads) this process has used, from /proc/self/stat (Linux;
/// clock ticks of 10 ms). On a shared machine, CPU time per proof / threads estimates the wall
/// time the same proof would take on the idle machine.
pub fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command name.
    (tick(11) + tick(12)) * 10.0
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string()
}

fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit the measured code was built from, and whether this crate had uncommitted changes
/// (then the figures are not exactly that commit's). `"unknown"` outside a git checkout.
pub fn provenance() -> serde_json::Value {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no", "--", "."]).map(|s| !s.is_empty());
    serde_json::json!({ "commit": commit, "uncommitted_changes_in_nox_zk": dirty })
}

pub fn machine(note: &str, load_before: &str, load_after: &str) -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    serde_json::json!({ "cpu": cpu, "threads": threads, "note": note, "loadavg_before": load_before, "loadavg_after": load_after })
}

/// Writes `json` to `NOX_ZK_BENCH_JSON` (relative to the workspace), if set.
pub fn write_json(json: &serde_json::Value) {
    if let Ok(path) = std::env::var("NOX_ZK_BENCH_JSON") {
        // cargo runs benches in the crate's directory; a relative path is the workspace's.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        std::fs::write(&path, serde_json::to_string_pretty(json).expect("json") + "\n").expect("write json");
        println!("wrote {}", path.display());
    }
}

/// The measured transaction: two real inputs (600 + 400) in a small tree, two outputs (700 to
/// another owner, 250 change), a fee of 50 — the paid 2→2 transfer, every part of the circuit
/// live.
pub fn transfer_fixture() -> (nox_zk::transfer::TransferPublic, nox_zk::transfer::TransferWitness) {
    use ark_bn254::Fr;
    use nox_zk::{
        Note, SpendingKey, Tree,
        field::address,
        note::random_scalar,
        transfer::{self, OutputNote, SpentNote, TransferRequest},
    };
    use rand_core::SeedableRng;
    let mut r = rand_chacha::ChaCha20Rng::from_seed([3; 32]);
    let sk = SpendingKey::random(&mut r);
    let owner = sk.owner().expect("owner");
    let asset = address(&[0x70; 20]);
    let mut tree = Tree::new();
    let mut notes = Vec::new();
    for v in [600u128, 400] {
        tree.push(random_scalar(&mut r)).expect("push");
        let n = Note::new(v, asset, owner, &mut r);
        let i = tree.push(n.commitment().expect("cm")).expect("push");
        notes.push((n, i));
    }
    let inputs = notes.iter().map(|(n, i)| SpentNote { note: n.clone(), path: tree.path(*i).expect("path") }).collect();
    let outputs = vec![
        OutputNote::new(700, nox_zk::poseidon::hash(&[Fr::from(77u64), random_scalar(&mut r)]).expect("h")),
        OutputNote::new(250, nox_zk::poseidon::hash(&[owner, random_scalar(&mut r)]).expect("h")),
    ];
    transfer::build(
        TransferRequest {
            sk,
            root: tree.root(),
            inputs,
            outputs,
            asset,
            public_in: 0,
            public_out: 0,
            fee: 50,
            context: Fr::from(12345u64),
        },
        &mut r,
    )
    .expect("build")
}
