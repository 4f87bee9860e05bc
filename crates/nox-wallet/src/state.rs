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

    fn enqueue(&mut self, queue_index: u64, commitment: Fr) -> Result<(), WalletError> {
        if queue_index != self.next_queue {
            return Err(WalletError::Inconsistent(format!(
                "queue index {queue_index} where {} was expected (missed or repeated events)",
                self.next_queue
            )));
        }
        self.queue.insert(queue_index, commitment);
        self.next_queue += 1;
        Ok(())
    }

    /// Applies one event with the seed's keys. On error the view must be discarded (it may be
    /// half-updated). Prefer [`PoolView::apply_all`] for many events: it derives the keys once.
    pub fn apply(&mut self, seed: &Seed, event: &PoolEvent) -> Result<(), WalletError> {
        self.apply_all(seed, std::slice::from_ref(event))
    }

    /// Applies events in chain order with the seed's keys (a full view only).
    pub fn apply_all<'a>(
        &mut self,
        seed: &Seed,
        events: impl IntoIterator<Item = &'a PoolEvent>,
    ) -> Result<(), WalletError> {
        if self.mode != Mode::Full {
            return Err(WalletError::ViewMode("a viewing-only view is fed with the viewing key, not the seed"));
        }
        let keys = Keys::full(seed)?;
        events.into_iter().try_for_each(|e| self.apply_with(&keys, e))
    }

    /// Applies events in chain order with a viewing key (a view made by
    /// [`PoolView::new_viewing_only`]): incoming notes, no spends.
    pub fn apply_viewing<'a>(
        &mut self,
        vk: &ViewingKey,
        events: impl IntoIterator<Item = &'a PoolEvent>,
    ) -> Result<(), WalletError> {
        if self.mode != Mode::ViewingOnly {
            return Err(WalletError::ViewMode("a full view is fed with the seed: a viewing key would miss spends"));
        }
        let keys = Keys::viewing(vk);
        events.into_iter().try_for_each(|e| self.apply_with(&keys, e))
    }

    fn apply_with(&mut self, keys: &Keys<'_>, event: &PoolEvent) -> Result<(), WalletError> {
        match event {
            PoolEvent::Deposited { queue_index, commitment, asset, amount, memo } => {
                self.enqueue(*queue_index, *commitment)?;
                self.deposits.push(DepositSeen {
                    queue_index: *queue_index,
                    asset: *asset,
                    amount: *amount,
                    time_s: None,
                });
                self.recognise(keys, *queue_index, *commitment, *asset, memo, Some(*amount), Origin::Deposit)?;
            }
            PoolEvent::Transacted { first_queue_index, nullifiers, commitments, notes, asset, .. } => {
                let mut ours = false;
                if let Some(sk) = &keys.sk {
                    for n in self.notes.iter_mut().filter(|n| !n.spent && n.asset == *asset) {
                        let Some(leaf) = n.leaf_index else { continue };
                        let nf = match n.nullifier {
                            Some(nf) => nf,
                            None => {
                                let nf = sk.nullifier(&n.commitment, leaf)?;
                                n.nullifier = Some(nf);
                                nf
                            }
                        };
                        if nullifiers.contains(&nf) {
                            n.spent = true;
                            ours = true;
                        }
                    }
                }
                let origin = if ours { Origin::Own } else { Origin::Received };
                for j in 0..2 {
                    let q = first_queue_index
                        .checked_add(j as u64)
                        .ok_or(WalletError::Inconsistent("queue index overflows".into()))?;
                    self.enqueue(q, commitments[j])?;
                    self.recognise(keys, q, commitments[j], *asset, &notes[j], None, origin)?;
                }
            }
            PoolEvent::BatchInserted { start_leaf, first_queue, count, new_root } => {
                self.insert_batch(keys, *start_leaf, *first_queue, *count, *new_root)?;
            }
        }
        Ok(())
    }

    /// Opens one ciphertext; keeps the note if it is ours and matches, records it as corrupt if it
    /// is addressed to us and does not.
    #[allow(clippy::too_many_arguments)]
    fn recognise(
        &mut self,
        keys: &Keys<'_>,
        queue_index: u64,
        commitment: Fr,
        asset: Fr,
        ct: &[u8],
        amount: Option<u128>,
        origin: Origin,
    ) -> Result<(), WalletError> {
        let corrupt = |reason, claimed_value| CorruptNote { queue_index, commitment, asset, reason, claimed_value };
        match memo::open(keys.vk(), ct, &asset) {
            Opened::NotMine => {}
            Opened::Corrupt(_) => self.corrupt.push(corrupt(CorruptReason::Undecryptable, None)),
            Opened::Mine { value, blinding } => {
                let matches =
                    amount.is_none_or(|a| a == value) && keys.vk().commitment(value, asset, blinding)? == commitment;
                if !matches {
                    self.corrupt.push(corrupt(CorruptReason::CommitmentMismatch, Some(value)));
                } else if value != 0 {
                    self.notes.push(OwnedNote {
                        value,
                        asset,
                        blinding,
                        commitment,
                        queue_index,
                        leaf_index: None,
                        nullifier: None,
                        spent: false,
                        origin,
                    });
                }
            }
        }
        Ok(())
    }

    fn insert_batch(
        &mut self,
        keys: &Keys<'_>,
        start: u64,
        first: u64,
        count: u64,
        new_root: Fr,
    ) -> Result<(), WalletError> {
        let bad = |m: String| Err(WalletError::Inconsistent(m));
        if start != self.tree.len() {
            return bad(format!("batch starts at leaf {start}, the tree ends at {}", self.tree.len()));
        }
        if count == 0 || count > BATCH_SIZE {
            return bad(format!("batch of {count} leaves"));
        }
        if self.queue.keys().next() != Some(&first) {
            return bad(format!("batch starts at queue index {first}, the queue does not"));
        }
        let leaves: Vec<Fr> =
            (first..first + count).map(|q| self.queue.get(&q).copied()).collect::<Option<_>>().ok_or(
                WalletError::Inconsistent(format!("batch inserts queue {first}..{} not all queued", first + count)),
            )?;
        let mut batch = [Fr::from(0u64); BATCH_SIZE as usize];
        batch[..leaves.len()].copy_from_slice(&leaves);
        self.tree.push_batch(&batch)?;
        for (i, _) in leaves.iter().enumerate() {
            let q = first + i as u64;
            let index = start + i as u64;
            self.queue.remove(&q);
            for n in self.notes.iter_mut().filter(|n| n.queue_index == q) {
                n.leaf_index = Some(index);
                if let Some(sk) = &keys.sk {
                    n.nullifier = Some(sk.nullifier(&n.commitment, index)?);
                }
            }
        }
        if self.tree.root() != new_root {
            return bad("the batch's leaves do not produce the published root".into());
        }
        self.root = new_root;
        Ok(())
    }

    /// Serialises the view (the wallet encrypts it before writing it to disk).
    pub fn to_json(&self) -> Result<Vec<u8>, WalletError> {
        let file = ViewFile {
            version: VIEW_VERSION,
            mode: self.mode,
            last_block: self.last_block,
            next_queue: self.next_queue,
            queue: self.queue.iter().map(|(i, c)| (*i, hex::encode(field::to_be32(c)))).collect(),
            leaves: self.tree.leaves().iter().map(|l| hex::encode(field::to_be32(l))).collect(),
            root: hex::encode(field::to_be32(&self.root)),
            notes: self.notes.clone(),
            corrupt: self.corrupt.clone(),
            deposits: self.deposits.clone(),
            deposits_from_block: self.deposits_from_block,
        };
        serde_json::to_vec(&file).map_err(|e| WalletError::State(e.to_string()))
    }

    /// Restores a view written by [`PoolView::to_json`], rebuilding the tree from its leaves and
    /// checking it reaches the recorded root. A view of format 2 (before the deposit history)
    /// loads, with the history starting after its last block; an older format (the pool before
    /// private transfers) is refused: the wallet resynchronises from the chain instead.
    pub fn from_json(bytes: &[u8]) -> Result<Self, WalletError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let v: Version = serde_json::from_slice(bytes).map_err(|e| WalletError::State(e.to_string()))?;
        if v.version != VIEW_VERSION && v.version != 2 {
            return Err(WalletError::State(format!(
                "view version {} (this wallet writes {VIEW_VERSION}): resynchronise from the chain",
                v.version
            )));
        }
        let file: ViewFile = serde_json::from_slice(bytes).map_err(|e| WalletError::State(e.to_string()))?;
        let mut view = PoolView::new();
        view.mode = file.mode;
        view.last_block = file.last_block;
        view.next_queue = file.next_queue;
        for (i, c) in file.queue {
            view.queue.insert(i, word::parse(&c)?);
        }
        if !file.leaves.len().is_multiple_of(BATCH_SIZE as usize) {
            return Err(WalletError::State("the stored leaves are not whole batches".into()));
        }
        for chunk in file.leaves.chunks(BATCH_SIZE as usize) {
            let mut batch = [Fr::from(0u64); BATCH_SIZE as usize];
            for (b, l) in batch.iter_mut().zip(chunk) {
                *b = word::parse(l)?;
            }
            view.tree.push_batch(&batch)?;
        }
        view.root = word::parse(&file.root)?;
        if view.tree.root() != view.root {
            return Err(WalletError::State("the stored leaves do not produce the stored root".into()));
        }
        view.notes = file.notes;
        view.corrupt = file.corrupt;
        if v.version == 2 {
            view.deposits_from_block = file.last_block + 1;
        } else {
            view.deposits = file.deposits;
            view.deposits_from_block = file.deposits_from_block;
        }
        Ok(view)
    }
}

/// The view file's format: 2 since the 2-in/2-out pool (issue 30); 3 adds the pool's deposits
/// with their block times (the privacy advice, issue 35). Format 2 still loads.
const VIEW_VERSION: u32 = 3;

#[derive(Serialize, Deserialize)]
struct ViewFile {
    version: u32,
    mode: Mode,
    last_block: u64,
    next_queue: u64,
    queue: BTreeMap<u64, String>,
    leaves: Vec<String>,
    root: String,
    notes: Vec<OwnedNote>,
    corrupt: Vec<CorruptNote>,
    /// Absent in format 2.
    #[serde(default)]
    deposits: Vec<DepositSeen>,
    #[serde(default)]
    deposits_from_block: u64,
}
