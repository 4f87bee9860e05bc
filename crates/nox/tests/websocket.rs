//! End to end over WebSocket client links (docs/spec/link.md §5), as a browser
//! reaches the network: `nox testnet up` (real node processes, one per layer)
//! gives the entry and the gateway a WebSocket port and advertises it in the
//! signed topology; the real client dials both over WebSocket and gets an
//! echo reply through the three hops.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use nox_client::{Client, ClientConfig, ShellConfig};
use nox_link::transport::Transport;
use nox_message::{RequestBody, Status};
use nox_sphinx::Geometry;

const NOX: &str = env!("CARGO_BIN_EXE_nox");

/// A testnet in its own directory and port range; stopped on drop.
struct Testnet {
    dir: PathBuf,
}

impl Drop for Testnet {
    fn drop(&mut self) {
        let _ = Command::new(NOX).args(["testnet", "down", "--dir"]).arg(&self.dir).stdout(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn testnet(name: &str) -> Testnet {
    let dir = std::env::temp_dir().join(format!("nox-ws-{name}-{}", std::process::id()));
    // Apart from the other tests' ranges (20000.., 24000.., 25000.., 27000.., 30000..); links at
    // base.., metrics at base + 100.., WebSocket at base + 300...
    let base = 12_000 + (std::process::id() % 200) as u16 * 20;
    let status = Command::new(NOX)
        .args(["testnet", "up", "--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0"])
        .arg("--base-port")
        .arg(base.to_string())
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .expect("run nox testnet up");
    assert!(status.success(), "testnet up failed");
    Testnet { dir }
}

/// `/metrics` of a node.
fn metrics(addr: SocketAddr) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

fn counter(text: &str, event: &str) -> u64 {
    let prefix = format!("nox_link_events_total{{event=\"{event}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echo_over_websocket_entry_and_gateway_links() {
    let net = testnet("echo");
    let authority = std::fs::read_to_string(net.dir.join("authority.pub")).expect("authority.pub");
    let topology =
        nox_node::load_topology(&net.dir.join("topology.json"), authority.trim(), &Geometry::default()).unwrap();
    // The signed topology tells a browser where to connect: entries and gateways only.
    let last = topology.layers().get() - 1;
    for node in topology.nodes() {
        let layer = node.descriptor.layer.0;
        assert_eq!(node.descriptor.websocket.is_some(), layer == 0 || layer == last, "layer {layer}");
    }
    let core = ClientConfig::default();
    let client = Client::start_over(ShellConfig { topology, core }, Transport::WebSocket).await.expect("client starts");
    let response = client.request(RequestBody::Echo(b"over WebSocket and back".to_vec()), 1024).await.unwrap();
    assert_eq!((response.status, response.body.as_slice()), (Status::Ok, &b"over WebSocket and back"[..]));

    // The links really were WebSocket: the entry and the gateway each upgraded one.
    for (i, layer) in [(0, "entry"), (last, "gateway")] {
        let node = nox::testnet::nodes(&net.dir).into_iter().find(|n| n.layer == i).expect("node");
        let text = metrics(node.metrics);
        assert!(counter(&text, "ws_connections") >= 1, "{layer} saw no WebSocket link:\n{text}");
        assert_eq!(counter(&text, "ws_protocol_errors"), 0, "{layer}");
    }
}
