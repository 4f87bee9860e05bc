//! `nox dashboard`: a live web page of the network — layers and their nodes, per-node packet
//! rates, drops by reason, the mixing-delay histogram, PoW difficulty, epoch and key status and
//! the registry view — built from the nodes' `/metrics` and the verified topology
//! (docs/design/dashboard.md).
//!
//! The poller scrapes every node's metrics endpoint each interval (bounded in time and size), the
//! topology is fetched and verified as a client does, and a small HTTP server (hyper) serves the
//! page (`GET /`, embedded, no external resources) and the aggregate state (`GET /api/state`).
//! Aggregates only: the state never carries a node's socket address or anything per packet.
//!
//! Pure parts: [`metrics`] (the bounded Prometheus text parser) and [`state`] (rates, views,
//! the JSON state); this module is the I/O shell around them.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::{
    convert::Infallible,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use nox_sphinx::NodeId;

pub mod metrics;
pub mod state;

use crate::metrics::{Limits, NodeReading};
use crate::state::{ChainView, Endpoint, TopologyStatus, Tracker};

/// Time allowed for one node's scrape (connect, request, whole body).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(800);
/// Largest `/metrics` body read (a node writes ~10 KiB).
pub const MAX_METRICS_BYTES: usize = 256 * 1024;
/// How often the topology (and the registry) is re-read.
const TOPOLOGY_PERIOD: Duration = Duration::from_secs(5);
/// Time allowed for one directory fetch.
const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(5);

/// Page and API connections served at once; more are closed on accept.
const MAX_CONNECTIONS: usize = 64;

/// The page: HTML, CSS and JS in one file, compiled into the binary.
const PAGE: &str = include_str!("page.html");

/// `nox dashboard …`
#[derive(clap::Args, Debug, Clone)]
pub struct DashboardArgs {
    /// A testnet state directory: its directory (or `topology.json`), its nodes' metrics
    /// endpoints and, when it has one, its chain.
    #[arg(long, conflicts_with_all = ["directory", "authority"])]
    pub testnet: Option<PathBuf>,
    /// A directory mirror, `http://IP:PORT`; repeat for several. Needs `--authority`.
    #[arg(long, requires = "authority")]
    pub directory: Vec<String>,
    /// The directory authority's Ed25519 public key, hex.
    #[arg(long, requires = "directory")]
    pub authority: Option<String>,
    /// A node's metrics endpoint, `NODE_ID=IP:PORT` (NODE_ID: the node id in hex or a unique
    /// prefix of at least 8 digits); repeat for each node.
    #[arg(long = "node", value_name = "NODE_ID=IP:PORT")]
    pub nodes: Vec<String>,
    /// A TOML file with a `[chain]` section (as `nox directory --chain`): show the registry.
    #[arg(long)]
    pub chain: Option<PathBuf>,
    /// Where to serve the page.
    #[arg(long, default_value = "127.0.0.1:9400")]
    pub listen: SocketAddr,
    /// Scrape period, milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
}

/// Errors of the dashboard.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// Neither `--testnet` nor `--directory … --authority` was given.
    #[error("give --testnet <dir>, or --directory <url>... --authority <hex> with --node <id>=<ip:port>...")]
    NoTopologySource,
    /// A `--node` argument is not `NODE_ID=IP:PORT` with a node id of 8 to 64 hex digits.
    #[error("--node {spec}: expected NODE_ID=IP:PORT (NODE_ID ≥ 8 hex digits)")]
    BadNode {
        /// The argument as given.
        spec: String,
    },
    /// `--authority` is not 64 hex digits.
    #[error("--authority: expected 64 hex digits")]
    AuthorityNotHex,
    /// `--authority` is 32 bytes but not an Ed25519 public key (not a curve point).
    #[error("--authority: not an Ed25519 public key")]
    AuthorityNotAKey,
    /// A `--directory` URL is malformed.
    #[error("--directory: {0}")]
    Directory(#[source] nox_directory::ClientError),
    /// The `--chain` file cannot be read or has no valid `[chain]` section.
    #[error("{reason}")]
    Chain {
        /// The file.
        file: PathBuf,
        /// Why, as `nox_testnet::chain::load_chain_toml` reports it (the file's path first).
        reason: String,
    },
    /// The listening socket.
    #[error("listen {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime.
    #[error("runtime: {0}")]
    Runtime(std::io::Error),
}

/// Where the topology comes from.
#[derive(Clone, Debug)]
enum TopologySource {
    Testnet(PathBuf),
    Mirrors { mirrors: nox_directory::Mirrors, authority: nox_topology::VerifyingKey },
}

impl TopologySource {
    fn label(&self) -> &'static str {
        match self {
            TopologySource::Testnet(_) => "testnet directory",
            TopologySource::Mirrors { .. } => "directory mirrors",
        }
    }

    async fn fetch(&self) -> Result<nox_topology::VerifiedTopology, String> {
        match self {
            TopologySource::Testnet(dir) => nox_testnet::directory::topology_async(dir).await,
            TopologySource::Mirrors { mirrors, authority } => mirrors
                .fetch(DIRECTORY_TIMEOUT, |document| verify_named(&document, *authority))
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

/// How an endpoint is matched to its topology node.
#[derive(Clone, Debug)]
enum Identify {
    /// A testnet node: its descriptor's listen address is the one in its `node.toml`.
    Listen(Option<SocketAddr>),
    /// A node id prefix (hex) given on the command line.
    IdPrefix(String),
}

/// One scrape target. Its address stays here: the state never sees it.
#[derive(Clone, Debug)]
struct Target {
    metrics: SocketAddr,
    identify: Identify,
}

struct Shared {
    tracker: Tracker,
    topology: TopologyStatus,
    chain: Option<ChainView>,
}

/// Runs the dashboard on a new two-thread Tokio runtime until the watch `stop` (made inside
/// the runtime, e.g. the binary's SIGINT/SIGTERM watch) turns true.
pub fn run(args: &DashboardArgs, stop: impl FnOnce() -> tokio::sync::watch::Receiver<bool>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| DashboardError::Runtime(e).to_string())?;
    runtime.block_on(async move { serve(args, stop()).await.map_err(|e| e.to_string()) })
}

/// Verifies `document` under `authority` for the geometry the document names, at the current
/// wall-clock second (as the client does).
fn verify_named(
    document: &nox_topology::TopologyDocument,
    authority: nox_topology::VerifyingKey,
) -> Result<nox_topology::VerifiedTopology, nox_topology::TopologyError> {
    let geometry = nox_topology::geometry_for(document)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    document.verify(&nox_topology::VerifyConfig::new(authority, geometry), now)
}

fn parse_node(spec: &str) -> Result<(String, SocketAddr), DashboardError> {
    let usage = || DashboardError::BadNode { spec: spec.to_owned() };
    let (id, addr) = spec.split_once('=').ok_or_else(usage)?;
    let id = id.trim().to_ascii_lowercase();
    if id.len() < 8 || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(usage());
    }
    Ok((id, addr.trim().parse().map_err(|_| usage())?))
}

fn authority_key(authority: &str) -> Result<nox_topology::VerifyingKey, DashboardError> {
    let bytes: [u8; 32] =
        hex::decode(authority.trim()).ok().and_then(|b| b.try_into().ok()).ok_or(DashboardError::AuthorityNotHex)?;
    nox_topology::VerifyingKey::from_bytes(&bytes).map_err(|_| DashboardError::AuthorityNotAKey)
}

/// The testnet's nodes as endpoints and targets (name `node-<i>`, layer from its `layer` file).
fn testnet_targets(dir: &Path) -> Vec<(Endpoint, Target)> {
    nox_testnet::nodes(dir)
        .into_iter()
        .map(|node| {
            let name = node.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let listen = std::fs::read_to_string(node.dir.join("node.toml")).ok().and_then(|config| {
                config.lines().find_map(|l| l.trim().strip_prefix("listen = \"")?.strip_suffix('"')?.parse().ok())
            });
            (
                Endpoint { name, id: None, layer_hint: Some(node.layer) },
                Target { metrics: node.metrics, identify: Identify::Listen(listen) },
            )
        })
        .collect()
}

fn resolve(identify: &Identify, topology: &nox_topology::VerifiedTopology) -> Option<NodeId> {
    match identify {
        Identify::Listen(listen) => {
            let listen = (*listen)?;
            topology.nodes().iter().find(|n| n.descriptor.address == listen).map(|n| n.id)
        }
        Identify::IdPrefix(prefix) => {
            let mut matches = topology.nodes().iter().filter(|n| hex::encode(n.id.0).starts_with(prefix.as_str()));
            let first = matches.next()?;
            matches.next().is_none().then_some(first.id)
        }
    }
}

/// Serves the dashboard on `args.listen` until `stop` turns true.
pub async fn serve(args: &DashboardArgs, stop: tokio::sync::watch::Receiver<bool>) -> Result<(), DashboardError> {
    let (source, mut pairs, chain_config) = match (&args.testnet, args.authority.as_deref()) {
        (Some(dir), _) => {
            let chain = nox_testnet::chain::load(dir).map(|info| info.config());
            (TopologySource::Testnet(dir.clone()), testnet_targets(dir), chain)
        }
        (None, Some(authority)) => {
            let mirrors = nox_directory::Mirrors::parse(&args.directory).map_err(DashboardError::Directory)?;
            (TopologySource::Mirrors { mirrors, authority: authority_key(authority)? }, Vec::new(), None)
        }
        (None, None) => {
            return Err(DashboardError::NoTopologySource);
        }
    };
    for spec in &args.nodes {
        let (prefix, metrics) = parse_node(spec)?;
        let name = prefix.chars().take(8).collect();
        pairs.push((
            Endpoint { name, id: None, layer_hint: None },
            Target { metrics, identify: Identify::IdPrefix(prefix) },
        ));
    }
    let chain_config = match &args.chain {
        Some(file) => Some(
            nox_testnet::chain::load_chain_toml(file)
                .map_err(|reason| DashboardError::Chain { file: file.clone(), reason })?,
        ),
        None => chain_config,
    };
    let (endpoints, targets): (Vec<Endpoint>, Vec<Target>) = pairs.into_iter().unzip();
    let shared = Arc::new(Mutex::new(Shared {
        tracker: Tracker::new(endpoints),
        topology: TopologyStatus { source: source.label().into(), ..TopologyStatus::default() },
        chain: None,
    }));
    let targets = Arc::new(Mutex::new(targets));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| DashboardError::Listen { addr: args.listen, source })?;
    let local = listener.local_addr().map_err(|source| DashboardError::Listen { addr: args.listen, source })?;
    println!("nox dashboard: http://{local}/ ({} metrics endpoints)", lock(&targets).len());

    let interval = Duration::from_millis(args.interval_ms.clamp(200, 60_000));
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(topology_loop(source, args.testnet.clone(), shared.clone(), targets.clone(), stop.clone()));
    tasks.spawn(scrape_loop(shared.clone(), targets, interval, stop.clone()));
    if let Some(config) = chain_config {
        tasks.spawn(chain_loop(config, shared.clone(), stop.clone()));
    }
    http_loop(listener, shared, stop).await;
    tasks.shutdown().await;
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

async fn sleep_or_stop(period: Duration, stop: &mut tokio::sync::watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(period) => false,
        _ = stop.wait_for(|s| *s) => true,
    }
}

/// Fetches and verifies the topology every [`TOPOLOGY_PERIOD`], matches endpoints to its nodes,
/// and (testnet) picks up nodes that joined.
async fn topology_loop(
    source: TopologySource,
    testnet: Option<PathBuf>,
    shared: Arc<Mutex<Shared>>,
    targets: Arc<Mutex<Vec<Target>>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        if let Some(dir) = &testnet {
            let known = lock(&targets).len();
            for (endpoint, target) in testnet_targets(dir).into_iter().skip(known) {
                lock(&shared).tracker.push(endpoint);
                lock(&targets).push(target);
            }
        }
        let fetched = source.fetch().await;
        {
            let targets = lock(&targets).clone();
            let mut shared = lock(&shared);
            match fetched {
                Ok(topology) => {
                    for (index, target) in targets.iter().enumerate() {
                        shared.tracker.set_id(index, resolve(&target.identify, &topology));
                    }
                    shared.topology.topology = Some(topology);
                    shared.topology.error = None;
                }
                Err(error) => {
                    // The detail may name the directory's address: it goes to the log only.
                    tracing::warn!(%error, "topology fetch failed; keeping the last verified topology");
                    shared.topology.error = Some("the last topology fetch failed (see the dashboard's log)".into());
                }
            }
        }
        if sleep_or_stop(TOPOLOGY_PERIOD, &mut stop).await {
            return;
        }
    }
}

/// Reads the registry every [`TOPOLOGY_PERIOD`].
async fn chain_loop(
    config: nox_chain::ChainConfig,
    shared: Arc<Mutex<Shared>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let membership = loop {
        match nox_node::ChainMembership::start(config.clone()).await {
            Ok(membership) => break membership,
            Err(error) => {
                tracing::warn!(%error, "registry not readable; retrying");
                if sleep_or_stop(TOPOLOGY_PERIOD, &mut stop).await {
                    return;
                }
            }
        }
    };
    loop {
        let _ = membership.refresh().await;
        let status = membership.status();
        lock(&shared).chain = Some(ChainView {
            block: status.block,
            registered: status.registered,
            fingerprint: Some(hex::encode(&status.fingerprint[..8])),
            refresh_errors: status.errors,
            source: "dashboard",
        });
        if sleep_or_stop(TOPOLOGY_PERIOD, &mut stop).await {
            return;
        }
    }
}

/// Scrapes every endpoint each `interval`, all at once, each bounded by [`SCRAPE_TIMEOUT`].
async fn scrape_loop(
    shared: Arc<Mutex<Shared>>,
    targets: Arc<Mutex<Vec<Target>>>,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let targets = lock(&targets).clone();
        let mut scrapes = tokio::task::JoinSet::new();
        for (index, target) in targets.into_iter().enumerate() {
            scrapes.spawn(async move {
                let result = scrape(target.metrics)
                    .await
                    .and_then(|text| NodeReading::from_text(&text, Limits::default()).map_err(|e| e.to_string()));
                (index, Instant::now(), result)
            });
        }
        while let Some(done) = scrapes.join_next().await {
            if let Ok((index, at, result)) = done {
                lock(&shared).tracker.record(index, at, result);
            }
        }
    }
}

/// `GET /metrics` from `addr` within [`SCRAPE_TIMEOUT`], at most [`MAX_METRICS_BYTES`]. The
/// error says why without the address (it is shown on the page).
pub async fn scrape(addr: SocketAddr) -> Result<String, String> {
    match tokio::time::timeout(SCRAPE_TIMEOUT, scrape_unbounded(addr)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {} ms", SCRAPE_TIMEOUT.as_millis())),
    }
}

async fn scrape_unbounded(addr: SocketAddr) -> Result<String, String> {
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        kind => format!("connect failed ({kind})"),
    })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let driver = tokio::spawn(connection);
    let request = Request::builder()
        .method(Method::GET)
        .uri("/metrics")
        .header(header::HOST, "localhost")
        .header(header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let outcome = async {
        let response = sender.send_request(request).await.map_err(|e| format!("HTTP request failed: {e}"))?;
        if response.status() != StatusCode::OK {
            return Err(format!("HTTP {}", response.status().as_u16()));
        }
        let body = Limited::new(response.into_body(), MAX_METRICS_BYTES)
            .collect()
            .await
            .map_err(|_| format!("metrics body unreadable or over {} KiB", MAX_METRICS_BYTES / 1024))?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| "metrics body is not UTF-8".to_owned())
    }
    .await;
    driver.abort();
    outcome
}

async fn http_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Mutex<Shared>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "dashboard: accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Over the limit: the connection is closed (dropped) instead of queued.
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(respond(&request, &shared)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(5))
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(Duration::from_secs(60), connection).await;
        });
    }
}

fn respond<B>(request: &Request<B>, shared: &Mutex<Shared>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/") => (StatusCode::OK, "text/html; charset=utf-8", Bytes::from_static(PAGE.as_bytes())),
        (&Method::GET, "/api/state") => {
            let json = {
                let shared = lock(shared);
                let state = shared.tracker.state(Instant::now(), now_unix(), &shared.topology, shared.chain.clone());
                serde_json::to_vec(&state)
            };
            match json {
                Ok(json) => (StatusCode::OK, "application/json", Bytes::from(json)),
                Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "text/plain", Bytes::from_static(b"state\n")),
            }
        }
        (&Method::GET, _) => (StatusCode::NOT_FOUND, "text/plain", Bytes::from_static(b"not found\n")),
        _ => (StatusCode::METHOD_NOT_ALLOWED, "text/plain", Bytes::from_static(b"GET only\n")),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff"));
    // Nothing leaves the dashboard's origin: no CDN, no fonts, no third-party requests.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
        ),
    );
    response
}

#[cfg(test)]
mod tests;
