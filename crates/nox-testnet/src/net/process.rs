//! Node processes of a running testnet: join, leave, restart, kill and signal.

use super::*;

/// `nox testnet join`: returns the new node's directory.
pub fn join(dir: &Path) -> Result<PathBuf, TestnetError> {
    join_with(dir, &std::env::current_exe().map_err(|e| e.to_string())?)
}

/// [`join`], starting the node with the `nox` binary at `exe`.
pub fn join_with(dir: &Path, exe: &Path) -> Result<PathBuf, TestnetError> {
    if crate::hosts::is_hosts_testnet(dir) {
        return Err(
            "join: not on a --hosts testnet (a joining node would be on loopback, out of the nodes' reach)".into()
        );
    }
    let info = chain::load(dir)
        .ok_or("this testnet has no chain: joining needs the node registry (testnet up without --no-chain)")?;
    let existing = nodes(dir);
    let first = existing.first().ok_or_else(|| format!("no testnet in {}", dir.display()))?;
    let topology = directory::topology(dir)?;
    let (layers, schedule, scheme) = (topology.layers(), *topology.schedule(), topology.geometry().scheme());
    let index = existing.len();
    let node_dir = dir.join(format!("node-{index}"));
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let identity = generate_identity(&node_dir.join("keys"), &mut rng).map_err(|e| e.to_string())?;
    let layer = identity.public().layer(layers).0;
    // The new node's configuration is its layer's first node's, with its own keys and ports.
    let template = existing.iter().find(|n| n.layer == layer).unwrap_or(first);
    let template_text = std::fs::read_to_string(template.dir.join("node.toml")).map_err(|e| e.to_string())?;
    let listen_of = |text: &str| -> Option<SocketAddr> {
        text.lines().find_map(|l| l.strip_prefix("listen = ")).and_then(|v| v.trim_matches('"').parse().ok())
    };
    let template_listen = listen_of(&template_text).ok_or("template node.toml has no listen address")?;
    let base_port = listen_of(&std::fs::read_to_string(first.dir.join("node.toml")).map_err(|e| e.to_string())?)
        .ok_or("node-0 has no listen address")?
        .port();
    let port = base_port + index as u16;
    let listen: SocketAddr = ([127, 0, 0, 1], port).into();
    let metrics: SocketAddr = ([127, 0, 0, 1], port + 100).into();
    let websocket = websocket_port(layer, layers.get(), port);
    let template_name = template.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let config = template_text
        .replace(&format!("{template_name}/"), &format!("node-{index}/"))
        .replace(&format!("\"{template_listen}\""), &format!("\"{listen}\""))
        .replace(&format!("\"{}\"", template.metrics), &format!("\"{metrics}\""));
    // The template's WebSocket endpoint (if any) is its own: this node gets its port, or none.
    let mut config: String = config
        .lines()
        .filter(|l| !l.starts_with("websocket_listen = "))
        .filter(|l| websocket.is_some() || !l.starts_with("websocket_tls_"))
        .map(|l| match (l.starts_with("listen = "), websocket) {
            (true, Some(w)) => format!("{l}\nwebsocket_listen = \"{w}\"\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    if !template_text.ends_with('\n') {
        config.pop();
    }
    // `--tls`: the CA's key is gone, but the template's certificate names the same loopback address.
    let websocket_tls = config.contains("websocket_tls_cert");
    if websocket_tls {
        std::fs::create_dir_all(node_dir.join("tls")).map_err(|e| e.to_string())?;
        for file in ["cert.pem", "key.pem"] {
            std::fs::copy(template.dir.join("tls").join(file), node_dir.join("tls").join(file))
                .map_err(|e| format!("--tls {file}: {e}"))?;
        }
    }
    write(&node_dir.join("node.toml"), config.as_bytes())?;
    write(&node_dir.join("layer"), layer.to_string().as_bytes())?;
    // An exit of a testnet with a pool is a paid relayer: its own funded account (the template's
    // relay section now names this node's key and journal).
    if config.contains("[exit.services.relay]") {
        let relayer = chain::new_relayer(&node_dir)?;
        chain::fund_relayers(dir, &info, &[relayer])?;
    }

    // Register with a stake, from a fresh operator account.
    let operator = chain::new_operator(&node_dir)?;
    let registration = nox_chain::Registration {
        identity_key: identity.public().identity_key.to_bytes(),
        link_key: identity.public().link_key.to_bytes(),
        link_address: listen.to_string(),
        role: chain::role(layer, layers.get()),
        stake: chain::testnet_stake(),
    };
    chain::register(dir, &info, vec![chain::NodeToRegister { operator: operator.clone(), registration }])?;

    // First descriptor, with its operator statements: the directory accepts it once it has read
    // the registration.
    let now = unix_now();
    let keys_dir = sphinx_dir(&node_dir.join("keys"), scheme);
    let mut store = EpochKeyStore::open_for(&keys_dir, schedule, scheme).map_err(|e| e.to_string())?;
    for epoch in [schedule.client_epoch(now), schedule.epoch_at(now)] {
        store.ensure(epoch, &mut rng).map_err(|e| e.to_string())?;
    }
    let keys = store.public_keys(schedule.published_epochs(now)).map_err(|e| e.to_string())?;
    let descriptor = identity
        .descriptor_with_endpoints(listen, websocket, websocket_tls, layers, 0, keys)
        .map_err(|e| e.to_string())?;
    let descriptor = chain::with_statements(&info, &operator, descriptor)?;
    let directory_addr = directory::addr(dir).ok_or("the testnet has no directory")?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match runtime.block_on(nox_directory::upload_descriptor(directory_addr, &descriptor, Duration::from_secs(3))) {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => return Err(format!("the directory refused the new node: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
    write(&node_dir.join("metrics.addr"), metrics.to_string().as_bytes())?;
    spawn_node(exe, &node_dir)?;
    let entry = NodeEntry { dir: node_dir.clone(), metrics, layer };
    wait_ready(&entry, Instant::now() + Duration::from_secs(30))?;
    println!("testnet join: node-{index} in layer {layer} on {listen}, registered and running");
    Ok(node_dir)
}

/// `nox testnet leave --node N`.
pub fn leave(dir: &Path, index: usize) -> Result<(), TestnetError> {
    let info = chain::load(dir).ok_or("this testnet has no chain")?;
    let node_dir = dir.join(format!("node-{index}"));
    let operator = chain::operator_key(&node_dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime
        .block_on(nox_chain::deploy::request_unstake(&info.rpc_url, &info.deployment, &operator))
        .map_err(|e| format!("requestUnstake: {e}"))?;
    if let Some(pid) = pid_of(&node_dir) {
        let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
    }
    println!("testnet leave: node-{index} requested unstake (out of the registry's active list) and was stopped");
    Ok(())
}

/// `nox testnet restart --node N`.
pub fn restart(dir: &Path, index: usize) -> Result<(), TestnetError> {
    restart_with(dir, index, &std::env::current_exe().map_err(|e| e.to_string())?)
}

/// [`restart`], starting the node with the `nox` binary at `exe`: stops the node's process
/// (SIGTERM, SIGKILL after 15 s), starts it again from the same `node.toml` (so the same keys,
/// ports, services and state directory), appending to its `node.log`, and waits (30 s at most)
/// until its metrics answer, which the node serves only once its link port listens.
pub fn restart_with(dir: &Path, index: usize, exe: &Path) -> Result<(), TestnetError> {
    let node_dir = dir.join(format!("node-{index}"));
    let node = nodes(dir)
        .into_iter()
        .find(|n| n.dir == node_dir)
        .ok_or_else(|| format!("no node-{index} in the testnet in {}", dir.display()))?;
    let config = std::fs::read_to_string(node.dir.join("node.toml")).map_err(|e| format!("node-{index}: {e}"))?;
    let listen = config
        .lines()
        .find_map(|l| l.strip_prefix("listen = "))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .unwrap_or_default();
    let started = Instant::now();
    let was_running = stop_process(&node.dir, Duration::from_secs(15));
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.dir.join("node.log"))
        .map_err(|e| e.to_string())?;
    let _ = writeln!(log, "--- nox testnet restart at unix time {} ---", unix_now());
    spawn_node(exe, &node.dir)?;
    wait_ready(&node, Instant::now() + Duration::from_secs(30))?;
    println!(
        "testnet restart: node-{index} (layer {}) is back on {listen} (metrics {}) after {:.1} s{}",
        node.layer,
        node.metrics,
        started.elapsed().as_secs_f64(),
        if was_running { "" } else { "; it was not running" }
    );
    Ok(())
}

/// SIGKILLs node `index` (no shutdown: unsynced state is lost as in a crash) and waits until it
/// is gone. Returns whether it was running. [`restart_with`] starts it again.
pub fn kill_node(dir: &Path, index: usize) -> Result<bool, TestnetError> {
    let node_dir = dir.join(format!("node-{index}"));
    if !node_dir.join("node.toml").exists() {
        return Err(format!("no node-{index} in the testnet in {}", dir.display()));
    }
    Ok(kill_process(&node_dir))
}

/// SIGKILLs the process whose pid is in `process_dir` and waits (5 s at most) until it is gone.
/// Returns whether it was running.
pub fn kill_process(process_dir: &Path) -> bool {
    signal_process(process_dir, "KILL") && {
        let deadline = Instant::now() + Duration::from_secs(5);
        while pid_alive(process_dir) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

/// Sends `signal` (a `kill -<signal>` name: KILL, STOP, CONT...) to the process whose pid is in
/// `process_dir`. Returns whether it was running.
pub fn signal_process(process_dir: &Path, signal: &str) -> bool {
    let Some(pid) = pid_of(process_dir).filter(|_| pid_alive(process_dir)) else { return false };
    Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().is_ok_and(|s| s.success())
}

/// Stops the process whose pid is in `process_dir` (SIGTERM, then SIGKILL after `grace`) and
/// waits until it is gone. Returns whether it was running.
pub(super) fn stop_process(process_dir: &Path, grace: Duration) -> bool {
    let Some(pid) = pid_of(process_dir).filter(|_| pid_alive(process_dir)) else { return false };
    let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
    let deadline = Instant::now() + grace;
    while pid_alive(process_dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if pid_alive(process_dir) {
        let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while pid_alive(process_dir) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    true
}
