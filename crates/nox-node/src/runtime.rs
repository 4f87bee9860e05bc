//! `nox node`: wires keys, topology, links, the pipeline and metrics into a
//! running node, until shutdown is signalled.

use std::{
    sync::{Arc, RwLock, atomic::Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_keystore::{EpochKeyStore, NodeIdentity, load_identity};
use nox_link::{
    LinkConfig, LinkKeypair,
    transport::{DialerConfig, LinkCounters, Listener, ListenerConfig, OutboundLinks},
};
use nox_mixing::MixingConfig;
use nox_relay::Relay;
use nox_replay::BloomParameters;
use nox_sphinx::{Geometry, NodeId};
use nox_topology::{Sender, TopologyDocument, VerifiedTopology, VerifyConfig, VerifyingKey};
use rand_core::SeedableRng;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::{mpsc, watch},
};

use crate::{Egress, NodeConfig, NodeMetrics, Origin, Pipeline, PipelineConfig, ReplayStore, TagJournal, forward_link};

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Keys could not be loaded or created.
    #[error("keys: {0}")]
    Keys(#[from] nox_keystore::KeystoreError),
    /// The topology file is missing, malformed or fails verification.
    #[error("topology: {0}")]
    Topology(String),
    /// This node is not in the topology (or with other keys).
    #[error("this node ({0}) is not in the topology")]
    NotInTopology(String),
    /// Sockets or threads.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The link layer refused its configuration.
    #[error("links: {0}")]
    Link(String),
    /// The `[admission]` section is unusable.
    #[error("{0}")]
    Admission(#[from] crate::AdmissionError),
    /// The registry could not be read or verified (`[chain]`).
    #[error("chain: {0}")]
    Chain(String),
    /// The registry does not list this node as configured.
    #[error("{0}")]
    NotRegistered(String),
    /// The configured Sphinx scheme gives no valid geometry.
    #[error("geometry: {0}")]
    Geometry(nox_sphinx::SphinxError),
    /// `[observe]` in a node built without the `observe` feature.
    #[error("[observe]: {}", crate::observe::NOT_BUILT)]
    ObserveNotBuilt,
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Reads a topology document and verifies it against the authority's key
/// (hex) and our geometry, at the current time.
pub fn load_topology(
    file: &std::path::Path,
    authority_key: &str,
    geometry: &Geometry,
) -> Result<VerifiedTopology, NodeError> {
    let bytes = std::fs::read(file).map_err(|e| NodeError::Topology(format!("{}: {e}", file.display())))?;
    let document = TopologyDocument::from_json(&bytes).map_err(|e| NodeError::Topology(e.to_string()))?;
    let key_bytes: [u8; 32] =
        hex_32(authority_key).ok_or_else(|| NodeError::Topology("authority_key must be 32 bytes of hex".into()))?;
    let authority =
        VerifyingKey::from_bytes(&key_bytes).map_err(|e| NodeError::Topology(format!("authority_key: {e}")))?;
    let verify = VerifyConfig::new(authority, *geometry);
    document.verify(&verify, now_unix()).map_err(|e| NodeError::Topology(e.to_string()))
}

/// Reads a topology document and verifies it under `trust` (authority or registry) now.
pub async fn load_topology_with(
    file: &std::path::Path,
    trust: &crate::Trust,
    geometry: &Geometry,
) -> Result<VerifiedTopology, NodeError> {
    let bytes = std::fs::read(file).map_err(|e| NodeError::Topology(format!("{}: {e}", file.display())))?;
    let document = TopologyDocument::from_json(&bytes).map_err(|e| NodeError::Topology(e.to_string()))?;
    trust.verify(&document, geometry, now_unix()).await.map_err(NodeError::Topology)
}

/// With `[chain]`: the registry must list this node's identity with its link key and listen
/// address, or the node refuses to run (it would be left out of every verified topology).
fn check_registered(
    snapshot: &nox_chain::RegistrySnapshot,
    identity: &NodeIdentity,
    operator: nox_chain::Address,
    config: &NodeConfig,
) -> Result<(), NodeError> {
    let identity_key = identity.public().identity_key.to_bytes();
    let where_ = format!("registry {} on chain {} at block {}", snapshot.registry, snapshot.chain_id, snapshot.block);
    let Some(record) = snapshot.by_identity(&identity_key) else {
        return Err(NodeError::NotRegistered(format!(
            "this node's identity key {} is not registered (or no longer active) in {where_}: register it with a stake \
             (NodeRegistry.register) before starting the node",
            hex::encode(identity_key)
        )));
    };
    if record.operator != operator {
        return Err(NodeError::NotRegistered(format!(
            "{where_} lists operator {} for this node, the operator key file is {operator}'s",
            record.operator
        )));
    }
    let link_key = identity.public().link_key.to_bytes();
    if record.link_key != link_key {
        return Err(NodeError::NotRegistered(format!(
            "{where_} lists link key {} for this node, its key is {}: update the registration",
            hex::encode(record.link_key),
            hex::encode(link_key)
        )));
    }
    if record.socket_addr() != Some(config.node.listen) {
        return Err(NodeError::NotRegistered(format!(
            "{where_} lists link address {:?} for this node, it listens on {}: update the registration",
            record.link_address, config.node.listen
        )));
    }
    Ok(())
}

/// Time until just after the next key-epoch boundary (50 ms past it, so `now_unix` is already in
/// the new epoch).
fn until_next_epoch(schedule: &nox_topology::EpochSchedule) -> Option<Duration> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    let next = schedule.epoch_start(schedule.epoch_at(now.as_secs()).checked_add(1)?);
    Some(Duration::from_secs(next).checked_sub(now).unwrap_or_default() + Duration::from_millis(50))
}

fn hex_32(text: &str) -> Option<[u8; 32]> {
    hex::decode(text.trim()).ok()?.try_into().ok()
}

/// Runs the node until `shutdown` turns true, answering exit requests with
/// the echo service only. See [`run_with`].
pub async fn run(config: NodeConfig, shutdown: watch::Receiver<bool>) -> Result<(), NodeError> {
    run_with(config, Arc::new(crate::EchoOnly), shutdown).await
}

/// Runs the node until `shutdown` turns true; as an exit (last layer) it
/// performs requests with `exit_handler`. Returns after a graceful stop:
/// links closed, the mixer drained at its scheduled times.
pub async fn run_with(
    config: NodeConfig,
    exit_handler: Arc<dyn crate::ExitHandler>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    // The configured scheme's geometry: a topology of another geometry is refused
    // (TopologyError::GeometryMismatch), and so are packets of another geometry.
    let geometry = config.node.geometry().map_err(NodeError::Geometry)?;
    let identity: NodeIdentity = load_identity(&config.node.key_dir)?;
    let trust = crate::Trust::from_config(config.topology.authority_key.as_deref(), config.chain.as_ref()).await?;
    let operator = match &config.chain {
        Some(chain_config) => Some(Arc::new(crate::OperatorSigner::load(chain_config)?)),
        None => None,
    };
    if let (Some(chain), Some(operator)) = (trust.chain(), &operator) {
        check_registered(&*chain.last().await, &identity, operator.address(), &config)?;
    }
    let topology = crate::directory_client::initial_topology(&config.topology, &geometry, &trust).await?;
    let shared = crate::directory_client::SharedTopology::new(topology.clone());
    let me = identity.node_id();
    let my_layer = topology.layer_of(&me).ok_or_else(|| NodeError::NotInTopology(short(&me)))?;
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();

    // Epoch keys and the relay.
    let schedule = *topology.schedule();
    let mut store = EpochKeyStore::open_for(&config.node.sphinx_key_dir(), schedule, geometry.scheme())?;
    store.rotate(now_unix(), &mut rng)?;
    let publisher = crate::directory_client::spawn(
        &config.topology,
        &geometry,
        &trust,
        operator.clone(),
        identity.clone(),
        config.node.pow_difficulty,
        &shared,
        &shutdown,
    )?;
    publisher.offer(&store, now_unix());
    let bloom = BloomParameters::for_capacity(config.replay.capacity, config.replay.false_positive_rate)
        .map_err(|e| NodeError::Topology(format!("replay parameters: {e}")))?;
    let replay_dir = config.replay.dir.clone().unwrap_or_else(|| config.node.key_dir.join("replay"));
    // An unusable replay directory stops the start; a lost epoch (damaged
    // journal, unreadable snapshot) only refuses that epoch's packets.
    let journal = Arc::new(ReplayStore::open(&replay_dir)?);
    let metrics = Arc::new(NodeMetrics::default());
    let mut relay = Relay::new(geometry);
    for epoch in store.loaded_epochs().collect::<Vec<_>>() {
        if let Some(secret) = store.secret(epoch) {
            let loaded = journal.load(epoch, bloom);
            open_epoch(&mut relay, epoch, secret.clone(), loaded, &metrics);
        }
    }
    let relay = Arc::new(RwLock::new(relay));
    let (tags, sync_thread) = TagJournal::spawn(journal.clone(), config.replay.group_commit(), metrics.clone())?;
    metrics.epoch.store(u64::from(schedule.epoch_at(now_unix())), Ordering::Relaxed);
    metrics.pow_difficulty.store(u64::from(config.node.pow_difficulty), Ordering::Relaxed);
    let _ = metrics.topology.set(shared.clone());
    if let Some(chain) = trust.chain() {
        let _ = metrics.chain.set(chain.clone());
    }

    // Links.
    let keypair = Arc::new(
        LinkKeypair::from_secret_bytes(*identity.link_secret().as_bytes())
            .map_err(|e| NodeError::Link(e.to_string()))?,
    );
    let link = LinkConfig::new(geometry).map_err(|e| NodeError::Link(e.to_string()))?;
    let mut listener_config = ListenerConfig::new(link, keypair.clone(), Arc::new(shared.clone()));
    // Clients send to entries (layer 0) and receive replies from their
    // gateway (last layer); the position rule drops anything a client sends
    // to a last-layer node.
    let last_layer = topology.layers().get().saturating_sub(1);
    let is_exit = my_layer.0 == last_layer;
    listener_config.accept.clients = my_layer.0 == 0 || is_exit;
    // Node addresses only defer the gate's decision to after the handshake; the
    // exemption itself is keyed on the authenticated link key.
    let node_ips = topology.nodes().iter().map(|n| n.descriptor.address.ip());
    let gate = Arc::new(crate::AdmissionGate::new(&config.admission, node_ips));
    listener_config.gate = gate.clone();
    let ids = topology.nodes().iter().map(|n| n.id);
    let admission =
        Arc::new(crate::IngestAdmission::new(&config.admission, config.node.pow_difficulty, ids)?.with_offences(gate));
    if listener_config.accept.clients {
        listener_config.client_greeting = Some(crate::difficulty_greeting(admission.clone(), link.packet_len()));
    }
    let link_counters = Arc::new(LinkCounters::default());
    // Bound here, not in its task: a metrics address that cannot be bound stops the node with
    // the reason instead of leaving it running without the metrics it was configured to serve.
    let metrics_listener = match config.node.metrics {
        Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            NodeError::Io(std::io::Error::new(e.kind(), format!("binding the metrics address {addr}: {e}")))
        })?),
        None => None,
    };
    let (link_tx, mut link_rx) = mpsc::channel::<nox_link::transport::Inbound>(config.pipeline.queue.max(1));
    let (stop_links_tx, stop_links) = watch::channel(false);
    let accepts_clients = listener_config.accept.clients;
    let mut listener =
        Listener::bind(config.node.listen, listener_config, link_tx.clone(), link_counters.clone(), stop_links.clone())
            .await?;
    // Browsers reach entries and gateways over WebSocket: the same client links, gate, limits,
    // proof of work and rate tiers as over TCP (docs/spec/link.md §5).
    match config.node.websocket_listen {
        Some(addr) if accepts_clients => {
            let bound =
                listener.bind_websocket(addr, nox_link::transport::WsListenerConfig::default()).await.map_err(|e| {
                    NodeError::Io(std::io::Error::new(e.kind(), format!("binding the WebSocket address {addr}: {e}")))
                })?;
            tracing::info!(%bound, "accepting client links over WebSocket");
        }
        Some(_) => tracing::warn!("websocket_listen ignored: this node's layer takes no client links"),
        None => {}
    }
    let listener = Arc::new(listener);
    let outbound = OutboundLinks::new(
        DialerConfig::node(link, keypair),
        Arc::new(shared.clone()),
        link_tx,
        link_counters.clone(),
        stop_links,
    )?;

    // Pipeline.
    let workers = if config.pipeline.workers == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        config.pipeline.workers
    };
    let queue = config.pipeline.queue.max(1);
    let mut mixing = MixingConfig::new(config.mixing.mean_delay(), config.mixing.capacity);
    mixing.max_given_delay = Duration::from_secs(60);
    let pipeline_config = PipelineConfig {
        workers,
        inbound_queue: queue,
        worker_queue: queue,
        mixer_queue: queue,
        egress_queue: queue,
        mixing,
    };
    let rule = shared.clone();
    let origin_allowed: Arc<dyn Fn(&Origin) -> bool + Send + Sync> = Arc::new(move |origin| match origin {
        Origin::Client => rule.current().position_allowed(&me, Sender::Client),
        Origin::Node(id) => rule.current().position_allowed(&me, Sender::Node(*id)),
    });
    let handles = Pipeline::spawn(
        relay.clone(),
        Some(tags),
        origin_allowed,
        admission.clone(),
        pipeline_config,
        metrics.clone(),
    )?;
    let pipeline_in = handles.inbound.clone();
    let adaptive_pow = crate::admission::spawn_entry_pow(
        my_layer.0 == 0,
        &config.admission,
        config.node.pow_difficulty,
        admission,
        listener.clone(),
        metrics.clone(),
        link.packet_len(),
        shutdown.clone(),
    )?;
    let mut egress = handles.egress;

    // Link → pipeline: map the link identity to a topology node.
    let from_links = {
        let (peers, metrics) = (shared.clone(), metrics.clone());
        tokio::spawn(async move {
            while let Some(frame) = link_rx.recv().await {
                // The arrival instant is the link's read, carried with the frame.
                let Some(inbound) = crate::from_link(frame, &peers) else {
                    metrics.wrong_layer.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                if pipeline_in.try_send(inbound).is_err() {
                    metrics.count_drop(nox_relay::DropReason::QueueFull);
                }
            }
        })
    };

    // Pipeline → links / exit / clients.
    let sink = match config.exit.sink {
        Some(address) => Some((tokio::net::UdpSocket::bind(("127.0.0.1", 0)).await?, address)),
        None => None,
    };
    let health = crate::cover::health(&config.cover);
    let exit_metrics = Arc::new(crate::ExitMetrics::default());
    let metrics_handler = is_exit.then(|| exit_handler.clone());
    let exit_front = is_exit.then(|| {
        let peers = shared.clone();
        Arc::new(crate::ExitFront::new(
            geometry,
            exit_handler,
            outbound.clone(),
            Arc::new(move |id: &NodeId| peers.link_key_of(id)),
            exit_metrics.clone(),
            crate::ReplyPolicy {
                loss_estimate: config.exit.reply_loss_estimate,
                target: config.exit.reply_target,
                inject_loss: config.exit.inject_reply_loss,
            },
        ))
    });
    // Measurement only (benchmark builds): what a global passive adversary sees.
    let observer = observer(config.observe.as_ref(), &me)?;
    let to_links = {
        let (peers, metrics, outbound, health) = (shared.clone(), metrics.clone(), outbound.clone(), health.clone());
        let (listener, exit_metrics, observer) = (listener.clone(), exit_metrics.clone(), observer.clone());
        tokio::spawn(async move {
            while let Some(out) = egress.recv().await {
                match out {
                    Egress::Forward { to, packet, received_at } => match forward_link(&peers, &me, &to) {
                        Ok(key) => {
                            if outbound.send(&key, packet).is_ok() {
                                metrics.forwarded.fetch_add(1, Ordering::Relaxed);
                                if let Some(observer) = &observer {
                                    observer.forward(&to, received_at);
                                }
                            } else {
                                metrics.count_drop(nox_relay::DropReason::QueueFull);
                            }
                        }
                        Err(refused) => refused.count(&metrics),
                    },
                    Egress::Deliver { packet, payload, received_at } => {
                        let Some(bytes) = packet.get(payload) else { continue };
                        if crate::cover::consume_delivery(bytes, &health, &metrics) {
                            continue;
                        }
                        metrics.delivered.fetch_add(1, Ordering::Relaxed);
                        if let Some(observer) = &observer {
                            observer.deliver(bytes, received_at);
                        }
                        if let Some((socket, address)) = &sink {
                            let _ = socket.try_send_to(&bytes[..bytes.len().min(64)], *address);
                        }
                        if let Some(exit) = &exit_front {
                            exit.deliver(bytes);
                        }
                    }
                    Egress::Reply { recipient, surb_id, packet, .. } => {
                        if crate::exit::deliver_to_mailbox(
                            &listener,
                            &geometry,
                            &recipient,
                            &surb_id,
                            packet,
                            &exit_metrics,
                        ) {
                            metrics.replies.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    };

    // Epoch rotation: create, load and erase keys; open and retire replay caches.
    let rotation = {
        let (relay, metrics, mut shutdown, journal) =
            (relay.clone(), metrics.clone(), shutdown.clone(), journal.clone());
        tokio::spawn(async move {
            let period = (schedule.overlap() / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
            loop {
                // Every `period`, and right after each epoch boundary: the new epoch's key (created
                // and published an epoch ahead) must be open before clients switch to it, half an
                // overlap after the boundary — a periodic tick alone could open it up to a whole
                // period late.
                let pause = until_next_epoch(&schedule).map_or(period, |boundary| boundary.min(period));
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = shutdown.wait_for(|stop| *stop) => return,
                }
                let now = now_unix();
                let Ok(rotation) = store.rotate(now, &mut rng) else { continue };
                publisher.offer(&store, now);
                let fresh: Vec<u32> = match relay.read() {
                    Ok(relay) => store
                        .loaded_epochs()
                        .filter(|e| !relay.epochs().any(|have| have == *e) && !relay.is_refused(*e))
                        .collect(),
                    Err(_) => return,
                };
                for epoch in fresh {
                    let Some(secret) = store.secret(epoch) else { continue };
                    // Disk work (read, sync) before taking the lock the workers need.
                    let loaded = journal.load(epoch, bloom);
                    let Ok(mut relay) = relay.write() else { return };
                    open_epoch(&mut relay, epoch, secret.clone(), loaded, &metrics);
                }
                if let (Some(oldest), Ok(mut relay)) = (store.loaded_epochs().min(), relay.write()) {
                    relay.retire_before(oldest);
                    metrics.replay_refused_epochs.store(relay.refused_epochs().count() as u64, Ordering::Relaxed);
                }
                for epoch in rotation.erased {
                    if let Err(error) = journal.retire(epoch) {
                        tracing::warn!(epoch, %error, "could not delete a retired epoch's replay files");
                    }
                }
                metrics.epoch.store(u64::from(schedule.epoch_at(now)), Ordering::Relaxed);
            }
        })
    };

    let cover = tokio::spawn(
        crate::cover::CoverTask {
            section: config.cover.clone(),
            me,
            topology: shared.clone(),
            geometry,
            outbound: outbound.clone(),
            health,
            metrics: metrics.clone(),
            observer,
        }
        .run(shutdown.clone()),
    );
    let metrics_server = metrics_listener.map(|listener| {
        let exit_metrics = exit_metrics.clone();
        let sources =
            MetricSources { node: metrics.clone(), exit: exit_metrics, handler: metrics_handler, links: link_counters };
        tokio::spawn(serve_metrics(listener, Arc::new(sources), shutdown.clone()))
    });
    tracing::info!(
        node = %short(&me),
        layer = my_layer.0,
        listen = %listener.local_addr(),
        workers,
        mean_delay_ms = config.mixing.mean_delay_ms,
        loop_rate = config.cover.loop_rate,
        drop_rate = config.cover.drop_rate,
        "node started"
    );

    let _ = shutdown.wait_for(|stop| *stop).await;
    tracing::info!(node = %short(&me), "shutting down");
    let _ = stop_links_tx.send(true);
    from_links.abort();
    drop(handles.inbound);
    let _ = tokio::time::timeout(Duration::from_secs(10), handles.finished).await;
    // Nothing records any more: sync what is pending and stop the sync thread.
    let _ = tokio::task::spawn_blocking(move || sync_thread.finish()).await;
    // Every worker has stopped: snapshot the replay caches for the restart.
    if let Ok(relay) = relay.read() {
        for epoch in relay.epochs().collect::<Vec<_>>() {
            if let Some(cache) = relay.replay_cache(epoch)
                && let Err(error) = journal.snapshot(cache)
            {
                tracing::warn!(epoch, %error, "replay snapshot failed; the journal still holds the tags");
            }
        }
    }
    to_links.abort();
    rotation.abort();
    cover.abort();
    if let Some(task) = adaptive_pow {
        task.abort();
    }
    if let Some(server) = metrics_server {
        server.abort();
    }
    outbound.join().await;
    Ok(())
}

/// Opens `epoch` with its loaded replay state, or — if the state is lost
/// (damaged journal, unreadable snapshot, I/O error) — refuses the epoch's
/// packets until it ends, logging why.
fn open_epoch(
    relay: &mut Relay,
    epoch: u32,
    secret: nox_sphinx::SecretKey,
    loaded: Result<(nox_replay::ReplayCache, usize), crate::ReplayStateError>,
    metrics: &NodeMetrics,
) {
    match loaded {
        Ok((cache, recovered)) => {
            if recovered > 0 {
                tracing::info!(epoch, recovered, "replay cache restored from its journal");
            }
            relay.open_epoch_with(epoch, secret, cache);
        }
        Err(error) => {
            tracing::error!(
                epoch,
                %error,
                kind = error.kind(),
                "replay state of this key epoch is lost: its packets are refused until the epoch ends \
                 (nox_packets_dropped_total{{reason=\"replay_state_lost\"}})"
            );
            relay.refuse_epoch(epoch);
            metrics.replay_refused_epochs.store(relay.refused_epochs().count() as u64, Ordering::Relaxed);
        }
    }
}

/// The `[observe]` recorder, in a build with the `observe` feature.
#[cfg(feature = "observe")]
fn observer(section: Option<&crate::ObserveSection>, me: &NodeId) -> Result<Option<Arc<crate::Observer>>, NodeError> {
    match section {
        Some(section) => Ok(crate::Observer::start(section, me)?.map(Arc::new)),
        None => Ok(None),
    }
}

/// Without the `observe` feature: `[observe]` is refused (also when the configuration was
/// built in code rather than loaded).
#[cfg(not(feature = "observe"))]
fn observer(section: Option<&crate::ObserveSection>, _me: &NodeId) -> Result<Option<Arc<crate::Observer>>, NodeError> {
    match section {
        Some(_) => Err(NodeError::ObserveNotBuilt),
        None => Ok(None),
    }
}

fn short(id: &NodeId) -> String {
    id.0[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// What `/metrics` renders.
struct MetricSources {
    node: Arc<NodeMetrics>,
    exit: Arc<crate::ExitMetrics>,
    /// The exit handler's own counters (streams), on exits.
    handler: Option<Arc<dyn crate::ExitHandler>>,
    links: Arc<LinkCounters>,
}

impl MetricSources {
    fn render(&self) -> String {
        let handler = self.handler.as_ref().map(|h| h.render_metrics()).unwrap_or_default();
        self.node.render() + &self.exit.render() + &handler + &render_link_counters(&self.links)
    }
}

/// A minimal HTTP/1.1 responder for `GET /metrics` (and nothing else).
async fn serve_metrics(
    listener: tokio::net::TcpListener,
    sources: Arc<MetricSources>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
        };
        // An accept error (out of file descriptors, a connection reset before
        // it was taken) is transient: say so and go on serving, instead of
        // ending the task and leaving the node without metrics, unnoticed.
        let mut stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics: accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let sources = sources.clone();
        tokio::spawn(async move {
            let mut request = [0u8; 2048];
            let read = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut request)).await;
            let Ok(Ok(n)) = read else { return };
            let ok = request[..n].starts_with(b"GET /metrics ");
            let body = if ok { sources.render() } else { "not found\n".into() };
            let status = if ok { "200 OK" } else { "404 Not Found" };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}

fn render_link_counters(links: &LinkCounters) -> String {
    let mut out =
        String::from("# HELP nox_link_events_total Link-layer events by kind.\n# TYPE nox_link_events_total counter\n");
    for (name, value) in links.snapshot().pairs() {
        out.push_str(&format!("nox_link_events_total{{event=\"{name}\"}} {value}\n"));
    }
    out
}
