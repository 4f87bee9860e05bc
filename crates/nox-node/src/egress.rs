//! Egress's own check of a forward: a processed packet leaves only for a node of the layer
//! after ours (`(layer + 1) mod L`, the exit's successor being the entry layer where SURB
//! replies start back). A packet whose routing block names any other node is dropped here and
//! counted (`nox_packets_dropped_total{reason="egress_not_next_layer"}`), rather than sent for the
//! receiver to drop: a misrouted packet never reaches the wire, so a wrong next hop cannot be
//! used to make this node talk to arbitrary peers.

use nox_link::LinkPublicKey;
use nox_sphinx::NodeId;
use nox_topology::Sender;

use crate::SharedTopology;

/// Why egress did not send a forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForwardRefused {
    /// The next hop is not a node of the layer after ours.
    #[error("next hop is not in the next layer")]
    NotNextLayer,
    /// The next hop has no link key in the current topology.
    #[error("next hop is not in the topology")]
    UnknownNode,
}

impl ForwardRefused {
    /// Counts the refusal: `egress_not_next_layer`, or a malformed drop for an unknown node.
    pub fn count(self, metrics: &crate::NodeMetrics) {
        match self {
            Self::NotNextLayer => {
                metrics.egress_not_next_layer.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Self::UnknownNode => metrics.count_drop(nox_relay::DropReason::Malformed),
        }
    }
}

/// Where released packets go: forwards to the next layer's links, deliveries to the exit (cover
/// consumed, the measurement sink, the exit front), replies to the client's mailbox.
pub(crate) struct Router {
    pub(crate) me: NodeId,
    pub(crate) peers: SharedTopology,
    pub(crate) geometry: nox_sphinx::Geometry,
    pub(crate) outbound: nox_link::transport::OutboundLinks,
    pub(crate) listener: std::sync::Arc<nox_link::transport::Listener>,
    pub(crate) health: crate::cover::Health,
    pub(crate) metrics: std::sync::Arc<crate::NodeMetrics>,
    pub(crate) exit_metrics: std::sync::Arc<crate::ExitMetrics>,
    pub(crate) exit_front: Option<std::sync::Arc<crate::ExitFront>>,
    /// Exits send the first 64 bytes of each delivered payload here (a measurement sink).
    pub(crate) sink: Option<(tokio::net::UdpSocket, std::net::SocketAddr)>,
    /// Measurement only (benchmark builds): what a global passive adversary sees.
    pub(crate) observer: Option<std::sync::Arc<crate::Observer>>,
    /// Testing only (`[chaos]`): loss and delay on the hand-over to a client's mailbox (node
    /// links are shaped by the link layer itself).
    pub(crate) faults: Option<std::sync::Arc<crate::chaos::LinkFaults>>,
}

impl Router {
    /// Routes every released packet until the pipeline closes.
    pub(crate) async fn run(self, mut egress: tokio::sync::mpsc::Receiver<crate::Egress>) {
        use std::sync::atomic::Ordering;
        let metrics = &self.metrics;
        while let Some(out) = egress.recv().await {
            match out {
                crate::Egress::Forward { to, packet, received_at } => match forward_link(&self.peers, &self.me, &to) {
                    Ok(key) => {
                        if self.outbound.send(&key, packet).is_ok() {
                            metrics.forwarded.fetch_add(1, Ordering::Relaxed);
                            if let Some(observer) = &self.observer {
                                observer.forward(&to, received_at);
                            }
                        } else {
                            metrics.count_drop(nox_relay::DropReason::QueueFull);
                        }
                    }
                    Err(refused) => refused.count(metrics),
                },
                crate::Egress::Deliver { packet, payload, received_at } => {
                    let Some(bytes) = packet.get(payload) else { continue };
                    if crate::cover::consume_delivery(bytes, &self.health, metrics) {
                        continue;
                    }
                    metrics.delivered.fetch_add(1, Ordering::Relaxed);
                    if let Some(observer) = &self.observer {
                        observer.deliver(bytes, received_at);
                    }
                    if let Some((socket, address)) = &self.sink {
                        let _ = socket.try_send_to(&bytes[..bytes.len().min(64)], *address);
                    }
                    if let Some(exit) = &self.exit_front {
                        exit.deliver(bytes);
                    }
                }
                crate::Egress::Reply { recipient, surb_id, packet, .. } => {
                    match self.faults.as_ref().map(|f| f.decide()) {
                        None | Some(crate::chaos::Fault::Pass) => {}
                        Some(crate::chaos::Fault::Drop) => continue,
                        Some(crate::chaos::Fault::Delay(delay)) => {
                            let (listener, geometry) = (self.listener.clone(), self.geometry);
                            let (metrics, exit_metrics) = (self.metrics.clone(), self.exit_metrics.clone());
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
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
                            });
                            continue;
                        }
                    }
                    if crate::exit::deliver_to_mailbox(
                        &self.listener,
                        &self.geometry,
                        &recipient,
                        &surb_id,
                        packet,
                        &self.exit_metrics,
                    ) {
                        metrics.replies.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

/// The link key to send `me`'s forward for `to` on, if `to` is in the next layer of the
/// current topology.
pub fn forward_link(peers: &SharedTopology, me: &NodeId, to: &NodeId) -> Result<LinkPublicKey, ForwardRefused> {
    if !peers.current().position_allowed(to, Sender::Node(*me)) {
        return Err(ForwardRefused::NotNextLayer);
    }
    peers.link_key_of(to).ok_or(ForwardRefused::UnknownNode)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use std::time::Duration;

    use nox_sphinx::{Geometry, SecretKey};
    use nox_topology::{
        DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey as TopologyLinkKey, NodeDescriptor,
        SigningKey, node_id_of,
    };
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    use super::*;

    /// Two nodes per layer, 3 layers; returns the topology and the ids by layer.
    pub(crate) fn topology() -> (SharedTopology, Vec<Vec<NodeId>>) {
        let now = 1_000_000;
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let schedule = EpochSchedule::new(0, Duration::from_secs(3600), Duration::from_secs(300), 1).unwrap();
        let layers = LayerCount::new(3).unwrap();
        let mut builder = DocumentBuilder::new(Geometry::default(), schedule);
        let mut by_layer = vec![Vec::new(); 3];
        let mut port = 9200;
        while by_layer.iter().any(|l| l.len() < 2) {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            let identity = SigningKey::from_bytes(&seed);
            let id = node_id_of(&identity.verifying_key());
            let layer = layers.assign(&id).index();
            if by_layer[layer].len() == 2 {
                continue;
            }
            by_layer[layer].push(id);
            rng.fill_bytes(&mut seed);
            let e = schedule.epoch_at(now);
            let keys = vec![EpochKey { epoch: e, key: SecretKey::generate(&mut rng).public_key() }];
            port += 1;
            let descriptor = NodeDescriptor::new(
                identity.verifying_key(),
                TopologyLinkKey::from_secret(&seed),
                ([127, 0, 0, 1], port).into(),
                layers,
                0,
                keys,
            );
            builder.add_node(descriptor.sign(&identity).unwrap());
        }
        let verified = builder.sign(&SigningKey::from_bytes(&[1; 32]), now).unwrap();
        (SharedTopology::new(verified), by_layer)
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::topology;
    use super::*;

    #[test]
    fn forwards_leave_only_for_the_next_layer() {
        let (peers, layers) = topology();
        let (entry, mix, exit) = (layers[0][0], layers[1][0], layers[2][0]);
        // The next layer: sent.
        assert!(forward_link(&peers, &entry, &mix).is_ok());
        assert!(forward_link(&peers, &entry, &layers[1][1]).is_ok());
        assert!(forward_link(&peers, &mix, &exit).is_ok());
        // The exit's successor is the entry layer (SURB replies).
        assert!(forward_link(&peers, &exit, &entry).is_ok());
        // Any other layer, itself, or its own layer: refused, though the node is known.
        assert_eq!(forward_link(&peers, &entry, &exit), Err(ForwardRefused::NotNextLayer));
        assert_eq!(forward_link(&peers, &mix, &entry), Err(ForwardRefused::NotNextLayer));
        assert_eq!(forward_link(&peers, &entry, &layers[0][1]), Err(ForwardRefused::NotNextLayer));
        assert_eq!(forward_link(&peers, &entry, &entry), Err(ForwardRefused::NotNextLayer));
        // A node that is not in the topology.
        assert_eq!(forward_link(&peers, &entry, &NodeId([0xAB; 32])), Err(ForwardRefused::NotNextLayer));
    }

    #[test]
    fn refusals_are_exported() {
        let metrics = crate::NodeMetrics::default();
        for _ in 0..3 {
            ForwardRefused::NotNextLayer.count(&metrics);
        }
        ForwardRefused::UnknownNode.count(&metrics);
        assert!(metrics.render().contains("nox_packets_dropped_total{reason=\"egress_not_next_layer\"} 3\n"));
        assert_eq!(metrics.drops(nox_relay::DropReason::Malformed), 1);
    }
}
