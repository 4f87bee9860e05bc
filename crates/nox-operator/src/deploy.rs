//! Deterministic deployment: every contract through the standard CREATE2 deployment proxy, so
//! the same salt, bytecode and constructor arguments give the same addresses on every chain.
//! What was deployed is recorded in `deployments/<chain-id>.json` ([`DeploymentRecord`]).

use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, B256, Bytes, U256, address, keccak256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use nox_chain::bindings::{BatchExecutor, Erc20Payment, NodeRegistry, NoxStakeToken};
use nox_chain::deploy::wallet_provider;
use nox_chain::pool::{InsertVerifier, PoolDeployment, PoseidonT4, ShieldedPool, TransferVerifier};
use nox_chain::{Deployment, testnet_keys};
use serde::{Deserialize, Serialize};

use crate::error::OperatorError;

/// The deterministic-deployment proxy (Arachnid's, deployed by a presigned keyless transaction on
/// most EVM chains and present in Anvil's genesis): calldata `salt ‖ init code` → `CREATE2`.
pub const CREATE2_FACTORY: Address = address!("4e59b44847b379578588920ca78fbf26c0b4956c");

/// The salt NOX deploys with unless told otherwise: `keccak256("nox.deploy.v1")`.
pub fn default_salt() -> B256 {
    keccak256(b"nox.deploy.v1")
}

/// Registry and pool parameters (part of the constructor arguments, so of the addresses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Minimum stake (token base units).
    pub min_stake: U256,
    /// Seconds between an unstake request and its execution.
    pub unstake_delay: u64,
    /// The slash reporter's share, basis points.
    pub slash_reporter_bps: u16,
    /// The pool's root window.
    pub root_window: u64,
}

impl Params {
    /// What development chains use (the testnet's values: 1,000 tNOX, one hour, 10 %, 64 roots).
    pub fn development() -> Self {
        Self {
            min_stake: U256::from(1000u64) * U256::from(10u64).pow(U256::from(18u64)),
            unstake_delay: 3600,
            slash_reporter_bps: 1000,
            root_window: 64,
        }
    }
}

/// What to deploy.
#[derive(Clone, Debug)]
pub struct DeployPlan {
    /// The CREATE2 salt.
    pub salt: B256,
    /// Parameters.
    pub params: Params,
    /// An existing stake token; `None` deploys the testnet token (`NoxStakeToken`, its whole
    /// supply minted to the deployer).
    pub stake_token: Option<Address>,
    /// Supply of the testnet token, when it is deployed.
    pub token_supply: U256,
    /// Deploy the shielded pool (with the committed TESTNET verifiers).
    pub pool: bool,
    /// Let the testnet verifier keys onto a chain that is not a local development chain.
    pub allow_testnet_keys: bool,
}

impl DeployPlan {
    /// Development defaults: the testnet token (10⁹ tNOX), the pool, [`default_salt`].
    pub fn development() -> Self {
        let params = Params::development();
        Self {
            salt: default_salt(),
            params,
            stake_token: None,
            token_supply: params.min_stake * U256::from(1_000_000u64),
            pool: true,
            allow_testnet_keys: false,
        }
    }
}

/// The pool's contracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolContracts {
    /// The shielded pool.
    pub pool: Address,
    /// Its transfer verifier.
    pub transfer_verifier: Address,
    /// Its insertion verifier.
    pub insert_verifier: Address,
    /// Poseidon (three inputs).
    pub poseidon: Address,
}

/// Addresses of a deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contracts {
    /// The stake token.
    pub stake_token: Address,
    /// The node registry.
    pub registry: Address,
    /// The batch executor.
    pub executor: Address,
    /// Its reward ledger (created by the executor).
    pub ledger: Address,
    /// The ERC-20 payment plugin.
    pub erc20_payment: Address,
    /// The shielded pool, if deployed.
    pub pool: Option<PoolContracts>,
}

/// `deployments/<chain-id>.json`: where NOX lives on one chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentRecord {
    /// Chain id.
    pub chain_id: u64,
    /// The CREATE2 factory used.
    pub factory: Address,
    /// The salt.
    pub salt: B256,
    /// The first block holding the registry (readers and wallets scan from here).
    pub start_block: u64,
    /// Whether the pool's verifiers are the committed TESTNET ones (public randomness).
    pub testnet_verifier_keys: bool,
    /// Parameters.
    pub params: Params,
    /// Addresses.
    pub contracts: Contracts,
    /// Directory mirrors (`http://HOST:PORT`) that serve the network's documents: clients
    /// started from this record alone fetch from them. Untrusted — a client from the chain
    /// admits only what the registry vouches for — so a record may list anyone's mirror.
    /// Not part of the deployment (set by `nox deploy --mirror` or by hand).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<String>,
}

impl DeploymentRecord {
    /// The registry's deployment as `nox-chain` names it.
    pub fn deployment(&self) -> Deployment {
        let c = &self.contracts;
        Deployment {
            chain_id: self.chain_id,
            registry: c.registry,
            stake_token: c.stake_token,
            executor: c.executor,
            ledger: c.ledger,
            erc20_payment: c.erc20_payment,
            block: self.start_block,
        }
    }

    /// The pool's deployment, if there is a pool.
    pub fn pool_deployment(&self) -> Option<PoolDeployment> {
        self.contracts.pool.map(|p| PoolDeployment {
            pool: p.pool,
            transfer_verifier: p.transfer_verifier,
            insert_verifier: p.insert_verifier,
            poseidon: p.poseidon,
            executor: self.contracts.executor,
            root_window: self.params.root_window,
            block: self.start_block,
        })
    }

    /// Pretty JSON with a final newline (the committed form).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses a record.
    pub fn from_json(text: &str) -> Result<Self, OperatorError> {
        let record: Self = serde_json::from_str(text).map_err(|e| OperatorError::Record(e.to_string()))?;
        for mirror in &record.mirrors {
            check_mirror(mirror)?;
        }
        Ok(record)
    }

    /// Reads a record file.
    pub fn load(path: &std::path::Path) -> Result<Self, OperatorError> {
        let text = std::fs::read_to_string(path).map_err(|e| OperatorError::io(path, e))?;
        Self::from_json(&text).map_err(|e| OperatorError::Record(format!("{}: {e}", path.display())))
    }

    /// Writes `dir/<chain-id>.json` unless it already holds this record; returns its path.
    pub fn store(&self, dir: &std::path::Path) -> Result<std::path::PathBuf, OperatorError> {
        std::fs::create_dir_all(dir).map_err(|e| OperatorError::io(dir, e))?;
        let path = dir.join(format!("{}.json", self.chain_id));
        let text = self.to_json();
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(|e| OperatorError::io(&path, e))?;
        }
        Ok(path)
    }
}

/// A mirror URL must be `http://HOST[:PORT]` or `https://…` with a host and nothing after it
/// but an optional `/`.
pub fn check_mirror(url: &str) -> Result<(), OperatorError> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    let host = rest.map(|r| r.strip_suffix('/').unwrap_or(r));
    match host {
        Some(h) if !h.is_empty() && !h.contains(['/', ' ', '?', '#', '@']) => Ok(()),
        _ => Err(OperatorError::Record(format!("mirror {url:?}: not an http(s)://HOST[:PORT] URL"))),
    }
}

/// The mirrors a (re-)deployment records: the ones given (each checked, [`check_mirror`]), or,
/// when none are given, the ones the existing record in `deployments` for `chain_id` lists (a
/// re-run keeps them), or none.
pub fn mirrors_for(
    deployments: &std::path::Path,
    chain_id: u64,
    given: &[String],
) -> Result<Vec<String>, OperatorError> {
    if !given.is_empty() {
        for mirror in given {
            check_mirror(mirror)?;
        }
        return Ok(given.to_vec());
    }
    let existing = deployments.join(format!("{chain_id}.json"));
    match existing.is_file() {
        true => Ok(DeploymentRecord::load(&existing)?.mirrors),
        false => Ok(Vec::new()),
    }
}

/// What one deployment run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployOutcome {
    /// The record.
    pub record: DeploymentRecord,
    /// Contracts created by this run (name, address); empty when everything already existed.
    pub created: Vec<(&'static str, Address)>,
    /// A warning to print (testnet keys forced onto a public chain).
    pub warning: Option<String>,
}

/// The CREATE2 address of `init_code` under `salt` through [`CREATE2_FACTORY`].
pub fn create2_address(salt: B256, init_code: &[u8]) -> Address {
    CREATE2_FACTORY.create2(salt, keccak256(init_code))
}

struct Deployer<'a> {
    provider: &'a DynProvider,
    salt: B256,
    created: Vec<(&'static str, Address)>,
}

impl Deployer<'_> {
    /// Deploys `init_code` through the factory unless code is already at its address.
    async fn ensure(&mut self, name: &'static str, init_code: &Bytes) -> Result<Address, OperatorError> {
        let at = create2_address(self.salt, init_code);
        if !self.provider.get_code_at(at).await.map_err(OperatorError::rpc)?.is_empty() {
            return Ok(at);
        }
        let mut input = Vec::with_capacity(32 + init_code.len());
        input.extend_from_slice(self.salt.as_slice());
        input.extend_from_slice(init_code);
        let tx = TransactionRequest::default().with_to(CREATE2_FACTORY).with_input(input);
        let receipt = self
            .provider
            .send_transaction(tx)
            .await
            .map_err(OperatorError::contract)?
            .get_receipt()
            .await
            .map_err(OperatorError::rpc)?;
        if !receipt.status() || self.provider.get_code_at(at).await.map_err(OperatorError::rpc)?.is_empty() {
            return Err(OperatorError::contract(format!("CREATE2 deployment of {name} at {at} failed")));
        }
        self.created.push((name, at));
        Ok(at)
    }
}

/// Deploys every NOX contract through [`CREATE2_FACTORY`] (each only if absent, so a second run
/// sends nothing) and returns the record. The pool's committed verifiers carry the TESTNET keys:
/// on a chain that is not a local development chain they are refused
/// ([`testnet_keys::check_deploy`]) unless `plan.allow_testnet_keys`.
pub async fn deploy(
    rpc_url: &str,
    deployer: &PrivateKeySigner,
    plan: &DeployPlan,
) -> Result<DeployOutcome, OperatorError> {
    let provider = wallet_provider(rpc_url, deployer)?;
    let chain_id = provider.get_chain_id().await.map_err(OperatorError::rpc)?;
    if provider.get_code_at(CREATE2_FACTORY).await.map_err(OperatorError::rpc)?.is_empty() {
        return Err(OperatorError::NoFactory(CREATE2_FACTORY.to_string()));
    }
    let warning =
        if plan.pool { testnet_keys::check_deploy(rpc_url, plan.allow_testnet_keys).await?.warning() } else { None };
    let mut d = Deployer { provider: &provider, salt: plan.salt, created: Vec::new() };
    let p = plan.params;
    let stake_token = match plan.stake_token {
        Some(token) => token,
        None => {
            let code =
                NoxStakeToken::deploy_builder(&provider, deployer.address(), plan.token_supply).calldata().clone();
            d.ensure("stake_token", &code).await?
        }
    };
    let code = NodeRegistry::deploy_builder(&provider, stake_token, p.min_stake, p.unstake_delay, p.slash_reporter_bps)
        .calldata()
        .clone();
    let registry = d.ensure("registry", &code).await?;
    let executor = d.ensure("executor", &BatchExecutor::deploy_builder(&provider).calldata().clone()).await?;
    let ledger = BatchExecutor::new(executor, &provider).ledger().call().await.map_err(OperatorError::contract)?;
    let erc20_payment =
        d.ensure("erc20_payment", &Erc20Payment::deploy_builder(&provider, executor).calldata().clone()).await?;
    let pool = if plan.pool {
        let transfer_verifier =
            d.ensure("transfer_verifier", &TransferVerifier::deploy_builder(&provider).calldata().clone()).await?;
        let insert_verifier =
            d.ensure("insert_verifier", &InsertVerifier::deploy_builder(&provider).calldata().clone()).await?;
        let poseidon = d.ensure("poseidon", &PoseidonT4::deploy_builder(&provider).calldata().clone()).await?;
        let code = ShieldedPool::deploy_builder(
            &provider,
            transfer_verifier,
            insert_verifier,
            poseidon,
            executor,
            U256::from(p.root_window),
        )
        .calldata()
        .clone();
        let pool = d.ensure("pool", &code).await?;
        Some(PoolContracts { pool, transfer_verifier, insert_verifier, poseidon })
    } else {
        None
    };
    let start_block = first_block_with_code(&provider, registry).await?;
    let record = DeploymentRecord {
        chain_id,
        factory: CREATE2_FACTORY,
        salt: plan.salt,
        start_block,
        testnet_verifier_keys: plan.pool,
        params: p,
        contracts: Contracts { stake_token, registry, executor, ledger, erc20_payment, pool },
        mirrors: Vec::new(),
    };
    Ok(DeployOutcome { record, created: d.created, warning })
}

/// The first block at which `at` holds code (binary search over historical state; the node
/// must serve it, as archive nodes and Anvil do).
async fn first_block_with_code(provider: &DynProvider, at: Address) -> Result<u64, OperatorError> {
    let (mut lo, mut hi) = (0u64, provider.get_block_number().await.map_err(OperatorError::rpc)?);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let code = provider.get_code_at(at).number(mid).await.map_err(OperatorError::rpc)?;
        if code.is_empty() { lo = mid + 1 } else { hi = mid }
    }
    Ok(lo)
}
