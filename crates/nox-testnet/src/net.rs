//! `nox testnet up | traffic | status | join | leave | restart | down | demo`: a local
//! mixnet of real node processes on loopback, with its keys, signed topology and configs in
//! one state directory.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use crate::chain;
use crate::directory;
use nox_keystore::{EpochKeyStore, generate_identity, sphinx_dir};
use nox_sphinx::{Geometry, Scheme};
use nox_topology::{DocumentBuilder, EpochSchedule, LayerCount, PacketLen, SigningKey};
use rand_core::{RngCore, SeedableRng};

/// Options shared by the testnet subcommands.
#[derive(clap::Args, Clone)]
pub struct TestnetArgs {
    /// State directory (keys, topology, configs, logs, pids).
    #[arg(long, default_value = ".nox-testnet")]
    dir: PathBuf,
}

impl TestnetArgs {
    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `nox testnet ...`
#[derive(clap::Subcommand)]
pub enum TestnetCommand {
    /// Generate keys and a signed topology, start the nodes, wait until ready.
    Up {
        #[command(flatten)]
        args: TestnetArgs,
        #[command(flatten)]
        layout: Box<Layout>,
    },
    /// Show each node's process and counters.
    Status {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// Send packets from a client through the testnet (entry → mix → exit)
    /// and report how many the exits delivered.
    Traffic {
        #[command(flatten)]
        args: TestnetArgs,
        /// Packets to send.
        #[arg(long, default_value_t = 1000)]
        packets: u64,
        /// Send rate, packets per second (0: as fast as the links take them).
        #[arg(long, default_value_t = 0.0)]
        rate: f64,
    },
    /// Up, traffic, requests answered through SURBs (echo, a 256 KiB reply,
    /// HTTP through the exit, SSRF refusals), status, down: the whole
    /// testnet in one command.
    Demo {
        #[command(flatten)]
        args: TestnetArgs,
        /// Packets to send.
        #[arg(long, default_value_t = 2000)]
        packets: u64,
        /// The Sphinx geometry's scheme (as `up --geometry`).
        #[arg(long, default_value = "ristretto255", value_parser = parse_scheme)]
        geometry: Scheme,
    },
    /// Add a node to a running testnet the way a new operator would: fresh keys, a stake
    /// registered in the node registry, its first descriptor uploaded to the directory once
    /// the registry admits it, then the node process started.
    Join {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// A node's operator leaves: `requestUnstake` in the registry (the node drops out of every
    /// verified topology), then its process is stopped.
    Leave {
        #[command(flatten)]
        args: TestnetArgs,
        /// The node's index (`node-<index>`).
        #[arg(long)]
        node: usize,
    },
    /// Stop one node's process (SIGTERM, then SIGKILL after 15 s) and start it again with the
    /// same configuration, keys and ports; wait until its metrics answer.
    Restart {
        #[command(flatten)]
        args: TestnetArgs,
        /// The node's index (`node-<index>`).
        #[arg(long)]
        node: usize,
    },
    /// Stop every node (SIGTERM, then SIGKILL after 15 s).
    Down {
        #[command(flatten)]
        args: TestnetArgs,
    },
    /// The WAN delay relay of `up --hosts` (started by it).
    #[command(hide = true)]
    WanRelay {
        /// The relay's plan (`<dir>/wan-relay/plan`).
        #[arg(long)]
        plan: PathBuf,
    },
}

/// Errors of the testnet tooling.
pub type TestnetError = String;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A node of the testnet as recorded in the state directory.
pub struct NodeEntry {
    /// Directory of the node (keys, config, log, pid).
    pub dir: PathBuf,
    /// Its metrics address.
    pub metrics: SocketAddr,
    /// Its layer.
    pub layer: u8,
}

/// Runs one testnet subcommand.
pub fn run(command: &TestnetCommand) -> Result<(), TestnetError> {
    match command {
        TestnetCommand::Up { args, layout } => up(&args.dir, layout),
        TestnetCommand::Status { args } => status(&args.dir),
        TestnetCommand::Traffic { args, packets, rate } => traffic(&args.dir, *packets, *rate),
        // `nox testnet demo` needs the wallet for its money part: the `nox` binary runs it
        // (crates/nox/src/demo.rs) and never passes it here.
        TestnetCommand::Demo { .. } => Err("`testnet demo` is run by the `nox` binary (nox testnet demo)".into()),
        TestnetCommand::Join { args } => join(&args.dir).map(|_| ()),
        TestnetCommand::Leave { args, node } => leave(&args.dir, *node),
        TestnetCommand::Restart { args, node } => restart(&args.dir, *node),
        TestnetCommand::Down { args } => down(&args.dir),
        TestnetCommand::WanRelay { plan } => crate::wan::run_relay(plan),
    }
}

/// The shape of a testnet: also the `nox testnet up` options.
#[derive(Clone, Debug, clap::Args)]
pub struct Layout {
    /// Layers (entry, mix, ..., exit).
    #[arg(long, default_value_t = 3)]
    pub layers: u8,
    /// Nodes in each layer.
    #[arg(long = "nodes-per-layer", default_value_t = 3)]
    pub per_layer: usize,
    /// First link port; metrics ports start at base + 100.
    #[arg(long, default_value_t = 19_000)]
    pub base_port: u16,
    /// Mean mixing delay per hop, milliseconds.
    #[arg(long, default_value_t = 1.0)]
    pub mean_delay_ms: f64,
    /// Exits send the first 64 bytes of each delivered payload to this
    /// UDP address (a measurement sink).
    #[arg(long)]
    pub exit_sink: Option<SocketAddr>,
    /// Loop cover packets per second per node (λ_L).
    #[arg(long, default_value_t = 0.05)]
    pub loop_rate: f64,
    /// Drop cover packets per second per node (λ_D).
    #[arg(long, default_value_t = 0.05)]
    pub drop_rate: f64,
    /// Seconds before a loop counts as lost.
    #[arg(long, default_value_t = 30.0)]
    pub loop_timeout_s: f64,
    /// Exits forward Ethereum JSON-RPC to this node (e.g. a local Anvil
    /// at http://127.0.0.1:8545); absent: no JSON-RPC service.
    #[arg(long)]
    pub rpc_upstream: Option<String>,
    /// Chain id the exits relay `eth_sendRawTransaction` for (Anvil: 31337);
    /// absent: the exits relay no transactions.
    #[arg(long)]
    pub rpc_chain_id: Option<u64>,
    /// A local service the exits may fetch from, `ADDR:PORT` (repeatable):
    /// the test's or demo's own HTTP server. Nothing else on this machine is
    /// reachable through a testnet exit; the nodes' own ports are refused.
    #[arg(long = "exit-allow", value_name = "ADDR:PORT")]
    pub exit_allow: Vec<SocketAddr>,
    /// Exits drop this fraction of reply packets on purpose (measures
    /// and tests FEC recovery on the real network; 0 = none).
    #[arg(long, default_value_t = 0.0)]
    pub inject_reply_loss: f64,
    /// Loss rate the exits plan reply parity for.
    #[arg(long, default_value_t = 0.05)]
    pub reply_loss_estimate: f64,
    /// Key epoch length, seconds (short epochs exercise key rotation and re-publication).
    #[arg(long, default_value_t = 3600)]
    pub epoch_secs: u64,
    /// Seconds an epoch's key stays accepted after the epoch ends (< epoch_secs).
    #[arg(long, default_value_t = 300)]
    pub overlap_secs: u64,
    /// Measurement only: every node records link events and ground truth
    /// to `node-*/observe.events` (`[observe]`; needs a `nox` built with
    /// `--features observe`, never in production).
    #[arg(long)]
    pub observe: bool,
    /// Testing only: every node drops this fraction of the packets it sends on its links
    /// (`[chaos]`; needs a `nox` built with `--features chaos`, never in production).
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_loss: f64,
    /// Testing only: fixed delay every node adds to the packets it sends on its links, ms.
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_delay_ms: f64,
    /// Testing only: uniform extra delay in [0, this), ms, on the same links.
    #[arg(long, default_value_t = 0.0)]
    pub chaos_link_jitter_ms: f64,
    /// No chain: membership from the directory authority's signature alone (the pre-registry
    /// mode). By default the testnet starts Anvil, deploys the NOX contracts and registers
    /// every node with a stake; membership then comes from the registry.
    #[arg(long, conflicts_with = "chain_rpc")]
    pub no_chain: bool,
    /// Use this external chain (JSON-RPC URL) instead of starting Anvil.
    #[arg(long)]
    pub chain_rpc: Option<String>,
    /// Funded key (hex) that deploys the contracts and funds the operators on `--chain-rpc`
    /// (default: Anvil's first development key).
    #[arg(long)]
    pub deployer_key: Option<String>,
    /// Deploy the testnet verifiers on `--chain-rpc` even if it is not a local development
    /// chain (chain id 31337 or 1337, or an Anvil or Hardhat node). Their Groth16 keys come from
    /// public randomness: anyone can forge proofs and drain the pool. Throwaway chains only.
    #[arg(long, requires = "chain_rpc")]
    pub allow_testnet_keys_on_public_chain: bool,
    /// Anvil's seconds per block (default: a block per transaction).
    #[arg(long)]
    pub block_time: Option<u64>,
    /// The Sphinx geometry's scheme: ristretto255 (classical, the default), x25519-kem, mlkem768
    /// or xwing. Nodes, keys and the directory use it; clients read it from the topology.
    #[arg(long, default_value = "ristretto255", value_parser = parse_scheme)]
    pub geometry: Scheme,
    /// The packet length in bytes: 2048, 4096, 8192, 16384 or 32768 (default nox-sphinx's
    /// `DEFAULT_PACKET_LEN`; `4KiB` also parses). Nodes and the directory use it; clients read
    /// it from the topology's geometry.
    #[arg(long, default_value_t = PacketLen::DEFAULT, value_parser = parse_packet_len)]
    pub packet_len: PacketLen,
    /// Entries and gateways serve `wss://` (TLS) instead of `ws://`: a throwaway CA signs a
    /// certificate per node for its loopback address; its certificate is written to
    /// `<dir>/ca.pem` (trust it with `nox client --ca-file`, `NODE_EXTRA_CA_CERTS`).
    #[arg(long)]
    pub tls: bool,
    /// Every node on a host of its own: a network namespace with its own address, the WAN
    /// delay relay between the hosts (`crate::hosts`; needs root and `ip netns`).
    #[arg(long, conflicts_with = "tls")]
    pub hosts: bool,
    /// The WAN between the `--hosts` hosts (`crate::wan`).
    #[arg(long, value_enum, default_value = "three-regions")]
    pub wan: crate::wan::Wan,
    /// Probability that a relayed chunk waits one TCP retransmission timeout (`--hosts`).
    #[arg(long, default_value_t = 0.0)]
    pub wan_loss: f64,
}

/// `--packet-len`: a supported packet length, with the supported ones in the error.
pub fn parse_packet_len(text: &str) -> Result<PacketLen, String> {
    text.parse::<PacketLen>().map_err(|e| e.to_string())
}

/// `--geometry`: a scheme name, with the known names in the error.
pub fn parse_scheme(name: &str) -> Result<Scheme, String> {
    nox_topology::parse_scheme(name).map_err(|e| e.to_string())
}

impl Layout {
    /// Where the testnet's chain comes from, if it has one.
    fn chain_source(&self) -> Option<chain::ChainSource> {
        if self.no_chain {
            return None;
        }
        Some(match &self.chain_rpc {
            Some(rpc_url) => chain::ChainSource::External {
                rpc_url: rpc_url.clone(),
                deployer_key: self.deployer_key.clone().unwrap_or_else(|| nox_chain::anvil::DEV_KEY.to_owned()),
                allow_testnet_keys: self.allow_testnet_keys_on_public_chain,
            },
            None => chain::ChainSource::Anvil { port: self.base_port.saturating_add(200), block_time: self.block_time },
        })
    }
}

impl Default for Layout {
    /// The same values as the command-line defaults.
    fn default() -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            layout: Layout,
        }
        // Parsing no arguments cannot fail: every field has a default or is optional.
        Defaults::try_parse_from(["defaults"]).map(|d| d.layout).unwrap_or_else(|_| unreachable!())
    }
}

/// Creates the state directory, starts the nodes and waits for them.
pub fn up(dir: &Path, layout: &Layout) -> Result<(), TestnetError> {
    // A failed start leaves no namespace behind (`down` removes them on the other paths).
    up_inner(dir, layout).inspect_err(|_| crate::hosts::teardown(dir))
}

fn up_inner(dir: &Path, layout: &Layout) -> Result<(), TestnetError> {
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
    if let Some(hosts) = &hosts {
        hosts.create(dir, node_count)?;
    }
    let mut node_ports = Vec::new();
    let chain = match layout.chain_source() {
        Some(source) => Some(chain::start(dir, &source).inspect_err(|_| {
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

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let directory_addr =
        directory::start(dir, &exe, &authority_seed, scheme, layers, packet_len).inspect_err(|_| {
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
fn exit_summary(
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
fn spawn_node(exe: &Path, node_dir: &Path) -> Result<(), TestnetError> {
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
fn wait_ready(node: &NodeEntry, deadline: Instant) -> Result<(), TestnetError> {
    while scrape(node.metrics).is_none() {
        if Instant::now() > deadline || !pid_alive(&node.dir) {
            let log = std::fs::read_to_string(node.dir.join("node.log")).unwrap_or_default();
            return Err(format!("node in {} did not start:\n{log}", node.dir.display()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

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
fn stop_process(process_dir: &Path, grace: Duration) -> bool {
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

/// The `[exit.services.relay]` of a testnet exit: its own relayer account and nonce journal,
/// the testnet chain, executor and pool, and the testnet spend verifying key.
fn relay_section(dir: &Path, node_dir: &Path, info: &chain::ChainInfo) -> String {
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
fn exit_services(rpc_upstream: Option<&str>, rpc_chain_id: Option<u64>, allow: &[SocketAddr]) -> String {
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
fn websocket_port(layer: u8, layers: u8, port: u16) -> Option<SocketAddr> {
    (layer == 0 || layer + 1 == layers).then(|| ([127, 0, 0, 1], port + WEBSOCKET_PORT_OFFSET).into())
}

/// Offset of a node's WebSocket client port from its link port.
pub const WEBSOCKET_PORT_OFFSET: u16 = 300;

/// Refuse `--exit-allow` entries that would open a node's link, metrics or WebSocket
/// port (`base_port..base_port + nodes`, `base_port + 100..`, `base_port + 300..`) or port 0.
fn check_exit_allow(allow: &[SocketAddr], base_port: u16, nodes: usize) -> Result<(), TestnetError> {
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

fn write(path: &Path, bytes: &[u8]) -> Result<(), TestnetError> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The nodes recorded in the state directory, in index order.
pub fn nodes(dir: &Path) -> Vec<NodeEntry> {
    let mut found = Vec::new();
    for index in 0.. {
        let node_dir = dir.join(format!("node-{index}"));
        let Ok(metrics) = std::fs::read_to_string(node_dir.join("metrics.addr")) else { break };
        let Ok(metrics) = metrics.trim().parse() else { break };
        let layer = std::fs::read_to_string(node_dir.join("layer")).ok().and_then(|l| l.trim().parse().ok());
        found.push(NodeEntry { dir: node_dir, metrics, layer: layer.unwrap_or(0) });
    }
    found
}

fn pid_of(node_dir: &Path) -> Option<u32> {
    std::fs::read_to_string(node_dir.join("pid")).ok()?.trim().parse().ok()
}

pub fn pid_alive(node_dir: &Path) -> bool {
    let Some(pid) = pid_of(node_dir) else { return false };
    // A zombie (exited, not yet reaped) is not alive.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// `GET /metrics`, or `None` if the node does not answer.
pub fn scrape(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// One sample of a metric without labels (or with exactly `labels`).
pub fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            (key == name).then(|| value.parse::<f64>().ok()).flatten()
        })
        .map_or(0, |v| v as u64)
}

/// Prints every node's process state and counters.
pub fn status(dir: &Path) -> Result<(), TestnetError> {
    let all = nodes(dir);
    if all.is_empty() {
        return Err(format!("no testnet in {}", dir.display()));
    }
    if let Some(line) = directory::status_line(dir, pid_alive(&directory::process_dir(dir))) {
        println!("{line}");
    }
    if let Some(line) = chain::status_line(dir, pid_alive(&chain::process_dir(dir))) {
        println!("{line}");
    }
    println!(
        "{:<8} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  drops",
        "node", "layer", "running", "received", "processed", "forwarded", "delivered", "rss_kb"
    );
    for node in &all {
        let text = scrape(node.metrics).unwrap_or_default();
        let drops: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with("nox_packets_dropped_total{") && !l.ends_with(" 0"))
            .map(|l| l.trim_start_matches("nox_packets_dropped_total").to_string())
            .collect();
        println!(
            "{:<8} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
            node.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            node.layer,
            if pid_alive(&node.dir) { "yes" } else { "no" },
            metric(&text, "nox_packets_received_total"),
            metric(&text, "nox_packets_processed_total"),
            metric(&text, "nox_packets_forwarded_total"),
            metric(&text, "nox_packets_delivered_total"),
            rss_kb(&node.dir).map_or("-".into(), |kb| kb.to_string()),
            if drops.is_empty() { "none".into() } else { drops.join(" ") },
        );
    }
    Ok(())
}

/// Resident memory of a node's process, from /proc.
pub fn rss_kb(node_dir: &Path) -> Option<u64> {
    rss_kb_of(&pid_of(node_dir)?.to_string())
}

/// Resident memory, kB, of the process `pid` (a number, or `self`), from `/proc/<pid>/status`.
pub fn rss_kb_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// Stops every node, then the directory.
pub fn down(dir: &Path) -> Result<(), TestnetError> {
    let all = nodes(dir);
    let directory_dir = directory::process_dir(dir);
    let chain_dir = chain::process_dir(dir);
    let processes: Vec<&Path> =
        all.iter().map(|n| n.dir.as_path()).chain([directory_dir.as_path(), chain_dir.as_path()]).collect();
    for process in &processes {
        if pid_alive(process)
            && let Some(pid) = pid_of(process)
        {
            let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while processes.iter().any(|p| pid_alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for process in &processes {
        if pid_alive(process)
            && let Some(pid) = pid_of(process)
        {
            let _ = Command::new("kill").arg("-KILL").arg(pid.to_string()).status();
        }
        let _ = std::fs::remove_file(process.join("pid"));
    }
    crate::hosts::teardown(dir);
    println!("testnet down: {} nodes, the directory and the chain (if started here) stopped", all.len());
    Ok(())
}

/// Sends `packets` Sphinx packets as an anonymous client and waits for the
/// exits to deliver them.
pub fn traffic(dir: &Path, packets: u64, rate: f64) -> Result<(), TestnetError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(traffic_async(dir, packets, rate))
}

/// An anonymous client of a testnet: its verified topology and links to
/// the entry nodes.
pub struct TestnetClient {
    /// The verified topology.
    pub topology: nox_topology::VerifiedTopology,
    geometry: Geometry,
    links: nox_link::transport::OutboundLinks,
    /// Records entry nodes send down (difficulty notices). Kept open: a
    /// client link whose receiver is gone closes on its first record.
    pub downstream: tokio::sync::mpsc::Receiver<nox_link::transport::Inbound>,
    _stop: tokio::sync::watch::Sender<bool>,
    rng: rand_chacha::ChaCha20Rng,
}

impl TestnetClient {
    /// Loads the testnet's topology; call inside a tokio runtime.
    pub fn connect(dir: &Path) -> Result<Self, TestnetError> {
        use nox_link::{
            LinkConfig, LinkPublicKey,
            transport::{DialerConfig, LinkCounters, OutboundLinks},
        };
        // The geometry the testnet's topology names.
        let topology = directory::topology(dir)?;
        let geometry = *topology.geometry();
        let directory: std::collections::HashMap<LinkPublicKey, SocketAddr> = topology
            .nodes()
            .iter()
            .map(|n| (LinkPublicKey(n.descriptor.link_key.to_bytes()), n.descriptor.address))
            .collect();
        let link = LinkConfig::new(geometry).map_err(|e| e.to_string())?;
        let (replies_tx, downstream) = tokio::sync::mpsc::channel(16);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let links = OutboundLinks::new(
            DialerConfig::client(link),
            std::sync::Arc::new(directory),
            replies_tx,
            std::sync::Arc::new(LinkCounters::default()),
            stop_rx,
        )
        .map_err(|e| e.to_string())?;
        Ok(Self { topology, geometry, links, downstream, _stop: stop, rng: rand_chacha::ChaCha20Rng::from_os_rng() })
    }

    /// Fetches the current topology again (from the directory when the testnet has one), so
    /// packets use the epoch keys published since. Link keys and addresses of the nodes stay
    /// those known at [`TestnetClient::connect`] (the directory pins them).
    pub async fn refresh(&mut self, dir: &Path) -> Result<(), TestnetError> {
        self.topology = directory::topology_async(dir).await?;
        Ok(())
    }

    /// A packet carrying `payload` on a fresh random path, and its entry's link key.
    pub fn build(&mut self, payload: &[u8]) -> Result<(nox_link::LinkPublicKey, Vec<u8>), TestnetError> {
        let epoch = self.topology.client_epoch(unix_now());
        let path = self.topology.random_path(&mut self.rng, epoch, &|_| false).map_err(|e| e.to_string())?;
        let packet = nox_sphinx::build_forward(
            &self.geometry,
            &nox_sphinx::BuildOptions::new(epoch),
            &path,
            payload,
            &mut self.rng,
        )
        .map_err(|e| e.to_string())?;
        let entry = self.topology.node(&path[0].node).ok_or("entry node vanished")?;
        Ok((nox_link::LinkPublicKey(entry.descriptor.link_key.to_bytes()), packet))
    }

    /// Queues a packet for its entry node, waiting for queue space.
    pub async fn send(&self, entry: &nox_link::LinkPublicKey, packet: Vec<u8>) -> Result<(), TestnetError> {
        self.links.send_wait(entry, packet).await.map_err(|e| e.to_string())
    }
}

async fn traffic_async(dir: &Path, packets: u64, rate: f64) -> Result<(), TestnetError> {
    let mut client = TestnetClient::connect(dir)?;
    let exits: Vec<NodeEntry> = {
        let all = nodes(dir);
        let last = all.iter().map(|n| n.layer).max().unwrap_or(0);
        all.into_iter().filter(|n| n.layer == last).collect()
    };
    let delivered_now = || {
        exits.iter().map(|n| metric(&scrape(n.metrics).unwrap_or_default(), "nox_packets_delivered_total")).sum::<u64>()
    };
    let before = delivered_now();
    let epoch = client.topology.client_epoch(unix_now());
    let started = Instant::now();
    let mut payload = [0u8; 256];
    let mut refreshed = Instant::now();
    for sent in 0..packets {
        // Long runs cross epochs: pick up the keys nodes publish meanwhile.
        if refreshed.elapsed() > Duration::from_secs(1) {
            client.refresh(dir).await?;
            refreshed = Instant::now();
        }
        payload[..8].copy_from_slice(&sent.to_be_bytes());
        let (entry, packet) = client.build(&payload)?;
        client.send(&entry, packet).await?;
        if rate > 0.0 {
            let due = started + Duration::from_secs_f64((sent + 1) as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
    }
    let sent_in = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut delivered = delivered_now() - before;
    while delivered < packets && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        delivered = delivered_now() - before;
    }
    let elapsed = started.elapsed();
    println!(
        "traffic: sent {packets} packets ({} KiB, {} hops, {}, epoch {epoch}) in {:.2} s; exits delivered {delivered} ({:.1} %) within {:.2} s: {:.0} packets/s end to end",
        client.geometry.packet_len() / 1024,
        client.geometry.hops(),
        client.geometry.scheme(),
        sent_in.as_secs_f64(),
        100.0 * delivered as f64 / packets.max(1) as f64,
        elapsed.as_secs_f64(),
        delivered as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Layout;

    #[test]
    fn the_default_layout_is_the_command_line_default() {
        let layout = Layout::default();
        assert_eq!((layout.layers, layout.per_layer, layout.base_port), (3, 3, 19_000));
        assert_eq!((layout.epoch_secs, layout.overlap_secs, layout.observe), (3600, 300, false));
        assert_eq!((layout.mean_delay_ms, layout.reply_loss_estimate, layout.inject_reply_loss), (1.0, 0.05, 0.0));
        assert!(layout.rpc_upstream.is_none() && layout.exit_sink.is_none());
        assert!(layout.exit_allow.is_empty() && layout.rpc_chain_id.is_none());
        assert_eq!(layout.geometry, nox_sphinx::Scheme::Ristretto255);
    }

    #[test]
    fn geometry_names_a_scheme() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Up {
            #[command(flatten)]
            layout: Layout,
        }
        let parsed = Up::try_parse_from(["up", "--geometry", "xwing"]).unwrap();
        assert_eq!(parsed.layout.geometry, nox_sphinx::Scheme::XWing);
        let error = Up::try_parse_from(["up", "--geometry", "kyber"]).err().unwrap().to_string();
        assert!(error.contains("unknown Sphinx scheme") && error.contains("xwing"), "{error}");
    }

    #[test]
    fn packet_len_is_a_supported_length() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Up {
            #[command(flatten)]
            layout: Layout,
        }
        assert_eq!(Layout::default().packet_len.bytes(), nox_sphinx::DEFAULT_PACKET_LEN);
        let parsed = Up::try_parse_from(["up", "--packet-len", "4096"]).unwrap();
        assert_eq!(parsed.layout.packet_len.bytes(), 4096);
        let error = Up::try_parse_from(["up", "--packet-len", "5000"]).err().unwrap().to_string();
        assert!(error.contains("unsupported packet length 5000") && error.contains("2048"), "{error}");
    }

    /// The exit section names exactly the allowed services, never a network.
    #[test]
    fn exit_summaries_name_the_json_rpc_service_and_the_relayer() {
        let listen: std::net::SocketAddr = "127.0.0.1:9002".parse().unwrap();
        let account = alloy::primitives::Address::repeat_byte(0xab);
        let line = super::exit_summary("node-2", listen, Some("http://127.0.0.1:8545"), Some(31337), Some(account));
        assert_eq!(
            line,
            format!(
                "exit node-2 at 127.0.0.1:9002: JSON-RPC to http://127.0.0.1:8545 (relays eth_sendRawTransaction for chain 31337); paid relayer {account} (funded 100 ETH by the deployer)"
            )
        );
        let bare = super::exit_summary("node-5", listen, None, None, None);
        assert_eq!(bare, "exit node-5 at 127.0.0.1:9002: no JSON-RPC service; no paid relayer");
    }

    #[test]
    fn exit_services_allow_only_the_listed_services() {
        let allow = ["127.0.0.1:8080".parse().unwrap(), "[::1]:8080".parse().unwrap()];
        let section = super::exit_services(Some("http://127.0.0.1:8545"), Some(31337), &allow);
        assert!(section.contains("allow = [\"127.0.0.1:8080\", \"[::1]:8080\"]\n"), "{section}");
        assert!(section.contains("chain_id = 31337\n"), "{section}");
        assert!(!section.contains("/8") && !section.contains("/128"), "{section}");
        let none = super::exit_services(None, None, &[]);
        assert!(none.contains("allow = []\n") && !none.contains("json_rpc"), "{none}");
        let document: toml::Table = toml::from_str(&section).unwrap();
        let config: nox_exit::ExitConfig = document["exit"]["services"].clone().try_into().unwrap();
        assert_eq!(config.http.allow.len(), 2);
        assert_eq!(config.json_rpc.and_then(|r| r.chain_id), Some(31337));
    }

    #[test]
    fn exit_allow_refuses_the_nodes_ports() {
        let at = |port: u16| vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))];
        for port in [19_000, 19_008, 19_100, 19_108, 0] {
            assert!(super::check_exit_allow(&at(port), 19_000, 9).is_err(), "{port}");
        }
        for port in [18_999, 19_009, 19_099, 19_109, 8080] {
            assert!(super::check_exit_allow(&at(port), 19_000, 9).is_ok(), "{port}");
        }
    }
}
