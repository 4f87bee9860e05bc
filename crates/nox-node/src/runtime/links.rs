//! The node's links: the listener (TCP for nodes and clients, WebSocket for browser clients at
//! entries and gateways), the dialer to the next layer, the admission gate in front of both, and
//! the metrics address (bound here so that an address that cannot be bound stops the start).

use std::sync::Arc;

use nox_keystore::NodeIdentity;
use nox_link::{
    LinkConfig, LinkKeypair,
    transport::{DialerConfig, LinkCounters, Listener, ListenerConfig, OutboundLinks},
};
use nox_sphinx::Geometry;
use nox_topology::VerifiedTopology;
use tokio::sync::{mpsc, watch};

use super::NodeError;
use crate::{NodeConfig, SharedTopology};

/// How often the WebSocket TLS certificate and key files are checked for a renewal.
const TLS_RELOAD_PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

/// What [`bind`] sets up.
pub(super) struct Links {
    pub(super) listener: Arc<Listener>,
    pub(super) outbound: OutboundLinks,
    /// Frames from every link, for the pipeline.
    pub(super) link_rx: mpsc::Receiver<nox_link::transport::Inbound>,
    /// `true` closes every link.
    pub(super) stop_links_tx: watch::Sender<bool>,
    pub(super) link_counters: Arc<LinkCounters>,
    /// Ingest admission (PoW, rate tiers), which reports offences to the gate.
    pub(super) admission: Arc<crate::IngestAdmission>,
    pub(super) link: LinkConfig,
    pub(super) metrics_listener: Option<tokio::net::TcpListener>,
}

/// Binds the listener(s) and the metrics address and creates the dialer. `accepts_clients`:
/// clients send to entries (layer 0) and receive replies from their gateway (last layer); the
/// position rule drops anything a client sends to a last-layer node.
pub(super) async fn bind(
    config: &NodeConfig,
    identity: &NodeIdentity,
    geometry: Geometry,
    topology: &VerifiedTopology,
    accepts_clients: bool,
    shared: &SharedTopology,
) -> Result<Links, NodeError> {
    let keypair = Arc::new(
        LinkKeypair::from_secret_bytes(*identity.link_secret().as_bytes())
            .map_err(|e| NodeError::Link(e.to_string()))?,
    );
    let link = LinkConfig::new(geometry).map_err(|e| NodeError::Link(e.to_string()))?;
    let mut listener_config = ListenerConfig::new(link, keypair.clone(), Arc::new(shared.clone()));
    listener_config.accept.clients = accepts_clients;
    // Node addresses only defer the gate's decision to after the handshake; the
    // exemption itself is keyed on the authenticated link key.
    let node_ips = topology.nodes().iter().map(|n| n.descriptor.address.ip());
    let gate = Arc::new(crate::AdmissionGate::new(&config.admission, node_ips));
    listener_config.gate = gate.clone();
    let ids = topology.nodes().iter().map(|n| n.id);
    let admission =
        Arc::new(crate::IngestAdmission::new(&config.admission, config.node.pow_difficulty, ids)?.with_offences(gate));
    if accepts_clients {
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
    let (link_tx, link_rx) = mpsc::channel::<nox_link::transport::Inbound>(config.pipeline.queue.max(1));
    let (stop_links_tx, stop_links) = watch::channel(false);
    let mut listener =
        Listener::bind(config.node.listen, listener_config, link_tx.clone(), link_counters.clone(), stop_links.clone())
            .await?;
    // Browsers reach entries and gateways over WebSocket: the same client links, gate, limits,
    // proof of work and rate tiers as over TCP (docs/spec/link.md §5).
    match config.node.websocket_listen {
        Some(addr) if accepts_clients => {
            let ws = nox_link::transport::WsListenerConfig::default();
            let binding = |e: std::io::Error| {
                NodeError::Io(std::io::Error::new(e.kind(), format!("binding the WebSocket address {addr}: {e}")))
            };
            match (&config.node.websocket_tls_cert, &config.node.websocket_tls_key) {
                (Some(cert), Some(key)) => {
                    // Read (and checked) before binding: a bad pair stops the start.
                    let certificate = nox_link::transport::TlsCertificate::load(cert, key)?;
                    let tls = certificate.server_config()?;
                    let bound = listener.bind_websocket_tls(addr, ws, tls).await.map_err(binding)?;
                    // Renewals on disk are picked up without a restart.
                    certificate.watch(TLS_RELOAD_PERIOD, stop_links.clone());
                    tracing::info!(%bound, "accepting client links over WebSocket with TLS (wss://)");
                }
                _ => {
                    let bound = listener.bind_websocket(addr, ws).await.map_err(binding)?;
                    tracing::info!(%bound, "accepting client links over WebSocket");
                }
            }
        }
        Some(_) => tracing::warn!("websocket_listen ignored: this node's layer takes no client links"),
        None => {}
    }
    let outbound = OutboundLinks::new(
        DialerConfig::node(link, keypair),
        Arc::new(shared.clone()),
        link_tx,
        link_counters.clone(),
        stop_links,
    )?;
    Ok(Links {
        listener: Arc::new(listener),
        outbound,
        link_rx,
        stop_links_tx,
        link_counters,
        admission,
        link,
        metrics_listener,
    })
}
