//! Checking Theorem 1 by simulation, and recovery curves for charts.
//!
//! The simulator runs the real code path: a message is encoded, each fragment
//! is lost independently with probability ℓ, the survivors are shuffled and
//! fed to a fresh [`Reassembler`], and a trial succeeds only if the exact
//! bytes come out. The RNG is injected, so a fixed seed gives a fixed result.

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::codec::{self, EncodePlanError};
use crate::layout::{Layout, ParityRatio};
use crate::parity::{delivery_without_fec, recovery_probability};
use crate::reassembly::{Accepted, Reassembler, ReassemblyLimits};
use crate::wire::MessageId;

/// Shard length used by the simulator: small, so trials are cheap; the code
/// path does not depend on it.
const SIMULATED_SHARD_LEN: usize = 16;

/// Outcome of a Monte Carlo run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimulationResult {
    /// Trials run.
    pub trials: u64,
    /// Trials whose message was rebuilt with the exact original bytes.
    pub recovered: u64,
    /// Trials that produced a message with wrong bytes (a bug if ever
    /// non-zero; counted rather than hidden).
    pub corrupted: u64,
}

impl SimulationResult {
    /// Fraction of trials recovered.
    pub fn recovery_rate(&self) -> f64 {
        if self.trials == 0 { 0.0 } else { self.recovered as f64 / self.trials as f64 }
    }
}

/// A uniform draw in `[0, 1)` with 53 random bits.
fn uniform(rng: &mut (impl RngCore + ?Sized)) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// A draw in `0..bound` (`bound > 0`) by multiply-shift; the bias is below
/// `bound / 2^64`, negligible for shard counts.
fn below(rng: &mut (impl RngCore + ?Sized), bound: usize) -> usize {
    ((u128::from(rng.next_u64()) * bound as u128) >> 64) as usize
}

/// Runs `trials` independent deliveries of a (d, p) message under
/// independent per-fragment loss `loss` through the real encoder and
/// reassembler. A `loss` below 0 loses nothing; above 1, or NaN, loses all.
pub fn simulate_recovery<R: RngCore + ?Sized>(
    data_shards: usize,
    parity_shards: usize,
    loss: f64,
    trials: u64,
    rng: &mut R,
) -> Result<SimulationResult, EncodePlanError> {
    let layout = Layout::new(data_shards * SIMULATED_SHARD_LEN, data_shards, parity_shards)?;
    let mut message = vec![0u8; layout.message_len()];
    rng.fill_bytes(&mut message);
    let mut id = [0u8; 16];
    rng.fill_bytes(&mut id);
    let fragments = codec::encode(&message, MessageId::from_bytes(id), &layout)?;
    let limits = ReassemblyLimits {
        max_message_len: layout.message_len(),
        max_buffered_bytes: 1 << 20,
        max_pending_messages: 1,
        ..ReassemblyLimits::default()
    };
    let mut result = SimulationResult { trials, recovered: 0, corrupted: 0 };
    let mut arrived: Vec<&[u8]> = Vec::with_capacity(fragments.len());
    for _ in 0..trials {
        arrived.clear();
        arrived.extend(fragments.iter().filter(|_| uniform(rng) >= loss).map(Vec::as_slice));
        for i in (1..arrived.len()).rev() {
            arrived.swap(i, below(rng, i + 1));
        }
        let Ok(mut reassembler) = Reassembler::new(limits) else {
            continue;
        };
        for fragment in &arrived {
            if let Ok(Accepted::Complete { message: rebuilt, .. }) = reassembler.accept(fragment, 0) {
                if rebuilt == message {
                    result.recovered += 1;
                } else {
                    result.corrupted += 1;
                }
                break;
            }
        }
    }
    Ok(result)
}

/// One point of a recovery curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Per-fragment loss probability ℓ.
    pub loss: f64,
    /// Parity ratio r in per mille.
    pub ratio_per_mille: u32,
    /// p = ceil(d · r).
    pub parity_shards: usize,
    /// Bandwidth overhead p / (d + p).
    pub overhead: f64,
    /// Theorem 1.
    pub theory: f64,
    /// `(1 - ℓ)^d`: delivery if nothing is coded.
    pub without_fec: f64,
    /// Measured by [`simulate_recovery`], if trials were requested.
    pub simulated: Option<f64>,
}

/// A sweep of loss rates and parity ratios for one data shard count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryCurve {
    /// Data shards d.
    pub data_shards: usize,
    /// Monte Carlo trials per point (0: theory only).
    pub trials_per_point: u64,
    /// One point per (ratio, loss), ratios outermost.
    pub points: Vec<CurvePoint>,
}

/// The recovery curve for d data shards over `losses` × `ratios`. With
/// `trials_per_point > 0` each point is also simulated with `rng`.
pub fn recovery_curve<R: RngCore + ?Sized>(
    data_shards: usize,
    losses: &[f64],
    ratios: &[ParityRatio],
    trials_per_point: u64,
    rng: &mut R,
) -> Result<RecoveryCurve, EncodePlanError> {
    let mut points = Vec::with_capacity(losses.len() * ratios.len());
    for ratio in ratios {
        let parity_shards = ratio.parity_for(data_shards);
        // Validates the counts once per ratio, even without simulation.
        Layout::new(data_shards * SIMULATED_SHARD_LEN, data_shards, parity_shards)?;
        for &loss in losses {
            let simulated = if trials_per_point == 0 {
                None
            } else {
                let run = simulate_recovery(data_shards, parity_shards, loss, trials_per_point, rng)?;
                Some(run.recovery_rate())
            };
            points.push(CurvePoint {
                loss,
                ratio_per_mille: ratio.as_per_mille(),
                parity_shards,
                overhead: parity_shards as f64 / (data_shards + parity_shards) as f64,
                theory: recovery_probability(data_shards, parity_shards, loss),
                without_fec: delivery_without_fec(data_shards, loss),
                simulated,
            });
        }
    }
    Ok(RecoveryCurve { data_shards, trials_per_point, points })
}
