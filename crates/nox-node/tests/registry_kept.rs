//! A node restarted while no registry endpoint answers starts on the registry snapshot it kept
//! (`<key_dir>/registry.last.json`) instead of failing; a kept file that does not match its
//! fingerprint is not used.

use nox_chain::{Address, ChainConfig, RegisteredNode, RegistrySnapshot, U256, fingerprint};

fn snapshot(registry: Address) -> RegistrySnapshot {
    let nodes = vec![RegisteredNode {
        operator: Address::repeat_byte(3),
        identity_key: [4; 32],
        link_key: [5; 32],
        link_address: "127.0.0.1:9001".into(),
        role: nox_chain::snapshot::ROLE_RELAY,
        stake: U256::from(1_000_000u64),
    }];
    RegistrySnapshot {
        chain_id: 31337,
        registry,
        block: 77,
        version: 1,
        fingerprint: fingerprint(31337, registry, &nodes),
        nodes,
    }
}

#[tokio::test]
async fn a_restart_without_rpc_starts_on_the_kept_snapshot() {
    // A port nothing listens on: every read is refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let registry = Address::repeat_byte(0xee);
    let config = ChainConfig {
        rpc_urls: vec![format!("http://{closed}")],
        registry,
        chain_id: 31337,
        confirmations: 0,
        operator_key_file: None,
    };
    let dir = std::env::temp_dir().join(format!("nox-registry-kept-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kept = dir.join(nox_node::REGISTRY_LAST_VERIFIED);
    let expected = snapshot(registry);
    std::fs::write(&kept, expected.to_json()).unwrap();

    let chain = nox_node::ChainMembership::start_keeping(config.clone(), Some(kept.clone())).await.unwrap();
    assert_eq!(*chain.last().await, expected);
    assert_eq!(chain.status().block, 77);
    // Right after the failed start, a refresh answers with the kept snapshot without asking the
    // endpoints again (no new failure is counted).
    assert_eq!(*chain.refresh().await, expected);
    assert_eq!(chain.status().errors, 1, "no new read within RETRY_AFTER_FAILURE");

    // Edited on disk (another stake): refused, and with no endpoint the start fails.
    let edited = expected.to_json().replace("\"1000000\"", "\"1\"");
    assert_ne!(edited, expected.to_json());
    std::fs::write(&kept, edited).unwrap();
    assert!(nox_node::ChainMembership::start_keeping(config.clone(), Some(kept)).await.is_err());
    // Nothing kept: the start fails too.
    assert!(nox_node::ChainMembership::start(config).await.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
