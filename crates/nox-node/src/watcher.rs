//! The slashing watcher's core (issue 33): it keeps, per (operator, epoch), the signed
//! epoch-key statement it saw in a descriptor, and when the same operator signs a statement
//! naming other keys for the same epoch, it holds the pair as evidence for
//! `NodeRegistry.slashEquivocation` (docs/spec/registry.md §5) until it has been submitted.
//!
//! Pure: no I/O, time passed in. The driver (`nox watch`) fetches the descriptors, submits the
//! evidence and reports each submission's outcome back. The rules:
//! - a statement is kept only if it verifies (the operator's signature under the registry's
//!   domain); evidence is made only of verified statements and checked again before it is
//!   handed out, so the watcher never pays gas for evidence the registry would refuse;
//! - memory is bounded: only epochs from [`KEEP_EPOCHS`] behind the current one to
//!   [`AHEAD_EPOCHS`] ahead are kept (older ones are dropped by [`Watcher::prune`]), and only
//!   operators the driver vouches for (the registry's members) are observed;
//! - one report per (operator, epoch); a failed submission (already slashed by someone else,
//!   out of gas, RPC down) is retried after [`RETRY_AFTER_SECS`], at most [`MAX_ATTEMPTS`]
//!   times, then given up; an operator that left the registry is given up at once.

use std::collections::{BTreeMap, BTreeSet};

use nox_chain::slash::{Equivocation, keys_hash, statement_is_valid};
use nox_chain::{Address, B256};
use nox_topology::SignedDescriptor;

/// Epochs behind the current one whose statements are kept (an equivocation found later than
/// this is not reported: the registry still accepts it, but memory would grow without bound).
pub const KEEP_EPOCHS: u32 = 3;
/// Epochs ahead of the current one whose statements are kept (nodes publish the next epoch's
/// key ahead of time); statements for later epochs are ignored.
pub const AHEAD_EPOCHS: u32 = 2;
/// Submissions of one piece of evidence before the watcher gives up on it.
pub const MAX_ATTEMPTS: u32 = 3;
/// Seconds between two submissions of the same evidence.
pub const RETRY_AFTER_SECS: u64 = 30;

/// A statement seen: the keys hash and the operator's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    keys_hash: B256,
    signature: [u8; 65],
}

/// Where a report stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportState {
    /// To be submitted at or after `not_before` (unix seconds).
    Due {
        /// Earliest submission time.
        not_before: u64,
    },
    /// Submitted and confirmed.
    Slashed,
    /// Not submitted any more: [`MAX_ATTEMPTS`] failed, or the operator left the registry.
    GaveUp,
}

#[derive(Clone, Debug)]
struct Report {
    evidence: Equivocation,
    attempts: u32,
    state: ReportState,
}

/// What [`Watcher::observe`] made of one descriptor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Statements kept for the first time.
    pub new: usize,
    /// Statements dropped because their signature is not the operator's.
    pub unverifiable: usize,
    /// Statements for epochs outside the kept window.
    pub out_of_window: usize,
    /// New equivocations found (each now a due report).
    pub equivocations: Vec<Equivocation>,
}

/// The watcher's state for one registry (chain id and address).
#[derive(Debug)]
pub struct Watcher {
    chain_id: u64,
    registry: Address,
    seen: BTreeMap<(Address, u32), Seen>,
    reports: BTreeMap<(Address, u32), Report>,
}

impl Watcher {
    /// A watcher of the registry `registry` on chain `chain_id`.
    pub fn new(chain_id: u64, registry: Address) -> Self {
        Self { chain_id, registry, seen: BTreeMap::new(), reports: BTreeMap::new() }
    }

    /// Looks at `descriptor`, which the registry says `operator` runs, at epoch `now_epoch`:
    /// keeps each verified statement in the window, and turns a second, different, verified
    /// statement for a kept (operator, epoch) into a due report.
    pub fn observe(
        &mut self,
        operator: Address,
        descriptor: &SignedDescriptor,
        now_epoch: u32,
        now_unix: u64,
    ) -> Observed {
        let mut observed = Observed::default();
        for key in &descriptor.descriptor.sphinx_keys {
            let epoch = key.epoch;
            if epoch.saturating_add(KEEP_EPOCHS) < now_epoch || epoch > now_epoch.saturating_add(AHEAD_EPOCHS) {
                observed.out_of_window += 1;
                continue;
            }
            let Some(statement) = descriptor.operator_statement(epoch) else { continue };
            let hash = keys_hash(&[key.key.as_bytes()]);
            if !statement_is_valid(self.chain_id, self.registry, operator, epoch, hash, &statement.signature) {
                observed.unverifiable += 1;
                continue;
            }
            let this = Seen { keys_hash: hash, signature: statement.signature };
            let Some(first) = self.seen.get(&(operator, epoch)) else {
                self.seen.insert((operator, epoch), this);
                observed.new += 1;
                continue;
            };
            if first.keys_hash == this.keys_hash || self.reports.contains_key(&(operator, epoch)) {
                continue;
            }
            let evidence = Equivocation {
                operator,
                epoch,
                a: (first.keys_hash, first.signature.to_vec().into()),
                b: (this.keys_hash, this.signature.to_vec().into()),
            };
            // Both statements verified above; checked again as the registry will check them.
            if evidence.verifies(self.chain_id, self.registry) {
                let state = ReportState::Due { not_before: now_unix };
                self.reports.insert((operator, epoch), Report { evidence: evidence.clone(), attempts: 0, state });
                observed.equivocations.push(evidence);
            }
        }
        observed
    }

    /// The evidence to submit now.
    pub fn due(&self, now_unix: u64) -> Vec<Equivocation> {
        self.reports
            .values()
            .filter(|r| matches!(r.state, ReportState::Due { not_before } if not_before <= now_unix))
            .map(|r| r.evidence.clone())
            .collect()
    }

    /// Records a submission's outcome and returns the report's new state (`None` if the
    /// evidence is not a report of this watcher).
    pub fn submitted(&mut self, evidence: &Equivocation, confirmed: bool, now_unix: u64) -> Option<ReportState> {
        let report = self.reports.get_mut(&(evidence.operator, evidence.epoch))?;
        report.attempts += 1;
        report.state = if confirmed {
            ReportState::Slashed
        } else if report.attempts >= MAX_ATTEMPTS {
            ReportState::GaveUp
        } else {
            ReportState::Due { not_before: now_unix.saturating_add(RETRY_AFTER_SECS) }
        };
        Some(report.state)
    }

    /// Gives up the due reports of operators that are no longer `registered` (slashed by
    /// someone else, or gone): their stake is no longer there to slash. Returns them.
    pub fn retain_registered(&mut self, registered: &BTreeSet<Address>) -> Vec<Equivocation> {
        let mut gone = Vec::new();
        for ((operator, _), report) in &mut self.reports {
            if matches!(report.state, ReportState::Due { .. }) && !registered.contains(operator) {
                report.state = ReportState::GaveUp;
                gone.push(report.evidence.clone());
            }
        }
        gone
    }

    /// Drops statements and reports of epochs more than [`KEEP_EPOCHS`] behind `now_epoch`.
    pub fn prune(&mut self, now_epoch: u32) {
        let keep = |epoch: u32| epoch.saturating_add(KEEP_EPOCHS) >= now_epoch;
        self.seen.retain(|(_, epoch), _| keep(*epoch));
        self.reports.retain(|(_, epoch), _| keep(*epoch));
    }

    /// Statements kept.
    pub fn statements(&self) -> usize {
        self.seen.len()
    }

    /// The state of the report on `operator` for `epoch`, if any.
    pub fn report(&self, operator: Address, epoch: u32) -> Option<ReportState> {
        self.reports.get(&(operator, epoch)).map(|r| r.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nox_chain::PrivateKeySigner;
    use nox_topology::{EpochKey, LayerCount, LinkPublicKey, NodeDescriptor, SigningKey};
    use rand_core::SeedableRng;

    const CHAIN: u64 = 31337;

    fn registry() -> Address {
        Address::repeat_byte(0xee)
    }

    fn operator(i: u8) -> PrivateKeySigner {
        nox_chain::deploy::signer(&hex::encode([i; 32])).unwrap()
    }

    /// A descriptor of the node `node` with a fresh key for each of `epochs` (seeded by
    /// `seed`), carrying `signer`'s statements.
    fn descriptor(node: u8, signer: &PrivateKeySigner, epochs: &[u32], seed: u64) -> SignedDescriptor {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let identity = SigningKey::from_bytes(&[node; 32]);
        let keys = epochs
            .iter()
            .map(|&epoch| EpochKey { epoch, key: nox_sphinx::SecretKey::generate(&mut rng).public_key() })
            .collect();
        let unsigned = NodeDescriptor::new(
            identity.verifying_key(),
            LinkPublicKey::from_secret(&[node.wrapping_add(1); 32]),
            "127.0.0.1:1".parse().unwrap(),
            LayerCount::new(3).unwrap(),
            0,
            keys,
        );
        let signed = unsigned.sign(&identity).unwrap();
        nox_chain::slash::attach_statements(signer, CHAIN, registry(), signed).unwrap()
    }

    /// Two descriptors naming different keys for one epoch, both signed by the operator: one
    /// report, whose evidence verifies as the registry checks it; the same pair seen again
    /// makes no second report; the same descriptor twice is no evidence.
    #[test]
    fn two_signed_key_sets_for_one_epoch_are_reported_once() {
        let op = operator(1);
        let mut w = Watcher::new(CHAIN, registry());
        let first = descriptor(7, &op, &[10, 11], 1);
        let seen = w.observe(op.address(), &first, 10, 1000);
        assert_eq!((seen.new, seen.equivocations.len()), (2, 0));
        assert!(w.observe(op.address(), &first, 10, 1001).equivocations.is_empty(), "same keys: no evidence");

        let other = descriptor(7, &op, &[10, 11], 2);
        let seen = w.observe(op.address(), &other, 10, 1002);
        assert_eq!(seen.equivocations.len(), 2, "both epochs' keys differ");
        let evidence = &seen.equivocations[0];
        assert_eq!((evidence.operator, evidence.epoch), (op.address(), 10));
        assert!(evidence.verifies(CHAIN, registry()));
        assert!(!evidence.verifies(CHAIN + 1, registry()), "bound to the chain");
        assert!(w.observe(op.address(), &other, 10, 1003).equivocations.is_empty(), "reported once");
        assert_eq!(w.due(1002).len(), 2);
    }

    /// Never slash on evidence that does not verify: statements signed by another key than
    /// the registered operator's, or for another registry, are dropped; a descriptor without
    /// statements is no evidence.
    #[test]
    fn statements_not_signed_by_the_operator_are_never_evidence() {
        let (op, stranger) = (operator(1), operator(2));
        let mut w = Watcher::new(CHAIN, registry());
        w.observe(op.address(), &descriptor(7, &op, &[10], 1), 10, 0);
        // Someone else signs a conflicting key "for" this operator: not the operator's word.
        let forged = descriptor(7, &stranger, &[10], 2);
        let seen = w.observe(op.address(), &forged, 10, 0);
        assert_eq!((seen.unverifiable, seen.equivocations.len()), (1, 0));
        // Signed by the operator, but for another registry's domain.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let identity = SigningKey::from_bytes(&[7; 32]);
        let key = nox_sphinx::SecretKey::generate(&mut rng).public_key();
        let unsigned = NodeDescriptor::new(
            identity.verifying_key(),
            LinkPublicKey::from_secret(&[8; 32]),
            "127.0.0.1:1".parse().unwrap(),
            LayerCount::new(3).unwrap(),
            0,
            vec![EpochKey { epoch: 10, key }],
        );
        let elsewhere = nox_chain::slash::attach_statements(
            &op,
            CHAIN,
            Address::repeat_byte(0x01),
            unsigned.clone().sign(&identity).unwrap(),
        )
        .unwrap();
        assert_eq!(w.observe(op.address(), &elsewhere, 10, 0).unverifiable, 1);
        // No statement at all.
        let bare = unsigned.sign(&identity).unwrap();
        assert_eq!(w.observe(op.address(), &bare, 10, 0), Observed::default());
        assert!(w.due(u64::MAX).is_empty());
        // Evidence whose two halves name the same keys is refused by `verifies`.
        let d = descriptor(7, &op, &[10], 1);
        let same = nox_chain::slash::evidence_from(op.address(), &d, &d);
        assert!(same.is_none());
    }

    /// Memory stays bounded: statements outside the epoch window are not kept, and pruning
    /// drops old epochs (statements and reports).
    #[test]
    fn old_and_far_future_epochs_are_dropped() {
        let op = operator(1);
        let mut w = Watcher::new(CHAIN, registry());
        let far = descriptor(7, &op, &[100 + AHEAD_EPOCHS + 1, 100 - KEEP_EPOCHS - 1], 1);
        assert_eq!(w.observe(op.address(), &far, 100, 0).out_of_window, 2);
        assert_eq!(w.statements(), 0);
        for epoch in 0..200u32 {
            w.observe(op.address(), &descriptor(7, &op, &[epoch], u64::from(epoch)), epoch, 0);
            w.observe(op.address(), &descriptor(7, &op, &[epoch], u64::from(epoch) + 5000), epoch, 0);
            w.prune(epoch);
            assert!(w.statements() <= (KEEP_EPOCHS + 1) as usize, "epoch {epoch}: {}", w.statements());
        }
        assert!(w.due(u64::MAX).len() <= (KEEP_EPOCHS + 1) as usize);
        assert!(w.report(op.address(), 0).is_none(), "old reports pruned");
        assert!(w.report(op.address(), 199).is_some());
    }

    /// A failed submission is retried after the pause, at most MAX_ATTEMPTS times, then given
    /// up; a confirmed one is done; an operator no longer registered is given up at once.
    #[test]
    fn failed_submissions_are_retried_a_bounded_number_of_times() {
        let (a, b) = (operator(1), operator(2));
        let mut w = Watcher::new(CHAIN, registry());
        for op in [&a, &b] {
            w.observe(op.address(), &descriptor(7, op, &[5], 1), 5, 0);
            w.observe(op.address(), &descriptor(7, op, &[5], 2), 5, 0);
        }
        let evidence = w.due(0).into_iter().find(|e| e.operator == a.address()).unwrap();
        let mut now = 0;
        for attempt in 1..=MAX_ATTEMPTS {
            assert!(w.due(now).contains(&evidence), "attempt {attempt} due");
            let state = w.submitted(&evidence, false, now).unwrap();
            if attempt < MAX_ATTEMPTS {
                assert_eq!(state, ReportState::Due { not_before: now + RETRY_AFTER_SECS });
                assert!(!w.due(now + RETRY_AFTER_SECS - 1).contains(&evidence), "not before the pause");
            } else {
                assert_eq!(state, ReportState::GaveUp);
            }
            now += RETRY_AFTER_SECS;
        }
        assert!(!w.due(u64::MAX).contains(&evidence), "given up");
        // b: slashed by someone else (no longer registered), then nothing is due.
        let gone = w.retain_registered(&BTreeSet::from([a.address()]));
        assert_eq!(gone.len(), 1);
        assert_eq!(w.report(b.address(), 5), Some(ReportState::GaveUp));
        assert!(w.due(u64::MAX).is_empty());
        // A confirmed submission is final.
        let mut w = Watcher::new(CHAIN, registry());
        w.observe(a.address(), &descriptor(7, &a, &[5], 1), 5, 0);
        let ev = w.observe(a.address(), &descriptor(7, &a, &[5], 2), 5, 0).equivocations.remove(0);
        assert_eq!(w.submitted(&ev, true, 0), Some(ReportState::Slashed));
        assert!(w.due(u64::MAX).is_empty());
    }
}
