//! `nox testnet up`: the state directory, keys, topology and configs, then the nodes started.

use super::*;

/// Creates the state directory, starts the nodes and waits for them.
pub fn up(dir: &Path, layout: &Layout) -> Result<(), TestnetError> {
    // A failed start leaves no namespace behind (`down` removes them on the other paths).
    up_inner(dir, layout).inspect_err(|_| crate::hosts::teardown(dir))
}

pub(super) fn up_inner(dir: &Path, layout: &Layout) -> Result<(), TestnetError> {
    let Layout {
        layers,
        per_layer,
        base_port,
        mean_delay_ms,
        exit_sink,
        loop_rate,
        drop_rate,
        loop_timeout_s,
        rpc_upstream,
        rpc_chain_id,
        exit_allow,
        inject_reply_loss,
        reply_loss_estimate,
        epoch_secs,
        overlap_secs,
        observe,
        chaos_link_loss,
        chaos_link_delay_ms,
        chaos_link_jitter_ms,
        geometry: scheme,
        packet_len,
        tls,
        ..
    } = layout.clone();
    // The nodes are this binary: without the `observe` feature they would refuse [observe].
    if observe && !nox_node::observe::COMPILED_IN {
        return Err(format!("--observe: {}", nox_node::observe::NOT_BUILT));
    }
    let chaos = nox_node::ChaosSection {
        link_loss: chaos_link_loss,
        link_delay_ms: chaos_link_delay_ms,
        link_jitter_ms: chaos_link_jitter_ms,
    };
    let chaos_section = if chaos == nox_node::ChaosSection::default() {
        String::new()
    } else {
        if !nox_node::chaos::COMPILED_IN {
            return Err(format!("--chaos-link-*: {}", nox_node::chaos::NOT_BUILT));
        }
        chaos.validate().map_err(|e| format!("--chaos-link-*: {e}"))?;
        format!(
            "\n[chaos]\nlink_loss = {chaos_link_loss}\nlink_delay_ms = {chaos_link_delay_ms}\nlink_jitter_ms = {chaos_link_jitter_ms}\n"
        )
    };
    if nodes(dir).iter().any(|n| pid_alive(&n.dir)) || pid_alive(&directory::process_dir(dir)) {
        return Err(format!("a testnet is already running in {} (nox testnet down first)", dir.display()));
    }
    let node_count = usize::from(layers) * per_layer;
    check_exit_allow(&exit_allow, base_port, node_count)?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let hosts = match layout.hosts {
        true => Some(crate::hosts::HostPlan::new(base_port, node_count, layout.wan, layout.wan_loss)?),
        false => None,
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let chain_source = layout.chain_source();
    if let Some(hosts) = &hosts {
        hosts.create(dir, node_count)?;
        // The chain's host: Anvil (if started here) and the directory, behind their relay.
        let mut ports = vec![hosts.directory_port()];
        if let Some(chain::ChainSource::Anvil { port, .. }) = &chain_source {
            ports.push(*port);
        }
        hosts.start_chain_relay(dir, &exe, node_count, &ports)?;
    }
    let chain_host = hosts.as_ref().map(crate::hosts::HostPlan::chain_host);
    let mut node_ports = Vec::new();
    let chain = match chain_source {
        Some(source) => Some(chain::start_on(dir, &source, chain_host.as_ref()).inspect_err(|_| {
            let _ = down(dir);
        })?),
        None => None,
    };
    // Exits answer JSON-RPC from the testnet's chain unless told otherwise.
    let rpc_upstream = rpc_upstream.or_else(|| chain.as_ref().map(|c| c.rpc_url.clone()));
    let rpc_chain_id = rpc_chain_id.or(chain.as_ref().map(|c| c.deployment.chain_id));
    // With a shielded pool, every exit is also a paid relayer (nox-relayer).
    let relay_chain = chain.as_ref().filter(|c| c.pool.is_some());
    if relay_chain.is_some() {
        chain::write_spend_verifying_key(dir).inspect_err(|_| {
            let _ = down(dir);
        })?;
        chain::write_insert_proving_key(dir).inspect_err(|_| {
            let _ = down(dir);
        })?;
    }
    let mut relayers = Vec::new();
    let mut exit_lines = Vec::new();
    let mut registrations = Vec::new();
    let layer_count = LayerCount::new(layers).ok_or("layers must be between 1 and 16")?;
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let mut authority_seed = [0u8; 32];
    rng.fill_bytes(&mut authority_seed);
    let authority = SigningKey::from_bytes(&authority_seed);
    let authority_hex = hex::encode(authority.verifying_key().as_bytes());
    let schedule = EpochSchedule::new(0, Duration::from_secs(epoch_secs), Duration::from_secs(overlap_secs), 1)
        .map_err(|e| format!("epoch schedule: {e}"))?;
    let geometry = nox_topology::network_geometry_with_len(scheme, usize::from(layers), packet_len)
        .map_err(|e| format!("geometry for {layers} layers of {packet_len} B packets: {e}"))?;
    let now = unix_now();

    // Layers come from the node id (topology eq. 1): draw identities until
    // every layer has its share.
    let mut builder = DocumentBuilder::new(geometry, schedule);
    let mut filled = vec![0usize; usize::from(layers)];
    let mut index = 0usize;
    let mut attempts = 0;
    let mut configs = Vec::new();
    let ca = if tls { Some(crate::tls::TestnetCa::new().map_err(|e| format!("--tls: {e}"))?) } else { None };
    while filled.iter().any(|f| *f < per_layer) {
        attempts += 1;
        if attempts > 100 * per_layer * usize::from(layers) {
            return Err("could not fill every layer".into());
        }
        let node_dir = dir.join(format!("node-{index}"));
        let keys = node_dir.join("keys");
        let identity = generate_identity(&keys, &mut rng).map_err(|e| e.to_string())?;
        let layer = identity.public().layer(layer_count).0;
        if filled[usize::from(layer)] >= per_layer {
            let _ = std::fs::remove_dir_all(&node_dir);
            continue;
        }
        filled[usize::from(layer)] += 1;
        let port = base_port + index as u16;
        let listen: SocketAddr = ([127, 0, 0, 1], port).into();
        let metrics: SocketAddr = ([127, 0, 0, 1], port + 100).into();
        let websocket = websocket_port(layer, layers, port);
        // --hosts: the node binds in its namespace, others dial its public (relay) address.
        let at = |a: SocketAddr| hosts.as_ref().map_or((a, a), |h| h.addresses(index, a));
        let ((listen, public), metrics) = (at(listen), at(metrics).0);
        let (websocket, websocket_public) = (websocket.map(|w| at(w).0), websocket.map(|w| at(w).1));
        if let Some(hosts) = &hosts {
            write(&node_dir.join("netns"), hosts.namespace(index).as_bytes())?;
            node_ports.push((index, [Some(port), websocket.map(|w| w.port())].into_iter().flatten().collect()));
        }
        let mut store =
            EpochKeyStore::open_for(&sphinx_dir(&keys, scheme), schedule, scheme).map_err(|e| e.to_string())?;
        // Clients build with `client_epoch`, which lags the current epoch
        // for half an overlap after each boundary: publish that key too.
        for epoch in [schedule.client_epoch(now), schedule.epoch_at(now)] {
            store.ensure(epoch, &mut rng).map_err(|e| e.to_string())?;
        }
        let sphinx_keys = store.public_keys(schedule.published_epochs(now)).map_err(|e| e.to_string())?;
        let descriptor = identity
            .descriptor_with_endpoints(public, websocket_public, ca.is_some(), layer_count, 0, sphinx_keys)
            .map_err(|e| e.to_string())?;
        let websocket_tls = match (&ca, websocket) {
            (Some(ca), Some(w)) => {
                let (cert, key) = ca.issue_node(&node_dir, w.ip()).map_err(|e| format!("--tls: {e}"))?;
                format!(
                    "websocket_tls_cert = {:?}\nwebsocket_tls_key = {:?}\n",
                    cert.display().to_string(),
                    key.display().to_string()
                )
            }
            _ => String::new(),
        };
        // With a chain: a fresh operator account signs the node's epoch-key statements and
        // registers it with a stake.
        let descriptor = match &chain {
            Some(info) => {
                let operator = chain::new_operator(&node_dir)?;
                let descriptor = chain::with_statements(info, &operator, descriptor)?;
                registrations.push(chain::NodeToRegister {
                    operator,
                    registration: nox_chain::Registration {
                        identity_key: identity.public().identity_key.to_bytes(),
                        link_key: identity.public().link_key.to_bytes(),
                        link_address: public.to_string(),
                        role: chain::role(layer, layers),
                        stake: chain::testnet_stake(),
                    },
                });
                descriptor
            }
            None => descriptor,
        };
        builder.add_node(descriptor);
        let observe_section = if observe {
            format!("\n[observe]\nevents = {:?}\n", node_dir.join("observe.events").display().to_string())
        } else {
            String::new()
        };
        let config = format!(
            "{observe_section}{chaos_section}[node]\nkey_dir = {keys:?}\nlisten = \"{listen}\"\n{advertise}{websocket_line}metrics = \"{metrics}\"\nsphinx_scheme = \"{scheme}\"\nlayers = {layers}\npacket_len = {packet_len}\n\n[mixing]\nmean_delay_ms = {mean_delay_ms}\n\n[pipeline]\nworkers = 1\nqueue = 4096\n\n[replay]\ncapacity = 10000000\nfalse_positive_rate = 0.001\n\n[cover]\nloop_rate = {loop_rate}\ndrop_rate = {drop_rate}\nloop_timeout_s = {loop_timeout_s}\n{admission}{sink}{services}",
            // One host: every client shares the nodes' address, so per-address limits and bans
            // would only throttle the testnet's own clients (nodes are exempt by their link key,
            // not by the address, so they would not cover them).
            admission = "\n[admission]\nmax_connections_per_address = 100000\nmax_connections_per_subnet = 100000\nban_on_offence = false\n",
            sink = if layer + 1 == layers {
                format!(
                    "\n[exit]\nreply_loss_estimate = {reply_loss_estimate}\ninject_reply_loss = {inject_reply_loss}\n{}",
                    exit_sink.map(|a| format!("sink = \"{a}\"\n")).unwrap_or_default()
                )
            } else {
                String::new()
            },
            services = if layer + 1 == layers {
                let mut services = exit_services(rpc_upstream.as_deref(), rpc_chain_id, &exit_allow);
                let mut relayer = None;
                if let Some(info) = relay_chain {
                    let account = chain::new_relayer(&node_dir)?;
                    relayers.push(account);
                    relayer = Some(account);
                    services.push_str(&relay_section(dir, &node_dir, info));
                }
                let name = node_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                exit_lines.push(exit_summary(&name, public, rpc_upstream.as_deref(), rpc_chain_id, relayer));
                services
            } else {
                String::new()
            },
            keys = keys.display().to_string(),
            advertise = if public == listen { String::new() } else { format!("advertise = \"{public}\"\n") }
                + &websocket_public
                    .filter(|_| public != listen)
                    .map(|w| format!("websocket_advertise = \"{w}\"\n"))
                    .unwrap_or_default(),
            websocket_line =
                websocket.map(|w| format!("websocket_listen = \"{w}\"\n{websocket_tls}")).unwrap_or_default(),
        );
        configs.push((node_dir.join("node.toml"), config));
        write(&node_dir.join("metrics.addr"), metrics.to_string().as_bytes())?;
        write(&node_dir.join("layer"), layer.to_string().as_bytes())?;
        index += 1;
    }
    let ca_line = match &ca {
        Some(ca) => format!(", wss:// under the CA in {}", ca.write(dir).map_err(|e| format!("--tls: {e}"))?.display()),
        None => String::new(),
    };
    let topology = builder.sign(&authority, now).map_err(|e| e.to_string())?;
    let json = topology.document().to_json().map_err(|e| e.to_string())?;
    write(&dir.join("topology.json"), json.as_bytes())?;
    write(&dir.join("authority.pub"), authority_hex.as_bytes())?;
    if let Some(info) = &chain {
        chain::register(dir, info, registrations).inspect_err(|_| {
            let _ = down(dir);
        })?;
        chain::fund_relayers(dir, info, &relayers).inspect_err(|_| {
            let _ = down(dir);
        })?;
    }

    let directory_host = chain_host.as_ref().zip(hosts.as_ref().map(crate::hosts::HostPlan::directory_port));
    let directory_addr = directory::start_on(dir, &exe, &authority_seed, (scheme, layers, packet_len), directory_host)
        .inspect_err(|_| {
            let _ = down(dir);
        })?;
    let mut hub_ports = Vec::new();
    for (path, config) in configs {
        // With a chain, membership comes from the registry: no authority key to trust.
        let node_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let trust = match &chain {
            Some(info) => info.toml(Some(&chain::operator_key_file(&node_dir))),
            None => format!("authority_key = \"{authority_hex}\"\n"),
        };
        let (topology_trust, chain_section) =
            if chain.is_some() { (String::new(), trust) } else { (trust, String::new()) };
        let topology = format!(
            "{config}\n[topology]\nfile = {file:?}\nurl = \"http://{directory_addr}\"\n{topology_trust}{chain_section}",
            file = dir.join("topology.json").display().to_string(),
        );
        let topology = match &hosts {
            Some(hosts) => {
                let (text, ports) = hosts.rewrite_config(&topology);
                hub_ports.extend(ports);
                text
            }
            None => topology,
        };
        write(&path, topology.as_bytes())?;
    }
    if let Some(hosts) = &hosts {
        hosts.start_relay(dir, &exe, &node_ports, &hub_ports)?;
    }
    for node in nodes(dir) {
        spawn_node(&exe, &node.dir)?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in nodes(dir) {
        wait_ready(&node, deadline).inspect_err(|_| {
            let _ = down(dir);
        })?;
    }
    let chain_line = chain.as_ref().map_or_else(
        || "no chain (authority-signed membership)".to_owned(),
        |c| format!("registry {} on chain {} at {}", c.deployment.registry, c.deployment.chain_id, c.rpc_url),
    );
    println!(
        "testnet up: {} nodes in {layers} layers on 127.0.0.1:{base_port}.., geometry {scheme} ({} B header, {packet_len} B packets), directory http://{directory_addr}, {chain_line}, mean delay {mean_delay_ms} ms, epochs {epoch_secs} s, state in {}{ca_line}",
        index,
        geometry.header_len(),
        dir.display()
    );
    for line in &exit_lines {
        println!("  {line}");
    }
    if let Some(hosts) = &hosts {
        let (chain, client) = (hosts.chain_host(), hosts.client_host());
        println!(
            "  hosts: the chain and the directory in {} ({}, region {}); clients from {} ({}): `ip netns exec {} nox client --testnet {}`",
            chain.namespace,
            chain.public,
            hosts.profile().regions.get(chain.region).copied().unwrap_or("?"),
            client.namespace,
            client.bind,
            client.namespace,
            dir.display()
        );
    }
    if rpc_upstream.is_some() {
        println!(
            "  wallets read the chain through the mixnet: `nox client --testnet {} --rpc 127.0.0.1:8645`, then --rpc http://127.0.0.1:8645",
            dir.display()
        );
    }
    Ok(())
}

/// One line of `testnet up` per exit: what it was wired to serve — its JSON-RPC service (the
/// upstream, and whether it relays raw transactions for a chain) and its paid relayer account.
pub(super) fn exit_summary(
    name: &str,
    listen: SocketAddr,
    rpc_upstream: Option<&str>,
    rpc_chain_id: Option<u64>,
    relayer: Option<alloy::primitives::Address>,
) -> String {
    let rpc = match (rpc_upstream, rpc_chain_id) {
        (Some(upstream), Some(chain)) => {
            format!("JSON-RPC to {upstream} (relays eth_sendRawTransaction for chain {chain})")
        }
        (Some(upstream), None) => format!("JSON-RPC to {upstream} (relays no transactions)"),
        (None, _) => "no JSON-RPC service".to_owned(),
    };
    let relay = match relayer {
        Some(account) => {
            format!("paid relayer {account} (funded {} ETH by the deployer)", chain::RELAYER_FUNDS_ETH)
        }
        None => "no paid relayer".to_owned(),
    };
    format!("exit {name} at {listen}: {rpc}; {relay}")
}

/// Starts `nox node` for the node in `node_dir` (log appended to `node.log`, pid in `pid`).
pub(super) fn spawn_node(exe: &Path, node_dir: &Path) -> Result<(), TestnetError> {
    // `ip netns exec` execs the node in its namespace: the pid is the node's.
    let mut command = match crate::hosts::namespace_of(node_dir) {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node_dir.join("node.log"))
        .map_err(|e| e.to_string())?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    let child = command
        .arg("node")
        .arg("--config")
        .arg(node_dir.join("node.toml"))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("starting a node: {e}"))?;
    write(&node_dir.join("pid"), child.id().to_string().as_bytes())
}

/// Waits until the node answers on its metrics port.
pub(super) fn wait_ready(node: &NodeEntry, deadline: Instant) -> Result<(), TestnetError> {
    while scrape(node.metrics).is_none() {
        if Instant::now() > deadline || !pid_alive(&node.dir) {
            let log = std::fs::read_to_string(node.dir.join("node.log")).unwrap_or_default();
            return Err(format!("node in {} did not start:\n{log}", node.dir.display()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The `[exit.services.relay]` of a testnet exit: its own relayer account and nonce journal,
/// the testnet chain, executor and pool, and the testnet spend verifying key.
pub(super) fn relay_section(dir: &Path, node_dir: &Path, info: &chain::ChainInfo) -> String {
    let (key, journal, vk) = chain::relayer_files(dir, node_dir);
    let pool = info.pool.as_ref().map(|p| p.pool.to_string()).unwrap_or_default();
    let from_block = info.pool.as_ref().map_or(0, |p| p.block);
    // The exit's relayer inserts queued notes (nox_relayer::inserter): after a short wait on
    // the testnet, with the insertion key written once for all exits.
    format!(
        "\n[exit.services.relay]\nrpc_url = {:?}\nkey_file = {:?}\njournal = {:?}\nverifying_key = {:?}\nchain_id = {}\nexecutor = \"{}\"\npool = \"{pool}\"\n\n[exit.services.relay.inserter]\nmax_wait_ms = {}\njitter_ms = 1000\npoll_ms = 500\nfrom_block = {from_block}\nproving_key = {:?}\n",
        info.rpc_url,
        key.display().to_string(),
        journal.display().to_string(),
        vk.display().to_string(),
        info.deployment.chain_id,
        info.deployment.executor,
        chain::INSERTER_MAX_WAIT_MS,
        chain::insert_proving_key_file(dir).display().to_string(),
    )
}

/// The `[exit.services]` of a testnet exit: only the listed local services
/// (`addr:port` entries) are allowed, never loopback wholesale, so a client
/// cannot read the nodes' `/metrics` or anything else on this machine through
/// an exit. A real exit keeps the default, which refuses every non-global
/// address.
pub(super) fn exit_services(rpc_upstream: Option<&str>, rpc_chain_id: Option<u64>, allow: &[SocketAddr]) -> String {
    let allow: Vec<String> = allow.iter().map(|a| format!("{:?}", a.to_string())).collect();
    let mut section =
        format!("\n[exit.services]\nmax_concurrent = 64\n\n[exit.services.http]\nallow = [{}]\n", allow.join(", "));
    if let Some(upstream) = rpc_upstream {
        section.push_str(&format!("\n[exit.services.json_rpc]\nupstream = {upstream:?}\n"));
        if let Some(chain) = rpc_chain_id {
            section.push_str(&format!("chain_id = {chain}\n"));
        }
    }
    section
}

/// The WebSocket client port of a node on link port `port`: entries (layer 0) and gateways
/// (the last layer) listen on `port + 300`; other layers take no clients.
pub(super) fn websocket_port(layer: u8, layers: u8, port: u16) -> Option<SocketAddr> {
    (layer == 0 || layer + 1 == layers).then(|| ([127, 0, 0, 1], port + WEBSOCKET_PORT_OFFSET).into())
}

/// Offset of a node's WebSocket client port from its link port.
pub const WEBSOCKET_PORT_OFFSET: u16 = 300;

/// Refuse `--exit-allow` entries that would open a node's link, metrics or WebSocket
/// port (`base_port..base_port + nodes`, `base_port + 100..`, `base_port + 300..`) or port 0.
pub(super) fn check_exit_allow(allow: &[SocketAddr], base_port: u16, nodes: usize) -> Result<(), TestnetError> {
    let nodes = u32::try_from(nodes).unwrap_or(u32::MAX);
    let base = u32::from(base_port);
    let links = base..base.saturating_add(nodes);
    let metrics = base.saturating_add(100)..base.saturating_add(100).saturating_add(nodes);
    let ws = base.saturating_add(300)..base.saturating_add(300).saturating_add(nodes);
    for addr in allow {
        let port = u32::from(addr.port());
        if port == 0 || links.contains(&port) || metrics.contains(&port) || ws.contains(&port) {
            return Err(format!(
                "--exit-allow {addr}: port {port} is a testnet node's link or metrics port (or 0); the exits may only reach the test's own services"
            ));
        }
    }
    Ok(())
}
