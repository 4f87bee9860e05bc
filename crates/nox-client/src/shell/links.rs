//! The client's reply links (one per gateway that still owes replies) and the node directory its links dial.

use super::*;

impl ReplyLinks {
    pub(super) fn lock(&self) -> MutexGuard<'_, ReplyLinkMap> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the links of `wanted` (the current gateway first) that are not
    /// open and closes those no longer wanted. Returns the gateways whose link
    /// could not be opened (retried at the next sync).
    pub(super) fn sync(&self, wanted: &[NodeId]) -> Vec<NodeId> {
        let mut map = self.lock();
        if map.synced == wanted {
            return Vec::new();
        }
        map.current = wanted.first().copied();
        map.links.retain(|gateway, _| wanted.contains(gateway));
        let mut failed = Vec::new();
        for gateway in wanted {
            if map.links.contains_key(gateway) {
                continue;
            }
            match self.open(gateway) {
                Some(link) => {
                    map.links.insert(*gateway, link);
                }
                None => failed.push(*gateway),
            }
        }
        map.synced = if failed.is_empty() { wanted.to_vec() } else { Vec::new() };
        failed
    }

    /// A dialer for `gateway` alone, dialing now and redialing while it lives.
    pub(super) fn open(&self, gateway: &NodeId) -> Option<ReplyLink> {
        let key = self.directory.link_key(gateway)?;
        let _runtime = self.runtime.enter();
        let (stop, stop_rx) = watch::channel(false);
        let counters = Arc::new(LinkCounters::default());
        let links = OutboundLinks::new(
            self.dialer.clone(),
            self.directory.clone(),
            self.inbound.clone(),
            counters.clone(),
            stop_rx,
        )
        .ok()?;
        links.connect(&key).ok()?;
        Some(ReplyLink { _links: links, counters, _stop: stop })
    }

    /// The open links, the current gateway's first.
    pub(super) fn status(&self) -> Vec<ReplyLinkStatus> {
        let map = self.lock();
        let mut links: Vec<ReplyLinkStatus> = map
            .links
            .iter()
            .map(|(gateway, link)| {
                let handshakes = link.counters.handshakes_ok.load(Ordering::Relaxed);
                let closed = link.counters.links_closed.load(Ordering::Relaxed);
                let current = map.current == Some(*gateway);
                ReplyLinkStatus { gateway: *gateway, current, up: handshakes > closed, handshakes }
            })
            .collect();
        links.sort_by_key(|l| (!l.current, l.gateway.0));
        links
    }

    pub(super) fn close_all(&self) {
        let mut map = self.lock();
        map.links.clear();
        map.synced.clear();
    }
}

impl Directory {
    pub(super) fn set(&self, topology: &VerifiedTopology) {
        let mut nodes = Nodes::default();
        for node in topology.nodes() {
            let key = LinkPublicKey(node.descriptor.link_key.to_bytes());
            let address = if self.websocket { node.descriptor.websocket } else { Some(node.descriptor.address) };
            if let Some(address) = address {
                nodes.address.insert(key, address);
            }
            if self.websocket && node.descriptor.websocket_tls {
                nodes.tls.insert(key);
            }
            nodes.link_key.insert(node.id, key);
            nodes.node_id.insert(key, node.id);
        }
        *self.nodes.lock().unwrap_or_else(|p| p.into_inner()) = nodes;
    }

    pub(super) fn link_key(&self, id: &NodeId) -> Option<LinkPublicKey> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).link_key.get(id).copied()
    }

    pub(super) fn node_id(&self, key: &LinkPublicKey) -> Option<NodeId> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).node_id.get(key).copied()
    }
}

impl PeerDirectory for Directory {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).address.get(peer).copied()
    }
    fn websocket_tls(&self, peer: &LinkPublicKey) -> bool {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).tls.contains(peer)
    }
}
