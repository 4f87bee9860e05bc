//! A wallet's view of the shielded pool, brought up to date from the pool's events: the
//! events decoded from logs ([`decode`]) and applied page by page ([`sync`]). Used by
//! `nox wallet` and by anything else that holds notes (the relayer's tests).

use alloy::primitives::{Address, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::Filter;
use alloy::sol_types::SolEvent;
use ark_bn254::Fr;
use nox_wallet::{PoolEvent, PoolView, Seed};
use nox_zk::field;

use crate::error::ChainError;
use crate::pool::ShieldedPool;

/// Blocks per `eth_getLogs` page: an exit's default bound is 1,000 blocks.
pub const LOG_PAGE: u64 = 1000;

fn bad(why: impl Into<String>) -> ChainError {
    ChainError::Rpc(why.into())
}

fn word(x: U256) -> Result<Fr, ChainError> {
    field::from_be32(&x.to_be_bytes::<32>()).map_err(|_| bad("the pool emitted a word ≥ r"))
}

fn small(x: U256, what: &str) -> Result<u64, ChainError> {
    u64::try_from(x).map_err(|_| bad(format!("{what} out of range")))
}

fn asset_word(a: Address) -> Fr {
    field::address(&a.0.0)
}

/// Decodes one pool log (`None` for events a wallet does not need).
pub fn decode(log: &alloy::rpc::types::Log) -> Result<Option<PoolEvent>, ChainError> {
    let Some(topic) = log.topic0() else { return Ok(None) };
    let undecodable = |e: alloy::sol_types::Error| bad(format!("undecodable pool event: {e}"));
    Ok(Some(if *topic == ShieldedPool::Deposited::SIGNATURE_HASH {
        let e = ShieldedPool::Deposited::decode_log(&log.inner).map_err(undecodable)?.data;
        PoolEvent::Deposited {
            queue_index: small(e.queueIndex, "queue index")?,
            commitment: word(e.commitment)?,
            asset: asset_word(e.asset),
            amount: u128::try_from(e.amount).map_err(|_| bad("deposit amount ≥ 2^128"))?,
            memo: e.memo.to_vec(),
        }
    } else if *topic == ShieldedPool::Transacted::SIGNATURE_HASH {
        let e = ShieldedPool::Transacted::decode_log(&log.inner).map_err(undecodable)?.data;
        let value = |x: U256, what: &str| u128::try_from(x).map_err(|_| bad(format!("{what} ≥ 2^128")));
        PoolEvent::Transacted {
            first_queue_index: small(e.firstQueueIndex, "queue index")?,
            nullifiers: [word(e.nullifiers[0])?, word(e.nullifiers[1])?],
            commitments: [word(e.commitments[0])?, word(e.commitments[1])?],
            notes: [e.notes[0].to_vec(), e.notes[1].to_vec()],
            asset: asset_word(e.asset),
            public_in: value(e.publicIn, "publicIn")?,
            public_out: value(e.publicOut, "publicOut")?,
            fee: value(e.fee, "fee")?,
        }
    } else if *topic == ShieldedPool::BatchInserted::SIGNATURE_HASH {
        let e = ShieldedPool::BatchInserted::decode_log(&log.inner).map_err(undecodable)?.data;
        PoolEvent::BatchInserted {
            start_leaf: small(e.startLeafIndex, "leaf index")?,
            first_queue: small(e.firstQueueIndex, "queue index")?,
            count: small(e.count, "batch size")?,
            new_root: word(e.newRoot)?,
        }
    } else {
        return Ok(None);
    }))
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
