//! The inserter (issue 35, item 1): nobody inserts by hand. Every deposit and every private
//! transaction queues commitments in the pool; they become spendable only once an `insertBatch`
//! moves them into the tree. An exit's relayer runs this task: it mirrors the pool's queue and
//! tree from the pool's events, and when a batch is due it proves the insertion with the
//! insertion key and submits `insertBatch` from the relayer's own account (through the relayer's
//! nonce journal), so a user never touches the chain after their deposit.
//!
//! The decisions are pure and fed the time ([`decide`], [`QueueMirror`], [`Retry`]); the task
//! ([`spawn`], feature `service`) only reads the chain, proves and sends.
//!
//! **When a batch is due.** When the next batch is full (it holds the queued commitments up to
//! the next multiple of [`BATCH_SIZE`] = 32 of the queue index, where the pool checkpoints its
//! queue's hash chain: [`batch_len`]; the cheapest per note), or when the oldest queued commitment has waited [`InserterConfig::max_wait_ms`], plus
//! a random jitter of up to [`InserterConfig::jitter_ms`] drawn once per batch so that several
//! relayers running the inserter rarely prove the same batch at the same time. The trade-off:
//! `insertBatch` costs ≈ 520–550 k gas whatever the count (the verifier dominates), so a full
//! batch costs ≈ 17 k gas per note and a batch of two ≈ 260 k per note. A short wait makes notes
//! spendable soon at a high gas cost per note; a long wait fills batches. The testnet (`nox
//! testnet up`) waits 2 s; the default ([`DEFAULT_MAX_WAIT_MS`], 10 min) is for a chain with
//! real gas prices, where the relayers' quotes charge each output 1/32 of a full batch.
//!
//! **Races.** Several relayers may run it; only one wins each batch. Before sending, the
//! inserter re-reads the pool and simulates its exact call (`eth_estimateGas` from its account):
//! a batch inserted by someone else, or a queue that changed while it proved (the pool's
//! `CountMismatch`, `NothingQueued`, or a proof for a root that is no longer current), is a lost
//! race: counted, no transaction, the mirror re-read from the events, and the next batch
//! planned. So a loser's gas is spent only when two calls land in the same block, and then it
//! is one reverted call per competitor per batch (≈ 8 k gas for `CountMismatch`, up to ≈ 330 k
//! when both covered the same count and the proof fails against the new root). Other failures
//! (the node, the journal) back off exponentially up to [`InserterConfig::max_backoff_ms`]: the
//! task never spins and never gives up.

use std::collections::VecDeque;

use alloy_primitives::{LogData, U256};
use ark_bn254::Fr;
// The pool's events, declared once (shared with the wallet's sync and nox-wasm).
use nox_pool_events::{PoolEventError, PoolLog};
use nox_zk::ZkError;
use nox_zk::field;
use nox_zk::insert::{BATCH_SIZE, InsertPublic, InsertWitness};
use nox_zk::merkle::Tree;
use serde::Deserialize;

/// The mainnet default of [`InserterConfig::max_wait_ms`]: 10 minutes.
pub const DEFAULT_MAX_WAIT_MS: u64 = 600_000;

/// The `[exit.services.relay.inserter]` table. Absent: the inserter runs with these defaults.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InserterConfig {
    /// Whether the exit's relayer runs the inserter (default: yes).
    pub enabled: bool,
    /// Milliseconds the oldest queued commitment may wait before a partial batch is inserted.
    pub max_wait_ms: u64,
    /// Up to this many milliseconds more, drawn once per batch (spreads competing inserters).
    pub jitter_ms: u64,
    /// Milliseconds between reads of the pool.
    pub poll_ms: u64,
    /// First block of the pool's events (its deployment block).
    pub from_block: u64,
    /// The insertion proving key (compressed arkworks); absent: the TESTNET key, derived at
    /// start (public randomness: only for a pool whose insertion verifier uses it).
    pub proving_key: Option<std::path::PathBuf>,
    /// First back-off after a failure, milliseconds (doubling per consecutive failure).
    pub backoff_ms: u64,
    /// The longest back-off, milliseconds.
    pub max_backoff_ms: u64,
}

impl Default for InserterConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            jitter_ms: 5_000,
            poll_ms: 1_000,
            from_block: 0,
            proving_key: None,
            backoff_ms: 1_000,
            max_backoff_ms: 300_000,
        }
    }
}

/// How many queued commitments the pool's next batch holds when `queued` wait from queue index
/// `first_uninserted`: up to the next multiple of [`BATCH_SIZE`] of the queue index (where the
/// pool keeps a checkpoint of its queue's hash chain) or the queue's end, whichever comes first
/// (`ShieldedPool.insertBatch`; exactly this many leaves are accepted).
pub fn batch_len(first_uninserted: u64, queued: u64) -> u64 {
    let to_boundary = BATCH_SIZE as u64 - first_uninserted % BATCH_SIZE as u64;
    queued.min(to_boundary)
}

/// What the queue looks like to [`decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueAge {
    /// Queued commitments the next batch holds ([`batch_len`]).
    pub queued: usize,
    /// When the oldest of them was queued (unix ms).
    pub oldest_ms: u64,
    /// When the batch's last slot was filled (the batch is full: it reaches the next multiple of
    /// [`BATCH_SIZE`] of the queue index), if it is.
    pub full_ms: Option<u64>,
}

/// What the inserter does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing is queued.
    Idle,
    /// A batch is due at this unix ms.
    WaitUntil(u64),
    /// Insert the next `count` queued commitments now.
    Insert {
        /// 1 to [`BATCH_SIZE`].
        count: usize,
    },
}

/// When to insert: a full batch at once, a partial one once its oldest commitment has waited
/// `max_wait_ms`; either after `jitter_ms` more, and never before `not_before_ms` (a back-off).
///
/// The jitter counts from the later of that moment and `seen_ms`, when this inserter first saw
/// the batch's first commitment: inserters that find a batch already overdue (they started, or
/// caught up, together) still go one after the other, and the later one finds the pool moved
/// when its proof is done instead of sending a transaction that reverts.
pub fn decide(
    now_ms: u64,
    age: Option<QueueAge>,
    max_wait_ms: u64,
    jitter_ms: u64,
    seen_ms: u64,
    not_before_ms: u64,
) -> Decision {
    let Some(age) = age.filter(|a| a.queued > 0) else { return Decision::Idle };
    let due = match age.full_ms {
        Some(full) => full,
        _ => age.oldest_ms.saturating_add(max_wait_ms),
    };
    let due = due.max(seen_ms).saturating_add(jitter_ms).max(not_before_ms);
    if now_ms >= due { Decision::Insert { count: age.queued.min(BATCH_SIZE) } } else { Decision::WaitUntil(due) }
}

/// What the pool's events say about its queue and tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueEvent {
    /// A commitment queued at `index`.
    Queued {
        /// Its queue index.
        index: u64,
        /// The commitment.
        commitment: Fr,
    },
    /// `count` queued commitments from `first_queue` inserted at `start_leaf`.
    Inserted {
        /// The batch's first leaf.
        start_leaf: u64,
        /// The queue index of its first commitment.
        first_queue: u64,
        /// Commitments in it.
        count: u64,
        /// The root after it.
        new_root: Fr,
    },
}

/// Why the pool's events and the inserter's mirror of them disagree.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// A commitment queued out of order.
    #[error("queue index {got} arrived, {expected} was expected")]
    QueueGap {
        /// The next index the mirror expected.
        expected: u64,
        /// The index the event names.
        got: u64,
    },
    /// A batch that does not continue the tree or the queue.
    #[error(
        "a batch at leaf {start_leaf} from queue index {first_queue}; the tree ends at {tree_len}, the queue at {first_uninserted}"
    )]
    BatchPosition {
        /// The event's first leaf.
        start_leaf: u64,
        /// The event's first queue index.
        first_queue: u64,
        /// The mirror's tree length.
        tree_len: u64,
        /// The mirror's first queued index.
        first_uninserted: u64,
    },
    /// A batch of more commitments than are queued or fit.
    #[error("a batch of {count} with {queued} queued")]
    BatchCount {
        /// The event's count.
        count: u64,
        /// Commitments the mirror holds queued.
        queued: usize,
    },
    /// The batch's root is not what its leaves give.
    #[error("the batch's root is not the root of the mirrored tree with its leaves")]
    Root,
    /// A word of an event is not a field element.
    #[error("the pool emitted a word ≥ r")]
    NotAScalar,
    /// A number of an event does not fit.
    #[error("the pool emitted an index ≥ 2^64")]
    Range,
    /// An event with a known signature does not decode.
    #[error("undecodable pool event: {0}")]
    Decode(#[from] alloy_sol_types::Error),
    /// The tree refused the leaves.
    #[error(transparent)]
    Zk(#[from] ZkError),
}

fn scalar(x: U256) -> Result<Fr, MirrorError> {
    field::from_be32(&x.to_be_bytes::<32>()).map_err(|_| MirrorError::NotAScalar)
}

fn small(x: U256) -> Result<u64, MirrorError> {
    u64::try_from(x).map_err(|_| MirrorError::Range)
}

impl From<PoolEventError> for MirrorError {
    fn from(e: PoolEventError) -> Self {
        match e {
            PoolEventError::Decode(e) => Self::Decode(e),
            PoolEventError::NotAScalar => Self::NotAScalar,
            PoolEventError::Index(_) | PoolEventError::Value(_) => Self::Range,
        }
    }
}

/// The queue events of one pool log (none for the pool's other events).
pub fn decode_log(data: &LogData) -> Result<Vec<QueueEvent>, MirrorError> {
    Ok(match nox_pool_events::decode(data.topics(), &data.data)? {
        Some(PoolLog::Deposited(e)) => {
            vec![QueueEvent::Queued { index: small(e.queueIndex)?, commitment: scalar(e.commitment)? }]
        }
        Some(PoolLog::Spent(e)) => {
            vec![QueueEvent::Queued { index: small(e.queueIndex)?, commitment: scalar(e.changeCommitment)? }]
        }
        Some(PoolLog::Transacted(e)) => {
            let first = small(e.firstQueueIndex)?;
            vec![
                QueueEvent::Queued { index: first, commitment: scalar(e.commitments[0])? },
                QueueEvent::Queued {
                    index: first.checked_add(1).ok_or(MirrorError::Range)?,
                    commitment: scalar(e.commitments[1])?,
                },
            ]
        }
        Some(PoolLog::BatchInserted(e)) => vec![QueueEvent::Inserted {
            start_leaf: small(e.startLeafIndex)?,
            first_queue: small(e.firstQueueIndex)?,
            count: small(e.count)?,
            new_root: scalar(e.newRoot)?,
        }],
        None => Vec::new(),
    })
}

/// The pool's counters and root at one block (what the mirror must agree with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolState {
    /// `currentRoot`.
    pub root: Fr,
    /// `nextLeafIndex`.
    pub next_leaf: u64,
    /// `nextQueueIndex`.
    pub next_queue: u64,
    /// `firstUninsertedQueueIndex`.
    pub first_uninserted: u64,
}

/// A batch ready to prove: the statement, its witness and what the pool will check.
#[derive(Clone, Debug)]
pub struct PlannedBatch {
    /// The insertion statement (old root, new root, start, leaves).
    pub public: InsertPublic,
    /// The siblings.
    pub witness: InsertWitness,
    /// Commitments it inserts (the first `count` of `public.leaves`: `insertBatch`'s leaves).
    pub count: usize,
    /// The pool state it was planned against.
    pub state: PoolState,
    /// When its oldest commitment was queued (unix ms).
    pub oldest_ms: u64,
}

/// The pool's tree and queue rebuilt from its events, with when each queued commitment was
/// first seen. Fed in event order; refuses a stream that does not add up.
#[derive(Clone, Debug)]
pub struct QueueMirror {
    tree: Tree,
    first_uninserted: u64,
    queued: VecDeque<(Fr, u64)>,
}

impl Default for QueueMirror {
    fn default() -> Self {
        Self::new()
    }
}

impl QueueMirror {
    /// An empty pool.
    pub fn new() -> Self {
        Self { tree: Tree::new(), first_uninserted: 0, queued: VecDeque::new() }
    }

    /// The next queue index the pool will give.
    pub fn next_queue(&self) -> u64 {
        self.first_uninserted + self.queued.len() as u64
    }

    /// Applies one event; `at_ms` is when its commitment was queued (its block's time).
    pub fn apply(&mut self, event: &QueueEvent, at_ms: u64) -> Result<(), MirrorError> {
        match *event {
            QueueEvent::Queued { index, commitment } => {
                if index != self.next_queue() {
                    return Err(MirrorError::QueueGap { expected: self.next_queue(), got: index });
                }
                self.queued.push_back((commitment, at_ms));
            }
            QueueEvent::Inserted { start_leaf, first_queue, count, new_root } => {
                if start_leaf != self.tree.len() || first_queue != self.first_uninserted {
                    return Err(MirrorError::BatchPosition {
                        start_leaf,
                        first_queue,
                        tree_len: self.tree.len(),
                        first_uninserted: self.first_uninserted,
                    });
                }
                let n = usize::try_from(count).map_err(|_| MirrorError::Range)?;
                if n == 0 || n > BATCH_SIZE || n > self.queued.len() {
                    return Err(MirrorError::BatchCount { count, queued: self.queued.len() });
                }
                let leaves: Vec<Fr> = self.queued.iter().take(n).map(|(c, _)| *c).collect();
                let mut tree = self.tree.clone();
                tree.insert_batch(&leaves)?;
                if tree.root() != new_root {
                    return Err(MirrorError::Root);
                }
                self.tree = tree;
                self.queued.drain(..n);
                self.first_uninserted += count;
            }
        }
        Ok(())
    }

    /// The queue as [`decide`] sees it (`None`: nothing queued).
    pub fn age(&self) -> Option<QueueAge> {
        let oldest_ms = self.queued.front()?.1;
        let cap = batch_len(self.first_uninserted, u64::MAX) as usize;
        Some(QueueAge {
            queued: self.queued.len().min(cap),
            oldest_ms,
            full_ms: self.queued.get(cap - 1).map(|(_, t)| *t),
        })
    }

    /// This mirror's view of the pool's counters and root.
    pub fn state(&self) -> PoolState {
        PoolState {
            root: self.tree.root(),
            next_leaf: self.tree.len(),
            next_queue: self.next_queue(),
            first_uninserted: self.first_uninserted,
        }
    }

    /// The next batch ([`batch_len`] queued commitments), or `None` with nothing queued.
    pub fn plan(&self) -> Result<Option<PlannedBatch>, MirrorError> {
        let Some(age) = self.age() else { return Ok(None) };
        let count = age.queued;
        let leaves: Vec<Fr> = self.queued.iter().take(count).map(|(c, _)| *c).collect();
        let (public, witness) = self.tree.clone().insert_batch(&leaves)?;
        Ok(Some(PlannedBatch { public, witness, count, state: self.state(), oldest_ms: age.oldest_ms }))
    }
}

/// How an attempt to insert ended, for [`Retry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Our batch was inserted.
    Inserted,
    /// Someone else's insertion or a new commitment changed the batch first: re-plan at once.
    LostRace,
    /// The node, the journal or the proof failed: back off.
    Failed,
}

/// The back-off between attempts: none after a success or a lost race, doubling from
/// `backoff_ms` up to `max_backoff_ms` after consecutive failures — never a busy loop, never
/// abandoned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retry {
    failures: u32,
    not_before_ms: u64,
}

impl Retry {
    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// No attempt before this unix ms.
    pub fn not_before_ms(&self) -> u64 {
        self.not_before_ms
    }

    /// Records how an attempt ended at `now_ms`.
    pub fn on(&mut self, attempt: Attempt, now_ms: u64, backoff_ms: u64, max_backoff_ms: u64) {
        match attempt {
            Attempt::Inserted | Attempt::LostRace => *self = Self::default(),
            Attempt::Failed => {
                self.failures = self.failures.saturating_add(1);
                let shift = (self.failures - 1).min(32);
                let wait = backoff_ms.saturating_mul(1u64 << shift).min(max_backoff_ms);
                self.not_before_ms = now_ms.saturating_add(wait);
            }
        }
    }
}

#[cfg(feature = "service")]
pub use task::{InserterError, InserterHandle, InserterMetrics, spawn};

#[cfg(feature = "service")]
mod task;

#[cfg(test)]
mod tests;
