//! `nox bench fec-curve`: the FEC recovery curve — Theorem 1, delivery without FEC and a Monte
//! Carlo measurement through the real encoder and reassembler, over loss rates × parity ratios.

use std::path::Path;

use serde_json::json;

use crate::harness::{BenchError, err, machine, write_json};

/// Runs the sweep and writes `out`.
pub fn run(
    data_shards: usize,
    losses: &[f64],
    ratios_per_mille: &[u32],
    trials: u64,
    seed: u64,
    out: &Path,
) -> Result<(), BenchError> {
    let ratios = ratios_per_mille
        .iter()
        .map(|&r| nox_fec::ParityRatio::per_mille(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(seed);
    let started = std::time::Instant::now();
    let curve = nox_fec::recovery_curve(data_shards, losses, &ratios, trials, &mut rng).map_err(err)?;
    let report = json!({
        "kind": "fec-recovery-curve",
        "parameters": { "data_shards": data_shards, "losses": losses,
            "ratios_per_mille": ratios_per_mille, "trials_per_point": trials, "seed": seed },
        "machine": machine::describe(),
        "elapsed_seconds": started.elapsed().as_secs_f64(),
        "curve": curve,
    });
    write_json(out, &report)?;
    println!("wrote {} ({} points)", out.display(), curve.points.len());
    Ok(())
}
