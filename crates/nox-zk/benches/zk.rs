//! `cargo bench -p nox-zk`: gas-payment and batch-insertion proof generation (median of N, default
//! 15), verification, proof size and constraint counts. `NOX_ZK_BENCH_RUNS=N` changes N; `NOX_ZK_BENCH_JSON=path`
//! writes the results as JSON (bench/data/zk.json is one such run).

#[path = "../tests/zk/common.rs"]
#[allow(dead_code)]
mod common;

use nox_zk::{
    constraint_count,
    groth16::{PROOF_BYTES, proof_to_evm, prove, testnet_setup, verify},
};
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (median, v[0], v[n - 1])
}

fn main() {
    // `cargo test --benches` passes --bench-less args; only run for real under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::var("NOX_ZK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let (constraints, witnesses, instances) = constraint_count().expect("count");
    let t = Instant::now();
    let (pk, vk) = testnet_setup().expect("setup");
    let setup_ms = ms(t.elapsed());
    let p = common::payment(1, 1_000, 250);
    let mut rng = common::rng(9);
    // One warm-up proof (page faults, rayon pool start).
    let proof = prove(&pk, &p.public, &p.witness, &mut rng).expect("prove");
    let mut prove_ms = Vec::with_capacity(runs);
    let mut verify_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let proof = prove(&pk, &p.public, &p.witness, &mut rng).expect("prove");
        prove_ms.push(ms(t.elapsed()));
        let t = Instant::now();
        verify(&vk, &p.public, &proof).expect("verify");
        verify_ms.push(ms(t.elapsed()));
    }
    // The batch-insertion circuit: a full batch of 16 into a tree holding one batch.
    let (ic, _, _) = nox_zk::insert::constraint_count().expect("count");
    let t = Instant::now();
    let (ipk, ivk) = nox_zk::insert::testnet_setup().expect("insert setup");
    let insert_setup_ms = ms(t.elapsed());
    let mut tree = nox_zk::Tree::new();
    let leaves = |seed: u8| {
        let mut r = common::rng(seed);
        (0..16).map(|_| nox_zk::note::random_scalar(&mut r)).collect::<Vec<_>>()
    };
    tree.insert_batch(&leaves(1)).expect("first batch");
    let (ipub, iwit) = tree.insert_batch(&leaves(2)).expect("second batch");
    let _ = nox_zk::insert::prove(&ipk, &ipub, &iwit, &mut rng).expect("warm-up");
    let mut insert_prove_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let proof = nox_zk::insert::prove(&ipk, &ipub, &iwit, &mut rng).expect("prove");
        insert_prove_ms.push(ms(t.elapsed()));
        nox_zk::insert::verify(&ivk, &ipub, &proof).expect("verify");
    }
    let (ipm, ipmin, ipmax) = stats(insert_prove_ms.clone());
    let (pm, pmin, pmax) = stats(prove_ms.clone());
    let (vm, vmin, vmax) = stats(verify_ms.clone());
    let size = proof_to_evm(&proof).len();
    assert_eq!(size, PROOF_BYTES);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("constraints {constraints} (witness vars {witnesses}, instance vars {instances})");
    println!("setup (testnet, once) {setup_ms:.0} ms");
    println!("prove  median {pm:.1} ms  min {pmin:.1}  max {pmax:.1}  (n = {runs})");
    println!("verify median {vm:.2} ms  min {vmin:.2}  max {vmax:.2}  (native arkworks)");
    println!("proof size {size} bytes (EVM encoding; 128 compressed)");
    println!("insertion circuit: {ic} constraints, setup {insert_setup_ms:.0} ms");
    println!("insert prove median {ipm:.1} ms  min {ipmin:.1}  max {ipmax:.1}  (n = {runs}, batch of 16)");
    println!("cpu: {cpu}, {threads} threads");
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}   after: {}", load_before.trim(), load_after.trim());
    if let Ok(path) = std::env::var("NOX_ZK_BENCH_JSON") {
        // cargo runs benches in the crate's directory; a relative path is the workspace's.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        let json = serde_json::json!({
            "benchmark": "nox-zk gas-payment circuit, Groth16 over BN254 (arkworks 0.6)",
            "command": "NOX_ZK_BENCH_JSON=bench/data/zk.json cargo bench -p nox-zk",
            "machine": {
                "cpu": cpu,
                "threads": threads,
                "note": "2-core VM; other builds may share it: see load averages",
                "loadavg_before": load_before.trim(),
                "loadavg_after": load_after.trim(),
            },
            "constraints": constraints,
            "witness_variables": witnesses,
            "instance_variables": instances,
            "setup_ms": setup_ms,
            "prove_ms": { "median": pm, "min": pmin, "max": pmax, "runs": runs, "samples": prove_ms },
            "verify_native_ms": { "median": vm, "min": vmin, "max": vmax, "samples": verify_ms },
            "proof_bytes_evm": size,
            "insert": {
                "constraints": ic,
                "setup_ms": insert_setup_ms,
                "prove_ms": { "median": ipm, "min": ipmin, "max": ipmax, "runs": runs, "samples": insert_prove_ms },
            },
        });
        std::fs::write(&path, serde_json::to_string_pretty(&json).expect("json") + "\n").expect("write json");
    }
}
