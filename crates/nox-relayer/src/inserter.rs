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
#[cfg(test)]
use {
    alloy_sol_types::SolEvent,
    nox_pool_events::{BatchInserted, Deposited, Transacted},
};

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
pub fn decide(now_ms: u64, age: Option<QueueAge>, max_wait_ms: u64, jitter_ms: u64, not_before_ms: u64) -> Decision {
    let Some(age) = age.filter(|a| a.queued > 0) else { return Decision::Idle };
    let due = match age.full_ms {
        Some(full) => full,
        _ => age.oldest_ms.saturating_add(max_wait_ms),
    };
    let due = due.saturating_add(jitter_ms).max(not_before_ms);
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
mod task {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use alloy::eips::BlockId;
    use alloy::eips::eip2718::Encodable2718;
    use alloy::network::TransactionBuilder;
    use alloy::primitives::{Address, Bytes, U256};
    use alloy::providers::Provider;
    use alloy::rpc::types::{Filter, TransactionRequest};
    use alloy::sol_types::SolCall;
    use ark_bn254::Bn254;
    use nox_chain::pool::ShieldedPool;
    use nox_zk::groth16::ProvingKey;
    use rand_chacha_03::ChaCha20Rng;
    use rand_core_06::{RngCore, SeedableRng};

    use super::{Attempt, InserterConfig, PlannedBatch, PoolState, QueueMirror, Retry, decide, decode_log};
    use crate::journal::Pending;
    use crate::service::Relayer;
    use crate::wire::Outcome;

    /// Blocks per `eth_getLogs` page.
    const LOG_PAGE: u64 = 1_000;

    /// Why the inserter could not start.
    #[derive(Debug, thiserror::Error)]
    pub enum InserterError {
        /// A setting is unusable.
        #[error("inserter: {0}")]
        Policy(&'static str),
        /// The proving key file could not be read.
        #[error("inserter proving key {path}: {source}")]
        KeyFile {
            /// The file.
            path: std::path::PathBuf,
            /// Why.
            source: std::io::Error,
        },
        /// The proving key file does not hold a proving key.
        #[error("inserter proving key {path}: {source}")]
        KeyFormat {
            /// The file.
            path: std::path::PathBuf,
            /// Why.
            source: nox_zk::ZkError,
        },
    }

    /// What the inserter has done since it started (Prometheus text from [`Self::render`]).
    #[derive(Debug, Default)]
    pub struct InserterMetrics {
        inserts: AtomicU64,
        leaves: AtomicU64,
        failures: AtomicU64,
        lost_races: AtomicU64,
        gas_used: AtomicU64,
        last_delay_ms: AtomicU64,
    }

    impl InserterMetrics {
        /// Batches this relayer inserted.
        pub fn inserts(&self) -> u64 {
            self.inserts.load(Ordering::Relaxed)
        }
        /// Failed attempts (node, journal, proof, a reverted call).
        pub fn failures(&self) -> u64 {
            self.failures.load(Ordering::Relaxed)
        }
        /// Batches another inserter (or a new commitment) changed first.
        pub fn lost_races(&self) -> u64 {
            self.lost_races.load(Ordering::Relaxed)
        }
        /// From the oldest commitment's block to this relayer's last insertion receipt, ms.
        pub fn last_delay_ms(&self) -> u64 {
            self.last_delay_ms.load(Ordering::Relaxed)
        }

        /// The metrics in the Prometheus text format.
        pub fn render(&self) -> String {
            let rows = [
                (
                    "nox_relayer_inserts_total",
                    "counter",
                    "Batches this relayer inserted (insertBatch mined).",
                    self.inserts(),
                ),
                (
                    "nox_relayer_inserted_leaves_total",
                    "counter",
                    "Queued commitments this relayer inserted.",
                    self.leaves.load(Ordering::Relaxed),
                ),
                (
                    "nox_relayer_insert_failures_total",
                    "counter",
                    "Insertion attempts that failed (node, journal, proof, reverted call).",
                    self.failures(),
                ),
                (
                    "nox_relayer_insert_lost_races_total",
                    "counter",
                    "Batches inserted or changed by someone else first (no transaction sent).",
                    self.lost_races(),
                ),
                (
                    "nox_relayer_insert_gas_used_total",
                    "counter",
                    "Gas of this relayer's insertBatch transactions.",
                    self.gas_used.load(Ordering::Relaxed),
                ),
            ];
            let mut out = String::new();
            for (name, kind, help, value) in rows {
                out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
            }
            let name = "nox_relayer_insert_last_delay_seconds";
            out.push_str(&format!(
                "# HELP {name} From the oldest inserted commitment's block to the last insertion's receipt.\n# TYPE {name} gauge\n{name} {:.3}\n",
                self.last_delay_ms() as f64 / 1000.0
            ));
            out
        }
    }

    /// The running inserter.
    pub struct InserterHandle {
        metrics: Arc<InserterMetrics>,
        task: tokio::task::JoinHandle<()>,
    }

    impl InserterHandle {
        /// Its counters.
        pub fn metrics(&self) -> &Arc<InserterMetrics> {
            &self.metrics
        }
    }

    impl Drop for InserterHandle {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// Starts the inserter for `relayer`'s pool: it sends `insertBatch` from the relayer's
    /// account through the relayer's nonce journal. Stops when the handle is dropped.
    pub async fn spawn(relayer: Arc<Relayer>, config: InserterConfig) -> Result<InserterHandle, InserterError> {
        if config.poll_ms == 0 || config.backoff_ms == 0 || config.max_backoff_ms < config.backoff_ms {
            return Err(InserterError::Policy("poll_ms and backoff_ms ≥ 1, max_backoff_ms ≥ backoff_ms"));
        }
        // The file is read here (a missing key is the operator's error, reported at start), but
        // decoding it (≈ 10⁵ compressed points) and deriving a testnet key take seconds of CPU:
        // both happen in the task, so an exit starts (and joins its epoch) without waiting.
        let key_bytes = match &config.proving_key {
            Some(path) => Some((
                path.clone(),
                std::fs::read(path).map_err(|source| InserterError::KeyFile { path: path.clone(), source })?,
            )),
            None => None,
        };
        let metrics = Arc::new(InserterMetrics::default());
        let task_metrics = metrics.clone();
        let task = tokio::spawn(async move {
            let key_started = std::time::Instant::now();
            let loaded = tokio::task::spawn_blocking(move || match key_bytes {
                // The file is the operator's own (written by `nox zk setup` or the testnet):
                // its points are trusted, as the wallet trusts its cached key.
                // Decoded in nox-zk (not generic here: unoptimised, it took 15 s in a debug build).
                Some((path, bytes)) => nox_zk::insert::proving_key_from_bytes(&bytes)
                    .map_err(|source| InserterError::KeyFormat { path, source }),
                None => {
                    tracing::warn!(
                        "inserter: no proving_key given, deriving the TESTNET insertion key (public randomness)"
                    );
                    nox_zk::insert::testnet_setup()
                        .map(|(pk, _)| pk)
                        .map_err(|_| InserterError::Policy("deriving the testnet insertion key failed"))
                }
            })
            .await;
            let pk = match loaded {
                Ok(Ok(pk)) => {
                    tracing::info!(load_ms = key_started.elapsed().as_millis(), "inserter: proving key loaded");
                    pk
                }
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "inserter: no proving key; not inserting");
                    return;
                }
                Err(_) => {
                    tracing::error!("inserter: loading the proving key panicked; not inserting");
                    return;
                }
            };
            let mut task = Task {
                relayer,
                pk: Arc::new(pk),
                synced_to: None,
                mirror: QueueMirror::new(),
                retry: Retry::default(),
                jitter: None,
                rng: ChaCha20Rng::from_entropy(),
                metrics: task_metrics,
                config,
            };
            task.run().await
        });
        Ok(InserterHandle { metrics, task })
    }

    fn unix_ms() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Why a turn of the loop failed (logged; the loop backs off and goes on).
    #[derive(Debug, thiserror::Error)]
    enum StepError {
        #[error("chain: {0}")]
        Rpc(#[from] alloy::transports::TransportError),
        #[error("pool view: {0}")]
        Contract(#[from] alloy::contract::Error),
        #[error("pool events: {0}")]
        Mirror(#[from] super::MirrorError),
        #[error("the node returned a removed (reorganised) log")]
        Reorg,
        #[error("the mirrored pool {mirror:?} disagrees with the pool {chain:?}")]
        Disagrees { mirror: Box<PoolState>, chain: Box<PoolState> },
        #[error("proving: {0}")]
        Zk(#[from] nox_zk::ZkError),
        #[error("the prover task failed")]
        Join,
        #[error("journal: {0}")]
        Journal(#[from] crate::journal::JournalError),
        #[error("signing: {0}")]
        Sign(String),
        #[error("the relayer's account {account} holds {have} wei, an insertion may cost {need} wei: fund it")]
        Unfunded { account: Address, have: U256, need: U256 },
    }

    struct Task {
        relayer: Arc<Relayer>,
        pk: Arc<ProvingKey<Bn254>>,
        /// The last block whose events the mirror holds.
        synced_to: Option<u64>,
        mirror: QueueMirror,
        retry: Retry,
        /// The jitter drawn for the batch starting at this queue index.
        jitter: Option<(u64, u64)>,
        rng: ChaCha20Rng,
        metrics: Arc<InserterMetrics>,
        config: InserterConfig,
    }

    impl Task {
        async fn run(&mut self) {
            let c = self.config.clone();
            tracing::info!(max_wait_ms = c.max_wait_ms, "inserter: started");
            loop {
                let wait = match self.turn().await {
                    Ok(wait) => wait,
                    Err(e) => {
                        tracing::warn!(error = %e, "inserter: failed; backing off");
                        self.metrics.failures.fetch_add(1, Ordering::Relaxed);
                        self.retry.on(Attempt::Failed, unix_ms(), c.backoff_ms, c.max_backoff_ms);
                        self.retry.not_before_ms().saturating_sub(unix_ms())
                    }
                };
                tokio::time::sleep(Duration::from_millis(wait.clamp(1, c.poll_ms))).await;
            }
        }

        /// One turn: sync, decide, maybe insert. Returns how long to sleep.
        async fn turn(&mut self) -> Result<u64, StepError> {
            let head = self.sync().await?;
            let c = self.config.clone();
            let age = self.mirror.age();
            let first = self.mirror.state().first_uninserted;
            let jitter = match self.jitter {
                Some((at, j)) if at == first => j,
                _ => {
                    let j = if c.jitter_ms == 0 { 0 } else { self.rng.next_u64() % (c.jitter_ms + 1) };
                    self.jitter = Some((first, j));
                    j
                }
            };
            let now = unix_ms();
            match decide(now, age, c.max_wait_ms, jitter, self.retry.not_before_ms()) {
                super::Decision::Idle => Ok(c.poll_ms),
                super::Decision::WaitUntil(at) => Ok(at.saturating_sub(now)),
                super::Decision::Insert { count } => {
                    tracing::info!(
                        count,
                        head,
                        waited_ms = age.map_or(0, |a| now.saturating_sub(a.oldest_ms)),
                        jitter_ms = jitter,
                        "inserter: batch due"
                    );
                    let attempt = self.insert(head).await?;
                    self.retry.on(attempt, unix_ms(), c.backoff_ms, c.max_backoff_ms);
                    Ok(1)
                }
            }
        }

        /// Brings the mirror up to the head block and checks it against the pool there.
        async fn sync(&mut self) -> Result<u64, StepError> {
            let provider = self.relayer.provider();
            let pool = self.relayer.config().pool;
            let head = provider.get_block_number().await?;
            let mut from = self.synced_to.map_or(self.config.from_block, |b| b + 1);
            while from <= head {
                let to = (from + LOG_PAGE - 1).min(head);
                let filter = Filter::new().address(pool).from_block(from).to_block(to);
                let logs = provider.get_logs(&filter).await?;
                let now = unix_ms();
                for log in &logs {
                    if log.removed {
                        self.reset();
                        return Err(StepError::Reorg);
                    }
                    // Queued at its block's time (never later than now: clocks differ).
                    let at = log.block_timestamp.map_or(now, |t| t.saturating_mul(1000).min(now));
                    for event in decode_log(&log.inner.data)? {
                        if let Err(e) = self.mirror.apply(&event, at) {
                            self.reset();
                            return Err(e.into());
                        }
                    }
                }
                self.synced_to = Some(to);
                from = to + 1;
            }
            let chain = self.pool_state(BlockId::number(head)).await?;
            if chain != self.mirror.state() {
                self.reset();
                return Err(StepError::Disagrees { mirror: Box::new(self.mirror.state()), chain: Box::new(chain) });
            }
            Ok(head)
        }

        fn reset(&mut self) {
            self.mirror = QueueMirror::new();
            self.synced_to = None;
        }

        async fn pool_state(&self, at: BlockId) -> Result<PoolState, StepError> {
            let pool = ShieldedPool::new(self.relayer.config().pool, self.relayer.provider());
            let root = pool.currentRoot().block(at).call().await?;
            let next_leaf = pool.nextLeafIndex().block(at).call().await?;
            let next_queue = pool.nextQueueIndex().block(at).call().await?;
            let first_uninserted = pool.firstUninsertedQueueIndex().block(at).call().await?;
            let small = |x: U256| u64::try_from(x).map_err(|_| super::MirrorError::Range);
            Ok(PoolState {
                root: super::scalar(root)?,
                next_leaf: small(next_leaf)?,
                next_queue: small(next_queue)?,
                first_uninserted: small(first_uninserted)?,
            })
        }

        /// Proves the next batch and submits it, unless the pool moved on meanwhile.
        async fn insert(&mut self, head: u64) -> Result<Attempt, StepError> {
            let started = std::time::Instant::now();
            let Some(batch) = self.mirror.plan()? else { return Ok(Attempt::LostRace) };
            let planned_ms = started.elapsed().as_millis();
            let pk = self.pk.clone();
            let mut seed = [0u8; 32];
            self.rng.fill_bytes(&mut seed);
            let (public, witness) = (batch.public.clone(), batch.witness.clone());
            let proof = tokio::task::spawn_blocking(move || {
                // `prove_seeded`, not the generic `prove`: the prover's code must be nox-zk's
                // optimised instance, not one compiled in this crate (16–49 s in a debug build
                // instead of 1.6 s: the inserter's whole delay in issue 35's measurement).
                let proof = nox_zk::insert::prove_seeded(&pk, &public, &witness, seed)?;
                nox_zk::insert::verify(&pk.vk, &public, &proof)?;
                Ok::<_, nox_zk::ZkError>(nox_zk::groth16::proof_to_evm(&proof))
            })
            .await
            .map_err(|_| StepError::Join)??;
            tracing::info!(
                count = batch.count,
                plan_ms = planned_ms,
                prove_ms = started.elapsed().as_millis() - planned_ms,
                "inserter: batch proved"
            );
            // The pool may have moved while we proved: another inserter, or a new commitment
            // (which changes the count the pool would insert).
            let now_state = self.pool_state(BlockId::latest()).await?;
            let count_now = super::batch_len(
                now_state.first_uninserted,
                now_state.next_queue.saturating_sub(now_state.first_uninserted),
            );
            if now_state.root != batch.state.root
                || now_state.first_uninserted != batch.state.first_uninserted
                || count_now != batch.count as u64
            {
                tracing::info!(head, "inserter: the pool moved while proving; re-planning");
                self.metrics.lost_races.fetch_add(1, Ordering::Relaxed);
                return Ok(Attempt::LostRace);
            }
            self.submit(&batch, &proof).await
        }

        async fn submit(&mut self, batch: &PlannedBatch, proof: &[u8; 256]) -> Result<Attempt, StepError> {
            let mut words = [U256::ZERO; 8];
            for (w, chunk) in words.iter_mut().zip(proof.chunks_exact(32)) {
                *w = U256::from_be_slice(chunk);
            }
            let new_root = U256::from_be_bytes(nox_zk::field::to_be32(&batch.public.new_root));
            let leaves = batch.public.leaves[..batch.count]
                .iter()
                .map(|leaf| U256::from_be_bytes(nox_zk::field::to_be32(leaf)))
                .collect();
            let call = ShieldedPool::insertBatchCall { proof: words, newRoot: new_root, leaves };
            let relayer = &self.relayer;
            let provider = relayer.provider();
            let pool: Address = relayer.config().pool;
            let base = TransactionRequest::default()
                .with_from(relayer.account())
                .with_to(pool)
                .with_input(Bytes::from(call.abi_encode()))
                .with_chain_id(relayer.config().chain_id);
            // The simulation: the exact call from our account; a revert costs nothing here.
            let gas = match provider.estimate_gas(base.clone()).await {
                Ok(gas) => gas,
                Err(e) => {
                    let lost = e
                        .as_error_resp()
                        .and_then(|r| r.as_decoded_interface_error::<ShieldedPool::ShieldedPoolErrors>())
                        .is_some_and(|err| {
                            matches!(
                                err,
                                ShieldedPool::ShieldedPoolErrors::CountMismatch(_)
                                    | ShieldedPool::ShieldedPoolErrors::NothingQueued(_)
                                    | ShieldedPool::ShieldedPoolErrors::InvalidProof(_)
                            )
                        });
                    if lost {
                        tracing::info!(error = %e, "inserter: the simulation says the batch changed; re-planning");
                        self.metrics.lost_races.fetch_add(1, Ordering::Relaxed);
                        return Ok(Attempt::LostRace);
                    }
                    return Err(e.into());
                }
            };
            let fees = provider.estimate_eip1559_fees().await?;
            let tx = base
                .with_gas_limit(gas.saturating_mul(6) / 5 + 10_000)
                .with_max_fee_per_gas(fees.max_fee_per_gas)
                .with_max_priority_fee_per_gas(fees.max_priority_fee_per_gas);
            // An account without the ETH for this transaction: say so (the node's answer,
            // "insufficient funds for gas * price + value", names neither account nor amount).
            let need = U256::from(tx.gas.unwrap_or_default()) * U256::from(fees.max_fee_per_gas);
            let have = provider.get_balance(relayer.account()).await?;
            if have < need {
                return Err(StepError::Unfunded { account: relayer.account(), have, need });
            }
            let nonce = self.send(tx).await?;
            tracing::info!(nonce, count = batch.count, "inserter: insertBatch sent");
            match relayer.track_own(nonce).await {
                Outcome::Included { gas_used, .. } => {
                    let delay = unix_ms().saturating_sub(batch.oldest_ms);
                    let m = &self.metrics;
                    m.inserts.fetch_add(1, Ordering::Relaxed);
                    m.leaves.fetch_add(batch.count as u64, Ordering::Relaxed);
                    m.gas_used.fetch_add(gas_used, Ordering::Relaxed);
                    m.last_delay_ms.store(delay, Ordering::Relaxed);
                    tracing::info!(
                        count = batch.count,
                        start = batch.public.start_index,
                        gas_used,
                        delay_ms = delay,
                        "inserter: batch inserted"
                    );
                    Ok(Attempt::Inserted)
                }
                other => {
                    // Mined and reverted: another insertion landed in the same block.
                    tracing::warn!(outcome = ?other, "inserter: insertBatch did not go through");
                    self.metrics.failures.fetch_add(1, Ordering::Relaxed);
                    Ok(Attempt::LostRace)
                }
            }
        }

        /// Signs at the relayer's next nonce, journals, broadcasts (the relayer's own rule: the
        /// journal is written before the broadcast, and a refused broadcast gives the nonce back).
        async fn send(&self, tx: TransactionRequest) -> Result<u64, StepError> {
            let relayer = &self.relayer;
            let mut journal = relayer.journal().lock().await;
            let nonce = journal.next_nonce();
            let envelope = tx
                .clone()
                .with_nonce(nonce)
                .build(relayer.wallet())
                .await
                .map_err(|e| StepError::Sign(e.to_string()))?;
            let raw = Bytes::from(envelope.encoded_2718());
            journal.record(Pending {
                nonce,
                hashes: vec![*envelope.tx_hash()],
                raw: raw.clone(),
                gas_limit: tx.gas.unwrap_or_default(),
                priority_fee: tx.max_priority_fee_per_gas.unwrap_or_default(),
                max_fee_per_gas: tx.max_fee_per_gas.unwrap_or_default(),
                // The relayer's own transaction: no fee, so never bumped for profit.
                fee: U256::ZERO,
                asset: Address::ZERO,
                nullifier: U256::ZERO,
                value_wei: U256::ZERO,
                bumps: 0,
            })?;
            if let Err(e) = provider_send(relayer, &raw).await {
                if let Err(j) = journal.unrecord(nonce) {
                    tracing::error!(nonce, error = %j, "inserter: could not take back a refused transaction");
                }
                return Err(e.into());
            }
            Ok(nonce)
        }
    }

    async fn provider_send(relayer: &Relayer, raw: &[u8]) -> Result<(), alloy::transports::TransportError> {
        relayer.provider().send_raw_transaction(raw).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(i: u64) -> Fr {
        Fr::from(1_000 + i)
    }

    #[test]
    fn nothing_queued_is_idle() {
        assert_eq!(decide(10_000, None, 2_000, 0, 0), Decision::Idle);
        let empty = QueueAge { queued: 0, oldest_ms: 0, full_ms: None };
        assert_eq!(decide(10_000, Some(empty), 2_000, 0, 0), Decision::Idle);
    }

    #[test]
    fn a_partial_batch_waits_for_max_wait_then_jitter() {
        let age = QueueAge { queued: 2, oldest_ms: 1_000, full_ms: None };
        assert_eq!(decide(2_999, Some(age), 2_000, 0, 0), Decision::WaitUntil(3_000));
        assert_eq!(decide(3_000, Some(age), 2_000, 0, 0), Decision::Insert { count: 2 });
        assert_eq!(decide(3_000, Some(age), 2_000, 500, 0), Decision::WaitUntil(3_500));
        assert_eq!(decide(3_500, Some(age), 2_000, 500, 0), Decision::Insert { count: 2 });
    }

    #[test]
    fn a_full_batch_goes_at_once_and_takes_sixteen() {
        let age = QueueAge { queued: BATCH_SIZE, oldest_ms: 1_000, full_ms: Some(1_200) };
        // Long before max_wait: the batch's last commitment made it full at 1,200.
        assert_eq!(decide(1_200, Some(age), 600_000, 0, 0), Decision::Insert { count: BATCH_SIZE });
        assert_eq!(decide(1_200, Some(age), 600_000, 100, 0), Decision::WaitUntil(1_300));
    }

    #[test]
    fn a_back_off_delays_even_a_due_batch() {
        let age = QueueAge { queued: BATCH_SIZE, oldest_ms: 0, full_ms: Some(0) };
        assert_eq!(decide(5_000, Some(age), 0, 0, 9_000), Decision::WaitUntil(9_000));
        assert_eq!(decide(9_000, Some(age), 0, 0, 9_000), Decision::Insert { count: BATCH_SIZE });
    }

    #[test]
    fn failures_back_off_doubling_to_a_cap_and_a_success_clears_it() {
        let mut r = Retry::default();
        let waits: Vec<u64> = (0..12)
            .map(|_| {
                r.on(Attempt::Failed, 100, 1_000, 60_000);
                r.not_before_ms() - 100
            })
            .collect();
        assert_eq!(&waits[..7], &[1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
        assert!(waits[7..].iter().all(|w| *w == 60_000), "capped, never abandoned: {waits:?}");
        r.on(Attempt::LostRace, 200, 1_000, 60_000);
        assert_eq!((r.failures(), r.not_before_ms()), (0, 0), "a lost race re-plans at once");
        // Very many failures: no overflow.
        for _ in 0..100 {
            r.on(Attempt::Failed, u64::MAX - 5, 1_000, u64::MAX);
        }
        assert_eq!(r.not_before_ms(), u64::MAX);
    }

    #[test]
    fn the_mirror_plans_what_the_pool_would_insert() {
        let mut m = QueueMirror::new();
        for i in 0..3 {
            m.apply(&QueueEvent::Queued { index: i, commitment: leaf(i) }, 100 + i).unwrap();
        }
        assert_eq!(m.age(), Some(QueueAge { queued: 3, oldest_ms: 100, full_ms: None }));
        let plan = m.plan().unwrap().unwrap();
        assert_eq!(plan.count, 3);
        assert_eq!(plan.public.start_index, 0);
        assert_eq!(&plan.public.leaves[..3], &[leaf(0), leaf(1), leaf(2)]);
        assert!(plan.public.leaves[3..].iter().all(|l| *l == Fr::from(0u64)));
        assert!(nox_zk::insert::is_satisfied(&plan.public, &plan.witness).unwrap());
        // The pool's BatchInserted for it moves the mirror exactly as the plan said.
        m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 3, new_root: plan.public.new_root }, 0)
            .unwrap();
        assert_eq!(
            m.state(),
            PoolState { root: plan.public.new_root, next_leaf: BATCH_SIZE as u64, next_queue: 3, first_uninserted: 3 }
        );
        assert_eq!(m.age(), None);
        assert!(m.plan().unwrap().is_none());
        // A second batch continues at the next subtree and queue index 3, in order of queueing;
        // it ends where the pool keeps its next queue checkpoint (queue index BATCH_SIZE), so it
        // holds BATCH_SIZE − 3 leaves and is full once index BATCH_SIZE − 1 is queued.
        let b = BATCH_SIZE as u64;
        for i in 3..2 * b + 1 {
            m.apply(&QueueEvent::Queued { index: i, commitment: leaf(i) }, 1_000 + i).unwrap();
        }
        let age = m.age().unwrap();
        assert_eq!((age.queued as u64, age.oldest_ms, age.full_ms), (b - 3, 1_003, Some(1_000 + b - 1)));
        let plan = m.plan().unwrap().unwrap();
        assert_eq!((plan.count as u64, plan.public.start_index), (b - 3, b));
        assert_eq!(plan.public.leaves[0], leaf(3));
        assert!(nox_zk::insert::is_satisfied(&plan.public, &plan.witness).unwrap());
        m.apply(
            &QueueEvent::Inserted { start_leaf: b, first_queue: 3, count: b - 3, new_root: plan.public.new_root },
            0,
        )
        .unwrap();
        // Then whole batches, aligned on the queue index again.
        let plan = m.plan().unwrap().unwrap();
        assert_eq!((plan.count as u64, plan.public.leaves[0]), (b, leaf(b)));
        assert_eq!(m.age().unwrap().full_ms, Some(1_000 + 2 * b - 1));
    }

    #[test]
    fn a_batch_ends_at_the_next_queue_checkpoint_or_the_queue_end() {
        let b = BATCH_SIZE as u64;
        assert_eq!(batch_len(0, 3), 3);
        assert_eq!(batch_len(0, b + 5), b);
        assert_eq!(batch_len(3, b + 5), b - 3);
        assert_eq!(batch_len(3, 2), 2);
        assert_eq!(batch_len(b, 2 * b), b);
        assert_eq!(batch_len(2 * b - 1, 9), 1);
    }

    #[test]
    fn the_mirror_refuses_a_stream_that_does_not_add_up() {
        let mut m = QueueMirror::new();
        m.apply(&QueueEvent::Queued { index: 0, commitment: leaf(0) }, 0).unwrap();
        assert!(matches!(
            m.apply(&QueueEvent::Queued { index: 2, commitment: leaf(2) }, 0),
            Err(MirrorError::QueueGap { expected: 1, got: 2 })
        ));
        let good = m.plan().unwrap().unwrap().public.new_root;
        // A batch whose root is not that of its leaves (a lying node, a missed event).
        assert!(matches!(
            m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 1, new_root: Fr::from(5u64) }, 0),
            Err(MirrorError::Root)
        ));
        assert!(matches!(
            m.apply(&QueueEvent::Inserted { start_leaf: 16, first_queue: 0, count: 1, new_root: good }, 0),
            Err(MirrorError::BatchPosition { .. })
        ));
        assert!(matches!(
            m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 2, new_root: good }, 0),
            Err(MirrorError::BatchCount { count: 2, queued: 1 })
        ));
        // Refusals changed nothing: the true batch still applies.
        m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 1, new_root: good }, 0).unwrap();
        assert_eq!(m.state().next_leaf, BATCH_SIZE as u64);
    }

    fn word(x: u64) -> U256 {
        U256::from(x)
    }

    #[test]
    fn pool_logs_decode_to_queue_events() {
        use alloy_primitives::{Address, Bytes};
        let d = Deposited {
            queueIndex: word(7),
            commitment: word(11),
            asset: Address::ZERO,
            amount: word(1),
            memo: Bytes::from(vec![1, 2, 3]),
        };
        assert_eq!(
            decode_log(&d.encode_log_data()).unwrap(),
            vec![QueueEvent::Queued { index: 7, commitment: Fr::from(11u64) }]
        );
        let t = Transacted {
            firstQueueIndex: word(8),
            nullifiers: [word(1), word(2)],
            commitments: [word(21), word(22)],
            notes: [Bytes::new(), Bytes::new()],
            asset: Address::ZERO,
            publicIn: word(0),
            publicOut: word(0),
            fee: word(3),
            recipient: Address::ZERO,
            relayer: Address::ZERO,
            actionHash: Default::default(),
        };
        assert_eq!(
            decode_log(&t.encode_log_data()).unwrap(),
            vec![
                QueueEvent::Queued { index: 8, commitment: Fr::from(21u64) },
                QueueEvent::Queued { index: 9, commitment: Fr::from(22u64) }
            ]
        );
        let b = BatchInserted { startLeafIndex: word(16), firstQueueIndex: word(3), count: word(2), newRoot: word(9) };
        assert_eq!(
            decode_log(&b.encode_log_data()).unwrap(),
            vec![QueueEvent::Inserted { start_leaf: 16, first_queue: 3, count: 2, new_root: Fr::from(9u64) }]
        );
        // A commitment ≥ r is refused, not reduced.
        let bad = Deposited { commitment: U256::MAX, ..d };
        assert!(matches!(decode_log(&bad.encode_log_data()), Err(MirrorError::NotAScalar)));
        // Other events are not the inserter's.
        assert!(decode_log(&LogData::new_unchecked(vec![Default::default()], Bytes::new())).unwrap().is_empty());
    }
}
