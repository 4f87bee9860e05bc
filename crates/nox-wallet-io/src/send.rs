//! Sending the wallet's own Ethereum transactions (a deposit, an approval, a direct private
//! transaction, a batch insertion) and the journal's rule around them (issue 34: moved out of
//! the `nox wallet` command): a transaction that must not be sent twice is journalled once
//! broadcast, and a re-run asks the chain about it before sending anything
//! (`nox_wallet::journal` has the rule).

use std::time::Duration;

use alloy::primitives::{Address, B256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::{TransactionReceipt, TransactionRequest};
use nox_wallet::journal::{self, UNCONFIRMED};
use thiserror::Error;

use crate::{ChainError, DirError, WalletDir};

/// The seconds [`send_tx`] waits for a receipt.
pub const RECEIPT_TIMEOUT_S: u64 = 120;

/// Why a transaction did not land (or its outcome is unknown).
#[derive(Debug, Error)]
pub enum SendError {
    /// The endpoint refused the transaction: nothing was sent.
    #[error("{what}: {reason}")]
    Send {
        /// What the transaction does.
        what: String,
        /// The endpoint's answer.
        reason: String,
    },
    /// No receipt came back (an unjournalled transaction).
    #[error("{what}: waiting for the receipt: {reason}")]
    Receipt {
        /// What the transaction does.
        what: String,
        /// Why.
        reason: String,
    },
    /// It was mined and reverted.
    #[error("{what}: transaction {tx_hash} reverted")]
    Reverted {
        /// What the transaction does.
        what: String,
        /// Its hash.
        tx_hash: B256,
    },
    /// A journalled transaction was handed over and its answer lost, or an earlier run's is
    /// still pending: the message starts with [`UNCONFIRMED`].
    #[error("{0}")]
    Unconfirmed(String),
    /// The journal could not be read or written.
    #[error(transparent)]
    Journal(#[from] DirError),
    /// The chain could not be asked about a journalled transaction.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// Sends `tx` and waits for its receipt (up to [`RECEIPT_TIMEOUT_S`]); a revert is an error.
pub async fn send_tx(
    provider: &DynProvider,
    tx: TransactionRequest,
    what: &str,
) -> Result<TransactionReceipt, SendError> {
    let pending = provider
        .send_transaction(tx)
        .await
        .map_err(|e| SendError::Send { what: what.to_owned(), reason: e.to_string() })?;
    let receipt = pending
        .with_timeout(Some(Duration::from_secs(RECEIPT_TIMEOUT_S)))
        .get_receipt()
        .await
        .map_err(|e| SendError::Receipt { what: what.to_owned(), reason: e.to_string() })?;
    if !receipt.status() {
        return Err(SendError::Reverted { what: what.to_owned(), tx_hash: receipt.transaction_hash });
    }
    Ok(receipt)
}

/// As [`send_tx`], for a transaction that must not be sent twice: once broadcast (`broadcast`
/// is told its hash), its hash is written to `dir`'s journal under `entry.intent`; a receipt
/// clears the entry, and a receipt lost (no answer within `timeout`, the endpoint gone) is an
/// [`SendError::Unconfirmed`] naming the hash (the entry stays for a re-run to find).
pub async fn send_tx_journaled(
    provider: &DynProvider,
    tx: TransactionRequest,
    what: &str,
    dir: &WalletDir,
    mut entry: journal::Entry,
    timeout: Duration,
    broadcast: impl FnOnce(B256),
) -> Result<TransactionReceipt, SendError> {
    let pending = provider
        .send_transaction(tx)
        .await
        .map_err(|e| SendError::Send { what: what.to_owned(), reason: e.to_string() })?;
    let hash = *pending.tx_hash();
    entry.tx_hash = Some(hash);
    broadcast(hash);
    dir.journal_record(entry.clone())?;
    let receipt = match pending.with_timeout(Some(timeout)).get_receipt().await {
        Ok(r) => r,
        Err(e) => return Err(SendError::Unconfirmed(journal::lost(&entry, &format!("{what}: {e}")))),
    };
    dir.journal_resolve(&entry.intent)?;
    if !receipt.status() {
        return Err(SendError::Reverted { what: what.to_owned(), tx_hash: receipt.transaction_hash });
    }
    Ok(receipt)
}

/// What the journal says about a command before it hands a transaction over.
#[derive(Debug, PartialEq, Eq)]
pub enum Recall {
    /// Nothing outstanding: send.
    Nothing,
    /// An earlier run's transaction can no longer land (the reason, to show): send.
    SendAgain(String),
    /// An earlier run's transaction landed: report it, send nothing.
    Landed {
        /// Its hash.
        tx_hash: B256,
        /// Its block.
        block: u64,
    },
}

/// Before a command hands a transaction over: if an earlier run of the same command (`intent`)
/// lost its answer, asks the chain (the pool at `pool`) about that transaction, and forgets the
/// entry once its outcome is known. Still pending: an [`SendError::Unconfirmed`], nothing sent.
pub async fn recall(dir: &WalletDir, provider: &DynProvider, pool: Address, intent: &str) -> Result<Recall, SendError> {
    let j = dir.load_journal()?;
    let Some(entry) = j.find(intent).cloned() else { return Ok(Recall::Nothing) };
    let seen = crate::chain::journal_seen(provider, pool, &entry).await?;
    match journal::decide(&entry, &seen) {
        journal::Decision::AlreadyDone { tx_hash, block } => {
            dir.journal_resolve(intent)?;
            Ok(Recall::Landed { tx_hash, block })
        }
        journal::Decision::Wait(why) => {
            Err(SendError::Unconfirmed(format!("{UNCONFIRMED}{why}; nothing was sent again")))
        }
        journal::Decision::SendAgain(why) => {
            dir.journal_resolve(intent)?;
            Ok(Recall::SendAgain(why))
        }
    }
}
