//! Exit configuration: the `[exit]` TOML section of the node, with defaults.

use std::time::Duration;

use ipnet::IpNet;
use serde::Deserialize;

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
}

impl Default for ExitConfig {
    fn default() -> Self {
        Self { http: HttpConfig::default(), json_rpc: None, max_concurrent: 64 }
    }
}

/// The HTTP(S) fetch service.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Networks accepted although non-global (tests: `127.0.0.0/8`). Default: none.
    pub allow: Vec<IpNet>,
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

/// The read-only (plus `eth_sendRawTransaction`) method allow-list used by default.
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
        }
    }
}

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
    /// TLS could not be set up.
    #[error("TLS setup failed: {0}")]
    Tls(String),
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
