//! The shielded pool (issues 12, 30; docs/design/zk-payment.md): bindings generated from the
//! committed artifacts, like [`crate::bindings`], and the pool's deployment. Every private
//! operation is one [`Transaction`] of the 2-in/2-out statement, submitted directly
//! (`ShieldedPool::transact`) or as a bundle's payment (`abi.encode(Transaction)` through the
//! executor's `pay`).

#![allow(missing_docs, clippy::too_many_arguments)]

use alloy::primitives::Address;
use alloy::providers::Provider;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use serde::{Deserialize, Serialize};

use crate::deploy::wallet_provider;
use crate::error::ChainError;

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    ShieldedPool,
    "../../contracts/artifacts/ShieldedPool.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    TransferVerifier,
    "../../contracts/artifacts/TransferVerifier.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    InsertVerifier,
    "../../contracts/artifacts/InsertVerifier.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    PoseidonT4,
    "../../contracts/artifacts/PoseidonT4.json"
);

sol! {
    /// The ERC-20 calls a wallet makes.
    #[sol(rpc)]
    #[derive(Debug)]
    interface IERC20 {
        function approve(address spender, uint256 amount) external returns (bool);
        function balanceOf(address who) external view returns (uint256);
        function transfer(address to, uint256 amount) external returns (bool);
    }
}

/// A private transaction (`ShieldedPool.Transaction`): the proof and the public values it states.
pub use ShieldedPool::Transaction;

/// Where a shielded pool lives (recorded in a testnet's `chain.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolDeployment {
    /// The pool.
    pub pool: Address,
    /// Its transfer (2-in/2-out) verifier.
    pub transfer_verifier: Address,
    /// Its insertion verifier.
    pub insert_verifier: Address,
    /// The Poseidon (three inputs) it computes deposit commitments with.
    pub poseidon: Address,
    /// The BatchExecutor whose `pay` calls it accepts.
    pub executor: Address,
    /// Roots accepted besides the current one, plus one.
    pub root_window: u64,
    /// Block of the deployment (wallets scan its events from here).
    pub block: u64,
}

/// Deploys the two verifiers (TESTNET keys: see `contracts/src/zk/*Verifier.sol`), Poseidon and
/// a pool paying into `executor`'s ledger.
pub async fn deploy_pool(
    rpc_url: &str,
    deployer: &PrivateKeySigner,
    executor: Address,
    root_window: u64,
) -> Result<PoolDeployment, ChainError> {
    let provider = wallet_provider(rpc_url, deployer)?;
    let transfer = TransferVerifier::deploy(&provider).await.map_err(ChainError::contract)?;
    let insert = InsertVerifier::deploy(&provider).await.map_err(ChainError::contract)?;
    let poseidon = PoseidonT4::deploy(&provider).await.map_err(ChainError::contract)?;
    let pool = ShieldedPool::deploy(
        &provider,
        *transfer.address(),
        *insert.address(),
        *poseidon.address(),
        executor,
        alloy::primitives::U256::from(root_window),
    )
    .await
    .map_err(ChainError::contract)?;
    let block = provider.get_block_number().await.map_err(ChainError::rpc)?;
    Ok(PoolDeployment {
        pool: *pool.address(),
        transfer_verifier: *transfer.address(),
        insert_verifier: *insert.address(),
        poseidon: *poseidon.address(),
        executor,
        root_window,
        block,
    })
}
