//! The async shell: links, tasks and waiters around a [`ClientCore`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use nox_cover::Instant;
use nox_link::transport::{DialerConfig, Inbound, LinkCounters, OutboundLinks, PeerDirectory, PeerIdentity, Transport};
use nox_link::{LinkConfig, LinkPublicKey};
use nox_message::{RequestBody, Response};
use nox_sphinx::NodeId;
use nox_topology::VerifiedTopology;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::config::ClientConfig;
use crate::core::{ClientCore, ClientStats, Completed, Now, Outgoing, RequestId};
use crate::error::ClientError;
use crate::streams::StreamStatus;
use nox_stream::{ResetCode, Target as StreamTarget};

/// How long [`Client::start`] waits for the reply gateway's link.
const GATEWAY_WAIT: Duration = Duration::from_secs(5);
/// Longest sleep of the timer task (it also re-reads the schedule).
const MAX_TICK: Duration = Duration::from_millis(200);

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
    /// The gateway the shell last connected to; the core may move on (loop
    /// health marks it degraded) and the timer task follows.
    connected: NodeId,
}

struct Shared {
    state: Mutex<State>,
    /// Stream packets (cover off), sent in order by one task that waits for
    /// room on the entry link instead of dropping a burst it cannot take.
    stream_out: mpsc::UnboundedSender<Outgoing>,
    /// Draws for `ClientConfig::inject_loss` (0: never used).
    loss: (f64, Mutex<ChaCha20Rng>),
    entries: OutboundLinks,
    gateway_links: OutboundLinks,
    directory: Arc<Directory>,
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
    link_key: HashMap<NodeId, LinkPublicKey>,
    node_id: HashMap<LinkPublicKey, NodeId>,
}

impl Directory {
    fn set(&self, topology: &VerifiedTopology) {
        let mut nodes = Nodes::default();
        for node in topology.nodes() {
            let key = LinkPublicKey(node.descriptor.link_key.to_bytes());
            let address = if self.websocket { node.descriptor.websocket } else { Some(node.descriptor.address) };
            if let Some(address) = address {
                nodes.address.insert(key, address);
            }
            nodes.link_key.insert(node.id, key);
            nodes.node_id.insert(key, node.id);
        }
        *self.nodes.lock().unwrap_or_else(|p| p.into_inner()) = nodes;
    }

    fn link_key(&self, id: &NodeId) -> Option<LinkPublicKey> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).link_key.get(id).copied()
    }

    fn node_id(&self, key: &LinkPublicKey) -> Option<NodeId> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).node_id.get(key).copied()
    }
}

impl PeerDirectory for Directory {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).address.get(peer).copied()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn complete(state: &mut State, done: Completed) {
        if let Some(waiter) = state.waiters.remove(&done.id) {
            let _ = waiter.send(done.result);
        }
    }

    /// After the core changed: stream packets due now (cover off) to send,
    /// and the tasks of changed streams woken.
    fn streams_after(state: &mut State, now: Now) -> Vec<Outgoing> {
        let packets = state.core.poll_streams(now);
        Self::notify_touched(state);
        packets
    }

    /// Wakes the tasks of streams whose state changed.
    fn notify_touched(state: &mut State) {
        for key in state.core.take_touched_streams() {
            if let Some(notify) = state.stream_waiters.get(&key) {
                notify.notify_one();
            }
        }
    }

    /// Whether to drop a packet on purpose (`ClientConfig::inject_loss`).
    fn inject_loss(&self) -> bool {
        let (rate, rng) = &self.loss;
        if *rate <= 0.0 {
            return false;
        }
        let draw = rng.lock().unwrap_or_else(|p| p.into_inner()).next_u64();
        ((draw >> 11) as f64 / (1u64 << 53) as f64) < *rate
    }

    /// Hands stream packets to the stream sender (in order, never dropped for a full link).
    fn send_streams(&self, packets: Vec<Outgoing>) {
        for out in packets {
            let _ = self.stream_out.send(out);
        }
    }

    fn send_now(&self, out: Outgoing) {
        if self.inject_loss() {
            return;
        }
        match self.directory.link_key(&out.entry) {
            Some(key) => {
                if let Err(e) = self.entries.send(&key, out.packet) {
                    tracing::debug!("entry send failed: {e}");
                }
            }
            None => tracing::warn!("entry node missing from the topology"),
        }
    }
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
    pub async fn start(config: ShellConfig) -> Result<ClientHandle, ClientError> {
        Self::start_over(config, Transport::Tcp).await
    }

    /// [`Client::start`], with the links to entries and the reply gateway over `transport`:
    /// `Transport::WebSocket` dials each node's WebSocket endpoint from the topology
    /// (`ws://websocket/`, docs/spec/link.md §5), as a browser does; entries and gateways that
    /// advertise none are avoided.
    pub async fn start_over(mut config: ShellConfig, transport: Transport) -> Result<ClientHandle, ClientError> {
        let setup = |e: &dyn std::fmt::Display| ClientError::Setup(e.to_string());
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
            DialerConfig { transport, ..DialerConfig::client(link) },
            directory.clone(),
            inbound_tx.clone(),
            Arc::new(LinkCounters::default()),
            stop_rx.clone(),
        )
        .map_err(|e| setup(&e))?;
        let gateway_counters = Arc::new(LinkCounters::default());
        let gateway_links = OutboundLinks::new(
            DialerConfig { mailbox: Some(core.mailbox()), transport, ..DialerConfig::client(link) },
            directory.clone(),
            inbound_tx,
            gateway_counters.clone(),
            stop_rx.clone(),
        )
        .map_err(|e| setup(&e))?;
        let gateway = directory.link_key(&core.gateway()).ok_or_else(|| setup(&"gateway not in the topology"))?;
        gateway_links.connect(&gateway).map_err(|e| setup(&e))?;

        let shared = Arc::new(Shared {
            stream_out,
            loss,
            state: Mutex::new(State {
                connected: core.gateway(),
                core,
                waiters: HashMap::new(),
                stream_waiters: HashMap::new(),
            }),
            entries,
            gateway_links,
            directory,
        });
        tokio::spawn(inbound_task(shared.clone(), inbound_rx, stop_rx.clone()));
        tokio::spawn(stream_sender(shared.clone(), stream_rx, stop_rx.clone()));
        tokio::spawn(timer_task(shared.clone(), stop_rx));

        let deadline = tokio::time::Instant::now() + GATEWAY_WAIT;
        while gateway_counters.handshakes_ok.load(Ordering::Relaxed) == 0 {
            if tokio::time::Instant::now() >= deadline {
                return Err(ClientError::Setup(
                    "reply gateway unreachable within 5 s (it must accept client links naming a mailbox)".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(ClientHandle { shared, _stop: Arc::new(stop) })
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
            self.shared.entries.send_wait(&key, out.packet).await.map_err(|_| ClientError::Closed)?;
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }

    /// Switches to a newer topology (see `ClientCore::set_topology`); links
    /// to nodes still listed stay up, and a new gateway is connected with the
    /// same mailbox.
    pub fn set_topology(&self, topology: VerifiedTopology) -> Result<(), ClientError> {
        let changed = {
            let mut state = self.shared.lock();
            // Only a topology the core accepts (same geometry, a usable gateway) replaces the
            // link directory.
            let nodes = topology.clone();
            let changed = state.core.set_topology(topology, Now::system())?;
            self.shared.directory.set(&nodes);
            if let Some(gateway) = changed {
                state.connected = gateway;
            }
            changed
        };
        if let Some(gateway) = changed {
            let key = self.shared.directory.link_key(&gateway).ok_or(ClientError::NoRoute("gateway link".into()))?;
            self.shared.gateway_links.connect(&key).map_err(|e| ClientError::Setup(e.to_string()))?;
            tracing::info!("reply gateway changed with the topology");
        }
        Ok(())
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

/// A stream through the mixnet, from [`ClientHandle::open_stream`]. Dropping
/// it closes the stream (a reset if it was still open).
pub struct MixStream {
    key: RequestId,
    handle: ClientHandle,
    notify: Arc<Notify>,
}

impl MixStream {
    /// Runs `f` on the core, then sends what became due and wakes streams.
    fn flush<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let shared = &self.handle.shared;
        let (value, packets) = {
            let mut state = shared.lock();
            let value = f(&mut state);
            (value, Shared::streams_after(&mut state, Now::system()))
        };
        shared.send_streams(packets);
        value
    }

    /// The stream's state.
    pub fn status(&self) -> StreamStatus {
        let state = self.handle.shared.lock();
        state.core.stream_status(self.key).unwrap_or(StreamStatus {
            opened: false,
            readable: 0,
            eof: true,
            writable: 0,
            closed: true,
            reset: Some(ResetCode::General),
        })
    }

    /// Waits until the exit has connected, or tells why it has not (the
    /// reset code carries the SOCKS5 reply).
    pub async fn opened(&self) -> Result<(), ResetCode> {
        loop {
            let status = self.status();
            if let Some(code) = status.reset {
                return Err(code);
            }
            if status.opened {
                return Ok(());
            }
            self.changed().await;
        }
    }

    /// Waits for a change of state (bytes arrived or were acknowledged, the
    /// stream opened, finished or was reset). May return spuriously.
    pub async fn changed(&self) {
        let _ = tokio::time::timeout(MAX_TICK, self.notify.notified()).await;
    }

    /// Writes what fits; returns how many bytes were taken.
    pub fn write(&self, bytes: &[u8]) -> usize {
        let key = self.key;
        self.flush(|state| state.core.stream_write(key, bytes))
    }

    /// Reads up to `max` bytes received in order.
    pub fn read(&self, max: usize) -> Vec<u8> {
        let key = self.key;
        self.flush(|state| state.core.stream_read(key, max, Now::system()))
    }

    /// No more bytes will be written.
    pub fn finish(&self) {
        let key = self.key;
        self.flush(|state| state.core.stream_finish(key));
    }
}

impl Drop for MixStream {
    fn drop(&mut self) {
        let key = self.key;
        self.flush(|state| {
            state.stream_waiters.remove(&key);
            state.core.stream_close(key);
        });
    }
}

async fn inbound_task(shared: Arc<Shared>, mut inbound: mpsc::Receiver<Inbound>, mut stop: watch::Receiver<bool>) {
    loop {
        let record = tokio::select! {
            r = inbound.recv() => match r { Some(r) => r, None => return },
            _ = stop.changed() => return,
        };
        let from = match record.from {
            PeerIdentity::Node(key) => shared.directory.node_id(&key),
            PeerIdentity::Client(..) => None,
        };
        let now = Now::system();
        {
            let mut state = shared.lock();
            if let Some(done) = state.core.on_downstream(from, &record.packet, now) {
                Shared::complete(&mut state, done);
            }
            // Wake the stream's task before building what is due (SURB
            // refills take milliseconds): it may answer its program first.
            Shared::notify_touched(&mut state);
        }
        let packets = Shared::streams_after(&mut shared.lock(), now);
        shared.send_streams(packets);
    }
}

/// Sends stream packets in order, waiting for room on the entry link.
async fn stream_sender(
    shared: Arc<Shared>,
    mut packets: mpsc::UnboundedReceiver<Outgoing>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let out = tokio::select! {
            out = packets.recv() => match out { Some(out) => out, None => return },
            _ = stop.changed() => return,
        };
        if shared.inject_loss() {
            continue;
        }
        let Some(key) = shared.directory.link_key(&out.entry) else {
            tracing::warn!("entry node missing from the topology");
            continue;
        };
        if let Err(e) = shared.entries.send_wait(&key, out.packet).await {
            tracing::debug!("stream packet not sent: {e}");
        }
    }
}

async fn timer_task(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        let now = Now::system();
        let (due, next, new_gateway) = {
            let mut state = shared.lock();
            let mut due = Vec::new();
            while let Some(out) = state.core.poll_transmit(now) {
                match out {
                    Ok(out) => due.push(out),
                    Err(e) => tracing::warn!("cover packet: {e}"),
                }
            }
            for done in state.core.poll_timeouts(now) {
                Shared::complete(&mut state, done);
            }
            shared.send_streams(Shared::streams_after(&mut state, now));
            let next = [state.core.next_transmit_at(), state.core.next_timeout()].into_iter().flatten().min();
            let new_gateway = Some(state.core.gateway()).filter(|g| *g != state.connected);
            if let Some(gateway) = new_gateway {
                state.connected = gateway;
            }
            (due, next, new_gateway)
        };
        if let Some(gateway) = new_gateway {
            // Loop health marked the gateway degraded: same mailbox, new link.
            match shared.directory.link_key(&gateway).map(|key| shared.gateway_links.connect(&key)) {
                Some(Ok(())) => tracing::info!("reply gateway degraded; switched to another"),
                Some(Err(e)) => tracing::warn!("new reply gateway: {e}"),
                None => tracing::warn!("new reply gateway missing from the topology"),
            }
        }
        for out in due {
            shared.send_now(out);
        }
        let wake = next.map_or(now.at + MAX_TICK, |at| at.min(now.at + MAX_TICK));
        tokio::select! {
            _ = tokio::time::sleep_until(wake.to_std(clock_origin()).map_or_else(far_future, Into::into)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// A wake-up beyond what `std::time::Instant` holds: a day from now (the
/// timer task wakes every [`MAX_TICK`] anyway).
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400)
}
