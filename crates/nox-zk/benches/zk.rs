//! `cargo bench -p nox-zk --bench zk`: the 2-in/2-out transfer proof (what every private
//! transaction costs the wallet; median of N, default 15), its native verification and size,
//! and the batch-insertion proof. `NOX_ZK_BENCH_RUNS=N` changes N; `NOX_ZK_BENCH_JSON=path`
//! writes the results as JSON with the commit they were measured at (bench/data/zk.json is one
//! such run). docs/benchmarks/zk.md.

mod util;

use nox_zk::{groth16::PROOF_BYTES, transfer};
use std::time::Instant;
use util::{median, ms};

fn main() {
    // `cargo test --benches` passes --bench-less args; only run for real under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::var("NOX_ZK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    // What is measured is what is checked out now (a commit landing during the run is not).
    let provenance = util::provenance();
    let load_before = util::loadavg();
    let (constraints, witnesses, instances) = transfer::constraint_count().expect("count");
    let t = Instant::now();
    let (pk, vk) = transfer::testnet_setup().expect("setup");
    let setup_ms = ms(t.elapsed());
    let (public, witness) = util::transfer_fixture();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed([9; 32]);
    // One warm-up proof (page faults, rayon pool start, the cached constraint matrices).
    let _ = transfer::prove_evm(&pk, &public, &witness, &mut rng).expect("prove");
    let mut prove_ms = Vec::with_capacity(runs);
    let mut verify_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let proof = transfer::prove(&pk, &public, &witness, &mut rng).expect("prove");
        prove_ms.push(ms(t.elapsed()));
        let t = Instant::now();
        transfer::verify(&vk, &public, &proof).expect("verify");
        verify_ms.push(ms(t.elapsed()));
    }
    // The batch-insertion circuit: a full batch (BATCH_SIZE leaves) into a tree holding one batch.
    let (ic, _, _) = nox_zk::insert::constraint_count().expect("count");
    let t = Instant::now();
    let (ipk, ivk) = nox_zk::insert::testnet_setup().expect("insert setup");
    let insert_setup_ms = ms(t.elapsed());
    let mut tree = nox_zk::Tree::new();
    let leaves = |seed: u8| {
        let mut r = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed([seed; 32]);
        (0..nox_zk::insert::BATCH_SIZE).map(|_| nox_zk::note::random_scalar(&mut r)).collect::<Vec<_>>()
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
    let (ipm, ipmin, ipmax) = median(insert_prove_ms.clone());
    let (pm, pmin, pmax) = median(prove_ms.clone());
    let (vm, vmin, vmax) = median(verify_ms.clone());
    let load_after = util::loadavg();
    println!("transfer: {constraints} constraints (witness vars {witnesses}, instance vars {instances})");
    println!("setup (testnet, once) {setup_ms:.0} ms");
    println!("prove  median {pm:.1} ms  min {pmin:.1}  max {pmax:.1}  (n = {runs})");
    println!("verify median {vm:.2} ms  min {vmin:.2}  max {vmax:.2}  (native arkworks)");
    println!("proof size {PROOF_BYTES} bytes (EVM encoding; 128 compressed)");
    println!("insertion circuit: {ic} constraints, setup {insert_setup_ms:.0} ms");
    println!(
        "insert prove median {ipm:.1} ms  min {ipmin:.1}  max {ipmax:.1}  (n = {runs}, batch of {})",
        nox_zk::insert::BATCH_SIZE
    );
    println!("load average before: {load_before}   after: {load_after}");
    util::write_json(&serde_json::json!({
        "benchmark": "nox-zk 2-in/2-out transfer and batch insertion, Groth16 over BN254 (arkworks 0.6)",
        "command": "NOX_ZK_BENCH_JSON=bench/data/zk.json cargo bench -p nox-zk --bench zk",
        "provenance": provenance,
        "machine": util::machine("2-core VM; other builds may share it: see load averages", &load_before, &load_after),
        "constraints": constraints,
        "witness_variables": witnesses,
        "instance_variables": instances,
        "setup_ms": setup_ms,
        "prove_ms": { "median": pm, "min": pmin, "max": pmax, "runs": runs, "samples": prove_ms },
        "verify_native_ms": { "median": vm, "min": vmin, "max": vmax, "samples": verify_ms },
        "proof_bytes_evm": PROOF_BYTES,
        "insert": {
            "batch_size": nox_zk::insert::BATCH_SIZE,
            "public_inputs": nox_zk::insert::INSERT_NUM_PUBLIC_INPUTS,
            "constraints": ic,
            "setup_ms": insert_setup_ms,
            "prove_ms": { "median": ipm, "min": ipmin, "max": ipmax, "runs": runs, "samples": insert_prove_ms },
        },
    }));
}
