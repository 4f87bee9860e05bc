//! `cargo bench -p nox-zk --bench transfer`: the 2-in/2-out private-transfer proof against
//! today's gas-payment proof in the same run (the ratio is what carries across machines), with
//! the prover's time split into witness synthesis, the satisfiability check and Groth16 proper
//! (QAP witness map + MSMs), and arkworks' standard `Groth16::prove` path on the same circuit
//! for comparison. `NOX_ZK_BENCH_RUNS=N` (default 15); `NOX_ZK_BENCH_JSON=path` writes JSON
//! (bench/data/zk-transfer.json is one such run). docs/benchmarks/zk.md, "Private transfer".

#[path = "../tests/zk/common.rs"]
#[allow(dead_code)]
mod common;

use ark_bn254::{Bn254, Fr};
use ark_groth16::Groth16;
use ark_snark::SNARK;
use nox_zk::{
    Note, SpendingKey, Tree,
    field::address,
    groth16::{prove, testnet_setup, verify},
    note::random_scalar,
    transfer::{self, OutputNote, SpentNote, TransferCircuit, TransferRequest},
};
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let m = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (m, v[0], v[n - 1])
}

/// CPU time (user + system, all threads) this process has used, from /proc/self/stat (Linux;
/// clock ticks of 10 ms). On a shared machine, CPU time per proof / threads estimates the wall
/// time the same proof would take on the idle machine.
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command name.
    (tick(11) + tick(12)) * 10.0
}

fn count<const D: usize>() -> usize {
    use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem, SynthesisMode};
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    TransferCircuit::<'static, D>::blank_at_depth().generate_constraints(cs.clone()).expect("synthesis");
    cs.finalize();
    cs.num_constraints()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runs: usize = std::env::var("NOX_ZK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

    // Today's gas-payment circuit: its prove() = a full synthesis for the satisfiability check,
    // then arkworks' Groth16::prove (a second synthesis with matrices).
    let (gpk, gvk) = testnet_setup().expect("setup");
    let gp = common::payment(1, 1_000, 250);
    let mut rng = common::rng(9);
    let _ = prove(&gpk, &gp.public, &gp.witness, &mut rng).expect("warm-up");

    // The transfer: 2 real inputs in a small tree, 2 outputs, a fee.
    let t = Instant::now();
    let (pk, vk) = transfer::testnet_setup().expect("setup");
    let setup_ms = ms(t.elapsed());
    let (c, wv, iv) = transfer::constraint_count().expect("count");
    let mut r = common::rng(3);
    let sk = SpendingKey::random(&mut r);
    let owner = sk.owner().expect("owner");
    let asset = address(&common::TOKEN);
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
    let (tp, tw) = transfer::build(
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
    .expect("build");
    let _ = transfer::prove(&pk, &tp, &tw, &mut rng).expect("warm-up (builds the matrices)");

    let mut gas_ms = Vec::new();
    let mut gas_check_ms = Vec::new();
    let mut tr_ms = Vec::new();
    let mut tr_syn = Vec::new();
    let mut tr_chk = Vec::new();
    let mut tr_g16 = Vec::new();
    let mut tr_std_ms = Vec::new();
    let mut tr_verify = Vec::new();
    let mut tr_qap = Vec::new();
    let mut gas_cpu = Vec::new();
    let mut tr_cpu = Vec::new();
    let m = transfer::Matrices::get().expect("matrices");
    let z = transfer::assignment(&tp, &tw).expect("assignment");
    // The same circuit with shallower trees: what the depth costs (arkworks' standard path, so
    // compare with `tr_std_ms`; the witness's depth-32 path does not satisfy them, which changes
    // nothing to the prover's work).
    let depth_keys = [
        (
            24usize,
            Groth16::<Bn254>::circuit_specific_setup(TransferCircuit::<'static, 24>::blank_at_depth(), &mut rng)
                .expect("setup")
                .0,
        ),
        (
            27,
            Groth16::<Bn254>::circuit_specific_setup(TransferCircuit::<'static, 27>::blank_at_depth(), &mut rng)
                .expect("setup")
                .0,
        ),
    ];
    let depth_constraints = [count::<24>(), count::<27>()];
    let mut depth_ms: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    // Interleaved, so that load from other builds falls on all of them alike.
    for _ in 0..runs {
        let t = Instant::now();
        let _ = nox_zk::is_satisfied(&gp.public, &gp.witness).expect("check");
        gas_check_ms.push(ms(t.elapsed()));
        let t = Instant::now();
        let c0 = cpu_ms();
        let p = prove(&gpk, &gp.public, &gp.witness, &mut rng).expect("prove");
        gas_ms.push(ms(t.elapsed()));
        gas_cpu.push(cpu_ms() - c0);
        verify(&gvk, &gp.public, &p).expect("verify");

        let t = Instant::now();
        let c0 = cpu_ms();
        let (p, times) = transfer::prove_timed(&pk, &tp, &tw, &mut rng).expect("prove");
        tr_ms.push(ms(t.elapsed()));
        tr_cpu.push(cpu_ms() - c0);
        tr_syn.push(ms(times.synthesis));
        tr_chk.push(ms(times.check));
        tr_g16.push(ms(times.groth16));
        let t = Instant::now();
        transfer::verify(&vk, &tp, &p).expect("verify");
        tr_verify.push(ms(t.elapsed()));

        let t = Instant::now();
        let p = Groth16::<Bn254>::prove(
            &pk,
            TransferCircuit::<'_, 32> { public: tp.clone(), witness: Some(&tw) },
            &mut rng,
        )
        .expect("prove");
        tr_std_ms.push(ms(t.elapsed()));
        transfer::verify(&vk, &tp, &p).expect("verify");

        let t = Instant::now();
        let h = <ark_groth16::r1cs_to_qap::LibsnarkReduction as ark_groth16::r1cs_to_qap::R1CSToQAP>::witness_map_from_matrices::<
            Fr,
            ark_poly::GeneralEvaluationDomain<Fr>,
        >(m.matrices(), m.num_instance(), m.num_constraints(), &z)
        .expect("qap");
        tr_qap.push(ms(t.elapsed()));
        assert!(h.len() > m.num_constraints());

        let t = Instant::now();
        let _ = Groth16::<Bn254>::prove(
            &depth_keys[0].1,
            TransferCircuit::<'_, 24> { public: tp.clone(), witness: Some(&tw) },
            &mut rng,
        )
        .expect("prove 24");
        depth_ms[0].push(ms(t.elapsed()));
        let t = Instant::now();
        let _ = Groth16::<Bn254>::prove(
            &depth_keys[1].1,
            TransferCircuit::<'_, 27> { public: tp.clone(), witness: Some(&tw) },
            &mut rng,
        )
        .expect("prove 27");
        depth_ms[1].push(ms(t.elapsed()));
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let (gm, gmin, gmax) = median(gas_ms.clone());
    let (gcm, _, _) = median(gas_check_ms.clone());
    let (tm, tmin, tmax) = median(tr_ms.clone());
    let (sm, _, _) = median(tr_syn.clone());
    let (cm, _, _) = median(tr_chk.clone());
    let (g16, _, _) = median(tr_g16.clone());
    let (stdm, stdmin, stdmax) = median(tr_std_ms.clone());
    let (vm, _, _) = median(tr_verify.clone());
    let (qm, _, _) = median(tr_qap.clone());
    let (gcpu, _, _) = median(gas_cpu.clone());
    let (tcpu, _, _) = median(tr_cpu.clone());
    let (d24, _, _) = median(depth_ms[0].clone());
    let (d27, _, _) = median(depth_ms[1].clone());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "gas payment (9,408 constraints): prove median {gm:.1} ms (min {gmin:.1}, max {gmax:.1}); of which the satisfiability pre-check ≈ {gcm:.1} ms"
    );
    println!("transfer ({c} constraints, {wv} witness, {iv} instance vars): setup {setup_ms:.0} ms");
    println!(
        "transfer prove median {tm:.1} ms (min {tmin:.1}, max {tmax:.1}): synthesis {sm:.1}, check {cm:.1}, groth16 {g16:.1}"
    );
    println!(
        "transfer via arkworks Groth16::prove (synthesis with matrices, no pre-check): median {stdm:.1} ms (min {stdmin:.1}, max {stdmax:.1})"
    );
    println!("transfer verify (native) median {vm:.2} ms");
    println!("  of groth16: QAP witness map (FFTs) {qm:.1} ms, the rest (MSMs) ≈ {:.1} ms", g16 - qm);
    println!(
        "depth 24: {} constraints, standard prove median {d24:.1} ms; depth 27: {} constraints, {d27:.1} ms (depth 32 standard: {stdm:.1})",
        depth_constraints[0], depth_constraints[1]
    );
    println!("ratio transfer / gas payment: {:.2}", tm / gm);
    println!("CPU time per proof (all threads), median: gas payment {gcpu:.0} ms, transfer {tcpu:.0} ms");
    println!("threads {threads}; load average before: {}   after: {}", load_before.trim(), load_after.trim());
    if let Ok(path) = std::env::var("NOX_ZK_BENCH_JSON") {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
        let commit = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_default();
        let json = serde_json::json!({
            "benchmark": "nox-zk 2-in/2-out transfer vs gas payment, Groth16 over BN254 (arkworks 0.6)",
            "command": "NOX_ZK_BENCH_JSON=bench/data/zk-transfer.json cargo bench -p nox-zk --bench transfer",
            "commit": commit,
            "machine": { "cpu": cpu, "threads": threads, "note": "development machine shared with other builds: not a clean run", "loadavg_before": load_before.trim(), "loadavg_after": load_after.trim() },
            "runs": runs,
            "gas_payment": { "constraints": 9408, "prove_ms": { "median": gm, "min": gmin, "max": gmax, "samples": gas_ms }, "precheck_ms_median": gcm, "cpu_ms_per_proof_median": gcpu },
            "transfer": {
                "constraints": c, "witness_variables": wv, "instance_variables": iv, "setup_ms": setup_ms,
                "prove_ms": { "median": tm, "min": tmin, "max": tmax, "samples": tr_ms },
                "synthesis_ms_median": sm, "check_ms_median": cm, "groth16_ms_median": g16,
                "arkworks_standard_prove_ms": { "median": stdm, "min": stdmin, "max": stdmax, "samples": tr_std_ms },
                "verify_native_ms_median": vm,
                "qap_witness_map_ms_median": qm,
                "cpu_ms_per_proof_median": tcpu,
                "depth_variants_standard_prove_ms": { "24": { "constraints": depth_constraints[0], "median": d24, "samples": depth_ms[0] }, "27": { "constraints": depth_constraints[1], "median": d27, "samples": depth_ms[1] } },
            },
        });
        std::fs::write(&path, serde_json::to_string_pretty(&json).expect("json") + "\n").expect("write json");
    }
}
