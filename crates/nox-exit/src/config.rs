//! Exit configuration: the `[exit]` TOML section of the node, with defaults.

use std::time::Duration;

use serde::Deserialize;

use crate::address::AllowEntry;
use crate::streams::StreamsConfig;

/// Everything the exit services need. Every field has a default (`#[serde(default)]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExitConfig {
    /// The HTTP(S) fetch service.
    pub http: HttpConfig,
    /// The JSON-RPC forwarder; `None` (the default) disables it.
    pub json_rpc: Option<JsonRpcConfig>,
    /// Requests in flight at once, across HTTP and JSON-RPC; more are refused with `Busy`.
    pub max_concurrent: usize,
    /// TCP streams (SOCKS5 `CONNECT`) relayed by [`crate::ExitServices::connect`]. Their
    /// destinations pass the same address policy as HTTP (`http.allow`).
    pub streams: StreamsConfig,
}

impl Default for ExitConfig {
    fn default() -> Self {
        Self { http: HttpConfig::default(), json_rpc: None, max_concurrent: 64, streams: StreamsConfig::default() }
    }
}

/// The HTTP(S) fetch service.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Destinations accepted although non-global: `"127.0.0.1:8080"` / `"[::1]:8080"` (one
    /// address and port), `"127.0.0.1"` or `"10.0.0.0/8"` (every port). Default: none. Only
    /// IP literals and resolved addresses are matched, never names.
    pub allow: Vec<AllowEntry>,
    /// Destination ports accepted; empty (the default) accepts any port except 0.
    pub ports: Vec<u16>,
    /// Response cap (headers + body); the caller's per-request cap applies too, the smaller wins.
    pub max_response_bytes: usize,
    /// Total time for one request, redirects included (`timeout_ms` in TOML).
    #[serde(rename = "timeout_ms", with = "millis")]
    pub timeout: Duration,
    /// Redirects followed, each one resolved and checked again.
    pub max_redirects: u8,
    /// Request body cap.
    pub max_request_body: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            ports: Vec::new(),
            max_response_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            max_redirects: 3,
            max_request_body: 256 << 10,
        }
    }
}

/// Largest accepted `max_concurrent`.
pub const MAX_CONCURRENT: usize = 1_000_000;
/// Largest accepted timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The method allow-list used by default: read-only calls plus `eth_sendRawTransaction`
/// (which is refused until `chain_id` is configured).
pub const DEFAULT_JSON_RPC_METHODS: &[&str] = &[
    "eth_chainId",
    "eth_blockNumber",
    "eth_getBalance",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_call",
    "eth_estimateGas",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "eth_feeHistory",
    "eth_getTransactionCount",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getLogs",
    "net_version",
    "web3_clientVersion",
    "eth_sendRawTransaction",
];

/// The Ethereum JSON-RPC forwarder.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JsonRpcConfig {
    /// The operator's Ethereum node, `http://` or `https://`. Not subject to the SSRF filter.
    pub upstream: String,
    /// Methods forwarded; anything else is refused with `Forbidden`.
    pub methods: Vec<String>,
    /// Largest batch.
    pub max_batch: usize,
    /// Widest `eth_getLogs` range, in blocks (`toBlock - fromBlock + 1`).
    pub max_log_block_range: u64,
    /// Largest signed transaction in `eth_sendRawTransaction`, in decoded bytes.
    pub max_raw_tx_bytes: usize,
    /// Largest request body.
    pub max_request_bytes: usize,
    /// Total time for one upstream call (`timeout_ms` in TOML).
    #[serde(rename = "timeout_ms", with = "millis")]
    pub timeout: Duration,
    /// Upstream response cap; the caller's per-request cap applies too, the smaller wins.
    pub max_response_bytes: usize,
    /// The chain whose transactions `eth_sendRawTransaction` forwards. `None` (the default):
    /// the exit cannot check a transaction's chain, so it forwards none (`Forbidden`).
    pub chain_id: Option<u64>,
    /// Gas granted to one `eth_call` / `eth_estimateGas`: a call object without `gas` is sent
    /// with `gas` = this cap; one asking for more is refused (`Forbidden`).
    pub gas_cap: u64,
    /// Accept state overrides (the third parameter of `eth_call` / `eth_estimateGas`).
    pub state_overrides: bool,
    /// Block tags accepted where a method reads state (`eth_call`, `eth_estimateGas`,
    /// `eth_getBalance`, `eth_getCode`, `eth_getStorageAt`, `eth_getTransactionCount`).
    pub state_block_tags: Vec<String>,
    /// Accept block numbers and block hashes (EIP-1898) where a method reads state: old state
    /// needs an archive node and is the expensive case. Off by default: tags only.
    pub historical_state: bool,
    /// Most addresses in one `eth_getLogs` filter.
    pub max_log_addresses: usize,
    /// Most alternatives in one `eth_getLogs` topic position (there are at most 4 positions).
    pub max_log_topics: usize,
    /// Calls in flight at once across all clients, a batch counting as its length; more are
    /// refused with `Busy` (on top of the exit-wide `max_concurrent`).
    pub max_calls_in_flight: usize,
}

impl Default for JsonRpcConfig {
    fn default() -> Self {
        Self {
            upstream: "http://127.0.0.1:8545".to_owned(),
            methods: DEFAULT_JSON_RPC_METHODS.iter().map(|m| (*m).to_owned()).collect(),
            max_batch: 16,
            max_log_block_range: 1000,
            max_raw_tx_bytes: 128 << 10,
            max_request_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            max_response_bytes: 1 << 20,
            chain_id: None,
            gas_cap: DEFAULT_GAS_CAP,
            state_overrides: false,
            state_block_tags: DEFAULT_STATE_BLOCK_TAGS.iter().map(|t| (*t).to_owned()).collect(),
            historical_state: false,
            max_log_addresses: 32,
            max_log_topics: 32,
            max_calls_in_flight: 64,
        }
    }
}

/// Default `gas_cap`: geth's own default RPC gas cap.
pub const DEFAULT_GAS_CAP: u64 = 50_000_000;

/// Default `state_block_tags`: recent state only (`earliest` is archive state).
pub const DEFAULT_STATE_BLOCK_TAGS: &[&str] = &["latest", "pending", "safe", "finalized"];

/// Block tags a block parameter may carry at all.
pub const BLOCK_TAGS: &[&str] = &["latest", "pending", "safe", "finalized", "earliest"];

/// A configuration the exit cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `max_concurrent` is zero or above [`MAX_CONCURRENT`].
    #[error("exit max_concurrent must be between 1 and {MAX_CONCURRENT}, got {0}")]
    Concurrency(usize),
    /// A timeout is zero or above [`MAX_TIMEOUT`].
    #[error("exit {0} timeout must be between 1 ms and 1 hour")]
    Timeout(&'static str),
    /// The JSON-RPC upstream is not an `http://` or `https://` URL.
    #[error("invalid JSON-RPC upstream URL: {0}")]
    Upstream(String),
    /// A JSON-RPC setting out of range.
    #[error("invalid JSON-RPC setting: {0}")]
    JsonRpc(String),
    /// TLS could not be set up.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// A `[streams]` setting out of range.
    #[error("invalid streams setting: {0}")]
    Streams(String),
}

pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
