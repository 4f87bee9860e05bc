//! `nox node`: wires keys, topology, links, the pipeline and metrics into a
//! running node, until shutdown is signalled.

mod links;
mod metrics_server;
mod rotation;

use std::{
    sync::{Arc, RwLock, atomic::Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_keystore::{EpochKeyStore, NodeIdentity, load_identity};
use nox_mixing::MixingConfig;
use nox_relay::Relay;
use nox_replay::BloomParameters;
use nox_sphinx::{Geometry, NodeId};
use nox_topology::{Sender, TopologyDocument, VerifiedTopology, VerifyConfig, VerifyingKey};
use rand_core::SeedableRng;
use tokio::sync::watch;

use self::metrics_server::{MetricSources, serve_metrics};
use crate::{NodeConfig, NodeMetrics, Origin, Pipeline, PipelineConfig, ReplayStore, TagJournal};

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
    /// The WebSocket listener's TLS certificate or key (`websocket_tls_cert`/`_key`) is
    /// missing, malformed or mismatched.
    #[error("WebSocket TLS: {0}")]
    WebSocketTls(#[from] nox_link::transport::TlsError),
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
    /// `[chaos]` in a node built without the `chaos` feature.
    #[error("[chaos]: {}", crate::chaos::NOT_BUILT)]
    ChaosNotBuilt,
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
             (`nox operator register`) before starting the node",
            hex::encode(identity_key)
        )));
    };
    if record.operator != operator {
        return Err(NodeError::NotRegistered(format!(
            "{where_} lists operator {} for this node, the configured operator key is {operator}'s",
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
    if record.socket_addr() != Some(config.node.link_address()) {
        return Err(NodeError::NotRegistered(format!(
            "{where_} lists link address {:?} for this node, its address (advertise, else listen) is {}: update the registration",
            record.link_address,
            config.node.link_address()
        )));
    }
    Ok(())
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
    // The registry snapshot is kept beside the keys, for a restart while the chain's RPC is down.
    let kept_registry = config.node.key_dir.join(crate::trust::REGISTRY_LAST_VERIFIED);
    let trust =
        crate::Trust::from_config(config.topology.authority_key.as_deref(), config.chain.as_ref(), Some(kept_registry))
            .await?;
    let operator = match &config.chain {
        Some(chain_config) => Some(Arc::new(crate::OperatorSigner::load(chain_config, config.operator.as_ref())?)),
        None if config.operator.is_some() => {
            return Err(NodeError::Chain(
                "[operator] needs a [chain] section: the registry it is registered in".into(),
            ));
        }
        None => None,
    };
    if let (Some(chain), Some(operator)) = (trust.chain(), &operator) {
        let snapshot = chain.last().await;
        check_registered(&snapshot, &identity, operator.address(), &config)?;
        tracing::info!(operator = %operator.address(), registry = %snapshot.registry, block = snapshot.block, "registered and active in the node registry");
    }
    // The last topology verified from the directory, for a restart while the directory is down.
    let cache = config.node.key_dir.join(crate::directory_client::LAST_VERIFIED);
    // A directory started empty (issue 33) has no document until every layer has a node: the
    // node then takes the schedule and layer count from its `GET /parameters`, announces its
    // first descriptor and waits for the first document.
    let (topology, schedule, layers) =
        match crate::directory_client::initial_topology(&config.topology, &geometry, &trust, Some(&cache)).await {
            Ok(topology) => {
                let (schedule, layers) = (*topology.schedule(), topology.layers());
                (Some(topology), schedule, layers)
            }
            Err(error) => match crate::directory_client::network_parameters(&config.topology, &geometry).await? {
                Some(p) => {
                    tracing::info!(%error, "the directory has no document yet: announcing this node for the first one");
                    (None, p.schedule, p.layers)
                }
                None => return Err(error),
            },
        };
    let me = identity.node_id();
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();

    // Epoch keys and the relay.
    let mut store = EpochKeyStore::open_for(&config.node.sphinx_key_dir(), schedule, geometry.scheme())?;
    store.rotate(now_unix(), &mut rng)?;
    // A registered node the directory does not name yet announces itself (joining a running
    // network from its configuration alone), and so does every node of a network that has no
    // document yet (with its operator's statements when it has an operator).
    let named = topology.as_ref().is_some_and(|t| t.node(&me).is_some());
    let topology = match (&operator, topology) {
        (_, Some(topology)) if named => topology,
        (None, Some(topology)) => topology,
        (operator, existing) => {
            let now = now_unix();
            let keys = store.public_keys(schedule.published_epochs(now))?;
            let descriptor = identity
                .descriptor_with_endpoints(
                    config.node.link_address(),
                    config.node.websocket_address(),
                    config.node.websocket_tls_cert.is_some(),
                    layers,
                    config.node.pow_difficulty,
                    keys,
                )
                .map_err(|e| NodeError::Topology(e.to_string()))?;
            let descriptor = match operator {
                Some(operator) => operator.attach(descriptor).map_err(NodeError::Chain)?,
                None => descriptor,
            };
            let patience = match existing {
                Some(_) => crate::directory_client::JOIN_TIMEOUT,
                None => crate::directory_client::FIRST_DOCUMENT_TIMEOUT,
            };
            let first =
                crate::directory_client::announce(&config.topology, &geometry, &trust, &descriptor, me, patience)
                    .await?;
            // The unsigned parameters the keys were made for must be the signed document's.
            let expected_from = if existing.is_some() { "the document it started from" } else { "/parameters" };
            crate::directory_client::check_announced_document(&first, (&schedule, layers), expected_from)?;
            first
        }
    };
    let shared = crate::directory_client::SharedTopology::new(topology.clone());
    let my_layer = topology.layer_of(&me).ok_or_else(|| NodeError::NotInTopology(short(&me)))?;
    let publisher = crate::directory_client::spawn(
        &config.topology,
        &geometry,
        &trust,
        operator.clone(),
        identity.clone(),
        config.node.pow_difficulty,
        &shared,
        Some(cache),
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
            rotation::open_epoch(&mut relay, epoch, secret.clone(), loaded, &metrics);
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

    // Links: the listener (TCP, and WebSocket for clients), the dialer, the admission gate.
    let last_layer = topology.layers().get().saturating_sub(1);
    let is_exit = my_layer.0 == last_layer;
    let links::Links { listener, outbound, link_rx, stop_links_tx, link_counters, admission, link, metrics_listener } =
        links::bind(&config, &identity, geometry, &topology, my_layer.0 == 0 || is_exit, &shared).await?;

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
    let egress = handles.egress;

    // Link → pipeline: map the link identity to a topology node.
    let from_links = tokio::spawn(crate::ingress::feed_pipeline(link_rx, shared.clone(), pipeline_in, metrics.clone()));

    // Pipeline → links / exit / clients.
    let sink = match config.exit.sink {
        // A loopback sink is sent to from loopback; another (a testnet's `--hosts` hub) from
        // the route's own address.
        Some(address) => {
            let local = match address {
                std::net::SocketAddr::V4(a) if a.ip().is_loopback() => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
                std::net::SocketAddr::V6(_) => std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            };
            Some((tokio::net::UdpSocket::bind(std::net::SocketAddr::new(local, 0)).await?, address))
        }
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
    // Testing only (builds with the `chaos` feature): loss and delay on this node's links.
    let faults = crate::chaos::from_config(config.chaos.as_ref()).map_err(|_| NodeError::ChaosNotBuilt)?.map(Arc::new);
    if let Some(faults) = &faults {
        outbound.set_shaper(crate::chaos::shaper(faults));
        tracing::warn!("[chaos]: injecting loss and delay on this node's links (testing only)");
    }
    let router = crate::egress::Router {
        me,
        peers: shared.clone(),
        geometry,
        outbound: outbound.clone(),
        listener: listener.clone(),
        health: health.clone(),
        metrics: metrics.clone(),
        exit_metrics: exit_metrics.clone(),
        exit_front,
        sink,
        observer: observer.clone(),
        faults: faults.clone(),
    };
    let to_links = tokio::spawn(router.run(egress));

    // Epoch rotation: create, load and erase keys; open and retire replay caches.
    let rotation = tokio::spawn(
        rotation::Rotation {
            schedule,
            store,
            rng,
            publisher,
            relay: relay.clone(),
            journal: journal.clone(),
            bloom,
            metrics: metrics.clone(),
        }
        .run(shutdown.clone()),
    );

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
        let sources = MetricSources {
            node: metrics.clone(),
            exit: exit_metrics,
            handler: metrics_handler,
            links: link_counters,
            chaos: faults,
        };
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
