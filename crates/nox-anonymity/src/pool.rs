//! The shielded pool's anonymity from what the **chain** shows: a pure model of the pool's
//! public history and two metrics over it (design: `docs/design/pool-anonymity.md`).
//!
//! What a chain observer sees of the pool (`docs/design/zk-payment.md` §5): every leaf the tree
//! receives, in order, with its time — a deposit's leaf with its **public amount**, a
//! transaction's two outputs with no amount — and, for every transaction, the root it proved
//! against (so the prefix of leaves it could spend), its time and its public `publicIn`,
//! `publicOut` and `fee`. Nullifiers are unlinkable to leaves, and output values are hidden.
//!
//! - [`spend_anonymity`]: the **anonymity set** of a spend — the leaves inserted before the root
//!   it used and not excluded by the adversary (e.g. its own deposits) — and the Shannon entropy
//!   of the adversary's posterior over that set under a timing prior.
//! - [`linking_attack`]: the **deposit → withdrawal linking attack** — for every withdrawal a
//!   posterior over the earlier deposits, by amount (exact, or within a tolerance after fees)
//!   and by time (a deposit→withdrawal delay prior); graded against ground truth by top-1
//!   accuracy and by the probability put on the withdrawer's own deposits.

use serde::{Deserialize, Serialize};

use crate::AnonymityError;

/// One leaf of the pool's tree, in insertion order, as the chain shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Leaf {
    /// When the note entered the pool (its deposit or transaction), seconds.
    pub time_s: f64,
    /// A deposit's public amount (`Deposited` or a `transact` with `publicIn`), or `None` for a
    /// transaction's output, whose value is hidden.
    pub deposit_amount: Option<u128>,
}

/// One private transaction as the chain shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// When it landed, seconds.
    pub time_s: f64,
    /// How many leaves the root it proved against contains (its inputs are among the first
    /// `root_leaves` leaves).
    pub root_leaves: usize,
    /// Value entering the pool with it.
    pub public_in: u128,
    /// Value leaving the pool to its recipient (> 0: a withdrawal).
    pub public_out: u128,
    /// The relayer's fee.
    pub fee: u128,
}

impl Spend {
    /// Value that left the pool's notes with this spend: `publicOut + fee − publicIn`
    /// (saturating; 0 for a deposit-only transaction).
    pub fn outflow(&self) -> u128 {
        self.public_out.saturating_add(self.fee).saturating_sub(self.public_in)
    }

    /// Whether the spend takes value out of the pool to a public address.
    pub fn is_withdrawal(&self) -> bool {
        self.public_out > 0
    }
}

/// The pool's public history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolHistory {
    /// Leaves in tree order.
    pub leaves: Vec<Leaf>,
    /// Transactions in time order.
    pub spends: Vec<Spend>,
}

impl PoolHistory {
    /// Checks the invariants the metrics rely on: leaf and spend times non-decreasing and
    /// finite, and every spend's root within the leaves inserted so far.
    pub fn validate(&self) -> Result<(), AnonymityError> {
        if self.leaves.iter().map(|l| l.time_s).chain(self.spends.iter().map(|s| s.time_s)).any(|t| !t.is_finite()) {
            return Err(AnonymityError::InvalidParameter("a time is not finite"));
        }
        for (index, pair) in self.leaves.windows(2).enumerate() {
            if pair[1].time_s < pair[0].time_s {
                return Err(AnonymityError::UnsortedEvents { index: index + 1 });
            }
        }
        for (index, pair) in self.spends.windows(2).enumerate() {
            if pair[1].time_s < pair[0].time_s {
                return Err(AnonymityError::UnsortedEvents { index: index + 1 });
            }
        }
        if self.spends.iter().any(|s| s.root_leaves > self.leaves.len()) {
            return Err(AnonymityError::InvalidParameter("a spend's root holds more leaves than the history"));
        }
        Ok(())
    }
}

/// Who owns what (never read by the adversary; used only to grade it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolTruth {
    /// Owner of each leaf, in [`PoolHistory::leaves`] order.
    pub leaf_owner: Vec<u32>,
    /// Owner of each spend, in [`PoolHistory::spends`] order.
    pub spend_owner: Vec<u32>,
}

/// The adversary's prior on the age of a spent note (spend time − leaf time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum TimingPrior {
    /// Every earlier leaf equally likely (timing ignored).
    Uniform,
    /// Age ~ Exp(mean): recent leaves more likely.
    Exponential {
        /// The mean age, seconds (> 0).
        mean_s: f64,
    },
}

impl TimingPrior {
    /// Log-likelihood of an age (−∞ for a negative age).
    pub fn log_likelihood(&self, age_s: f64) -> f64 {
        if age_s < 0.0 {
            return f64::NEG_INFINITY;
        }
        match *self {
            TimingPrior::Uniform => 0.0,
            TimingPrior::Exponential { mean_s } => -age_s / mean_s - mean_s.ln(),
        }
    }

    fn check(&self) -> Result<(), AnonymityError> {
        match *self {
            TimingPrior::Exponential { mean_s } if !(mean_s > 0.0 && mean_s.is_finite()) => {
                Err(AnonymityError::InvalidParameter("the timing prior's mean must be positive and finite"))
            }
            _ => Ok(()),
        }
    }
}

/// How the adversary matches a withdrawal's outflow (`publicOut + fee − publicIn`) to a
/// deposit's public amount.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AmountRule {
    /// Amounts ignored: timing only.
    Ignore,
    /// The deposit's amount equals the outflow exactly (a naive "withdraw what you deposited").
    Exact,
    /// The outflow is within `tolerance_ppm` parts per million below or above the deposit's
    /// amount (the user withdrew its deposit less a fee or a little change).
    Within {
        /// Relative tolerance, parts per million of the deposit amount.
        tolerance_ppm: u32,
    },
}

impl AmountRule {
    /// Whether a deposit of `deposit` matches an outflow of `outflow` under this rule.
    pub fn matches(&self, deposit: u128, outflow: u128) -> bool {
        match *self {
            AmountRule::Ignore => true,
            AmountRule::Exact => deposit == outflow,
            AmountRule::Within { tolerance_ppm } => {
                let diff = deposit.abs_diff(outflow);
                // diff / deposit ≤ ppm / 1e6, without overflow: compare in u128 with saturation.
                diff.saturating_mul(1_000_000) <= deposit.saturating_mul(u128::from(tolerance_ppm))
            }
        }
    }
}

/// What the adversary knows besides the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolAdversary {
    /// Its timing prior.
    pub prior: TimingPrior,
    /// Leaves it can rule out (its own deposits and outputs), sorted or not.
    pub excluded: Vec<usize>,
}

impl PoolAdversary {
    /// An adversary with `prior` that owns no leaves.
    pub fn new(prior: TimingPrior) -> Self {
        Self { prior, excluded: Vec::new() }
    }

    fn excluded_mask(&self, leaves: usize) -> Vec<bool> {
        let mut mask = vec![false; leaves];
        for &i in &self.excluded {
            if let Some(slot) = mask.get_mut(i) {
                *slot = true;
            }
        }
        mask
    }
}

/// The anonymity of one spend's inputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpendAnonymity {
    /// Leaves the input could be: inserted before the root it used, not excluded.
    pub set_size: usize,
    /// Shannon entropy (bits) of the adversary's posterior over the set under its timing prior
    /// (`log2(set_size)` under a uniform prior).
    pub entropy_bits: f64,
}

impl SpendAnonymity {
    /// The effective anonymity set `2^H`.
    pub fn effective_set(&self) -> f64 {
        self.entropy_bits.exp2()
    }
}

/// Normalised posterior from log-weights; returns `(probabilities, entropy_bits)`.
fn normalise(log_weights: &[f64]) -> (Vec<f64>, f64) {
    let max = log_weights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return (vec![0.0; log_weights.len()], 0.0);
    }
    let weights: Vec<f64> = log_weights.iter().map(|w| (w - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    let probabilities: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let h: f64 = probabilities.iter().filter(|p| **p > 0.0).map(|p| -p * p.log2()).sum();
    (probabilities, h.max(0.0))
}

/// The anonymity set of spend `spend` of `history` and its entropy under the adversary's prior
/// (each input considered alone: "which leaf is this input?").
pub fn spend_anonymity(
    history: &PoolHistory,
    spend: usize,
    adversary: &PoolAdversary,
) -> Result<SpendAnonymity, AnonymityError> {
    history.validate()?;
    adversary.prior.check()?;
    let s = history.spends.get(spend).ok_or(AnonymityError::InvalidParameter("no such spend"))?;
    let mask = adversary.excluded_mask(history.leaves.len());
    let log_weights: Vec<f64> = history.leaves[..s.root_leaves]
        .iter()
        .zip(&mask)
        .filter(|(_, excluded)| !**excluded)
        .map(|(leaf, _)| adversary.prior.log_likelihood(s.time_s - leaf.time_s))
        .filter(|w| w.is_finite())
        .collect();
    let (_, entropy_bits) = normalise(&log_weights);
    Ok(SpendAnonymity { set_size: log_weights.len(), entropy_bits })
}

/// The adversary's posterior over deposits for one withdrawal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithdrawalPosterior {
    /// Index of the withdrawal in [`PoolHistory::spends`].
    pub spend: usize,
    /// Whether any deposit matched by amount (if not, the adversary fell back to the deposits
    /// large enough to pay the outflow, or to all, weighted by timing).
    pub amount_matched: bool,
    /// `(leaf index, probability)` of every candidate deposit, summing to 1.
    pub probabilities: Vec<(usize, f64)>,
    /// Shannon entropy of the posterior, bits.
    pub entropy_bits: f64,
}

impl WithdrawalPosterior {
    /// Top-1 credit for a withdrawal owned by `owner`: `1/k` if one of the `k` tied most likely
    /// deposits is the owner's, else 0.
    pub fn top1_credit(&self, leaf_owner: &[u32], owner: u32) -> f64 {
        let best = self.probabilities.iter().map(|(_, p)| *p).fold(0.0, f64::max);
        let tied: Vec<usize> =
            self.probabilities.iter().filter(|(_, p)| *p >= best - 1e-12 && best > 0.0).map(|(i, _)| *i).collect();
        if tied.is_empty() {
            return 0.0;
        }
        let own = tied.iter().filter(|&&i| leaf_owner.get(i) == Some(&owner)).count();
        own as f64 / tied.len() as f64
    }

    /// Probability the posterior puts on the owner's deposits.
    pub fn probability_on(&self, leaf_owner: &[u32], owner: u32) -> f64 {
        self.probabilities.iter().filter(|(i, _)| leaf_owner.get(*i) == Some(&owner)).map(|(_, p)| p).sum()
    }
}

/// Posteriors for every withdrawal of `history`: candidates are the deposit leaves inserted
/// before the withdrawal's root and not excluded, filtered by `rule` (falling back to deposits
/// at least as large as the outflow, then to all, when none match), weighted by the prior.
pub fn withdrawal_posteriors(
    history: &PoolHistory,
    adversary: &PoolAdversary,
    rule: AmountRule,
) -> Result<Vec<WithdrawalPosterior>, AnonymityError> {
    posteriors_where(history, adversary, rule, |_| true)
}

/// [`withdrawal_posteriors`] for the withdrawals whose spend index satisfies `keep` only.
fn posteriors_where(
    history: &PoolHistory,
    adversary: &PoolAdversary,
    rule: AmountRule,
    keep: impl Fn(usize) -> bool,
) -> Result<Vec<WithdrawalPosterior>, AnonymityError> {
    history.validate()?;
    adversary.prior.check()?;
    let mask = adversary.excluded_mask(history.leaves.len());
    let deposits: Vec<(usize, f64, u128)> = history
        .leaves
        .iter()
        .enumerate()
        .filter(|(i, _)| !mask[*i])
        .filter_map(|(i, l)| l.deposit_amount.map(|a| (i, l.time_s, a)))
        .collect();
    let mut out = Vec::new();
    let mut candidates: Vec<usize> = Vec::new();
    for (index, s) in history.spends.iter().enumerate().filter(|(i, s)| s.is_withdrawal() && keep(*i)) {
        let outflow = s.outflow();
        let visible = deposits.partition_point(|(i, _, _)| *i < s.root_leaves);
        let visible = &deposits[..visible];
        candidates.clear();
        candidates.extend((0..visible.len()).filter(|&k| rule.matches(visible[k].2, outflow)));
        let amount_matched = !candidates.is_empty();
        if !amount_matched {
            candidates.extend((0..visible.len()).filter(|&k| visible[k].2 >= outflow));
            if candidates.is_empty() {
                candidates.extend(0..visible.len());
            }
        }
        let log_weights: Vec<f64> =
            candidates.iter().map(|&k| adversary.prior.log_likelihood(s.time_s - visible[k].1)).collect();
        let (probabilities, entropy_bits) = normalise(&log_weights);
        let probabilities =
            candidates.iter().zip(probabilities).filter(|(_, p)| *p > 0.0).map(|(&k, p)| (visible[k].0, p)).collect();
        out.push(WithdrawalPosterior { spend: index, amount_matched, probabilities, entropy_bits });
    }
    Ok(out)
}

/// The linking attack's score over all withdrawals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkingReport {
    /// Withdrawals scored.
    pub withdrawals: usize,
    /// Fraction whose outflow matched some deposit under the amount rule.
    pub amount_matched_fraction: f64,
    /// Mean top-1 credit: the adversary names one of the withdrawer's deposits.
    pub top1_accuracy: f64,
    /// Mean probability on the withdrawer's deposits.
    pub mean_probability_true: f64,
    /// Mean posterior entropy, bits.
    pub mean_entropy_bits: f64,
    /// Median posterior entropy, bits.
    pub median_entropy_bits: f64,
    /// Fraction of withdrawals with a point-mass posterior (entropy 0) on the right deposit:
    /// linked with certainty.
    pub certain_links: f64,
}

/// Runs the linking attack on every withdrawal and grades it with `truth`.
pub fn linking_attack(
    history: &PoolHistory,
    truth: &PoolTruth,
    adversary: &PoolAdversary,
    rule: AmountRule,
) -> Result<LinkingReport, AnonymityError> {
    linking_attack_sampled(history, truth, adversary, rule, 1)
}

/// [`linking_attack`] scoring every `stride`-th withdrawal only (by spend index), for large
/// simulated histories; the adversary still sees the whole history.
pub fn linking_attack_sampled(
    history: &PoolHistory,
    truth: &PoolTruth,
    adversary: &PoolAdversary,
    rule: AmountRule,
    stride: usize,
) -> Result<LinkingReport, AnonymityError> {
    if stride == 0 {
        return Err(AnonymityError::InvalidParameter("the sampling stride must be positive"));
    }
    if truth.leaf_owner.len() != history.leaves.len() {
        return Err(AnonymityError::LengthMismatch { left: truth.leaf_owner.len(), right: history.leaves.len() });
    }
    if truth.spend_owner.len() != history.spends.len() {
        return Err(AnonymityError::LengthMismatch { left: truth.spend_owner.len(), right: history.spends.len() });
    }
    let posteriors = posteriors_where(history, adversary, rule, |i| i % stride == 0)?;
    if posteriors.is_empty() {
        return Err(AnonymityError::Empty("no withdrawals"));
    }
    let n = posteriors.len() as f64;
    let (mut matched, mut top1, mut p_true, mut h_sum, mut certain) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut entropies = Vec::with_capacity(posteriors.len());
    for p in &posteriors {
        let owner = truth.spend_owner[p.spend];
        let credit = p.top1_credit(&truth.leaf_owner, owner);
        matched += f64::from(u8::from(p.amount_matched));
        top1 += credit;
        p_true += p.probability_on(&truth.leaf_owner, owner);
        h_sum += p.entropy_bits;
        if p.entropy_bits < 1e-9 && credit >= 1.0 {
            certain += 1.0;
        }
        entropies.push(p.entropy_bits);
    }
    entropies.sort_by(f64::total_cmp);
    let mid = entropies.len() / 2;
    let median = if entropies.len() % 2 == 1 { entropies[mid] } else { (entropies[mid - 1] + entropies[mid]) / 2.0 };
    Ok(LinkingReport {
        withdrawals: posteriors.len(),
        amount_matched_fraction: matched / n,
        top1_accuracy: top1 / n,
        mean_probability_true: p_true / n,
        mean_entropy_bits: h_sum / n,
        median_entropy_bits: median,
        certain_links: certain / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deposit(time_s: f64, amount: u128) -> Leaf {
        Leaf { time_s, deposit_amount: Some(amount) }
    }

    fn withdraw(time_s: f64, root_leaves: usize, public_out: u128, fee: u128) -> Spend {
        Spend { time_s, root_leaves, public_in: 0, public_out, fee }
    }

    /// Four users deposit; user 2 deposits a unique amount and withdraws it less a fee.
    fn unique_amount_history() -> (PoolHistory, PoolTruth) {
        let history = PoolHistory {
            leaves: vec![deposit(0.0, 100), deposit(10.0, 100), deposit(20.0, 1_234_567), deposit(30.0, 100)],
            spends: vec![withdraw(100.0, 4, 1_234_000, 567)],
        };
        (history, PoolTruth { leaf_owner: vec![0, 1, 2, 3], spend_owner: vec![2] })
    }

    #[test]
    fn a_unique_amount_is_linked_with_certainty() {
        let (history, truth) = unique_amount_history();
        let adversary = PoolAdversary::new(TimingPrior::Uniform);
        let report = linking_attack(&history, &truth, &adversary, AmountRule::Exact).unwrap();
        assert_eq!(report.top1_accuracy, 1.0);
        assert_eq!(report.certain_links, 1.0);
        assert_eq!(report.mean_entropy_bits, 0.0);
        // Without amounts, the same withdrawal hides among the four deposits.
        let blind = linking_attack(&history, &truth, &adversary, AmountRule::Ignore).unwrap();
        assert!((blind.mean_entropy_bits - 2.0).abs() < 1e-12);
        assert!((blind.top1_accuracy - 0.25).abs() < 1e-12);
    }

    #[test]
    fn the_tolerance_rule_links_a_withdrawal_of_the_deposit_less_a_hidden_fee() {
        // The user withdrew 99.9 % of its deposit and kept the rest as a private note: the exact
        // rule misses, the 0.5 % rule links it.
        let history = PoolHistory {
            leaves: vec![deposit(0.0, 8_000_000), deposit(1.0, 7_777_777), deposit(2.0, 9_000_000)],
            spends: vec![withdraw(50.0, 3, 7_770_000, 0)],
        };
        let truth = PoolTruth { leaf_owner: vec![0, 1, 2], spend_owner: vec![1] };
        let adversary = PoolAdversary::new(TimingPrior::Uniform);
        let exact = linking_attack(&history, &truth, &adversary, AmountRule::Exact).unwrap();
        assert_eq!(exact.amount_matched_fraction, 0.0);
        assert!((exact.top1_accuracy - 1.0 / 3.0).abs() < 1e-12);
        let near = linking_attack(&history, &truth, &adversary, AmountRule::Within { tolerance_ppm: 5_000 }).unwrap();
        assert_eq!(near.amount_matched_fraction, 1.0);
        assert_eq!(near.top1_accuracy, 1.0);
    }

    #[test]
    fn identical_denominations_are_not_linked_by_amount() {
        // Eight users deposit 1 ETH each; user 5 withdraws 1 ETH (0.99 + 0.01 fee).
        let leaves = (0..8).map(|i| deposit(f64::from(i), 1_000_000)).collect();
        let history = PoolHistory { leaves, spends: vec![withdraw(1_000.0, 8, 990_000, 10_000)] };
        let truth = PoolTruth { leaf_owner: (0..8).collect(), spend_owner: vec![5] };
        let adversary = PoolAdversary::new(TimingPrior::Uniform);
        let report = linking_attack(&history, &truth, &adversary, AmountRule::Exact).unwrap();
        assert_eq!(report.amount_matched_fraction, 1.0);
        assert!((report.mean_entropy_bits - 3.0).abs() < 1e-12);
        assert!((report.top1_accuracy - 1.0 / 8.0).abs() < 1e-12);
        assert!((report.mean_probability_true - 1.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn timing_links_a_quick_withdrawal_among_equal_amounts() {
        // Equal amounts, but the owner withdrew seconds after its deposit and the others
        // deposited days earlier: an exponential prior with a one-hour mean names it.
        let mut leaves: Vec<Leaf> = (0..9).map(|i| deposit(f64::from(i) * 86_400.0, 1_000_000)).collect();
        leaves.push(deposit(9.0 * 86_400.0, 1_000_000));
        let history = PoolHistory { leaves, spends: vec![withdraw(9.0 * 86_400.0 + 60.0, 10, 1_000_000, 0)] };
        let truth = PoolTruth { leaf_owner: (0..10).collect(), spend_owner: vec![9] };
        let hour = PoolAdversary::new(TimingPrior::Exponential { mean_s: 3_600.0 });
        let report = linking_attack(&history, &truth, &hour, AmountRule::Exact).unwrap();
        assert_eq!(report.top1_accuracy, 1.0);
        assert!(report.mean_probability_true > 0.99);
        let uniform = PoolAdversary::new(TimingPrior::Uniform);
        let blind = linking_attack(&history, &truth, &uniform, AmountRule::Exact).unwrap();
        assert!((blind.mean_probability_true - 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_set_grows_with_the_root_and_shrinks_with_exclusions() {
        let leaves: Vec<Leaf> = (0..64).map(|i| Leaf { time_s: f64::from(i), deposit_amount: None }).collect();
        let spends = vec![withdraw(100.0, 16, 1, 0), withdraw(100.0, 32, 1, 0), withdraw(100.0, 64, 1, 0)];
        let history = PoolHistory { leaves, spends };
        let uniform = PoolAdversary::new(TimingPrior::Uniform);
        let sets: Vec<SpendAnonymity> = (0..3).map(|i| spend_anonymity(&history, i, &uniform).unwrap()).collect();
        assert_eq!(sets.iter().map(|s| s.set_size).collect::<Vec<_>>(), vec![16, 32, 64]);
        for (s, bits) in sets.iter().zip([4.0, 5.0, 6.0]) {
            assert!((s.entropy_bits - bits).abs() < 1e-12);
        }
        // The adversary's own 16 leaves leave 48, and a timing prior lowers the entropy below
        // log2 of the set.
        let sybil = PoolAdversary { prior: TimingPrior::Uniform, excluded: (0..16).collect() };
        assert_eq!(spend_anonymity(&history, 2, &sybil).unwrap().set_size, 48);
        let timed = PoolAdversary::new(TimingPrior::Exponential { mean_s: 10.0 });
        let t = spend_anonymity(&history, 2, &timed).unwrap();
        assert_eq!(t.set_size, 64);
        assert!(t.entropy_bits < 6.0 - 0.5, "{}", t.entropy_bits);
    }

    #[test]
    fn a_deposit_after_the_root_is_not_a_candidate() {
        // The unique amount was deposited after the root the withdrawal proved against: it
        // cannot be its input, so the adversary must not link it.
        let history = PoolHistory {
            leaves: vec![deposit(0.0, 100), deposit(1.0, 100), deposit(2.0, 4_242)],
            spends: vec![withdraw(10.0, 2, 4_242, 0)],
        };
        let posteriors =
            withdrawal_posteriors(&history, &PoolAdversary::new(TimingPrior::Uniform), AmountRule::Exact).unwrap();
        assert!(!posteriors[0].amount_matched);
        assert!(posteriors[0].probabilities.iter().all(|(i, _)| *i < 2));
    }

    #[test]
    fn malformed_histories_are_refused() {
        let (mut history, truth) = unique_amount_history();
        history.spends[0].root_leaves = 5;
        let adversary = PoolAdversary::new(TimingPrior::Uniform);
        assert!(matches!(
            linking_attack(&history, &truth, &adversary, AmountRule::Exact),
            Err(AnonymityError::InvalidParameter(_))
        ));
        let (mut history, truth) = unique_amount_history();
        history.leaves[1].time_s = -1.0;
        assert_eq!(
            linking_attack(&history, &truth, &adversary, AmountRule::Exact),
            Err(AnonymityError::UnsortedEvents { index: 1 })
        );
        let (history, _) = unique_amount_history();
        let short = PoolTruth { leaf_owner: vec![0], spend_owner: vec![2] };
        assert!(matches!(
            linking_attack(&history, &short, &adversary, AmountRule::Exact),
            Err(AnonymityError::LengthMismatch { .. })
        ));
        let bad = PoolAdversary::new(TimingPrior::Exponential { mean_s: 0.0 });
        assert!(spend_anonymity(&history, 0, &bad).is_err());
    }
}
