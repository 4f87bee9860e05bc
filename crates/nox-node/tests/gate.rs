//! The entry's connection gate on real sockets: on an address that hosts a topology node
//! (here 127.0.0.1), clients get no exemption — the per-address limit holds for them — while a
//! node at that address, authenticated by its link key, is never limited.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nox_link::transport::{DialerConfig, LinkCounters, Listener, ListenerConfig, OutboundLinks};
use nox_link::{LinkConfig, LinkKeypair, LinkPublicKey};
use nox_node::{AdmissionGate, AdmissionSection};
use nox_sphinx::Geometry;
use tokio::sync::{mpsc, watch};

const WAIT: Duration = Duration::from_secs(5);

fn link() -> LinkConfig {
    LinkConfig::new(Geometry::new(1024, 3).unwrap()).unwrap()
}

struct Dialer {
    links: OutboundLinks,
    _rx: mpsc::Receiver<nox_link::transport::Inbound>,
    _stop: watch::Sender<bool>,
}

fn dial(config: DialerConfig, entry: LinkPublicKey, addr: SocketAddr) -> Dialer {
    let (tx, rx) = mpsc::channel(64);
    let (stop, shutdown) = watch::channel(false);
    let directory: HashMap<_, _> = [(entry, addr)].into();
    let links =
        OutboundLinks::new(config, Arc::new(directory), tx, Arc::new(LinkCounters::default()), shutdown).unwrap();
    links.connect(&entry).unwrap();
    Dialer { links, _rx: rx, _stop: stop }
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_from_a_nodes_address_gets_no_exemption() {
    let entry = Arc::new(LinkKeypair::generate().unwrap());
    let node = Arc::new(LinkKeypair::generate().unwrap());
    let section = AdmissionSection { max_connections_per_address: 2, ..AdmissionSection::default() };
    // 127.0.0.1 hosts a topology node: before this fix, every connection from it was exempt.
    let gate = Arc::new(AdmissionGate::new(&section, ["127.0.0.1".parse().unwrap()]));
    let allowed: HashSet<LinkPublicKey> = [node.public()].into();
    let mut config = ListenerConfig::new(link(), entry.clone(), Arc::new(allowed));
    config.accept.clients = true;
    config.gate = gate;
    let (tx, _rx) = mpsc::channel(64);
    let (_stop, shutdown) = watch::channel(false);
    let counters = Arc::new(LinkCounters::default());
    let listener =
        Listener::bind("127.0.0.1:0".parse().unwrap(), config, tx, counters.clone(), shutdown).await.unwrap();
    let addr = listener.local_addr();
    let snapshot = || counters.snapshot();

    // Two client links from the node's address: admitted (the per-address limit).
    let _c1 = dial(DialerConfig::client(link()), entry.public(), addr);
    let _c2 = dial(DialerConfig::client(link()), entry.public(), addr);
    eventually("two client handshakes", || snapshot().handshakes_ok == 2).await;
    assert_eq!(snapshot().rejected_by_gate, 0);
    // A third client from the same address is refused once its handshake shows it is a client.
    let c3 = dial(DialerConfig::client(link()), entry.public(), addr);
    eventually("the third client refused", || snapshot().rejected_by_gate >= 1).await;
    drop(c3);
    // Nodes from that address, authenticated by their link key, are not limited by it.
    let nodes: Vec<Dialer> =
        (0..4).map(|_| dial(DialerConfig::node(link(), node.clone()), entry.public(), addr)).collect();
    eventually("four node links", || snapshot().handshakes_ok >= 2 + 1 + 4).await;
    let refused = snapshot().rejected_by_gate;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(snapshot().rejected_by_gate, refused, "no node link was refused");
    assert!(nodes.iter().all(|d| d.links.connect(&entry.public()).is_ok()));
}
