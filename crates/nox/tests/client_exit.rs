//! End to end through real node processes (`nox testnet up`, one node per
//! layer) with the real client (`nox-client`) in this process:
//!
//! - an echo round trip;
//! - an HTTP GET to a local server through the SOCKS5 endpoint with the real
//!   `curl` binary (`--socks5-hostname`: the name is resolved at the exit);
//! - SSRF: private and metadata addresses refused by the exit, with a clear
//!   error, through the mixnet;
//! - `cast block-number`, `cast balance` and a signed raw transaction
//!   (`cast mktx` + `cast publish`) mined on a real Anvil, through the local
//!   JSON-RPC endpoint; a method outside the allow-list refused;
//! - a 256 KiB reply recovered while the exits drop 20 % of reply packets.
//!
//! Anvil and Cast come from `tools/` (`npm ci --prefix tools`, done by
//! `scripts/test.sh`); `curl` from the system.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
};

use nox_client::{ClientConfig, ClientHandle, RpcConfig, SocksConfig};
use nox_message::{HttpRequestMsg, HttpResponseMsg, RequestBody, Status};

mod common;

use common::{QUIET, Testnet, client, free_port, port_base, testnet_dir};

/// Anvil's first default account and its well-known development key.
const DEV_ACCOUNT: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const DEV_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const RECIPIENT: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

fn testnet(name: &str, slot: u16, extra: &[&str]) -> Testnet {
    // Port ranges apart from tests/testnet.rs (20000..24000) and directory.rs.
    let base = port_base(25_000, 150, 30) + slot * 10;
    let mut args = QUIET.to_vec();
    args.extend_from_slice(extra);
    Testnet::up(testnet_dir("nox-e2e", name), base, &args)
}

fn tool(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/node_modules/.bin").join(name);
    assert!(path.exists(), "{} missing: run `npm ci --prefix tools` (scripts/test.sh does)", path.display());
    path
}

/// The native Anvil binary (`nox_chain::anvil`), killed on drop: the npm `.bin` wrapper would
/// leave the real process running if the wrapper were killed.
fn anvil(port: u16) -> nox_chain::anvil::Anvil {
    nox_chain::anvil::Anvil::spawn(&nox_chain::anvil::AnvilOptions::on_port(port)).expect("start anvil")
}

/// Runs a Foundry tool (blocking, off the runtime) and returns its stdout.
async fn run(program: PathBuf, args: Vec<String>) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(&program).args(&args).output().map_err(|e| e.to_string())?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_owned();
        if out.status.success() { Ok(text(&out.stdout)) } else { Err(text(&out.stderr)) }
    })
    .await
    .expect("tool task")
}

/// A one-route HTTP/1.1 server on a listener bound before the testnet (its
/// address is the one local destination the exits may reach): `body` for
/// every request.
fn http_server(listener: std::net::TcpListener, body: Vec<u8>) -> SocketAddr {
    nox_testnet::servers::http_server_on(listener, body).expect("a loopback HTTP server")
}

async fn http_get(client: &ClientHandle, url: &str) -> (Status, Vec<u8>) {
    let message = HttpRequestMsg { method: "GET".into(), url: url.into(), headers: Vec::new(), body: Vec::new() };
    let response = client.request(RequestBody::Http(message), 64 * 1024).await.expect("a reply");
    (response.status, response.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_http_socks_and_ethereum_through_the_mixnet() {
    let anvil_port = free_port();
    let _anvil = anvil(anvil_port);
    let upstream = format!("http://127.0.0.1:{anvil_port}");
    let listener = nox_testnet::servers::bind_loopback().expect("a loopback listener");
    let port = listener.local_addr().unwrap().port();
    // `localhost` may resolve to both loopback addresses: allow the server's port on both.
    let (v4, v6) = (format!("127.0.0.1:{port}"), format!("[::1]:{port}"));
    let net = testnet(
        "main",
        0,
        &["--rpc-upstream", &upstream, "--rpc-chain-id", "31337", "--exit-allow", &v4, "--exit-allow", &v6],
    );
    let client = client(&net.dir, ClientConfig::default()).await;

    // Echo.
    let response = client.request(RequestBody::Echo(b"through three hops and back".to_vec()), 1024).await.unwrap();
    assert_eq!((response.status, response.body.as_slice()), (Status::Ok, &b"through three hops and back"[..]));

    // HTTP through the exit's fetch service, and SSRF refusals.
    let page: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let server = http_server(listener, page.clone());
    let (status, body) = http_get(&client, &format!("http://{server}/data")).await;
    assert_eq!(status, Status::Ok);
    let fetched = HttpResponseMsg::decode(&body).expect("an HTTP response");
    assert_eq!((fetched.status, fetched.body.len()), (200, page.len()));
    assert!(fetched.body == page, "the page came back altered");
    for (url, class) in [("http://10.0.0.1/", "private"), ("http://169.254.169.254/latest/meta-data/", "link-local")] {
        let (status, body) = http_get(&client, url).await;
        let message = String::from_utf8_lossy(&body);
        assert_eq!(status, Status::Forbidden, "{url}: {message}");
        assert!(message.contains("not a global address") && message.contains(class), "{url}: {message}");
    }
    // The testnet's exits allow the test server's address and port, not loopback: every
    // node's metrics port (same address, other port) is refused, by literal and by name.
    for node in nox_testnet::nodes(&net.dir) {
        let port = node.metrics.port();
        for url in [format!("http://{}/metrics", node.metrics), format!("http://localhost:{port}/metrics")] {
            let (status, body) = http_get(&client, &url).await;
            let message = String::from_utf8_lossy(&body);
            assert_eq!(status, Status::Forbidden, "{url}: {message}");
            assert!(!message.contains("nox_"), "{url} leaked metrics: {message}");
        }
    }

    // SOCKS5 with the real curl: the name is resolved by the exit.
    let socks = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socks_addr = socks.local_addr().unwrap();
    tokio::spawn(nox_client::serve_socks(socks, client.clone(), SocksConfig::default()));
    let url = format!("http://localhost:{}/via-socks", server.port());
    let saved = net.dir.join("curl.out");
    let curl_args = ["-sS", "--fail", "--max-time", "30", "--socks5-hostname", &socks_addr.to_string(), "-o"];
    let mut args: Vec<String> = curl_args.iter().map(|a| (*a).to_owned()).collect();
    args.extend([saved.display().to_string(), url]);
    run(PathBuf::from("curl"), args).await.expect("curl through the SOCKS5 endpoint");
    assert!(std::fs::read(&saved).unwrap() == page, "curl received another body than the server sent");

    // Ethereum JSON-RPC through the local endpoint, with the real cast.
    let rpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let rpc_url = format!("http://{}", rpc.local_addr().unwrap());
    tokio::spawn(nox_client::serve_rpc(rpc, client.clone(), RpcConfig::default()));
    let cast = tool("cast");
    let cast_args = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let chain = run(cast.clone(), cast_args(&["chain-id", "--rpc-url", &rpc_url])).await.expect("cast chain-id");
    assert_eq!(chain, "31337");
    let block = run(cast.clone(), cast_args(&["block-number", "--rpc-url", &rpc_url])).await.expect("block-number");
    assert_eq!(block, "0", "a fresh Anvil");
    let balance = run(cast.clone(), cast_args(&["balance", DEV_ACCOUNT, "--rpc-url", &rpc_url])).await.unwrap();
    assert_eq!(balance, "10000000000000000000000");
    let before = run(cast.clone(), cast_args(&["balance", RECIPIENT, "--rpc-url", &rpc_url])).await.unwrap();
    let raw = run(
        cast.clone(),
        cast_args(&["mktx", "--private-key", DEV_KEY, "--rpc-url", &rpc_url, RECIPIENT, "--value", "1ether"]),
    )
    .await
    .expect("cast mktx (nonce, fees and chain id read through the mixnet)");
    assert!(raw.starts_with("0x02"), "an EIP-1559 transaction: {raw}");
    let receipt = run(cast.clone(), cast_args(&["publish", "--rpc-url", &rpc_url, &raw])).await.expect("publish");
    assert!(receipt.contains("\"status\":\"0x1\""), "mined and successful: {receipt}");
    let after = run(cast.clone(), cast_args(&["balance", RECIPIENT, "--rpc-url", &rpc_url])).await.unwrap();
    let (before, after): (u128, u128) = (before.parse().unwrap(), after.parse().unwrap());
    assert_eq!(after - before, 1_000_000_000_000_000_000, "1 ether arrived");
    let block = run(cast.clone(), cast_args(&["block-number", "--rpc-url", &rpc_url])).await.unwrap();
    assert_eq!(block, "1", "the transaction was mined in block 1");
    // A method outside the allow-list: a JSON-RPC error carrying the id.
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"eth_accounts","params":[]}"#;
    let curl = ["-sS", "-X", "POST", "-H", "content-type: application/json", "--data", call, &rpc_url];
    let answer = run(PathBuf::from("curl"), curl.iter().map(|a| (*a).to_owned()).collect()).await.unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("a JSON-RPC answer");
    assert_eq!(answer["id"], 7, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("eth_accounts is not allowed"), "{answer}");
    drop(cast);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_256_kib_reply_survives_exits_dropping_a_fifth_of_the_reply_packets() {
    let net = testnet("loss", 1, &["--inject-reply-loss", "0.2", "--reply-loss-estimate", "0.35"]);
    // The client sizes its SURB budget for the same loss; the exit turns the
    // spare SURBs into parity.
    let core = ClientConfig { loss: 0.35, target: 0.9999, ..ClientConfig::default() };
    let client = client(&net.dir, core).await;
    let exit = net.dir.join("node-2");
    let exit = (0..3)
        .map(|i| net.dir.join(format!("node-{i}")))
        .find(|d| std::fs::read_to_string(d.join("layer")).is_ok_and(|l| l.trim() == "2"))
        .unwrap_or(exit);
    let metrics = common::metrics_addr(&exit);
    for round in 0..3u8 {
        let data: Vec<u8> = (0..256 * 1024u32).map(|i| (i as u8) ^ round).collect();
        let response = client.request(RequestBody::Echo(data.clone()), data.len()).await.expect("a reply");
        assert_eq!(response.status, Status::Ok, "{:?}", response.error_message());
        assert!(response.body == data, "round {round}: the reply was not rebuilt exactly");
    }
    let text = nox_testnet::scrape(metrics).unwrap_or_default();
    let dropped = nox_testnet::metric(&text, "nox_exit_reply_packets_injected_loss_total");
    let sent = nox_testnet::metric(&text, "nox_exit_reply_packets_total");
    assert!(dropped > 0, "the exit dropped no reply packet: the test proved nothing");
    assert!(sent >= 3 * 9, "each 256 KiB reply needs at least 9 shards; sent {sent}");
}
