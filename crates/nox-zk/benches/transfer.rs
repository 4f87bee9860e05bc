//! `cargo bench -p nox-zk --bench transfer`: where the 2-in/2-out transfer proof's time goes —
//! witness synthesis, the satisfiability check against the cached matrices, Groth16 proper (QAP
//! witness map + MSMs) — against arkworks' standard `Groth16::prove` path on the same circuit and
//! the same circuit at tree depths 24 and 27, interleaved so that load falls on all alike; and
//! the CPU time per proof (what carries across a shared machine). The proof median of N
//! (`NOX_ZK_BENCH_RUNS=N`, default 15); `NOX_ZK_BENCH_JSON=path` writes JSON with the commit
//! (bench/data/zk-transfer.json is one such run). docs/benchmarks/zk.md, "Private transfer".

mod util;

use ark_bn254::{Bn254, Fr};
use ark_groth16::Groth16;
use ark_snark::SNARK;
use nox_zk::transfer::{self, TransferCircuit};
use std::time::Instant;
use util::{cpu_ms, median, ms};

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
    // What is measured is what is checked out now (a commit landing during the run is not).
    let provenance = util::provenance();
    let load_before = util::loadavg();

    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed([9; 32]);
    let t = Instant::now();
    let (pk, vk) = transfer::testnet_setup().expect("setup");
    let setup_ms = ms(t.elapsed());
    let (c, wv, iv) = transfer::constraint_count().expect("count");
    let (tp, tw) = util::transfer_fixture();
    let _ = transfer::prove(&pk, &tp, &tw, &mut rng).expect("warm-up (builds the matrices)");

    let mut tr_ms = Vec::new();
    let mut tr_syn = Vec::new();
    let mut tr_chk = Vec::new();
    let mut tr_g16 = Vec::new();
    let mut tr_std_ms = Vec::new();
    let mut tr_verify = Vec::new();
    let mut tr_qap = Vec::new();
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
    let load_after = util::loadavg();
    let (tm, tmin, tmax) = median(tr_ms.clone());
    let (sm, _, _) = median(tr_syn.clone());
    let (cm, _, _) = median(tr_chk.clone());
    let (g16, _, _) = median(tr_g16.clone());
    let (stdm, stdmin, stdmax) = median(tr_std_ms.clone());
    let (vm, _, _) = median(tr_verify.clone());
    let (qm, _, _) = median(tr_qap.clone());
    let (tcpu, _, _) = median(tr_cpu.clone());
    let (d24, _, _) = median(depth_ms[0].clone());
    let (d27, _, _) = median(depth_ms[1].clone());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
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
    println!(
        "CPU time per proof (all threads), median: {tcpu:.0} ms ({threads} threads: ≈ {:.0} ms wall when idle)",
        tcpu / threads as f64
    );
    println!("load average before: {load_before}   after: {load_after}");
    util::write_json(&serde_json::json!({
        "benchmark": "nox-zk 2-in/2-out transfer: where the proof's time goes, Groth16 over BN254 (arkworks 0.6)",
        "command": "NOX_ZK_BENCH_JSON=bench/data/zk-transfer.json cargo bench -p nox-zk --bench transfer",
        "provenance": provenance,
        "machine": util::machine("development machine shared with other builds: not a clean run", &load_before, &load_after),
        "runs": runs,
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
    }));
}
