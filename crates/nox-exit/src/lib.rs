#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod address;
mod config;
mod connect;
mod error;
mod http;
mod jsonrpc;
mod resolver;
mod streams;
mod target;
mod transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ::http::{Method, Request, header};
use bytes::Bytes;
use http_body_util::Full;
use tokio::sync::Semaphore;
use tokio_rustls::TlsConnector;

pub use address::{AddressPolicy, AllowEntry, AllowEntryError, NonGlobal, classify};
pub use config::{
    BLOCK_TAGS, ConfigError, DEFAULT_GAS_CAP, DEFAULT_JSON_RPC_METHODS, DEFAULT_STATE_BLOCK_TAGS, ExitConfig,
    HttpConfig, JsonRpcConfig, MAX_CONCURRENT, MAX_TIMEOUT,
};
pub use connect::{ConnectError, Connected, StreamPermit};
pub use error::{ErrorKind, ExitError};
pub use http::{HttpRequest, HttpResponse};
pub use ipnet::IpNet;
pub use jsonrpc::reply::ReplyMismatch;
pub use jsonrpc::tx::{TxError, TxSummary, TxType, decode as decode_transaction};
pub use resolver::{BoxFuture, Dialer, Resolver, SystemResolver, TcpDialer};
pub use streams::{DEFAULT_STREAM_PORTS, MAX_STREAM_BYTES, MAX_STREAM_LIFETIME, StreamsConfig};

use jsonrpc::RpcPolicy;
use target::Target;

/// The exit services. Cheap to clone (one `Arc`); `Send + Sync`.
#[derive(Clone)]
pub struct ExitServices {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    config: ExitConfig,
    policy: AddressPolicy,
    resolver: Arc<dyn Resolver>,
    dialer: Arc<dyn Dialer>,
    tls: TlsConnector,
    permits: Semaphore,
    /// One permit per open stream (`streams.max_streams`), owned by each stream.
    streams: Arc<Semaphore>,
    rpc: Option<Rpc>,
}

/// A configured JSON-RPC forwarder.
struct Rpc {
    policy: RpcPolicy,
    upstream: Target,
    /// Calls in flight across all clients (a batch takes one permit per call).
    calls: Semaphore,
    /// Upstream answers that did not match their request (not forwarded).
    mismatched: AtomicU64,
}

fn tls_connector() -> Result<TlsConnector, ConfigError> {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The JSON-RPC check alone, without I/O: the canonical body the exit would forward for `body`
/// under `config`, or the error it would answer. Used by the fuzz target; the forwarder itself
/// runs the same code.
pub fn canonical_json_rpc(config: &JsonRpcConfig, body: &[u8]) -> Result<Vec<u8>, ExitError> {
    RpcPolicy::new(config.clone()).validate(body).map(|validated| validated.body)
}

/// The upstream-answer check alone, without I/O: whether `reply` answers `request` (a body
/// [`canonical_json_rpc`] accepted, or any request it accepts) id for id — a single response
/// object with the request's exact `id`, or an array answering each batch id as often as it was
/// asked. Errors: the request's own refusal (outer), or the mismatch (inner). Used by the fuzz
/// target; the forwarder runs the same check on every answer.
pub fn check_json_rpc_reply(
    config: &JsonRpcConfig,
    request: &[u8],
    reply: &[u8],
) -> Result<Result<(), ReplyMismatch>, ExitError> {
    let validated = RpcPolicy::new(config.clone()).validate(request)?;
    Ok(jsonrpc::reply::check(&validated.expected, reply))
}

/// JSON-RPC settings the forwarder cannot run with.
fn check_rpc(rpc: &JsonRpcConfig) -> Result<(), ConfigError> {
    let invalid = |msg: String| Err(ConfigError::JsonRpc(msg));
    if rpc.gas_cap == 0 {
        return invalid("gas_cap must be at least 1".into());
    }
    if !(1..=MAX_CONCURRENT).contains(&rpc.max_calls_in_flight) || rpc.max_calls_in_flight > Semaphore::MAX_PERMITS {
        return invalid(format!("max_calls_in_flight must be between 1 and {MAX_CONCURRENT}"));
    }
    if rpc.max_batch == 0 || rpc.max_batch > rpc.max_calls_in_flight {
        return invalid(format!("max_batch must be between 1 and max_calls_in_flight ({})", rpc.max_calls_in_flight));
    }
    if let Some(tag) = rpc.state_block_tags.iter().find(|t| !BLOCK_TAGS.contains(&t.as_str())) {
        return invalid(format!("state_block_tags: unknown tag {tag:?} (known: {})", BLOCK_TAGS.join(", ")));
    }
    Ok(())
}

fn timeout_error(limit: Duration) -> ExitError {
    ExitError::Timeout(limit.as_millis())
}

impl ExitServices {
    /// Services with the system resolver and plain TCP connections.
    pub fn new(config: ExitConfig) -> Result<Self, ConfigError> {
        Self::with_resolver(config, Arc::new(SystemResolver))
    }

    /// Services with an injected resolver (tests, or a resolver the operator trusts).
    pub fn with_resolver(config: ExitConfig, resolver: Arc<dyn Resolver>) -> Result<Self, ConfigError> {
        Self::with_hooks(config, resolver, Arc::new(TcpDialer))
    }

    /// Services with an injected resolver and dialer. The dialer only ever receives addresses
    /// that passed the address policy, so it cannot undo the pinning.
    pub fn with_hooks(
        config: ExitConfig,
        resolver: Arc<dyn Resolver>,
        dialer: Arc<dyn Dialer>,
    ) -> Result<Self, ConfigError> {
        if !(1..=MAX_CONCURRENT).contains(&config.max_concurrent) {
            return Err(ConfigError::Concurrency(config.max_concurrent));
        }
        let timeout_ok = |t: Duration| !t.is_zero() && t <= MAX_TIMEOUT;
        if !timeout_ok(config.http.timeout) {
            return Err(ConfigError::Timeout("http"));
        }
        streams::check(&config.streams)?;
        let rpc = match &config.json_rpc {
            None => None,
            Some(rpc) => {
                if !timeout_ok(rpc.timeout) {
                    return Err(ConfigError::Timeout("json_rpc"));
                }
                let upstream = target::parse(&rpc.upstream).map_err(|e| ConfigError::Upstream(e.to_string()))?;
                check_rpc(rpc)?;
                let calls = Semaphore::new(rpc.max_calls_in_flight);
                Some(Rpc { policy: RpcPolicy::new(rpc.clone()), upstream, calls, mismatched: AtomicU64::new(0) })
            }
        };
        let inner = Inner {
            policy: AddressPolicy::new(config.http.allow.clone()),
            permits: Semaphore::new(config.max_concurrent),
            streams: Arc::new(Semaphore::new(config.streams.max_streams)),
            tls: tls_connector()?,
            rpc,
            resolver,
            dialer,
            config,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The configuration in use.
    pub fn config(&self) -> &ExitConfig {
        &self.inner.config
    }

    /// Echo: the body back, unchanged.
    pub async fn echo(&self, body: Vec<u8>) -> Vec<u8> {
        body
    }

    fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ExitError> {
        self.inner.permits.try_acquire().map_err(|_| ExitError::Busy(self.inner.config.max_concurrent))
    }

    /// Perform an HTTP(S) request for a client. The response (headers plus body) is capped at
    /// the smaller of `max_response_len` and `http.max_response_bytes`; the whole request,
    /// redirects included, at `http.timeout`.
    pub async fn http(&self, request: HttpRequest, max_response_len: usize) -> Result<HttpResponse, ExitError> {
        let _permit = self.permit()?;
        let config = &self.inner.config.http;
        let cap = max_response_len.min(config.max_response_bytes);
        tokio::time::timeout(config.timeout, self.inner.fetch(request, cap))
            .await
            .map_err(|_| timeout_error(config.timeout))?
    }

    /// Validate a JSON-RPC request or batch, forward its canonical re-serialisation (never the
    /// client's bytes) to the operator's upstream, and return the upstream's response body
    /// (capped like [`ExitServices::http`]) if it answers the request id for id
    /// ([`check_json_rpc_reply`]). An answer that does not is not forwarded: the client gets a
    /// JSON-RPC internal error (-32603) for each id it asked, naming the mismatch, and
    /// [`ExitServices::json_rpc_mismatched`] counts it.
    pub async fn json_rpc(&self, body: &[u8], max_response_len: usize) -> Result<Vec<u8>, ExitError> {
        let Some(rpc) = &self.inner.rpc else {
            return Err(ExitError::Unsupported("this exit does not offer JSON-RPC".into()));
        };
        let _permit = self.permit()?;
        let validated = rpc.policy.validate(body)?;
        let config = &rpc.policy.config;
        let calls = u32::try_from(validated.calls).unwrap_or(u32::MAX);
        let _calls = rpc.calls.try_acquire_many(calls).map_err(|_| ExitError::Busy(config.max_calls_in_flight))?;
        let cap = max_response_len.min(config.max_response_bytes);
        let answer = tokio::time::timeout(config.timeout, self.inner.forward_rpc(&rpc.upstream, validated.body, cap))
            .await
            .map_err(|_| timeout_error(config.timeout))??;
        match jsonrpc::reply::check(&validated.expected, &answer) {
            Ok(()) => Ok(answer),
            Err(mismatch) => {
                rpc.mismatched.fetch_add(1, Ordering::Relaxed);
                let substitute = jsonrpc::reply::internal_error(&validated.expected, &mismatch);
                if substitute.len() > cap {
                    return Err(ExitError::Upstream(mismatch.to_string()));
                }
                Ok(substitute)
            }
        }
    }

    /// Upstream JSON-RPC answers refused because they did not match their request (0 without
    /// a JSON-RPC service).
    pub fn json_rpc_mismatched(&self) -> u64 {
        self.inner.rpc.as_ref().map_or(0, |rpc| rpc.mismatched.load(Ordering::Relaxed))
    }
}

impl Inner {
    /// The upstream is the operator's own: resolved without the address policy. Error messages
    /// do not name it.
    async fn forward_rpc(&self, target: &Target, body: Vec<u8>, cap: usize) -> Result<Vec<u8>, ExitError> {
        let unavailable = |why: String| ExitError::Upstream(format!("JSON-RPC upstream unavailable: {why}"));
        let addrs = match target.ip {
            Some(ip) => vec![std::net::SocketAddr::new(ip, target.port)],
            None => {
                self.resolver.resolve(&target.host, target.port).await.map_err(|e| unavailable(e.kind().to_string()))?
            }
        };
        let request = Request::builder()
            .method(Method::POST)
            .uri(target.path.as_str())
            .header(header::HOST, target.host_header.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| unavailable(e.to_string()))?;
        let fetched =
            transport::exchange(&*self.dialer, &self.tls, target, &addrs, request, cap).await.map_err(|e| match e {
                ExitError::Upstream(why) => unavailable(why),
                other => other,
            })?;
        if !fetched.status.is_success() {
            return Err(unavailable(format!("HTTP status {}", fetched.status.as_u16())));
        }
        Ok(fetched.body)
    }
}
