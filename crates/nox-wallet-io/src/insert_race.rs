//! `nox wallet insert` against the exits' inserters (issue 35): the manual insertion is the rare
//! path now that every exit's relayer inserts queued notes on its own
//! (`nox_relayer::inserter`), so it usually races one. Proving takes seconds; an inserter that
//! lands the same batch meanwhile makes the pool refuse ours (`InvalidProof`: the root moved;
//! `CountMismatch`/`NothingQueued`: the queue moved). Just before sending, the command re-reads
//! the pool's queue start and simulates the exact call from its own account
//! (`eth_estimateGas`, as the inserter's `submit` does); a batch that someone else inserted is
//! reported with who inserted it, and nothing is sent.

use alloy::transports::TransportError;
use alloy::{
    primitives::{Address, B256, U256},
    providers::{DynProvider, Provider},
    rpc::types::{Filter, TransactionRequest},
    sol_types::SolEvent,
};
use nox_chain::pool::ShieldedPool;

/// Why a check of the race could not be made (the message says which read failed).
#[derive(Debug, thiserror::Error)]
pub enum RaceError {
    /// Reading the pool's queue start failed.
    #[error("reading the pool's queue start: {0}")]
    QueueStart(alloy::contract::Error),
    /// Reading the chain's head failed.
    #[error("{0}")]
    Head(TransportError),
    /// Reading the pool's `BatchInserted` events failed.
    #[error("reading the pool's insertions: {0}")]
    Insertions(TransportError),
    /// Reading the insertion's transaction failed.
    #[error("reading insertion {tx_hash}: {source}")]
    Insertion {
        /// The insertion's transaction.
        tx_hash: B256,
        /// The read's error.
        source: TransportError,
    },
    /// The node does not know the insertion's transaction.
    #[error("insertion {0} not found")]
    InsertionNotFound(B256),
    /// The pool refuses the batch although its queue still starts at it.
    #[error(
        "the pool refuses this batch although its queue still starts at it ({0}): the wallet's view may be stale; \
         run `nox wallet insert` again"
    )]
    Refused(TransportError),
    /// The simulation failed for another reason.
    #[error("simulating insertBatch from {from}: {source}")]
    Simulation {
        /// The sender's account.
        from: Address,
        /// The simulation's error.
        source: TransportError,
    },
}

/// Who inserted the batch holding a queue index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertedBy {
    /// The account that sent the `insertBatch` (an exit's relayer, usually).
    pub from: Address,
    /// Its transaction.
    pub tx_hash: B256,
    /// Its block.
    pub block: u64,
}

/// What to do with a proved batch just before sending it.
#[derive(Debug)]
pub enum BeforeSend {
    /// The pool still waits for it; the simulation passed and estimated this much gas.
    Send {
        /// `eth_estimateGas` of the exact call from the sender's account.
        gas: u64,
    },
    /// Someone else inserted it (`None`: the pool's queue moved past it, but the event was not
    /// found in the blocks searched).
    AlreadyInserted(Option<InsertedBy>),
}

/// Whether the pool's queue already starts past `first_queued` (the batch's first leaf).
pub async fn queue_moved_past(provider: &DynProvider, pool: Address, first_queued: u64) -> Result<bool, RaceError> {
    let first =
        ShieldedPool::new(pool, provider).firstUninsertedQueueIndex().call().await.map_err(RaceError::QueueStart)?;
    Ok(first > U256::from(first_queued))
}

/// The `BatchInserted` event (searched from block `from_block` on) whose batch holds queue index
/// `first_queued`, and the account that sent it.
pub async fn inserted_by(
    provider: &DynProvider,
    pool: Address,
    first_queued: u64,
    from_block: u64,
) -> Result<Option<InsertedBy>, RaceError> {
    let head = provider.get_block_number().await.map_err(RaceError::Head)?;
    let filter = Filter::new()
        .address(pool)
        .event_signature(ShieldedPool::BatchInserted::SIGNATURE_HASH)
        .from_block(from_block.min(head))
        .to_block(head);
    let logs = provider.get_logs(&filter).await.map_err(RaceError::Insertions)?;
    for log in logs {
        let Ok(e) = ShieldedPool::BatchInserted::decode_log(&log.inner) else { continue };
        let (first, count) = (e.data.firstQueueIndex, e.data.count);
        let holds = first <= U256::from(first_queued) && U256::from(first_queued) < first.saturating_add(count);
        let (Some(tx_hash), Some(block)) = (log.transaction_hash, log.block_number) else { continue };
        if !holds {
            continue;
        }
        let tx = provider
            .get_transaction_by_hash(tx_hash)
            .await
            .map_err(|source| RaceError::Insertion { tx_hash, source })?
            .ok_or(RaceError::InsertionNotFound(tx_hash))?;
        return Ok(Some(InsertedBy { from: tx.inner.signer(), tx_hash, block }));
    }
    Ok(None)
}

/// Whether an `eth_estimateGas` error is the pool refusing a batch that moved under it.
fn is_lost_race<E: std::fmt::Display>(e: &alloy::transports::RpcError<E>) -> bool {
    e.as_error_resp().and_then(|r| r.as_decoded_interface_error::<ShieldedPool::ShieldedPoolErrors>()).is_some_and(
        |err| {
            matches!(
                err,
                ShieldedPool::ShieldedPoolErrors::CountMismatch(_)
                    | ShieldedPool::ShieldedPoolErrors::NothingQueued(_)
                    | ShieldedPool::ShieldedPoolErrors::InvalidProof(_)
                    | ShieldedPool::ShieldedPoolErrors::QueueMismatch(_)
            )
        },
    )
}

/// The check just before sending `call` (an `insertBatch` of the batch starting at queue index
/// `first_queued`) from `from`: re-reads the queue start, then simulates the call. `synced_to`
/// is the block the wallet synced to (where the search for a rival insertion starts).
pub async fn before_send(
    provider: &DynProvider,
    pool: Address,
    from: Address,
    call: &TransactionRequest,
    first_queued: u64,
    synced_to: u64,
) -> Result<BeforeSend, RaceError> {
    if queue_moved_past(provider, pool, first_queued).await? {
        return Ok(BeforeSend::AlreadyInserted(inserted_by(provider, pool, first_queued, synced_to).await?));
    }
    let request = call.clone().from(from);
    match provider.estimate_gas(request).await {
        Ok(gas) => Ok(BeforeSend::Send { gas }),
        Err(e) => {
            // The pool may have moved between the read above and the simulation: read again.
            if queue_moved_past(provider, pool, first_queued).await? {
                return Ok(BeforeSend::AlreadyInserted(inserted_by(provider, pool, first_queued, synced_to).await?));
            }
            if is_lost_race(&e) {
                return Err(RaceError::Refused(e));
            }
            Err(RaceError::Simulation { from, source: e })
        }
    }
}

/// The line printed when someone else inserted the batch.
pub fn already_inserted_line(by: Option<InsertedBy>, first_queued: u64) -> String {
    match by {
        Some(b) => format!("already inserted by {} in block {} (tx {}); nothing to do", b.from, b.block, b.tx_hash),
        None => format!(
            "already inserted by someone else (the pool's queue has moved past index {first_queued}); nothing to do"
        ),
    }
}
