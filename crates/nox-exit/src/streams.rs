//! TCP streams (SOCKS5 `CONNECT`): the `[exit.services.streams]` settings and their limits.
//!
//! The exit only opens the connection ([`crate::ExitServices::connect`]); the stream protocol
//! and the session manager that relays bytes enforce the per-stream limits read from here.

use std::time::Duration;

use serde::Deserialize;

use crate::config::{ConfigError, MAX_CONCURRENT, MAX_TIMEOUT, millis};

/// Destination ports open by default: HTTP, HTTPS, Ethereum JSON-RPC over HTTP and WebSocket.
pub const DEFAULT_STREAM_PORTS: &[u16] = &[80, 443, 8545, 8546];
/// Largest accepted `max_stream_bytes` (1 TiB).
pub const MAX_STREAM_BYTES: u64 = 1 << 40;
/// Largest accepted `max_lifetime` (one day).
pub const MAX_STREAM_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The TCP relay. Every field has a default (`#[serde(default)]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamsConfig {
    /// Offer streams at all; `false` answers every `connect` with `Unsupported`.
    pub enabled: bool,
    /// Destination ports accepted. A port outside the list is refused unless the destination
    /// address is admitted by an `http.allow` entry naming exactly that port
    /// (`"127.0.0.1:8443"`). Empty: only such entries. Unlike `http.ports`, empty is not "any".
    pub ports: Vec<u16>,
    /// Streams open at once on this exit; one more is refused with `Busy`.
    pub max_streams: usize,
    /// Bytes relayed per direction per stream (enforced by the session manager).
    pub max_stream_bytes: u64,
    /// Longest life of one stream (`max_lifetime_ms` in TOML; enforced by the session manager).
    #[serde(rename = "max_lifetime_ms", with = "millis")]
    pub max_lifetime: Duration,
    /// A stream with no byte in either direction for this long is closed (`idle_timeout_ms`;
    /// enforced by the session manager).
    #[serde(rename = "idle_timeout_ms", with = "millis")]
    pub idle_timeout: Duration,
    /// Resolution plus every connection attempt, in total (`connect_timeout_ms`).
    #[serde(rename = "connect_timeout_ms", with = "millis")]
    pub connect_timeout: Duration,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ports: DEFAULT_STREAM_PORTS.to_vec(),
            max_streams: 256,
            max_stream_bytes: 1 << 30,
            max_lifetime: Duration::from_secs(3600),
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// Settings the relay cannot run with (checked even when `enabled` is false).
pub(crate) fn check(streams: &StreamsConfig) -> Result<(), ConfigError> {
    let invalid = |msg: String| Err(ConfigError::Streams(msg));
    let max_streams = MAX_CONCURRENT.min(tokio::sync::Semaphore::MAX_PERMITS);
    if !(1..=max_streams).contains(&streams.max_streams) {
        return invalid(format!("max_streams must be between 1 and {max_streams}, got {}", streams.max_streams));
    }
    if !(1..=MAX_STREAM_BYTES).contains(&streams.max_stream_bytes) {
        return invalid(format!(
            "max_stream_bytes must be between 1 and {MAX_STREAM_BYTES}, got {}",
            streams.max_stream_bytes
        ));
    }
    let within = |t: Duration, max: Duration| !t.is_zero() && t <= max;
    if !within(streams.max_lifetime, MAX_STREAM_LIFETIME) {
        return invalid(format!("max_lifetime_ms must be between 1 and {}", MAX_STREAM_LIFETIME.as_millis()));
    }
    for (name, value) in [("idle_timeout_ms", streams.idle_timeout), ("connect_timeout_ms", streams.connect_timeout)] {
        let max = MAX_TIMEOUT.min(streams.max_lifetime);
        if !within(value, max) {
            return invalid(format!(
                "{name} must be between 1 and {} (at most 1 hour and at most max_lifetime_ms)",
                max.as_millis()
            ));
        }
    }
    if streams.ports.contains(&0) {
        return invalid("ports must not contain 0".into());
    }
    Ok(())
}
