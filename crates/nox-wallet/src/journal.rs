//! What this wallet handed over and has not yet seen land (issue 35: a command that broadcast
//! and then lost the receipt must not send again when re-run).
//!
//! Before a transaction leaves — a bundle sent to an exit's relayer, a direct `transact`, a
//! deposit — its command writes an [`Entry`] to `submitted.json` in the wallet directory: the
//! command's *intent* (what it asked for, e.g. `deposit 0.5 ETH to nox1… from 0x…`), and what
//! identifies the transaction on chain (its two nullifiers and deadline for a private
//! transaction, its hash once broadcast). The entry is removed once the outcome is known (a
//! receipt, or a refusal that sent nothing). When the answer is lost (the RPC endpoint or the
//! mixnet went away, a timeout), the entry stays, the command prints what it knows and exits
//! with the `nox` binary's exit status 3 (`EXIT_UNCONFIRMED`). Re-run, the same command finds its intent here and asks
//! the chain before anything else ([`Entry::status`] on what the chain says): mined (a receipt,
//! or the nullifiers spent) — it reports "already submitted as 0x…; mined in block N" and sends
//! nothing; still pending — it says so and sends nothing; impossible now (the proof's deadline
//! passed with the nullifiers unspent, or a broadcast transaction the chain no longer knows) —
//! the entry is dropped and the command proceeds.
//!
//! The decision ([`decide`]) is pure; the file is plain JSON, mode 0600 in the 0700 wallet
//! directory, and normally empty (an entry lives only while an answer is outstanding).

use alloy_primitives::{Address, B256, U256};
use serde::{Deserialize, Serialize};

/// How the error message of a command that handed a transaction over and lost the answer starts
/// (the `nox` binary maps it to its exit status 3, `EXIT_UNCONFIRMED`).
pub const UNCONFIRMED: &str = "UNCONFIRMED: ";

/// The journal's file name in the wallet directory.
pub const FILE: &str = "submitted.json";

/// One transaction handed over whose outcome this wallet has not seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// What the command asked for; a re-run of the same command has the same intent.
    pub intent: String,
    /// The transaction's hash, once known (a direct broadcast, or a relayer's `pending` answer).
    pub tx_hash: Option<B256>,
    /// A private transaction's nullifiers (spent on chain iff it landed).
    pub nullifiers: Option<[U256; 2]>,
    /// Unix second after which the pool refuses the private transaction (it can then never land).
    pub deadline: Option<u64>,
    /// Who was asked to submit it (a relayer), for the message.
    pub relayer: Option<Address>,
    /// The chain's latest block when it was handed over: where a search for it starts.
    pub from_block: u64,
}

/// The journal: the entries not yet resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// Outstanding entries, oldest first.
    pub entries: Vec<Entry>,
}

impl Journal {
    /// The outstanding entry for `intent`, if any.
    pub fn find(&self, intent: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.intent == intent)
    }

    /// Records `entry`, replacing an older entry of the same intent.
    pub fn record(&mut self, entry: Entry) {
        self.entries.retain(|e| e.intent != entry.intent);
        self.entries.push(entry);
    }

    /// Forgets the entry for `intent`.
    pub fn resolve(&mut self, intent: &str) {
        self.entries.retain(|e| e.intent != intent);
    }
}

/// What the chain says about an entry's transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Mined: a receipt (or the event that spent its nullifiers) in `block`.
    Mined {
        /// The transaction's hash.
        tx_hash: B256,
        /// Its block.
        block: u64,
        /// Whether it succeeded (a reverted direct transaction spent nothing).
        success: bool,
    },
    /// The node knows the transaction but it is not mined yet.
    Pending,
    /// Neither mined nor known to the node: `now` is the chain's latest block timestamp.
    Unknown {
        /// The chain's time.
        now: u64,
    },
}

/// What a re-run does with an outstanding entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// It landed: report it, send nothing, forget the entry.
    AlreadyDone {
        /// The transaction.
        tx_hash: B256,
        /// Its block.
        block: u64,
    },
    /// It may still land: send nothing, keep the entry.
    Wait(String),
    /// It cannot land any more (or a direct transaction reverted): forget it and send anew.
    SendAgain(String),
}

/// The pure rule: what a re-run does, given what the chain says about `entry`.
pub fn decide(entry: &Entry, seen: &Seen) -> Decision {
    match seen {
        Seen::Mined { tx_hash, block, success: true } => Decision::AlreadyDone { tx_hash: *tx_hash, block: *block },
        Seen::Mined { tx_hash, block, success: false } => {
            Decision::SendAgain(format!("the earlier transaction {tx_hash} reverted in block {block}: sending anew"))
        }
        Seen::Pending => Decision::Wait(match entry.tx_hash {
            Some(h) => format!("the earlier transaction {h} is still pending"),
            None => "the earlier transaction is still pending".to_owned(),
        }),
        Seen::Unknown { now } => match (entry.nullifiers, entry.deadline) {
            // A private transaction: it can land until its deadline, whoever holds it.
            (Some(_), Some(deadline)) if *now <= deadline => Decision::Wait(format!(
                "the earlier transaction{} {} is not on chain yet, and stays valid until unix time {deadline} \
                 (chain time now {now}); wait for it, or re-run after its deadline to send anew",
                entry.tx_hash.map(|h| format!(" {h}")).unwrap_or_default(),
                entry.relayer.map(|r| format!("handed to relayer {r}")).unwrap_or_else(|| "sent".to_owned()),
            )),
            (Some(_), Some(deadline)) => Decision::SendAgain(format!(
                "the earlier transaction's deadline (unix time {deadline}) passed with its notes unspent: it can no \
                 longer land; sending anew"
            )),
            _ => Decision::SendAgain(match entry.tx_hash {
                Some(h) => format!("the earlier transaction {h} is neither mined nor known to the node: sending anew"),
                None => "the earlier attempt never reached the chain: sending anew".to_owned(),
            }),
        },
    }
}

/// The message for a command whose answer was lost after it handed `entry` over.
pub fn lost(entry: &Entry, why: &str) -> String {
    let what = match (entry.tx_hash, entry.relayer) {
        (Some(h), _) => format!("transaction {h} was broadcast"),
        (None, Some(r)) => format!("the transaction was handed to relayer {r}"),
        (None, None) => "the transaction was sent".to_owned(),
    };
    format!(
        "{}{what}, but its receipt was lost ({why}); it may still land. Re-run the same command: it checks the \
         chain for this transaction and does not send it again",
        UNCONFIRMED
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(deadline: u64) -> Entry {
        Entry {
            intent: "send".into(),
            tx_hash: None,
            nullifiers: Some([U256::from(1), U256::from(2)]),
            deadline: Some(deadline),
            relayer: Some(Address::repeat_byte(7)),
            from_block: 5,
        }
    }

    #[test]
    fn a_mined_transaction_is_reported_not_sent_again() {
        let h = B256::repeat_byte(1);
        let d = decide(&private(100), &Seen::Mined { tx_hash: h, block: 9, success: true });
        assert_eq!(d, Decision::AlreadyDone { tx_hash: h, block: 9 });
    }

    #[test]
    fn a_private_transaction_before_its_deadline_is_waited_for_after_it_sent_anew() {
        assert!(matches!(decide(&private(100), &Seen::Unknown { now: 100 }), Decision::Wait(_)));
        assert!(matches!(decide(&private(100), &Seen::Unknown { now: 101 }), Decision::SendAgain(_)));
        assert!(matches!(decide(&private(100), &Seen::Pending), Decision::Wait(_)));
    }

    #[test]
    fn a_broadcast_the_node_forgot_or_a_revert_is_sent_anew() {
        let direct = Entry { tx_hash: Some(B256::repeat_byte(2)), nullifiers: None, deadline: None, ..private(0) };
        assert!(matches!(decide(&direct, &Seen::Unknown { now: 1 }), Decision::SendAgain(_)));
        assert!(matches!(decide(&direct, &Seen::Pending), Decision::Wait(_)));
        let reverted = Seen::Mined { tx_hash: B256::repeat_byte(2), block: 3, success: false };
        assert!(matches!(decide(&direct, &reverted), Decision::SendAgain(_)));
    }

    #[test]
    fn one_entry_per_intent() {
        let mut j = Journal::default();
        j.record(private(1));
        j.record(private(2));
        assert_eq!(j.entries.len(), 1);
        assert_eq!(j.find("send").and_then(|e| e.deadline), Some(2));
        j.resolve("send");
        assert!(j.find("send").is_none());
        let lost = lost(&private(1), "timeout");
        assert!(lost.starts_with(UNCONFIRMED) && lost.contains("relayer"), "{lost}");
    }
}
