//! The relayer's defence against being made to work for nothing (issue 29 item 5;
//! docs/design/relayer.md, "denial of service"). Pure: a state machine fed the time in
//! milliseconds by the service; no clock, no I/O.
//!
//! What a request may cost, cheapest first:
//! 1. **Before any proof check** ([`Guard::before_admission`]): a bundle refused recently
//!    (same request bytes) gets the same refusal again from memory; a nullifier seen spent
//!    on chain is refused from memory; a payment whose deadline lies further away than the
//!    horizon is refused (otherwise a refused bundle stays resendable for its whole life).
//! 2. **After the proof verified, before any chain call** ([`Guard::before_chain_work`]): each
//!    nullifier gets a few simulation rounds per window (a round is two `eth_simulateV1` runs
//!    and the pool views) — a payment spends two notes, and every round counts against **both**
//!    of its nullifiers, so neither swapping the inputs' order nor pairing one real note with a
//!    fresh dummy each time buys another round — and simulate-only requests draw from one
//!    global token bucket. The
//!    exit hands the relayer only the request body (docs/spec/messages.md §2.4): an anonymous
//!    client has no identity beyond its SURBs, so no per-client budget is possible; the bucket
//!    is global, and the service also gives simulate-only requests their own small concurrency
//!    budget so that submissions and quotes keep theirs.
//! 3. **After the work** ([`Guard::remember`]): a refusal that the same bytes would get again
//!    is remembered for a while, so resending costs nothing.
//!
//! Every rule that names a nullifier applies to each of a payment's two nullifiers: the spent
//! memory refuses a payment if either is remembered spent.
//!
//! Every memory is bounded (oldest entries go first) and expires.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use alloy_primitives::{B256, U256};

use crate::wire::Reason;

/// The limits, all with defaults ([`GuardConfig::default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardConfig {
    /// How long a refusal is remembered, milliseconds.
    pub refusal_memory_ms: u64,
    /// Refusals (and spent nullifiers) remembered at most.
    pub memory_entries: usize,
    /// The furthest a payment's deadline may lie in the future, seconds.
    pub max_deadline_horizon_s: u64,
    /// Simulation rounds per nullifier per window.
    pub per_nullifier_rounds: u32,
    /// The per-nullifier window, milliseconds.
    pub per_nullifier_window_ms: u64,
    /// Nullifiers tracked at most.
    pub nullifiers_tracked: usize,
    /// Simulate-only requests per second, all clients together.
    pub simulate_per_s: u32,
    /// Simulate-only requests allowed in a burst.
    pub simulate_burst: u32,
}

impl Default for GuardConfig {
    fn default() -> Self {
        Self {
            refusal_memory_ms: 300_000,
            memory_entries: 16_384,
            max_deadline_horizon_s: 3_600,
            per_nullifier_rounds: 4,
            per_nullifier_window_ms: 60_000,
            nullifiers_tracked: 16_384,
            simulate_per_s: 4,
            simulate_burst: 8,
        }
    }
}

/// A refusal the guard gives: its class, a message for the client, and for a remembered
/// `unprofitable` the fee that would have done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// The class of refusal.
    pub reason: Reason,
    /// For the client.
    pub detail: String,
    /// The smallest fee that would have been accepted (remembered `unprofitable` only).
    pub required_fee: Option<U256>,
}

fn denied(reason: Reason, detail: String) -> Denied {
    Denied { reason, detail, required_fee: None }
}

/// A bounded map whose entries expire: insertion order decides eviction.
#[derive(Debug)]
struct Expiring<K, V> {
    entries: HashMap<K, (V, u64, u64)>,
    order: VecDeque<(K, u64)>,
    next_seq: u64,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V> Expiring<K, V> {
    fn new(capacity: usize) -> Self {
        Self { entries: HashMap::new(), order: VecDeque::new(), next_seq: 0, capacity: capacity.max(1) }
    }

    fn get(&self, k: &K, now: u64) -> Option<&V> {
        self.entries.get(k).filter(|(_, expiry, _)| *expiry > now).map(|(v, _, _)| v)
    }

    fn get_mut(&mut self, k: &K, now: u64) -> Option<&mut V> {
        self.entries.get_mut(k).filter(|(_, expiry, _)| *expiry > now).map(|(v, _, _)| v)
    }

    fn insert(&mut self, k: K, v: V, expiry: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(k.clone(), (v, expiry, seq));
        self.order.push_back((k, seq));
        while self.entries.len() > self.capacity || self.order.len() > 2 * self.capacity {
            let Some((old, old_seq)) = self.order.pop_front() else { break };
            // Only the entry this order slot created (a re-inserted key has a newer slot).
            if self.entries.get(&old).is_some_and(|(_, _, s)| *s == old_seq) {
                self.entries.remove(&old);
            }
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// A token bucket: `rate` tokens per second up to `burst`.
#[derive(Clone, Debug)]
struct Bucket {
    /// Tokens × 1000 (milli-tokens), so a rate below one per millisecond adds up exactly.
    milli: u64,
    last_ms: u64,
    rate_per_s: u64,
    burst: u64,
}

impl Bucket {
    fn new(rate_per_s: u32, burst: u32) -> Self {
        let burst = u64::from(burst.max(1));
        Self { milli: burst * 1000, last_ms: 0, rate_per_s: u64::from(rate_per_s), burst }
    }

    fn take(&mut self, now_ms: u64) -> bool {
        let elapsed = now_ms.saturating_sub(self.last_ms);
        self.last_ms = self.last_ms.max(now_ms);
        self.milli = self.milli.saturating_add(elapsed.saturating_mul(self.rate_per_s)).min(self.burst * 1000);
        if self.milli >= 1000 {
            self.milli -= 1000;
            true
        } else {
            false
        }
    }
}

/// Simulation rounds of one nullifier in its current window.
#[derive(Clone, Copy, Debug)]
struct Rounds {
    window_start_ms: u64,
    used: u32,
}

/// What the guard counted (for tests, benchmarks and logs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// Requests refused from the refusal memory (no proof check, no chain call).
    pub remembered: u64,
    /// Refused for a deadline beyond the horizon.
    pub too_far: u64,
    /// Refused by the per-nullifier budget.
    pub nullifier_throttled: u64,
    /// Simulate-only requests refused by the global bucket.
    pub simulate_throttled: u64,
}

/// The guard's state. One per relayer.
#[derive(Debug)]
pub struct Guard {
    config: GuardConfig,
    refused: Expiring<B256, Denied>,
    spent: Expiring<U256, ()>,
    rounds: Expiring<U256, Rounds>,
    simulate: Bucket,
    stats: GuardStats,
}

/// Whether a refusal is a property of the request's bytes (the same bytes would be refused the
/// same way soon after), worth remembering. Refusals for the relayer's own state (busy, its
/// node failing, the bundle in flight, the guard's own throttles) are not.
pub fn remembered(reason: Reason) -> bool {
    !matches!(reason, Reason::Busy | Reason::Chain | Reason::Replayed | Reason::Throttled | Reason::PriceUnavailable)
}

impl Guard {
    /// A guard with these limits.
    pub fn new(config: GuardConfig) -> Self {
        Self {
            refused: Expiring::new(config.memory_entries),
            spent: Expiring::new(config.memory_entries),
            rounds: Expiring::new(config.nullifiers_tracked),
            simulate: Bucket::new(config.simulate_per_s, config.simulate_burst),
            stats: GuardStats::default(),
            config,
        }
    }

    /// The limits.
    pub fn config(&self) -> &GuardConfig {
        &self.config
    }

    /// What it counted.
    pub fn stats(&self) -> GuardStats {
        self.stats
    }

    /// Refusals and spent nullifiers remembered now (expired ones may still be counted until
    /// evicted).
    pub fn remembered_len(&self) -> usize {
        self.refused.len() + self.spent.len()
    }

    /// Checks made before the proof: `request` identifies the request's bytes (a hash of the
    /// whole body), `claimed` holds the two nullifiers and the deadline (unix seconds) the
    /// payment claims (not yet proven), `now_ms` is unix time in milliseconds.
    pub fn before_admission(
        &mut self,
        request: &B256,
        claimed: Option<([U256; 2], u64)>,
        now_ms: u64,
    ) -> Result<(), Denied> {
        if let Some(d) = self.refused.get(request, now_ms) {
            self.stats.remembered += 1;
            return Err(Denied {
                reason: d.reason,
                detail: format!("refused recently, not checked again: {}", d.detail),
                required_fee: d.required_fee,
            });
        }
        if let Some((nullifiers, deadline)) = claimed {
            if nullifiers.iter().any(|n| self.spent.get(n, now_ms).is_some()) {
                self.stats.remembered += 1;
                return Err(denied(Reason::Spent, "the payment's note is already spent".into()));
            }
            let horizon = now_ms / 1000 + self.config.max_deadline_horizon_s;
            if deadline > horizon {
                self.stats.too_far += 1;
                return Err(denied(
                    Reason::DeadlineTooFar,
                    format!(
                        "the payment's deadline is {} s away; this relayer accepts at most {} s",
                        deadline.saturating_sub(now_ms / 1000),
                        self.config.max_deadline_horizon_s
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks made after the proof verified for `nullifiers` (the payment's two), before the
    /// pool views and simulations: one simulation round of each nullifier's budget — refused if
    /// either has none left — and for a simulate-only request a token from the global bucket.
    pub fn before_chain_work(&mut self, nullifiers: [U256; 2], simulate_only: bool, now_ms: u64) -> Result<(), Denied> {
        let window = self.config.per_nullifier_window_ms;
        let limit = self.config.per_nullifier_rounds;
        for n in &nullifiers {
            if let Some(r) = self.rounds.get(n, now_ms)
                && r.used >= limit
            {
                self.stats.nullifier_throttled += 1;
                let wait = (r.window_start_ms + window).saturating_sub(now_ms).div_ceil(1000);
                return Err(denied(
                    Reason::Throttled,
                    format!(
                        "a note of this payment was simulated {limit} times in {} s; retry in {wait} s",
                        window / 1000
                    ),
                ));
            }
        }
        if simulate_only && !self.simulate.take(now_ms) {
            self.stats.simulate_throttled += 1;
            return Err(denied(
                Reason::Throttled,
                format!(
                    "simulate-only requests are limited to {} per second here; retry later",
                    self.config.simulate_per_s
                ),
            ));
        }
        for n in nullifiers {
            match self.rounds.get_mut(&n, now_ms) {
                Some(r) => r.used += 1,
                None => {
                    self.rounds.insert(n, Rounds { window_start_ms: now_ms, used: 1 }, now_ms.saturating_add(window))
                }
            }
        }
        Ok(())
    }

    /// Remembers `nullifiers` as spent (their bundle was mined with the payment through): any
    /// bundle claiming either is refused before its proof is checked.
    pub fn spent(&mut self, nullifiers: &[U256], now_ms: u64) {
        for n in nullifiers {
            self.spent.insert(*n, (), now_ms.saturating_add(self.config.refusal_memory_ms));
        }
    }

    /// Remembers a refusal of the request `request` (if [`remembered`]), and for a `spent`
    /// refusal the nullifiers found spent (proven: only passed after the proof verified, or
    /// read from the chain).
    pub fn remember(&mut self, request: &B256, spent: &[U256], refusal: &Denied, now_ms: u64) {
        let expiry = now_ms.saturating_add(self.config.refusal_memory_ms);
        if refusal.reason == Reason::Spent {
            for n in spent {
                self.spent.insert(*n, (), expiry);
            }
        }
        if remembered(refusal.reason) {
            self.refused.insert(*request, refusal.clone(), expiry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(i: u8) -> B256 {
        B256::repeat_byte(i)
    }

    /// A payment's two nullifiers: `i` and a partner no other test uses.
    fn pair(i: u64) -> [U256; 2] {
        [U256::from(i), U256::from(i) + (U256::from(1u64) << 200)]
    }

    #[test]
    fn a_refusal_is_remembered_until_it_expires() {
        let mut g = Guard::new(GuardConfig { refusal_memory_ms: 1_000, ..Default::default() });
        assert!(g.before_admission(&req(1), None, 0).is_ok());
        let unprofitable =
            Denied { reason: Reason::Unprofitable, detail: "nope".into(), required_fee: Some(U256::from(9u64)) };
        g.remember(&req(1), &[], &unprofitable, 0);
        let d = g.before_admission(&req(1), None, 999).unwrap_err();
        assert_eq!((d.reason, d.required_fee), (Reason::Unprofitable, Some(U256::from(9u64))));
        assert!(d.detail.contains("refused recently") && d.detail.contains("nope"), "{}", d.detail);
        assert!(g.before_admission(&req(2), None, 999).is_ok());
        assert!(g.before_admission(&req(1), None, 1_000).is_ok());
        assert_eq!(g.stats().remembered, 1);
    }

    #[test]
    fn the_relayers_own_troubles_are_not_remembered() {
        let mut g = Guard::new(GuardConfig::default());
        for reason in [Reason::Busy, Reason::Chain, Reason::Replayed, Reason::Throttled, Reason::PriceUnavailable] {
            g.remember(&req(1), &[], &denied(reason, String::new()), 0);
            assert!(g.before_admission(&req(1), None, 1).is_ok(), "{reason:?}");
        }
    }

    #[test]
    fn a_spent_nullifier_is_refused_for_any_bundle() {
        let mut g = Guard::new(GuardConfig::default());
        let n = U256::from(42u64);
        let other = U256::from(1_000u64);
        g.remember(&req(1), &[n], &denied(Reason::Spent, "spent".into()), 0);
        // Refused whichever input it is.
        assert_eq!(g.before_admission(&req(2), Some(([n, other], 10)), 5).unwrap_err().reason, Reason::Spent);
        assert_eq!(g.before_admission(&req(2), Some(([other, n], 10)), 5).unwrap_err().reason, Reason::Spent);
        assert!(g.before_admission(&req(3), Some(([U256::from(43u64), other], 10)), 5).is_ok());
        // Both nullifiers of a bundle seen included by the relayer itself.
        g.spent(&[U256::from(45u64), U256::from(46u64)], 0);
        for pair in [[U256::from(45u64), other], [other, U256::from(46u64)]] {
            assert_eq!(g.before_admission(&req(6), Some((pair, 10)), 5).unwrap_err().reason, Reason::Spent);
        }
        // Another refusal does not mark its nullifiers: the owner may fix the action.
        g.remember(&req(4), &[U256::from(44u64)], &denied(Reason::ActionReverts, String::new()), 0);
        assert!(g.before_admission(&req(5), Some(([U256::from(44u64), other], 10)), 5).is_ok());
    }

    #[test]
    fn memory_is_bounded_oldest_first() {
        let mut g = Guard::new(GuardConfig { memory_entries: 10, ..Default::default() });
        for i in 0..100u8 {
            g.remember(&req(i), &[], &denied(Reason::BadProof, String::new()), 0);
        }
        assert!(g.remembered_len() <= 10);
        assert!(g.before_admission(&req(99), None, 1).is_err());
        assert!(g.before_admission(&req(0), None, 1).is_ok());
    }

    #[test]
    fn deadline_beyond_the_horizon_is_refused() {
        let mut g = Guard::new(GuardConfig { max_deadline_horizon_s: 3_600, ..Default::default() });
        let now_ms = 1_000_000_000;
        assert!(g.before_admission(&req(1), Some((pair(1), 1_000_000 + 3_600)), now_ms).is_ok());
        let d = g.before_admission(&req(1), Some((pair(1), 1_000_000 + 3_601)), now_ms).unwrap_err();
        assert_eq!(d.reason, Reason::DeadlineTooFar);
        assert!(d.detail.contains("3601 s away"), "{}", d.detail);
        assert!(g.before_admission(&req(1), Some((pair(1), u64::MAX)), now_ms).is_err());
    }

    #[test]
    fn simulate_only_flood_on_one_nullifier_is_throttled() {
        let mut g = Guard::new(GuardConfig {
            per_nullifier_rounds: 3,
            per_nullifier_window_ms: 60_000,
            simulate_per_s: 1_000,
            simulate_burst: 1_000,
            ..Default::default()
        });
        let n = pair(7);
        let passed = (0..1_000u64).filter(|i| g.before_chain_work(n, true, *i).is_ok()).count();
        assert_eq!(passed, 3);
        assert_eq!(g.stats().nullifier_throttled, 997);
        let d = g.before_chain_work(n, false, 1_000).unwrap_err();
        assert_eq!(d.reason, Reason::Throttled);
        assert!(d.detail.contains("retry in 59 s"), "{}", d.detail);
        // Another nullifier is unaffected; the window ends.
        assert!(g.before_chain_work(pair(8), true, 1_000).is_ok());
        assert!(g.before_chain_work(n, true, 60_000).is_ok());
    }

    #[test]
    fn simulate_only_work_is_bounded_globally_and_refills() {
        let mut g = Guard::new(GuardConfig {
            simulate_per_s: 2,
            simulate_burst: 4,
            per_nullifier_rounds: 100,
            ..Default::default()
        });
        // A flood over many nullifiers in one instant: the burst passes, then nothing.
        let passed = (0..100u64).filter(|i| g.before_chain_work(pair(*i), true, 0).is_ok()).count();
        assert_eq!(passed, 4);
        // Submissions (not simulate-only) do not draw from the bucket.
        assert!(g.before_chain_work(pair(1_000), false, 0).is_ok());
        // Two per second come back.
        let later = (0..100u64).filter(|i| g.before_chain_work(pair(200 + *i), true, 1_000).is_ok()).count();
        assert_eq!(later, 2);
    }

    #[test]
    fn a_throttled_request_does_not_spend_the_nullifiers_budget() {
        let mut g = Guard::new(GuardConfig {
            simulate_per_s: 0,
            simulate_burst: 1,
            per_nullifier_rounds: 2,
            ..Default::default()
        });
        let n = pair(1);
        assert!(g.before_chain_work(n, true, 0).is_ok());
        assert!(g.before_chain_work(n, true, 0).is_err()); // bucket empty
        assert!(g.before_chain_work(n, false, 0).is_ok()); // the second round is still there
        assert!(g.before_chain_work(n, false, 0).is_err());
    }

    /// The attack: one note's budget bought again by reordering the inputs, or by pairing the
    /// note with a fresh dummy input (whose nullifier is random) in each new proof. Every round
    /// counts against both nullifiers, so the note's budget is the limit either way.
    #[test]
    fn a_notes_budget_cannot_be_bought_again_by_swapping_or_new_dummies() {
        let limit = 3;
        let mut g = Guard::new(GuardConfig {
            per_nullifier_rounds: limit,
            simulate_per_s: 1_000,
            simulate_burst: 1_000,
            ..Default::default()
        });
        let note = U256::from(77u64);
        let dummy = U256::from(78u64);
        // Rounds alternate the order of the same two inputs.
        let swapped = (0..100u64)
            .filter(|i| {
                let order = if i % 2 == 0 { [note, dummy] } else { [dummy, note] };
                g.before_chain_work(order, false, *i).is_ok()
            })
            .count();
        assert_eq!(swapped, limit as usize);
        // A fresh dummy per proof, the note first or second: no round left for the note.
        let mut g = Guard::new(GuardConfig { per_nullifier_rounds: limit, ..Default::default() });
        let fresh = (0..100u64)
            .filter(|i| {
                let d = U256::from(10_000 + i);
                let order = if i % 2 == 0 { [note, d] } else { [d, note] };
                g.before_chain_work(order, false, *i).is_ok()
            })
            .count();
        assert_eq!(fresh, limit as usize);
        assert_eq!(g.stats().nullifier_throttled, 100 - u64::from(limit));
        // The dummies refused with the note did not spend their own budgets.
        assert!(g.before_chain_work([U256::from(10_099u64), U256::from(5u64)], false, 100).is_ok());
    }
}
