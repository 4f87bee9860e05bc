//! The tokio shell: a [`Listener`] for inbound links and [`OutboundLinks`]
//! for one link per next hop. All protocol work is done by the sans-I/O core;
//! this module only moves bytes, enforces bounds and counts.
//!
//! Shutdown: every task watches a `tokio::sync::watch::Receiver<bool>` and
//! stops when it turns `true` (or its sender is dropped).

mod backoff;
mod counters;
mod link;
mod listener;
mod outbound;
mod tls;
mod ws;

use crate::keys::LinkPublicKey;

pub use backoff::Backoff;
pub use counters::{CounterSnapshot, LinkCounters};
pub use listener::{ClientGreeting, ConnectionGate, GateStage, Listener, ListenerConfig, OpenGate, PeerFilter};
pub use outbound::{DialerConfig, LinkFault, OutboundLinks, PeerDirectory, SendShaper, Transport};
pub use tls::{TlsCertificate, TlsError, client_config, client_config_with_roots};
pub use ws::{WS_CLIENT_FIRST_FLIGHT, WsListenerConfig, ws_max_message};

/// A local, per-connection number for an anonymous client link. It is not
/// derived from anything the client sent and is never reused by a listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

/// Where an inbound packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerIdentity {
    /// A node, authenticated by its static link key.
    Node(LinkPublicKey),
    /// An anonymous client connected to this listener, and the remote IP
    /// address of its connection: the key of its per-address rate limit
    /// (`nox-admission`). Never log it.
    Client(ClientId, std::net::IpAddr),
}

/// One received packet (exactly `packet_len` bytes) and its link.
#[derive(Debug)]
pub struct Inbound {
    /// The authenticated sender (the link, not the packet's origin).
    pub from: PeerIdentity,
    /// When the read that completed the packet returned from the socket: the packet's arrival
    /// at the node, before any queue. A node's mixing delay counts from here.
    pub received_at: std::time::Instant,
    /// The Sphinx packet.
    pub packet: Vec<u8>,
}

/// Why a packet was not queued. The packet is dropped; every variant but
/// `Closed` is also counted in [`LinkCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The peer's send queue is full (slow or unreachable peer).
    #[error("send queue full")]
    QueueFull,
    /// The peer is not in the directory (or the client link is gone).
    #[error("unknown peer")]
    UnknownPeer,
    /// The packet is not exactly one Sphinx packet of the link's geometry.
    #[error("packet has {got} bytes, the link carries exactly {expected}")]
    WrongLength {
        /// Length given.
        got: usize,
        /// The geometry's packet length.
        expected: usize,
    },
    /// Shutting down.
    #[error("link shut down")]
    Closed,
}

/// Waits until shutdown is signalled or its sender is gone.
pub(crate) async fn wait_shutdown(rx: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
