//! A private transaction submitted directly (`nox wallet … --direct`; issue 34: moved out of
//! the command): prepared with no fee and no relayer, and sent to the pool's `transact` from an
//! Ethereum account of the wallet's, which pays the gas and is seen sending it. The call is
//! journalled once broadcast with its nullifiers and deadline, so a re-run after a lost receipt
//! asks the chain (`send::recall`) instead of spending again. The command keeps the
//! confirmation, the prover's progress and the report.

use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionReceipt;
use alloy::sol_types::SolValue;
use nox_chain::pool::ShieldedPool;
use nox_wallet::{PaymentAddress, PoolView, PreparedTransaction, Seed, TxRequest, WalletError, journal};
use nox_zk::field;
use rand_core_06::{CryptoRng, RngCore};
use thiserror::Error;

use crate::WalletDir;
use crate::send::{SendError, send_tx_journaled};

/// Why a direct transaction did not land (or its outcome is unknown). The messages are the
/// command's.
#[derive(Debug, Error)]
pub enum DirectError {
    /// The proved transaction did not re-encode as the pool's `Transaction`.
    #[error("re-encoding: {0}")]
    Encode(String),
    /// The chain's latest block (the journal's first block to search) could not be read.
    #[error("{0}")]
    Read(String),
    /// It did not land, or its outcome is unknown ([`SendError::Unconfirmed`]).
    #[error(transparent)]
    Send(#[from] SendError),
}

/// What a direct transaction makes (the fee is 0: the submitting account pays the gas).
#[derive(Clone, Debug)]
pub struct DirectPlan {
    /// The asset (`Address::ZERO`: ETH).
    pub asset: Address,
    /// Shielded outputs besides the change.
    pub outputs: Vec<(PaymentAddress, u128)>,
    /// A join: the wallet's two smallest spendable notes become one.
    pub join: bool,
    /// Value leaving the pool to `recipient`.
    pub public_out: u128,
    /// Its receiver (`Address::ZERO` iff `public_out` is 0).
    pub recipient: Address,
}

impl DirectPlan {
    /// The wallet's request for it on the chain `chain_id`, pool `pool`, valid until `deadline`:
    /// no fee, no relayer, no action.
    pub fn request(&self, chain_id: u64, pool: Address, deadline: u64) -> TxRequest {
        TxRequest {
            asset: field::address(&self.asset.0.0),
            outputs: self.outputs.clone(),
            public_in: 0,
            public_out: self.public_out,
            fee: 0,
            recipient: self.recipient.0.0,
            relayer: [0; 20],
            execution_hash: [0; 32],
            chain_id,
            pool: pool.0.0,
            deadline,
            avoid: Vec::new(),
        }
    }

    /// Picks the notes and prepares the transaction for the prover (a join takes the two
    /// smallest). `WalletError::NeedsJoin`: the balance covers it but no two notes do.
    pub fn prepare<R: RngCore + CryptoRng>(
        &self,
        view: &PoolView,
        seed: &Seed,
        chain_id: u64,
        pool: Address,
        deadline: u64,
        rng: &mut R,
    ) -> Result<PreparedTransaction, WalletError> {
        let req = self.request(chain_id, pool, deadline);
        if self.join { view.prepare_join(seed, &req, rng) } else { view.prepare_transaction(seed, &req, rng) }
    }
}

/// Sends `transaction` (the proved `prepared`, as [`transaction`] makes it) to the pool at
/// `pool`'s `transact` from `sender`'s account,
/// journalled in `dir` under `intent` (with its nullifiers and `deadline`) once broadcast
/// (`broadcast` is told its hash), and waits up to `timeout` for the receipt. `reader` (the
/// mixnet) gives the block the journal searches from.
#[allow(clippy::too_many_arguments)]
pub async fn submit(
    reader: &DynProvider,
    sender: &DynProvider,
    pool: Address,
    prepared: &PreparedTransaction,
    transaction: ShieldedPool::Transaction,
    deadline: u64,
    dir: &WalletDir,
    intent: String,
    timeout: Duration,
    broadcast: impl FnOnce(B256),
) -> Result<TransactionReceipt, DirectError> {
    let tx = ShieldedPool::new(pool, sender).transact(transaction, B256::ZERO).into_transaction_request();
    let entry = journal::Entry {
        intent,
        tx_hash: None,
        nullifiers: Some(prepared.public.nullifiers.map(|n| U256::from_be_bytes(field::to_be32(&n)))),
        deadline: Some(deadline),
        relayer: None,
        from_block: reader.get_block_number().await.map_err(|e| DirectError::Read(e.to_string()))?,
    };
    Ok(send_tx_journaled(sender, tx, "transact", dir, entry, timeout, broadcast).await?)
}

/// The pool's `transact` argument for a proved transaction.
pub fn transaction(
    prepared: &PreparedTransaction,
    proof: &[u8; 256],
) -> Result<ShieldedPool::Transaction, DirectError> {
    let t = nox_pay::bundle::transaction_struct(proof, prepared);
    ShieldedPool::Transaction::abi_decode(&t.abi_encode()).map_err(|e| DirectError::Encode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_request_pays_no_fee_to_no_relayer() {
        let plan = DirectPlan {
            asset: Address::repeat_byte(0x11),
            outputs: Vec::new(),
            join: false,
            public_out: 7,
            recipient: Address::repeat_byte(0x22),
        };
        let req = plan.request(31337, Address::repeat_byte(0x33), 99);
        assert_eq!((req.fee, req.public_in, req.public_out), (0, 0, 7));
        assert_eq!(req.relayer, [0; 20]);
        assert_eq!(req.execution_hash, [0; 32]);
        assert_eq!(req.recipient, [0x22; 20]);
        assert_eq!((req.chain_id, req.pool, req.deadline), (31337, [0x33; 20], 99));
        assert_eq!(req.asset, field::address(&[0x11; 20]));
    }
}
