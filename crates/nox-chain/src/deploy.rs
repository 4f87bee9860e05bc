//! Deploying the NOX contracts (testnets) and registering nodes (any chain).

use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use serde::{Deserialize, Serialize};

use crate::bindings::{BatchExecutor, Erc20Payment, NodeRegistry, NoxStakeToken};
use crate::error::ChainError;

/// Where a NOX deployment lives: what `nox testnet up` writes to `chain.json` and what nodes
/// and clients are configured with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Chain id.
    pub chain_id: u64,
    /// The node registry.
    pub registry: Address,
    /// The ERC-20 staked in the registry.
    pub stake_token: Address,
    /// The batch executor (relayers submit bundles to it).
    pub executor: Address,
    /// The reward ledger the executor credits (deployed by the executor).
    pub ledger: Address,
    /// The plain ERC-20 payment plugin of the executor.
    pub erc20_payment: Address,
    /// Block of the deployment.
    pub block: u64,
}

/// Registry parameters.
#[derive(Clone, Copy, Debug)]
pub struct RegistryParams {
    /// Minimum stake (token base units).
    pub min_stake: U256,
    /// Seconds between an unstake request and its execution (the window for slashing).
    pub unstake_delay: u64,
    /// Share of a slashed stake paid to the reporter, in basis points.
    pub slash_reporter_bps: u16,
    /// Stake tokens minted to the deployer (testnet token only).
    pub token_supply: U256,
}

/// A provider that signs with `key`.
pub fn wallet_provider(rpc_url: &str, key: &PrivateKeySigner) -> Result<DynProvider, ChainError> {
    let url = rpc_url.parse().map_err(|e| ChainError::Config(format!("RPC URL {rpc_url:?}: {e}")))?;
    Ok(ProviderBuilder::new().wallet(EthereumWallet::from(key.clone())).connect_http(url).erased())
}

/// Waits for a sent transaction's receipt; a reverted one is `ChainError::Contract(what reverted)`.
pub(crate) async fn confirm(
    sent: Result<alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>, impl core::fmt::Display>,
    what: &str,
) -> Result<(), ChainError> {
    let receipt = sent.map_err(ChainError::contract)?.get_receipt().await.map_err(ChainError::rpc)?;
    if receipt.status() { Ok(()) } else { Err(ChainError::Contract(format!("{what} reverted"))) }
}

/// Parses a hex private key (with or without `0x`).
pub fn signer(hex_key: &str) -> Result<PrivateKeySigner, ChainError> {
    hex_key.trim().parse().map_err(|e| ChainError::Config(format!("private key: {e}")))
}

/// Unlocks a Web3 Secret Storage v3 keystore (the JSON geth, cast and foundry write; `nox operator
/// new-key`) with `passphrase`. A wrong passphrase is named as such.
pub fn keystore_signer(path: &std::path::Path, passphrase: &str) -> Result<PrivateKeySigner, ChainError> {
    use alloy::signers::local::LocalSignerError;
    if !path.is_file() {
        return Err(ChainError::Config(format!("operator keystore {}: no such file", path.display())));
    }
    PrivateKeySigner::decrypt_keystore(path, passphrase).map_err(|e| match e {
        LocalSignerError::EthKeystoreError(eth_keystore::KeystoreError::MacMismatch) => {
            ChainError::Config(format!("wrong passphrase for operator keystore {}", path.display()))
        }
        other => ChainError::Config(format!("operator keystore {}: {other}", path.display())),
    })
}

/// Deploys the testnet stake token, the registry, the executor (which deploys its ledger) and
/// the ERC-20 payment plugin, from `deployer`.
pub async fn deploy(
    rpc_url: &str,
    deployer: &PrivateKeySigner,
    params: RegistryParams,
) -> Result<Deployment, ChainError> {
    let provider = wallet_provider(rpc_url, deployer)?;
    let chain_id = provider.get_chain_id().await.map_err(ChainError::rpc)?;
    let token = NoxStakeToken::deploy(&provider, deployer.address(), params.token_supply)
        .await
        .map_err(ChainError::contract)?;
    let registry = NodeRegistry::deploy(
        &provider,
        *token.address(),
        params.min_stake,
        params.unstake_delay,
        params.slash_reporter_bps,
    )
    .await
    .map_err(ChainError::contract)?;
    let executor = BatchExecutor::deploy(&provider).await.map_err(ChainError::contract)?;
    let ledger = executor.ledger().call().await.map_err(ChainError::contract)?;
    let payment = Erc20Payment::deploy(&provider, *executor.address()).await.map_err(ChainError::contract)?;
    let block = provider.get_block_number().await.map_err(ChainError::rpc)?;
    Ok(Deployment {
        chain_id,
        registry: *registry.address(),
        stake_token: *token.address(),
        executor: *executor.address(),
        ledger,
        erc20_payment: *payment.address(),
        block,
    })
}

/// Sends `eth` wei and `tokens` stake tokens from `funder` to `to`, waiting for both receipts.
pub async fn fund(
    rpc_url: &str,
    deployment: &Deployment,
    funder: &PrivateKeySigner,
    to: Address,
    eth: U256,
    tokens: U256,
) -> Result<(), ChainError> {
    fund_eth(rpc_url, funder, to, eth).await?;
    let provider = wallet_provider(rpc_url, funder)?;
    let token = NoxStakeToken::new(deployment.stake_token, &provider);
    confirm(token.transfer(to, tokens).send().await, &format!("funding {to} with stake tokens")).await
}

/// Sends `eth` wei from `funder` to `to` and waits for the receipt.
pub async fn fund_eth(rpc_url: &str, funder: &PrivateKeySigner, to: Address, eth: U256) -> Result<(), ChainError> {
    let provider = wallet_provider(rpc_url, funder)?;
    let tx = TransactionRequest::default().with_to(to).with_value(eth);
    confirm(provider.send_transaction(tx).await, &format!("funding {to} with ETH")).await
}

/// What a node registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// Ed25519 identity public key.
    pub identity_key: [u8; 32],
    /// X25519 link public key.
    pub link_key: [u8; 32],
    /// `ip:port` of its link endpoint.
    pub link_address: String,
    /// Role bits.
    pub role: u8,
    /// Stake to lock.
    pub stake: U256,
}

/// Registers the node from `operator`'s account, through `provider` (which must sign as
/// `operator`): approves the stake first only when the registry's allowance falls short of it.
/// The one registration path of `nox operator register` and `nox testnet`.
pub async fn register(
    provider: &DynProvider,
    deployment: &Deployment,
    operator: Address,
    registration: &Registration,
) -> Result<(), ChainError> {
    let token = NoxStakeToken::new(deployment.stake_token, provider);
    let allowance = token.allowance(operator, deployment.registry).call().await.map_err(ChainError::contract)?;
    if allowance < registration.stake {
        confirm(token.approve(deployment.registry, registration.stake).send().await, "approving the stake").await?;
    }
    let registry = NodeRegistry::new(deployment.registry, provider);
    confirm(
        registry
            .register(
                registration.identity_key.into(),
                registration.link_key.into(),
                registration.link_address.clone(),
                registration.role,
                registration.stake,
            )
            .send()
            .await,
        "register",
    )
    .await
}

/// The operator leaves: its node drops out of the active list at once.
pub async fn request_unstake(
    rpc_url: &str,
    deployment: &Deployment,
    operator: &PrivateKeySigner,
) -> Result<(), ChainError> {
    let provider = wallet_provider(rpc_url, operator)?;
    let registry = NodeRegistry::new(deployment.registry, &provider);
    confirm(registry.requestUnstake().send().await, "requestUnstake").await
}
