//! The (n−1) flooding attack on one continuous-time (Poisson) mix.
//!
//! Adversary: controls the links into the target mix. It first blocks every honest arrival
//! and floods the mix with its own packets for `flush_factor · μ`, so honest packets already
//! inside drain out; then it lets exactly one target packet in and keeps flooding for
//! `observe_factor · μ`. It recognises its own packets on output, so every other output is a
//! candidate for the target. Its guess is the first unknown output after the target entered:
//! with exponential delays and Poisson cover this is the maximum a posteriori choice.
//! The mix's own loop/drop cover (rate λ_c) produces unknown outputs the adversary cannot tell
//! from the target; without it the target is the only unknown output and the attack always
//! succeeds.

use rand_core::RngCore;
use serde::Serialize;

use crate::AnonymityError;
use crate::random::{exponential_us, poisson};

/// Parameters of the attack and of the attacked mix.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NMinusOneConfig {
    /// μ of the mix (µs).
    pub mean_delay_us: f64,
    /// Constant processing time of the mix (µs).
    pub processing_us: f64,
    /// Loop/drop cover emitted by the mix itself (packets per second; 0 = none).
    pub node_cover_rate_per_s: f64,
    /// Honest arrival rate before the attack: fixes the honest pool to drain (per second).
    pub honest_rate_per_s: f64,
    /// The attacker's flood rate (packets per second).
    pub flood_rate_per_s: f64,
    /// Flush phase length in units of μ.
    pub flush_factor: f64,
    /// Observation phase length in units of μ (at least 1 ms).
    pub observe_factor: f64,
    /// Proof-of-work difficulty `d` (leading zero bits) each flood packet must carry.
    pub pow_difficulty_bits: u32,
    /// The attacker's hash evaluations per second.
    pub hash_rate_per_s: f64,
}

impl Default for NMinusOneConfig {
    /// μ = 50 ms, no cover, 100 honest packets/s, 1000 flood packets/s, 10μ flush and
    /// observation, difficulty 16, 10⁷ hashes/s.
    fn default() -> Self {
        Self {
            mean_delay_us: 50_000.0,
            processing_us: 0.0,
            node_cover_rate_per_s: 0.0,
            honest_rate_per_s: 100.0,
            flood_rate_per_s: 1_000.0,
            flush_factor: 10.0,
            observe_factor: 10.0,
            pow_difficulty_bits: 16,
            hash_rate_per_s: 1e7,
        }
    }
}

/// Outcome of repeated attacks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NMinusOneReport {
    /// The configuration attacked.
    pub config: NMinusOneConfig,
    /// Attacks run.
    pub trials: usize,
    /// Fraction where the adversary's guess was the target's output.
    pub success_rate: f64,
    /// Standard error of `success_rate`.
    pub standard_error: f64,
    /// `1 / (1 + λ_c μ)`: P(target leaves before the first cover packet), the success rate
    /// with a fully drained pool and an unbounded observation window.
    pub analytic_success_rate: f64,
    /// Mean number of unknown outputs in the observation window (the target included).
    pub mean_candidates: f64,
    /// Mean flood packets sent per attack.
    pub mean_packets: f64,
    /// `mean_packets · 2^d` hash evaluations per attack.
    pub hash_evaluations: f64,
    /// `hash_evaluations / hash_rate` seconds of the attacker's hashing per attack.
    pub hashing_seconds: f64,
}

/// Runs `trials` independent attacks.
pub fn n_minus_one<R: RngCore + ?Sized>(
    config: &NMinusOneConfig,
    trials: usize,
    rng: &mut R,
) -> Result<NMinusOneReport, AnonymityError> {
    if trials == 0 {
        return Err(AnonymityError::InvalidParameter("trials must be positive"));
    }
    let c = config;
    if c.mean_delay_us < 0.0 || c.node_cover_rate_per_s < 0.0 || c.hash_rate_per_s <= 0.0 {
        return Err(AnonymityError::InvalidParameter("negative rate or delay, or zero hash rate"));
    }
    let mu = c.mean_delay_us;
    let flush = c.flush_factor * mu;
    let observe = (c.observe_factor * mu).max(1_000.0);
    let (mut successes, mut candidates, mut packets) = (0usize, 0usize, 0u64);
    for _ in 0..trials {
        packets += poisson(rng, c.flood_rate_per_s * (flush + observe) / 1e6);
        let entered = flush;
        let window_end = entered + observe;
        let target = entered + c.processing_us + exponential_us(rng, mu);
        let mut unknown: Vec<(f64, bool)> = Vec::new();
        if target <= window_end {
            unknown.push((target, true));
        }
        // Honest packets inside when the attack began: their residual delays are Exp(μ).
        for _ in 0..poisson(rng, c.honest_rate_per_s * mu / 1e6) {
            let leaves = exponential_us(rng, mu);
            if leaves > entered && leaves <= window_end {
                unknown.push((leaves, false));
            }
        }
        // The mix's own cover during the observation window.
        let mut t = entered + exponential_us(rng, 1e6 / c.node_cover_rate_per_s.max(1e-300));
        while c.node_cover_rate_per_s > 0.0 && t <= window_end {
            unknown.push((t, false));
            t += exponential_us(rng, 1e6 / c.node_cover_rate_per_s);
        }
        candidates += unknown.len();
        let guess = unknown.iter().min_by(|a, b| a.0.total_cmp(&b.0));
        if guess.is_some_and(|&(_, is_target)| is_target) {
            successes += 1;
        }
    }
    let n = trials as f64;
    let rate = successes as f64 / n;
    let mean_packets = packets as f64 / n;
    let hash_evaluations = mean_packets * 2f64.powi(c.pow_difficulty_bits as i32);
    Ok(NMinusOneReport {
        config: *config,
        trials,
        success_rate: rate,
        standard_error: (rate * (1.0 - rate) / n).sqrt(),
        analytic_success_rate: 1.0 / (1.0 + c.node_cover_rate_per_s * mu / 1e6),
        mean_candidates: candidates as f64 / n,
        mean_packets,
        hash_evaluations,
        hashing_seconds: hash_evaluations / c.hash_rate_per_s,
    })
}

/// [`n_minus_one`] over the grid `mean_delays_us × cover_rates_per_s` (μ outer).
pub fn n_minus_one_sweep<R: RngCore + ?Sized>(
    base: &NMinusOneConfig,
    mean_delays_us: &[f64],
    cover_rates_per_s: &[f64],
    trials: usize,
    rng: &mut R,
) -> Result<Vec<NMinusOneReport>, AnonymityError> {
    let mut reports = Vec::new();
    for &mean_delay_us in mean_delays_us {
        for &node_cover_rate_per_s in cover_rates_per_s {
            let config = NMinusOneConfig { mean_delay_us, node_cover_rate_per_s, ..*base };
            reports.push(n_minus_one(&config, trials, rng)?);
        }
    }
    Ok(reports)
}
