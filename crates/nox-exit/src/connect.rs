//! TCP connections for streams (SOCKS5 `CONNECT`): validate the host, resolve it once, check
//! every address and the port, hand only checked addresses to the dialer.
//!
//! The destination policy is HTTP's: the same [`AddressPolicy`](crate::AddressPolicy) (table
//! plus `http.allow`), the same all-or-nothing rule for a name's answer, the same refusal text
//! for names. Only the port rule differs (`streams.ports`, see [`crate::StreamsConfig`]).

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

use crate::error::{ErrorKind, ExitError};
use crate::http::MAX_ADDRESSES;
use crate::target::clip;
use crate::{ExitServices, Inner};

/// Longest host name, without a final dot (RFC 1035 §2.3.4 in presentation form).
const MAX_NAME_LEN: usize = 253;
/// Longest label of a host name.
const MAX_LABEL_LEN: usize = 63;

/// Why a stream could not be opened. Each variant is one SOCKS5 reply class
/// ([`ConnectError::socks_code`], RFC 1928 §6). Messages are meant for the client: they name
/// only the host and port it asked for (and the class of an IP literal it wrote), never an
/// address the exit resolved, and a refused name gets one text whether or not it resolves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The host is neither an IP literal nor a host name, or the port is 0.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// Refused by policy: a non-global address, a name that does not lead to an address the
    /// exit may connect to (including one that does not resolve at all), or a port.
    #[error("{0}")]
    Forbidden(String),
    /// The exit has no route to the destination's network (`ENETUNREACH`, `ENETDOWN`).
    #[error("network unreachable for {0}")]
    NetworkUnreachable(String),
    /// The destination host cannot be reached (`EHOSTUNREACH` and other connection failures).
    #[error("host {0} unreachable")]
    HostUnreachable(String),
    /// The destination refused the connection (`ECONNREFUSED`).
    #[error("connection refused by {0}")]
    Refused(String),
    /// No connection within this many milliseconds (`connect_timeout`, or the system's own
    /// connection timeout).
    #[error("no connection within {0} ms")]
    Timeout(u128),
    /// `max_streams` streams are open.
    #[error("exit busy: {0} streams open")]
    Busy(usize),
    /// This exit does not relay streams.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl ConnectError {
    /// The SOCKS5 reply code (RFC 1928 §6). A malformed host is `0x01` (general failure), not
    /// `0x08`: its address type is supported, its text is wrong.
    pub fn socks_code(&self) -> u8 {
        match self {
            Self::BadRequest(_) | Self::Busy(_) | Self::Unsupported(_) => 0x01,
            Self::Forbidden(_) => 0x02,
            Self::NetworkUnreachable(_) => 0x03,
            Self::HostUnreachable(_) => 0x04,
            Self::Refused(_) => 0x05,
            Self::Timeout(_) => 0x06,
        }
    }

    /// The exit's status class, as for the other services.
    pub fn kind(&self) -> ErrorKind {
        ExitError::from(self.clone()).kind()
    }
}

impl From<ConnectError> for ExitError {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::BadRequest(m) => Self::BadRequest(m),
            ConnectError::Forbidden(m) => Self::Forbidden(m),
            ConnectError::Timeout(ms) => Self::Timeout(ms),
            ConnectError::Busy(n) => Self::Busy(n),
            ConnectError::Unsupported(m) => Self::Unsupported(m),
            unreachable @ (ConnectError::NetworkUnreachable(_)
            | ConnectError::HostUnreachable(_)
            | ConnectError::Refused(_)) => Self::Upstream(unreachable.to_string()),
        }
    }
}

/// One of the exit's `max_streams` slots, held for the life of a stream and freed on drop.
#[derive(Debug)]
pub struct StreamPermit {
    _permit: OwnedSemaphorePermit,
}

/// An open connection to a checked destination.
#[derive(Debug)]
pub struct Connected {
    /// The connection, `TCP_NODELAY` set.
    pub stream: TcpStream,
    /// The checked address it was made to. For the exit's logs only: like error messages,
    /// replies should not tell the client what a name resolved to, nor the exit's own
    /// address (a SOCKS5 reply's `BND.ADDR` can be `0.0.0.0:0`).
    pub peer: SocketAddr,
    /// The stream's slot; drop it when the stream ends.
    pub permit: StreamPermit,
}

/// A validated destination host.
enum Host {
    Ip(IpAddr),
    /// Lower-cased, as written otherwise (a final dot is kept).
    Name(String),
}

impl Host {
    /// `host:port` as the client asked for it, for messages.
    fn with_port(&self, port: u16) -> String {
        match self {
            Self::Ip(ip) => SocketAddr::new(*ip, port).to_string(),
            Self::Name(name) => format!("{name}:{port}"),
        }
    }
}

fn bad_host(host: &str) -> ConnectError {
    ConnectError::BadRequest(format!(
        "malformed destination host {:?}: expected an IP address or a host name",
        clip(host, 64)
    ))
}

/// Letters, digits and inner hyphens, 1 to 63 bytes (RFC 1123 §2.1).
fn is_ldh_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    (1..=MAX_LABEL_LEN).contains(&bytes.len())
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

/// An IPv4 or IPv6 literal (IPv6 bare or in brackets) or a host name of LDH labels.
fn parse_host(host: &str) -> Result<Host, ConnectError> {
    if let Some(inner) = host.strip_prefix('[') {
        let v6 = inner.strip_suffix(']').and_then(|h| h.parse::<Ipv6Addr>().ok()).ok_or_else(|| bad_host(host))?;
        return Ok(Host::Ip(IpAddr::V6(v6)));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() || name.len() > MAX_NAME_LEN || !name.split('.').all(is_ldh_label) {
        return Err(bad_host(host));
    }
    Ok(Host::Name(host.to_ascii_lowercase()))
}

fn port_forbidden(port: u16) -> ConnectError {
    ConnectError::Forbidden(format!("destination port {port} is not allowed for streams"))
}

impl Inner {
    /// In `streams.ports`, or admitted by an allow entry naming this exact port.
    fn stream_port_allowed(&self, addr: SocketAddr) -> bool {
        self.config.streams.ports.contains(&addr.port()) || self.policy.admits_with_port(addr)
    }

    /// The client's own IP literal: a refusal names it and its class.
    fn check_literal(&self, addr: SocketAddr) -> Result<(), ConnectError> {
        self.policy.check(addr).map_err(|ng| {
            ConnectError::Forbidden(format!("destination {} is not a global address ({ng})", addr.ip()))
        })?;
        if !self.stream_port_allowed(addr) {
            return Err(port_forbidden(addr.port()));
        }
        Ok(())
    }

    /// Resolve `name` once and check every address, as HTTP does: one refused address refuses
    /// the whole answer, with the text of [`ExitError::Refused`] whether the name did not
    /// resolve, resolved to nothing or resolved to a refused address.
    async fn resolve_stream(&self, name: &str, port: u16) -> Result<Vec<SocketAddr>, ConnectError> {
        let refused = || ConnectError::Forbidden(ExitError::Refused { host: name.to_owned() }.to_string());
        let answer = self.resolver.resolve(name, port).await.map_err(|_| refused())?;
        // The resolver's port is ignored: the port checked is the port dialed.
        let addrs: Vec<SocketAddr> =
            answer.into_iter().take(MAX_ADDRESSES).map(|a| SocketAddr::new(a.ip(), port)).collect();
        if addrs.is_empty() || addrs.iter().any(|a| self.policy.check(*a).is_err()) {
            return Err(refused());
        }
        if !addrs.iter().all(|a| self.stream_port_allowed(*a)) {
            return Err(port_forbidden(port));
        }
        Ok(addrs)
    }

    /// Resolve if needed, then dial the checked addresses in order; the first that accepts wins.
    async fn open(&self, host: &Host, port: u16) -> Result<(TcpStream, SocketAddr), ConnectError> {
        let start = Instant::now();
        let addrs = match host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Host::Name(name) => self.resolve_stream(name, port).await?,
        };
        let mut last = None;
        for addr in addrs {
            let dialed = self.dialer.dial(addr).await.and_then(|s| s.set_nodelay(true).map(|()| s));
            match dialed {
                Ok(stream) => return Ok((stream, addr)),
                Err(e) => last = Some(e.kind()),
            }
        }
        let dest = host.with_port(port);
        Err(match last {
            Some(io::ErrorKind::ConnectionRefused) => ConnectError::Refused(dest),
            Some(io::ErrorKind::NetworkUnreachable | io::ErrorKind::NetworkDown) => {
                ConnectError::NetworkUnreachable(dest)
            }
            Some(io::ErrorKind::TimedOut) => ConnectError::Timeout(start.elapsed().as_millis()),
            _ => ConnectError::HostUnreachable(dest),
        })
    }
}

impl ExitServices {
    /// Open a TCP connection to `host:port` for a stream (SOCKS5 `CONNECT`).
    ///
    /// In order: streams disabled → `Unsupported`; `host` not an IP literal (IPv6 bare or in
    /// brackets) or a host name of LDH labels (≤ 253 bytes), or port 0 → `BadRequest`; an IP
    /// literal refused by the address policy, or a port outside `streams.ports` that no
    /// `http.allow` entry names → `Forbidden`; `max_streams` open → `Busy`. Then, within
    /// `connect_timeout` (else `Timeout`): a name is resolved once and every address checked
    /// (address policy, then port) → `Forbidden`; the checked addresses are dialed in order
    /// (only them: never a name, never a second resolution); when all fail, the last failure
    /// decides (`Refused`, `NetworkUnreachable`, `HostUnreachable`, `Timeout`).
    pub async fn connect(&self, host: &str, port: u16) -> Result<Connected, ConnectError> {
        let inner = &*self.inner;
        let config = &inner.config.streams;
        if !config.enabled {
            return Err(ConnectError::Unsupported("this exit does not relay TCP streams".into()));
        }
        let host = parse_host(host)?;
        if port == 0 {
            return Err(ConnectError::BadRequest("destination port 0".into()));
        }
        match &host {
            Host::Ip(ip) => inner.check_literal(SocketAddr::new(*ip, port))?,
            Host::Name(_) if !config.ports.contains(&port) && !inner.policy.names_port(port) => {
                return Err(port_forbidden(port));
            }
            Host::Name(_) => {}
        }
        let permit = inner.streams.clone().try_acquire_owned().map_err(|_| ConnectError::Busy(config.max_streams))?;
        let limit = config.connect_timeout;
        let (stream, peer) = tokio::time::timeout(limit, inner.open(&host, port))
            .await
            .map_err(|_| ConnectError::Timeout(limit.as_millis()))??;
        Ok(Connected { stream, peer, permit: StreamPermit { _permit: permit } })
    }

    /// Streams open now (their [`StreamPermit`]s not yet dropped).
    pub fn open_streams(&self) -> usize {
        self.inner.config.streams.max_streams.saturating_sub(self.inner.streams.available_permits())
    }
}
