//! Inbound links: accept, authenticate, read.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::debug;

use super::counters::{LinkCounters, bump};
use super::link::{LinkCtx, LinkStream, run_link};
use super::ws::{WsIo, WsListenerConfig, ws_config};
use super::{ClientId, Inbound, PeerIdentity, SendError, lock, wait_shutdown};
use crate::config::{Accept, LinkConfig};
use crate::error::LinkError;
use crate::handshake::{Remote, Responder, Session};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::{MAILBOX_RECORD_LEN, Mailbox};

/// Which node keys may open links: the current topology. Called once per
/// handshake, after the initiator proved it holds the key.
pub trait PeerFilter: Send + Sync + 'static {
    /// Whether `key` belongs to a node of the current topology.
    fn allows(&self, key: &LinkPublicKey) -> bool;
}

impl PeerFilter for HashSet<LinkPublicKey> {
    fn allows(&self, key: &LinkPublicKey) -> bool {
        self.contains(key)
    }
}

impl<F: Fn(&LinkPublicKey) -> bool + Send + Sync + 'static> PeerFilter for F {
    fn allows(&self, key: &LinkPublicKey) -> bool {
        self(key)
    }
}

/// How far a connection got, as far as the [`ConnectionGate`] is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GateStage {
    /// Admitted on accept; not (or not yet) approved after its handshake.
    Accepted,
    /// Approved after the handshake as a node of the topology, authenticated by its static link
    /// key.
    Node,
    /// Approved after the handshake as an anonymous client.
    Client,
}

/// Decides which remote addresses may connect, and hears how they behave.
/// The node backs it with `nox-admission` (connection limits per address
/// and per subnet, graduated bans); the default admits everyone.
///
/// Each connection is seen as `admit` on accept, then, if its handshake
/// completes, `authenticated` with what the handshake proved, then `closed`
/// with the last stage the gate approved. An exemption for nodes belongs in
/// `authenticated` (keyed on the authenticated static key), never in `admit`
/// (which only knows an address, possibly shared with clients).
pub trait ConnectionGate: Send + Sync + 'static {
    /// Called on accept, before any handshake work; `false` closes the
    /// connection (counted as `rejected_by_gate`).
    fn admit(&self, peer: IpAddr) -> bool;
    /// The handshake completed: `node` is the authenticated static key of a
    /// node of the topology, `None` an anonymous client. `false` closes the
    /// link (counted as `rejected_by_gate`). The default approves.
    fn authenticated(&self, peer: IpAddr, node: Option<&LinkPublicKey>) -> bool {
        let _ = (peer, node);
        true
    }
    /// The peer failed or timed out its handshake, or presented a node key
    /// that is not in the topology.
    fn offence(&self, peer: IpAddr);
    /// An admitted connection ended; `stage` is the last stage the gate
    /// approved ([`GateStage::Accepted`] if `authenticated` was not called or
    /// refused).
    fn closed(&self, peer: IpAddr, stage: GateStage);
}

/// A gate that admits every address.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenGate;

impl ConnectionGate for OpenGate {
    fn admit(&self, _peer: IpAddr) -> bool {
        true
    }
    fn offence(&self, _peer: IpAddr) {}
    fn closed(&self, _peer: IpAddr, _stage: GateStage) {}
}

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
        let task = tokio::spawn(accept_loop(listener, shared.clone(), shutdown.clone()));
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
        let task = tokio::spawn(ws_accept_loop(listener, ws, tls, self.shared.clone(), self.shutdown.clone()));
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

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            () = wait_shutdown(&mut shutdown) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = accept_admitted(&listener, &shared) => {
                let Some((stream, peer, permit)) = accepted else { continue };
                let (shared, shutdown) = (shared.clone(), shutdown.clone());
                tasks.spawn(async move {
                    let deadline = tokio::time::Instant::now() + shared.config.handshake_timeout;
                    let served = serve(stream, peer, deadline, false, shared.clone(), shutdown, permit).await;
                    shared.config.gate.closed(peer, served.stage);
                });
            }
        }
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

async fn ws_accept_loop(
    listener: TcpListener,
    ws: WsListenerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            () = wait_shutdown(&mut shutdown) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = accept_admitted(&listener, &shared) => {
                let Some((stream, peer, permit)) = accepted else { continue };
                let (shared, shutdown) = (shared.clone(), shutdown.clone());
                let tls = tls.clone();
                tasks.spawn(async move {
                    let stage = match tls {
                        None => serve_ws(stream, tokio::time::Instant::now(), peer, ws, shared.clone(), shutdown, permit).await,
                        Some(tls) => serve_wss(stream, tls, peer, ws, shared.clone(), shutdown, permit).await,
                    };
                    shared.config.gate.closed(peer, stage);
                });
            }
        }
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// One `wss://` connection: the TLS handshake (bounded by the upgrade timeout), then
/// [`serve_ws`] on the TLS stream. A failed TLS handshake costs one short task: nothing was
/// allocated for the link yet.
async fn serve_wss(
    stream: TcpStream,
    tls: tokio_rustls::TlsAcceptor,
    peer: IpAddr,
    ws: WsListenerConfig,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    let started = tokio::time::Instant::now();
    let by = (started + shared.config.handshake_timeout).min(started + ws.upgrade_timeout);
    let accepted = tokio::select! {
        r = tokio::time::timeout_at(by, tls.accept(stream)) => r,
        () = wait_shutdown(&mut shutdown) => return GateStage::Accepted,
    };
    let c = &shared.counters;
    match accepted {
        Ok(Ok(stream)) => serve_ws(stream, started, peer, ws, shared, shutdown, permit).await,
        Ok(Err(e)) => {
            debug!(error = %e, "TLS handshake failed");
            bump(&c.ws_tls_failures);
            shared.config.gate.offence(peer);
            GateStage::Accepted
        }
        Err(_) => {
            bump(&c.ws_tls_failures);
            bump(&c.handshake_timeouts);
            shared.config.gate.offence(peer);
            GateStage::Accepted
        }
    }
}

/// One WebSocket connection (`accepted_at`: when its TCP connection was accepted, the start
/// of the handshake deadline): the HTTP upgrade (any path, any `Origin`: a
/// page on any site may connect; the link's own handshake authenticates the
/// entry), then the client link over [`WsIo`]. A failed or slow upgrade and
/// a WebSocket protocol violation (text message, malformed frame, oversized
/// message) are offences.
async fn serve_ws<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    accepted_at: tokio::time::Instant,
    peer: IpAddr,
    ws: WsListenerConfig,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) -> GateStage {
    let c = &shared.counters;
    let deadline = accepted_at + shared.config.handshake_timeout;
    let upgrade_by = deadline.min(tokio::time::Instant::now() + ws.upgrade_timeout);
    let config = ws_config(&shared.config.link);
    let upgrade = tokio_tungstenite::accept_async_with_config(stream, Some(config));
    let upgraded = tokio::select! {
        r = tokio::time::timeout_at(upgrade_by, upgrade) => r,
        () = wait_shutdown(&mut shutdown) => return GateStage::Accepted,
    };
    let socket = match upgraded {
        Ok(Ok(socket)) => socket,
        Ok(Err(e)) => {
            debug!(error = %e, "WebSocket upgrade failed");
            bump(&c.ws_upgrade_failures);
            shared.config.gate.offence(peer);
            return GateStage::Accepted;
        }
        Err(_) => {
            bump(&c.ws_upgrade_failures);
            bump(&c.handshake_timeouts);
            shared.config.gate.offence(peer);
            return GateStage::Accepted;
        }
    };
    bump(&c.ws_connections);
    let io = WsIo::new(socket, &shared.config.link);
    let violation = io.violation();
    let served = serve(io, peer, deadline, true, shared.clone(), shutdown, permit).await;
    if violation.load(std::sync::atomic::Ordering::Relaxed) {
        bump(&c.ws_protocol_errors);
        if !served.offence {
            shared.config.gate.offence(peer);
        }
    }
    served.stage
}

enum Refused {
    Closed,
    Io,
    Link(LinkError),
    Unauthorized,
}

/// How a connection ended, for the gate.
struct Served {
    /// The last stage the gate approved.
    stage: GateStage,
    /// Whether the gate was already told of an offence.
    offence: bool,
}

impl From<GateStage> for Served {
    fn from(stage: GateStage) -> Self {
        Self { stage, offence: false }
    }
}

/// One connection, whatever its transport, from accept (or upgrade) to
/// close. `deadline` bounds the handshake and, on a client link, its mailbox
/// record; `clients_only` refuses node handshakes (WebSocket).
async fn serve<S: LinkStream + AsyncRead + AsyncWrite + Unpin + Send>(
    mut stream: S,
    peer: IpAddr,
    deadline: tokio::time::Instant,
    clients_only: bool,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) -> Served {
    let c = &shared.counters;
    let cfg = &shared.config;
    let outcome = tokio::select! {
        r = tokio::time::timeout_at(deadline, respond(&mut stream, cfg, clients_only)) => r,
        () = wait_shutdown(&mut shutdown) => return GateStage::Accepted.into(),
    };
    let mut session = match outcome {
        Ok(Ok(session)) => session,
        Ok(Err(reason)) => return refused(&shared, peer, Some(reason)),
        Err(_) => return refused(&shared, peer, None),
    };
    // A client link is established only once its mailbox record has
    // authenticated under the hybrid keys; until then nothing it sends is
    // read as a packet, and a client that does not send it is refused when
    // the same deadline passes (`MailboxRecordMissing`).
    if !session.is_established() {
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline, receive_mailbox(&mut stream, &mut session)) => r,
            () = wait_shutdown(&mut shutdown) => return GateStage::Accepted.into(),
        };
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => return refused(&shared, peer, Some(reason)),
            Err(_) => {
                if let Err(e) = session.check_established() {
                    debug!(error = %e, "inbound client link timed out before its mailbox record");
                }
                return refused(&shared, peer, None);
            }
        }
    }
    bump(&c.handshakes_ok);
    // The gate learns what the handshake proved: only here can a node be told
    // apart from a client sharing its address.
    let (node, stage) = match session.remote() {
        Remote::Node(key) => (Some(*key), GateStage::Node),
        Remote::Client => (None, GateStage::Client),
    };
    if !cfg.gate.authenticated(peer, node.as_ref()) {
        bump(&c.rejected_by_gate);
        return GateStage::Accepted.into();
    }
    let ctx = LinkCtx { counters: c, inbound: &shared.inbound, write_timeout: cfg.write_timeout };
    let end = match *session.remote() {
        Remote::Node(key) => run_link(stream, session, PeerIdentity::Node(key), None, &ctx, &mut shutdown).await,
        Remote::Client => {
            let id = ClientId(shared.next_client.fetch_add(1, Ordering::Relaxed));
            let (tx, mut rx) = mpsc::channel(cfg.client_queue.max(1));
            // The greeting is queued before the link joins the broadcast
            // table, so it is the first record; asked again after joining,
            // a value that changed in between (and whose broadcast missed
            // this link) is queued too, so the client ends on the latest.
            let first = greet(&shared, &tx, None);
            lock(&shared.clients).insert(id, tx.clone());
            greet(&shared, &tx, first.as_deref());
            drop(tx);
            let mailbox = session.mailbox();
            if let Some(mailbox) = mailbox {
                lock(&shared.mailboxes).insert(mailbox, id);
            }
            let end =
                run_link(stream, session, PeerIdentity::Client(id, peer), Some(&mut rx), &ctx, &mut shutdown).await;
            if let Some(mailbox) = mailbox {
                let mut table = lock(&shared.mailboxes);
                if table.get(&mailbox) == Some(&id) {
                    table.remove(&mailbox);
                }
            }
            lock(&shared.clients).remove(&id);
            end
        }
    };
    debug!(?end, "inbound link closed");
    stage.into()
}

/// Counts a connection whose handshake did not complete (`None`: it timed
/// out) and reports it to the gate.
fn refused(shared: &Shared, peer: IpAddr, reason: Option<Refused>) -> Served {
    let c = &shared.counters;
    match reason {
        Some(Refused::Unauthorized) => {
            debug!("inbound link refused: node key not in topology");
            bump(&c.rejected_unauthenticated);
        }
        Some(reason) => {
            if let Refused::Link(e) = &reason {
                debug!(error = %e, "inbound handshake failed");
            }
            bump(&c.handshakes_failed);
        }
        None => {
            bump(&c.handshakes_failed);
            bump(&c.handshake_timeouts);
        }
    }
    shared.config.gate.offence(peer);
    Served { stage: GateStage::Accepted, offence: true }
}

/// Queues the greeting record on a new client link unless it equals
/// `unless`; returns the record queued.
fn greet(shared: &Shared, tx: &mpsc::Sender<Vec<u8>>, unless: Option<&[u8]>) -> Option<Vec<u8>> {
    let record = shared.config.client_greeting.as_ref().and_then(|greeting| greeting())?;
    if unless == Some(record.as_slice()) {
        return None;
    }
    if record.len() != shared.config.link.packet_len() {
        bump(&shared.counters.dropped_bad_length);
        return None;
    }
    tx.try_send(record.clone()).ok().map(|()| record)
}

async fn respond<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    cfg: &ListenerConfig,
    clients_only: bool,
) -> Result<Session, Refused> {
    let mut responder = Responder::new(&cfg.link, &cfg.keypair, cfg.accept);
    // Enough for a whole first flight (39 + 1,280 bytes) in one read.
    let mut buf = [0u8; 2048];
    let hello = loop {
        let want = responder.wanted().clamp(1, buf.len());
        let n = stream.read(&mut buf[..want]).await.map_err(|_| Refused::Io)?;
        if n == 0 {
            return Err(Refused::Closed);
        }
        if let (_, Some(hello)) = responder.feed(&buf[..n]).map_err(Refused::Link)? {
            break hello;
        }
    };
    if let Remote::Node(key) = hello.remote() {
        if clients_only {
            return Err(Refused::Link(LinkError::KindNotAccepted(crate::config::LinkKind::Node)));
        }
        if !cfg.peers.allows(key) {
            return Err(Refused::Unauthorized);
        }
    }
    let (reply, session) = hello.accept().map_err(Refused::Link)?;
    stream.write_all(&reply).await.map_err(|_| Refused::Io)?;
    stream.flush().await.map_err(|_| Refused::Io)?;
    Ok(session)
}

/// Reads a client's mailbox record, exactly its bytes (the records that
/// follow stay in the socket for the link).
async fn receive_mailbox<S: AsyncRead + Unpin>(stream: &mut S, session: &mut Session) -> Result<(), Refused> {
    let mut buf = [0u8; MAILBOX_RECORD_LEN];
    while session.mailbox_wanted() > 0 {
        let want = session.mailbox_wanted().min(buf.len());
        let n = stream.read(&mut buf[..want]).await.map_err(|_| Refused::Io)?;
        if n == 0 {
            // The stream ended first: `MailboxRecordMissing`.
            return session.check_established().map_err(Refused::Link);
        }
        session.feed_mailbox_record(&buf[..n]).map_err(Refused::Link)?;
    }
    session.check_established().map_err(Refused::Link)
}
