//! Fetching the document and uploading a descriptor: async (nodes) and blocking (tools and
//! tests) helpers over the same HTTP subset as the server. Documents are returned parsed but
//! **unverified**: the caller verifies them against its authority key and clock.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nox_sphinx::Scheme;
use nox_topology::{EpochSchedule, LayerCount, MAX_DOCUMENT_BYTES, SignedDescriptor, TopologyDocument, TopologyError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http::{HttpError, parse_response};

/// Largest response read (a maximal document plus its head).
const MAX_RESPONSE_BYTES: usize = MAX_DOCUMENT_BYTES + (8 << 10);

/// Why a fetch or upload failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not `http://IP:PORT` (optionally with a trailing `/`).
    #[error("directory url {0:?}: expected http://IP:PORT")]
    Url(String),
    /// Connecting, writing or reading failed (or timed out).
    #[error("directory {addr}: {message}")]
    Io {
        /// The directory.
        addr: SocketAddr,
        /// What failed.
        message: String,
    },
    /// The response is not valid HTTP.
    #[error("directory response: {0}")]
    Http(#[from] HttpError),
    /// The directory answered with an error status.
    #[error("directory answered {status}: {message}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The body (the directory's explanation).
        message: String,
    },
    /// The document does not parse.
    #[error("document: {0}")]
    Topology(#[from] TopologyError),
    /// No directory URL was given.
    #[error("no directory url given")]
    NoMirror,
    /// Every mirror failed; one line per mirror.
    #[error("every directory mirror failed: {0}")]
    AllMirrors(String),
    /// `GET /parameters` answered something that is not a valid set of parameters.
    #[error("directory parameters: {0}")]
    Parameters(String),
}

/// What a directory serves at `GET /parameters`, with or without a document: the network's
/// epoch schedule, layer count and geometry (scheme, packet length). A node that starts before
/// the network's first document builds its epoch keys and descriptor from these. They are not
/// signed: a directory that lies can only make the node's uploads useless (which a directory
/// can do anyway, by refusing them); the document the node then runs on is authority-signed,
/// and the node must check that it names the same schedule and layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkParameters {
    /// The key-epoch schedule.
    pub schedule: EpochSchedule,
    /// The layer count (the packets' hop count).
    pub layers: LayerCount,
    /// The Sphinx scheme of the geometry.
    pub sphinx_scheme: Scheme,
    /// The packet length of the geometry, bytes.
    pub packet_len: usize,
}

/// The wire form of [`NetworkParameters`]: `key = value` lines (TOML).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ParametersText {
    genesis_unix: u64,
    epoch_secs: u64,
    overlap_secs: u64,
    publish_ahead: u32,
    layers: u8,
    sphinx_scheme: String,
    packet_len: usize,
}

impl NetworkParameters {
    /// The body of `GET /parameters`.
    pub fn render(&self) -> String {
        format!(
            "genesis_unix = {}\nepoch_secs = {}\noverlap_secs = {}\npublish_ahead = {}\nlayers = {}\nsphinx_scheme = \"{}\"\npacket_len = {}\n",
            self.schedule.genesis_unix(),
            self.schedule.epoch_length().as_secs(),
            self.schedule.overlap().as_secs(),
            self.schedule.publish_ahead(),
            self.layers.get(),
            self.sphinx_scheme,
            self.packet_len,
        )
    }

    /// Parses and checks a `GET /parameters` body.
    pub fn parse(body: &[u8]) -> Result<Self, ClientError> {
        let bad = |m: String| ClientError::Parameters(m);
        let text = std::str::from_utf8(body).map_err(|_| bad("not UTF-8".into()))?;
        let raw: ParametersText = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let schedule = EpochSchedule::new(
            raw.genesis_unix,
            Duration::from_secs(raw.epoch_secs),
            Duration::from_secs(raw.overlap_secs),
            raw.publish_ahead,
        )
        .map_err(|e| bad(format!("schedule: {e}")))?;
        let layers = LayerCount::new(raw.layers).ok_or_else(|| bad(format!("layers {}", raw.layers)))?;
        let sphinx_scheme = nox_topology::parse_scheme(&raw.sphinx_scheme).map_err(|e| bad(e.to_string()))?;
        let packet_len = nox_topology::PacketLen::new(raw.packet_len).map_err(|e| bad(e.to_string()))?;
        Ok(Self { schedule, layers, sphinx_scheme, packet_len: packet_len.bytes() })
    }
}

/// Several directory mirrors serving documents signed by the same authority
/// (docs/spec/directory.md §5): a fetch tries them in turn, starting with the one that answered
/// last, and falls over to the next on any failure — unreachable, an error status, or a
/// document the caller's check refuses (bad signature, stale). Cheap to clone; clones share the
/// "answered last" position.
#[derive(Clone, Debug)]
pub struct Mirrors {
    addrs: Arc<[SocketAddr]>,
    preferred: Arc<AtomicUsize>,
}

impl Mirrors {
    /// Parses each `http://IP:PORT`; duplicates are kept once. No URL at all is
    /// [`ClientError::NoMirror`].
    pub fn parse<S: AsRef<str>>(urls: impl IntoIterator<Item = S>) -> Result<Self, ClientError> {
        let mut addrs = Vec::new();
        for url in urls {
            let addr = parse_url(url.as_ref())?;
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        Self::new(addrs)
    }

    /// Mirrors at these addresses (none: [`ClientError::NoMirror`]).
    pub fn new(addrs: Vec<SocketAddr>) -> Result<Self, ClientError> {
        if addrs.is_empty() {
            return Err(ClientError::NoMirror);
        }
        Ok(Self { addrs: addrs.into(), preferred: Arc::new(AtomicUsize::new(0)) })
    }

    /// Every mirror's address, in the configured order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The order of the next attempt: the mirror that answered last, then the others.
    fn order(&self) -> impl Iterator<Item = (usize, SocketAddr)> + '_ {
        let first = self.preferred.load(Ordering::Relaxed) % self.addrs.len();
        (0..self.addrs.len()).map(move |i| {
            let index = (first + i) % self.addrs.len();
            (index, self.addrs[index])
        })
    }

    /// `GET /topology` from the first mirror whose document `check` accepts (each mirror
    /// within `timeout`). `check` is where the caller verifies the document.
    pub async fn fetch<T, E: std::fmt::Display>(
        &self,
        timeout: Duration,
        check: impl Fn(TopologyDocument) -> Result<T, E>,
    ) -> Result<T, ClientError> {
        let mut failures = Vec::new();
        for (index, addr) in self.order() {
            let outcome = match fetch_document(addr, timeout).await {
                Ok(document) => check(document).map_err(|e| format!("{addr}: {e}")),
                Err(error @ ClientError::Io { .. }) => Err(error.to_string()),
                Err(error) => Err(format!("directory {addr}: {error}")),
            };
            match outcome {
                Ok(value) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(value);
                }
                Err(error) => failures.push(error),
            }
        }
        Err(ClientError::AllMirrors(failures.join("; ")))
    }
}

/// The start of the 503 body of a directory that has no document yet (an empty start).
pub const NO_DOCUMENT_YET: &str = "no topology document yet";

impl Mirrors {
    /// Whether some mirror answers `GET /topology` with 503 [`NO_DOCUMENT_YET`]: the network's
    /// directory started empty and waits for its nodes (a node should then announce itself
    /// rather than stop).
    pub async fn first_document_pending(&self, timeout: Duration) -> bool {
        for &addr in self.addrs.iter() {
            if let Err(ClientError::Status { status: 503, message }) = fetch_document(addr, timeout).await
                && message.starts_with(NO_DOCUMENT_YET)
            {
                return true;
            }
        }
        false
    }

    /// `GET /parameters` from the first mirror that serves them (each within `timeout`): what a
    /// node started before the network's first document builds its descriptor from (see
    /// [`NetworkParameters`]). Mirrors that disagree are not compared: the signed document the
    /// node then runs on must name the same schedule and layers.
    pub async fn parameters(&self, timeout: Duration) -> Result<NetworkParameters, ClientError> {
        let mut failures = Vec::new();
        for (index, addr) in self.order() {
            match fetch_parameters(addr, timeout).await {
                Ok(parameters) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(parameters);
                }
                Err(error @ ClientError::Io { .. }) => failures.push(error.to_string()),
                Err(error) => failures.push(format!("directory {addr}: {error}")),
            }
        }
        Err(ClientError::AllMirrors(failures.join("; ")))
    }
}

/// Parses `http://IP:PORT` (IPv6 in brackets; no host names, no path other than `/`).
pub fn parse_url(url: &str) -> Result<SocketAddr, ClientError> {
    let rest = url.trim().strip_prefix("http://").ok_or_else(|| ClientError::Url(url.into()))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    rest.parse().map_err(|_| ClientError::Url(url.into()))
}

fn request(method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{method} {path} HTTP/1.1\r\nhost: nox-directory\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn ok_body(bytes: &[u8]) -> Result<&[u8], ClientError> {
    match parse_response(bytes)? {
        (200, body) => Ok(body),
        (status, body) => {
            Err(ClientError::Status { status, message: String::from_utf8_lossy(body).trim().to_string() })
        }
    }
}

/// One request, the whole response (to EOF, at most `MAX_RESPONSE_BYTES`), within `timeout`.
async fn exchange(addr: SocketAddr, raw: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, ClientError> {
    exchange_from(addr, None, raw, timeout).await
}

/// [`exchange`] from the local address `source` (any port), if given.
async fn exchange_from(
    addr: SocketAddr,
    source: Option<IpAddr>,
    raw: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, ClientError> {
    let io = |e: std::io::Error| ClientError::Io { addr, message: e.to_string() };
    let work = async {
        let mut stream = match source {
            None => tokio::net::TcpStream::connect(addr).await.map_err(io)?,
            Some(source) => {
                let socket = match source {
                    IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
                    IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
                }
                .map_err(io)?;
                socket.bind(SocketAddr::new(source, 0)).map_err(io)?;
                socket.connect(addr).await.map_err(io)?
            }
        };
        stream.write_all(&raw).await.map_err(io)?;
        let mut out = Vec::new();
        let limit = u64::try_from(MAX_RESPONSE_BYTES + 1).unwrap_or(u64::MAX);
        (&mut stream).take(limit).read_to_end(&mut out).await.map_err(io)?;
        if out.len() > MAX_RESPONSE_BYTES {
            return Err(ClientError::Io { addr, message: "response too large".into() });
        }
        Ok(out)
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| ClientError::Io { addr, message: "timed out".into() })?
}

/// `GET /topology` (async).
pub async fn fetch_document(addr: SocketAddr, timeout: Duration) -> Result<TopologyDocument, ClientError> {
    let response = exchange(addr, request("GET", "/topology", b""), timeout).await?;
    Ok(TopologyDocument::from_json(ok_body(&response)?)?)
}

/// `GET /topology` (async) from the local address `source`: a process among several on one
/// host (a testnet's, all on loopback) connects from its own address, so that the directory's
/// per-address and per-subnet caps count it apart from the others. Binding `source` fails
/// (an `Io` error) where the address is not local.
pub async fn fetch_document_from(
    addr: SocketAddr,
    source: IpAddr,
    timeout: Duration,
) -> Result<TopologyDocument, ClientError> {
    let response = exchange_from(addr, Some(source), request("GET", "/topology", b""), timeout).await?;
    Ok(TopologyDocument::from_json(ok_body(&response)?)?)
}

/// `POST /descriptor` (async). Returns the directory's confirmation text.
pub async fn upload_descriptor(
    addr: SocketAddr,
    descriptor: &SignedDescriptor,
    timeout: Duration,
) -> Result<String, ClientError> {
    let body = descriptor.to_json()?;
    let response = exchange(addr, request("POST", "/descriptor", body.as_bytes()), timeout).await?;
    Ok(String::from_utf8_lossy(ok_body(&response)?).trim().to_string())
}

/// `GET /parameters` (async): the network's schedule, layers and geometry, served with or
/// without a document (see [`NetworkParameters`] on trusting them).
pub async fn fetch_parameters(addr: SocketAddr, timeout: Duration) -> Result<NetworkParameters, ClientError> {
    let response = exchange(addr, request("GET", "/parameters", b""), timeout).await?;
    NetworkParameters::parse(ok_body(&response)?)
}

/// `GET path` (blocking): the status code and body, whatever the status.
pub fn get_blocking(addr: SocketAddr, path: &str, timeout: Duration) -> Result<(u16, Vec<u8>), ClientError> {
    let io = |e: std::io::Error| ClientError::Io { addr, message: e.to_string() };
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(io)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    stream.write_all(&request("GET", path, b"")).map_err(io)?;
    let mut out = Vec::new();
    let limit = u64::try_from(MAX_RESPONSE_BYTES + 1).unwrap_or(u64::MAX);
    stream.take(limit).read_to_end(&mut out).map_err(io)?;
    let (status, body) = parse_response(&out)?;
    Ok((status, body.to_vec()))
}

/// `GET /topology` (blocking, for tools and tests outside an async context).
pub fn fetch_document_blocking(addr: SocketAddr, timeout: Duration) -> Result<TopologyDocument, ClientError> {
    match get_blocking(addr, "/topology", timeout)? {
        (200, body) => Ok(TopologyDocument::from_json(&body)?),
        (status, body) => {
            Err(ClientError::Status { status, message: String::from_utf8_lossy(&body).trim().to_string() })
        }
    }
}
