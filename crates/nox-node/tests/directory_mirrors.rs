//! `[topology] url` + `mirrors`: a node starts from the second mirror when the first is down.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nox_directory::{DirectoryServer, Limits, Registry};
use nox_node::{TopologySection, initial_topology};
use nox_sphinx::{Geometry, SecretKey};
use nox_topology::{
    DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SigningKey, node_id_of,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// A registry holding one node per layer (3 layers), keys for the current and next epoch.
fn registry(authority: &SigningKey) -> Registry {
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let schedule = EpochSchedule::new(0, Duration::from_secs(100), Duration::from_secs(20), 1).unwrap();
    let layers = LayerCount::new(3).unwrap();
    let mut builder = DocumentBuilder::new(Geometry::default(), schedule);
    let mut filled = [false; 3];
    let mut port = 9100;
    while filled.iter().any(|f| !f) {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let identity = SigningKey::from_bytes(&seed);
        let layer = layers.assign(&node_id_of(&identity.verifying_key())).index();
        if filled[layer] {
            continue;
        }
        filled[layer] = true;
        rng.fill_bytes(&mut seed);
        let e = schedule.epoch_at(t0);
        let keys =
            (e..=e + 1).map(|epoch| EpochKey { epoch, key: SecretKey::generate(&mut rng).public_key() }).collect();
        port += 1;
        let descriptor = NodeDescriptor::new(
            identity.verifying_key(),
            LinkPublicKey::from_secret(&seed),
            ([127, 0, 0, 1], port).into(),
            layers,
            0,
            keys,
        );
        builder.add_node(descriptor.sign(&identity).unwrap());
    }
    let initial = builder.sign(authority, t0).unwrap().document().clone();
    Registry::from_document(authority.clone(), Geometry::default(), &initial, None, 25).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_starts_from_a_mirror_when_the_first_directory_is_down() {
    let authority = SigningKey::from_bytes(&[5; 32]);
    let server =
        DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry(&authority), Limits::default()).await.unwrap();
    let live = server.local_addr().unwrap();
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(server.serve(stop_rx));
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();

    let section = TopologySection {
        file: None,
        url: Some(format!("http://{down}")),
        mirrors: vec![format!("http://{live}/")],
        authority_key: Some(hex::encode(authority.verifying_key().to_bytes())),
        refresh_secs: 0,
    };
    let trust = nox_node::Trust::Authority(authority.verifying_key());
    let started = std::time::Instant::now();
    let topology = initial_topology(&section, &Geometry::default(), &trust, None).await.unwrap();
    assert_eq!(topology.nodes().len(), 3);
    assert!(started.elapsed() < Duration::from_secs(2), "no retry rounds were needed");

    // Only the down one: refused, naming it.
    let alone = TopologySection { mirrors: Vec::new(), ..section };
    let error =
        tokio::time::timeout(Duration::from_secs(30), initial_topology(&alone, &Geometry::default(), &trust, None))
            .await
            .unwrap()
            .unwrap_err()
            .to_string();
    assert!(error.contains(&down.to_string()), "{error}");
}

/// A node restarted while its only directory is down starts on the last topology it verified
/// (kept in its key directory), not on nothing; a cached document that no longer verifies
/// (here: under another authority) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_the_directory_down_uses_the_last_verified_topology() {
    let authority = SigningKey::from_bytes(&[6; 32]);
    let server =
        DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry(&authority), Limits::default()).await.unwrap();
    let live = server.local_addr().unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let served = tokio::spawn(server.serve(stop_rx));
    let state = std::env::temp_dir().join(format!("nox-last-verified-{}", std::process::id()));
    std::fs::create_dir_all(&state).unwrap();
    let cache = state.join(nox_node::LAST_VERIFIED);
    let _ = std::fs::remove_file(&cache);
    let section = TopologySection {
        file: None,
        url: Some(format!("http://{live}")),
        mirrors: Vec::new(),
        authority_key: Some(hex::encode(authority.verifying_key().to_bytes())),
        refresh_secs: 0,
    };
    let trust = nox_node::Trust::Authority(authority.verifying_key());
    let first = initial_topology(&section, &Geometry::default(), &trust, Some(&cache)).await.unwrap();
    assert!(cache.exists(), "the verified document is kept");

    // The directory goes away; the port refuses connections.
    stop.send(true).unwrap();
    let _ = served.await;
    let again = tokio::time::timeout(
        Duration::from_secs(30),
        initial_topology(&section, &Geometry::default(), &trust, Some(&cache)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(again.fingerprint(), first.fingerprint());

    // Without the cache: no topology at all.
    let none =
        tokio::time::timeout(Duration::from_secs(30), initial_topology(&section, &Geometry::default(), &trust, None))
            .await
            .unwrap();
    assert!(none.is_err());

    // A cached document the current trust does not accept is not used.
    let other = nox_node::Trust::Authority(SigningKey::from_bytes(&[7; 32]).verifying_key());
    let refused = tokio::time::timeout(
        Duration::from_secs(30),
        initial_topology(&section, &Geometry::default(), &other, Some(&cache)),
    )
    .await
    .unwrap();
    assert!(refused.is_err());
    let _ = std::fs::remove_dir_all(&state);
}
