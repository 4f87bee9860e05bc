//! The CI performance gate's workloads (`scripts/bench/regression.sh`), which
//! runs each under `valgrind --tool=callgrind` and compares instruction counts
//! with `bench/baseline.json`. Both `nox-gate` (this crate's binary, what the
//! gate builds: only the pure crates the workloads touch) and
//! `nox bench hop-instructions` run them.
//!
//! Every input is fixed (seeded ChaCha20, constant message bytes), so the
//! instruction count of a run depends only on the code and the CPU features
//! the binary detects. The gate runs each workload twice, with `--count N` and
//! with `--count 0`, and divides the difference by N: set-up and process
//! start-up cancel out, leaving the cost of one operation.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use nox_fec::{HEADER_LEN, Layout, MessageId, decode};
use nox_link::{Accept, FrameOpener, FrameSealer, Initiator, LinkConfig, LinkKeypair, Responder};
use nox_mixing::{MixingConfig, MixingScheduler};
use nox_relay::{DropReason, Relay, RelayOutput};
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Delay, Geometry, NodeId, PathHop, Processed, SecretKey, build_forward, process_packet};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// A workload that could not run (a set-up step or an operation failed, or
/// an operation returned other bytes than expected).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GateError(String);

fn failed(e: impl std::fmt::Display) -> GateError {
    GateError(e.to_string())
}

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
    /// One packet end to end, single-threaded: the client builds it (3 hops,
    /// PoW difficulty 0), then per hop the link record (AES-GCM seal and
    /// open), `Relay::admit`, `Relay::verify`, `Relay::record`, `Recorded::finish` and a mixing
    /// scheduler insert + pop: every node's per-packet CPU path, minus the
    /// kernel and the thread hand-offs.
    #[value(name = "packet-3-hops")]
    Packet3Hops,
}

/// Options of `nox-gate` and `nox bench hop-instructions`.
#[derive(clap::Args)]
pub struct GateArgs {
    /// What to run.
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// How many operations (0: set-up only, the gate's reference run).
    #[arg(long, default_value_t = 20)]
    pub count: u32,
}

const REPLY_LEN: usize = 300 * 1024;
const DATA_SHARDS: usize = 11;
const PARITY_SHARDS: usize = 4;
const LOST_DATA_SHARDS: usize = 4;

fn sphinx_setup() -> Result<(Geometry, SecretKey, Vec<PathHop>, ChaCha20Rng), GateError> {
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
pub fn run(args: &GateArgs) -> Result<(), GateError> {
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
        Workload::Packet3Hops => packet_3_hops(count)?,
    }
    println!("{:?}: {count} operations", args.workload);
    Ok(())
}

/// One hop's state in `packet-3-hops`: the link from the previous hop, the
/// node's relay (epoch key, replay cache) and its mixing scheduler.
struct Hop {
    sealer: FrameSealer,
    opener: FrameOpener,
    relay: Relay,
    mixer: MixingScheduler<Vec<u8>>,
}

/// A real Noise handshake between two fixed key pairs (secrets `index + 100` and `index + 200`):
/// the sealer of the initiating side and the opener of the responding one. Set-up in the gate
/// (not counted); `nox bench packet-size` measures its record sizes and per-record CPU on it.
pub fn link(config: &LinkConfig, index: u8) -> Result<(FrameSealer, FrameOpener), GateError> {
    let client = LinkKeypair::from_secret_bytes([index.wrapping_add(100); 32]).map_err(failed)?;
    let server = LinkKeypair::from_secret_bytes([index.wrapping_add(200); 32]).map_err(failed)?;
    let (initiator, first) = Initiator::node(config, &client, &server.public()).map_err(failed)?;
    let mut responder = Responder::new(config, &server, Accept::default());
    let (_, hello) = responder.feed(&first).map_err(failed)?;
    let (reply, server_session) = hello.ok_or_else(|| failed("incomplete first flight"))?.accept().map_err(failed)?;
    let client_session = initiator.finish(&reply).map_err(failed)?;
    let (sealer, _) = client_session.into_parts();
    let (_, opener) = server_session.into_parts();
    Ok((sealer, opener))
}

fn dropped(reason: DropReason) -> GateError {
    failed(format!("a hop dropped the packet: {}", reason.label()))
}

/// `packet-3-hops`: `count` packets through client build and three hops.
fn packet_3_hops(count: u32) -> Result<(), GateError> {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let geometry = Geometry::new(32_768, 3).map_err(failed)?;
    let config = LinkConfig::new(geometry).map_err(failed)?;
    let bloom = BloomParameters::for_capacity(10_000, 0.001).map_err(failed)?;
    let mut hops = Vec::new();
    let mut path = Vec::new();
    for index in 0..3u8 {
        let key = SecretKey::generate(&mut rng);
        path.push(PathHop {
            node: NodeId([index; 32]),
            public_key: key.public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        });
        let mut relay = Relay::new(geometry);
        relay.open_epoch(1, key, bloom);
        let (sealer, opener) = link(&config, index)?;
        hops.push(Hop {
            sealer,
            opener,
            relay,
            mixer: MixingScheduler::new(MixingConfig::new(Duration::from_millis(1), 1024)),
        });
    }
    // Injected time: the mixers see a fixed clock, released an hour later.
    let now = Instant::now();
    let later = now + Duration::from_secs(3600);
    let options = BuildOptions::new(1);
    let payload = [7u8; 256];
    let mut wire = Vec::with_capacity(config.record_len());
    for _ in 0..count {
        let mut packet = build_forward(&geometry, &options, &path, &payload, &mut rng).map_err(failed)?;
        for (index, hop) in hops.iter_mut().enumerate() {
            wire.clear();
            hop.sealer.seal_into(&packet, &mut wire).map_err(failed)?;
            let (_, opened) = hop.opener.feed(black_box(&wire)).map_err(failed)?;
            let mut received = opened.ok_or_else(|| failed("incomplete record"))?;
            let admitted = hop.relay.admit(&received, 0).map_err(dropped)?;
            let verified = hop.relay.verify(&admitted, &mut received).map_err(dropped)?;
            let output = hop.relay.record(verified).map_err(dropped)?.finish().map_err(dropped)?;
            let delay = match output {
                RelayOutput::Forward { delay, .. } if index < 2 => delay,
                RelayOutput::Deliver { delay, ref payload }
                    if index == 2 && received.get(payload.clone()) == Some(&[7u8; 256][..]) =>
                {
                    delay
                }
                _ => return Err(failed(format!("hop {index} did not forward or deliver the payload"))),
            };
            hop.mixer.insert(received, delay, now, now, &mut rng).map_err(|r| failed(format!("{:?}", r.reason)))?;
            packet = hop.mixer.pop_expired(later).ok_or_else(|| failed("the mixer did not release"))?;
        }
        black_box(&packet);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workload runs (one operation and the set-up-only reference run),
    /// so the gate never finds a workload broken only under valgrind.
    #[test]
    fn every_workload_runs() {
        use clap::ValueEnum;
        for workload in Workload::value_variants() {
            for count in [0, 1] {
                run(&GateArgs { workload: *workload, count }).unwrap_or_else(|e| panic!("{workload:?} x{count}: {e}"));
            }
        }
    }
}
