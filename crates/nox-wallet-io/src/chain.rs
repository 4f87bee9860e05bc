//! The wallet's reads of the pool over JSON-RPC (through the mixnet unless the caller chose a
//! direct endpoint): the chain's id and time, and what the chain says about a transaction the
//! journal holds. Moved unchanged from the `nox wallet` command (issue 34).

use alloy::{
    primitives::Address,
    providers::{DynProvider, Provider},
    transports::TransportError,
};
use nox_chain::pool::ShieldedPool;
use nox_wallet::journal::{self, Seen};
use nox_wallet::units::Unit;
use nox_wallet::{CorruptNote, PoolView, Seed, WalletError};

alloy::sol! {
    /// The ERC-20 metadata a wallet shows.
    #[sol(rpc)]
    interface IERC20Metadata {
        function symbol() external view returns (string);
        function decimals() external view returns (uint8);
    }
}

/// The unit of `asset`, read from the token (`symbol()`, `decimals()`) through `provider` — the
/// mixnet. A token that does not answer shows its address and base units.
pub async fn unit_of(provider: &DynProvider, asset: Address) -> Unit {
    if asset.is_zero() {
        return Unit::eth();
    }
    let token = IERC20Metadata::new(asset, provider);
    let symbol = token.symbol().call().await.ok();
    let decimals = token.decimals().call().await.ok();
    match (symbol, decimals) {
        (Some(symbol), Some(decimals)) if !symbol.trim().is_empty() => Unit { symbol, decimals },
        _ => Unit { symbol: format!("(token {asset}, base units)"), decimals: 0 },
    }
}

/// A failed read of the chain.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// A JSON-RPC read failed.
    #[error("{0}")]
    Rpc(TransportError),
    /// The node has no latest block.
    #[error("no latest block")]
    NoLatestBlock,
    /// A read about the journalled transaction failed.
    #[error("checking the earlier transaction: {0}")]
    Checking(TransportError),
    /// A call to the pool failed.
    #[error("{0}")]
    Call(alloy::contract::Error),
    /// The nullifier is spent but no `Transacted` event names it.
    #[error("the earlier transaction's nullifier is spent but no Transacted event since block {0} names it")]
    SpentUnfound(u64),
}

/// The chain's id and its latest block's timestamp.
pub async fn chain_context(provider: &DynProvider) -> Result<(u64, u64), ChainError> {
    let chain_id = provider.get_chain_id().await.map_err(ChainError::Rpc)?;
    let block = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(ChainError::Rpc)?
        .ok_or(ChainError::NoLatestBlock)?;
    Ok((chain_id, block.header.timestamp))
}

/// What the chain says about `entry` (read through `provider`: the mixnet unless
/// `--direct-rpc`): its receipt by hash, else (a private transaction) whether its nullifiers
/// are spent and by which `Transacted` event.
pub async fn journal_seen(provider: &DynProvider, pool: Address, entry: &journal::Entry) -> Result<Seen, ChainError> {
    let read = ChainError::Checking;
    if let Some(h) = entry.tx_hash
        && let Some(r) = provider.get_transaction_receipt(h).await.map_err(read)?
    {
        let spent = match entry.nullifiers {
            // A relayer's bundle can succeed while the payment in it did not happen only if the
            // pool refused it; the nullifiers say.
            Some([n, _]) => ShieldedPool::new(pool, provider).isSpent(n).call().await.map_err(ChainError::Call)?,
            None => true,
        };
        return Ok(Seen::Mined { tx_hash: h, block: r.block_number.unwrap_or_default(), success: r.status() && spent });
    }
    if let Some([n0, n1]) = entry.nullifiers
        && ShieldedPool::new(pool, provider).isSpent(n0).call().await.map_err(ChainError::Call)?
    {
        // Find the transaction that spent it: the pool's Transacted event naming the nullifier.
        use alloy::{rpc::types::Filter, sol_types::SolEvent};
        let head = provider.get_block_number().await.map_err(read)?;
        let mut from = entry.from_block;
        while from <= head {
            let to = (from + nox_chain::pool_sync::LOG_PAGE - 1).min(head);
            let filter = Filter::new()
                .address(pool)
                .event_signature(ShieldedPool::Transacted::SIGNATURE_HASH)
                .from_block(from)
                .to_block(to);
            for log in provider.get_logs(&filter).await.map_err(read)? {
                if let Ok(t) = log.log_decode::<ShieldedPool::Transacted>()
                    && (t.inner.data.nullifiers.contains(&n0) || t.inner.data.nullifiers.contains(&n1))
                {
                    return Ok(Seen::Mined {
                        tx_hash: log.transaction_hash.unwrap_or_default(),
                        block: log.block_number.unwrap_or_default(),
                        success: true,
                    });
                }
            }
            from = to + 1;
        }
        return Err(ChainError::SpentUnfound(entry.from_block));
    }
    if let Some(h) = entry.tx_hash
        && provider.get_transaction_by_hash(h).await.map_err(read)?.is_some()
    {
        return Ok(Seen::Pending);
    }
    let (_, now) = chain_context(provider).await?;
    Ok(Seen::Unknown { now })
}

/// A failed sync: a read (the endpoint), or events the view refuses.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Reading the chain's head failed.
    #[error("{0}")]
    Head(TransportError),
    /// Reading a page of the pool's events failed.
    #[error("reading pool events {from}..{to}: {source}")]
    Logs {
        /// The page's first block.
        from: u64,
        /// Its last block.
        to: u64,
        /// The read's error.
        source: TransportError,
    },
    /// The endpoint returned a removed (reorganised) log.
    #[error("the RPC endpoint returned a removed (reorganised) log; retry")]
    Removed,
    /// A pool log does not decode.
    #[error("{0}")]
    Decode(nox_chain::ChainError),
    /// The view refuses an event (the endpoint omitted, repeated or invented events).
    #[error("block {block:?}: {source}")]
    Apply {
        /// The event's block.
        block: Option<u64>,
        /// The view's error.
        source: WalletError,
    },
    /// A pool event came without its block number.
    #[error("a pool event without its block number")]
    NoBlockNumber,
    /// Reading a block (for its time) failed.
    #[error("reading block {number}: {source}")]
    Block {
        /// The block.
        number: u64,
        /// The read's error.
        source: TransportError,
    },
    /// The node does not know the block.
    #[error("block {0} not found")]
    BlockNotFound(u64),
}

impl SyncError {
    /// Whether the error is a failed read of the endpoint (the `nox` commands then say whether
    /// anything listens there), not events the view refuses.
    pub fn is_read(&self) -> bool {
        !matches!(self, SyncError::Removed | SyncError::Decode(_) | SyncError::Apply { .. })
    }
}

/// What a sync reports as it goes (the caller prints it).
#[derive(Debug)]
pub enum SyncProgress<'a> {
    /// A page of blocks was scanned.
    Page {
        /// The first block of this sync.
        first: u64,
        /// The page's last block.
        to: u64,
        /// The chain's head.
        head: u64,
        /// Pool events applied in this sync so far.
        events: usize,
        /// This wallet's notes found in this sync so far.
        new_notes: usize,
    },
    /// A ciphertext addressed to this wallet does not open or does not match its commitment.
    Corrupt(&'a CorruptNote),
    /// The sync is done.
    Done {
        /// This wallet's notes found.
        found: usize,
        /// Corrupt notes found.
        corrupt: usize,
    },
}

/// Where the pool's events are read from.
#[derive(Clone, Copy, Debug)]
pub struct PoolSpan {
    /// The pool.
    pub pool: Address,
    /// The first block to read (the pool's deployment).
    pub from_block: u64,
}

/// Applies the pool's events since the view's last block, page by page (the decoding is
/// `nox_chain::pool_sync`'s), reporting progress to `progress`: blocks and events scanned, this
/// wallet's notes found, and every ciphertext addressed to it that does not open or does not
/// match its commitment (tampered or re-targeted: reported, never silently dropped). Returns the
/// chain's head.
pub async fn sync(
    provider: &DynProvider,
    at: PoolSpan,
    seed: &Seed,
    view: &mut PoolView,
    progress: &mut dyn FnMut(SyncProgress<'_>),
) -> Result<u64, SyncError> {
    use alloy::rpc::types::Filter;
    let head = provider.get_block_number().await.map_err(SyncError::Head)?;
    let first = (view.last_block + 1).max(at.from_block);
    let (notes_before, corrupt_before) = (view.notes().len(), view.corrupt_notes().len());
    let mut from = first;
    let mut events = 0usize;
    let mut times = std::collections::HashMap::new();
    while from <= head {
        let to = (from + nox_chain::pool_sync::LOG_PAGE - 1).min(head);
        let filter = Filter::new().address(at.pool).from_block(from).to_block(to);
        let logs = provider.get_logs(&filter).await.map_err(|source| SyncError::Logs { from, to, source })?;
        for log in &logs {
            if log.removed {
                return Err(SyncError::Removed);
            }
            if let Some(event) = nox_chain::pool_sync::decode(log).map_err(SyncError::Decode)? {
                view.apply(seed, &event).map_err(|source| SyncError::Apply { block: log.block_number, source })?;
                if let nox_wallet::PoolEvent::Deposited { queue_index, .. } = &event {
                    // The privacy advice compares a withdrawal with the deposits' times.
                    let time = match log.block_timestamp {
                        Some(t) => t,
                        None => block_time(provider, log.block_number, &mut times).await?,
                    };
                    view.set_deposit_time(*queue_index, time);
                }
                events += 1;
            }
        }
        view.last_block = to;
        progress(SyncProgress::Page { first, to, head, events, new_notes: view.notes().len() - notes_before });
        from = to + 1;
    }
    for c in &view.corrupt_notes()[corrupt_before..] {
        progress(SyncProgress::Corrupt(c));
    }
    progress(SyncProgress::Done {
        found: view.notes().len() - notes_before,
        corrupt: view.corrupt_notes().len() - corrupt_before,
    });
    Ok(head)
}

/// The time of block `number` (cached in `times`: a block holds many events).
async fn block_time(
    provider: &DynProvider,
    number: Option<u64>,
    times: &mut std::collections::HashMap<u64, u64>,
) -> Result<u64, SyncError> {
    let number = number.ok_or(SyncError::NoBlockNumber)?;
    if let Some(t) = times.get(&number) {
        return Ok(*t);
    }
    let block = provider
        .get_block_by_number(number.into())
        .await
        .map_err(|source| SyncError::Block { number, source })?
        .ok_or(SyncError::BlockNotFound(number))?;
    times.insert(number, block.header.timestamp);
    Ok(block.header.timestamp)
}
