//! A simulated pool history for [`crate::pool`]: N users deposit realistic amounts at Poisson
//! times and withdraw under a wallet policy. Pure: randomness injected, no clock.
//!
//! Model (stated in `docs/design/pool-anonymity.md` §3): deposit times are a Poisson process of
//! `users` arrivals over `horizon_s` (uniform order statistics); amounts are log-normal in
//! micro-units (1 unit = 10⁻⁶ of the asset), a fraction rounded to one significant digit
//! (0.3, 2, 50 …) as people do; each withdrawal pays a relayer fee; each transaction adds its
//! two outputs to the tree; the root a withdrawal proves against holds the leaves inserted up to
//! `insertion_lag_s` before it.

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::AnonymityError;
use crate::pool::{Leaf, PoolHistory, PoolTruth, Spend};
use crate::random::{exponential_us, unit};

/// What the wallet does between a deposit and its withdrawal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WithdrawalPolicy {
    /// Withdraw the whole deposit (less the fee) once, after the user's natural delay.
    Naive,
    /// Withdraw in round denominations (1, 2, 5 × 10^k units, at most
    /// [`PoolSimConfig::max_chunks`]), each at its own natural delay; the dust stays shielded.
    Denominations,
    /// Withdraw the whole deposit, after the natural delay plus a random wait.
    Wait,
    /// Denominations, each after the natural delay plus a random wait.
    DenominationsAndWait,
}

impl WithdrawalPolicy {
    /// All four, in report order.
    pub const ALL: [WithdrawalPolicy; 4] = [
        WithdrawalPolicy::Naive,
        WithdrawalPolicy::Denominations,
        WithdrawalPolicy::Wait,
        WithdrawalPolicy::DenominationsAndWait,
    ];

    /// Short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            WithdrawalPolicy::Naive => "naive",
            WithdrawalPolicy::Denominations => "denominations",
            WithdrawalPolicy::Wait => "wait",
            WithdrawalPolicy::DenominationsAndWait => "denominations+wait",
        }
    }

    fn splits(&self) -> bool {
        matches!(self, WithdrawalPolicy::Denominations | WithdrawalPolicy::DenominationsAndWait)
    }

    fn waits(&self) -> bool {
        matches!(self, WithdrawalPolicy::Wait | WithdrawalPolicy::DenominationsAndWait)
    }
}

/// Parameters of one simulated pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolSimConfig {
    /// Users, one deposit each.
    pub users: usize,
    /// Deposits arrive over this span, seconds.
    pub horizon_s: f64,
    /// Median deposit, micro-units.
    pub median_amount: f64,
    /// σ of ln(amount).
    pub amount_sigma: f64,
    /// Fraction of deposits rounded to one significant digit.
    pub round_fraction: f64,
    /// Mean relayer fee per withdrawal, micro-units (fee = mean/4 + Exp(3·mean/4)).
    pub mean_fee: f64,
    /// Mean of the user's natural deposit → withdrawal delay (exponential), seconds.
    pub natural_delay_s: f64,
    /// Mean of the wallet's added wait (exponential) under the waiting policies, seconds.
    pub wait_s: f64,
    /// Most withdrawals a deposit is split into under the denomination policies.
    pub max_chunks: usize,
    /// A root covers the leaves inserted this long before the withdrawal, seconds.
    pub insertion_lag_s: f64,
    /// The policy every user follows.
    pub policy: WithdrawalPolicy,
}

impl Default for PoolSimConfig {
    fn default() -> Self {
        Self {
            users: 1_000,
            horizon_s: 30.0 * 86_400.0,
            median_amount: 500_000.0, // 0.5 of the asset
            amount_sigma: 1.5,
            round_fraction: 0.5,
            mean_fee: 1_000.0, // 0.001 of the asset
            natural_delay_s: 86_400.0,
            wait_s: 7.0 * 86_400.0,
            max_chunks: 4,
            insertion_lag_s: 60.0,
            policy: WithdrawalPolicy::Naive,
        }
    }
}

impl PoolSimConfig {
    /// Mean deposit → withdrawal delay under the policy (what a well-informed adversary uses
    /// as its exponential timing prior).
    pub fn mean_delay_s(&self) -> f64 {
        self.natural_delay_s + if self.policy.waits() { self.wait_s } else { 0.0 }
    }

    fn check(&self) -> Result<(), AnonymityError> {
        let positive = |x: f64| x > 0.0 && x.is_finite();
        let non_negative = |x: f64| x >= 0.0 && x.is_finite();
        if self.users == 0 {
            return Err(AnonymityError::InvalidParameter("users must be positive"));
        }
        if !positive(self.horizon_s) || !positive(self.median_amount) || !positive(self.natural_delay_s) {
            return Err(AnonymityError::InvalidParameter("horizon, median amount and delay must be positive"));
        }
        if !(0.0..=1.0).contains(&self.round_fraction)
            || !non_negative(self.amount_sigma)
            || !non_negative(self.mean_fee)
        {
            return Err(AnonymityError::InvalidParameter("round fraction in [0, 1], σ and fee non-negative"));
        }
        if !non_negative(self.wait_s) || !non_negative(self.insertion_lag_s) || self.max_chunks == 0 {
            return Err(AnonymityError::InvalidParameter("wait and lag non-negative, at least one chunk"));
        }
        Ok(())
    }
}

/// A simulated history and its ground truth.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolSimulation {
    /// What the chain shows.
    pub history: PoolHistory,
    /// Who owns what.
    pub truth: PoolTruth,
}

/// `x` rounded to one significant digit (≥ 1).
pub fn round_to_one_digit(x: u128) -> u128 {
    if x < 10 {
        return x.max(1);
    }
    let mut scale = 1u128;
    while x / scale >= 10 {
        scale *= 10;
    }
    (x + scale / 2) / scale * scale
}

/// The greedy split of `amount` into at most `max_chunks` round denominations (1, 2, 5 × 10^k),
/// largest first; what is left stays in the pool. The only copy: the wallet's privacy advice
/// (`nox_wallet::privacy::denominations`) re-exports it, so it suggests what this model measures.
pub fn denominations(amount: u128, max_chunks: usize) -> Vec<u128> {
    let mut left = amount;
    let mut out = Vec::new();
    while out.len() < max_chunks && left > 0 {
        let mut scale = 1u128;
        while left / scale >= 10 {
            scale *= 10;
        }
        let lead = left / scale;
        let d = (if lead >= 5 {
            5
        } else if lead >= 2 {
            2
        } else {
            1
        }) * scale;
        out.push(d);
        left -= d;
    }
    out
}

/// A standard normal draw (Box–Muller).
fn normal<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    let u1 = 1.0 - unit(rng); // (0, 1]
    let u2 = unit(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

enum Event {
    Deposit { user: u32, amount: u128 },
    Withdraw { user: u32, out: u128, fee: u128 },
}

/// Simulates one pool under `config`.
pub fn simulate_pool<R: RngCore + ?Sized>(
    config: &PoolSimConfig,
    rng: &mut R,
) -> Result<PoolSimulation, AnonymityError> {
    config.check()?;
    let mut events: Vec<(f64, Event)> = Vec::new();
    for user in 0..config.users {
        let user = u32::try_from(user).map_err(|_| AnonymityError::InvalidParameter("too many users"))?;
        let t_deposit = unit(rng) * config.horizon_s;
        let raw = (config.median_amount.ln() + config.amount_sigma * normal(rng)).exp().max(1.0);
        let mut amount = raw.round() as u128;
        if unit(rng) < config.round_fraction {
            amount = round_to_one_digit(amount);
        }
        events.push((t_deposit, Event::Deposit { user, amount }));
        let chunks = if config.policy.splits() { denominations(amount, config.max_chunks) } else { vec![amount] };
        for chunk in chunks {
            let mut delay = exponential_us(rng, config.natural_delay_s);
            if config.policy.waits() {
                delay += exponential_us(rng, config.wait_s);
            }
            let fee = (config.mean_fee / 4.0 + exponential_us(rng, 0.75 * config.mean_fee)).round() as u128;
            // The fee comes out of the note: a chunk too small to pay it is not withdrawn.
            if chunk > fee {
                events.push((t_deposit + delay, Event::Withdraw { user, out: chunk - fee, fee }));
            }
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut history = PoolHistory::default();
    let mut truth = PoolTruth::default();
    for (time_s, event) in events {
        match event {
            Event::Deposit { user, amount } => {
                history.leaves.push(Leaf { time_s, deposit_amount: Some(amount) });
                truth.leaf_owner.push(user);
            }
            Event::Withdraw { user, out, fee } => {
                let cutoff = time_s - config.insertion_lag_s;
                let root_leaves = history.leaves.partition_point(|l| l.time_s <= cutoff);
                history.spends.push(Spend { time_s, root_leaves, public_in: 0, public_out: out, fee });
                truth.spend_owner.push(user);
                for _ in 0..2 {
                    history.leaves.push(Leaf { time_s, deposit_amount: None });
                    truth.leaf_owner.push(user);
                }
            }
        }
    }
    Ok(PoolSimulation { history, truth })
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::pool::{AmountRule, PoolAdversary, TimingPrior, linking_attack};

    #[test]
    fn round_numbers_and_denominations() {
        assert_eq!(round_to_one_digit(1_234_567), 1_000_000);
        assert_eq!(round_to_one_digit(96_000), 100_000);
        assert_eq!(round_to_one_digit(2_600), 3_000);
        assert_eq!(round_to_one_digit(7), 7);
        assert_eq!(denominations(1_234_567, 4), vec![1_000_000, 200_000, 20_000, 10_000]);
        assert_eq!(denominations(70, 4), vec![50, 20]);
        assert_eq!(denominations(0, 4), Vec::<u128>::new());
    }

    #[test]
    fn the_history_is_consistent() {
        let config = PoolSimConfig { users: 200, policy: WithdrawalPolicy::DenominationsAndWait, ..Default::default() };
        let sim = simulate_pool(&config, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
        sim.history.validate().unwrap();
        assert_eq!(sim.history.leaves.iter().filter(|l| l.deposit_amount.is_some()).count(), 200);
        assert_eq!(sim.history.leaves.len(), 200 + 2 * sim.history.spends.len());
        assert!(sim.history.spends.len() > 200, "splitting makes several withdrawals per deposit");
    }

    #[test]
    fn denominations_and_waiting_defeat_the_amount_attack_that_links_naive_users() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut top1 = Vec::new();
        for policy in WithdrawalPolicy::ALL {
            let config = PoolSimConfig { users: 300, policy, ..Default::default() };
            let sim = simulate_pool(&config, &mut rng).unwrap();
            let adversary = PoolAdversary::new(TimingPrior::Exponential { mean_s: config.mean_delay_s() });
            let r = linking_attack(&sim.history, &sim.truth, &adversary, AmountRule::Exact).unwrap();
            top1.push(r.top1_accuracy);
        }
        // Naive: the exact outflow names almost everyone (round amounts collide now and then).
        assert!(top1[0] > 0.8, "{top1:?}");
        // Round denominations collide with many deposits: far fewer links.
        assert!(top1[1] < top1[0] / 2.0, "{top1:?}");
        assert!(top1[3] < top1[0] / 2.0, "{top1:?}");
    }
}
