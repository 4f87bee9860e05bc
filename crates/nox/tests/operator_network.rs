//! The operator's network end to end (issue 33, "What it must show"): `nox deploy` on a fresh
//! Anvil (the record listing the directory mirror), three operators register with `nox operator
//! register` from Web3 Secret Storage keystores, the directory starts empty and their nodes,
//! each in its own network namespace behind the userspace WAN relay (three regions), start from
//! `nox node --config` alone (`[chain] preset` = the deployment record) and announce themselves
//! for its first document; a client that trusts only the chain (the registry vouches for every
//! descriptor; the directory is an untrusted mirror) gets replies through them; two wallets
//! find the pool and the mixnet from the record, one pays the other through the exit's relayer
//! (its operator's keystore) and the exit's operator claims the fee; one operator equivocates and
//! `nox watch` gets it slashed, earning the reporter's share.
//!
//! Every process is on a host of its own (`nox_testnet::hosts`): Anvil and the directory in the
//! chain's namespace (region eu-central-1), each node in its own, the client, the wallets' daemon
//! and wallets, the watcher and the exit operator's status and claim in the clients' namespace
//! (eu-west-1); every path between two hosts goes through the WAN relay, and the record, the
//! configs and the commands name the chain's and the directory's public address, never
//! 127.0.0.1. The deployer and the registering operators run from this machine's namespace
//! (region eu-west-1, through the relay as well); the equivocating mirror is served from it,
//! behind a relay route of its own. Teardown leaves the namespaces as they were.
//!
//! Needs root and `ip netns` (CI has both); skips with a message otherwise. Run under the e2e
//! lock: `flock /tmp/nox-e2e.lock cargo test -p nox --test operator_network`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nox_chain::U256;
use nox_chain::anvil::DEV_KEY;
use nox_testnet::hosts::{HostPlan, ServiceHost};
use nox_testnet::wan::{Plan, Profile, Route, Wan};
use nox_topology::LayerCount;

mod common;

use common::{
    NOX, Processes, accepts, equivocating_mirror, port_base, run_ok, runtime, spawn_logged as spawn, stake_and_balance,
    testnet_dir, wait_listening, wait_until,
};

const LAYERS: u8 = 3;

/// Everything the test started, stopped on every exit path: node processes, the directory, the
/// watcher, Anvil, the WAN relays, then the namespaces.
type Network = Processes;

fn run(dir: &Path, args: &[&str]) -> String {
    run_on(None, dir, args)
}

/// `nox <args>` on `host` (this machine's namespace if `None`).
fn run_on(host: Option<&ServiceHost>, dir: &Path, args: &[&str]) -> String {
    run_ok(nox_on(host).current_dir(dir).args(args), format_args!("nox {args:?}"))
}

/// A `nox` command on `host` (this machine's namespace if `None`).
fn nox_on(host: Option<&ServiceHost>) -> Command {
    host.map_or_else(|| Command::new(NOX), |h| h.command(NOX))
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

#[test]
fn operators_register_run_in_namespaces_serve_a_chain_client_and_a_cheat_is_slashed() {
    if !is_root() {
        eprintln!("SKIPPED operator_network: needs root for network namespaces (`ip netns`)");
        return;
    }
    let base = port_base(7_000, 50, 40);
    let dir = testnet_dir("nox-opnet", "e2e");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let namespaces_before = nox_testnet::hosts::namespaces();
    let plan = HostPlan::new(base, 3, Wan::ThreeRegions, 0.0).expect("plan");
    let mut net = Network::with_teardown(dir.clone(), nox_testnet::hosts::teardown);
    let (rpc_port, dir_port) = (base + 20, base + 21);
    // The hosts first: a namespace per node, the chain's and the clients', and the chain's
    // relay (Anvil's JSON-RPC and the directory at the chain host's public address).
    plan.create(&dir, 3).expect("namespaces");
    let (chain, client) = (plan.chain_host(), plan.client_host());
    plan.start_chain_relay(&dir, Path::new(NOX), 3, &[rpc_port, dir_port]).expect("the chain's relay");
    let anvil_program = nox_chain::anvil::foundry_tool("anvil").expect("anvil");
    let mut anvil = chain.command(anvil_program);
    anvil.args(["--host", &chain.bind.to_string(), "--port", &rpc_port.to_string(), "--chain-id", "31337"]);
    net.children.push(spawn(&dir, "anvil.log", &mut anvil));
    assert!(
        wait_until(Duration::from_secs(20), Duration::from_millis(50), || accepts((chain.bind, rpc_port))),
        "Anvil did not listen in {}",
        chain.namespace
    );
    let rpc = chain.url(rpc_port);

    // The deployer deploys with `nox deploy` from its keystore.
    std::fs::write(dir.join("pass"), "deployer passphrase\n").unwrap();
    std::fs::write(dir.join("dev.key"), DEV_KEY).unwrap();
    let pw = ["--password-file", "pass"];
    run(&dir, &["operator", "new-key", "--keystore", "deployer.json", pw[0], pw[1], "--import-key-file", "dev.key"]);
    // The record lists the network's directory mirror: wallets start from the record alone.
    let mirror_url = chain.url(dir_port);
    let mut deploy = vec!["deploy", "--rpc", &rpc, "--keystore", "deployer.json", pw[0], pw[1]];
    deploy.extend(["--deployments", "deployments", "--mirror", &mirror_url]);
    run(&dir, &deploy);
    let record_file = dir.join("deployments/31337.json");
    let record = nox_operator::DeploymentRecord::load(&record_file).expect("record");
    assert_eq!(record.mirrors.as_slice(), std::slice::from_ref(&mirror_url));
    let record_path = record_file.to_str().unwrap().to_owned();

    // The directory: an untrusted mirror admitting what the registry lists, started empty (no
    // initial document): the schedule from `[schedule]`, its first document once every layer
    // has a registered node's descriptor, which the nodes announce themselves.
    std::fs::write(dir.join("authority.key"), hex::encode([0x42u8; 32])).unwrap();
    let directory_toml = dir.join("directory.toml");
    std::fs::write(
        &directory_toml,
        format!(
            "listen = \"{}:{dir_port}\"\nauthority_key_file = {:?}\nstate_file = {:?}\nlayers = {LAYERS}\n\n\
             [schedule]\ngenesis = \"now\"\nepoch_secs = 60\noverlap_secs = 10\n",
            chain.bind,
            dir.join("authority.key").display().to_string(),
            dir.join("directory.state").display().to_string(),
        ),
    )
    .unwrap();
    let directory_addr: SocketAddr = (chain.public, dir_port).into();

    // Three operators: keystore, funds, `init` (one node per layer), `register` at the node's
    // public (relay) address, the node binding its own in its namespace.
    let deployer = nox_chain::deploy::signer(DEV_KEY).unwrap();
    let layers = LayerCount::new(LAYERS).unwrap();
    let mut taken = [false; LAYERS as usize];
    let mut operators = Vec::new();
    let mut exit_operator = None;
    for i in 0..3usize {
        let ks = format!("op{i}.json");
        let pf = format!("pass{i}");
        std::fs::write(dir.join(&pf), format!("operator {i} passphrase\n")).unwrap();
        let key = ["--keystore", ks.as_str(), "--password-file", pf.as_str()];
        let out = run(&dir, &["operator", "new-key", key[0], key[1], key[2], key[3]]);
        let address: nox_chain::Address = out.split_whitespace().nth(1).unwrap().parse().unwrap();
        runtime()
            .block_on(nox_chain::deploy::fund(
                &rpc,
                &record.deployment(),
                &deployer,
                address,
                U256::from(10u64).pow(U256::from(18u64)),
                record.params.min_stake,
            ))
            .unwrap();
        let node = format!("node{i}");
        let port = base + i as u16;
        let bind = SocketAddr::new(plan.bind_ip(i).into(), port);
        let public = SocketAddr::new(plan.public_ip(i).into(), port);
        let (bind_s, public_s) = (bind.to_string(), public.to_string());
        let directory_url = format!("http://{directory_addr}");
        let layer = loop {
            let _ = std::fs::remove_dir_all(dir.join(&node));
            let mut init = vec!["operator", "init", "--chain", &record_path, "--rpc", &rpc, "--dir", &node];
            init.extend(["--listen", &bind_s, "--directory", &directory_url, "--layers", "3"]);
            init.extend(key);
            run(&dir, &init);
            let identity = nox_keystore::load_identity(&dir.join(&node).join("keys")).expect("identity");
            let layer = identity.public().layer(layers).0;
            if !taken[usize::from(layer)] {
                taken[usize::from(layer)] = true;
                break layer;
            }
        };
        // The exit (last layer) relays paid transactions with its operator's own keystore (the
        // fees are the operator's to claim) and serves the clients' chain reads: its
        // configuration is written again with the exit services (the keys stay).
        if layer + 1 == LAYERS {
            std::fs::remove_file(dir.join(&node).join("node.toml")).unwrap();
            let mut init = vec!["operator", "init", "--chain", &record_path, "--rpc", &rpc, "--dir", &node];
            init.extend(["--listen", &bind_s, "--directory", &directory_url, "--layers", "3"]);
            init.extend(["--relay", "--serve-rpc", &rpc]);
            init.extend(key);
            run(&dir, &init);
            exit_operator = Some(i);
        }
        let role = nox_testnet::chain::role(layer, LAYERS).to_string();
        let mut register =
            vec!["operator", "register", "--chain", &record_path, "--rpc", &rpc, "--node-dir", &node, "--yes"];
        register.extend(["--address", &public_s, "--role", &role]);
        register.extend(key);
        let out = run(&dir, &register);
        assert!(out.contains("registered"), "{out}");

        // The node's configuration: the chain by the preset alone (no registry address or chain
        // id), the public address announced, the hub's services reached through the relay.
        let toml_path = dir.join(&node).join("node.toml");
        let text = std::fs::read_to_string(&toml_path).unwrap();
        let registry_line = format!("registry = \"{}\"\n", record.contracts.registry);
        let chain_id_line = format!("chain_id = {}\n", record.chain_id);
        assert!(text.contains(&registry_line) && text.contains(&chain_id_line), "{text}");
        let text = text
            .replace(&registry_line, &format!("preset = {record_path:?}\n"))
            .replacen(&chain_id_line, "", 1)
            .replace(&format!("listen = \"{bind}\"\n"), &format!("listen = \"{bind}\"\nadvertise = \"{public}\"\n"));
        // The exit's inserter waits 2 s, not the mainnet's 10 minutes, before a partial batch.
        let text = text.replace(
            "[exit.services.relay.inserter]\n",
            "[exit.services.relay.inserter]\nmax_wait_ms = 2000\njitter_ms = 500\npoll_ms = 500\n",
        );
        if exit_operator == Some(i) {
            assert!(text.contains("[exit.services.relay]\n") && text.contains("keystore = "), "{text}");
            assert!(!text.contains("key_file"), "the relayer's key is the operator's keystore:\n{text}");
            assert!(text.contains("[exit.services.json_rpc]\n"), "{text}");
        }
        let (text, _) = plan.rewrite_config(&text);
        std::fs::write(&toml_path, text).unwrap();
        operators.push((address, dir.join(&node), port));
    }

    std::fs::write(
        dir.join("chain.toml"),
        format!(
            "[chain]\nrpc_urls = [{rpc:?}]\nregistry = \"{}\"\nchain_id = {}\n",
            record.contracts.registry, record.chain_id
        ),
    )
    .unwrap();
    let mut directory = chain.command(NOX);
    directory.args(["directory", "--config"]).arg(&directory_toml).arg("--chain").arg(dir.join("chain.toml"));
    net.children.push(spawn(&dir, "directory.log", &mut directory));
    // Readiness on its bind address (the relay accepts on the public one regardless).
    assert!(
        wait_listening((chain.bind, dir_port), Duration::from_secs(10)),
        "the directory did not listen:\n{}",
        std::fs::read_to_string(dir.join("directory.log")).unwrap_or_default()
    );

    // Empty until the nodes announce themselves.
    let (status, body) = nox_directory::get_blocking(directory_addr, "/topology", Duration::from_secs(5))
        .expect("the directory answers");
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));

    // The WAN relay between the nodes, then each node started in its namespace from its
    // configuration alone.
    let node_ports: Vec<(usize, Vec<u16>)> = operators.iter().enumerate().map(|(i, o)| (i, vec![o.2])).collect();
    plan.start_relay(&dir, Path::new(NOX), &node_ports, &[]).expect("relay");
    for (i, (_, node_dir, _)) in operators.iter().enumerate() {
        let mut node = Command::new("ip");
        node.args(["netns", "exec", &plan.namespace(i), NOX, "node", "--config"]).arg(node_dir.join("node.toml"));
        net.children.push(spawn(&dir, &format!("node{i}.log"), &mut node));
    }
    let logs = |dir: &Path| {
        (0..3)
            .map(|i| {
                format!(
                    "--- node{i}:\n{}",
                    std::fs::read_to_string(dir.join(format!("node{i}.log"))).unwrap_or_default()
                )
            })
            .collect::<String>()
    };
    let started = |i: usize| {
        std::fs::read_to_string(dir.join(format!("node{i}.log"))).unwrap_or_default().contains("node started")
    };
    assert!(
        wait_until(Duration::from_secs(60), Duration::from_millis(250), || (0..3).all(started)),
        "the nodes did not all start in their namespaces:\n{}",
        logs(&dir)
    );
    for (i, (_, node_dir, _)) in operators.iter().enumerate() {
        let log = std::fs::read_to_string(dir.join(format!("node{i}.log"))).unwrap_or_default();
        let bind = format!("listen={}:", plan.bind_ip(i));
        assert!(log.contains("registered and active in the node registry") && log.contains(&bind), "{log}");
        assert!(log.contains("the directory has no document yet"), "{log}");
        assert!(node_dir.join("node.toml").exists());
    }

    // A client on the clients' host that trusts the chain alone gets replies through the three
    // namespaces.
    let echo = |text: &str| {
        client
            .command(NOX)
            .args(["client", "echo", "--timeout-secs", "30", "--chain", &record_path, "--chain-rpc", &rpc])
            .args(["--directory", &format!("http://{directory_addr}"), text])
            .output()
            .expect("run nox client echo")
    };
    let out = echo("through three regions");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.lines().next() == Some("through three regions"),
        "echo failed: {stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(&dir)
    );

    // Private value over this network: wallets find the pool, the executor and the mixnet
    // from the deployment record alone (`--chain`), read the chain through a `nox client`
    // daemon of that network, and pay the exit's relayer from the shielded pool; the exit's
    // operator then claims the fee.
    let exit_i = exit_operator.expect("one operator runs the exit");
    let daemon_port = base + 22;
    let mut daemon = client.command(NOX);
    // No --directory: the daemon takes the mirror from the record too. It serves the wallets
    // on the clients' host.
    let daemon_addr = SocketAddr::from((client.bind, daemon_port));
    daemon.args(["client", "--chain", &record_path, "--chain-rpc", &rpc, "--rpc", &daemon_addr.to_string()]);
    net.children.push(spawn(&dir, "client-daemon.log", &mut daemon));
    assert!(
        wait_listening(daemon_addr, Duration::from_secs(30)),
        "the client daemon did not listen:\n{}",
        std::fs::read_to_string(dir.join("client-daemon.log")).unwrap_or_default()
    );
    let daemon_url = format!("http://{daemon_addr}");
    let wallet = |name: &str, cmd: &str, extra: &[&str]| -> String {
        let mut args = vec!["wallet", cmd, "--wallet", name];
        if !matches!(cmd, "new" | "address") {
            // No --directory: the mirror comes from the record.
            args.extend(["--chain", &record_path, "--chain-rpc", &rpc]);
            args.extend(["--rpc", &daemon_url]);
        }
        args.extend(extra);
        let out = client
            .command(NOX)
            .current_dir(&dir)
            .args(&args)
            .env("NOX_WALLET_PASSPHRASE", "wallet passphrase")
            .output()
            .expect("run nox wallet");
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "nox {args:?} failed:\n{text}\n{}", logs(&dir));
        text
    };
    // (spendable, pending) ETH in wei, from `balance`.
    let balance = |name: &str| -> (u128, u128) {
        let out = wallet(name, "balance", &[]);
        let Some(line) = out.lines().find(|l| l.starts_with("ETH: spendable ")) else { return (0, 0) };
        let eth = nox::wallet_cmd::Unit::eth();
        let figure = |after: &str| -> u128 {
            let text = line.split(after).nth(1).and_then(|r| r.split(" ETH").next()).expect("a figure");
            if text.trim() == "0" { 0 } else { eth.parse(text).unwrap_or_else(|e| panic!("{e}: {line}")) }
        };
        (figure("spendable "), figure("pending insertion "))
    };
    let settled = |name: &str| -> u128 {
        let mut last = (0, 0);
        let inserted = wait_until(Duration::from_secs(90), Duration::from_secs(1), || {
            last = balance(name);
            last.1 == 0 && last.0 > 0
        });
        assert!(inserted, "{name}'s notes were not inserted by the exit's inserter: {last:?}\n{}", logs(&dir));
        last.0
    };
    const MILLI: u128 = 1_000_000_000_000_000;
    wallet("a", "new", &[]);
    wallet("b", "new", &[]);
    let addr_b = wallet("b", "address", &[]).trim().to_owned();
    // Anvil's account 1 deposits for A (a public transaction).
    std::fs::write(dir.join("user.key"), "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d").unwrap();
    let out = wallet("a", "deposit", &["--amount", "1", "--key-file", "user.key"]);
    assert!(out.contains("deposited 1 ETH"), "{out}");
    assert_eq!(settled("a"), 1000 * MILLI);
    let out = wallet("a", "send", &["--to", &addr_b, "--amount", "0.1", "--exit", "0", "--yes"]);
    assert!(
        out.contains("\"outcome\":\"included\"") && out.contains(&format!("new note: 0.1 ETH to {addr_b}")),
        "{out}"
    );
    let fee: u128 = common::fee_paid(&out);
    assert!(fee > 0, "{out}");
    assert_eq!(settled("b"), 100 * MILLI);
    assert_eq!(settled("a"), 900 * MILLI - fee);
    // The fee was credited to the exit's operator (its relayer signs with the operator's
    // keystore); the operator claims exactly it, and a second claim finds nothing.
    let exit_key =
        ["--keystore".to_owned(), format!("op{exit_i}.json"), "--password-file".to_owned(), format!("pass{exit_i}")];
    let exit_key: Vec<&str> = exit_key.iter().map(String::as_str).collect();
    let eth = "0x0000000000000000000000000000000000000000";
    let mut status = vec!["operator", "status", "--chain", &record_path, "--rpc", &rpc];
    status.extend(&exit_key);
    let out = run_on(Some(&client), &dir, &status);
    assert!(out.lines().any(|l| l.starts_with("reward") && l.contains(&format!(" {fee} of "))), "{out}");
    let mut claim = vec!["operator", "claim", "--chain", &record_path, "--rpc", &rpc, "--asset", eth];
    claim.extend(&exit_key);
    let out = run_on(Some(&client), &dir, &claim);
    assert!(out.contains(&format!("claimed {fee} of ")), "{out}");
    let again = client.command(NOX).current_dir(&dir).args(&claim).output().expect("run nox");
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("no reward"));

    // Operator 1 equivocates: besides the descriptor the directory serves, a mirror of its own
    // serves a second one for the same epoch with another Sphinx key, both carrying its
    // statements. `nox watch`, reading both mirrors, submits the evidence itself.
    let (cheat, cheat_dir, _) = &operators[1];
    let cheat_id =
        nox_keystore::load_identity(&cheat_dir.join("keys")).expect("identity").public().identity_key.to_bytes();
    let cheat_key =
        nox_operator::keystore::load(&dir.join("op1.json"), "operator 1 passphrase").expect("the cheat's key");
    let mirror = equivocating_mirror(
        directory_addr,
        &cheat_dir.join("keys"),
        &cheat_key,
        record.chain_id,
        record.contracts.registry,
    );
    // The cheat's mirror serves from this machine's namespace: the clients' host reaches it at
    // the hub address through a relay route of its own.
    let mirror = hub_route(&dir, &plan, mirror, &mut net);

    // The watcher: its own keystore, ETH for gas only.
    std::fs::write(dir.join("watcher-pass"), "watcher\n").unwrap();
    let out = run(&dir, &["operator", "new-key", "--keystore", "watcher.json", "--password-file", "watcher-pass"]);
    let reporter: nox_chain::Address = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let eth = U256::from(10u64).pow(U256::from(18u64));
    runtime()
        .block_on(nox_chain::deploy::fund(&rpc, &record.deployment(), &deployer, reporter, eth, U256::ZERO))
        .unwrap();
    let (stake_before, tokens_before, bps) = runtime().block_on(stake_and_balance(
        &rpc,
        record.contracts.registry,
        record.contracts.stake_token,
        *cheat,
        reporter,
    ));
    assert!(stake_before > U256::ZERO && bps > 0);
    let mut watch = client.command(NOX);
    watch
        .current_dir(&dir)
        .args(["watch", "--chain", &record_path, "--rpc", &rpc])
        .args(["--directory", &format!("http://{directory_addr}"), "--directory", &format!("http://{mirror}")])
        .args(["--keystore", "watcher.json", "--password-file", "watcher-pass", "--interval-secs", "1"]);
    net.children.push(spawn(&dir, "watch.log", &mut watch));
    let slashed = wait_until(Duration::from_secs(30), Duration::from_millis(250), || {
        runtime()
            .block_on(stake_and_balance(
                &rpc,
                record.contracts.registry,
                record.contracts.stake_token,
                *cheat,
                reporter,
            ))
            .0
            == U256::ZERO
    });
    // The slash can be mined before the watcher has read its receipt and logged it.
    let logged = wait_until(Duration::from_secs(15), Duration::from_millis(100), || {
        std::fs::read_to_string(dir.join("watch.log")).is_ok_and(|log| log.contains("slashed for equivocation"))
    });
    let log = std::fs::read_to_string(dir.join("watch.log")).unwrap_or_default();
    assert!(slashed, "the watcher did not get the equivocating operator slashed:\n{log}");
    assert!(logged && log.contains("slashed for equivocation"), "{log}");
    let (_, tokens_after, _) = runtime().block_on(stake_and_balance(
        &rpc,
        record.contracts.registry,
        record.contracts.stake_token,
        *cheat,
        reporter,
    ));
    assert_eq!(tokens_after - tokens_before, stake_before * U256::from(bps) / U256::from(10_000u64));
    // The slashed node is out of the registry: a client from the chain no longer admits it.
    let listed = runtime()
        .block_on(async {
            let reader =
                nox_chain::RegistryReader::connect(&rpc, record.contracts.registry, Some(record.chain_id)).await?;
            let block = reader.latest_block().await?;
            reader.snapshot_at(block).await
        })
        .expect("registry");
    assert!(listed.nodes.iter().all(|n| n.identity_key != cheat_id), "the slashed node is still listed");
    assert_eq!(listed.nodes.len(), 2);
    drop(net);
    let left: Vec<String> =
        nox_testnet::hosts::namespaces().into_iter().filter(|n| !namespaces_before.contains(n)).collect();
    assert!(left.is_empty(), "namespaces left after teardown: {left:?}");
}

/// A relay (`nox testnet wan-relay`) from the hub address (this machine's namespace, as the
/// hosts reach it) to `target` on 127.0.0.1, in the clients' region; returns the hub address.
fn hub_route(dir: &Path, plan: &HostPlan, target: SocketAddr, net: &mut Network) -> SocketAddr {
    let listen = SocketAddr::new(plan.hub_ip().into(), target.port());
    let process = dir.join("wan-relay-mirror");
    std::fs::create_dir_all(&process).unwrap();
    let routes = vec![Route { listen, target, region: Profile::HUB_REGION }];
    let relay: Plan = plan.relay_plan(&[0, 1, 2], routes);
    std::fs::write(process.join("plan"), relay.to_text(Wan::ThreeRegions)).unwrap();
    let mut command = Command::new(NOX);
    command.args(["testnet", "wan-relay", "--plan"]).arg(process.join("plan"));
    net.children.push(spawn(dir, "mirror-relay.log", &mut command));
    assert!(
        wait_until(Duration::from_secs(10), Duration::from_millis(20), || process.join("ready").exists()),
        "the mirror's relay did not start"
    );
    listen
}
