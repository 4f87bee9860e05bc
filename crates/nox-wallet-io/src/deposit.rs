//! A deposit into the pool from an Ethereum account (issue 34: moved out of the `nox wallet
//! deposit` command): the note and its sealed memo made for the recipient, the ERC-20 approval
//! when the asset is a token, and the `deposit` call journalled once broadcast (a lost receipt is
//! an `UNCONFIRMED` error naming the hash; the command's re-run asks the journal first,
//! `send::recall`). The command keeps the arguments and the printing.

use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::providers::{DynProvider, Provider};
use nox_chain::pool::{IERC20, ShieldedPool};
use nox_wallet::PaymentAddress;
use nox_wallet::journal;
use nox_zk::field;
use rand_core_06::{CryptoRng, RngCore};
use thiserror::Error;

use crate::WalletDir;
use crate::send::{SendError, send_tx, send_tx_journaled};

/// Why a deposit was not made (or its outcome is unknown). The messages are the command's.
#[derive(Debug, Error)]
pub enum DepositError {
    /// The note could not be made (its commitment's inner hash).
    #[error("{0}")]
    Note(String),
    /// The approval or the deposit did not land, or its outcome is unknown
    /// ([`SendError::Unconfirmed`]).
    #[error(transparent)]
    Send(#[from] SendError),
    /// The chain's latest block (the journal's first block to search) could not be read.
    #[error("{0}")]
    Read(String),
}

/// A deposit's note, made before anything is sent: what goes into the `deposit` call.
#[derive(Clone, Debug)]
pub struct DepositNote {
    /// The pool's asset (`Address::ZERO`: ETH).
    pub asset: Address,
    /// In the asset's base unit.
    pub amount: u128,
    /// The note's inner commitment (the `deposit` call's `innerCommitment`).
    pub inner: U256,
    /// The note's opening sealed to the recipient (`nox_wallet::memo`).
    pub memo: Vec<u8>,
}

impl DepositNote {
    /// A fresh note of `amount` of `asset` for `to`, and its memo sealed to `to`.
    pub fn new<R: RngCore + CryptoRng>(
        to: &PaymentAddress,
        asset: Address,
        amount: u128,
        rng: &mut R,
    ) -> Result<Self, DepositError> {
        let asset_fr = field::address(&asset.0.0);
        let note = nox_zk::Note::new(amount, asset_fr, to.owner(), rng);
        let memo = nox_wallet::memo::seal(to, &asset_fr, amount, &note.blinding, rng);
        let inner = note.inner().map_err(|e| DepositError::Note(e.to_string()))?;
        Ok(DepositNote { asset, amount, inner: U256::from_be_bytes(field::to_be32(&inner)), memo })
    }
}

/// A landed deposit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deposited {
    /// The `deposit` transaction.
    pub tx_hash: B256,
    /// Its block.
    pub block: u64,
    /// The note's place in the pool's insertion queue (from the `Deposited` event; `None` if
    /// the receipt carries none).
    pub queue_index: Option<U256>,
    /// Gas of the approval (a token) and the deposit together.
    pub gas: u64,
}

/// Deposits `note` into the pool at `pool` from `sender`'s account: approves the pool first for
/// a token, then sends `deposit`, journalled in `dir` under `intent` once broadcast (`broadcast`
/// is told its hash) and waited for up to `timeout`. `reader` (the mixnet) gives the block the
/// journal searches from.
#[allow(clippy::too_many_arguments)]
pub async fn deposit(
    reader: &DynProvider,
    sender: &DynProvider,
    pool: Address,
    note: &DepositNote,
    dir: &WalletDir,
    intent: String,
    timeout: Duration,
    broadcast: impl FnOnce(B256),
) -> Result<Deposited, DepositError> {
    let contract = ShieldedPool::new(pool, sender);
    let value = U256::from(note.amount);
    let mut gas = 0u64;
    if note.asset != Address::ZERO {
        let token = IERC20::new(note.asset, sender);
        let tx = token.approve(pool, value).into_transaction_request();
        gas += send_tx(sender, tx, "approving the pool").await?.gas_used;
    }
    let call = contract.deposit(note.asset, value, note.inner, Bytes::from(note.memo.clone()));
    let tx = if note.asset == Address::ZERO { call.value(value) } else { call }.into_transaction_request();
    let entry = journal::Entry {
        intent,
        tx_hash: None,
        nullifiers: None,
        deadline: None,
        relayer: None,
        from_block: reader.get_block_number().await.map_err(|e| DepositError::Read(e.to_string()))?,
    };
    let receipt = send_tx_journaled(sender, tx, "deposit", dir, entry, timeout, broadcast).await?;
    gas += receipt.gas_used;
    let queue_index = receipt
        .inner
        .logs()
        .iter()
        .find_map(|l| l.log_decode::<ShieldedPool::Deposited>().ok())
        .map(|l| l.inner.data.queueIndex);
    Ok(Deposited {
        tx_hash: receipt.transaction_hash,
        block: receipt.block_number.unwrap_or_default(),
        queue_index,
        gas,
    })
}

#[cfg(test)]
mod tests {
    use rand_chacha_03::ChaCha20Rng;
    use rand_core_06::SeedableRng;

    use super::*;

    #[test]
    fn a_deposit_note_opens_for_its_recipient_only_with_its_amount() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let seed = nox_wallet::Seed::random(&mut rng);
        let other = nox_wallet::Seed::random(&mut rng);
        let to = seed.address().unwrap();
        let a = DepositNote::new(&to, Address::ZERO, 5, &mut rng).unwrap();
        let b = DepositNote::new(&to, Address::ZERO, 5, &mut rng).unwrap();
        // Fresh blinding each time: two equal deposits share no inner commitment.
        assert_ne!(a.inner, b.inner);
        assert_eq!((a.asset, a.amount), (Address::ZERO, 5));
        let eth = field::address(&Address::ZERO.0.0);
        let mine = nox_wallet::memo::open(&seed.viewing_key().unwrap(), &a.memo, &eth);
        assert!(matches!(mine, nox_wallet::memo::Opened::Mine { value: 5, .. }), "{mine:?}");
        let theirs = nox_wallet::memo::open(&other.viewing_key().unwrap(), &a.memo, &eth);
        assert!(matches!(theirs, nox_wallet::memo::Opened::NotMine), "{theirs:?}");
    }
}
