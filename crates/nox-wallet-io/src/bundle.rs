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
