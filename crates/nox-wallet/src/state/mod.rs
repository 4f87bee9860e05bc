//! The wallet's view of the pool, rebuilt from the pool's events alone (docs/spec/notes.md §5).
//!
//! Events are applied in chain order. Every commitment the pool queues (a deposit's, or either
//! output of a transaction) gets a queue index; a `BatchInserted` event moves the next `count`
//! queued commitments into the tree as one aligned subtree of [`BATCH_SIZE`] leaves (the rest of the subtree
//! stays zero). The view keeps every leaf, so it can produce the Merkle path of any of its notes.
//!
//! It recognises its notes by opening every published ciphertext with the viewing key
//! ([`memo::open`]): a deposit's memo and both output ciphertexts of every `Transacted` event. A
//! ciphertext that opens is accepted only if the opened note hashes to the published commitment
//! (and, for a deposit, its value is the deposited amount). One that the view tag marks as ours
//! but that does not open (tampered, or re-targeted to another asset), or that opens to a note
//! the commitment does not hold, is recorded as a [`CorruptNote`] addressed to this wallet — with
//! its queue index — never silently dropped. Zero-value notes (the padding output every
//! transaction carries) are recognised and not kept.
//!
//! A note is spent when a `Transacted` event carries its nullifier `Poseidon(sk, commitment,
//! leafIndex)`. Only the spending key computes nullifiers: a view built from a
//! [`ViewingKey`] alone ([`PoolView::new_viewing_only`]) sees incoming notes and their values but
//! never their spends, so its balances are "received", not "held" ([`PoolView::viewing_only`]).
//!
//! Events that contradict the view (a queue index out of sequence, a batch that does not start
//! where the tree ends, a root the leaves do not produce) are refused with
//! [`WalletError::Inconsistent`]; the caller then discards the view instead of persisting it.
//!
//! This module holds the view's types and its read-only accessors; `apply` the event
//! application (recognising notes, queueing, inserting batches); `persist` the view's file
//! format. The tree of inserted leaves is `tree`, the hex encoding of scalars `serde_words`.

use crate::{
    error::WalletError,
    keys::{Seed, ViewingKey},
    memo::{self, Opened},
};
use ark_bn254::Fr;
use nox_zk::{
    MerklePath, SpendingKey, field,
    insert::{InsertPublic, InsertWitness},
    poseidon,
};
use serde::{Deserialize, Serialize};
use serde_words::{opt_word, word};
use std::collections::BTreeMap;
use tree::BatchTree;

mod apply;
mod persist;
mod serde_words;
mod tree;

/// Leaves per inserted batch (an aligned subtree): the insertion circuit's
/// [`nox_zk::insert::BATCH_SIZE`] (32).
pub const BATCH_SIZE: u64 = nox_zk::insert::BATCH_SIZE as u64;

/// One pool event, as the pool contract emits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolEvent {
    /// `Deposited(queueIndex, commitment, asset, amount, memo)`.
    Deposited {
        /// Position in the pool's queue.
        queue_index: u64,
        /// The note commitment the pool computed.
        commitment: Fr,
        /// `uint160(asset)`, 0 for ETH.
        asset: Fr,
        /// Deposited amount.
        amount: u128,
        /// The note ciphertext for the owner (docs/spec/notes.md).
        memo: Vec<u8>,
    },
    /// `Transacted(firstQueueIndex, nullifiers, commitments, notes, asset, publicIn, publicOut,
    /// fee, …)`: one private transaction. Both commitments are queued, at `first_queue_index`
    /// and `first_queue_index + 1`.
    Transacted {
        /// Queue position of the first output.
        first_queue_index: u64,
        /// The two inputs' nullifiers (a zero-value dummy's is random).
        nullifiers: [Fr; 2],
        /// The two output commitments.
        commitments: [Fr; 2],
        /// The two output ciphertexts, in the order of `commitments`.
        notes: [Vec<u8>; 2],
        /// `uint160(asset)`, 0 for ETH.
        asset: Fr,
        /// Value that entered the pool with the transaction.
        public_in: u128,
        /// Value sent to the withdrawal recipient.
        public_out: u128,
        /// Value credited to the relayer.
        fee: u128,
    },
    /// `BatchInserted(startLeafIndex, firstQueueIndex, count, newRoot)`.
    BatchInserted {
        /// Tree position of the batch's first leaf (a multiple of [`BATCH_SIZE`]).
        start_leaf: u64,
        /// Queue index of the batch's first leaf.
        first_queue: u64,
        /// Number of queued leaves inserted (1..=[`BATCH_SIZE`]).
        count: u64,
        /// The pool's root after the batch.
        new_root: Fr,
    },
}

/// Where one of the wallet's notes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// A deposit (ours or a payer's) whose memo opened with our viewing key.
    Deposit,
    /// An output of somebody else's transaction: a payment to this wallet.
    Received,
    /// An output of one of this wallet's own transactions (change, a split's or a join's
    /// output): the same event spent one of our notes.
    Own,
}

/// One of the wallet's notes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedNote {
    /// Value in the asset's smallest unit (never 0: zero-value notes are not kept).
    pub value: u128,
    /// `uint160(asset)` as a word, 0 for ETH.
    #[serde(with = "word")]
    pub asset: Fr,
    /// The note's blinding (secret).
    #[serde(with = "word")]
    pub blinding: Fr,
    /// Its commitment.
    #[serde(with = "word")]
    pub commitment: Fr,
    /// Position in the pool's queue.
    pub queue_index: u64,
    /// Position in the tree, once inserted.
    pub leaf_index: Option<u64>,
    /// Its nullifier, once inserted (a full view only: it needs the spending key).
    #[serde(with = "opt_word")]
    pub nullifier: Option<Fr>,
    /// Whether a `Transacted` event carried its nullifier.
    pub spent: bool,
    /// Deposit, payment received, or own output.
    pub origin: Origin,
}

impl OwnedNote {
    /// Inserted and unspent: a transaction can spend it now.
    pub fn is_spendable(&self) -> bool {
        self.leaf_index.is_some() && !self.spent
    }
}

/// Why a ciphertext addressed to this wallet was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CorruptReason {
    /// The view tag says "ours" but the authenticated decryption failed: the ciphertext was
    /// modified, or made for another asset.
    Undecryptable,
    /// It opened, but the note it describes does not hash to the published commitment (or a
    /// deposit's value is not the deposited amount): a lying sender; the value is not ours.
    CommitmentMismatch,
}

/// A ciphertext addressed to this wallet that does not give a spendable note: reported so the
/// user can ask the sender, never silently dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorruptNote {
    /// Queue index of the commitment it was published with.
    pub queue_index: u64,
    /// That commitment.
    #[serde(with = "word")]
    pub commitment: Fr,
    /// `uint160(asset)` of the event.
    #[serde(with = "word")]
    pub asset: Fr,
    /// What was wrong.
    pub reason: CorruptReason,
    /// The value the ciphertext claimed, when it opened.
    pub claimed_value: Option<u128>,
}

/// Balance of one asset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    /// Unspent notes in the tree: spendable now.
    pub spendable: u128,
    /// Unspent notes still queued: spendable after their batch is inserted.
    pub pending: u128,
    /// The largest single spendable note.
    pub largest: u128,
    /// The largest sum of two spendable notes (one transaction spends at most two).
    pub largest_pair: u128,
    /// Number of unspent notes, spendable or pending.
    pub notes: usize,
}

/// Which keys the view was built with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
enum Mode {
    /// The seed: sees notes and their spends.
    #[default]
    Full,
    /// A viewing key: sees incoming notes only.
    ViewingOnly,
}

/// The keys one scan works with, derived once per [`PoolView::apply_all`] call.
struct Keys<'a> {
    vk: KeyRef<'a>,
    sk: Option<SpendingKey>,
}

/// A viewing key derived for the scan, or the caller's.
enum KeyRef<'a> {
    Derived(ViewingKey),
    Given(&'a ViewingKey),
}

impl<'a> Keys<'a> {
    fn full(seed: &Seed) -> Result<Self, WalletError> {
        let sk = seed.spending_key();
        Ok(Keys { vk: KeyRef::Derived(seed.viewing_key()?), sk: Some(sk) })
    }

    fn viewing(vk: &'a ViewingKey) -> Self {
        Keys { vk: KeyRef::Given(vk), sk: None }
    }

    fn vk(&self) -> &ViewingKey {
        match &self.vk {
            KeyRef::Derived(k) => k,
            KeyRef::Given(k) => k,
        }
    }
}

/// A pool deposit as the chain shows it (every deposit, not only this wallet's): what the
/// privacy advice ([`crate::privacy`]) compares a withdrawal with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositSeen {
    /// Position in the pool's queue.
    pub queue_index: u64,
    /// `uint160(asset)` as a word, 0 for ETH.
    #[serde(with = "word")]
    pub asset: Fr,
    /// The public amount.
    pub amount: u128,
    /// Its block's time (Unix seconds), once the caller recorded it
    /// ([`PoolView::set_deposit_time`]).
    pub time_s: Option<u64>,
}

/// The wallet's view of one pool.
///
/// Feed it every pool event in chain order ([`PoolView::apply`] / [`PoolView::apply_all`]);
/// read balances ([`PoolView::balance`]), notes and corrupt notes; prepare transactions
/// ([`PoolView::prepare_transaction`], [`PoolView::prepare_join`], in [`crate::spend`]).
#[derive(Clone, Debug)]
pub struct PoolView {
    /// Last block whose events were applied (the caller's bookkeeping).
    pub last_block: u64,
    mode: Mode,
    queue: BTreeMap<u64, Fr>,
    next_queue: u64,
    tree: BatchTree,
    root: Fr,
    notes: Vec<OwnedNote>,
    corrupt: Vec<CorruptNote>,
    deposits: Vec<DepositSeen>,
    deposits_from_block: u64,
}

impl Default for PoolView {
    fn default() -> Self {
        Self::new()
    }
}

impl PoolView {
    /// An empty full view (the pool at deployment), to be fed with the seed.
    pub fn new() -> Self {
        let tree = BatchTree::new();
        let root = tree.root();
        PoolView {
            last_block: 0,
            mode: Mode::Full,
            queue: BTreeMap::new(),
            next_queue: 0,
            tree,
            root,
            notes: Vec::new(),
            corrupt: Vec::new(),
            deposits: Vec::new(),
            deposits_from_block: 0,
        }
    }

    /// Every pool deposit seen, in queue order (see [`PoolView::deposits_from_block`]).
    pub fn deposits(&self) -> &[DepositSeen] {
        &self.deposits
    }

    /// The first block whose deposits [`PoolView::deposits`] holds: 0 for a view that saw the
    /// pool's whole history; later for a view restored from a file of format 2, which kept no
    /// deposit history (delete the state file and resync for all of it).
    pub fn deposits_from_block(&self) -> u64 {
        self.deposits_from_block
    }

    /// Records the block time of the deposit at `queue_index` (read by the caller with the
    /// event's block). Unknown queue indexes are ignored.
    pub fn set_deposit_time(&mut self, queue_index: u64, time_s: u64) {
        if let Some(d) = self.deposits.iter_mut().rev().find(|d| d.queue_index == queue_index) {
            d.time_s = Some(time_s);
        }
    }

    /// An empty view fed with a [`ViewingKey`] only ([`PoolView::apply_viewing`]): it finds
    /// every note sent to the address, but cannot tell which were spent.
    pub fn new_viewing_only() -> Self {
        PoolView { mode: Mode::ViewingOnly, ..Self::new() }
    }

    /// Whether this view was built from a viewing key alone (no spends seen; nothing spendable).
    pub fn viewing_only(&self) -> bool {
        self.mode == Mode::ViewingOnly
    }

    /// The pool root after the last applied batch.
    pub fn root(&self) -> Fr {
        self.root
    }

    /// The Merkle path of leaf `index` under [`PoolView::root`].
    pub fn path(&self, index: u64) -> Result<MerklePath, WalletError> {
        self.tree.path(index)
    }

    /// The insertion statement for the next batch (`leaves`: the first 1 to [`BATCH_SIZE`] queued
    /// commitments, [`PoolView::queued`]) and its witness, for `nox_zk::insert::prove`: the
    /// view's tree is not changed (it changes when the pool's `BatchInserted` event arrives).
    pub fn insert_statement(&self, leaves: &[Fr]) -> Result<(InsertPublic, InsertWitness), WalletError> {
        if leaves.is_empty() || leaves.len() > BATCH_SIZE as usize {
            return Err(WalletError::BadRequest("a batch inserts 1 to BATCH_SIZE leaves"));
        }
        let mut batch = [Fr::from(0u64); BATCH_SIZE as usize];
        batch[..leaves.len()].copy_from_slice(leaves);
        let start = self.tree.len();
        let siblings = self.tree.batch_siblings(start)?;
        let mut layer = batch.to_vec();
        while layer.len() > 1 {
            layer = layer.chunks_exact(2).map(|c| poseidon::hash(&[c[0], c[1]])).collect::<Result<_, _>>()?;
        }
        let mut root = layer[0];
        let mut pos = start / BATCH_SIZE;
        for sib in &siblings {
            root = if pos & 1 == 1 { poseidon::hash(&[*sib, root])? } else { poseidon::hash(&[root, *sib])? };
            pos >>= 1;
        }
        let public = InsertPublic { old_root: self.root, new_root: root, start_index: start, leaves: batch };
        Ok((public, InsertWitness { siblings }))
    }

    /// The wallet's notes, spent or not, in queue order.
    pub fn notes(&self) -> &[OwnedNote] {
        &self.notes
    }

    /// Ciphertexts addressed to this wallet that gave no note (tampered, re-targeted, or lying
    /// about their value), in queue order.
    pub fn corrupt_notes(&self) -> &[CorruptNote] {
        &self.corrupt
    }

    /// Commitments queued but not yet inserted, in queue order.
    pub fn queued(&self) -> impl Iterator<Item = (u64, Fr)> + '_ {
        self.queue.iter().map(|(i, c)| (*i, *c))
    }

    /// Number of commitments the pool has queued so far (the next queue index).
    pub fn queue_len(&self) -> u64 {
        self.next_queue
    }

    /// Tree position where the next batch starts.
    pub fn next_leaf(&self) -> u64 {
        self.tree.len()
    }

    /// Balance of `asset`. In a viewing-only view, "spendable" means received and inserted.
    pub fn balance(&self, asset: &Fr) -> Balance {
        let mut b = Balance::default();
        let mut top = [0u128; 2];
        for n in self.notes.iter().filter(|n| !n.spent && n.asset == *asset) {
            b.notes += 1;
            if n.leaf_index.is_some() {
                b.spendable = b.spendable.saturating_add(n.value);
                if n.value > top[0] {
                    top = [n.value, top[0]];
                } else if n.value > top[1] {
                    top[1] = n.value;
                }
            } else {
                b.pending = b.pending.saturating_add(n.value);
            }
        }
        b.largest = top[0];
        b.largest_pair = top[0].saturating_add(top[1]);
        b
    }

    /// Every asset the wallet holds or held a note of.
    pub fn assets(&self) -> Vec<Fr> {
        let mut v: Vec<Fr> = Vec::new();
        for n in &self.notes {
            if !v.contains(&n.asset) {
                v.push(n.asset);
            }
        }
        v
    }
}
