//! A network started from a directory with no initial document (issue 33): `nox directory`
//! with `[schedule] genesis = "now"`, a `state_file` and an `admitted` list (no chain) answers
//! `GET /topology` with 503 and the empty layers and serves `GET /parameters`; three `nox node`s
//! on loopback, started from their configurations alone (the entry first and alone: it waits,
//! it does not stop), upload their first descriptors; the directory signs its first document
//! when the last layer's arrives, the nodes run on it, and `nox client echo --directory URL
//! --authority KEY` gets a reply. A restarted directory keeps the genesis of its first start and
//! serves the last document it issued. Run under the e2e lock:
//! `flock /tmp/nox-e2e.lock cargo test -p nox --test directory_empty`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use nox_topology::{LayerCount, SigningKey};

mod common;

use common::{NOX, Processes, free_port, logs, spawn_logged as spawn, testnet_dir, wait_listening, wait_until};

const PATIENCE: Duration = Duration::from_secs(5);

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let (status, body) = nox_directory::get_blocking(addr, path, PATIENCE).expect("the directory answers");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_network_starts_from_an_empty_directory_and_a_client_gets_a_reply() {
    let dir = testnet_dir("nox-it", "directory-empty");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The processes the test started, stopped on every exit path.
    let mut net = Processes::new(dir.clone());

    // Three nodes' keys, one per layer (the layer follows from the identity key).
    let layers = LayerCount::new(3).unwrap();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(33);
    let mut nodes: Vec<Option<PathBuf>> = vec![None; 3];
    let mut attempt = 0;
    while nodes.iter().any(Option::is_none) {
        let keys = dir.join(format!("keys-{attempt}"));
        attempt += 1;
        let identity = nox_keystore::generate_identity(&keys, &mut rng).expect("node keys");
        let layer = usize::from(identity.public().layer(layers).0);
        if nodes[layer].is_none() {
            nodes[layer] = Some(keys);
        }
    }
    let nodes: Vec<PathBuf> = nodes.into_iter().map(Option::unwrap).collect();
    let identities: Vec<String> = nodes
        .iter()
        .map(|keys| {
            let identity = nox_keystore::load_identity(keys).expect("identity");
            format!("{:?}", hex::encode(identity.public().identity_key.to_bytes()))
        })
        .collect();

    // The directory: no initial document, genesis at its first start, the three identities.
    let authority = SigningKey::from_bytes(&[0x42; 32]);
    let authority_hex = hex::encode(authority.verifying_key().to_bytes());
    std::fs::write(dir.join("authority.key"), hex::encode([0x42u8; 32])).unwrap();
    let dir_port = free_port();
    let directory_addr: SocketAddr = ([127, 0, 0, 1], dir_port).into();
    let directory_toml = dir.join("directory.toml");
    std::fs::write(
        &directory_toml,
        format!(
            "listen = \"{directory_addr}\"\nauthority_key_file = {:?}\nstate_file = {:?}\nadmitted = [{}]\nlayers = 3\n\n[schedule]\ngenesis = \"now\"\nepoch_secs = 3600\noverlap_secs = 300\n",
            dir.join("authority.key").display().to_string(),
            dir.join("directory.state").display().to_string(),
            identities.join(", "),
        ),
    )
    .unwrap();
    let start_directory = |net: &mut Processes, log: &str| {
        let mut directory = Command::new(NOX);
        directory.args(["directory", "--config"]).arg(&directory_toml);
        net.children.push(spawn(&dir, log, &mut directory));
        assert!(
            wait_listening(directory_addr, Duration::from_secs(10)),
            "the directory did not listen:\n{}",
            logs(&dir, &[log])
        );
    };
    start_directory(&mut net, "directory.log");

    // No document yet: 503 naming what it waits for; the parameters are served.
    let (status, body) = get(directory_addr, "/topology");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("no topology document yet") && body.contains("3 of 3 layers have none"), "{body}");
    let (status, body) = get(directory_addr, "/parameters");
    assert_eq!(status, 200, "{body}");
    let parameters = nox_directory::NetworkParameters::parse(body.as_bytes()).expect("parameters");
    let schedule = parameters.schedule;
    assert_eq!((parameters.layers, schedule.epoch_length().as_secs()), (layers, 3600));

    // The nodes start from their configurations alone, the entry first and alone: it takes the
    // schedule from the directory's parameters, uploads its first descriptor and waits (it does
    // not stop) while the directory still has empty layers.
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let node_logs = ["node0.log", "node1.log", "node2.log"];
    let start_node = |net: &mut Processes, i: usize| {
        let config = format!(
            "[node]\nkey_dir = {:?}\nlisten = \"127.0.0.1:{}\"\nlayers = 3\n\n[mixing]\nmean_delay_ms = 1.0\n\n[pipeline]\nworkers = 1\n\n[cover]\nloop_rate = 1.0\ndrop_rate = 0.0\n\n[admission]\nmax_connections_per_address = 1000\nmax_connections_per_subnet = 1000\nban_on_offence = false\n\n[topology]\nurl = \"http://{directory_addr}\"\nauthority_key = \"{authority_hex}\"\n",
            nodes[i].display().to_string(),
            ports[i],
        );
        let path = dir.join(format!("node{i}.toml"));
        std::fs::write(&path, config).unwrap();
        let mut node = Command::new(NOX);
        node.args(["node", "--config"]).arg(&path);
        net.children.push(spawn(&dir, node_logs[i], &mut node));
    };
    start_node(&mut net, 0);
    assert!(
        wait_until(Duration::from_secs(30), Duration::from_millis(200), || get(directory_addr, "/topology")
            .1
            .contains("2 of 3 layers have none")),
        "the entry's first descriptor was not kept:\n{}",
        logs(&dir, &["directory.log", "node0.log"])
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(net.children[1].try_wait().unwrap().is_none(), "the entry stopped:\n{}", logs(&dir, &["node0.log"]));
    assert_eq!(get(directory_addr, "/topology").0, 503, "no document with two empty layers");

    // The other layers' nodes: the first document, signed by the directory, and all three run.
    start_node(&mut net, 1);
    start_node(&mut net, 2);
    let started =
        |i: usize| std::fs::read_to_string(dir.join(node_logs[i])).unwrap_or_default().contains("node started");
    assert!(
        wait_until(Duration::from_secs(60), Duration::from_millis(200), || (0..3).all(started)),
        "the nodes did not all start:\n{}",
        logs(&dir, &["directory.log", "node0.log", "node1.log", "node2.log"])
    );
    let (status, body) = get(directory_addr, "/topology");
    assert_eq!(status, 200, "{body}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let document = nox_topology::TopologyDocument::from_json(body.as_bytes()).unwrap();
    let verify = nox_topology::VerifyConfig::new(authority.verifying_key(), nox_sphinx::Geometry::default());
    let first = document.verify(&verify, now).expect("the first document verifies");
    assert_eq!((first.nodes().len(), *first.schedule()), (3, schedule));

    // A client that knows only the directory's URL and the authority key gets a reply.
    let out = Command::new(NOX)
        .args(["client", "echo", "--timeout-secs", "30", "--directory", &format!("http://{directory_addr}")])
        .args(["--authority", &authority_hex, "from an empty directory"])
        .output()
        .expect("run nox client echo");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.lines().next() == Some("from an empty directory"),
        "echo failed: {stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(&dir, &node_logs)
    );

    // The directory keeps each document it issues (checked every second) beside its state file.
    let kept = dir.join("directory.document.json");
    assert!(
        wait_until(Duration::from_secs(5), Duration::from_millis(100), || kept.exists()),
        "the last document was not kept"
    );
    // A restart keeps the genesis chosen at the first start (the state file).
    let state = std::fs::read_to_string(dir.join("directory.state")).expect("the state file");
    assert!(state.contains(&format!("genesis_unix = {}", schedule.genesis_unix())), "{state}");
    let mut directory = net.children.remove(0);
    let _ = directory.kill();
    let _ = directory.wait();
    start_directory(&mut net, "directory2.log");
    let (_, body) = get(directory_addr, "/parameters");
    let again = nox_directory::NetworkParameters::parse(body.as_bytes()).expect("parameters");
    assert_eq!(again.schedule, schedule, "the restarted directory keeps the genesis");
    // ...and serves the last document it issued (kept beside the state file) at once.
    let (status, body) = get(directory_addr, "/topology");
    assert_eq!(status, 200, "{body}");
    let served = nox_topology::TopologyDocument::from_json(body.as_bytes()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(served.verify(&verify, now).expect("it verifies").nodes().len(), 3);
}
