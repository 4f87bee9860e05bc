//! Inbound links: accept, authenticate, read.
//!
//! This module holds the [`Listener`] (its settings, the shared state of its connections, the
//! accept loop both transports share and the per-address admission); [`gate`] the policies a
//! caller plugs in (which peers, which connections) and [`serve`] what happens to one accepted
//! connection.

mod gate;
mod serve;

pub use gate::{ConnectionGate, GateStage, OpenGate, PeerFilter};
use serve::{serve, serve_ws, serve_wss};

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::debug;

use super::counters::{LinkCounters, bump};
use super::ws::WsListenerConfig;
use super::{ClientId, Inbound, SendError, lock, wait_shutdown};
use crate::config::{Accept, LinkConfig};
use crate::keys::LinkKeypair;
use crate::mailbox::Mailbox;

/// Listener settings. [`ListenerConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct ListenerConfig {
    /// Geometry and cipher.
    pub link: LinkConfig,
    /// This node's static link key.
    pub keypair: Arc<LinkKeypair>,
    /// Node keys allowed to connect.
    pub peers: Arc<dyn PeerFilter>,
    /// Whether clients are accepted, and which ciphers.
    pub accept: Accept,
    /// Time allowed from accept to a completed handshake (default 5 s).
    pub handshake_timeout: Duration,
    /// Time allowed for one batched write to a client (default 10 s).
    pub write_timeout: Duration,
    /// Concurrent connections, handshaking or established (default 4096).
    pub max_connections: usize,
    /// Per-client send queue, in packets (default 64).
    pub client_queue: usize,
    /// Which addresses may connect (default: all).
    pub gate: Arc<dyn ConnectionGate>,
    /// Client links only: a downstream record queued first on each new
    /// client link, right after its handshake (an entry node's current
    /// proof-of-work difficulty, `mailbox::encode_difficulty`). `None`, or a
    /// call returning `None`, sends nothing. A record of the wrong length is
    /// dropped and counted (`dropped_bad_length`).
    pub client_greeting: Option<ClientGreeting>,
}

/// Builds the record greeting a new client link (see
/// [`ListenerConfig::client_greeting`]).
pub type ClientGreeting = Arc<dyn Fn() -> Option<Vec<u8>> + Send + Sync>;

impl ListenerConfig {
    /// Defaults: nodes only, both ciphers, 5 s handshake timeout.
    pub fn new(link: LinkConfig, keypair: Arc<LinkKeypair>, peers: Arc<dyn PeerFilter>) -> Self {
        Self {
            link,
            keypair,
            peers,
            accept: Accept::default(),
            handshake_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_connections: 4096,
            client_queue: 64,
            gate: Arc::new(OpenGate),
            client_greeting: None,
        }
    }
}

type ClientTable = Mutex<HashMap<ClientId, mpsc::Sender<Vec<u8>>>>;
/// Registered reply mailboxes; the newest link naming a mailbox wins (a
/// reconnecting client), and a closing link removes only its own entry.
type MailboxTable = Mutex<HashMap<Mailbox, ClientId>>;

struct Shared {
    config: ListenerConfig,
    /// One connection limit for both transports.
    limit: Arc<Semaphore>,
    inbound: mpsc::Sender<Inbound>,
    counters: Arc<LinkCounters>,
    clients: Arc<ClientTable>,
    mailboxes: Arc<MailboxTable>,
    next_client: AtomicU64,
}

/// Accepts links and delivers their packets to one bounded channel. When the
/// channel is full, packets are dropped and counted (`dropped_inbound_full`):
/// a reader never waits for the consumer.
pub struct Listener {
    local_addr: SocketAddr,
    clients: Arc<ClientTable>,
    mailboxes: Arc<MailboxTable>,
    counters: Arc<LinkCounters>,
    packet_len: usize,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Listener {
    /// Binds `addr` and starts accepting in a spawned task (call from a Tokio
    /// runtime). Packets go to `inbound`; the listener stops when `shutdown`
    /// turns `true`.
    pub async fn bind(
        addr: SocketAddr,
        config: ListenerConfig,
        inbound: mpsc::Sender<Inbound>,
        counters: Arc<LinkCounters>,
        shutdown: watch::Receiver<bool>,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let clients = Arc::new(ClientTable::default());
        let mailboxes = Arc::new(MailboxTable::default());
        let packet_len = config.link.packet_len();
        let limit = Arc::new(Semaphore::new(config.max_connections));
        let shared = Arc::new(Shared {
            config,
            limit,
            inbound,
            counters: counters.clone(),
            clients: clients.clone(),
            mailboxes: mailboxes.clone(),
            next_client: AtomicU64::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone(), shutdown.clone(), serve_tcp));
        Ok(Self { local_addr, clients, mailboxes, counters, packet_len, shared, shutdown, tasks: vec![task] })
    }

    /// Also accepts client links over WebSocket on `addr` (docs/spec/link.md
    /// §5): the same handshake, records, connection limit, gate, timeouts and
    /// client tables as the TCP listener; returns the bound address. Only
    /// anonymous clients: a node's handshake over WebSocket is refused.
    /// `InvalidInput` if this listener does not accept clients.
    pub async fn bind_websocket(&mut self, addr: SocketAddr, ws: WsListenerConfig) -> io::Result<SocketAddr> {
        if !self.shared.config.accept.clients {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "WebSocket links carry clients only"));
        }
        self.bind_ws(addr, ws, None).await
    }

    /// [`Self::bind_websocket`] behind TLS (`wss://`, docs/spec/link.md §5.3): each connection
    /// completes a TLS handshake under `tls` (e.g. [`super::TlsCertificate::server_config`],
    /// whose certificate can be swapped while the listener runs) before its HTTP upgrade,
    /// within the same upgrade timeout. A failed or slow TLS handshake (a plain-HTTP client, a
    /// scanner, a client that does not trust the certificate) closes the connection at once,
    /// is counted (`ws_tls_failures`) and is an offence, like a failed upgrade.
    pub async fn bind_websocket_tls(
        &mut self,
        addr: SocketAddr,
        ws: WsListenerConfig,
        tls: Arc<rustls::ServerConfig>,
    ) -> io::Result<SocketAddr> {
        if !self.shared.config.accept.clients {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "WebSocket links carry clients only"));
        }
        self.bind_ws(addr, ws, Some(tokio_rustls::TlsAcceptor::from(tls))).await
    }

    async fn bind_ws(
        &mut self,
        addr: SocketAddr,
        ws: WsListenerConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let serve_one = move |stream, peer, shared, shutdown, permit| {
            serve_websocket(stream, peer, ws, tls.clone(), shared, shutdown, permit)
        };
        let task = tokio::spawn(accept_loop(listener, self.shared.clone(), self.shutdown.clone(), serve_one));
        self.tasks.push(task);
        Ok(local)
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Queues a packet to a connected client without waiting.
    pub fn send_to_client(&self, client: ClientId, packet: Vec<u8>) -> Result<(), SendError> {
        if packet.len() != self.packet_len {
            bump(&self.counters.dropped_bad_length);
            return Err(SendError::WrongLength { got: packet.len(), expected: self.packet_len });
        }
        let clients = lock(&self.clients);
        let tx = clients.get(&client).ok_or(SendError::UnknownPeer)?;
        match tx.try_send(packet) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                bump(&self.counters.dropped_outbound_full);
                Err(SendError::QueueFull)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(SendError::UnknownPeer),
        }
    }

    /// Queues a record for the client link that registered `mailbox`
    /// (`UnknownPeer` if no connected client named it).
    pub fn send_to_mailbox(&self, mailbox: &Mailbox, record: Vec<u8>) -> Result<(), SendError> {
        let client = lock(&self.mailboxes).get(mailbox).copied().ok_or(SendError::UnknownPeer)?;
        self.send_to_client(client, record)
    }

    /// Queues `record` for every connected client, without waiting; returns
    /// how many queues took it (full queues are skipped and counted).
    pub fn broadcast_to_clients(&self, record: &[u8]) -> usize {
        let ids: Vec<ClientId> = lock(&self.clients).keys().copied().collect();
        ids.into_iter().filter(|id| self.send_to_client(*id, record.to_vec()).is_ok()).count()
    }

    /// Waits until the accept loop and every connection task have ended
    /// (after shutdown was signalled).
    pub async fn join(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Admission on accept, shared by both transports: the connection limit,
/// then the gate, before any handshake or upgrade work.
fn admit(shared: &Shared, peer: IpAddr) -> Option<OwnedSemaphorePermit> {
    let Ok(permit) = shared.limit.clone().try_acquire_owned() else {
        bump(&shared.counters.rejected_connection_limit);
        return None;
    };
    if !shared.config.gate.admit(peer) {
        bump(&shared.counters.rejected_by_gate);
        return None;
    }
    Some(permit)
}

/// The next connection, admitted ([`admit`]) and with `TCP_NODELAY`; `None` when it was refused
/// or the accept failed (e.g. out of file descriptors: after a 50 ms back-off instead of
/// spinning). Cancel-safe: dropping it loses no accepted connection.
async fn accept_admitted(listener: &TcpListener, shared: &Shared) -> Option<(TcpStream, IpAddr, OwnedSemaphorePermit)> {
    let (stream, peer) = match listener.accept().await {
        Ok((stream, addr)) => (stream, addr.ip()),
        Err(e) => {
            debug!(error = %e, "accept failed");
            tokio::time::sleep(Duration::from_millis(50)).await;
            return None;
        }
    };
    let permit = admit(shared, peer)?;
    let _ = stream.set_nodelay(true);
    Some((stream, peer, permit))
}

/// The one accept loop of every transport: accepts and admits ([`accept_admitted`]), spawns
/// `serve_one` for each admitted connection (it owns the connection's permit) and tells the gate
/// the stage it returns when the connection ends. On shutdown it stops accepting, closes the
/// listening socket and waits for every connection task.
async fn accept_loop<F, Fut>(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    serve_one: F,
) where
    F: Fn(TcpStream, IpAddr, Arc<Shared>, watch::Receiver<bool>, OwnedSemaphorePermit) -> Fut,
    Fut: Future<Output = GateStage> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            () = wait_shutdown(&mut shutdown) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = accept_admitted(&listener, &shared) => {
                let Some((stream, peer, permit)) = accepted else { continue };
                let served = serve_one(stream, peer, shared.clone(), shutdown.clone(), permit);
                let shared = shared.clone();
                tasks.spawn(async move {
                    let stage = served.await;
                    shared.config.gate.closed(peer, stage);
                });
            }
        }
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// A TCP connection: the link handshake within `handshake_timeout` of its accept, then the
/// link.
async fn serve_tcp(
    stream: TcpStream,
    peer: IpAddr,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    let deadline = tokio::time::Instant::now() + shared.config.handshake_timeout;
    serve(stream, peer, deadline, false, shared, shutdown, permit).await.stage
}

/// A WebSocket connection, behind TLS when `tls` is set.
async fn serve_websocket(
    stream: TcpStream,
    peer: IpAddr,
    ws: WsListenerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    match tls {
        None => serve_ws(stream, tokio::time::Instant::now(), peer, ws, shared, shutdown, permit).await,
        Some(tls) => serve_wss(stream, tls, peer, ws, shared, shutdown, permit).await,
    }
}

#[cfg(test)]
mod tests;
