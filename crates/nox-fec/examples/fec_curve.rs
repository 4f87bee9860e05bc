//! Prints the FEC recovery curve as JSON: Theorem 1, no-FEC delivery and a
//! Monte Carlo measurement through the real codec, for d = 11 and a sweep of
//! loss rates and parity ratios.
//!
//! ```text
//! cargo run --release -p nox-fec --example fec_curve -- [TRIALS] [SEED]
//! ```

use nox_fec::{ParityRatio, recovery_curve};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;

const DATA_SHARDS: usize = 11;
const LOSSES: [f64; 11] = [0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50];
const RATIOS_PER_MILLE: [u32; 6] = [0, 100, 300, 500, 700, 1000];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let trials: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let seed: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1);
    let ratios = RATIOS_PER_MILLE.iter().map(|&r| ParityRatio::per_mille(r)).collect::<Result<Vec<_>, _>>()?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let curve = recovery_curve(DATA_SHARDS, &LOSSES, &ratios, trials, &mut rng)?;
    println!("{}", serde_json::to_string_pretty(&curve)?);
    Ok(())
}
