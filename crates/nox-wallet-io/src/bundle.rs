//! The bundle file `nox wallet pay` writes (issue 34: moved out of the command): what a relayer
//! needs to submit a payment (and its action) with `BatchExecutor.execute(bundle)`.

use alloy::primitives::{Address, B256, Bytes, U256};

/// The bundle a relayer submits: `BatchExecutor.execute(bundle)` from the `relayer` account.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BundleFile {
    /// Chain id.
    pub chain_id: u64,
    /// The BatchExecutor.
    pub executor: Address,
    /// The payment plugin (the pool).
    pub payment: Address,
    /// `abi.encode(Transaction)`.
    pub payment_data: Bytes,
    /// The fee.
    pub fee: U256,
    /// The fee's asset (zero address: ETH).
    pub asset: Address,
    /// The only account whose submission the payment pays.
    pub relayer: Address,
    /// The action (zero: none).
    pub target: Address,
    /// The action's calldata.
    pub data: Bytes,
    /// The gas the executor forwards to the action (`Action.gas`).
    pub gas: u64,
    /// The raw execution hash `keccak256(target ‖ data ‖ fee ‖ gas)`.
    pub action_hash: B256,
    /// The transaction's two nullifiers (the exit refuses a bundle whose nullifier is spent).
    pub nullifiers: [U256; 2],
    /// Unix second after which the payment is refused.
    pub deadline: u64,
}

impl BundleFile {
    /// The file for `paid`, the proved `payment`: its payee's chain, executor, relayer and pool,
    /// its asset, fee, action (and the action's execution hash) and deadline, and the proved
    /// transaction's calldata and nullifiers.
    pub fn of(payment: &nox_pay::Payment<'_>, paid: &nox_pay::PaidBundle) -> Self {
        let action = &payment.action;
        BundleFile {
            chain_id: payment.payee.chain_id,
            executor: payment.payee.executor,
            payment: payment.payee.pool,
            payment_data: paid.submission.bundle.paymentData.clone(),
            fee: U256::from(payment.fee),
            asset: payment.asset,
            relayer: payment.payee.relayer,
            target: action.target,
            data: action.data.clone(),
            gas: action.gas,
            action_hash: B256::from(action.execution_hash(payment.fee)),
            nullifiers: paid.nullifiers,
            deadline: payment.deadline,
        }
    }
}
