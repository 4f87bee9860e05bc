//! The HTTP service around the [`Registry`]: `GET /topology`, `POST /descriptor`,
//! `GET /parameters`, `GET /metrics` (docs/spec/directory.md §2). One request per connection, bounded in size,
//! time and concurrency; every outcome is counted.
//!
//! One host or one network cannot take the service: connections are capped per address (IPv4
//! address or IPv6 /64) and per subnet (IPv4 /24 or IPv6 /48, nox-admission's keys, as the
//! nodes use) as well as in total, a connection that sends nothing within the first-byte timeout
//! is closed, and the whole request must arrive within the request timeout.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_admission::{ConnectionLimits, ConnectionRefused, ConnectionTracker};
use nox_topology::SignedDescriptor;
use tokio::{
    io::AsyncWriteExt,
    net::{TcpListener, TcpStream},
    sync::watch,
};

use crate::http::{MAX_BODY_BYTES, read_request, response_with};
use crate::registry::{Accepted, Refusal, Registry};

/// Counters by outcome, rendered at `GET /metrics`.
#[derive(Debug, Default)]
pub struct Counters(Mutex<BTreeMap<String, u64>>);

impl Counters {
    /// Adds one to `outcome`.
    pub fn count(&self, outcome: &str) {
        if let Ok(mut map) = self.0.lock() {
            *map.entry(outcome.to_string()).or_default() += 1;
        }
    }

    /// The count of `outcome`.
    pub fn get(&self, outcome: &str) -> u64 {
        self.0.lock().ok().and_then(|m| m.get(outcome).copied()).unwrap_or(0)
    }

    /// Prometheus text.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP nox_directory_requests_total Directory requests by outcome.\n# TYPE nox_directory_requests_total counter\n",
        );
        if let Ok(map) = self.0.lock() {
            for (outcome, n) in map.iter() {
                out.push_str(&format!("nox_directory_requests_total{{outcome=\"{outcome}\"}} {n}\n"));
            }
        }
        out
    }
}

/// Limits of the service.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Time allowed to send one whole request, from accept.
    pub request_timeout: Duration,
    /// Time allowed before the first byte of the request arrives (idle connections are closed
    /// after it, answered 408).
    pub first_byte_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections served at once from one address (IPv4 address or IPv6 /64); more are
    /// closed unanswered (counted as `busy_address`).
    pub max_connections_per_address: usize,
    /// Connections served at once from one subnet (IPv4 /24 or IPv6 /48, as the nodes'
    /// admission); more are closed unanswered (counted as `busy_subnet`).
    pub max_connections_per_subnet: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(2),
            first_byte_timeout: Duration::from_millis(500),
            max_connections: 64,
            max_connections_per_address: 4,
            max_connections_per_subnet: 16,
        }
    }
}

/// Open connections per address and per subnet, and in total: nox-admission's tracker, the
/// same keys as the nodes' link admission ([`nox_admission::PeerKey`]: an IPv4 address or an
/// IPv6 /64; [`nox_admission::SubnetKey`]: an IPv4 /24 or an IPv6 /48).
#[derive(Debug)]
struct Open(Mutex<ConnectionTracker>);

/// One connection's place in [`Open`], given back on drop.
struct Slot {
    table: Arc<Open>,
    ip: IpAddr,
}

impl Open {
    fn new(limits: Limits) -> Self {
        let cap = |n: usize| u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        Self(Mutex::new(ConnectionTracker::new(ConnectionLimits {
            max_per_peer: cap(limits.max_connections_per_address),
            max_per_subnet: cap(limits.max_connections_per_subnet),
            max_total: cap(limits.max_connections),
        })))
    }

    fn try_open(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, ConnectionRefused> {
        let mut tracker = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tracker.try_open(ip)?;
        Ok(Slot { table: self.clone(), ip })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut tracker = self.table.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tracker.close(self.ip);
    }
}

/// A bound directory service.
pub struct DirectoryServer {
    listener: TcpListener,
    registry: Arc<Mutex<Registry>>,
    counters: Arc<Counters>,
    limits: Limits,
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl DirectoryServer {
    /// Binds `addr` (port 0: any free port).
    pub async fn bind(addr: SocketAddr, registry: Registry, limits: Limits) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self { listener, registry: Arc::new(Mutex::new(registry)), counters: Arc::new(Counters::default()), limits })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The registry it serves (to change the admitted set while serving).
    pub fn registry(&self) -> Arc<Mutex<Registry>> {
        self.registry.clone()
    }

    /// The outcome counters.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Serves until `shutdown` turns true.
    pub async fn serve(self, mut shutdown: watch::Receiver<bool>) -> std::io::Result<()> {
        let open = Arc::new(Open::new(self.limits));
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // The address and subnet caps keep one host's or one network's connections from
            // using up the total (a refusal counts the cap that was reached first: the total,
            // then the address, then the subnet).
            let slot = match open.try_open(peer.ip()) {
                Ok(slot) => slot,
                Err(refused) => {
                    self.counters.count(match refused {
                        ConnectionRefused::PeerLimit => "busy_address",
                        ConnectionRefused::SubnetLimit => "busy_subnet",
                        ConnectionRefused::TotalLimit | ConnectionRefused::Banned => "busy",
                    });
                    continue;
                }
            };
            let (registry, counters, limits) = (self.registry.clone(), self.counters.clone(), self.limits);
            tokio::spawn(async move {
                handle(stream, &registry, &counters, limits).await;
                drop(slot);
            });
        }
    }
}

/// Reads one request: its first byte within `first_byte_timeout`, all of it within
/// `request_timeout` (both from accept). `Err(outcome)`: which timeout.
async fn read_bounded(
    stream: &mut TcpStream,
    limits: Limits,
) -> Result<Result<(crate::http::RequestHead, Vec<u8>), crate::http::HttpError>, &'static str> {
    let deadline = tokio::time::Instant::now() + limits.request_timeout;
    let first_byte = limits.first_byte_timeout.min(limits.request_timeout);
    let mut probe = [0u8; 1];
    // `peek` returns when a byte (or the end of the stream) is there, without consuming it; an
    // error shows again at the read below.
    let _ = tokio::time::timeout(first_byte, stream.peek(&mut probe)).await.map_err(|_| "idle")?;
    tokio::time::timeout_at(deadline, read_request(stream, MAX_BODY_BYTES)).await.map_err(|_| "timeout")
}

async fn handle(mut stream: TcpStream, registry: &Mutex<Registry>, counters: &Counters, limits: Limits) {
    let read = read_bounded(&mut stream, limits).await;
    let mut public = false;
    let (status, content_type, body) = match read {
        Err(outcome) => {
            counters.count(outcome);
            (408, "text/plain", b"request not received in time\n".to_vec())
        }
        Ok(Err(error)) => {
            counters.count("bad_http");
            (error.status(), "text/plain", format!("{error}\n").into_bytes())
        }
        Ok(Ok((head, body))) => {
            public = head.method == "GET" && head.path == "/topology";
            route(&head.method, &head.path, &body, registry, counters)
        }
    };
    // The document is public and signed: any web page may read it (a browser client fetches it
    // cross-origin). A simple GET needs no preflight, and nothing else is opened to pages.
    let headers: &[(&str, &str)] = if public { &[("access-control-allow-origin", "*")] } else { &[] };
    let response = response_with(status, content_type, headers, &body);
    let _ = tokio::time::timeout(limits.request_timeout, stream.write_all(&response)).await;
    let _ = stream.shutdown().await;
}

fn route(
    method: &str,
    path: &str,
    body: &[u8],
    registry: &Mutex<Registry>,
    counters: &Counters,
) -> (u16, &'static str, Vec<u8>) {
    let text = |status, outcome: &str, message: String| {
        counters.count(outcome);
        (status, "text/plain", (message + "\n").into_bytes())
    };
    let Ok(mut registry) = registry.lock() else {
        return text(503, "unavailable", "registry unavailable".into());
    };
    match (method, path) {
        ("GET", "/topology") => {
            if let Err(error) = registry.refresh(now_unix()) {
                tracing::warn!(%error, "re-issue failed; serving the previous document");
                counters.count("reissue_failed");
            }
            match registry.current().map(|c| c.document().to_json()) {
                Some(Ok(json)) => {
                    counters.count("topology");
                    (200, "application/json", json.into_bytes())
                }
                Some(Err(error)) => text(503, "unavailable", error.to_string()),
                None => {
                    let why = registry.waiting(now_unix()).unwrap_or_else(|| crate::NO_DOCUMENT_YET.into());
                    text(503, "waiting", why)
                }
            }
        }
        ("GET", "/parameters") => {
            counters.count("parameters");
            let parameters = crate::NetworkParameters {
                schedule: *registry.schedule(),
                layers: registry.layers(),
                sphinx_scheme: registry.geometry().scheme(),
                packet_len: registry.geometry().packet_len(),
            };
            (200, "text/plain", parameters.render().into_bytes())
        }
        ("POST", "/descriptor") => {
            let descriptor = match SignedDescriptor::from_json(body) {
                Ok(d) => d,
                Err(error) => return text(400, "refused_malformed", format!("descriptor: {error}")),
            };
            match registry.submit(descriptor, now_unix()) {
                Ok(Accepted::Unchanged) => text(200, "unchanged", "unchanged".into()),
                Ok(Accepted::Updated { issued_at }) => {
                    text(200, "accepted", format!("accepted; document issued at {issued_at}"))
                }
                Ok(Accepted::Waiting { empty_layers }) => text(
                    200,
                    "accepted_waiting",
                    format!(
                        "accepted; no document yet: {empty_layers} of {} layers have no node",
                        registry.layers().get()
                    ),
                ),
                Err(refusal) => {
                    let status = match refusal {
                        Refusal::UnknownIdentity(_) | Refusal::BadSignature => 403,
                        _ => 422,
                    };
                    tracing::info!(%refusal, "descriptor refused");
                    text(status, &format!("refused_{}", refusal.kind()), format!("refused: {refusal}"))
                }
            }
        }
        ("GET", "/metrics") => {
            drop(registry);
            counters.count("metrics");
            (200, "text/plain; version=0.0.4", counters.render().into_bytes())
        }
        (_, "/topology" | "/descriptor" | "/metrics" | "/parameters") => {
            text(405, "bad_method", format!("{method} not allowed here"))
        }
        _ => text(404, "not_found", format!("no such endpoint: {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    /// IPv6 cannot be flooded from loopback (only ::1 exists there), so the caps are shown on
    /// the table: one /64 is one address, one /48 (65,536 /64s) one subnet.
    #[test]
    fn ipv6_is_capped_per_slash_64_and_per_slash_48() {
        let limits = Limits {
            max_connections: 64,
            max_connections_per_address: 4,
            max_connections_per_subnet: 16,
            ..Limits::default()
        };
        let open = Arc::new(Open::new(limits));
        let mut held = Vec::new();
        for i in 0..4 {
            held.push(open.try_open(ip(&format!("2001:db8:1:2::{i}"))).unwrap());
        }
        assert_eq!(open.try_open(ip("2001:db8:1:2::ff")).err(), Some(ConnectionRefused::PeerLimit), "one /64");
        for subnet in 3..6 {
            for i in 0..4 {
                held.push(open.try_open(ip(&format!("2001:db8:1:{subnet}::{i}"))).unwrap());
            }
        }
        assert_eq!(open.try_open(ip("2001:db8:1:ffff::1")).err(), Some(ConnectionRefused::SubnetLimit), "one /48");
        assert!(open.try_open(ip("2001:db8:2::1")).is_ok(), "another /48 still gets in");
        held.truncate(15);
        assert!(open.try_open(ip("2001:db8:1:ffff::1")).is_ok(), "a closed connection frees its place");
    }
}
