//! The registry's operator calls and the relayer's claim, against any JSON-RPC endpoint, from the
//! operator's key. Each call checks the endpoint's chain id against the deployment record first.

use alloy::primitives::{Address, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::signers::local::PrivateKeySigner;
use nox_chain::Registration;
use nox_chain::bindings::{NodeRegistry, NoxStakeToken, RewardLedger};
use nox_chain::deploy::wallet_provider;

use crate::deploy::DeploymentRecord;
use crate::error::OperatorError;

/// An upper bound on `register`'s gas when it cannot be estimated yet (the stake is not approved
/// before the operator agrees): the most measured over 191 registrations (338,752 gas,
/// docs/benchmarks/gas.md), rounded up.
pub const REGISTER_GAS_BOUND: u64 = 350_000;

/// The registry's status of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// No record (never registered, withdrawn or slashed).
    None,
    /// In the active list.
    Active,
    /// Left the list; stake withdrawable from `available_at` (unix seconds).
    Unstaking {
        /// When `withdraw` succeeds.
        available_at: u64,
    },
}

/// What `status` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorStatus {
    /// The operator account.
    pub operator: Address,
    /// Its node's status.
    pub status: NodeStatus,
    /// The registered node (absent with [`NodeStatus::None`]).
    pub node: Option<Registration>,
    /// ETH balance (wei).
    pub eth: U256,
    /// Stake token balance.
    pub tokens: U256,
    /// Unclaimed relayer rewards in the ledger: (asset, amount), ETH as the zero address.
    pub rewards: Vec<(Address, U256)>,
}

/// What registering costs, shown before the operator agrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterQuote {
    /// Stake to lock.
    pub stake: U256,
    /// The registry's minimum.
    pub min_stake: U256,
    /// The operator's stake token balance.
    pub tokens: U256,
    /// The operator's ETH.
    pub eth: U256,
    /// Gas of the approval (0 when the allowance already suffices).
    pub approve_gas: u64,
    /// Gas of `register` (estimated, or [`REGISTER_GAS_BOUND`] before approval).
    pub register_gas: u64,
    /// Whether `register_gas` is the bound rather than an estimate.
    pub register_gas_is_bound: bool,
    /// Current gas price (wei).
    pub gas_price: u128,
}

impl RegisterQuote {
    /// The most this costs in ETH (wei) at the current gas price.
    pub fn max_fee(&self) -> U256 {
        U256::from(self.gas_price) * U256::from(self.approve_gas + self.register_gas)
    }
}

/// A provider signing with `operator`, on the chain of `record` (refused otherwise).
pub async fn connect(
    rpc_url: &str,
    record: &DeploymentRecord,
    operator: &PrivateKeySigner,
) -> Result<DynProvider, OperatorError> {
    let provider = wallet_provider(rpc_url, operator)?;
    let actual = provider.get_chain_id().await.map_err(OperatorError::rpc)?;
    if actual != record.chain_id {
        return Err(OperatorError::WrongChain { expected: record.chain_id, actual });
    }
    Ok(provider)
}

async fn confirm(
    sent: Result<alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>, impl core::fmt::Display>,
    what: &str,
) -> Result<(), OperatorError> {
    let receipt = sent.map_err(OperatorError::contract)?.get_receipt().await.map_err(OperatorError::rpc)?;
    if receipt.status() { Ok(()) } else { Err(OperatorError::contract(format!("{what} reverted"))) }
}

/// Prices a registration: balances, minimum, gas. Refuses a stake below the minimum or above
/// the balance, and an operator already registered.
pub async fn quote_register(
    provider: &DynProvider,
    record: &DeploymentRecord,
    operator: Address,
    registration: &Registration,
) -> Result<RegisterQuote, OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    let token = NoxStakeToken::new(record.contracts.stake_token, provider);
    let min_stake = registry.minStake().call().await.map_err(OperatorError::contract)?;
    let tokens = token.balanceOf(operator).call().await.map_err(OperatorError::contract)?;
    let eth = provider.get_balance(operator).await.map_err(OperatorError::rpc)?;
    let node = registry.nodeOf(operator).call().await.map_err(OperatorError::contract)?;
    if node.status != 0 {
        return Err(OperatorError::State(format!("{operator} already has a node in the registry")));
    }
    if registration.stake < min_stake {
        return Err(OperatorError::State(format!("stake {} is below the minimum {min_stake}", registration.stake)));
    }
    if tokens < registration.stake {
        return Err(OperatorError::State(format!(
            "{operator} holds {tokens} stake tokens, {} needed",
            registration.stake
        )));
    }
    let allowance =
        token.allowance(operator, record.contracts.registry).call().await.map_err(OperatorError::contract)?;
    let register_call = registry.register(
        registration.identity_key.into(),
        registration.link_key.into(),
        registration.link_address.clone(),
        registration.role,
        registration.stake,
    );
    let (approve_gas, register_gas, bound) = if allowance >= registration.stake {
        (0, register_call.from(operator).estimate_gas().await.map_err(OperatorError::contract)?, false)
    } else {
        let approve = token
            .approve(record.contracts.registry, registration.stake)
            .from(operator)
            .estimate_gas()
            .await
            .map_err(OperatorError::contract)?;
        (approve, REGISTER_GAS_BOUND, true)
    };
    let gas_price = provider.get_gas_price().await.map_err(OperatorError::rpc)?;
    Ok(RegisterQuote {
        stake: registration.stake,
        min_stake,
        tokens,
        eth,
        approve_gas,
        register_gas,
        register_gas_is_bound: bound,
        gas_price,
    })
}

/// The operator's node, balances and unclaimed rewards (in ETH and the stake token, plus `assets`).
pub async fn status(
    provider: &DynProvider,
    record: &DeploymentRecord,
    operator: Address,
    assets: &[Address],
) -> Result<OperatorStatus, OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    let token = NoxStakeToken::new(record.contracts.stake_token, provider);
    let ledger = RewardLedger::new(record.contracts.ledger, provider);
    let node = registry.nodeOf(operator).call().await.map_err(OperatorError::contract)?;
    let status = match node.status {
        0 => NodeStatus::None,
        1 => NodeStatus::Active,
        _ => NodeStatus::Unstaking { available_at: node.unstakeAvailableAt },
    };
    let registration = (status != NodeStatus::None).then(|| Registration {
        identity_key: node.identityKey.0,
        link_key: node.linkKey.0,
        link_address: node.linkAddress.clone(),
        role: node.role,
        stake: node.stake,
    });
    let mut rewards = Vec::new();
    let mut all = vec![Address::ZERO, record.contracts.stake_token];
    all.extend(assets.iter().copied().filter(|a| *a != Address::ZERO && *a != record.contracts.stake_token));
    for asset in all {
        let amount = ledger.balanceOf(operator, asset).call().await.map_err(OperatorError::contract)?;
        if !amount.is_zero() {
            rewards.push((asset, amount));
        }
    }
    Ok(OperatorStatus {
        operator,
        status,
        node: registration,
        eth: provider.get_balance(operator).await.map_err(OperatorError::rpc)?,
        tokens: token.balanceOf(operator).call().await.map_err(OperatorError::contract)?,
        rewards,
    })
}

/// Replaces the node's identity key.
pub async fn rotate(
    provider: &DynProvider,
    record: &DeploymentRecord,
    identity_key: [u8; 32],
) -> Result<(), OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    confirm(registry.rotateIdentityKey(identity_key.into()).send().await, "rotateIdentityKey").await
}

/// Changes the node's link key, address and role.
pub async fn update(
    provider: &DynProvider,
    record: &DeploymentRecord,
    link_key: [u8; 32],
    link_address: &str,
    role: u8,
) -> Result<(), OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    confirm(registry.updateNode(link_key.into(), link_address.to_owned(), role).send().await, "updateNode").await
}

/// Leaves the active list at once; the stake stays (slashable) for the unstake delay. Returns
/// when it can be withdrawn (unix seconds).
pub async fn unstake(
    provider: &DynProvider,
    record: &DeploymentRecord,
    operator: Address,
) -> Result<u64, OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    confirm(registry.requestUnstake().send().await, "requestUnstake").await?;
    let node = registry.nodeOf(operator).call().await.map_err(OperatorError::contract)?;
    Ok(node.unstakeAvailableAt)
}

/// Withdraws the stake after the delay; returns the amount.
pub async fn withdraw(
    provider: &DynProvider,
    record: &DeploymentRecord,
    operator: Address,
) -> Result<U256, OperatorError> {
    let registry = NodeRegistry::new(record.contracts.registry, provider);
    let node = registry.nodeOf(operator).call().await.map_err(OperatorError::contract)?;
    if node.status != 2 {
        return Err(OperatorError::State(format!(
            "{operator} has no node unstaking: run `nox operator unstake` first"
        )));
    }
    let now = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(OperatorError::rpc)?
        .map(|b| b.header.timestamp)
        .unwrap_or(0);
    if now < node.unstakeAvailableAt {
        return Err(OperatorError::State(format!(
            "the stake is withdrawable from unix time {} ({} s from now)",
            node.unstakeAvailableAt,
            node.unstakeAvailableAt - now
        )));
    }
    confirm(registry.executeUnstake().send().await, "executeUnstake").await?;
    Ok(node.stake)
}

/// Claims the relayer's whole ledger balance of `asset` (zero address: ETH) to `to`; returns
/// the amount.
pub async fn claim(
    provider: &DynProvider,
    record: &DeploymentRecord,
    operator: Address,
    asset: Address,
    to: Address,
) -> Result<U256, OperatorError> {
    let ledger = RewardLedger::new(record.contracts.ledger, provider);
    let amount = ledger.balanceOf(operator, asset).call().await.map_err(OperatorError::contract)?;
    if amount.is_zero() {
        return Err(OperatorError::State(format!("no reward of {asset} to claim for {operator}")));
    }
    confirm(ledger.claim(asset, to).send().await, "claim").await?;
    Ok(amount)
}
