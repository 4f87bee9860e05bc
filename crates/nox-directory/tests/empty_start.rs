//! A directory that starts empty (no `initial_document`): it serves 503 with the reason until
//! every layer has an admitted node's valid descriptor, signs its first document on the upload
//! that fills the last layer, keeps the schedule chosen at its first start across restarts, and
//! refuses a bad configuration naming the key at fault.

mod common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nox_directory::{
    Accepted, DirectoryConfig, DirectoryServer, Genesis, Limits, NetworkParameters, Refusal, Registry, ScheduleSection,
    fetch_document, fetch_parameters, get_blocking, resolve_schedule, upload_descriptor,
};
use nox_sphinx::Geometry;
use nox_topology::{LayerCount, SigningKey, VerifyConfig};

/// At `T0` the epoch is 10 (the fixture's 100 s epochs from genesis 0).
const T0: u64 = 1000;

fn authority() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

/// The fixture's three nodes (one per layer) and an empty registry admitting them.
fn empty_net(t0: u64) -> (Vec<common::Node>, Registry) {
    let net = common::net(t0);
    let admitted = net.nodes.iter().map(|n| n.identity.verifying_key()).collect();
    let registry =
        Registry::empty(authority(), Geometry::default(), net.schedule, LayerCount::new(3).unwrap(), admitted, 25);
    (net.nodes, registry)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nox-directory-empty-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_empty_registry_has_no_document_and_says_which_layers_it_waits_for() {
    let (_, mut registry) = empty_net(T0);
    assert!(registry.current().is_none());
    assert_eq!(registry.empty_layers(T0).len(), 3);
    let why = registry.waiting(T0).unwrap();
    assert!(why.contains("3 of 3 layers have none (layer 0, 1, 2)") && why.contains("0 of 3 admitted"), "{why}");
    // Nothing to re-issue: no error, still nothing served.
    assert_eq!(registry.refresh(T0 + 1), Ok(false));
    assert!(registry.current().is_none());
}

#[test]
fn partial_layers_wait_and_the_upload_filling_the_last_layer_signs_the_first_document() {
    let (nodes, mut registry) = empty_net(T0);
    assert_eq!(registry.submit(nodes[0].descriptor(), T0), Ok(Accepted::Waiting { empty_layers: 2 }));
    assert!(registry.current().is_none());
    // The same upload again: unchanged, still waiting.
    assert_eq!(registry.submit(nodes[0].descriptor(), T0 + 1), Ok(Accepted::Unchanged));
    assert_eq!(registry.submit(nodes[1].descriptor(), T0 + 2), Ok(Accepted::Waiting { empty_layers: 1 }));
    assert_eq!(registry.refresh(T0 + 3), Ok(false), "a layer is still empty");
    let why = registry.waiting(T0 + 3).unwrap();
    let last = nodes[2].descriptor().descriptor.layer.0;
    assert!(why.contains(&format!("1 of 3 layers have none (layer {last})")) && why.contains("2 of 3"), "{why}");

    // The acceptance rules hold before the first document too.
    let mut bad = nodes[2].descriptor();
    bad.descriptor.pow_difficulty = 7; // after signing
    assert_eq!(registry.submit(bad, T0 + 4), Err(Refusal::BadSignature));
    let stranger = common::Node { identity: SigningKey::from_bytes(&[1; 32]), ..empty_net(T0).0.remove(2) };
    assert!(matches!(registry.submit(stranger.descriptor(), T0 + 4), Err(Refusal::UnknownIdentity(_))));
    assert!(registry.current().is_none());

    assert_eq!(registry.submit(nodes[2].descriptor(), T0 + 5), Ok(Accepted::Updated { issued_at: T0 + 5 }));
    let first = registry.current().expect("the first document");
    assert_eq!((first.issued_at(), first.nodes().len()), (T0 + 5, 3));
    assert!(registry.waiting(T0 + 5).is_none());
    // It verifies under the authority key, as a client checks it.
    let config = VerifyConfig::new(authority().verifying_key(), Geometry::default());
    first.document().verify(&config, T0 + 6).expect("the first document verifies");
}

#[test]
fn an_upload_that_would_make_a_bad_first_document_is_refused_and_not_kept() {
    let (nodes, mut registry) = empty_net(T0);
    registry.submit(nodes[0].descriptor(), T0).unwrap();
    registry.submit(nodes[1].descriptor(), T0).unwrap();
    // The last node reuses node 0's Sphinx keys: the document would not verify.
    let reused = nodes[2].with(|d| d.sphinx_keys = nodes[0].keys.clone());
    assert!(matches!(registry.submit(reused, T0 + 1), Err(Refusal::Document(_))), "a reused key is refused");
    assert!(registry.current().is_none());
    assert_eq!(registry.empty_layers(T0 + 1).len(), 1, "the refused upload was not kept");
    assert!(matches!(registry.submit(nodes[2].descriptor(), T0 + 2), Ok(Accepted::Updated { .. })));
}

#[test]
fn admission_from_the_chain_fills_an_empty_registry() {
    let net = common::net(T0);
    let mut registry =
        Registry::empty(authority(), Geometry::default(), net.schedule, LayerCount::new(3).unwrap(), Vec::new(), 25);
    assert!(matches!(registry.submit(net.nodes[0].descriptor(), T0), Err(Refusal::UnknownIdentity(_))));
    let members: Vec<[u8; 32]> = net.nodes.iter().map(|n| n.identity.verifying_key().to_bytes()).collect();
    assert_eq!(registry.set_admitted(members.clone(), T0), Ok(true));
    for (i, node) in net.nodes.iter().enumerate() {
        let accepted = registry.submit(node.descriptor(), T0 + 1).unwrap();
        assert_eq!(matches!(accepted, Accepted::Updated { .. }), i == 2, "{accepted:?}");
    }
    assert_eq!(registry.current().unwrap().nodes().len(), 3);
}

#[test]
fn parameters_round_trip_and_a_bad_body_is_named() {
    let (_, registry) = empty_net(T0);
    let parameters = NetworkParameters {
        schedule: *registry.schedule(),
        layers: registry.layers(),
        sphinx_scheme: nox_sphinx::Scheme::XWing,
        packet_len: 8192,
    };
    assert_eq!(NetworkParameters::parse(parameters.render().as_bytes()).unwrap(), parameters);
    let text = parameters.render();
    for (bad, expected) in [
        (text.replace("layers = 3", "layers = 0"), "layers 0"),
        (text.replace("packet_len = 8192", "packet_len = 3000"), "3000"),
        (text.replace("xwing", "kyber"), "kyber"),
        (text.replace("overlap_secs = 20", "overlap_secs = 100"), "schedule"),
        (text + "extra = 1\n", "unknown field"),
    ] {
        let error = NetworkParameters::parse(bad.as_bytes()).unwrap_err().to_string();
        assert!(error.starts_with("directory parameters:") && error.contains(expected), "{bad}: {error}");
    }
}

#[test]
fn genesis_now_is_kept_so_a_restart_keeps_the_schedule() {
    let section = ScheduleSection { genesis: Genesis::Now, epoch_secs: 60, overlap_secs: 10, publish_ahead: 1 };
    let (first, kept) = resolve_schedule(&section, None, 5_000).unwrap();
    assert_eq!((first.genesis_unix(), first.epoch_length().as_secs()), (5_000, 60));
    let kept = kept.expect("a first start keeps its schedule");
    // A restart an hour later: the kept genesis, nothing new to write.
    let (again, rewrite) = resolve_schedule(&section, Some(&kept), 8_600).unwrap();
    assert_eq!((again, rewrite), (first, None));
    // A restart whose [schedule] changed the epoch length is refused, naming both.
    let longer = ScheduleSection { epoch_secs: 120, ..section.clone() };
    let error = resolve_schedule(&longer, Some(&kept), 8_600).unwrap_err().to_string();
    assert!(error.contains("differs from the one kept in state_file") && error.contains("epoch_secs 60"), "{error}");
    // A fixed genesis other than the kept one, too.
    let moved = ScheduleSection { genesis: Genesis::At(4_000), ..section.clone() };
    assert!(resolve_schedule(&moved, Some(&kept), 8_600).is_err());
    // A damaged state file is named.
    let error = resolve_schedule(&section, Some("genesis_unix = \"x\""), 1).unwrap_err().to_string();
    assert!(error.contains("state_file"), "{error}");
}

/// The config files of an empty start in `dir`, `extra` appended.
fn write_config(dir: &std::path::Path, extra: &str) -> PathBuf {
    std::fs::write(dir.join("authority.key"), hex::encode([9u8; 32])).unwrap();
    let path = dir.join("directory.toml");
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\nauthority_key_file = {:?}\nstate_file = {:?}\n{extra}",
            dir.join("authority.key").display().to_string(),
            dir.join("directory.state").display().to_string(),
        ),
    )
    .unwrap();
    path
}

#[test]
fn the_state_file_written_at_the_first_start_gives_the_same_genesis_after_a_restart() {
    let dir = scratch("restart");
    let path = write_config(&dir, "[schedule]\ngenesis = \"now\"\nepoch_secs = 60\noverlap_secs = 10\n");
    let config = DirectoryConfig::load(&path).unwrap();
    let first = config.registry_at(Geometry::default(), 7_000).unwrap();
    assert_eq!(first.schedule().genesis_unix(), 7_000);
    assert!(first.current().is_none());
    let restarted = config.registry_at(Geometry::default(), 9_999).unwrap();
    assert_eq!(restarted.schedule(), first.schedule(), "the restart keeps the first start's genesis");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restart_after_the_first_document_serves_the_kept_document() {
    let dir = scratch("kept");
    let net = common::net(T0);
    let admitted: Vec<String> =
        net.nodes.iter().map(|n| format!("{:?}", hex::encode(n.identity.verifying_key().to_bytes()))).collect();
    // The fixture's schedule: genesis 0, 100 s epochs, 20 s overlap, one ahead.
    let schedule = "[schedule]\ngenesis = 0\nepoch_secs = 100\noverlap_secs = 20\n";
    let path = write_config(&dir, &format!("admitted = [{}]\n{schedule}", admitted.join(", ")));
    let config = DirectoryConfig::load(&path).unwrap();
    let mut registry = config.registry_at(Geometry::default(), T0).unwrap();
    for node in &net.nodes {
        registry.submit(node.descriptor(), T0 + 1).unwrap();
    }
    let first = registry.current().unwrap().document().clone();
    // What `run` keeps after each issue.
    let kept = config.document_file().expect("an empty start keeps its documents");
    assert_eq!(kept, dir.join("directory.document.json"));
    std::fs::write(&kept, first.to_json().unwrap()).unwrap();
    let restarted = config.registry_at(Geometry::default(), T0 + 50).unwrap();
    assert_eq!(restarted.current().map(|c| c.document()), Some(&first), "the kept document is served again");

    // A kept document of another network is refused, named.
    let mut builder = nox_topology::DocumentBuilder::new(
        Geometry::default(),
        nox_topology::EpochSchedule::new(0, Duration::from_secs(100), Duration::from_secs(30), 1).unwrap(),
    );
    for node in &net.nodes {
        builder.add_node(node.descriptor());
    }
    let foreign = builder.sign(&authority(), T0 + 1).unwrap();
    std::fs::write(&kept, foreign.document().to_json().unwrap()).unwrap();
    let error = config.registry_at(Geometry::default(), T0 + 50).map(|_| ()).unwrap_err().to_string();
    assert!(error.contains("kept document") && error.contains("schedule differs"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_empty_start_configuration_is_refused_naming_the_key() {
    let dir = scratch("bad");
    let error_of = |extra: &str| -> String {
        let path = write_config(&dir, extra);
        match DirectoryConfig::load(&path) {
            Err(error) => error.to_string(),
            Ok(config) => config.registry_at(Geometry::default(), 100).map(|_| ()).unwrap_err().to_string(),
        }
    };
    let cases = [
        ("", "no initial_document and no [schedule]"),
        ("[schedule]\ngenesis = \"tomorrow\"\n", "genesis \"tomorrow\""),
        ("[schedule]\ngenesis = -5\n", "genesis -5"),
        ("[schedule]\n", "genesis"),
        ("[schedule]\ngenesis = \"now\"\nepoch_secs = 60\noverlap_secs = 60\n", "[schedule]"),
        ("[schedule]\ngenesis = \"now\"\nepoch_secs = 0\n", "[schedule]"),
        ("[schedule]\ngenesis = \"now\"\npublish_ahead = 99\n", "[schedule]"),
        ("[schedule]\ngenesis = \"now\"\nepoch = 60\n", "unknown field `epoch`"),
        ("initial_document = \"/nonexistent\"\n[schedule]\ngenesis = \"now\"\n", "[schedule] with initial_document"),
        ("layers = 0\n[schedule]\ngenesis = \"now\"\n", "layers 0"),
        ("admitted = [\"zz\"]\n[schedule]\ngenesis = \"now\"\n", "admitted"),
    ];
    for (extra, expected) in cases {
        let _ = std::fs::remove_file(dir.join("directory.state"));
        let error = error_of(extra);
        assert!(error.contains(expected), "{extra:?}: {error}");
    }
    // Without state_file: named.
    let path = dir.join("no-state.toml");
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\nauthority_key_file = {:?}\n[schedule]\ngenesis = \"now\"\n",
            dir.join("authority.key").display().to_string()
        ),
    )
    .unwrap();
    let error = DirectoryConfig::load(&path).unwrap().registry_at(Geometry::default(), 1).unwrap_err().to_string();
    assert!(error.contains("[schedule] without state_file"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_refuses_an_empty_start_that_could_admit_nobody() {
    let dir = scratch("nobody");
    let path = write_config(&dir, "[schedule]\ngenesis = \"now\"\n");
    let config = DirectoryConfig::load(&path).unwrap();
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let error = nox_directory::run(config, Geometry::default(), stop_rx).await.unwrap_err().to_string();
    assert!(error.contains("no `admitted` list") && error.contains("--chain"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_503_with_the_reason_until_the_last_layer_then_the_signed_document() {
    const PATIENCE: Duration = Duration::from_secs(5);
    let t0 = now();
    let (nodes, registry) = empty_net(t0);
    let schedule = *registry.schedule();
    let server = DirectoryServer::bind(([127, 0, 0, 1], 0).into(), registry, Limits::default()).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let serving = tokio::spawn(server.serve(stop_rx));
    let get = |path: &'static str| async move {
        tokio::task::spawn_blocking(move || get_blocking(addr, path, PATIENCE)).await.unwrap().unwrap()
    };

    let (status, body) = get("/topology").await;
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("no topology document yet") && body.contains("3 of 3 layers"), "{body}");
    // The parameters a node builds its first descriptor from, served without a document.
    let parameters = fetch_parameters(addr, PATIENCE).await.unwrap();
    let expected = NetworkParameters {
        schedule,
        layers: LayerCount::new(3).unwrap(),
        sphinx_scheme: Geometry::default().scheme(),
        packet_len: Geometry::default().packet_len(),
    };
    assert_eq!(parameters, expected);
    // Through the mirror list too, the first (down) mirror skipped.
    let down: std::net::SocketAddr = ([127, 0, 0, 1], 1).into();
    let mirrors = nox_directory::Mirrors::new(vec![down, addr]).unwrap();
    assert_eq!(mirrors.parameters(PATIENCE).await.unwrap(), expected);
    assert!(mirrors.first_document_pending(PATIENCE).await, "an empty start is told apart");

    for node in &nodes[..2] {
        let answer = upload_descriptor(addr, &node.descriptor(), PATIENCE).await.unwrap();
        assert!(answer.starts_with("accepted; no document yet"), "{answer}");
    }
    let (status, body) = get("/topology").await;
    assert_eq!(status, 503);
    assert!(String::from_utf8_lossy(&body).contains("1 of 3 layers"));
    assert!(fetch_document(addr, PATIENCE).await.unwrap_err().to_string().contains("503"));

    let answer = upload_descriptor(addr, &nodes[2].descriptor(), PATIENCE).await.unwrap();
    assert!(answer.starts_with("accepted; document issued"), "{answer}");
    assert!(!mirrors.first_document_pending(PATIENCE).await, "a document is served now");
    let document = fetch_document(addr, PATIENCE).await.unwrap();
    let verified =
        document.verify(&VerifyConfig::new(authority().verifying_key(), Geometry::default()), now()).unwrap();
    assert_eq!(verified.nodes().len(), 3);
    let (_, metrics) = get("/metrics").await;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("outcome=\"waiting\"} 4") && metrics.contains("outcome=\"accepted_waiting\"} 2"),
        "{metrics}"
    );

    stop.send(true).unwrap();
    serving.await.unwrap().unwrap();
}
