//! Outbound links: one connection per next hop, created on demand, each with
//! its own bounded queue and task, reconnecting with backoff.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::debug;

use super::backoff::{Backoff, jitter};
use super::counters::{LinkCounters, bump};
use super::link::{LinkCtx, LinkEnd, run_link};
use super::ws::{WsIo, ws_config};
use super::{Inbound, PeerIdentity, SendError, lock, wait_shutdown};
use crate::config::{LinkConfig, RESPONSE_LEN};
use crate::error::LinkError;
use crate::handshake::{Initiator, Session};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::Mailbox;

/// Where to reach a node: the topology's link address for a key. Asked on
/// every (re)connect, so address changes apply at the next reconnect, and a
/// node that left the topology is no longer dialed.
pub trait PeerDirectory: Send + Sync + 'static {
    /// The link address of `peer`, if it is in the topology.
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr>;

    /// Whether `peer`'s WebSocket endpoint wants TLS (`wss://`, its descriptor says so).
    /// Asked with [`Self::address`] on every WebSocket dial; the default is plain `ws://`.
    fn websocket_tls(&self, peer: &LinkPublicKey) -> bool {
        let _ = peer;
        false
    }
}

impl PeerDirectory for HashMap<LinkPublicKey, SocketAddr> {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        self.get(peer).copied()
    }
}

impl<F: Fn(&LinkPublicKey) -> Option<SocketAddr> + Send + Sync + 'static> PeerDirectory for F {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        self(peer)
    }
}

/// How a dialer reaches its peers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// The link over TCP (every node link; a native client's default).
    #[default]
    Tcp,
    /// A client link over WebSocket (`ws://address/`, docs/spec/link.md §5),
    /// as a browser dials it; the directory must then give the peers'
    /// WebSocket addresses. Client dialers only.
    WebSocket,
}

/// A dialed connection, its handshake done.
enum Dialed {
    Tcp(TcpStream),
    WebSocket(Box<WsIo<TcpStream>>),
    WebSocketTls(Box<WsIo<tokio_rustls::client::TlsStream<TcpStream>>>),
}

/// Dialer settings. [`DialerConfig::node`] and [`DialerConfig::client`] give
/// the defaults.
#[derive(Clone, Debug)]
pub struct DialerConfig {
    /// Geometry and cipher.
    pub link: LinkConfig,
    /// `Some`: a node dialing nodes (`Noise_IK`). `None`: an anonymous client
    /// dialing its entry node (`Noise_NK`).
    pub identity: Option<Arc<LinkKeypair>>,
    /// Per-peer send queue, in packets (default 128).
    pub queue_len: usize,
    /// TCP connect timeout (default 3 s).
    pub connect_timeout: Duration,
    /// Handshake timeout after connect (default 5 s).
    pub handshake_timeout: Duration,
    /// Time allowed for one batched write; a peer that does not read for
    /// this long is disconnected (default 10 s).
    pub write_timeout: Duration,
    /// Reconnect delays.
    pub backoff: Backoff,
    /// Client links only: the reply mailbox to register with the nodes
    /// dialed (a client's link to its reply gateway). `None` for links that
    /// only send.
    pub mailbox: Option<Mailbox>,
    /// TCP (default) or WebSocket; a node dialer (`identity` set) always
    /// uses TCP.
    pub transport: Transport,
    /// WebSocket client dialers: the TLS settings (trusted roots) for peers whose endpoint is
    /// `wss://` ([`PeerDirectory::websocket_tls`]); the certificate must name the endpoint's
    /// IP address. `None`: such peers cannot be dialed (counted in `ws_tls_failures`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl DialerConfig {
    /// A node's dialer.
    pub fn node(link: LinkConfig, keypair: Arc<LinkKeypair>) -> Self {
        Self { identity: Some(keypair), ..Self::client(link) }
    }
    /// A client's dialer.
    pub fn client(link: LinkConfig) -> Self {
        Self {
            link,
            identity: None,
            queue_len: 128,
            connect_timeout: Duration::from_secs(3),
            handshake_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            backoff: Backoff::default(),
            mailbox: None,
            transport: Transport::Tcp,
            tls: None,
        }
    }
}

type PeerMap = Mutex<HashMap<LinkPublicKey, (u64, mpsc::Sender<Vec<u8>>)>>;

/// What a [`SendShaper`] does with one packet given to [`OutboundLinks::send`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkFault {
    /// Queue it now.
    Pass,
    /// Lose it (`send` still returns `Ok`, as for a packet lost on the wire).
    Drop,
    /// Queue it after this long.
    Delay(Duration),
}

/// Decides, per packet, whether it passes, is lost or is held back: a node's fault-injection
/// layer for chaos runs (nox-node's `[chaos]`, only in builds with its `chaos` feature). Set
/// once with [`OutboundLinks::set_shaper`]; without one every packet passes.
pub type SendShaper = Arc<dyn Fn() -> LinkFault + Send + Sync>;

struct Inner {
    config: Arc<DialerConfig>,
    directory: Arc<dyn PeerDirectory>,
    peers: Arc<PeerMap>,
    next_gen: Mutex<u64>,
    inbound: mpsc::Sender<Inbound>,
    counters: Arc<LinkCounters>,
    shutdown: watch::Receiver<bool>,
    runtime: Handle,
    tasks: Mutex<JoinSet<()>>,
    shaper: OnceLock<SendShaper>,
}

/// The outbound side of a node (or client): `send` never waits; a slow or
/// dead peer only fills its own queue. Cheap to clone.
#[derive(Clone)]
pub struct OutboundLinks {
    inner: Arc<Inner>,
}

impl OutboundLinks {
    /// Call from a Tokio runtime (its handle spawns the peer tasks). Packets
    /// that peers send back on these links (replies to a client) go to
    /// `inbound`.
    pub fn new(
        config: DialerConfig,
        directory: Arc<dyn PeerDirectory>,
        inbound: mpsc::Sender<Inbound>,
        counters: Arc<LinkCounters>,
        shutdown: watch::Receiver<bool>,
    ) -> io::Result<Self> {
        let runtime = Handle::try_current().map_err(io::Error::other)?;
        let inner = Inner {
            config: Arc::new(config),
            directory,
            peers: Arc::default(),
            next_gen: Mutex::new(0),
            inbound,
            counters,
            shutdown,
            runtime,
            tasks: Mutex::new(JoinSet::new()),
            shaper: OnceLock::new(),
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Queues `packet` for `peer` without waiting, dialing the peer first if
    /// there is no link yet. Drops and counts on a full queue.
    pub fn send(&self, peer: &LinkPublicKey, packet: Vec<u8>) -> Result<(), SendError> {
        self.check_len(&packet)?;
        if let Some(shaper) = self.inner.shaper.get() {
            match shaper() {
                LinkFault::Pass => {}
                LinkFault::Drop => return Ok(()),
                LinkFault::Delay(delay) => {
                    let (links, peer) = (self.clone(), *peer);
                    self.inner.runtime.spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = links.queue(&peer, packet);
                    });
                    return Ok(());
                }
            }
        }
        self.queue(peer, packet)
    }

    /// Installs the fault-injection layer that [`OutboundLinks::send`] consults (once; a second
    /// call returns `false` and changes nothing). Packets given to `send_wait` (a client's own
    /// traffic) are never shaped.
    pub fn set_shaper(&self, shaper: SendShaper) -> bool {
        self.inner.shaper.set(shaper).is_ok()
    }

    fn queue(&self, peer: &LinkPublicKey, packet: Vec<u8>) -> Result<(), SendError> {
        let peers = &self.inner.peers;
        let mut map = lock(peers);
        let tx = self.sender_for(&mut map, peer)?;
        match tx.try_send(packet) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                bump(&self.inner.counters.dropped_outbound_full);
                Err(SendError::QueueFull)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(SendError::Closed),
        }
    }

    /// Queues `packet` for `peer`, waiting for queue space: for a client's
    /// own traffic, where backpressure beats dropping.
    pub async fn send_wait(&self, peer: &LinkPublicKey, packet: Vec<u8>) -> Result<(), SendError> {
        self.check_len(&packet)?;
        let tx = {
            let mut map = lock(&self.inner.peers);
            self.sender_for(&mut map, peer)?.clone()
        };
        tx.send(packet).await.map_err(|_| SendError::Closed)
    }

    /// Opens (and keeps reconnecting) the link to `peer` without sending:
    /// a client's link to its reply gateway, which only receives.
    pub fn connect(&self, peer: &LinkPublicKey) -> Result<(), SendError> {
        if *self.inner.shutdown.borrow() {
            return Err(SendError::Closed);
        }
        let mut map = lock(&self.inner.peers);
        self.sender_for(&mut map, peer).map(|_| ())
    }

    /// Packets queued per peer, for metrics.
    pub fn queue_depths(&self) -> Vec<(LinkPublicKey, usize)> {
        lock(&self.inner.peers).iter().map(|(k, (_, tx))| (*k, tx.max_capacity() - tx.capacity())).collect()
    }

    /// Waits for every peer task to end (after shutdown was signalled).
    pub async fn join(&self) {
        let mut tasks = std::mem::take(&mut *lock(&self.inner.tasks));
        while tasks.join_next().await.is_some() {}
    }

    fn check_len(&self, packet: &[u8]) -> Result<(), SendError> {
        let expected = self.inner.config.link.packet_len();
        if packet.len() != expected {
            bump(&self.inner.counters.dropped_bad_length);
            return Err(SendError::WrongLength { got: packet.len(), expected });
        }
        if *self.inner.shutdown.borrow() {
            return Err(SendError::Closed);
        }
        Ok(())
    }

    fn sender_for<'m>(
        &self,
        map: &'m mut HashMap<LinkPublicKey, (u64, mpsc::Sender<Vec<u8>>)>,
        peer: &LinkPublicKey,
    ) -> Result<&'m mpsc::Sender<Vec<u8>>, SendError> {
        let live = map.get(peer).is_some_and(|(_, tx)| !tx.is_closed());
        if !live {
            if self.inner.directory.address(peer).is_none() {
                return Err(SendError::UnknownPeer);
            }
            let (tx, rx) = mpsc::channel(self.inner.config.queue_len.max(1));
            let generation = {
                let mut g = lock(&self.inner.next_gen);
                *g += 1;
                *g
            };
            map.insert(*peer, (generation, tx));
            let task = PeerTask {
                peer: *peer,
                generation,
                config: self.inner.config.clone(),
                directory: self.inner.directory.clone(),
                peers: Arc::downgrade(&self.inner.peers),
                inbound: self.inner.inbound.clone(),
                counters: self.inner.counters.clone(),
                shutdown: self.inner.shutdown.clone(),
            };
            lock(&self.inner.tasks).spawn_on(task.run(rx), &self.inner.runtime);
        }
        map.get(peer).map(|(_, tx)| tx).ok_or(SendError::UnknownPeer)
    }
}

/// One peer's connection manager. Holds no strong reference to the peer map,
/// so dropping every [`OutboundLinks`] closes the queue and ends the task.
struct PeerTask {
    peer: LinkPublicKey,
    generation: u64,
    config: Arc<DialerConfig>,
    directory: Arc<dyn PeerDirectory>,
    peers: Weak<PeerMap>,
    inbound: mpsc::Sender<Inbound>,
    counters: Arc<LinkCounters>,
    shutdown: watch::Receiver<bool>,
}

enum DialError {
    Connect,
    Upgrade,
    Tls,
    Handshake,
    Timeout,
}

impl PeerTask {
    async fn run(mut self, mut rx: mpsc::Receiver<Vec<u8>>) {
        let c = self.counters.clone();
        let mut attempt: u32 = 0;
        let mut shutdown = self.shutdown.clone();
        loop {
            let Some(addr) = self.directory.address(&self.peer) else {
                debug!("peer left the directory; outbound link task ends");
                break;
            };
            let dialed = tokio::select! {
                r = self.dial(addr) => r,
                () = wait_shutdown(&mut shutdown) => break,
            };
            match dialed {
                Ok((stream, session)) => {
                    bump(&c.handshakes_ok);
                    attempt = 0;
                    let ctx =
                        LinkCtx { counters: &c, inbound: &self.inbound, write_timeout: self.config.write_timeout };
                    let from = PeerIdentity::Node(self.peer);
                    let end = match stream {
                        Dialed::Tcp(s) => run_link(s, session, from, Some(&mut rx), &ctx, &mut self.shutdown).await,
                        Dialed::WebSocket(s) => {
                            run_link(*s, session, from, Some(&mut rx), &ctx, &mut self.shutdown).await
                        }
                        Dialed::WebSocketTls(s) => {
                            run_link(*s, session, from, Some(&mut rx), &ctx, &mut self.shutdown).await
                        }
                    };
                    debug!(?end, "outbound link closed");
                    if matches!(end, LinkEnd::Shutdown | LinkEnd::QueueClosed) {
                        break;
                    }
                }
                Err(DialError::Connect) => bump(&c.connect_failures),
                Err(DialError::Upgrade) => bump(&c.ws_upgrade_failures),
                Err(DialError::Tls) => bump(&c.ws_tls_failures),
                Err(DialError::Handshake) => bump(&c.handshakes_failed),
                Err(DialError::Timeout) => {
                    bump(&c.handshakes_failed);
                    bump(&c.handshake_timeouts);
                }
            }
            if rx.is_closed() && rx.is_empty() {
                break;
            }
            bump(&c.reconnects);
            let delay = self.config.backoff.delay(attempt, jitter());
            attempt = attempt.saturating_add(1);
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = wait_shutdown(&mut shutdown) => break,
            }
        }
        if let Some(peers) = self.peers.upgrade() {
            let mut map = lock(&peers);
            if map.get(&self.peer).is_some_and(|(g, _)| *g == self.generation) {
                map.remove(&self.peer);
            }
        }
    }

    async fn dial(&self, addr: SocketAddr) -> Result<(Dialed, Session), DialError> {
        let cfg = &self.config;
        let tcp = match tokio::time::timeout(cfg.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            _ => return Err(DialError::Connect),
        };
        let _ = tcp.set_nodelay(true);
        let websocket = cfg.transport == Transport::WebSocket && cfg.identity.is_none();
        // The upgrade counts against the handshake timeout.
        let handshake = async {
            if !websocket {
                let mut tcp = tcp;
                let session = self.initiate(&mut tcp).await?;
                return Ok((Dialed::Tcp(tcp), session));
            }
            if !self.directory.websocket_tls(&self.peer) {
                let mut socket = self.upgrade(format!("ws://{addr}/"), tcp).await?;
                let session = self.initiate(&mut *socket).await?;
                return Ok((Dialed::WebSocket(socket), session));
            }
            // `wss://`: the certificate must name the endpoint's address (the topology gives
            // an address, not a host name).
            let tls = cfg.tls.clone().ok_or(DialError::Tls)?;
            let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
            let stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| {
                debug!(error = %e, "TLS handshake failed");
                DialError::Tls
            })?;
            let mut socket = self.upgrade(format!("wss://{addr}/"), stream).await?;
            let session = self.initiate(&mut *socket).await?;
            Ok((Dialed::WebSocketTls(socket), session))
        };
        match tokio::time::timeout(cfg.handshake_timeout, handshake).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(DialError::Timeout),
        }
    }

    /// The client's HTTP upgrade to a WebSocket on a connected stream.
    async fn upgrade<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        url: String,
        stream: S,
    ) -> Result<Box<WsIo<S>>, DialError> {
        match tokio_tungstenite::client_async_with_config(url, stream, Some(ws_config(&self.config.link))).await {
            Ok((socket, _response)) => {
                bump(&self.counters.ws_connections);
                Ok(Box::new(WsIo::new(socket, &self.config.link)))
            }
            Err(e) => {
                debug!(error = %e, "WebSocket upgrade failed");
                Err(DialError::Upgrade)
            }
        }
    }

    /// The initiator's side of the handshake on a connected stream, through
    /// a client's mailbox record.
    async fn initiate<S: AsyncRead + AsyncWrite + Unpin>(&self, stream: &mut S) -> Result<Session, DialError> {
        let cfg = &self.config;
        let (init, first) = match &cfg.identity {
            Some(kp) => Initiator::node(&cfg.link, kp, &self.peer),
            None => Initiator::client(&cfg.link, &self.peer, cfg.mailbox.as_ref()),
        }
        .map_err(|_| DialError::Handshake)?;
        stream.write_all(&first).await.map_err(|_| DialError::Handshake)?;
        stream.flush().await.map_err(|_| DialError::Handshake)?;
        let mut response = [0u8; RESPONSE_LEN];
        stream.read_exact(&mut response).await.map_err(|_| DialError::Handshake)?;
        let failed = |e: LinkError| {
            debug!(error = %e, "outbound handshake failed");
            DialError::Handshake
        };
        let mut session = init.finish(&response).map_err(failed)?;
        // A client's mailbox record (under the hybrid keys), before any record.
        let mut tail = Vec::new();
        if session.write_mailbox_record(&mut tail).map_err(failed)? > 0 {
            stream.write_all(&tail).await.map_err(|_| DialError::Handshake)?;
            stream.flush().await.map_err(|_| DialError::Handshake)?;
        }
        Ok(session)
    }
}
