//! The relayer's settings: where it runs, how it prices and submits, and why it could not start.

use super::*;

/// Where the relayer runs: the `[exit.services.relay]` table of an exit node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayerConfig {
    /// The chain's JSON-RPC endpoint (the operator's own node).
    pub rpc_url: String,
    /// File holding the relayer account's private key (hex, plain text; the testnet's). Give
    /// this or `keystore`, not both.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// A Web3 Secret Storage v3 keystore holding the relayer account's key (geth/cast/foundry's
    /// format; `nox operator new-key` writes one). An operator's own keystore here makes the
    /// fees the exit earns the operator's, claimed with `nox operator claim`.
    #[serde(default)]
    pub keystore: Option<PathBuf>,
    /// The keystore's passphrase: this file's first line; without it the environment variable
    /// [`PASSWORD_ENV`].
    #[serde(default)]
    pub password_file: Option<PathBuf>,
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

/// The environment variable a keystore's passphrase may come from (as `nox operator`'s).
pub const PASSWORD_ENV: &str = "NOX_OPERATOR_PASSWORD";

impl RelayerConfig {
    /// The relayer account's key: from `key_file`, or decrypted from `keystore` (scrypt: about a
    /// second, once at start). The passphrase is zeroized after use.
    pub fn signer(&self) -> Result<PrivateKeySigner, RelayerError> {
        match (&self.key_file, &self.keystore) {
            (Some(file), None) => {
                let key = zeroize::Zeroizing::new(read_text(file, "key file")?);
                key.trim().parse().map_err(|e| RelayerError::Config(format!("key file {}: {e}", file.display())))
            }
            (None, Some(keystore)) => {
                let passphrase = match &self.password_file {
                    Some(f) => zeroize::Zeroizing::new(
                        read_text(f, "password file")?.lines().next().unwrap_or_default().to_owned(),
                    ),
                    None => zeroize::Zeroizing::new(std::env::var(PASSWORD_ENV).map_err(|_| {
                        RelayerError::Config(format!(
                            "keystore {}: no passphrase (give password_file, or set {PASSWORD_ENV})",
                            keystore.display()
                        ))
                    })?),
                };
                PrivateKeySigner::decrypt_keystore(keystore, passphrase.as_bytes()).map_err(|e| {
                    RelayerError::Config(format!(
                        "keystore {}: {} (a wrong passphrase shows as a MAC mismatch)",
                        keystore.display(),
                        e
                    ))
                })
            }
            (Some(_), Some(_)) => Err(RelayerError::Config("give key_file or keystore, not both".into())),
            (None, None) => Err(RelayerError::Config("no key: give keystore (and password_file) or key_file".into())),
        }
    }
}

pub(super) fn read_text(path: &Path, what: &str) -> Result<String, RelayerError> {
    std::fs::read_to_string(path).map_err(|e| RelayerError::Config(format!("{what} {}: {e}", path.display())))
}
