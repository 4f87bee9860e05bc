//! The registry on a real Anvil: deployment, registration, snapshots at named blocks whose
//! fingerprint the Rust encoding recomputes exactly, leaving, and an RPC endpoint that lies.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, Registration, RegistryParams};
use nox_chain::{ChainError, PrivateKeySigner, RegistryReader, U256};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn params() -> RegistryParams {
    RegistryParams {
        min_stake: U256::from(1000u64),
        unstake_delay: 3600,
        slash_reporter_bps: 1000,
        token_supply: U256::from(1_000_000_000u64),
    }
}

fn registration(i: u8) -> Registration {
    Registration {
        identity_key: [i; 32],
        link_key: [0x40 + i; 32],
        link_address: format!("127.0.0.1:{}", 9000 + u16::from(i)),
        role: 1,
        stake: U256::from(1000u64 + u64::from(i)),
    }
}

struct Net {
    anvil: Anvil,
    deployment: nox_chain::Deployment,
    operators: Vec<PrivateKeySigner>,
}

async fn net(nodes: u8) -> Net {
    let anvil = tokio::task::spawn_blocking(|| Anvil::spawn(&AnvilOptions::on_port(free_port())))
        .await
        .expect("spawn task")
        .expect("anvil starts");
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let deployment = deploy::deploy(anvil.url(), &deployer, params()).await.expect("deploys");
    let mut operators = Vec::new();
    for i in 1..=nodes {
        let operator = PrivateKeySigner::random();
        let eth = U256::from(10u64).pow(U256::from(18u64));
        deploy::fund(anvil.url(), &deployment, &deployer, operator.address(), eth, U256::from(10_000u64))
            .await
            .expect("funds");
        let provider = deploy::wallet_provider(anvil.url(), &operator).expect("provider");
        deploy::register(&provider, &deployment, operator.address(), &registration(i)).await.expect("registers");
        operators.push(operator);
    }
    Net { anvil, deployment, operators }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_verify_at_named_blocks_and_track_leaving() {
    let net = net(3).await;
    let reader = RegistryReader::connect(net.anvil.url(), net.deployment.registry, Some(net.deployment.chain_id))
        .await
        .expect("connects");
    let before = reader.snapshot(0).await.expect("a verified snapshot");
    assert_eq!(before.nodes.len(), 3);
    // The fingerprint recomputed in Rust equals the contract's (snapshot_at checks it), and
    // the records are the registered ones.
    for i in 1..=3u8 {
        let node = before.by_identity(&[i; 32]).expect("registered");
        assert_eq!(node.link_address, registration(i).link_address);
        assert_eq!(node.stake, registration(i).stake);
        assert_eq!(node.operator, net.operators[usize::from(i) - 1].address());
    }
    let (membership, unusable) = before.membership();
    assert_eq!((membership.len(), unusable.len()), (3, 0));

    deploy::request_unstake(net.anvil.url(), &net.deployment, &net.operators[1]).await.expect("leaves");
    let after = reader.snapshot(0).await.expect("a verified snapshot");
    assert_eq!(after.nodes.len(), 2);
    assert!(after.by_identity(&[2; 32]).is_none(), "a node that left is not listed");
    assert_ne!(after.fingerprint, before.fingerprint);
    assert!(after.version > before.version);
    // Reading at the earlier block still gives the earlier view.
    let again = reader.snapshot_at(before.block).await.expect("the old block");
    assert_eq!(again, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_registry_or_chain_is_refused() {
    let net = net(1).await;
    // No code at the token's holder (an account, not a contract).
    let err = RegistryReader::connect(net.anvil.url(), net.operators[0].address(), None).await.unwrap_err();
    assert!(matches!(err, ChainError::NoRegistry(_)), "{err}");
    let err = RegistryReader::connect(net.anvil.url(), net.deployment.registry, Some(1)).await.unwrap_err();
    assert!(matches!(err, ChainError::Config(_)), "{err}");
    let err = RegistryReader::connect("http://127.0.0.1:1", net.deployment.registry, None).await.unwrap_err();
    assert!(matches!(err, ChainError::Rpc(_)), "{err}");
}

/// An RPC endpoint that forwards to Anvil but rewrites node 1's link key in `nodesPage` answers
/// (`0x41…41` → `0x66…66`): well-formed ABI, wrong data.
fn lying_proxy(upstream: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || {
                let _ = relay(stream, upstream);
            });
        }
    });
    port
}

fn read_http(stream: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))
        .and_then(Result::ok)
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    Ok((head, body))
}

fn relay(mut client: TcpStream, upstream: u16) -> std::io::Result<()> {
    let (_, body) = read_http(&mut client)?;
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    write!(
        server,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    server.write_all(&body)?;
    let (_, answer) = read_http(&mut server)?;
    let request = String::from_utf8_lossy(&body);
    let mut answer = String::from_utf8_lossy(&answer).to_string();
    // nodesPage(uint256,uint256) answers carry the link key as one 32-byte word.
    if request.contains("\"eth_call\"") {
        answer = answer.replace(&"41".repeat(32), &"66".repeat(32));
    }
    write!(
        client,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpc_endpoint_that_lies_about_the_node_list_is_refused() {
    let net = net(2).await;
    let port: u16 = net.anvil.url().rsplit(':').next().and_then(|p| p.parse().ok()).expect("anvil port");
    let proxy = lying_proxy(port);
    let liar = RegistryReader::connect(&format!("http://127.0.0.1:{proxy}"), net.deployment.registry, None)
        .await
        .expect("connects through the proxy");
    let err = liar.snapshot(0).await.unwrap_err();
    assert!(matches!(err, ChainError::FingerprintMismatch { .. }), "{err}");
    // The honest endpoint verifies the same block.
    let honest = RegistryReader::connect(net.anvil.url(), net.deployment.registry, None).await.expect("connects");
    assert_eq!(honest.snapshot(0).await.expect("verified").nodes.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equivocating_node_is_slashed_by_a_third_party_and_leaves_the_registry() {
    use nox_chain::bindings::{NodeRegistry, NoxStakeToken};
    use nox_chain::slash::{self, Equivocation};
    let net = net(2).await;
    let (chain_id, registry) = (net.deployment.chain_id, net.deployment.registry);
    let operator = &net.operators[0];
    let provider = deploy::wallet_provider(net.anvil.url(), operator).expect("provider");
    // The Rust EIP-712 digest is the contract's.
    let hash_a = slash::keys_hash(&[[7; 32]]);
    let on_chain = NodeRegistry::new(registry, &provider)
        .epochKeysDigest(operator.address(), 42, hash_a)
        .call()
        .await
        .expect("digest");
    assert_eq!(on_chain, slash::epoch_keys_digest(chain_id, registry, operator.address(), 42, hash_a));

    let hash_b = slash::keys_hash(&[[8; 32]]);
    let sign = |h| slash::sign_epoch_keys(operator, chain_id, registry, 42, h).expect("signs");
    let evidence =
        Equivocation { operator: operator.address(), epoch: 42, a: (hash_a, sign(hash_a)), b: (hash_b, sign(hash_b)) };
    let reporter = PrivateKeySigner::random();
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let eth = U256::from(10u64).pow(U256::from(18u64));
    deploy::fund(net.anvil.url(), &net.deployment, &deployer, reporter.address(), eth, U256::ZERO)
        .await
        .expect("funds");

    // The same statement twice is no equivocation; another operator's signature is not evidence.
    let same = Equivocation { b: evidence.a.clone(), ..evidence.clone() };
    assert!(slash::submit(net.anvil.url(), &net.deployment, &reporter, &same).await.is_err());
    let forged_b = slash::sign_epoch_keys(&reporter, chain_id, registry, 42, hash_b).expect("signs");
    let forged = Equivocation { b: (hash_b, forged_b), ..evidence.clone() };
    assert!(slash::submit(net.anvil.url(), &net.deployment, &reporter, &forged).await.is_err());

    slash::submit(net.anvil.url(), &net.deployment, &reporter, &evidence).await.expect("slashed");
    let token = NoxStakeToken::new(net.deployment.stake_token, &provider);
    let reward = token.balanceOf(reporter.address()).call().await.expect("balance");
    // 10 % (slash_reporter_bps = 1000) of node 1's stake of 1001.
    assert_eq!(reward, U256::from(100u64));
    let reader = RegistryReader::connect(net.anvil.url(), registry, None).await.expect("connects");
    let after = reader.snapshot(0).await.expect("verified");
    assert!(after.by_identity(&[1; 32]).is_none(), "a slashed node is no longer listed");
    assert_eq!(after.nodes.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_falls_over_between_endpoints_and_keeps_the_last_verified_snapshot() {
    use nox_chain::{ChainConfig, RegistryView};
    let net = net(2).await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let config = ChainConfig {
        rpc_urls: vec![dead.clone(), net.anvil.url().to_owned()],
        registry: net.deployment.registry,
        chain_id: net.deployment.chain_id,
        confirmations: 0,
        operator_key_file: None,
    };
    let mut view = RegistryView::new(config).expect("a view");
    assert!(view.last().is_none());
    // The first endpoint is down: the second one answers.
    let first = view.refresh().await.expect("falls over to the live endpoint");
    assert_eq!(first.nodes.len(), 2);
    // Every endpoint down: the refresh fails, naming each, and the last verified snapshot stays.
    let Net { anvil, .. } = net;
    drop(anvil);
    let err = view.refresh().await.unwrap_err().to_string();
    assert!(err.contains(&dead), "{err}");
    assert_eq!(view.last().as_deref(), Some(&*first));
    assert_eq!(view.membership().map(|m| m.len()), Some(2));
}
