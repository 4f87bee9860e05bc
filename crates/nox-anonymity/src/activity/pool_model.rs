//! The pool (mean-field) model of sender anonymity at scale: the adversary weights every
//! client send in the window before a delivery by the density of the end-to-end delay (see
//! the [parent module](super)).

use serde::Serialize;

use rand_core::RngCore;

use super::ActivityConfig;
use crate::AnonymityError;
use crate::random::{exponential_us, unit};

/// Sender anonymity at scale under the pool model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleReport {
    /// The population.
    pub config: ActivityConfig,
    /// Scored deliveries (one per trial).
    pub trials: usize,
    /// Mean entropy of the adversary's posterior over users (bits).
    pub mean_entropy_bits: f64,
    /// `log₂ N`.
    pub max_entropy_bits: f64,
    /// `mean H / log₂ N`.
    pub normalized_entropy: f64,
    /// Mean number of users sending at the delivery's time (the target included): who a GPA
    /// sees as possible senders.
    pub mean_users_sending: f64,
    /// `mean H / mean log₂(users sending)`: the entropy against the visibly active fraction.
    pub normalized_entropy_of_sending: f64,
    /// `2^mean H`.
    pub effective_anonymity_set: f64,
    /// Mean probability the adversary puts on the true sender.
    pub mean_true_sender_probability: f64,
    /// Fraction of deliveries whose true sender is the adversary's first guess (ties split).
    pub top1_accuracy: f64,
    /// `1/N`: a uniform guess over all users.
    pub chance_top1_all: f64,
    /// Mean of `1/(users sending)`: a uniform guess over the visibly active users.
    pub chance_top1_sending: f64,
}

/// Scores `trials` deliveries of a real request made by a user in a session, against the
/// population `config` in its stationary state, with the pool model (module documentation).
///
/// Per trial: the target's request leaves at `−D` (`D` the sampled delay) and is delivered at
/// 0; in `[−horizon, 0]` the target sends its other packets (Poisson at its sending rate) and
/// each other user, sending with [`ActivityConfig::sending_probability`], sends Poisson packets
/// at its rate. The adversary weights each send at `−s` by the delay density at `s` and sums
/// per user.
pub fn pool_sender_anonymity<R: RngCore + ?Sized>(
    config: &ActivityConfig,
    trials: usize,
    rng: &mut R,
) -> Result<ScaleReport, AnonymityError> {
    config.validate()?;
    if trials == 0 {
        return Err(AnonymityError::InvalidParameter("need trials ≥ 1"));
    }
    let horizon = config.horizon_s();
    // Only the users' sends carry weight: the SURB replies of `config` are in the network too,
    // but the observer attributes a reply (first seen leaving layer 0, as in the calibrated
    // simulator's capture view) to the users who sent into layer 0 just before it, in
    // proportion to their sends' delay weight — in the mean field a common factor on every
    // user's weight, which leaves the posterior as it is. Counting each reply as one more send
    // of some user instead overshoots the link-level simulator with replies by ~0.45 bits at
    // 100 users (`cargo run --release -p nox-anonymity --example pool_replies`), so it is not
    // done; the replies' effect at scale is the disclosure round counts' (`crate::disclosure`).
    let rate = config.send_rate_while_sending();
    let p_sending = config.sending_probability();
    let others = config.users - 1;
    let (mut entropy, mut log_sending, mut users_sending, mut chance_sending) = (0.0, 0.0, 0.0, 0.0);
    let (mut true_probability, mut top1) = (0.0, 0.0);
    let mut weights: Vec<f64> = Vec::new();
    for _ in 0..trials {
        weights.clear();
        let delay = config.sample_delay(rng);
        let mut target = config.delay_density(delay);
        target += poisson_weight(config, rng, rate, horizon);
        weights.push(target);
        let mut sending = 1u32;
        for _ in 0..others {
            if p_sending < 1.0 && unit(rng) >= p_sending {
                continue;
            }
            sending += 1;
            let w = poisson_weight(config, rng, rate, horizon);
            if w > 0.0 {
                weights.push(w);
            }
        }
        let total: f64 = weights.iter().sum();
        let h: f64 = weights.iter().map(|w| w / total).filter(|&p| p > 0.0).map(|p| -p * p.log2()).sum();
        entropy += h.max(0.0);
        let best = weights.iter().copied().fold(0.0, f64::max);
        let tied = weights.iter().filter(|&&w| w >= best * (1.0 - 1e-12)).count().max(1);
        if target >= best * (1.0 - 1e-12) {
            top1 += 1.0 / tied as f64;
        }
        true_probability += target / total;
        users_sending += f64::from(sending);
        log_sending += f64::from(sending).log2();
        chance_sending += 1.0 / f64::from(sending);
    }
    let n = trials as f64;
    let mean_entropy_bits = entropy / n;
    let max_entropy_bits = f64::from(config.users).log2();
    Ok(ScaleReport {
        config: *config,
        trials,
        mean_entropy_bits,
        max_entropy_bits,
        normalized_entropy: mean_entropy_bits / max_entropy_bits,
        mean_users_sending: users_sending / n,
        normalized_entropy_of_sending: if log_sending > 0.0 { entropy / log_sending } else { 0.0 },
        effective_anonymity_set: mean_entropy_bits.exp2(),
        mean_true_sender_probability: true_probability / n,
        top1_accuracy: top1 / n,
        chance_top1_all: 1.0 / f64::from(config.users),
        chance_top1_sending: chance_sending / n,
    })
}

/// The adversary's summed weight of a Poisson(`rate`) stream of sends on `[−horizon, 0)`.
fn poisson_weight<R: RngCore + ?Sized>(config: &ActivityConfig, rng: &mut R, rate: f64, horizon: f64) -> f64 {
    let mut weight = 0.0;
    let mut lag = exponential_us(rng, 1.0 / rate);
    while lag < horizon {
        weight += config.delay_density(lag);
        lag += exponential_us(rng, 1.0 / rate);
    }
    weight
}
