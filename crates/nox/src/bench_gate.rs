//! `nox bench hop-instructions`: a small deterministic workload for the CI
//! regression gate (`scripts/bench/regression.sh`), which runs it under
//! `valgrind --tool=callgrind` and compares instruction counts with
//! `bench/baseline.json`.
//!
//! Every input is fixed (seeded ChaCha20, constant message bytes), so the
//! instruction count of a run depends only on the code and the CPU features
//! the binary detects. The gate runs each workload twice, with `--count N` and
//! with `--count 0`, and divides the difference by N: set-up and process
//! start-up cancel out, leaving the cost of one operation.

use std::hint::black_box;

use nox_fec::{HEADER_LEN, Layout, MessageId, decode};
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, Processed, SecretKey, build_forward, process_packet};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::bench::BenchError;

/// One operation the gate counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// One Sphinx forward hop of a 32 KiB packet (3-hop geometry), including
    /// the copy of the packet the hop works on.
    SphinxHop,
    /// Building one 3-hop forward Sphinx packet (the client's cost).
    SphinxCreate,
    /// FEC encoding of a 300 KiB reply, d = 11, p = 4, fresh encoder.
    FecEncode,
    /// FEC decoding of that reply with 4 data shards lost (an erasure decode).
    FecDecode,
}

/// Options of `nox bench hop-instructions`.
#[derive(clap::Args)]
pub struct GateArgs {
    /// What to run.
    #[arg(long, value_enum)]
    workload: Workload,
    /// How many operations (0: set-up only, the gate's reference run).
    #[arg(long, default_value_t = 20)]
    count: u32,
}

const REPLY_LEN: usize = 300 * 1024;
const DATA_SHARDS: usize = 11;
const PARITY_SHARDS: usize = 4;
const LOST_DATA_SHARDS: usize = 4;

fn failed(e: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(e.to_string())
}

fn sphinx_setup() -> Result<(Geometry, SecretKey, Vec<PathHop>, ChaCha20Rng), BenchError> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let geometry = Geometry::new(32_768, 3).map_err(failed)?;
    let keys: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate(&mut rng)).collect();
    let path = keys
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId([i as u8; 32]),
            public_key: k.public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        })
        .collect();
    let first = keys.into_iter().next().ok_or_else(|| failed("no key"))?;
    Ok((geometry, first, path, rng))
}

fn reply() -> Vec<u8> {
    (0..REPLY_LEN).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

/// Runs the workload `count` times and prints one line.
pub fn run(args: &GateArgs) -> Result<(), BenchError> {
    let count = args.count;
    match args.workload {
        Workload::SphinxHop => {
            let (geometry, key, path, mut rng) = sphinx_setup()?;
            let packet =
                build_forward(&geometry, &BuildOptions::new(1), &path, &[7u8; 256], &mut rng).map_err(failed)?;
            for _ in 0..count {
                let mut copy = packet.clone();
                let out = process_packet(&geometry, &key, black_box(&mut copy)).map_err(failed)?;
                if !matches!(out, Processed::Forward { .. }) {
                    return Err(failed("the first hop did not forward"));
                }
            }
        }
        Workload::SphinxCreate => {
            let (geometry, _, path, mut rng) = sphinx_setup()?;
            let options = BuildOptions::new(1);
            for _ in 0..count {
                black_box(build_forward(&geometry, &options, &path, &[7u8; 256], &mut rng).map_err(failed)?);
            }
        }
        Workload::FecEncode => {
            let message = reply();
            let layout = Layout::new(REPLY_LEN, DATA_SHARDS, PARITY_SHARDS).map_err(failed)?;
            let id = MessageId::from_bytes([7; 16]);
            for _ in 0..count {
                black_box(nox_fec::encode(black_box(&message), id, &layout).map_err(failed)?);
            }
        }
        Workload::FecDecode => {
            let message = reply();
            let layout = Layout::new(REPLY_LEN, DATA_SHARDS, PARITY_SHARDS).map_err(failed)?;
            let fragments = nox_fec::encode(&message, MessageId::from_bytes([7; 16]), &layout).map_err(failed)?;
            let survivors: Vec<(usize, &[u8])> =
                fragments.iter().enumerate().skip(LOST_DATA_SHARDS).map(|(i, f)| (i, &f[HEADER_LEN..])).collect();
            for _ in 0..count {
                let decoded = decode(&layout, black_box(&survivors).iter().copied()).map_err(failed)?;
                if decoded != message {
                    return Err(failed("FEC decode returned other bytes"));
                }
            }
        }
    }
    println!("{:?}: {count} operations", args.workload);
    Ok(())
}
