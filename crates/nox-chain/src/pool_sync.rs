//! A wallet's view of the shielded pool, brought up to date from the pool's events: the
//! events decoded from logs ([`decode`]) and applied page by page ([`sync`]). Used by
//! `nox wallet` and by anything else that holds notes (the relayer's tests).

use alloy::primitives::Address;
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::Filter;
use nox_wallet::{PoolEvent, PoolView, Seed};

use crate::error::ChainError;

/// Blocks per `eth_getLogs` page: an exit's default bound is 1,000 blocks.
pub const LOG_PAGE: u64 = 1000;

fn bad(why: impl Into<String>) -> ChainError {
    ChainError::Rpc(why.into())
}

/// Decodes one pool log (`None` for events a wallet does not need): `nox_pool_events`'
/// decoder, the one `nox-wasm` and the relayer's inserter use.
pub fn decode(log: &alloy::rpc::types::Log) -> Result<Option<PoolEvent>, ChainError> {
    let data = log.data();
    nox_pool_events::wallet_event(data.topics(), &data.data).map_err(|e| bad(e.to_string()))
}

/// Applies the events of the pool at `pool` since the view's last block (from `from_block`
/// for a new view), page by page; returns the head block.
pub async fn sync(
    provider: &DynProvider,
    pool: Address,
    from_block: u64,
    seed: &Seed,
    view: &mut PoolView,
) -> Result<u64, ChainError> {
    let head = provider.get_block_number().await.map_err(ChainError::rpc)?;
    let mut from = view.last_block + 1;
    if view.last_block == 0 && view.notes().is_empty() {
        from = from.max(from_block);
    }
    while from <= head {
        let to = (from + LOG_PAGE - 1).min(head);
        let filter = Filter::new().address(pool).from_block(from).to_block(to);
        let logs =
            provider.get_logs(&filter).await.map_err(|e| bad(format!("reading pool events {from}..{to}: {e}")))?;
        for log in &logs {
            if log.removed {
                return Err(bad("the RPC endpoint returned a removed (reorganised) log; retry"));
            }
            if let Some(event) = decode(log)? {
                view.apply(seed, &event).map_err(|e| bad(format!("block {:?}: {e}", log.block_number)))?;
            }
        }
        view.last_block = to;
        from = to + 1;
    }
    Ok(head)
}
