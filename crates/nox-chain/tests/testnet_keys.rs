//! Issue 29 item 7 on a real Anvil: the testnet pool's verifiers are recognised on chain; on a
//! development chain they are allowed; on a chain that is not one (an Anvil with chain id 8453
//! behind a proxy that answers `web3_clientVersion` as Geth would) deploying them and using a
//! pool built on them are refused, or allowed with a warning when forced; a pool whose verifiers
//! are not testnet ones passes. The δ words the detection looks for are recomputed from the
//! testnet keys.

use std::net::{SocketAddr, TcpListener};

use alloy::primitives::U256;
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::{ShieldedPool, deploy_pool};
use nox_chain::testnet_keys::{self, TestnetKeys};
use nox_chain::{ChainError, deploy::wallet_provider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

fn header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

/// Reads one HTTP message (headers and a Content-Length body); `None` at end of stream.
async fn read_message(s: &mut tokio::net::TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = header_end(&buf) {
            let len = content_length(&buf[..end]);
            while buf.len() < end + len {
                let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some((buf[..end].to_vec(), buf[end..end + len].to_vec()));
        }
        let n = s.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A JSON-RPC proxy to `upstream` that answers `web3_clientVersion` as a Geth node.
async fn geth_disguise(upstream: SocketAddr) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                while let Some((_, body)) = read_message(&mut client).await {
                    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let answer = if request["method"] == "web3_clientVersion" {
                        serde_json::to_vec(&serde_json::json!({
                            "jsonrpc": "2.0", "id": request["id"], "result": "Geth/v1.14.0-stable/linux-amd64/go1.22.0"
                        }))
                        .expect("json")
                    } else {
                        let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else { return };
                        let head = format!(
                            "POST / HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        );
                        if up.write_all(head.as_bytes()).await.is_err() || up.write_all(&body).await.is_err() {
                            return;
                        }
                        let Some((_, answer)) = read_message(&mut up).await else { return };
                        answer
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        answer.len()
                    );
                    if client.write_all(head.as_bytes()).await.is_err() || client.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testnet_keys_are_detected_and_refused_off_development_chains() {
    let port = free_port();
    let anvil = tokio::task::spawn_blocking(move || {
        Anvil::spawn(&AnvilOptions { chain_id: 8453, ..AnvilOptions::on_port(port) })
    })
    .await
    .expect("spawn task")
    .expect("anvil starts");
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(1u64),
    };
    let deployment = deploy::deploy(anvil.url(), &deployer, params).await.expect("deploys");
    let at = deploy_pool(anvil.url(), &deployer, deployment.executor, 64).await.expect("pool deploys");

    // Anvil itself (chain id 8453, but it says it is Anvil): a development chain.
    assert_eq!(testnet_keys::check_deploy(anvil.url(), false).await, Ok(TestnetKeys::OnDevelopmentChain));
    assert_eq!(testnet_keys::check_pool(anvil.url(), at.pool, false).await, Ok(TestnetKeys::OnDevelopmentChain));

    // The same chain disguised as Geth on chain 8453: refused unless forced.
    let upstream: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let public = format!("http://{}", geth_disguise(upstream).await);
    let refused = |r: Result<TestnetKeys, ChainError>| matches!(r, Err(ChainError::TestnetKeysOnPublicChain { chain_id: 8453, ref client }) if client.starts_with("Geth/"));
    assert!(refused(testnet_keys::check_deploy(&public, false).await), "deploying testnet verifiers");
    assert!(refused(testnet_keys::check_pool(&public, at.pool, false).await), "using a testnet-key pool");
    let forced = testnet_keys::check_pool(&public, at.pool, true).await.expect("forced");
    assert!(matches!(forced, TestnetKeys::ForcedOnPublicChain(ref id) if id.chain_id == 8453));
    assert!(forced.warning().is_some_and(|w| w.contains("CHAIN 8453")));
    assert!(testnet_keys::check_deploy(&public, true).await.expect("forced").warning().is_some());
    // The wallet's and relayer's start-up check (NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN unset here).
    assert_eq!(testnet_keys::guard_pool_from_env(anvil.url(), at.pool).await, Ok(None));
    assert!(matches!(
        testnet_keys::guard_pool_from_env(&public, at.pool).await,
        Err(ChainError::TestnetKeysOnPublicChain { chain_id: 8453, .. })
    ));

    // A pool whose verifiers are not testnet ones (any other code stands in for a ceremony
    // verifier here) is not flagged, even on the disguised chain.
    let provider = wallet_provider(anvil.url(), &deployer).expect("provider");
    let other = ShieldedPool::deploy(&provider, at.poseidon, at.poseidon, at.poseidon, at.executor, U256::from(64u64))
        .await
        .expect("pool over other verifiers");
    assert_eq!(testnet_keys::check_pool(&public, *other.address(), false).await, Ok(TestnetKeys::Absent));
    // And the detection itself, on the deployed code.
    let code = alloy::providers::Provider::get_code_at(&provider, at.transfer_verifier).await.expect("code");
    assert!(testnet_keys::is_testnet_verifier_code(&code));
    let code = alloy::providers::Provider::get_code_at(&provider, at.poseidon).await.expect("code");
    assert!(!testnet_keys::is_testnet_verifier_code(&code));
}

/// The δ words the detection looks for are the testnet keys' (written by the generator the
/// committed verifiers come from).
#[test]
fn the_testnet_delta_words_are_the_testnet_keys() {
    let hex = |w: &[u8; 32]| format!("0x{}", hex::encode(w));
    let (_, vk) = nox_zk::transfer::testnet_keys().expect("transfer setup");
    let sol = nox_zk::solidity::transfer_verifier(vk, "test").expect("verifier");
    for (name, w) in ["DELTA_X1", "DELTA_X0", "DELTA_Y1", "DELTA_Y0"].iter().zip(&testnet_keys::TESTNET_TRANSFER_DELTA)
    {
        assert!(sol.contains(&format!("{name} = {}", hex(w))), "transfer {name}");
    }
    let (_, vk) = nox_zk::insert::testnet_setup().expect("insert setup");
    let sol = nox_zk::solidity::insert_verifier(&vk, "test").expect("insert verifier");
    for (name, w) in ["DELTA_X1", "DELTA_X0", "DELTA_Y1", "DELTA_Y0"].iter().zip(&testnet_keys::TESTNET_INSERT_DELTA) {
        assert!(sol.contains(&format!("{name} = {}", hex(w))), "insert {name}");
    }
}
