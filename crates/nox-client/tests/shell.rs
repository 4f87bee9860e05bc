//! The async shell over real Noise links on loopback: every node is a
//! `nox_link` listener accepting client links; packets are peeled in memory
//! (`process_packet`), the exit is emulated with nox-message, and replies go
//! back down the gateway link registered under the client's mailbox.
#![allow(clippy::disallowed_methods, reason = "the shell runs on the real clocks")]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Mixnet, Outcome};
use nox_client::{Client, ClientConfig, ClientError, ShellConfig};
use nox_link::transport::{Inbound, LinkCounters, Listener, ListenerConfig};
use nox_link::{LinkConfig, LinkKeypair, LinkPublicKey, Mailbox};
use nox_message::{RequestBody, Response, Status};
use nox_sphinx::{Geometry, NodeId};
use tokio::sync::{mpsc, watch};

fn unix_now() -> u64 {
    nox_topology::unix_seconds(std::time::SystemTime::now())
}

/// Starts a listener per node; returns the stop switch.
async fn run_nodes(net: Arc<Mutex<Mixnet>>, answer: bool) -> watch::Sender<bool> {
    let (stop, stop_rx) = watch::channel(false);
    let (geometry, links) = {
        let net = net.lock().unwrap();
        (net.geometry, net.links.clone())
    };
    let mut listeners = HashMap::new();
    let mut inbounds = Vec::new();
    for (id, (addr, secret)) in links {
        let keypair = Arc::new(LinkKeypair::from_secret_bytes(secret).unwrap());
        let peers: Arc<HashSet<LinkPublicKey>> = Arc::new(HashSet::new());
        let mut config = ListenerConfig::new(LinkConfig::new(geometry).unwrap(), keypair, peers);
        config.accept.clients = true;
        let (tx, rx) = mpsc::channel::<Inbound>(256);
        let counters = Arc::new(LinkCounters::default());
        let listener = Listener::bind(addr, config, tx, counters, stop_rx.clone()).await.unwrap();
        listeners.insert(id, listener);
        inbounds.push((id, rx));
    }
    let listeners: Arc<HashMap<NodeId, Listener>> = Arc::new(listeners);
    for (id, mut rx) in inbounds {
        let (net, listeners) = (net.clone(), listeners.clone());
        tokio::spawn(async move {
            while let Some(inbound) = rx.recv().await {
                let replies = {
                    let mut net = net.lock().unwrap();
                    let Outcome::Exit { exit, payload } = net.route(id, inbound.packet, 0) else { continue };
                    match net.exit_accept(exit, &payload) {
                        Some(request) if answer => {
                            let response = match &request.body {
                                RequestBody::Echo(text) => Response::ok(text.clone()),
                                _ => Response::error(Status::Unsupported, "echo only"),
                            };
                            net.answer(request, &response)
                        }
                        _ => Vec::new(),
                    }
                };
                for (gateway, recipient, record) in replies {
                    let _ = listeners[&gateway].send_to_mailbox(&Mailbox(recipient.0), record);
                }
            }
        });
    }
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_round_trip_through_the_shell() {
    let net = Mixnet::with_genesis(41, Geometry::default(), 1, unix_now() - 330);
    let topology = net.topology.clone();
    let net = Arc::new(Mutex::new(net));
    let _stop = run_nodes(net.clone(), true).await;
    let core = ClientConfig { cover_rate: 20.0, timeout: Duration::from_secs(10), ..ClientConfig::default() };
    let client = Client::start(ShellConfig { topology, core }).await.unwrap();

    let reply = client.request(RequestBody::Echo(b"over real links".to_vec()), 64).await.unwrap();
    assert_eq!(reply.status, Status::Ok);
    assert_eq!(reply.body, b"over real links");

    // Several at once, one of them large enough for several fragments.
    let big = vec![5u8; 70_000];
    let (a, b, c) = tokio::join!(
        client.request(RequestBody::Echo(b"a".to_vec()), 64),
        client.request(RequestBody::Echo(big.clone()), big.len()),
        client.request(RequestBody::JsonRpc(b"{}".to_vec()), 64),
    );
    assert_eq!(a.unwrap().body, b"a");
    assert_eq!(b.unwrap().body, big);
    assert_eq!(c.unwrap().status, Status::Unsupported);
    // Idle for a while: the slots carry cover.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let stats = client.stats();
    assert_eq!(stats.completed, 4);
    assert!(stats.cover_packets > 0, "cover filled idle slots: {stats:?}");
    assert!(net.lock().unwrap().drops_seen > 0, "exits saw drop cover packets");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_request_times_out_once() {
    let net = Mixnet::with_genesis(42, Geometry::new(4096, 3).unwrap(), 0, unix_now() - 330);
    let topology = net.topology.clone();
    let net = Arc::new(Mutex::new(net));
    let _stop = run_nodes(net.clone(), false).await;
    let core = ClientConfig { timeout: Duration::from_millis(500), ..ClientConfig::default() };
    let client = Client::start(ShellConfig { topology, core }).await.unwrap();
    let started = std::time::Instant::now();
    let result = client.request(RequestBody::Echo(b"into the void".to_vec()), 64).await;
    assert_eq!(result.unwrap_err(), ClientError::Timeout);
    assert!(started.elapsed() >= Duration::from_millis(500));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stats = client.stats();
    assert_eq!((stats.timeouts, stats.requests, stats.real_packets), (1, 1, 1), "no retransmission: {stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_sends_report_every_packet_with_its_kind() {
    let net = Mixnet::with_genesis(43, Geometry::default(), 1, unix_now() - 330);
    let topology = net.topology.clone();
    let entries = net.nodes_in(0);
    let net = Arc::new(Mutex::new(net));
    let _stop = run_nodes(net.clone(), true).await;
    let core = ClientConfig { cover_rate: 20.0, timeout: Duration::from_secs(10), ..ClientConfig::default() };
    let client = Client::start(ShellConfig { topology, core }).await.unwrap();
    let mut sends = client.observe_sends();
    let reply = client.request(RequestBody::Echo(vec![3u8; 70_000]), 70_000).await.unwrap();
    assert_eq!(reply.body.len(), 70_000);
    let before = client.stats();
    let (mut fragments, mut heads, mut loops, mut drops) = (0u64, HashSet::new(), 0u64, 0u64);
    // Reports reach the channel after the counters move: drain until every packet counted in
    // `before` is reported (or a generous deadline on a loaded machine), not for a fixed wait.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        while let Ok(sent) = sends.try_recv() {
            assert!(entries.contains(&sent.entry), "packets go to first-layer nodes");
            match sent.kind {
                nox_client::PacketKind::Fragment { head } => {
                    fragments += 1;
                    heads.insert(head);
                }
                nox_client::PacketKind::Loop => loops += 1,
                nox_client::PacketKind::Drop => drops += 1,
            }
        }
        let caught_up = fragments >= before.real_packets && drops >= before.cover_packets;
        if (caught_up && drops > 0 && loops > 0) || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = client.stats();
    // The request's fragments, one report each, all of one message.
    assert_eq!(fragments, after.real_packets, "{after:?}");
    assert!(fragments >= 3, "a 70 kB request is several fragments");
    assert_eq!(heads.len(), 1, "every fragment names the same message");
    // Cover: every drop counted in `before` is reported (the loop above waits for them; the
    // assertion keeps the former slack of three packets); loops are reported too.
    assert!(drops <= after.cover_packets && drops + 3 >= before.cover_packets, "{drops} drops, {before:?} {after:?}");
    assert!(drops > 0 && loops > 0, "{drops} drops and {loops} loops at 20 packets/s");
}
