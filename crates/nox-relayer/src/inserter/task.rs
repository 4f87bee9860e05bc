//! The inserter's task (feature `service`): it mirrors the pool from its events, proves a due
//! batch with the insertion key and sends `insertBatch` through the relayer's nonce journal.

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
    /// The jitter drawn for the batch starting at this queue index, and when it was first seen
    /// (unix ms).
    jitter: Option<(u64, u64, u64)>,
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
        let now = unix_ms();
        let (jitter, seen_ms) = match self.jitter {
            Some((at, j, seen)) if at == first => (j, seen),
            _ => {
                let j = if c.jitter_ms == 0 { 0 } else { self.rng.next_u64() % (c.jitter_ms + 1) };
                self.jitter = Some((first, j, now));
                (j, now)
            }
        };
        match decide(now, age, c.max_wait_ms, jitter, seen_ms, self.retry.not_before_ms()) {
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
        let envelope =
            tx.clone().with_nonce(nonce).build(relayer.wallet()).await.map_err(|e| StepError::Sign(e.to_string()))?;
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
