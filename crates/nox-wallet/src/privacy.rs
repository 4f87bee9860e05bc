//! Privacy advice before a withdrawal or a deposit, from what the chain will show
//! (`docs/design/pool-anonymity.md` §5). Pure: the caller passes the pool's public deposits with
//! their block times and the planned amounts; nothing here reads a clock.
//!
//! A deposit's amount is public, and so are a withdrawal's `publicOut` and `fee`. An observer
//! who finds one deposit whose amount equals a withdrawal's `publicOut + fee` links them;
//! `nox bench pool-anonymity` measures that this names the depositor of nearly every "naive"
//! withdrawal, and that timing alone narrows the rest when the withdrawal follows soon after
//! few other deposits. The warnings say which of these applies and what to do: split into round
//! denominations, wait, or deposit a round amount.

use std::fmt;

use crate::state::{Origin, PoolEvent, PoolView};

/// A deposit as the chain shows it: its block time and public amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicDeposit {
    /// Block time, Unix seconds.
    pub time_s: u64,
    /// Public amount.
    pub amount: u128,
}

/// A planned withdrawal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WithdrawalPlan {
    /// When it would land, Unix seconds.
    pub time_s: u64,
    /// `publicOut`: the value leaving to the recipient.
    pub public_out: u128,
    /// The relayer's fee (0 for a direct `transact`).
    pub fee: u128,
}

impl WithdrawalPlan {
    /// What the chain shows leaving the pool's notes: `publicOut + fee`.
    pub fn outflow(&self) -> u128 {
        self.public_out.saturating_add(self.fee)
    }
}

/// Thresholds of the advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdvicePolicy {
    /// Fewer deposits than this sharing an amount (or made since one's own deposit) is a crowd
    /// too small to hide in.
    pub min_crowd: usize,
    /// A withdrawal sooner than this after one's own deposit is "soon".
    pub min_wait_s: u64,
    /// Amounts within this many parts per million count as equal (fees, small change).
    pub tolerance_ppm: u32,
    /// Most withdrawals a suggested split makes.
    pub max_chunks: usize,
}

impl Default for AdvicePolicy {
    fn default() -> Self {
        Self { min_crowd: 20, min_wait_s: 86_400, tolerance_ppm: 10_000, max_chunks: 4 }
    }
}

impl AdvicePolicy {
    fn same_amount(&self, a: u128, b: u128) -> bool {
        a.abs_diff(b).saturating_mul(1_000_000) <= a.max(b).saturating_mul(u128::from(self.tolerance_ppm))
    }

    /// Earlier pool deposits (at or before `time_s`) whose amount equals `amount` (within the
    /// tolerance).
    fn crowd(&self, amount: u128, time_s: u64, pool: &[PublicDeposit]) -> usize {
        pool.iter().filter(|d| d.time_s <= time_s && self.same_amount(d.amount, amount)).count()
    }
}

/// One piece of advice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrivacyWarning {
    /// The withdrawal's `publicOut + fee` equals one of the wallet's own deposits, and few other
    /// deposits share that amount: an observer links the two.
    MatchesOwnDeposit {
        /// The matching deposit's amount.
        deposit_amount: u128,
        /// Seconds since that deposit.
        age_s: u64,
        /// Pool deposits with that amount so far (the wallet's own included).
        crowd: usize,
        /// All pool deposits so far.
        pool_deposits: usize,
        /// A split into round denominations to withdraw instead.
        suggested: Vec<u128>,
    },
    /// The withdrawal follows the wallet's latest deposit soon, with few deposits in between:
    /// timing alone narrows the depositor down to those.
    SoonAfterOwnDeposit {
        /// Seconds since the wallet's latest deposit.
        age_s: u64,
        /// Pool deposits made since (the crowd timing leaves).
        deposits_since: usize,
        /// The policy's wait.
        min_wait_s: u64,
    },
    /// A deposit of an amount few others have deposited: when this value later leaves the pool,
    /// its amount points back here.
    RareDepositAmount {
        /// The planned amount.
        amount: u128,
        /// Earlier deposits of that amount.
        crowd: usize,
        /// A round amount close to it.
        suggested: u128,
    },
}

impl PrivacyWarning {
    /// The advice in words, with amounts written by `show` (e.g. "0.5 ETH" from base units).
    pub fn describe(&self, show: impl Fn(u128) -> String) -> String {
        match self {
            PrivacyWarning::MatchesOwnDeposit { deposit_amount, age_s, crowd, pool_deposits, suggested } => format!(
                "this withdrawal (amount + fee) equals your deposit of {} made {} ago; only {crowd} of the pool's \
                 {pool_deposits} deposits have that amount, so an observer links them with probability ≥ 1/{crowd}: \
                 withdraw round denominations instead ({}) and keep the rest shielded",
                show(*deposit_amount),
                duration(*age_s),
                suggested.iter().map(|v| show(*v)).collect::<Vec<_>>().join(" + ")
            ),
            PrivacyWarning::SoonAfterOwnDeposit { age_s, deposits_since, min_wait_s } => format!(
                "your last deposit was {} ago and only {deposits_since} deposits were made since: timing narrows the \
                 depositor to those; wait at least {} (a random delay is better than a fixed one)",
                duration(*age_s),
                duration(*min_wait_s)
            ),
            PrivacyWarning::RareDepositAmount { amount, crowd, suggested } => format!(
                "only {crowd} earlier deposits have the amount {}: it will point back to this deposit when it leaves \
                 the pool; deposit a round amount such as {}",
                show(*amount),
                show(*suggested)
            ),
        }
    }
}

impl fmt::Display for PrivacyWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(|v| v.to_string()))
    }
}

/// `seconds` as "3 d 4 h", "2 h 5 min" or "40 s".
fn duration(seconds: u64) -> String {
    let (d, h, m) = (seconds / 86_400, seconds % 86_400 / 3_600, seconds % 3_600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// The greedy split of `amount` into at most `max_chunks` round denominations (1, 2, 5 × 10^k),
/// largest first (what is left stays shielded): the pool model's own
/// (`nox_anonymity::pool_sim`, whose simulation measures what it buys), so the advice suggests
/// exactly what was measured.
pub use nox_anonymity::pool_sim::denominations;

/// The largest power of ten ≤ `x` (1 for 0).
fn power_of_ten_below(x: u128) -> u128 {
    let mut scale = 1u128;
    while x / scale >= 10 {
        scale *= 10;
    }
    scale
}

/// Advice before a withdrawal: `own` are the wallet's deposits, `pool` all deposits of the
/// pool (the wallet's included), both with block times. Empty when nothing links it.
pub fn advise_withdrawal(
    plan: &WithdrawalPlan,
    own: &[PublicDeposit],
    pool: &[PublicDeposit],
    policy: &AdvicePolicy,
) -> Vec<PrivacyWarning> {
    let mut warnings = Vec::new();
    let outflow = plan.outflow();
    let pool_deposits = pool.iter().filter(|d| d.time_s <= plan.time_s).count();
    let matched = own
        .iter()
        .filter(|d| d.time_s <= plan.time_s && policy.same_amount(d.amount, outflow))
        .max_by_key(|d| d.time_s);
    if let Some(d) = matched {
        let crowd = policy.crowd(outflow, plan.time_s, pool).max(1);
        if crowd < policy.min_crowd {
            warnings.push(PrivacyWarning::MatchesOwnDeposit {
                deposit_amount: d.amount,
                age_s: plan.time_s - d.time_s,
                crowd,
                pool_deposits,
                suggested: denominations(plan.public_out, policy.max_chunks),
            });
        }
    }
    if let Some(latest) = own.iter().filter(|d| d.time_s <= plan.time_s).max_by_key(|d| d.time_s) {
        let age_s = plan.time_s - latest.time_s;
        let deposits_since = pool.iter().filter(|d| d.time_s > latest.time_s && d.time_s <= plan.time_s).count();
        if age_s < policy.min_wait_s && deposits_since < policy.min_crowd {
            warnings.push(PrivacyWarning::SoonAfterOwnDeposit { age_s, deposits_since, min_wait_s: policy.min_wait_s });
        }
    }
    warnings
}

/// Advice before depositing `amount` at `time_s`, given the pool's deposits so far.
pub fn advise_deposit(amount: u128, time_s: u64, pool: &[PublicDeposit], policy: &AdvicePolicy) -> Vec<PrivacyWarning> {
    let crowd = policy.crowd(amount, time_s, pool);
    if crowd >= policy.min_crowd {
        return Vec::new();
    }
    let scale = power_of_ten_below(amount);
    let suggested = amount / scale * scale;
    if suggested == amount && crowd > 0 {
        return Vec::new(); // already round and not alone: nothing better to suggest
    }
    vec![PrivacyWarning::RareDepositAmount { amount, crowd, suggested }]
}

/// The pool's deposits from its events with their block times (`(time_s, event)`).
pub fn pool_deposits<'a>(events: impl IntoIterator<Item = (u64, &'a PoolEvent)>) -> Vec<PublicDeposit> {
    events
        .into_iter()
        .filter_map(|(time_s, e)| match e {
            PoolEvent::Deposited { amount, .. } => Some(PublicDeposit { time_s, amount: *amount }),
            _ => None,
        })
        .collect()
}

/// The wallet's own deposits among the pool's events: `Deposited` events whose commitment is
/// one of `view`'s notes of origin [`Origin::Deposit`].
pub fn own_deposits<'a>(view: &PoolView, events: impl IntoIterator<Item = (u64, &'a PoolEvent)>) -> Vec<PublicDeposit> {
    events
        .into_iter()
        .filter_map(|(time_s, e)| match e {
            PoolEvent::Deposited { commitment, amount, .. }
                if view.notes().iter().any(|n| n.origin == Origin::Deposit && n.commitment == *commitment) =>
            {
                Some(PublicDeposit { time_s, amount: *amount })
            }
            _ => None,
        })
        .collect()
}

/// The deposit history of one asset that [`advise_withdrawal`] needs, from a synced view: the
/// wallet's own deposits (deposits whose note is one of the view's, [`Origin::Deposit`]) and all
/// the pool's deposits, each with a recorded block time ([`PoolView::set_deposit_time`];
/// deposits without one are left out).
pub fn deposit_history(view: &PoolView, asset: &ark_bn254::Fr) -> (Vec<PublicDeposit>, Vec<PublicDeposit>) {
    let timed = || {
        view.deposits()
            .iter()
            .filter(move |d| d.asset == *asset)
            .filter_map(|d| d.time_s.map(|time_s| (d, PublicDeposit { time_s, amount: d.amount })))
    };
    let own = timed()
        .filter(|(d, _)| view.notes().iter().any(|n| n.origin == Origin::Deposit && n.queue_index == d.queue_index))
        .map(|(_, p)| p)
        .collect();
    (own, timed().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3_600;
    const DAY: u64 = 86_400;

    fn dep(time_s: u64, amount: u128) -> PublicDeposit {
        PublicDeposit { time_s, amount }
    }

    /// A busy pool: 50 deposits of round amounts over 50 hours.
    fn busy_pool() -> Vec<PublicDeposit> {
        (0..50).map(|i| dep(i * HOUR, [1_000_000, 500_000, 2_000_000][i as usize % 3])).collect()
    }

    #[test]
    fn withdrawing_a_unique_deposit_less_the_fee_is_flagged() {
        let mine = dep(10 * HOUR, 1_234_567);
        let mut pool = busy_pool();
        pool.push(mine);
        let plan = WithdrawalPlan { time_s: 10 * DAY, public_out: 1_233_567, fee: 1_000 };
        let w = advise_withdrawal(&plan, &[mine], &pool, &AdvicePolicy::default());
        assert_eq!(w.len(), 1, "{w:?}");
        let PrivacyWarning::MatchesOwnDeposit { crowd, pool_deposits, suggested, age_s, .. } = &w[0] else {
            panic!("{w:?}")
        };
        assert_eq!((*crowd, *pool_deposits, *age_s), (1, 51, 10 * DAY - 10 * HOUR));
        assert_eq!(suggested, &vec![1_000_000, 200_000, 20_000, 10_000]);
        assert!(suggested.iter().sum::<u128>() <= plan.public_out);
        assert!(w[0].to_string().contains("1/1"), "{}", w[0]);
    }

    #[test]
    fn a_round_amount_many_deposited_is_not_flagged() {
        let mine = dep(10 * HOUR, 1_000_000);
        // 17 deposits of 1,000,000 in the busy pool, ours and 10 more: 28 share the amount.
        let mut pool_with_mine = busy_pool();
        pool_with_mine.push(mine);
        pool_with_mine.extend((0..10).map(|i| dep(60 * HOUR + i, 1_000_000)));
        let plan = WithdrawalPlan { time_s: 10 * DAY, public_out: 999_000, fee: 1_000 };
        assert!(advise_withdrawal(&plan, &[mine], &pool_with_mine, &AdvicePolicy::default()).is_empty());
    }

    #[test]
    fn a_quick_withdrawal_with_few_deposits_since_is_flagged_and_waiting_clears_it() {
        let mine = dep(49 * HOUR, 1_000_000);
        let mut pool = busy_pool();
        pool.push(mine);
        // 2 h later, and no deposit since (the busy pool ends at hour 49).
        let soon = WithdrawalPlan { time_s: 51 * HOUR, public_out: 300_000, fee: 1_000 };
        let w = advise_withdrawal(&soon, &[mine], &pool, &AdvicePolicy::default());
        assert!(matches!(w.as_slice(), [PrivacyWarning::SoonAfterOwnDeposit { deposits_since: 0, .. }]), "{w:?}");
        // After the wait and 25 more deposits, no warning.
        pool.extend((0..25).map(|i| dep(52 * HOUR + i * HOUR, 500_000)));
        let later = WithdrawalPlan { time_s: 49 * HOUR + 2 * DAY, ..soon };
        assert!(advise_withdrawal(&later, &[mine], &pool, &AdvicePolicy::default()).is_empty());
    }

    #[test]
    fn a_rare_deposit_amount_gets_a_round_suggestion() {
        let pool = busy_pool();
        let w = advise_deposit(1_234_567, 60 * HOUR, &pool, &AdvicePolicy::default());
        assert_eq!(w, vec![PrivacyWarning::RareDepositAmount { amount: 1_234_567, crowd: 0, suggested: 1_000_000 }]);
        // 1,000,000 has 17 earlier deposits (< 20) but is already round: nothing better to say.
        assert!(advise_deposit(1_000_000, 60 * HOUR, &pool, &AdvicePolicy::default()).is_empty());
    }

    #[test]
    fn own_and_pool_deposits_come_from_the_events() {
        use ark_bn254::Fr;
        let event = |c: u64, amount: u128| PoolEvent::Deposited {
            queue_index: c,
            commitment: Fr::from(c),
            asset: Fr::from(0u64),
            amount,
            memo: Vec::new(),
        };
        let events = [(100, event(1, 5)), (200, event(2, 7))];
        let pool = pool_deposits(events.iter().map(|(t, e)| (*t, e)));
        assert_eq!(pool, vec![dep(100, 5), dep(200, 7)]);
        // A fresh view owns none of them.
        assert!(own_deposits(&PoolView::new(), events.iter().map(|(t, e)| (*t, e))).is_empty());
    }
}
