//! End to end over WebSocket client links (docs/spec/link.md §5), as a browser
//! reaches the network: `nox testnet up` (real node processes, one per layer)
//! gives the entry and the gateway a WebSocket port and advertises it in the
//! signed topology; the real client dials both over WebSocket and gets an
//! echo reply through the three hops.

use nox_client::{Client, ClientConfig, ShellConfig};
use nox_link::transport::Transport;
use nox_message::{RequestBody, Status};

mod common;

use common::{QUIET, Testnet, port_base, testnet_dir};

fn testnet(name: &str) -> Testnet {
    // Apart from the other tests' ranges (20000.., 24000.., 25000.., 27000.., 30000..); links at
    // base.., metrics at base + 100.., WebSocket at base + 300...
    let base = port_base(12_000, 200, 20);
    let args = QUIET;
    Testnet::up(testnet_dir("nox-ws", name), base, &args)
}

fn counter(text: &str, event: &str) -> u64 {
    let prefix = format!("nox_link_events_total{{event=\"{event}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echo_over_websocket_entry_and_gateway_links() {
    let net = testnet("echo");
    let topology = common::topology(&net.dir);
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
        let node = nox_testnet::nodes(&net.dir).into_iter().find(|n| n.layer == i).expect("node");
        let text = nox_testnet::scrape(node.metrics).expect("the node's /metrics");
        assert!(counter(&text, "ws_connections") >= 1, "{layer} saw no WebSocket link:\n{text}");
        assert_eq!(counter(&text, "ws_protocol_errors"), 0, "{layer}");
    }
}

/// `nox testnet up --tls`: entries and gateways serve `wss://` under a throwaway CA written to
/// `<dir>/ca.pem`; `nox client echo --transport websocket --ca-file` trusts it and gets its reply,
/// and a client trusting another CA gets nothing (the certificate really is checked).
#[test]
fn an_echo_over_wss_under_the_testnets_throwaway_ca() {
    // The file's range, second slot (the other test takes the first).
    let base = port_base(12_000, 200, 20) + 10;
    let args = ["--tls", "--no-chain", "--nodes-per-layer", "1", "--loop-rate", "0", "--drop-rate", "0"];
    let net = Testnet::up(testnet_dir("nox-wss", "echo"), base, &args);
    let ca = nox_testnet::tls::ca_file(&net.dir);
    assert!(std::fs::read_to_string(&ca).expect("ca.pem written").contains("BEGIN CERTIFICATE"));
    // The signed topology says wss:// for exactly the nodes that take clients.
    let topology = common::topology(&net.dir);
    let last = topology.layers().get() - 1;
    for node in topology.nodes() {
        let layer = node.descriptor.layer.0;
        assert_eq!(node.descriptor.websocket_tls, layer == 0 || layer == last, "layer {layer}");
    }
    let echo = |ca_file: &std::path::Path| {
        std::process::Command::new(common::NOX)
            .args(["client", "echo", "--transport", "websocket", "--timeout-secs", "5", "--testnet"])
            .arg(&net.dir)
            .arg("--ca-file")
            .arg(ca_file)
            .arg("over wss and back")
            .output()
            .expect("nox client echo runs")
    };
    let trusted = echo(&ca);
    let stdout = String::from_utf8_lossy(&trusted.stdout);
    assert!(
        trusted.status.success() && stdout.contains("over wss and back"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let last_node = nox_testnet::nodes(&net.dir).into_iter().find(|n| n.layer == last).expect("gateway");
    let text = nox_testnet::scrape(last_node.metrics).expect("the gateway's /metrics");
    assert!(counter(&text, "ws_connections") >= 1, "the gateway saw no WebSocket link:\n{text}");

    // Another throwaway CA's certificate: the handshake fails, no request gets through.
    let other_dir = testnet_dir("nox-wss", "other-ca");
    std::fs::create_dir_all(&other_dir).unwrap();
    let other = nox_testnet::tls::TestnetCa::new().unwrap().write(&other_dir).unwrap();
    let untrusted = echo(&other);
    assert!(!untrusted.status.success(), "{}", String::from_utf8_lossy(&untrusted.stdout));
    let _ = std::fs::remove_dir_all(&other_dir);
}
