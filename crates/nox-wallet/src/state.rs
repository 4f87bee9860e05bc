//! The wallet's view of the pool, rebuilt from the pool's events alone (docs/spec/notes.md §5).
//!
//! Events are applied in chain order. Every commitment the pool queues (a deposit, or the change
//! of a spend) gets a queue index; a `BatchInserted` event moves the next `count` queued
//! commitments into the tree as one aligned subtree of 16 leaves (the rest of the subtree stays
//! zero). The view keeps every leaf, so it can produce the Merkle path of any of its notes, and
//! recognises its own notes two ways:
//!
//! - a deposit whose memo opens with the viewing key and whose opened note hashes to the
//!   published commitment (a memo that opens but does not match is ignored: someone else's
//!   note, or a forgery);
//! - the change of its own spend: when a `Spent` event carries the nullifier of one of its
//!   notes, the change note `(value − fee, asset, owner, Poseidon(sk, nullifier))` is derived and
//!   checked against the published change commitment.
//!
//! Events that contradict the view (a queue index out of sequence, a batch that does not start
//! where the tree ends, a root the leaves do not produce) are refused with
//! [`WalletError::Inconsistent`]; the caller then discards the view instead of persisting it.

use crate::{error::WalletError, keys::Seed, memo};
use ark_bn254::Fr;
use nox_zk::{Tree, field, note};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Leaves per inserted batch (an aligned subtree of height 4).
pub const BATCH_SIZE: u64 = 16;

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
        /// The memo for the owner's viewing key.
        memo: Vec<u8>,
    },
    /// `Spent(nullifier, queueIndex, changeCommitment, asset, fee, …)`.
    Spent {
        /// The spent note's nullifier.
        nullifier: Fr,
        /// Queue position of the change note.
        queue_index: u64,
        /// The change note's commitment.
        change_commitment: Fr,
        /// `uint160(asset)`.
        asset: Fr,
        /// Amount paid (fee of a payment, or amount withdrawn).
        fee: u128,
    },
    /// `BatchInserted(startLeafIndex, firstQueueIndex, count, newRoot)`.
    BatchInserted {
        /// Tree position of the batch's first leaf (a multiple of 16).
        start_leaf: u64,
        /// Queue index of the batch's first leaf.
        first_queue: u64,
        /// Number of queued leaves inserted (1..=16).
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
    /// The change of one of our spends.
    Change,
}

/// One of the wallet's notes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedNote {
    /// Value in the asset's smallest unit.
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
    /// Whether a `Spent` event carried its nullifier.
    pub spent: bool,
    /// Deposit or change.
    pub origin: Origin,
}

/// Balance of one asset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    /// Unspent notes in the tree: spendable now.
    pub spendable: u128,
    /// Unspent notes still queued: spendable after their batch is inserted.
    pub pending: u128,
    /// The largest single spendable note (one spend uses one note).
    pub largest: u128,
}

/// The wallet's view of one pool.
#[derive(Clone, Debug, Default)]
pub struct PoolView {
    /// Last block whose events were applied (the caller's bookkeeping).
    pub last_block: u64,
    queue: BTreeMap<u64, Fr>,
    next_queue: u64,
    tree: Tree,
    leaves: Vec<Fr>,
    root: Fr,
    notes: Vec<OwnedNote>,
}

impl PoolView {
    /// An empty view (the pool at deployment).
    pub fn new() -> Self {
        let tree = Tree::new();
        let root = tree.root();
        PoolView { tree, root, ..Default::default() }
    }

    /// The pool root after the last applied batch.
    pub fn root(&self) -> Fr {
        self.root
    }

    /// The tree (for paths).
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The wallet's notes, spent or not.
    pub fn notes(&self) -> &[OwnedNote] {
        &self.notes
    }

    /// Commitments queued but not yet inserted, in queue order.
    pub fn queued(&self) -> impl Iterator<Item = (u64, Fr)> + '_ {
        self.queue.iter().map(|(i, c)| (*i, *c))
    }

    /// Tree position where the next batch starts.
    pub fn next_leaf(&self) -> u64 {
        self.tree.len()
    }

    /// Balance of `asset`.
    pub fn balance(&self, asset: &Fr) -> Balance {
        let mut b = Balance::default();
        for n in self.notes.iter().filter(|n| !n.spent && n.asset == *asset) {
            if n.leaf_index.is_some() {
                b.spendable = b.spendable.saturating_add(n.value);
                b.largest = b.largest.max(n.value);
            } else {
                b.pending = b.pending.saturating_add(n.value);
            }
        }
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

    /// Applies one event. On error the view must be discarded (it may be half-updated).
    pub fn apply(&mut self, seed: &Seed, event: &PoolEvent) -> Result<(), WalletError> {
        match event {
            PoolEvent::Deposited { queue_index, commitment, asset, amount, memo } => {
                self.enqueue(*queue_index, *commitment)?;
                if let Some((value, blinding)) = memo::open(&seed.viewing_secret(), asset, memo) {
                    let owner = seed.spending_key().owner()?;
                    let inner = nox_zk::poseidon::hash(&[owner, blinding])?;
                    if value == *amount && note::commitment(value, *asset, inner)? == *commitment {
                        self.notes.push(OwnedNote {
                            value,
                            asset: *asset,
                            blinding,
                            commitment: *commitment,
                            queue_index: *queue_index,
                            leaf_index: None,
                            spent: false,
                            origin: Origin::Deposit,
                        });
                    }
                }
            }
            PoolEvent::Spent { nullifier, queue_index, change_commitment, asset, fee } => {
                self.enqueue(*queue_index, *change_commitment)?;
                let sk = seed.spending_key();
                let mut change = None;
                for n in self.notes.iter_mut().filter(|n| !n.spent && n.asset == *asset) {
                    let Some(leaf) = n.leaf_index else { continue };
                    if sk.nullifier(&n.commitment, leaf)? != *nullifier {
                        continue;
                    }
                    n.spent = true;
                    if let Some(rest) = n.value.checked_sub(*fee) {
                        let c = note::change_note(&sk, nullifier, rest, *asset)?;
                        if c.commitment()? == *change_commitment {
                            change = Some((rest, c.blinding));
                        }
                    }
                    break;
                }
                if let Some((value, blinding)) = change {
                    self.notes.push(OwnedNote {
                        value,
                        asset: *asset,
                        blinding,
                        commitment: *change_commitment,
                        queue_index: *queue_index,
                        leaf_index: None,
                        spent: false,
                        origin: Origin::Change,
                    });
                }
            }
            PoolEvent::BatchInserted { start_leaf, first_queue, count, new_root } => {
                self.insert_batch(*start_leaf, *first_queue, *count, *new_root)?;
            }
        }
        Ok(())
    }

    fn insert_batch(&mut self, start: u64, first: u64, count: u64, new_root: Fr) -> Result<(), WalletError> {
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
        for (i, leaf) in leaves.iter().enumerate() {
            let q = first + i as u64;
            self.queue.remove(&q);
            let index = self.tree.push(*leaf)?;
            self.leaves.push(*leaf);
            for n in self.notes.iter_mut().filter(|n| n.queue_index == q) {
                n.leaf_index = Some(index);
            }
        }
        while !self.tree.len().is_multiple_of(BATCH_SIZE) {
            self.tree.push(Fr::from(0u64))?;
            self.leaves.push(Fr::from(0u64));
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
            version: 1,
            last_block: self.last_block,
            next_queue: self.next_queue,
            queue: self.queue.iter().map(|(i, c)| (*i, hex::encode(field::to_be32(c)))).collect(),
            leaves: self.leaves.iter().map(|l| hex::encode(field::to_be32(l))).collect(),
            root: hex::encode(field::to_be32(&self.root)),
            notes: self.notes.clone(),
        };
        serde_json::to_vec(&file).map_err(|e| WalletError::State(e.to_string()))
    }

    /// Restores a view written by [`PoolView::to_json`], rebuilding the tree from its leaves and
    /// checking it reaches the recorded root.
    pub fn from_json(bytes: &[u8]) -> Result<Self, WalletError> {
        let file: ViewFile = serde_json::from_slice(bytes).map_err(|e| WalletError::State(e.to_string()))?;
        if file.version != 1 {
            return Err(WalletError::State(format!("unknown view version {}", file.version)));
        }
        let mut view = PoolView::new();
        view.last_block = file.last_block;
        view.next_queue = file.next_queue;
        for (i, c) in file.queue {
            view.queue.insert(i, word::parse(&c)?);
        }
        for l in &file.leaves {
            let leaf = word::parse(l)?;
            view.tree.push(leaf)?;
            view.leaves.push(leaf);
        }
        view.root = word::parse(&file.root)?;
        if view.tree.root() != view.root {
            return Err(WalletError::State("the stored leaves do not produce the stored root".into()));
        }
        view.notes = file.notes;
        Ok(view)
    }
}

#[derive(Serialize, Deserialize)]
struct ViewFile {
    version: u32,
    last_block: u64,
    next_queue: u64,
    queue: BTreeMap<u64, String>,
    leaves: Vec<String>,
    root: String,
    notes: Vec<OwnedNote>,
}

/// Serde for scalars as 64 hex digits (a big-endian word).
mod word {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn parse(s: &str) -> Result<Fr, WalletError> {
        let bytes = hex::decode(s).map_err(|_| WalletError::State("a word is not hexadecimal".into()))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| WalletError::State("a word is not 32 bytes".into()))?;
        field::from_be32(&bytes).map_err(|_| WalletError::State("a word is not a BN254 scalar".into()))
    }

    pub fn serialize<S: Serializer>(x: &Fr, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(field::to_be32(x)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Fr, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map_err(serde::de::Error::custom)
    }
}
