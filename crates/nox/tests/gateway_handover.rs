//! Gateway hand-over on real node processes (`nox testnet up --nodes-per-layer 2`) with the
//! real client (`nox-client`) in this process: requests are at their exit when the client's
//! reply gateway is SIGKILLed; loop cover through it is lost, so the client moves to the other
//! gateway; the killed gateway is restarted and the client redials it with the same mailbox
//! (it still owes those requests' replies); then the exit answers, and the replies, whose
//! SURBs name the old gateway, reach the client through it, after the client moved. The old
//! gateway's link is closed once its last request completed.
//!
//! The replies are held at the exit (a local HTTP server that answers only when the test
//! releases it, the exits' fetch timeout raised to 60 s) rather than in mixing pools: the
//! gateway keeps nothing for a mailbox with no link (docs/spec/link.md §2.4), so a reply is
//! only delivered if it reaches the restarted gateway after the client's link; holding it at
//! the exit makes every reply do so, whatever the timing of the kill, the switch and the
//! redials.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use nox_client::{Client, ClientConfig, ClientHandle, HealthConfig, ReplyLinkStatus, ShellConfig};
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody, Status};
use nox_sphinx::NodeId;
use tokio::sync::watch;

mod common;

use common::{
    Testnet, node_dir_of, node_metric, port_base, restart_node as restart, testnet_dir, topology, wait_until,
    wait_until_async as eventually,
};

/// Runs blocking work (processes, files) off the runtime's workers.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.expect("blocking task")
}

const BODY: &[u8] = b"held at the exit while the gateway died";
const REQUESTS: usize = 3;

/// An HTTP/1.1 server that counts the requests it received and answers them only once
/// `release` is set.
struct HeldServer {
    addr: SocketAddr,
    arrived: Arc<AtomicUsize>,
    release: watch::Sender<bool>,
}

fn held_server() -> HeldServer {
    let listener = nox_testnet::servers::bind_loopback().expect("bind");
    let arrived = Arc::new(AtomicUsize::new(0));
    let (release, released) = watch::channel(false);
    let count = arrived.clone();
    let addr = nox_testnet::servers::http_server_with(listener, move |_path| {
        count.fetch_add(1, Ordering::SeqCst);
        let mut released = released.clone();
        async move {
            let _ = released.wait_for(|r| *r).await;
            Some(Arc::new(BODY.to_vec()))
        }
    })
    .expect("a held HTTP server");
    HeldServer { addr, arrived, release }
}

/// The directory of the testnet node whose link address is `id`'s, and its index.
fn node_dir(dir: &Path, id: &NodeId) -> (PathBuf, usize) {
    let address = topology(dir).node(id).expect("a node of the topology").descriptor.address;
    let (index, node) = node_dir_of(dir, address).expect("the node's directory");
    (node, index)
}

/// SIGKILL: no shutdown, nothing flushed; returns once the node's link port refuses.
fn sigkill(node: &Path, address: SocketAddr) {
    let pid = std::fs::read_to_string(node.join("pid")).expect("pid file");
    let status = Command::new("kill").arg("-KILL").arg(pid.trim()).status().expect("kill");
    assert!(status.success(), "kill -KILL {}", pid.trim());
    let gone = wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
        std::net::TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_err()
    });
    assert!(gone, "the killed gateway still accepts connections");
}

fn link_of(client: &ClientHandle, gateway: NodeId) -> Option<ReplyLinkStatus> {
    client.reply_links().into_iter().find(|l| l.gateway == gateway)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_in_flight_reach_the_client_through_its_old_gateway_after_it_moved() {
    let started = Instant::now();
    let server = held_server();
    // Two nodes per layer: two gateways. Short mixing delays, so loop cover tells a dead
    // gateway within seconds; the replies are held at the exit instead (see the file docs).
    let base = port_base(16_000, 90, 40);
    let allow = server.addr.to_string();
    let args = [
        "--nodes-per-layer",
        "2",
        "--loop-rate",
        "0",
        "--drop-rate",
        "0",
        "--mean-delay-ms",
        "20",
        "--no-chain",
        "--exit-allow",
        &allow,
    ];
    let net = Testnet::up(testnet_dir("nox-handover", "kill"), base, &args);
    let net_topology = topology(&net.dir);
    let exits: Vec<NodeId> = net_topology.nodes_in_layer(net_topology.layers().exit()).map(|n| n.id).collect();
    assert_eq!(exits.len(), 2);
    // The exits give a fetch 60 s instead of 10 s: the server holds the requests while the
    // gateway is down and the client moves.
    for exit in &exits {
        let (dir, index) = node_dir(&net.dir, exit);
        let config = std::fs::read_to_string(dir.join("node.toml")).expect("node.toml");
        assert!(config.contains("[exit.services.http]\n"), "an exit's HTTP section");
        let config = config.replace("[exit.services.http]\n", "[exit.services.http]\ntimeout_ms = 60000\n");
        std::fs::write(dir.join("node.toml"), config).expect("write node.toml");
        let dir = net.dir.clone();
        blocking(move || restart(&dir, index)).await;
    }

    // Loop cover at 5 loops/s with a 5 s return timeout: a dead gateway is degraded after 5
    // lost loops in a row, about 6 s after it died. (With 2 s, one CI run degraded the new
    // gateway too — most likely loops delayed past 2 s by the load — and the client moved back
    // to the recovered old gateway before the replies came: no hand-over left to show.)
    let core = ClientConfig {
        cover_rate: 10.0,
        health: HealthConfig { return_timeout: Duration::from_secs(5), ..HealthConfig::default() },
        timeout: Duration::from_secs(45),
        ..ClientConfig::default()
    };
    let client = Client::start(ShellConfig { topology: net_topology.clone(), core }).await.expect("client starts");
    let healthy =
        eventually(Duration::from_secs(30), Duration::from_millis(100), || client.stats().loops_returned >= 10).await;
    assert!(healthy, "loop cover does not return: {:?}", client.stats());
    let old = client.gateway();
    let exit = *exits.iter().find(|e| **e != old).expect("an exit that is not the gateway");
    let (old_dir, old_index) = node_dir(&net.dir, &old);
    let old_address = net_topology.node(&old).expect("gateway").descriptor.address;

    // Requests to the other exit; each waits there for the held server.
    let url = format!("http://{}/held", server.addr);
    let requests: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let client = client.clone();
            let message =
                HttpRequestMsg { method: "GET".into(), url: url.clone(), headers: Vec::new(), body: Vec::new() };
            tokio::spawn(async move {
                let result = client.request_via(RequestBody::Http(message), 4096, Some(exit)).await;
                // Which gateway the client was on when this reply completed it.
                (result, client.gateway())
            })
        })
        .collect();
    let arrived = eventually(Duration::from_secs(30), Duration::from_millis(20), || {
        server.arrived.load(Ordering::SeqCst) >= REQUESTS
    })
    .await;
    assert!(arrived, "{} of {REQUESTS} requests reached the exit", server.arrived.load(Ordering::SeqCst));

    // Mid-request: SIGKILL the gateway every reply's SURBs name.
    let dir = old_dir.clone();
    blocking(move || sigkill(&dir, old_address)).await;
    let killed = Instant::now();

    // Loops through it are lost: once it has been degraded for a whole return timeout the
    // client moves to the other gateway and keeps the old one's reply link, which cannot
    // connect now. The move sticks: the client leaves a gateway only after it has been
    // degraded for a return timeout without a break (nox-client's *gateway patience*), so the
    // losses that still land on the new gateway after the move (loops sent through the dead
    // one with the new one as exit, loops late on a loaded machine) cannot send it back —
    // before that rule they did, and every reply then completed with the client back on the
    // old gateway (CI, 2026-11-26 and after). Checked here: the client stays off the dead
    // gateway for 7 s, longer than that patience (5 s).
    let mut since: Option<Instant> = None;
    let moved = eventually(Duration::from_secs(60), Duration::from_millis(50), || {
        if client.gateway() == old {
            since = None;
            return false;
        }
        since.get_or_insert_with(Instant::now).elapsed() >= Duration::from_secs(7)
    })
    .await;
    assert!(moved, "the client did not move off the dead gateway: {:?}", client.stats());
    let new = client.gateway();
    let links = client.reply_links();
    assert_eq!(links.first().map(|l| (l.gateway, l.current)), Some((new, true)), "{links:?}");
    let kept = link_of(&client, old).expect("the old gateway's link is kept while replies are owed");
    assert!(!kept.current);
    eprintln!("moved to the other gateway {:?} after the kill", killed.elapsed());

    // The old gateway comes back: the client redials it with the same mailbox.
    let dir = net.dir.clone();
    blocking(move || restart(&dir, old_index)).await;
    let relinked = eventually(Duration::from_secs(20), Duration::from_millis(50), || {
        link_of(&client, old).is_some_and(|l| l.up && l.handshakes > kept.handshakes)
    })
    .await;

    // The exit answers now: the replies travel to the old gateway, after the move.
    server.release.send_replace(true);
    let mut completed_on = Vec::new();
    for request in requests {
        let reply = tokio::time::timeout(Duration::from_secs(60), request).await;
        let (result, gateway) = reply.expect("a reply within 60 s").expect("request task");
        completed_on.push(gateway);
        let dir = old_dir.clone();
        let (delivered, dropped) = blocking(move || {
            (node_metric(&dir, "nox_gateway_replies_total"), node_metric(&dir, "nox_gateway_no_mailbox_total"))
        })
        .await;
        let response = result.unwrap_or_else(|e| {
            panic!(
                "request failed: {e}; the restarted old gateway delivered {delivered} and dropped {dropped} \
                 replies for want of a mailbox"
            )
        });
        assert_eq!(response.status, Status::Ok);
        let http = HttpResponseMsg::decode(&response.body).expect("an HTTP response");
        assert_eq!((http.status, http.body.as_slice()), (200, BODY));
    }
    assert!(relinked, "the client did not redial the restarted gateway");
    let dir = old_dir.clone();
    let delivered = blocking(move || node_metric(&dir, "nox_gateway_replies_total")).await;
    assert!(delivered >= REQUESTS as u64, "the restarted old gateway delivered {delivered} replies");
    // The hand-over: replies delivered by the old gateway completed requests while the client
    // was on another one — every one of them, since the client does not flip back to the
    // recovered old gateway unless the new one fails for a whole return timeout.
    let handed_over = completed_on.iter().filter(|g| **g != old).count();
    assert_eq!(
        handed_over, REQUESTS,
        "replies completed while the client was back on the old gateway: it flipped back ({completed_on:?})"
    );
    eprintln!("{handed_over} of {REQUESTS} replies completed through the old gateway while the client was on another");

    // Its last request complete, the old gateway's link is closed (unless the client has since
    // moved back to it, when it is the current link again).
    if client.gateway() == old {
        eprintln!("the client moved back to the recovered old gateway after the replies");
    } else {
        let released =
            eventually(Duration::from_secs(5), Duration::from_millis(50), || link_of(&client, old).is_none()).await;
        assert!(released, "the old gateway's link outlived its requests: {:?}", client.reply_links());
    }
    let single =
        eventually(Duration::from_secs(10), Duration::from_millis(50), || client.reply_links().len() == 1).await;
    assert!(single, "reply links left open: {:?}", client.reply_links());
    eprintln!("gateway hand-over test took {:?}", started.elapsed());
}
