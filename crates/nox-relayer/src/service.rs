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

sol! {
    /// The Uniswap v2 pair calls a token price needs.
    #[sol(rpc)]
    interface IUniswapV2Pair {
        function getReserves() external view returns (uint112 reserve0, uint112 reserve1, uint32 blockTimestampLast);
        function token0() external view returns (address);
        function price0CumulativeLast() external view returns (uint256);
        function price1CumulativeLast() external view returns (uint256);
    }
}

/// Where the relayer runs: the `[exit.services.relay]` table of an exit node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayerConfig {
    /// The chain's JSON-RPC endpoint (the operator's own node).
    pub rpc_url: String,
    /// File holding the relayer account's private key (hex).
    pub key_file: PathBuf,
    /// The nonce journal (created if missing).
    pub journal: PathBuf,
    /// The transfer circuit's verifying key ([`encode_verifying_key`] hex), the key of the
    /// pool's transfer verifier contract (on the testnet: `nox_zk::transfer::testnet_setup`'s).
    pub verifying_key: PathBuf,
    /// Chain id (checked against the endpoint at start).
    pub chain_id: u64,
    /// The BatchExecutor.
    pub executor: Address,
    /// The shielded pool (the only payment plugin accepted).
    pub pool: Address,
    /// Fee assets besides ETH, each priced by a Uniswap v2 pair with WETH.
    #[serde(default)]
    pub tokens: Vec<TokenPair>,
    /// Pricing and submission policy.
    #[serde(default)]
    pub policy: Policy,
}

/// A fee token and the Uniswap v2 pair (token/WETH) that prices it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPair {
    /// The token.
    pub token: Address,
    /// The token/WETH pair.
    pub pair: Address,
}

/// Where fee-token prices come from. The relayer asks at every pricing (quote, admission, fee
/// bump), so a price is never older than the request it prices. [`UniswapV2Feed`] — the
/// config's `tokens`, used by [`Relayer::start`] — reads a token/WETH pair's reserves; another
/// source (a Chainlink feed, a TWAP) implements this trait and is passed to
/// [`Relayer::start_with_feed`].
pub trait PriceFeed: Send + Sync + 'static {
    /// The tokens it prices; fees in any other token are refused (`unsupported_asset`).
    fn tokens(&self) -> Vec<Address>;
    /// `token`'s price now, read through `provider`; `None` if it is not priced.
    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a>;
}

/// What [`PriceFeed::price`] returns.
pub type PriceFuture<'a> = Pin<Box<dyn Future<Output = Result<Option<Box<dyn TokenPrice>>, PriceError>> + Send + 'a>>;

/// Why a token has no price now.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The source has no trustworthy price yet (a time-weighted mean whose window is not
    /// filled): fees in the token are refused (`price_unavailable`) and left out of quotes.
    #[error(transparent)]
    NotReady(#[from] TwapError),
    /// Reading the source failed (the relayer's node).
    #[error("price source: {0}")]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

impl PriceError {
    fn source(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Source(Box::new(e))
    }
}

/// Token prices from Uniswap v2 token/WETH pairs, **the default feed**: a fee is worth the
/// lower of its value at the pair's time-weighted mean price over `window_s` and what
/// selling it into the pair now would yield ([`Conservative`]), so moving the pair for a block
/// cannot make the relayer accept less than the fee is worth. The mean comes from the pair's
/// cumulative prices, read at the latest block each time a price is asked for and by a
/// sampler task ([`Policy::price_sample_s`]) as blocks go by: the relayer's node needs no
/// history (no archive, no old state), but after a start fees in a token are refused
/// (`price_unavailable`) until the relayer has watched its pair for a whole window.
pub struct TwapFeed {
    pairs: Vec<TokenPair>,
    window_s: u64,
    oracles: StdMutex<HashMap<Address, TwapOracle>>,
}

impl TwapFeed {
    /// A feed for these tokens and pairs, averaging over `window_s` seconds.
    pub fn new(pairs: Vec<TokenPair>, window_s: u64) -> Self {
        Self { pairs, window_s, oracles: StdMutex::new(HashMap::new()) }
    }

    /// The spot reserves and the mean price, or why there is none.
    async fn read(&self, provider: &DynProvider, pair: Address, token: Address) -> Result<Conservative, PriceError> {
        let block = provider
            .get_block_by_number(BlockNumberOrTag::Latest)
            .await
            .map_err(PriceError::source)?
            .ok_or_else(|| PriceError::Source("the node has no latest block".into()))?;
        let (number, timestamp) = (block.header.inner.number, block.header.inner.timestamp);
        // Every read at the same block: the reserves, cumulatives and timestamp agree.
        let at = BlockId::number(number);
        let contract = IUniswapV2Pair::new(pair, provider);
        let token0 = contract.token0().block(at).call().await.map_err(PriceError::source)?;
        let r = contract.getReserves().block(at).call().await.map_err(PriceError::source)?;
        let c0 = contract.price0CumulativeLast().block(at).call().await.map_err(PriceError::source)?;
        let c1 = contract.price1CumulativeLast().block(at).call().await.map_err(PriceError::source)?;
        let state = PairState {
            reserve0: U256::from(r.reserve0),
            reserve1: U256::from(r.reserve1),
            block_timestamp_last: r.blockTimestampLast,
            price0_cumulative_last: c0,
            price1_cumulative_last: c1,
        };
        // The pair counts time in uint32 seconds (it wraps in 2106).
        let (cum0, cum1) = state.cumulative_at(timestamp as u32);
        let (spot, cumulative) = if token0 == token {
            (Reserves { asset: state.reserve0, weth: state.reserve1 }, cum0)
        } else {
            (Reserves { asset: state.reserve1, weth: state.reserve0 }, cum1)
        };
        let now = Observation { timestamp, cumulative };
        let mut oracles = self.oracles.lock().map_err(|_| PriceError::Source("price oracle lock poisoned".into()))?;
        let oracle = oracles.entry(token).or_insert_with(|| TwapOracle::new(self.window_s));
        let mean = oracle.mean(&now);
        oracle.record(now);
        Ok(Conservative { mean: mean?, spot })
    }
}

impl PriceFeed for TwapFeed {
    fn tokens(&self) -> Vec<Address> {
        self.pairs.iter().map(|t| t.token).collect()
    }

    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a> {
        Box::pin(async move {
            let Some(pair) = self.pairs.iter().find(|t| t.token == token) else { return Ok(None) };
            let price = self.read(provider, pair.pair, token).await?;
            Ok(Some(Box::new(price) as Box<dyn TokenPrice>))
        })
    }
}

/// Token prices from Uniswap v2 token/WETH pairs at the spot: what selling the fee into its
/// pair would yield now (`getAmountOut`), so price impact counts — but one block's reserves can
/// be moved by whoever trades in that block: use only for a pair too deep to move, and prefer
/// [`TwapFeed`] (the default).
pub struct UniswapV2Feed {
    pairs: Vec<TokenPair>,
}

impl UniswapV2Feed {
    /// A feed for these tokens and their pairs.
    pub fn new(pairs: Vec<TokenPair>) -> Self {
        Self { pairs }
    }
}

impl PriceFeed for UniswapV2Feed {
    fn tokens(&self) -> Vec<Address> {
        self.pairs.iter().map(|t| t.token).collect()
    }

    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a> {
        Box::pin(async move {
            let Some(pair) = self.pairs.iter().find(|t| t.token == token) else { return Ok(None) };
            let pair = IUniswapV2Pair::new(pair.pair, provider);
            let token0 = pair.token0().call().await.map_err(PriceError::source)?;
            let r = pair.getReserves().call().await.map_err(PriceError::source)?;
            let (r0, r1) = (U256::from(r.reserve0), U256::from(r.reserve1));
            let reserves =
                if token0 == token { Reserves { asset: r0, weth: r1 } } else { Reserves { asset: r1, weth: r0 } };
            Ok(Some(Box::new(reserves) as Box<dyn TokenPrice>))
        })
    }
}

/// How the relayer prices and submits.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Margin over cost, basis points (paper §5: at least 10 %).
    pub margin_bps: u32,
    /// Priority fee bid, wei per gas.
    pub priority_fee_wei: u128,
    /// Room above the next base fee in the max fee, basis points.
    pub base_fee_headroom_bps: u32,
    /// Extra gas above the simulated use (plus the 1/64 reserve), basis points.
    pub gas_extra_bps: u32,
    /// Gas limit of the first simulation.
    pub gas_cap: u64,
    /// Seconds a payment must stay valid when it arrives.
    pub min_validity_s: u64,
    /// Bundles in flight at once.
    pub max_in_flight: usize,
    /// Milliseconds without a receipt before a fee bump.
    pub bump_after_ms: u64,
    /// Fee bumps per transaction at most.
    pub max_bumps: u32,
    /// Each bump's increase, basis points (≥ 1000: nodes refuse smaller replacements).
    pub bump_bps: u32,
    /// Milliseconds the client's answer waits for a receipt (tracking goes on after).
    pub wait_ms: u64,
    /// Milliseconds between receipt polls.
    pub poll_ms: u64,
    /// Gas the executor and a shielded payment take besides the action (told in quotes). A
    /// payment-only private transfer measures ≈ 464,000 gas as a whole transaction on Anvil
    /// (intrinsic and calldata included, `tests/relay.rs`); the default leaves room for a
    /// withdrawal's ETH transfer and a first credit.
    pub payment_gas: u64,
    /// Gas of one `insertBatch` (the insertion proof's verification and the queue), which the
    /// relayer's inserter pays to make a payment's two output notes spendable. Default 548,000:
    /// a full batch of 32 measures 547,832 (`contracts/gas.sh`, docs/benchmarks/gas.md; the
    /// leaves in calldata, checked against the queue's hash chain).
    pub insert_batch_gas: u64,
    /// Notes per insertion batch the insertion share is priced at (the pool's batch holds at
    /// most [`nox_zk::insert::BATCH_SIZE`] = 32): each payment is charged `⌈insert_batch_gas × 2 / insert_batch_notes⌉` gas on
    /// top of its gas limit ([`Policy::insertion_gas`]). An inserter that often inserts smaller
    /// batches (a short wait on a quiet pool) should set it lower, or it pays the difference.
    pub insert_batch_notes: u32,
    /// The furthest a payment's deadline may lie ahead, seconds: a refused bundle can be resent
    /// only until its deadline, so this bounds how long it can be replayed at all.
    pub max_deadline_horizon_s: u64,
    /// Seconds a refusal is remembered (a resent refused bundle is refused again with no proof
    /// check and no chain call).
    pub refusal_memory_s: u64,
    /// Refusals remembered at most (oldest forgotten first).
    pub refusal_memory_entries: usize,
    /// Simulation rounds (pool views and two `eth_simulateV1` runs) per payment nullifier per
    /// [`Policy::per_nullifier_window_s`].
    pub per_nullifier_simulations: u32,
    /// The per-nullifier window, seconds.
    pub per_nullifier_window_s: u64,
    /// Simulate-only requests per second, all clients together (the exit cannot tell clients
    /// apart: a request carries no identity beyond its SURBs).
    pub simulate_per_s: u32,
    /// Simulate-only requests allowed in a burst.
    pub simulate_burst: u32,
    /// Simulate-only requests being worked on at once (their own budget: they never take the
    /// slots of submissions, and quotes need none).
    pub max_simulating: usize,
    /// Milliseconds a quote is served from cache (one read of the chain per period, whatever the
    /// number of clients asking).
    pub quote_cache_ms: u64,
    /// The time-weighted price window of token fees, seconds ([`TwapFeed`]).
    pub twap_window_s: u64,
    /// Seconds between the relayer's own readings of each pair's cumulative price.
    pub price_sample_s: u64,
    /// How the chain charges for data (`l1`, `op_stack`, `arbitrum`; docs/design/l2-fees.md).
    /// Unset: detected from the chain id ([`FeeModel::for_chain`]); an unknown chain is priced
    /// as an L1, with a warning at start.
    pub fee_model: Option<FeeModel>,
    /// Action calldata bytes of the bundle a quote prices the L1 data fee of (an L2 only), on
    /// top of the shielded payment (its proof, public values and two note ciphertexts: 1,444
    /// bytes of calldata with an empty action). The submission's check prices the exact
    /// transaction; a bundle whose action carries more calldata than this may be refused with
    /// the fee it needs (`required_fee`).
    pub l1_reference_action_bytes: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            margin_bps: 1_000,
            priority_fee_wei: 1_000_000_000,
            base_fee_headroom_bps: 2_500,
            gas_extra_bps: 2_000,
            gas_cap: 5_000_000,
            min_validity_s: 60,
            max_in_flight: 16,
            bump_after_ms: 15_000,
            max_bumps: 3,
            bump_bps: 1_250,
            wait_ms: 120_000,
            poll_ms: 250,
            payment_gas: 480_000,
            insert_batch_gas: 548_000,
            insert_batch_notes: nox_zk::insert::BATCH_SIZE as u32,
            max_deadline_horizon_s: 3_600,
            refusal_memory_s: 300,
            refusal_memory_entries: 16_384,
            per_nullifier_simulations: 4,
            per_nullifier_window_s: 60,
            simulate_per_s: 4,
            simulate_burst: 8,
            max_simulating: 4,
            quote_cache_ms: 1_000,
            twap_window_s: 1_800,
            price_sample_s: 30,
            fee_model: None,
            l1_reference_action_bytes: 132,
        }
    }
}

impl Policy {
    /// The insertion share of one payment: the gas of inserting its two output notes,
    /// `⌈insert_batch_gas × 2 / insert_batch_notes⌉` (docs/design/relayer.md, pricing).
    pub fn insertion_gas(&self) -> u64 {
        crate::price::insertion_gas(self.insert_batch_gas, self.insert_batch_notes)
    }
}

/// Why the relayer could not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayerError {
    /// A setting is unusable.
    #[error("relayer configuration: {0}")]
    Config(String),
    /// The nonce journal.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The chain endpoint.
    #[error("relayer chain endpoint: {0}")]
    Chain(String),
}

/// A verifying key as the relayer reads it: hex of its compressed arkworks encoding.
pub fn encode_verifying_key(vk: &VerifyingKey<Bn254>) -> String {
    let mut bytes = Vec::new();
    // Serialising into a Vec cannot fail.
    let _ = vk.serialize_compressed(&mut bytes);
    hex::encode(bytes)
}

/// Reads [`encode_verifying_key`]'s output; every point is checked to be on the curve and in
/// the right subgroup.
pub fn decode_verifying_key(text: &str) -> Result<VerifyingKey<Bn254>, String> {
    let bytes = hex::decode(text.trim()).map_err(|e| format!("not hex: {e}"))?;
    VerifyingKey::<Bn254>::deserialize_compressed(&bytes[..]).map_err(|e| format!("not a verifying key: {e}"))
}

fn read_text(path: &Path, what: &str) -> Result<String, RelayerError> {
    std::fs::read_to_string(path).map_err(|e| RelayerError::Config(format!("{what} {}: {e}", path.display())))
}

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
        let key = read_text(&config.key_file, "key file")?;
        let signer: PrivateKeySigner = key
            .trim()
            .parse()
            .map_err(|e| RelayerError::Config(format!("key file {}: {e}", config.key_file.display())))?;
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

    async fn fee_plan(&self) -> Result<(u64, FeePlan), String> {
        let block = self
            .provider
            .get_block_by_number(BlockNumberOrTag::Latest)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the node has no latest block")?;
        let next = block.header.inner.next_block_base_fee(BaseFeeParams::ethereum()).unwrap_or(0);
        let p = &self.config.policy;
        Ok((block.header.inner.number, FeePlan::new(u128::from(next), p.priority_fee_wei, p.base_fee_headroom_bps)))
    }

    /// The value of `fee` of `asset` in wei (ETH: itself; a token: what selling it yields).
    async fn value_wei(&self, asset: Address, fee: U256) -> Result<U256, PriceError> {
        if asset == Address::ZERO {
            return Ok(fee);
        }
        Ok(self.feed.price(&self.provider, asset).await?.map_or(U256::ZERO, |p| p.value_in_wei(fee)))
    }

    /// The smallest fee in `asset` worth `wei`.
    async fn fee_for_wei(&self, asset: Address, wei: U256) -> Result<Option<U256>, PriceError> {
        if asset == Address::ZERO {
            return Ok(Some(wei));
        }
        Ok(self.feed.price(&self.provider, asset).await?.and_then(|p| p.asset_for_wei(wei)))
    }

    /// The current price: served from a cache refreshed at most every
    /// [`Policy::quote_cache_ms`] (one refresh at a time; concurrent askers share it), so a
    /// flood of quotes costs no chain reads and quotes never wait on simulations. A token
    /// without a price now (its mean price window not filled) is left out.
    pub async fn quote(&self) -> Result<Quote, String> {
        let mut cache = self.quote_cache.lock().await;
        let ttl = Duration::from_millis(self.config.policy.quote_cache_ms);
        if let Some((at, quote)) = cache.as_ref()
            && at.elapsed() < ttl
        {
            return Ok(quote.clone());
        }
        let quote = self.fresh_quote().await?;
        *cache = Some((Instant::now(), quote.clone()));
        Ok(quote)
    }

    async fn fresh_quote(&self) -> Result<Quote, String> {
        let (block, plan) = self.fee_plan().await?;
        let p = &self.config.policy;
        let per_million_wei = required_wei(1_000_000, plan.max_fee_per_gas, p.margin_bps);
        let l1_data_gas = self.reference_l1_gas(&plan).await?;
        let mut prices = Vec::new();
        for asset in &self.admission.assets {
            match self.fee_for_wei(*asset, per_million_wei).await {
                Ok(Some(per_million_gas)) => prices.push(AssetPrice { asset: *asset, per_million_gas }),
                Ok(None) | Err(PriceError::NotReady(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(Quote {
            chain_id: self.config.chain_id,
            executor: self.config.executor,
            relayer: self.account,
            pool: self.config.pool,
            block,
            base_fee: U256::from(plan.base_fee),
            priority_fee: U256::from(plan.priority_fee),
            max_fee_per_gas: U256::from(plan.max_fee_per_gas),
            margin_bps: p.margin_bps,
            gas_extra_bps: p.gas_extra_bps,
            prices,
            payment_gas: p.payment_gas,
            insertion_gas: p.insertion_gas(),
            l1_data_gas,
        })
    }

    /// The L1 data fee (wei) of the signed transaction `signed` on this chain, at the prices
    /// posted now (0 on an L1).
    async fn l1_fee(&self, signed: &[u8]) -> Result<U256, String> {
        if self.fee_model == FeeModel::L1 {
            return Ok(U256::ZERO);
        }
        let pricing =
            nox_chain::l2fee::read_pricing(&self.provider, self.fee_model).await.map_err(|e| e.to_string())?;
        Ok(pricing.fee(signed))
    }

    /// A quote's `l1_data_gas`: the data fee of a representative bundle
    /// ([`crate::price::reference_bundle_calldata`] with [`Policy::l1_reference_action_bytes`]
    /// of action calldata), signed as it would be sent, in gas at the plan's max fee.
    async fn reference_l1_gas(&self, plan: &FeePlan) -> Result<u64, String> {
        if self.fee_model == FeeModel::L1 {
            return Ok(0);
        }
        let p = &self.config.policy;
        let calldata = crate::price::reference_bundle_calldata(self.config.pool, p.l1_reference_action_bytes);
        let limit = crate::price::gas_limit(p.payment_gas, 0, p.gas_extra_bps);
        let nonce = self.next_nonce().await;
        let (_, signed) = self.sign(self.request(&calldata, limit, plan), nonce).await?;
        let fee = self.l1_fee(&signed).await?;
        Ok(crate::price::l1_fee_gas(fee, plan.max_fee_per_gas))
    }

    fn request(&self, calldata: &[u8], gas: u64, plan: &FeePlan) -> TransactionRequest {
        TransactionRequest::default()
            .with_from(self.account)
            .with_to(self.config.executor)
            .with_input(Bytes::copy_from_slice(calldata))
            .with_chain_id(self.config.chain_id)
            .with_gas_limit(gas)
            .with_max_fee_per_gas(plan.max_fee_per_gas)
            .with_max_priority_fee_per_gas(plan.priority_fee)
    }

    /// Runs the transaction on the pending state: `eth_simulateV1`, or `eth_call` plus
    /// `eth_estimateGas` where the node lacks it. `Err` is a refusal.
    async fn simulate(&self, tx: &TransactionRequest) -> Result<Simulated, Outcome> {
        let payload = SimulatePayload {
            block_state_calls: vec![SimBlock { calls: vec![tx.clone()], ..Default::default() }],
            ..Default::default()
        };
        match self.provider.simulate(&payload).block_id(BlockId::pending()).await {
            Ok(blocks) => {
                let call =
                    blocks.first().and_then(|b| b.calls.first()).ok_or_else(|| chain_refusal("empty simulation"))?;
                if !call.status {
                    return Err(revert_refusal(&call.return_data, call.error.as_ref().map(|e| e.message.as_str())));
                }
                let action_success = crate::abi::executeCall::abi_decode_returns(&call.return_data)
                    .map_err(|e| chain_refusal(format!("simulation returned no action status: {e}")))?;
                Ok(Simulated { gas_used: call.gas_used, action_success })
            }
            Err(e) if e.as_error_resp().is_some_and(|r| r.code == -32601) => self.simulate_fallback(tx).await,
            Err(e) => Err(chain_refusal(e)),
        }
    }

    async fn simulate_fallback(&self, tx: &TransactionRequest) -> Result<Simulated, Outcome> {
        let returned = match self.provider.call(tx.clone()).block(BlockId::pending()).await {
            Ok(r) => r,
            Err(e) => {
                let data = e.as_error_resp().and_then(|r| r.as_revert_data()).unwrap_or_default();
                return Err(revert_refusal(&data, Some(&e.to_string())));
            }
        };
        let action_success = crate::abi::executeCall::abi_decode_returns(&returned)
            .map_err(|e| chain_refusal(format!("eth_call returned no action status: {e}")))?;
        let gas_used = self.provider.estimate_gas(tx.clone()).block(BlockId::pending()).await.map_err(chain_refusal)?;
        Ok(Simulated { gas_used, action_success })
    }

    /// Admits, simulates, prices and (unless asked only to simulate) submits a bundle, then
    /// waits for its receipt up to the policy's wait.
    pub async fn submit(self: &Arc<Self>, s: Submission) -> Outcome {
        let arrived = Instant::now();
        let key = request_key(&s);
        // Before any proof check: remembered refusals, spent nullifiers, the deadline horizon.
        let early = match self.guard.lock() {
            Ok(mut g) => g.before_admission(&key, crate::check::claimed(&s.bundle.paymentData), unix_now_ms()),
            Err(_) => return chain_refusal("relayer guard lock poisoned"),
        };
        if let Err(d) = early {
            return refused_by(d);
        }
        // Simulate-only requests have their own small budget; submissions keep theirs.
        let budget = if s.simulate_only { &self.simulating } else { &self.permits };
        let Ok(permit) = budget.clone().try_acquire_owned() else {
            return Outcome::refused(Reason::Busy, "too many bundles in flight at this relayer");
        };
        let admission = self.admission.clone();
        let vk = self.vk.clone();
        let checked = {
            let s = s.clone();
            self.verifications.fetch_add(1, Ordering::Relaxed);
            tokio::task::spawn_blocking(move || admit(&admission, &vk, &s, unix_now())).await
        };
        let admitted = match checked {
            Ok(Ok(a)) => a,
            Ok(Err((reason, detail))) => {
                let d = Denied { reason, detail, required_fee: None };
                self.remember(&key, &[], &d);
                return refused_by(d);
            }
            Err(e) => return Outcome::refused(Reason::Malformed, format!("admission failed: {e}")),
        };
        let nullifiers = admitted.nullifiers;
        // Both nullifiers: a payment spending either note of one in flight is a replay, whatever
        // the order of its inputs.
        let fresh = self
            .in_flight
            .lock()
            .map(|mut set| {
                let free = nullifiers.iter().all(|n| !set.contains(n));
                if free {
                    set.extend(nullifiers);
                }
                free
            })
            .unwrap_or(false);
        if !fresh {
            return Outcome::refused(
                Reason::Replayed,
                "a bundle spending this payment's notes is already in flight here",
            );
        }
        let guard = InFlight { relayer: self.clone(), nullifiers };
        // The proof verified: the nullifiers are this payment's. Their simulation budgets, and
        // the global one of simulate-only requests (a copy already in flight spent none).
        let budgeted = match self.guard.lock() {
            Ok(mut g) => g.before_chain_work(nullifiers, s.simulate_only, unix_now_ms()),
            Err(_) => return chain_refusal("relayer guard lock poisoned"),
        };
        if let Err(d) = budgeted {
            return refused_by(d);
        }
        self.simulation_rounds.fetch_add(1, Ordering::Relaxed);
        let mut found_spent = Vec::new();
        let outcome = self.price_and_send(&s, &admitted, guard, arrived, &mut found_spent).await;
        drop(permit);
        match &outcome {
            Outcome::Refused { reason, detail, required_fee } => {
                let d = Denied { reason: *reason, detail: detail.clone(), required_fee: *required_fee };
                self.remember(&key, &found_spent, &d);
            }
            // Mined with its payment through: both nullifiers are spent.
            Outcome::Included { .. } => {
                if let Ok(mut g) = self.guard.lock() {
                    g.spent(&nullifiers, unix_now_ms());
                }
            }
            _ => {}
        }
        outcome
    }

    fn remember(&self, key: &B256, spent: &[U256], d: &Denied) {
        if let Ok(mut g) = self.guard.lock() {
            g.remember(key, spent, d, unix_now_ms());
        }
    }

    /// The pool views (both nullifiers unspent, the root known), the action's target, both
    /// simulations, pricing, then the transaction. `found_spent` receives the nullifiers the
    /// pool says are spent (the guard remembers them).
    async fn price_and_send(
        self: &Arc<Self>,
        s: &Submission,
        a: &Admitted,
        guard: InFlight,
        arrived: Instant,
        found_spent: &mut Vec<U256>,
    ) -> Outcome {
        let pool = ShieldedPool::new(self.config.pool, &self.provider);
        for n in a.nullifiers {
            match pool.isSpent(n).call().await {
                Ok(true) => found_spent.push(n),
                Ok(false) => {}
                Err(e) => return chain_refusal(e),
            }
        }
        if !found_spent.is_empty() {
            return Outcome::refused(Reason::Spent, "a note of the payment is already spent");
        }
        match pool.isKnownRoot(a.transaction.root).call().await {
            Ok(true) => {}
            Ok(false) => return Outcome::refused(Reason::UnknownRoot, "the proof's root is not in the pool's window"),
            Err(e) => return chain_refusal(e),
        }
        // A call with calldata to an address without code does nothing and succeeds: a typo'd
        // target would be "executed" and the fee paid for nothing (issue 35). Refused; a
        // payment-only bundle (target 0, no calldata) is not a call to anything.
        let action = &s.bundle.action;
        if !action.data.is_empty() && !precompile(action.target) {
            match self.provider.get_code_at(action.target).await {
                Ok(code) if code.is_empty() => {
                    return Outcome::refused(
                        Reason::NoCode,
                        format!("the action calls {} with calldata, but no contract is there", action.target),
                    );
                }
                Ok(_) => {}
                Err(e) => return chain_refusal(e),
            }
        }
        let plan = match self.fee_plan().await {
            Ok((_, plan)) => plan,
            Err(e) => return chain_refusal(e),
        };
        let p = &self.config.policy;
        let first = match self.simulate(&self.request(&s.calldata, p.gas_cap, &plan)).await {
            Ok(sim) => sim,
            Err(refusal) => return refusal,
        };
        let action_gas = u64::try_from(s.bundle.action.gas).unwrap_or(u64::MAX);
        let mut limit = bundle_gas_limit(first.gas_used, p.payment_gas, action_gas, p.gas_extra_bps);
        // The L1 data fee of the transaction as it will be signed (an L2; 0 on an L1). On
        // Arbitrum it is charged as gas at the base fee: the limit must hold it (with the
        // base-fee headroom: fewer wei per gas, more gas) and the gas price covers it; on the OP
        // stack it is charged beside the gas and priced beside it.
        let mut l1_fee = U256::ZERO;
        if self.fee_model != FeeModel::L1 {
            let nonce = self.next_nonce().await;
            let signed = match self.sign(self.request(&s.calldata, limit, &plan), nonce).await {
                Ok((_, signed)) => signed,
                Err(e) => return chain_refusal(e),
            };
            l1_fee = match self.l1_fee(&signed).await {
                Ok(fee) => fee,
                Err(e) => return chain_refusal(e),
            };
            if self.fee_model == FeeModel::Arbitrum {
                let l1_gas = nox_chain::l2fee::ArbFeeParams::gas_for(l1_fee, plan.base_fee.max(1));
                let l1_gas = crate::price::l1_fee_gas(
                    U256::from(l1_gas) * U256::from(crate::price::BPS + p.base_fee_headroom_bps),
                    u128::from(crate::price::BPS),
                );
                limit = limit.saturating_add(l1_gas);
                l1_fee = U256::ZERO;
            }
        }
        // The exact transaction: same sender, calldata, fees and the gas limit it will carry.
        let exact = self.request(&s.calldata, limit, &plan);
        let sim = match self.simulate(&exact).await {
            Ok(sim) => sim,
            Err(refusal) => return refusal,
        };
        if first.action_success && !sim.action_success {
            return Outcome::refused(
                Reason::ActionReverts,
                "the action runs out of gas at the gas limit the relayer sets",
            );
        }
        if !sim.action_success && !s.pay_on_revert {
            return Outcome::refused(
                Reason::ActionReverts,
                "the action reverts in simulation (ask to pay anyway to submit it)",
            );
        }
        // The fee covers the transaction's gas limit and the insertion share of its two
        // output notes (what the relayer's inserter will spend on them), at the same price.
        let priced_gas = limit.saturating_add(p.insertion_gas());
        let required = required_wei(priced_gas, plan.max_fee_per_gas, p.margin_bps)
            .saturating_add(crate::price::with_margin(l1_fee, p.margin_bps));
        let value = match self.value_wei(a.asset, a.fee).await {
            Ok(v) => v,
            Err(e) => return price_refusal(e),
        };
        let required_fee = match self.fee_for_wei(a.asset, required).await {
            Ok(f) => f,
            Err(e) => return price_refusal(e),
        };
        if value < required {
            return Outcome::Refused {
                reason: Reason::Unprofitable,
                detail: format!(
                    "the fee is worth {value} wei; gas limit {limit} and the outputs' insertion share {} gas at {} wei per gas, an L1 data fee of {l1_fee} wei, plus a {} bps margin needs {required} wei",
                    p.insertion_gas(),
                    plan.max_fee_per_gas,
                    p.margin_bps
                ),
                required_fee,
            };
        }
        if s.simulate_only {
            return Outcome::Simulated {
                gas_used: sim.gas_used,
                gas_limit: limit,
                action_success: sim.action_success,
                required_fee: required_fee.unwrap_or(U256::MAX),
                prepare_ms: millis(arrived.elapsed()),
            };
        }
        let nonce = match self.send_new(&exact, a, value).await {
            Ok(nonce) => nonce,
            Err(refusal) => return refusal,
        };
        let prepare_ms = millis(arrived.elapsed());
        let (tx, rx) = oneshot::channel();
        let relayer = self.clone();
        tokio::spawn(async move {
            let mut outcome = relayer.track(nonce, Some(value)).await;
            if let Outcome::Included { prepare_ms: p, .. } = &mut outcome {
                *p = prepare_ms;
            }
            drop(guard);
            let _ = tx.send(outcome);
        });
        let hash = self.latest_hash(nonce).await.unwrap_or_default();
        match tokio::time::timeout(Duration::from_millis(p.wait_ms), rx).await {
            Ok(Ok(outcome)) => outcome,
            _ => Outcome::Pending {
                tx_hash: hash,
                detail: format!("not mined within {} ms; the relayer keeps tracking it", p.wait_ms),
            },
        }
    }

    async fn latest_hash(&self, nonce: u64) -> Option<B256> {
        self.journal.lock().await.pending().iter().find(|p| p.nonce == nonce).and_then(|p| p.hashes.last().copied())
    }

    async fn sign(&self, tx: TransactionRequest, nonce: u64) -> Result<(B256, Bytes), String> {
        let envelope = tx.with_nonce(nonce).build(&self.wallet).await.map_err(|e| e.to_string())?;
        Ok((*envelope.tx_hash(), Bytes::from(envelope.encoded_2718())))
    }

    /// Signs at the next nonce, journals, broadcasts. The journal lock is held until the
    /// broadcast's answer, so a refused broadcast gives its nonce back and no gap opens.
    async fn send_new(&self, tx: &TransactionRequest, a: &Admitted, value_wei: U256) -> Result<u64, Outcome> {
        let mut journal = self.journal.lock().await;
        let nonce = journal.next_nonce();
        let (hash, raw) = self.sign(tx.clone(), nonce).await.map_err(chain_refusal)?;
        journal
            .record(Pending {
                nonce,
                hashes: vec![hash],
                raw: raw.clone(),
                gas_limit: tx.gas.unwrap_or_default(),
                priority_fee: tx.max_priority_fee_per_gas.unwrap_or_default(),
                max_fee_per_gas: tx.max_fee_per_gas.unwrap_or_default(),
                fee: a.fee,
                asset: a.asset,
                nullifier: a.nullifiers[0],
                value_wei,
                bumps: 0,
            })
            .map_err(chain_refusal)?;
        match self.provider.send_raw_transaction(&raw).await {
            Ok(_) => Ok(nonce),
            Err(e) if e.to_string().contains("already known") => Ok(nonce),
            Err(e) => {
                if let Err(j) = journal.unrecord(nonce) {
                    tracing::error!(nonce, error = %j, "relayer: could not take back a refused transaction");
                }
                match node_says(&e) {
                    Some(said) => {
                        tracing::warn!(nonce, error = %e, "relayer: broadcast refused");
                        Err(Outcome::refused(
                            Reason::Chain,
                            format!("the relayer's node refused the transaction: {said}"),
                        ))
                    }
                    None => Err(chain_refusal(e)),
                }
            }
        }
    }

    async fn rebroadcast(&self, nonce: u64) {
        let raw = self.journal.lock().await.pending().iter().find(|p| p.nonce == nonce).map(|p| p.raw.clone());
        if let Some(raw) = raw
            && let Err(e) = self.provider.send_raw_transaction(&raw).await
        {
            tracing::info!(nonce, error = %e, "relayer: rebroadcast not accepted (mined or known already?)");
        }
    }

    /// Follows the transaction at `nonce` to a receipt, bumping its fees while the bumped price
    /// stays profitable for a fee worth `value_wei` (unknown after a restart: then it re-prices
    /// from the journal's fee and asset). Settles the journal entry.
    async fn track(&self, nonce: u64, value_wei: Option<U256>) -> Outcome {
        let p = &self.config.policy;
        let sent = Instant::now();
        let mut last_send = Instant::now();
        let mut bumping = true;
        let mut nonce_taken_polls = 0u32;
        loop {
            tokio::time::sleep(Duration::from_millis(p.poll_ms)).await;
            let Some(entry) = self.journal.lock().await.pending().iter().find(|e| e.nonce == nonce).cloned() else {
                return Outcome::refused(Reason::Chain, "the transaction left the journal");
            };
            for hash in entry.hashes.iter().rev() {
                match self.provider.get_transaction_receipt(*hash).await {
                    Ok(Some(receipt)) => {
                        self.settle(nonce).await;
                        return receipt_outcome(&receipt, &entry, self.config.executor, millis(sent.elapsed()));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(nonce, error = %e, "relayer: receipt poll failed"),
                }
            }
            // Our nonce used by a transaction we never signed (the key used elsewhere).
            match self.provider.get_transaction_count(self.account).latest().await {
                Ok(count) if count > nonce => {
                    nonce_taken_polls += 1;
                    if nonce_taken_polls >= 3 {
                        self.settle(nonce).await;
                        return Outcome::refused(Reason::Chain, "the relayer's nonce was used by another transaction");
                    }
                    continue;
                }
                _ => nonce_taken_polls = 0,
            }
            if bumping && entry.bumps < p.max_bumps && last_send.elapsed() >= Duration::from_millis(p.bump_after_ms) {
                bumping = self.bump(&entry, value_wei).await;
                last_send = Instant::now();
            }
        }
    }

    async fn settle(&self, nonce: u64) {
        if let Err(e) = self.journal.lock().await.settle(nonce) {
            tracing::error!(nonce, error = %e, "relayer: could not settle a journal entry");
        }
    }

    /// One fee bump of `entry`, if still profitable. Returns whether further bumps may follow.
    async fn bump(&self, entry: &Pending, value_wei: Option<U256>) -> bool {
        let p = &self.config.policy;
        let Ok((_, current)) = self.fee_plan().await else { return true };
        let old = FeePlan {
            base_fee: current.base_fee,
            priority_fee: entry.priority_fee,
            max_fee_per_gas: entry.max_fee_per_gas,
        };
        let new = old.bumped(p.bump_bps, &current);
        let value = match value_wei {
            Some(v) => v,
            None => self.value_wei(entry.asset, entry.fee).await.unwrap_or(U256::ZERO),
        };
        let priced_gas = entry.gas_limit.saturating_add(p.insertion_gas());
        // The OP stack's data fee is charged beside the gas (Arbitrum's is in the gas limit).
        let l1_fee = match self.fee_model {
            FeeModel::OpStack => match self.l1_fee(&entry.raw).await {
                Ok(fee) => fee,
                Err(_) => return true,
            },
            _ => U256::ZERO,
        };
        let required = required_wei(priced_gas, new.max_fee_per_gas, p.margin_bps)
            .saturating_add(crate::price::with_margin(l1_fee, p.margin_bps));
        if required > value {
            tracing::info!(nonce = entry.nonce, "relayer: no further fee bump (it would be unprofitable)");
            return false;
        }
        let tx = TransactionRequest::default()
            .with_from(self.account)
            .with_to(self.config.executor)
            .with_input(self.calldata_of(entry).unwrap_or_default())
            .with_chain_id(self.config.chain_id)
            .with_gas_limit(entry.gas_limit)
            .with_max_fee_per_gas(new.max_fee_per_gas)
            .with_max_priority_fee_per_gas(new.priority_fee);
        let Ok((hash, raw)) = self.sign(tx, entry.nonce).await else { return false };
        let mut journal = self.journal.lock().await;
        if let Err(e) = journal.replace(entry.nonce, hash, raw.clone(), new.priority_fee, new.max_fee_per_gas) {
            tracing::error!(nonce = entry.nonce, error = %e, "relayer: could not journal a fee bump");
            return false;
        }
        drop(journal);
        if let Err(e) = self.provider.send_raw_transaction(&raw).await {
            tracing::info!(nonce = entry.nonce, error = %e, "relayer: fee bump not accepted");
        } else {
            tracing::info!(nonce = entry.nonce, max_fee = new.max_fee_per_gas, "relayer: fee bumped");
        }
        true
    }

    /// The calldata of a journaled transaction (decoded from its signed bytes).
    fn calldata_of(&self, entry: &Pending) -> Option<Bytes> {
        use alloy::consensus::{Transaction, TxEnvelope};
        use alloy::eips::eip2718::Decodable2718;
        let envelope = TxEnvelope::decode_2718(&mut entry.raw.as_ref()).ok()?;
        Some(envelope.input().clone())
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
