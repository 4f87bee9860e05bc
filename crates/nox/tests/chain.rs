//! The chain as the source of membership, on real processes: `nox testnet up` starts Anvil,
//! deploys the contracts and registers 9 nodes with a stake; traffic is delivered; a 10th node
//! registers mid-run and is routed to; a node that leaves and a node slashed for equivocation by
//! a third party drop out of every view; descriptors the registry does not vouch for are
//! refused; a node that is not registered refuses to run.

use std::{path::Path, process::Command, time::Duration};

use nox_chain::U256;
use nox_sphinx::Geometry;
use nox_testnet::{metric, nodes, scrape};
use nox_topology::{TopologyError, Unvouched};

mod common;

use common::{
    NOX, Testnet, equivocating_mirror, port_base, run_ok, runtime, stake_and_balance, testnet_dir, wait_until,
};

/// Epoch length of the test network; nodes re-read the registry every quarter epoch.
const EPOCH_SECS: u64 = 12;

fn nox(args: &[&str], dir: &Path) -> String {
    run_ok(Command::new(NOX).args(args).arg("--dir").arg(dir), format_args!("nox {args:?}"))
}

/// The traffic summary line, and the testnet's status (drop reasons) to explain a loss.
fn delivered_fraction(dir: &Path, packets: u64) -> String {
    let out = nox(&["testnet", "traffic", "--packets", &packets.to_string()], dir);
    let line = out.lines().find(|l| l.starts_with("traffic:")).unwrap_or_default().to_owned();
    format!("{line}\n{}", nox(&["testnet", "status"], dir))
}

fn node_ids(dir: &Path) -> Vec<[u8; 32]> {
    let topology = nox_testnet::directory::topology(dir).expect("a verified topology");
    topology.nodes().iter().map(|n| n.descriptor.identity_key.to_bytes()).collect()
}

fn identity_of(node_dir: &Path) -> [u8; 32] {
    nox_keystore::load_identity(&node_dir.join("keys")).expect("identity").public().identity_key.to_bytes()
}

/// Waits until `check` holds (at most 1.5 epochs: a registry change reaches every view within
/// one epoch, the rest is margin for the directory's re-issue).
fn eventually(what: &str, check: impl Fn() -> bool) {
    let held = wait_until(Duration::from_secs(EPOCH_SECS * 3 / 2), Duration::from_millis(250), check);
    assert!(held, "not within an epoch: {what}");
}

#[test]
fn membership_follows_the_registry() {
    let dir = testnet_dir("nox-it", "chain");
    let base = port_base(24_000, 100, 30);
    let _ = std::fs::remove_dir_all(&dir);
    let out = nox(
        &[
            "testnet",
            "up",
            "--epoch-secs",
            &EPOCH_SECS.to_string(),
            "--overlap-secs",
            "3",
            "--base-port",
            &base.to_string(),
        ],
        &dir,
    );
    let net = Testnet::adopt(dir.clone());
    assert!(out.contains("registry 0x"), "{out}");
    let info = nox_testnet::chain::load(&dir).expect("chain.json");

    // 9 registered nodes, every one routable, traffic delivered.
    assert_eq!(node_ids(&dir).len(), 9);
    let first = nodes(&dir)[0].metrics;
    let text = scrape(first).expect("metrics");
    assert_eq!(metric(&text, "nox_chain_registered_nodes"), 9);
    assert_eq!(metric(&text, "nox_topology_nodes"), 9);
    assert!(text.contains("nox_chain_info{fingerprint=\"0x"), "{text}");
    let line = delivered_fraction(&dir, 300);
    assert!(line.contains("delivered 300 (100.0 %)"), "{line}");

    // Descriptors the registry does not vouch for are refused by clients.
    refuses_unvouched_descriptors(&dir);

    // `nox client --chain FILE`: no authority key, the registry vouches for the nodes and the
    // directory is only a mirror (issue 33).
    client_echo_from_the_chain(&dir);

    // A 10th node registers mid-run and is routed to within an epoch.
    let joined = nox_testnet::join_with(&dir, Path::new(NOX)).expect("joins");
    let new_id = identity_of(&joined);
    eventually("the new node in the client's view", || node_ids(&dir).contains(&new_id));
    eventually("every node routes to the new node", || {
        nodes(&dir).iter().all(|n| metric(&scrape(n.metrics).unwrap_or_default(), "nox_topology_nodes") == 10)
    });
    let received = |d: &Path| {
        let entry = nodes(&net.dir).into_iter().find(|n| n.dir == d).expect("listed");
        metric(&scrape(entry.metrics).unwrap_or_default(), "nox_packets_received_total")
    };
    let before = received(&joined);
    let line = delivered_fraction(&dir, 300);
    assert!(line.contains("delivered 300 (100.0 %)"), "{line}");
    assert!(received(&joined) > before, "the new node carried none of 300 packets");

    // A node leaves: out of the registry, then out of every view.
    let leaver = dir.join("node-2");
    let leaver_id = identity_of(&leaver);
    nox(&["testnet", "leave", "--node", "2"], &dir);
    eventually("the node that left is gone from the client's view", || !node_ids(&dir).contains(&leaver_id));

    // It refuses to run again: it is no longer registered.
    let out =
        Command::new(NOX).args(["node", "--config"]).arg(leaver.join("node.toml")).output().expect("run nox node");
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "an unregistered node ran");
    assert!(text.contains("is not registered"), "{text}");

    // An equivocating node is slashed by the watcher (`nox watch`, issue 33); it drops out of
    // every view. The node publishes one descriptor to the directory and serves a second one,
    // with another key for the same epoch, from a mirror of its own: both carry its operator's
    // statements, so together they are proof. The test never builds the evidence itself.
    let cheat = dir.join("node-5");
    let cheat_id = identity_of(&cheat);
    let operator = nox_testnet::chain::operator_key(&cheat).expect("operator key");
    let directory_addr = nox_testnet::directory::addr(&dir).expect("directory");
    let mirror = equivocating_mirror(
        directory_addr,
        &cheat.join("keys"),
        &operator,
        info.deployment.chain_id,
        info.deployment.registry,
    );

    // The watcher: its own account (a keystore, ETH for gas only), every mirror.
    let watch_dir = dir.join("watcher");
    std::fs::create_dir_all(&watch_dir).unwrap();
    std::fs::write(watch_dir.join("pass"), "watcher\n").unwrap();
    let keystore = watch_dir.join("reporter.json");
    let password = watch_dir.join("pass");
    let out = Command::new(NOX)
        .args(["operator", "new-key", "--keystore"])
        .arg(&keystore)
        .arg("--password-file")
        .arg(&password)
        .output()
        .expect("new-key");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let reporter: nox_chain::Address = text.split_whitespace().nth(1).expect("an address").parse().expect("address");
    let deployer = nox_chain::deploy::signer(nox_chain::anvil::DEV_KEY).expect("dev key");
    let (stake_before, tokens_before, bps) = runtime().block_on(async {
        let eth = U256::from(10u64).pow(U256::from(18u64));
        nox_chain::deploy::fund(&info.rpc_url, &info.deployment, &deployer, reporter, eth, U256::ZERO)
            .await
            .expect("funds the reporter");
        stake_and_balance(
            &info.rpc_url,
            info.deployment.registry,
            info.deployment.stake_token,
            operator.address(),
            reporter,
        )
        .await
    });
    assert!(stake_before > U256::ZERO && bps > 0);
    let chain_toml = nox_testnet::directory::process_dir(&dir).join("chain.toml");
    let log = std::fs::File::create(watch_dir.join("watch.log")).unwrap();
    let mut watch = Command::new(NOX)
        .args(["watch", "--chain"])
        .arg(&chain_toml)
        .args(["--directory", &format!("http://{directory_addr}"), "--directory", &format!("http://{mirror}")])
        .arg("--keystore")
        .arg(&keystore)
        .arg("--password-file")
        .arg(&password)
        .args(["--interval-secs", "1"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("nox watch starts");
    let slashed = wait_until(Duration::from_secs(30), Duration::from_millis(250), || {
        runtime()
            .block_on(stake_and_balance(
                &info.rpc_url,
                info.deployment.registry,
                info.deployment.stake_token,
                operator.address(),
                reporter,
            ))
            .0
            == U256::ZERO
    });
    // The stake reads zero as soon as the slash is mined, which can be before the watcher has
    // read its receipt and logged it: wait for the line before stopping the watcher.
    let logged = wait_until(Duration::from_secs(15), Duration::from_millis(100), || {
        std::fs::read_to_string(watch_dir.join("watch.log")).is_ok_and(|log| log.contains("slashed for equivocation"))
    });
    let _ = watch.kill();
    let _ = watch.wait();
    let log = std::fs::read_to_string(watch_dir.join("watch.log")).unwrap_or_default();
    assert!(slashed, "the watcher did not get the equivocating node slashed:\n{log}");
    assert!(logged && log.contains("slashed for equivocation"), "{log}");
    let (_, tokens_after, _) = runtime().block_on(stake_and_balance(
        &info.rpc_url,
        info.deployment.registry,
        info.deployment.stake_token,
        operator.address(),
        reporter,
    ));
    let share = stake_before * U256::from(bps) / U256::from(10_000u64);
    assert_eq!(tokens_after - tokens_before, share, "the reporter earns its share of the stake\n{log}");
    eventually("the slashed node is gone from the client's view", || !node_ids(&dir).contains(&cheat_id));
    eventually("every running node dropped the slashed one", || {
        nodes(&dir)
            .iter()
            .filter(|n| n.dir != leaver && n.dir != cheat)
            .all(|n| metric(&scrape(n.metrics).unwrap_or_default(), "nox_chain_registered_nodes") == 8)
    });
    let line = delivered_fraction(&dir, 300);
    assert!(line.contains("delivered 300 (100.0 %)"), "{line}");

    // An operator joins the running network with `nox operator` and `nox node --config` alone.
    operator_node_joins(&dir, &info);
    drop(net);
}

/// Issue 33: a new operator's node joins a running network from its keystore and configuration
/// alone — `nox operator new-key`, `init`, `register` against the testnet's registry (a
/// deployment record file), then `nox node --config node.toml` with no other flag, its
/// `[chain]` naming the registry by that preset only (`preset = "<record>"`): the node,
/// absent from the directory's document, announces its first descriptor itself and is admitted
/// (before, only `nox testnet join`, which uploads it for the node, could add a node).
fn operator_node_joins(dir: &Path, info: &nox_testnet::chain::ChainInfo) {
    let work = dir.join("joiner");
    std::fs::create_dir_all(&work).unwrap();
    let d = &info.deployment;
    let record = nox_operator::DeploymentRecord {
        chain_id: d.chain_id,
        factory: nox_chain::Address::ZERO,
        salt: Default::default(),
        start_block: d.block,
        testnet_verifier_keys: true,
        params: nox_operator::deploy::Params::development(),
        contracts: nox_operator::deploy::Contracts {
            stake_token: d.stake_token,
            registry: d.registry,
            executor: d.executor,
            ledger: d.ledger,
            erc20_payment: d.erc20_payment,
            pool: None,
        },
        mirrors: Vec::new(),
    };
    let record_file = record.store(&work).expect("record");
    std::fs::write(work.join("pass"), "joining operator\n").unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(NOX).current_dir(&work).args(args).output().expect("run nox");
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "nox {args:?} failed:\n{text}");
        text
    };
    let key = ["--keystore", "op.json", "--password-file", "pass"];
    let out = run(&["operator", "new-key", key[0], key[1], key[2], key[3]]);
    let operator: nox_chain::Address = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let deployer = nox_chain::deploy::signer(nox_chain::anvil::DEV_KEY).expect("dev key");
    runtime().block_on(async {
        let eth = U256::from(10u64).pow(U256::from(18u64));
        let stake = nox_testnet::chain::testnet_stake();
        nox_chain::deploy::fund(&info.rpc_url, d, &deployer, operator, eth, stake).await.expect("funds the operator");
    });
    let layers = nox_testnet::directory::topology(dir).expect("topology").layers();
    let directory = format!("http://{}", nox_testnet::directory::addr(dir).expect("a directory"));
    let listen = format!("127.0.0.1:{}", common::free_port());
    let chain = ["--chain", record_file.to_str().unwrap(), "--rpc", info.rpc_url.as_str()];
    let layer_count = layers.get().to_string();
    let mut init = vec!["operator", "init", "--dir", "node", "--listen", &listen, "--directory", &directory];
    init.extend(["--layers", &layer_count]);
    init.extend(chain);
    init.extend(key);
    run(&init);
    let identity = nox_keystore::load_identity(&work.join("node/keys")).expect("identity");
    let role = nox_testnet::chain::role(identity.public().layer(layers).0, layers.get()).to_string();
    let mut register =
        vec!["operator", "register", "--node-dir", "node", "--address", &listen, "--role", &role, "--yes"];
    register.extend(chain);
    register.extend(key);
    run(&register);

    // The node names its chain by the preset alone (issue 33): the deployment record's file
    // instead of the registry address and chain id `init` wrote (the RPC URL stays: the
    // testnet's Anvil is not on the preset's default port).
    let toml_path = work.join("node/node.toml");
    let text = std::fs::read_to_string(&toml_path).unwrap();
    let registry_line = format!("registry = \"{}\"\n", d.registry);
    let chain_id_line = format!("chain_id = {}\n", d.chain_id);
    assert!(text.contains(&registry_line) && text.contains(&chain_id_line), "{text}");
    let preset = format!("preset = {:?}\n", record_file.to_str().unwrap());
    let text = text.replace(&registry_line, &preset).replace(&chain_id_line, "");
    std::fs::write(&toml_path, text).unwrap();

    let id = identity.public().identity_key.to_bytes();
    assert!(!node_ids(dir).contains(&id));
    let log = std::fs::File::create(work.join("node.log")).unwrap();
    let mut node = Command::new(NOX)
        .args(["node", "--config"])
        .arg(work.join("node/node.toml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("nox node starts");
    let joined = wait_until(Duration::from_secs(60), Duration::from_millis(500), || node_ids(dir).contains(&id));
    let _ = node.kill();
    let _ = node.wait();
    let log = std::fs::read_to_string(work.join("node.log")).unwrap_or_default();
    assert!(joined, "the operator's node never joined the topology:\n{log}");
    assert!(log.contains("first descriptor announced"), "{log}");
}

/// A forged node and a tampered descriptor in the document a cache serves: left out, each with
/// its reason; the registered nodes still verify.
fn refuses_unvouched_descriptors(dir: &Path) {
    use nox_topology::{NodeDescriptor, SigningKey};
    let runtime = runtime();
    let trust = runtime.block_on(nox_testnet::chain::trust(dir)).expect("trust").expect("a chain");
    let addr = nox_testnet::directory::addr(dir).expect("directory");
    let mut document = runtime
        .block_on(nox_directory::fetch_document(addr, Duration::from_secs(3)))
        .expect("the directory's document");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();

    // A node nobody registered, signing its own descriptor, with the epoch keys of a real node.
    let mut forged = document.nodes[0].descriptor.clone();
    let stranger = SigningKey::from_bytes(&[0x5a; 32]);
    forged = NodeDescriptor::new(
        stranger.verifying_key(),
        nox_topology::LinkPublicKey::from_secret(&[0x5b; 32]),
        "127.0.0.1:1".parse().expect("addr"),
        nox_topology::LayerCount::new(3).expect("layers"),
        0,
        forged.sphinx_keys.iter().map(|k| nox_topology::EpochKey { epoch: k.epoch, key: k.key.clone() }).collect(),
    );
    let forged_id = forged.node_id();
    document.nodes.push(forged.sign(&stranger).expect("self-signed"));
    // A registered node re-signs its descriptor with another address.
    let victim = document.nodes[1].clone();
    let node_dir = nodes(dir)
        .into_iter()
        .find(|n| identity_of(&n.dir) == victim.descriptor.identity_key.to_bytes())
        .expect("the victim's directory");
    let identity = nox_keystore::load_identity(&node_dir.dir.join("keys")).expect("identity");
    let mut moved = victim.descriptor.clone();
    moved.address = "127.0.0.1:2".parse().expect("addr");
    document.nodes[1] = moved.sign(identity.signing_key()).expect("signs");
    let victim_id = victim.node_id();

    let verified = runtime.block_on(trust.verify(&document, &Geometry::default(), now)).expect("the rest verifies");
    let rejected = verified.rejected();
    assert!(
        rejected.contains(&(forged_id, TopologyError::Unvouched { node: forged_id, reason: Unvouched::NotRegistered }))
    );
    assert!(
        rejected
            .contains(&(victim_id, TopologyError::Unvouched { node: victim_id, reason: Unvouched::AddressDiffers }))
    );
    assert!(verified.node(&forged_id).is_none() && verified.node(&victim_id).is_none());
    assert_eq!(verified.nodes().len(), 8);
}

/// `nox client echo --chain <chain.toml> --directory URL`: a reply through the network whose
/// topology is verified against the registry alone; the same mirror under a wrong registry
/// address is refused (no document verifies), so the chain really is the trust root. The same
/// mirror under the directory's authority key (`--authority`, the path `--chain` shares) works too.
fn client_echo_from_the_chain(dir: &Path) {
    let directory = format!("http://{}", nox_testnet::directory::addr(dir).expect("a directory"));
    let chain_toml = nox_testnet::directory::process_dir(dir).join("chain.toml");
    let echo_with = |trust: &[&std::ffi::OsStr]| {
        let out = Command::new(NOX)
            .args(["client", "echo", "--timeout-secs", "20", "--directory", &directory])
            .args(trust)
            .arg("from the chain")
            .output()
            .expect("run nox client echo");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let echo = |chain: &Path| echo_with(&["--chain".as_ref(), chain.as_os_str()]);
    let (success, stdout, stderr) = echo(&chain_toml);
    assert!(success, "echo failed: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().next(), Some("from the chain"), "{stdout}");
    let authority = std::fs::read_to_string(dir.join("authority.pub")).expect("authority.pub");
    let (success, stdout, stderr) = echo_with(&["--authority".as_ref(), authority.trim().as_ref()]);
    assert!(success, "echo under the authority key failed: {stdout}\n{stderr}");
    let text = std::fs::read_to_string(&chain_toml).unwrap();
    let info = nox_testnet::chain::load(dir).expect("chain.json");
    let wrong = dir.join("wrong-registry.toml");
    let registry = info.deployment.registry.to_string();
    assert!(text.contains(&registry), "{text}");
    std::fs::write(&wrong, text.replace(&registry, &info.deployment.stake_token.to_string())).unwrap();
    let (success, _, stderr) = echo(&wrong);
    assert!(!success, "a client trusted a registry that is not one: {stderr}");
}
