//! The async shell: links, tasks and waiters around a [`ClientCore`].

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use nox_cover::Instant;
use nox_link::transport::{
    Backoff, DialerConfig, Inbound, LinkCounters, OutboundLinks, PeerDirectory, PeerIdentity, Transport,
};
use nox_link::{LinkConfig, LinkPublicKey};
use nox_message::{RequestBody, Response};
use nox_sphinx::NodeId;
use nox_topology::VerifiedTopology;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::config::ClientConfig;
use crate::core::{ClientCore, ClientStats, Completed, Now, Outgoing, PacketKind, RequestId};
use crate::error::ClientError;
use crate::streams::StreamStatus;
use nox_stream::{ResetCode, Target as StreamTarget};

mod links;
mod stream;
mod tasks;

pub use stream::MixStream;
use tasks::{inbound_task, stream_sender, timer_task};

/// How long [`Client::start`] waits for the reply gateway's link.
const GATEWAY_WAIT: Duration = Duration::from_secs(5);
/// Longest sleep of the timer task (it also re-reads the schedule).
const MAX_TICK: Duration = Duration::from_millis(200);
/// Redial delays of reply links: 100 ms doubling to 2 s (with jitter), below
/// the nodes' 5 s, so that a client redialing a restarted gateway usually
/// registers its mailbox before the upstream mixes flush the replies they
/// queued for it (a gateway holds nothing for a mailbox with no link).
const REPLY_BACKOFF: Backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(2) };

/// The origin of the shell's monotonic time: the first time any shell in
/// this process read the clock. The core sees `Instant`s as offsets from it
/// ([`nox_cover::Instant::from_std`]); the timer task converts its wake-ups
/// back to sleep until them.
fn clock_origin() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(std::time::Instant::now)
}

impl Now {
    /// The system clocks: monotonic time since this process's shell origin,
    /// and wall-clock unix seconds. Only in the native shell (the `shell`
    /// feature); a wasm host builds `Now` from `performance.now()` and
    /// `Date.now()`.
    pub fn system() -> Self {
        Self {
            at: Instant::from_std(clock_origin(), std::time::Instant::now()),
            unix: nox_topology::unix_seconds(std::time::SystemTime::now()),
        }
    }
}

/// What [`Client::start`] needs. The network's geometry is the topology's
/// ([`VerifiedTopology::geometry`]).
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// The verified topology.
    pub topology: VerifiedTopology,
    /// Core settings.
    pub core: ClientConfig,
}

type Waiters = HashMap<RequestId, oneshot::Sender<Result<Response, ClientError>>>;

struct State {
    core: ClientCore,
    waiters: Waiters,
    /// Wakes the task serving each stream when its state changes.
    stream_waiters: HashMap<RequestId, Arc<Notify>>,
}

struct Shared {
    state: Mutex<State>,
    /// Stream packets (cover off), sent in order by one task that waits for
    /// room on the entry link instead of dropping a burst it cannot take.
    stream_out: mpsc::UnboundedSender<Outgoing>,
    /// Draws for `ClientConfig::inject_loss` (0: never used).
    loss: (f64, Mutex<ChaCha20Rng>),
    entries: OutboundLinks,
    /// One link per reply gateway the core needs (`ClientCore::reply_gateways`).
    replies: ReplyLinks,
    directory: Arc<Directory>,
    /// Where every packet handed to an entry link is reported, if anyone asked
    /// ([`ClientHandle::observe_sends`]).
    sends: Mutex<Option<mpsc::UnboundedSender<SentPacket>>>,
    /// Whether anyone ever asked: without an observer a send takes no lock.
    observed: AtomicBool,
}

/// One packet the client handed to an entry link ([`ClientHandle::observe_sends`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Wall-clock time it was handed to the link, microseconds since the Unix epoch.
    pub unix_us: u64,
    /// The entry node.
    pub entry: NodeId,
    /// What it carries.
    pub kind: PacketKind,
}

/// The client's reply links, one per gateway in `ClientCore::reply_gateways`:
/// the current gateway and the former ones that still owe replies. Each has
/// its own dialer, so it can be closed alone and its handshakes counted; each
/// names the client's one mailbox and is redialed with [`REPLY_BACKOFF`] while
/// it is wanted (a gateway that was killed and restarted gets the mailbox
/// again and delivers what reaches it from then on).
struct ReplyLinks {
    dialer: DialerConfig,
    directory: Arc<Directory>,
    inbound: mpsc::Sender<Inbound>,
    runtime: tokio::runtime::Handle,
    open: Mutex<ReplyLinkMap>,
}

#[derive(Default)]
struct ReplyLinkMap {
    links: HashMap<NodeId, ReplyLink>,
    /// The gateway new SURBs name.
    current: Option<NodeId>,
    /// The gateways of the last sync whose links all opened (empty after a
    /// failure, so the next sync retries).
    synced: Vec<NodeId>,
}

/// One reply link. Dropping it closes the link: its dialer's queue closes and
/// its own shutdown signal fires (the sender is dropped).
struct ReplyLink {
    _links: OutboundLinks,
    counters: Arc<LinkCounters>,
    _stop: watch::Sender<bool>,
}

/// A reply link of the client, from [`ClientHandle::reply_links`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyLinkStatus {
    /// The gateway.
    pub gateway: NodeId,
    /// Whether new SURBs name it (`false`: a former gateway kept for the
    /// replies still owed through it).
    pub current: bool,
    /// Whether the link is established now.
    pub up: bool,
    /// Handshakes completed on it so far (one more after each redial).
    pub handshakes: u64,
}

/// Link keys and addresses of the topology's nodes; replaced on a topology update.
#[derive(Default)]
struct Directory {
    nodes: Mutex<Nodes>,
    /// Dial the nodes' WebSocket endpoints (`websocket` in their descriptors) instead of their
    /// link addresses.
    websocket: bool,
}

#[derive(Default)]
struct Nodes {
    address: HashMap<LinkPublicKey, SocketAddr>,
    /// Nodes whose WebSocket endpoint is `wss://` (their descriptor says so).
    tls: HashSet<LinkPublicKey>,
    link_key: HashMap<NodeId, LinkPublicKey>,
    node_id: HashMap<LinkPublicKey, NodeId>,
}

/// Something that carries a request through the mixnet: [`ClientHandle`],
/// or a stand-in in tests of the endpoints.
pub trait Requester: Clone + Send + Sync + 'static {
    /// Sends `body` and waits for its response.
    fn request(
        &self,
        body: RequestBody,
        expected_reply_len: usize,
    ) -> impl Future<Output = Result<Response, ClientError>> + Send;
}

impl Requester for ClientHandle {
    fn request(
        &self,
        body: RequestBody,
        expected_reply_len: usize,
    ) -> impl Future<Output = Result<Response, ClientError>> + Send {
        ClientHandle::request(self, body, expected_reply_len)
    }
}

/// The client: start it once, then share the handle.
pub struct Client;

/// A running client. Cheap to clone; the client stops when the last clone
/// is dropped.
#[derive(Clone)]
pub struct ClientHandle {
    shared: Arc<Shared>,
    _stop: Arc<watch::Sender<bool>>,
}

impl Client {
    /// Starts the links and tasks and waits (up to 5 s) for the reply
    /// gateway's link. Call inside a tokio runtime.
    ///
    /// While it runs, the client keeps a reply link to every gateway of
    /// `ClientCore::reply_gateways`: when loop health or a topology change
    /// moves it to a new gateway, the old one's link stays open (and is
    /// redialed if it drops) until the requests whose SURBs name it complete
    /// or time out ([`ClientHandle::reply_links`]).
    pub async fn start(config: ShellConfig) -> Result<ClientHandle, ClientError> {
        Self::start_over(config, Transport::Tcp).await
    }

    /// [`Client::start`], with the links to entries and the reply gateway over `transport`:
    /// `Transport::WebSocket` dials each node's WebSocket endpoint from the topology
    /// (`ws://websocket/`, docs/spec/link.md §5), as a browser does; entries and gateways that
    /// advertise none are avoided.
    pub async fn start_over(config: ShellConfig, transport: Transport) -> Result<ClientHandle, ClientError> {
        Self::start_trusting(config, transport, None).await
    }

    /// [`Client::start_over`], trusting the CA certificates in the PEM file `ca_file` for the
    /// entries and gateways whose WebSocket endpoint is `wss://` (their signed descriptor says
    /// so). Without it such nodes cannot be dialed (no system roots are trusted).
    pub async fn start_trusting(
        mut config: ShellConfig,
        transport: Transport,
        ca_file: Option<&std::path::Path>,
    ) -> Result<ClientHandle, ClientError> {
        let setup = |e: &dyn std::fmt::Display| ClientError::Setup(e.to_string());
        let tls = ca_file.map(nox_link::transport::client_config_with_roots).transpose().map_err(|e| setup(&e))?;
        if transport == Transport::WebSocket {
            let last = config.topology.layers().get().saturating_sub(1);
            let without = config.topology.nodes().iter().filter(|n| {
                (n.descriptor.layer.0 == 0 || n.descriptor.layer.0 == last) && n.descriptor.websocket.is_none()
            });
            config.core.avoid.extend(without.map(|n| n.id));
        }
        if !(0.0..1.0).contains(&config.core.inject_loss) {
            return Err(ClientError::Setup("inject_loss must be in [0, 1)".into()));
        }
        let loss = (config.core.inject_loss, Mutex::new(ChaCha20Rng::from_os_rng()));
        let (stream_out, stream_rx) = mpsc::unbounded_channel();
        let geometry = *config.topology.geometry();
        let core = ClientCore::new(
            config.topology.clone(),
            config.core,
            ChaCha20Rng::from_os_rng(),
            ChaCha20Rng::from_os_rng(),
            Now::system(),
        )?;
        let directory = Arc::new(Directory { websocket: transport == Transport::WebSocket, ..Directory::default() });
        directory.set(&config.topology);
        let link = LinkConfig::new(geometry).map_err(|e| setup(&e))?;
        let (stop, stop_rx) = watch::channel(false);
        let (inbound_tx, inbound_rx) = mpsc::channel(1024);
        let entries = OutboundLinks::new(
            DialerConfig { transport, tls: tls.clone(), ..DialerConfig::client(link) },
            directory.clone(),
            inbound_tx.clone(),
            Arc::new(LinkCounters::default()),
            stop_rx.clone(),
        )
        .map_err(|e| setup(&e))?;
        let replies = ReplyLinks {
            dialer: DialerConfig {
                mailbox: Some(core.mailbox()),
                transport,
                tls,
                backoff: REPLY_BACKOFF,
                ..DialerConfig::client(link)
            },
            directory: directory.clone(),
            inbound: inbound_tx,
            runtime: tokio::runtime::Handle::try_current().map_err(|e| setup(&e))?,
            open: Mutex::default(),
        };
        let gateway = core.gateway();
        if !replies.sync(&[gateway]).is_empty() {
            return Err(setup(&"gateway not in the topology"));
        }

        let shared = Arc::new(Shared {
            stream_out,
            loss,
            state: Mutex::new(State { core, waiters: HashMap::new(), stream_waiters: HashMap::new() }),
            entries,
            replies,
            directory,
            sends: Mutex::new(None),
            observed: AtomicBool::new(false),
        });
        tokio::spawn(inbound_task(shared.clone(), inbound_rx, stop_rx.clone()));
        tokio::spawn(stream_sender(shared.clone(), stream_rx, stop_rx.clone()));
        tokio::spawn(timer_task(shared.clone(), stop_rx));

        let deadline = tokio::time::Instant::now() + GATEWAY_WAIT;
        let handle = ClientHandle { shared, _stop: Arc::new(stop) };
        while !handle.reply_links().iter().any(|l| l.gateway == gateway && l.handshakes > 0) {
            if tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Setup(
                    "reply gateway unreachable within 5 s (it must accept client links naming a mailbox)".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(handle)
    }
}

impl ClientHandle {
    /// Sends `body` through the mixnet and waits for the response (or the
    /// timeout). Never retransmits.
    pub async fn request(&self, body: RequestBody, expected_reply_len: usize) -> Result<Response, ClientError> {
        self.request_via(body, expected_reply_len, None).await
    }

    /// The exits of the current topology (nodes of the last layer).
    pub fn exits(&self) -> Vec<NodeId> {
        let state = self.shared.lock();
        let topology = state.core.topology();
        topology.nodes_in_layer(topology.layers().exit()).map(|n| n.id).collect()
    }

    /// [`Self::request`] to the exit `exit` (random for `None`): see `ClientCore::request_via`.
    pub async fn request_via(
        &self,
        body: RequestBody,
        expected_reply_len: usize,
        exit: Option<NodeId>,
    ) -> Result<Response, ClientError> {
        let (tx, rx) = oneshot::channel();
        // Building SURBs and packets (with proof of work) is CPU work: keep
        // it off the async workers.
        let shared = self.shared.clone();
        let packets = tokio::task::spawn_blocking(move || {
            let mut state = shared.lock();
            let (id, packets) = state.core.request_via(body, expected_reply_len, exit, Now::system())?;
            state.waiters.insert(id, tx);
            Ok::<_, ClientError>(packets)
        })
        .await
        .map_err(|_| ClientError::Closed)??;
        for out in packets {
            if self.shared.inject_loss() {
                continue;
            }
            let key = self.shared.directory.link_key(&out.entry).ok_or(ClientError::NoRoute("entry link".into()))?;
            let (entry, kind) = (out.entry, out.kind);
            self.shared.entries.send_wait(&key, out.packet).await.map_err(|_| ClientError::Closed)?;
            self.shared.sent(entry, kind);
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }

    /// Switches to a newer topology (see `ClientCore::set_topology`); links
    /// to nodes still listed stay up, and a new gateway is connected with the
    /// same mailbox. The old gateway's link stays open while replies are
    /// owed through it (if it is still listed: a node gone from the topology
    /// cannot be dialed).
    pub fn set_topology(&self, topology: VerifiedTopology) -> Result<(), ClientError> {
        let (changed, wanted) = {
            let mut state = self.shared.lock();
            // Only a topology the core accepts (same geometry, a usable gateway) replaces the
            // link directory.
            let nodes = topology.clone();
            let changed = state.core.set_topology(topology, Now::system())?;
            self.shared.directory.set(&nodes);
            (changed, state.core.reply_gateways())
        };
        let failed = self.shared.replies.sync(&wanted);
        if let Some(gateway) = changed {
            if failed.contains(&gateway) {
                return Err(ClientError::NoRoute("gateway link".into()));
            }
            tracing::info!("reply gateway changed with the topology");
        }
        Ok(())
    }

    /// The current reply gateway (new SURBs name it).
    pub fn gateway(&self) -> NodeId {
        self.shared.lock().core.gateway()
    }

    /// The client's reply links: the current gateway's first, then those of
    /// former gateways kept for the replies still owed through them
    /// (`ClientCore::reply_gateways`).
    pub fn reply_links(&self) -> Vec<ReplyLinkStatus> {
        self.shared.replies.status()
    }

    /// Reports every packet this client hands to an entry link from now on — time, entry, and
    /// whether it is a fragment of real traffic or cover — on the returned channel (replacing
    /// an earlier observer). For measurements: this is what a global observer of the client's
    /// link sees, plus the ground truth it does not (what each packet carries).
    pub fn observe_sends(&self) -> mpsc::UnboundedReceiver<SentPacket> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.shared.sends.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        self.shared.observed.store(true, Ordering::Release);
        rx
    }

    /// The core's counters.
    pub fn stats(&self) -> ClientStats {
        self.shared.lock().core.stats()
    }

    /// Opens a stream to `target` through a random exit (docs/spec/streams.md).
    /// Returns at once; [`MixStream::opened`] waits for the exit's answer.
    pub fn open_stream(&self, target: StreamTarget) -> Result<MixStream, ClientError> {
        let notify = Arc::new(Notify::new());
        let key = {
            let mut state = self.shared.lock();
            let key = state.core.open_stream(target, Now::system())?;
            state.stream_waiters.insert(key, notify.clone());
            key
        };
        let stream = MixStream { key, handle: self.clone(), notify };
        stream.flush(|_| ());
        Ok(stream)
    }
}
