//! The relayer: admission, simulation of the exact transaction, pricing, submission and
//! tracking to a receipt (docs/spec/relay.md). The chain is reached through one JSON-RPC
//! endpoint; the key signs locally.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alloy::eips::eip1559::BaseFeeParams;
use alloy::eips::eip2718::Encodable2718;
use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, B256, Bytes, U256, keccak256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::rpc::types::simulate::{SimBlock, SimulatePayload};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use alloy::sol_types::{SolCall, SolInterface};
use ark_bn254::Bn254;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use nox_chain::bindings::BatchExecutor;
use nox_chain::l2fee::FeeModel;
use nox_chain::pool::ShieldedPool;
use nox_zk::groth16::VerifyingKey;
use serde::Deserialize;
use tokio::sync::{Mutex, Semaphore, oneshot};

use crate::check::{Admission, Admitted, admit};
use crate::guard::{Denied, Guard, GuardConfig, GuardStats};
use crate::journal::{Journal, JournalError, Pending};
use crate::price::{FeePlan, Reserves, TokenPrice, bundle_gas_limit, required_wei};
use crate::twap::{Conservative, Observation, PairState, TwapError, TwapOracle};
use crate::wire::{AssetPrice, Outcome, Quote, Reason, RelayRequest, Submission};

mod config;
mod feed;
mod quote;
mod submit;

use config::read_text;
pub use config::{
    PASSWORD_ENV, Policy, RelayerConfig, RelayerError, TokenPair, decode_verifying_key, encode_verifying_key,
};
pub use feed::{PriceError, PriceFeed, PriceFuture, TwapFeed, UniswapV2Feed};

/// The relayer service. Cheap to share (`Arc`).
pub struct Relayer {
    config: RelayerConfig,
    provider: DynProvider,
    wallet: EthereumWallet,
    account: Address,
    vk: Arc<VerifyingKey<Bn254>>,
    admission: Admission,
    journal: Mutex<Journal>,
    /// Nullifiers (both of each payment) of bundles between admission and settlement here.
    in_flight: StdMutex<HashSet<U256>>,
    permits: Arc<Semaphore>,
    /// Simulate-only requests' own concurrency budget.
    simulating: Arc<Semaphore>,
    feed: Arc<dyn PriceFeed>,
    /// Refusal memory, deadline horizon, per-nullifier and simulate-only budgets.
    guard: StdMutex<Guard>,
    /// The last quote and when it was made.
    quote_cache: Mutex<Option<(Instant, Quote)>>,
    /// Payment proofs verified (each costs one Groth16 check).
    verifications: AtomicU64,
    /// Simulation rounds run (each: pool views and up to two `eth_simulateV1`).
    simulation_rounds: AtomicU64,
    /// How the chain charges for data.
    fee_model: FeeModel,
}

/// What a relayer has spent its work on since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayerStats {
    /// Payment proofs verified.
    pub verifications: u64,
    /// Simulation rounds run.
    pub simulation_rounds: u64,
    /// What the guard refused, by rule.
    pub guard: GuardStats,
}

/// Removes a payment's nullifiers from the in-flight set when dropped.
struct InFlight {
    relayer: Arc<Relayer>,
    nullifiers: [U256; 2],
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut set) = self.relayer.in_flight.lock() {
            for n in &self.nullifiers {
                set.remove(n);
            }
        }
    }
}

fn unix_now() -> u64 {
    unix_now_ms() / 1000
}

fn unix_now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(millis).unwrap_or(0)
}

/// What identifies a request's bytes for the refusal memory: everything the answer depends on
/// (flags, chain, executor, relayer, calldata).
fn request_key(s: &Submission) -> B256 {
    keccak256(RelayRequest::Submit(Box::new(s.clone())).encode())
}

/// Whether `a` is a precompile's address (0x01 ..= 0x1ff, room for future ones): it has no code
/// but a call to it with calldata does something.
fn precompile(a: Address) -> bool {
    let x = U256::from_be_slice(a.as_slice());
    !x.is_zero() && x <= U256::from(0x1ffu64)
}

fn refused_by(d: Denied) -> Outcome {
    Outcome::Refused { reason: d.reason, detail: d.detail, required_fee: d.required_fee }
}

/// A refusal for a token that has no price now.
fn price_refusal(e: PriceError) -> Outcome {
    match e {
        PriceError::NotReady(why) => Outcome::refused(Reason::PriceUnavailable, format!("fees in this token: {why}")),
        PriceError::Source(e) => chain_refusal(e),
    }
}

/// A refusal for a failure on the relayer's side (its node, its journal). The cause goes to the
/// relayer's log, never to the client: transport errors name the node's URL and journal errors
/// the relayer's files (docs/spec/relay.md §3).
fn chain_refusal(e: impl std::fmt::Display) -> Outcome {
    tracing::warn!(error = %e, "relayer: refusing a bundle on a failure of its own");
    Outcome::refused(Reason::Chain, "the relayer's chain node or its state failed; try later or another exit")
}

/// What a node's JSON-RPC error says (code and message only), or nothing for a transport
/// failure (whose text names the node).
fn node_says(e: &alloy::transports::TransportError) -> Option<String> {
    e.as_error_resp().map(|r| format!("{} (code {})", r.message, r.code))
}

/// What a simulation found.
#[derive(Clone, Copy, Debug)]
struct Simulated {
    gas_used: u64,
    action_success: bool,
}

impl Relayer {
    /// Starts the relayer: reads its key and verifying key, checks the endpoint's chain id,
    /// opens the nonce journal and resumes tracking every transaction it lists (rebroadcast,
    /// then followed to a receipt).
    pub async fn start(config: RelayerConfig) -> Result<Arc<Self>, RelayerError> {
        let feed = Arc::new(TwapFeed::new(config.tokens.clone(), config.policy.twap_window_s));
        Self::start_with_feed(config, feed).await
    }

    /// [`Relayer::start`] with token prices from `feed` instead of the config's Uniswap pairs.
    pub async fn start_with_feed(config: RelayerConfig, feed: Arc<dyn PriceFeed>) -> Result<Arc<Self>, RelayerError> {
        let signer = config.signer()?;
        let vk = decode_verifying_key(&read_text(&config.verifying_key, "verifying key")?)
            .map_err(|e| RelayerError::Config(format!("verifying key {}: {e}", config.verifying_key.display())))?;
        let p = &config.policy;
        if p.insert_batch_notes == 0 || p.insert_batch_notes as usize > nox_zk::insert::BATCH_SIZE {
            return Err(RelayerError::Config(format!(
                "policy: insert_batch_notes between 1 and {}",
                nox_zk::insert::BATCH_SIZE
            )));
        }
        if p.bump_bps < 1_000 || p.max_in_flight == 0 || p.poll_ms == 0 || p.gas_cap == 0 {
            return Err(RelayerError::Config("policy: bump_bps ≥ 1000, max_in_flight, poll_ms and gas_cap ≥ 1".into()));
        }
        if p.max_simulating == 0 || p.twap_window_s == 0 || p.price_sample_s == 0 || p.per_nullifier_simulations < 2 {
            return Err(RelayerError::Config(
                "policy: max_simulating, twap_window_s and price_sample_s ≥ 1, per_nullifier_simulations ≥ 2 \
                 (a simulation and the submission)"
                    .into(),
            ));
        }
        let guard = Guard::new(GuardConfig {
            refusal_memory_ms: p.refusal_memory_s.saturating_mul(1000),
            memory_entries: p.refusal_memory_entries,
            max_deadline_horizon_s: p.max_deadline_horizon_s,
            per_nullifier_rounds: p.per_nullifier_simulations,
            per_nullifier_window_ms: p.per_nullifier_window_s.saturating_mul(1000),
            nullifiers_tracked: p.refusal_memory_entries,
            simulate_per_s: p.simulate_per_s,
            simulate_burst: p.simulate_burst,
        });
        let url =
            config.rpc_url.parse().map_err(|e| RelayerError::Config(format!("rpc_url {:?}: {e}", config.rpc_url)))?;
        let provider = ProviderBuilder::new().connect_http(url).erased();
        let chain = provider.get_chain_id().await.map_err(|e| RelayerError::Chain(e.to_string()))?;
        if chain != config.chain_id {
            return Err(RelayerError::Config(format!(
                "the endpoint is on chain {chain}, the relayer is set for {}",
                config.chain_id
            )));
        }
        // A pool verifying with the public-randomness TESTNET keys on a chain that is not a
        // development chain: refused (NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN=1: a warning).
        if let Some(warning) = nox_chain::testnet_keys::guard_pool_from_env(&config.rpc_url, config.pool)
            .await
            .map_err(|e| RelayerError::Config(e.to_string()))?
        {
            tracing::warn!("{warning}");
        }
        let fee_model = match p.fee_model.or_else(|| FeeModel::for_chain(chain)) {
            Some(model) => model,
            None => {
                tracing::warn!(
                    chain,
                    "relayer: chain id not known to carry an L1 data fee model: pricing execution gas only (set \
                     policy.fee_model = \"op_stack\" or \"arbitrum\" on a rollup, or every bundle loses its data fee)"
                );
                FeeModel::L1
            }
        };
        if fee_model != FeeModel::L1 {
            nox_chain::l2fee::read_pricing(&provider, fee_model)
                .await
                .map_err(|e| RelayerError::Chain(format!("L1 data fee ({fee_model:?}): {e}")))?;
            tracing::info!(chain, ?fee_model, "relayer: pricing the L1 data fee of every bundle");
        }
        let account = signer.address();
        let mut journal = Journal::open(&config.journal, config.chain_id, account)?;
        let count =
            provider.get_transaction_count(account).pending().await.map_err(|e| RelayerError::Chain(e.to_string()))?;
        journal.reconcile(count)?;
        let mut assets = vec![Address::ZERO];
        assets.extend(feed.tokens());
        let admission = Admission {
            chain_id: config.chain_id,
            executor: config.executor,
            relayer: account,
            pool: config.pool,
            assets,
            min_validity: p.min_validity_s,
        };
        let resume: Vec<u64> = journal.pending().iter().map(|p| p.nonce).collect();
        let relayer = Arc::new(Self {
            permits: Arc::new(Semaphore::new(config.policy.max_in_flight)),
            simulating: Arc::new(Semaphore::new(config.policy.max_simulating)),
            guard: StdMutex::new(guard),
            quote_cache: Mutex::new(None),
            verifications: AtomicU64::new(0),
            simulation_rounds: AtomicU64::new(0),
            fee_model,
            config,
            provider,
            wallet: EthereumWallet::from(signer),
            account,
            vk: Arc::new(vk),
            admission,
            journal: Mutex::new(journal),
            in_flight: StdMutex::new(HashSet::new()),
            feed,
        });
        let tokens = relayer.feed.tokens();
        if !tokens.is_empty() {
            // Reads each pair as blocks go by, so a time-weighted price has its observations
            // when a fee arrives. Holds only the feed and the provider, not the relayer.
            let (feed, provider) = (relayer.feed.clone(), relayer.provider.clone());
            let every = Duration::from_secs(relayer.config.policy.price_sample_s);
            tokio::spawn(async move {
                loop {
                    for token in &tokens {
                        if let Err(e) = feed.price(&provider, *token).await
                            && matches!(e, PriceError::Source(_))
                        {
                            tracing::debug!(%token, error = %e, "relayer: price sample failed");
                        }
                    }
                    tokio::time::sleep(every).await;
                }
            });
        }
        for nonce in resume {
            tracing::info!(nonce, "relayer: resuming a transaction from the journal");
            let r = relayer.clone();
            tokio::spawn(async move {
                r.rebroadcast(nonce).await;
                let outcome = r.track(nonce, None).await;
                tracing::info!(nonce, ?outcome, "relayer: resumed transaction settled");
            });
        }
        Ok(relayer)
    }

    /// The relayer's account.
    pub fn account(&self) -> Address {
        self.account
    }

    /// The transactions it has signed and not yet seen mined.
    pub async fn pending(&self) -> Vec<Pending> {
        self.journal.lock().await.pending().to_vec()
    }

    /// What it has spent its work on (proof checks, simulations, guard refusals).
    pub fn stats(&self) -> RelayerStats {
        RelayerStats {
            verifications: self.verifications.load(Ordering::Relaxed),
            simulation_rounds: self.simulation_rounds.load(Ordering::Relaxed),
            guard: self.guard.lock().map(|g| g.stats()).unwrap_or_default(),
        }
    }

    /// The next nonce it will use.
    pub async fn next_nonce(&self) -> u64 {
        self.journal.lock().await.next_nonce()
    }

    /// Answers a relay request body: the JSON of a [`Quote`] or an [`Outcome`]. `Err` only when
    /// a quote cannot be read from the chain.
    pub async fn handle(self: &Arc<Self>, body: &[u8]) -> Result<Vec<u8>, String> {
        let json = match RelayRequest::decode(body) {
            Err(e) => serde_json::to_vec(&Outcome::refused(Reason::Malformed, e.to_string())),
            Ok(RelayRequest::Quote) => match self.quote().await {
                Ok(quote) => serde_json::to_vec(&quote),
                Err(e) => {
                    tracing::warn!(error = %e, "relayer: no quote");
                    return Err("the relayer's chain node is unavailable".into());
                }
            },
            Ok(RelayRequest::Submit(s)) => serde_json::to_vec(&self.submit(*s).await),
        };
        json.map_err(|e| e.to_string())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn receipt_outcome(
    receipt: &alloy::rpc::types::TransactionReceipt,
    entry: &Pending,
    executor: Address,
    inclusion_ms: u64,
) -> Outcome {
    if !receipt.status() {
        return Outcome::refused(
            Reason::Reverted,
            format!("transaction {} reverted on chain", receipt.transaction_hash),
        );
    }
    let action_success = receipt
        .inner
        .logs()
        .iter()
        .filter(|l| l.address() == executor)
        .find_map(|l| l.log_decode::<BatchExecutor::ActionExecuted>().ok())
        .is_some_and(|l| l.inner.data.success);
    Outcome::Included {
        tx_hash: receipt.transaction_hash,
        block: receipt.block_number.unwrap_or_default(),
        gas_used: receipt.gas_used,
        gas_limit: entry.gas_limit,
        effective_gas_price: U256::from(receipt.effective_gas_price),
        action_success,
        fee: entry.fee,
        asset: entry.asset,
        bumps: entry.bumps,
        prepare_ms: 0,
        inclusion_ms,
    }
}

/// A refusal for a simulated revert of the whole bundle, by the pool's or executor's error.
fn revert_refusal(data: &[u8], message: Option<&str>) -> Outcome {
    use ShieldedPool::ShieldedPoolErrors as P;
    if let Ok(e) = P::abi_decode(data) {
        let reason = match e {
            P::AlreadySpent(_) => Reason::Spent,
            P::UnknownRoot(_) => Reason::UnknownRoot,
            P::Expired(_) => Reason::Expired,
            P::InvalidProof(_) => Reason::BadProof,
            P::DuplicateNullifier(_) | P::PublicInInPayment(_) | P::BadRecipient(_) | P::NotAScalar(_) => {
                Reason::Malformed
            }
            _ => Reason::PaymentReverts,
        };
        return Outcome::refused(reason, format!("the payment reverts: {e:?}"));
    }
    if let Ok(e) = BatchExecutor::BatchExecutorErrors::abi_decode(data) {
        return Outcome::refused(Reason::PaymentReverts, format!("the bundle reverts: {e:?}"));
    }
    let why = message.map_or_else(|| format!("0x{}", hex::encode(data)), str::to_owned);
    Outcome::refused(Reason::PaymentReverts, format!("the bundle reverts: {why}"))
}

/// The inserter's hooks (`crate::inserter`, H7): it reads the pool through the relayer's
/// endpoint and sends `insertBatch` from the relayer's account through the same nonce journal.
impl Relayer {
    pub(crate) fn provider(&self) -> &DynProvider {
        &self.provider
    }
    pub(crate) fn wallet(&self) -> &EthereumWallet {
        &self.wallet
    }
    pub(crate) fn journal(&self) -> &Mutex<Journal> {
        &self.journal
    }
    pub(crate) fn config(&self) -> &RelayerConfig {
        &self.config
    }
    /// Follows a journaled transaction of the relayer's own to a receipt; it earns no fee, so
    /// it is never bumped.
    pub(crate) async fn track_own(&self, nonce: u64) -> Outcome {
        self.track(nonce, Some(U256::ZERO)).await
    }
}
