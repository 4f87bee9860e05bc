//! Link → pipeline: a frame from the link layer becomes the pipeline's [`Inbound`] — its
//! authenticated link peer mapped to an [`Origin`], and its arrival instant taken from the link
//! layer's read (`nox_link::transport::Inbound::received_at`), never re-stamped here: the time a
//! frame waits in the link's inbound queue counts toward its mixing delay like the time in
//! ingest and the workers (the delay runs from the packet's arrival on the link).

use nox_link::transport::{Inbound as LinkInbound, PeerIdentity};

use crate::{Inbound, Origin, SharedTopology};

/// The pipeline's input for `frame`; `None` for a node key that is not in the current topology.
pub fn from_link(frame: LinkInbound, peers: &SharedTopology) -> Option<Inbound> {
    let (origin, client_ip) = match frame.from {
        PeerIdentity::Client(_, ip) => (Origin::Client, Some(ip)),
        PeerIdentity::Node(key) => (Origin::Node(peers.node_of(&key)?), None),
    };
    Some(Inbound { origin, received_at: frame.received_at, packet: frame.packet, client_ip })
}

/// Link → pipeline until the links close: each frame mapped by [`from_link`] (a node key not in
/// the topology counts as `wrong_layer`), and a full pipeline queue counted as a drop.
pub(crate) async fn feed_pipeline(
    mut link_rx: tokio::sync::mpsc::Receiver<LinkInbound>,
    peers: SharedTopology,
    pipeline_in: tokio::sync::mpsc::Sender<Inbound>,
    metrics: std::sync::Arc<crate::NodeMetrics>,
) {
    use std::sync::atomic::Ordering;
    while let Some(frame) = link_rx.recv().await {
        // The arrival instant is the link's read, carried with the frame.
        let Some(inbound) = from_link(frame, &peers) else {
            metrics.wrong_layer.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if pipeline_in.try_send(inbound).is_err() {
            metrics.count_drop(nox_relay::DropReason::QueueFull);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use nox_link::transport::ClientId;

    use super::*;

    #[test]
    fn the_arrival_instant_is_the_links_not_the_dequeue_time() {
        let topology = crate::egress::tests_support::topology().0;
        // An injected arrival instant, well before "now": the frame waited in the link queue.
        let arrived = Instant::now().checked_sub(Duration::from_secs(3)).unwrap_or_else(Instant::now);
        let frame = LinkInbound {
            from: PeerIdentity::Client(ClientId(1), [192, 0, 2, 1].into()),
            received_at: arrived,
            packet: vec![7; 16],
        };
        let inbound = from_link(frame, &topology).unwrap();
        assert_eq!(inbound.received_at, arrived);
        assert_eq!((inbound.origin, inbound.client_ip), (Origin::Client, Some([192, 0, 2, 1].into())));
        // A node key not in the topology: no pipeline input.
        let stranger = LinkInbound {
            from: PeerIdentity::Node(nox_link::LinkPublicKey([0xEE; 32])),
            received_at: arrived,
            packet: vec![7; 16],
        };
        assert!(from_link(stranger, &topology).is_none());
    }

    /// End to end through the scheduler, with injected instants: a packet that arrived 40 ms
    /// before it was enqueued, with a 100 ms delay, is released 100 ms after its arrival.
    #[test]
    fn the_mixing_delay_counts_from_the_link_arrival() {
        use nox_mixing::{Delay, MixingConfig, MixingScheduler};
        use rand_core::SeedableRng;
        let base = Instant::now();
        let frame = LinkInbound {
            from: PeerIdentity::Client(ClientId(1), [192, 0, 2, 1].into()),
            received_at: base,
            packet: vec![1],
        };
        let inbound = from_link(frame, &crate::egress::tests_support::topology().0).unwrap();
        let mut scheduler = MixingScheduler::new(MixingConfig::new(Duration::from_millis(1), 8));
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let dequeued = base + Duration::from_millis(40);
        let scheduled = scheduler
            .insert((), Delay::Given(Duration::from_millis(100)), inbound.received_at, dequeued, &mut rng)
            .unwrap();
        assert_eq!(scheduled.release_at, base + Duration::from_millis(100));
    }
}
