//! The testnet's chain: an Anvil next to the nodes (the default) or an external chain, the NOX
//! contracts deployed on it, and every node funded, staked and registered from its own operator
//! account. `<state dir>/chain.json` records where it all is; nodes, the directory and clients
//! derive membership from the registry (docs/spec/registry.md).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use nox_chain::{
    ChainConfig, Deployment, PrivateKeySigner, Registration, RegistryParams, U256,
    anvil::{Anvil, AnvilOptions, DEV_KEY},
    deploy,
    pool::PoolDeployment,
    snapshot::{ROLE_EXIT, ROLE_RELAY},
};
use serde::{Deserialize, Serialize};

use crate::net::TestnetError;

/// Stake every testnet node locks (token base units, 18 decimals: 1,000 tNOX).
pub fn testnet_stake() -> U256 {
    U256::from(1000u64) * U256::from(10u64).pow(U256::from(18u64))
}

/// Roots the testnet pool accepts besides the current one (docs/design/zk-payment.md §4.2).
pub const POOL_ROOT_WINDOW: u64 = 64;

/// What `chain.json` holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainInfo {
    /// The chain's JSON-RPC URL.
    pub rpc_url: String,
    /// The contracts.
    pub deployment: Deployment,
    /// Whether the testnet started (and `down` stops) the chain.
    pub managed: bool,
    /// The shielded pool (issue 12); absent in a `chain.json` written before it existed.
    #[serde(default)]
    pub pool: Option<PoolDeployment>,
    /// Uniswap v2 with a seeded NOX/WETH pool and the pool's swap adaptor (issue 13).
    #[serde(default)]
    pub defi: Option<nox_chain::defi::DefiDeployment>,
}

/// ETH and NOX tokens the testnet's Uniswap pool is seeded with (1 ETH ≈ 2,000 NOX).
pub fn defi_seed() -> (U256, U256) {
    let e18 = U256::from(10u64).pow(U256::from(18u64));
    (U256::from(100u64) * e18, U256::from(200_000u64) * e18)
}

impl ChainInfo {
    /// The `[chain]` section nodes and clients use.
    pub fn config(&self) -> ChainConfig {
        ChainConfig {
            rpc_urls: vec![self.rpc_url.clone()],
            registry: self.deployment.registry,
            chain_id: self.deployment.chain_id,
            confirmations: 0,
            operator_key_file: None,
        }
    }

    /// [`ChainInfo::config`] as TOML (with the node's operator key file, for nodes).
    pub fn toml(&self, operator_key_file: Option<&Path>) -> String {
        let key = operator_key_file
            .map(|f| format!("operator_key_file = {:?}\n", f.display().to_string()))
            .unwrap_or_default();
        format!(
            "\n[chain]\nrpc_urls = [{:?}]\nregistry = \"{}\"\nchain_id = {}\n{key}",
            self.rpc_url, self.deployment.registry, self.deployment.chain_id
        )
    }
}

/// Where the chain's process files go (`pid`, `anvil.log`).
pub fn process_dir(dir: &Path) -> PathBuf {
    dir.join("anvil")
}

fn chain_file(dir: &Path) -> PathBuf {
    dir.join("chain.json")
}

/// The testnet's chain, if it has one.
pub fn load(dir: &Path) -> Option<ChainInfo> {
    serde_json::from_slice(&std::fs::read(chain_file(dir)).ok()?).ok()
}

/// How the testnet gets its chain.
#[derive(Clone, Debug)]
pub enum ChainSource {
    /// Start Anvil on this port.
    Anvil {
        /// Loopback port.
        port: u16,
        /// Seconds per block (`None`: a block per transaction).
        block_time: Option<u64>,
    },
    /// Use an external chain, deploying from this key (hex).
    External {
        /// JSON-RPC URL.
        rpc_url: String,
        /// Funded deployer key.
        deployer_key: String,
        /// Deploy the testnet verifiers even if the chain is not a local development chain
        /// (`--allow-testnet-keys-on-public-chain`; [`nox_chain::testnet_keys`]).
        allow_testnet_keys: bool,
    },
}

/// Starts Anvil in `host`'s namespace on `<bind>:<port>` (chain id 31337), waits (20 s at
/// most) until it listens; returns its pid (`ip netns exec` execs it).
fn spawn_anvil_on(
    host: &crate::hosts::ServiceHost,
    port: u16,
    block_time: Option<u64>,
    log: &Path,
) -> Result<u32, TestnetError> {
    let program = nox_chain::anvil::foundry_tool("anvil").map_err(|e| e.to_string())?;
    let mut command = host.command(&program);
    command.args(["--host", &host.bind.to_string(), "--port", &port.to_string(), "--chain-id", "31337"]);
    if let Some(seconds) = block_time {
        command.args(["--block-time", &seconds.to_string()]);
    }
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting Anvil in {}: {e}", host.namespace))?;
    // Readiness on the bind address (this namespace reaches it over the veth); the relay
    // accepts on the public one whether or not Anvil listens yet.
    let addr = std::net::SocketAddr::from((host.bind, port));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)).is_ok() {
            return Ok(child.id());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("Anvil exited at start in {} ({status}); see {}", host.namespace, log.display()));
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("Anvil did not listen on {addr} in {} within 20 s", host.namespace));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, TestnetError> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())
}

/// Starts (or connects to) the chain and deploys the contracts; writes `chain.json` and
/// `deployer.key` (0600). The pool's verifiers use the TESTNET Groth16 keys (public randomness):
/// refused on a chain that is not a local development chain unless the source allows it (then a
/// warning is printed).
pub fn start(dir: &Path, source: &ChainSource) -> Result<ChainInfo, TestnetError> {
    start_on(dir, source, None)
}

/// [`start`], Anvil on `host` (`--hosts`: the chain's namespace, bound to its address, named
/// by its public address, which the chain host's relay must already serve) if given.
pub fn start_on(
    dir: &Path,
    source: &ChainSource,
    host: Option<&crate::hosts::ServiceHost>,
) -> Result<ChainInfo, TestnetError> {
    let (rpc_url, key, managed) = match (source, host) {
        (ChainSource::Anvil { port, block_time }, Some(host)) => {
            let process = process_dir(dir);
            std::fs::create_dir_all(&process).map_err(|e| format!("{}: {e}", process.display()))?;
            let pid = spawn_anvil_on(host, *port, *block_time, &process.join("anvil.log"))?;
            std::fs::write(process.join("pid"), pid.to_string()).map_err(|e| e.to_string())?;
            (host.url(*port), DEV_KEY.to_owned(), true)
        }
        (ChainSource::Anvil { port, block_time }, None) => {
            let process = process_dir(dir);
            std::fs::create_dir_all(&process).map_err(|e| format!("{}: {e}", process.display()))?;
            let options = AnvilOptions {
                block_time: *block_time,
                log: Some(process.join("anvil.log")),
                ..AnvilOptions::on_port(*port)
            };
            let anvil = Anvil::spawn(&options).map_err(|e| format!("starting Anvil: {e}"))?;
            let url = anvil.url().to_owned();
            let pid = anvil.detach();
            std::fs::write(process.join("pid"), pid.to_string()).map_err(|e| e.to_string())?;
            (url, DEV_KEY.to_owned(), true)
        }
        (ChainSource::External { rpc_url, deployer_key, allow_testnet_keys }, _) => {
            let checked = runtime()?
                .block_on(nox_chain::testnet_keys::check_deploy(rpc_url, *allow_testnet_keys))
                .map_err(|e| format!("{rpc_url}: {e}"))?;
            if let Some(warning) = checked.warning() {
                eprintln!("{warning}");
            }
            (rpc_url.clone(), deployer_key.clone(), false)
        }
    };
    let deployer = deploy::signer(&key).map_err(|e| e.to_string())?;
    let params = RegistryParams {
        min_stake: testnet_stake(),
        unstake_delay: 3600,
        slash_reporter_bps: 1000,
        token_supply: testnet_stake() * U256::from(1_000_000u64),
    };
    let rt = runtime()?;
    let deployment = rt
        .block_on(deploy::deploy(&rpc_url, &deployer, params))
        .map_err(|e| format!("deploying the NOX contracts on {rpc_url}: {e}"))?;
    let pool = rt
        .block_on(nox_chain::pool::deploy_pool(&rpc_url, &deployer, deployment.executor, POOL_ROOT_WINDOW))
        .map_err(|e| format!("deploying the shielded pool on {rpc_url}: {e}"))?;
    let (seed_eth, seed_tokens) = defi_seed();
    let defi = rt
        .block_on(nox_chain::defi::deploy_defi(
            &rpc_url,
            &deployer,
            pool.pool,
            deployment.stake_token,
            seed_eth,
            seed_tokens,
        ))
        .map_err(|e| format!("deploying Uniswap v2 and the swap adaptor on {rpc_url}: {e}"))?;
    let info = ChainInfo { rpc_url, deployment, managed, pool: Some(pool), defi: Some(defi) };
    let json = serde_json::to_vec_pretty(&info).map_err(|e| e.to_string())?;
    std::fs::write(chain_file(dir), json).map_err(|e| e.to_string())?;
    write_secret(&dir.join("deployer.key"), &key)?;
    Ok(info)
}

/// A node to register.
pub struct NodeToRegister {
    /// Its operator account (see [`new_operator`]).
    pub operator: PrivateKeySigner,
    /// What it registers.
    pub registration: Registration,
}

/// A fresh operator account for the node in `node_dir`, its key written to
/// `keys/operator.key` (0600).
pub fn new_operator(node_dir: &Path) -> Result<PrivateKeySigner, TestnetError> {
    let operator = PrivateKeySigner::random();
    let key = zeroize::Zeroizing::new(hex::encode(operator.to_bytes()));
    write_secret(&operator_key_file(node_dir), &key)?;
    Ok(operator)
}

/// ETH each exit's relayer account gets on a testnet (it pays gas before fees come back).
pub const RELAYER_FUNDS_ETH: u64 = 100;

/// Where the testnet keeps an exit's relayer key, nonce journal, and the spend verifying key.
pub fn relayer_files(dir: &Path, node_dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (node_dir.join("keys/relayer.key"), node_dir.join("relayer-nonces.json"), dir.join("spend.vk"))
}

/// A fresh relayer account for an exit (its key written beside the node's keys).
pub fn new_relayer(node_dir: &Path) -> Result<alloy::primitives::Address, TestnetError> {
    let relayer = PrivateKeySigner::random();
    let key = zeroize::Zeroizing::new(hex::encode(relayer.to_bytes()));
    write_secret(&node_dir.join("keys/relayer.key"), &key)?;
    Ok(relayer.address())
}

/// Writes the **testnet** transfer verifying key (deterministic testnet setup,
/// `nox_zk::transfer::testnet_keys`: the key of the pool's `TransferVerifier`) that the exits'
/// relayers check payment proofs with (issue 30: a payment is one private transaction). The
/// file keeps its old name, `spend.vk`.
pub fn write_spend_verifying_key(dir: &Path) -> Result<(), TestnetError> {
    let (_, vk) = nox_zk::transfer::testnet_keys().map_err(|e| format!("testnet transfer setup: {e}"))?;
    std::fs::write(dir.join("spend.vk"), nox_relayer::encode_verifying_key(vk)).map_err(|e| e.to_string())
}

/// How long the testnet's inserters let the oldest queued commitment wait before inserting a
/// partial batch, ms (the mainnet default is 10 min: `nox_relayer::inserter`).
pub const INSERTER_MAX_WAIT_MS: u64 = 2_000;

/// Where the testnet keeps the insertion proving key its exits' inserters share.
pub fn insert_proving_key_file(dir: &Path) -> PathBuf {
    dir.join("insert.pk")
}

/// Writes the **testnet** insertion proving key (deterministic setup,
/// `nox_zk::insert::testnet_setup`) once, for every exit's inserter.
pub fn write_insert_proving_key(dir: &Path) -> Result<(), TestnetError> {
    use ark_serialize::CanonicalSerialize;
    let (pk, _) = nox_zk::insert::testnet_setup().map_err(|e| format!("testnet insertion setup: {e}"))?;
    let mut bytes = Vec::new();
    pk.serialize_compressed(&mut bytes).map_err(|e| e.to_string())?;
    std::fs::write(insert_proving_key_file(dir), bytes).map_err(|e| e.to_string())
}

/// Sends [`RELAYER_FUNDS_ETH`] from the deployer to each relayer account.
pub fn fund_relayers(
    dir: &Path,
    info: &ChainInfo,
    relayers: &[alloy::primitives::Address],
) -> Result<(), TestnetError> {
    if relayers.is_empty() {
        return Ok(());
    }
    let key = zeroize::Zeroizing::new(
        std::fs::read_to_string(dir.join("deployer.key")).map_err(|e| format!("deployer key: {e}"))?,
    );
    let deployer = deploy::signer(key.trim()).map_err(|e| e.to_string())?;
    let amount = U256::from(RELAYER_FUNDS_ETH) * U256::from(10u64).pow(U256::from(18u64));
    runtime()?.block_on(async {
        for to in relayers {
            deploy::fund_eth(&info.rpc_url, &deployer, *to, amount)
                .await
                .map_err(|e| format!("funding relayer {to}: {e}"))?;
        }
        Ok(())
    })
}

/// Where the testnet keeps a node's operator key.
pub fn operator_key_file(node_dir: &Path) -> PathBuf {
    node_dir.join("keys/operator.key")
}

/// `descriptor` with its operator's statements for every key (what nodes upload themselves).
pub fn with_statements(
    info: &ChainInfo,
    operator: &PrivateKeySigner,
    descriptor: nox_topology::SignedDescriptor,
) -> Result<nox_topology::SignedDescriptor, TestnetError> {
    nox_chain::slash::attach_statements(operator, info.deployment.chain_id, info.deployment.registry, descriptor)
        .map_err(|e| e.to_string())
}

/// Role bits for a node of `layer` out of `layers`.
pub fn role(layer: u8, layers: u8) -> u8 {
    if layer + 1 == layers { ROLE_RELAY | ROLE_EXIT } else { ROLE_RELAY }
}

/// Every key file the testnet writes (deployer, operator and relayer keys): 0600, atomically
/// ([`nox_keystore::write_private_file`]).
fn write_secret(path: &Path, text: &str) -> Result<(), TestnetError> {
    nox_keystore::write_private_file(path, text.as_bytes()).map_err(|e| e.to_string())
}

/// The operator key of a node registered by the testnet.
pub fn operator_key(node_dir: &Path) -> Result<PrivateKeySigner, TestnetError> {
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(operator_key_file(node_dir)).map_err(|e| format!("operator key: {e}"))?,
    );
    deploy::signer(&text).map_err(|e| e.to_string())
}

/// Funds each node's operator account (ETH for gas, the stake) from the deployer and
/// registers it, all nodes at once.
pub fn register(dir: &Path, info: &ChainInfo, nodes: Vec<NodeToRegister>) -> Result<(), TestnetError> {
    let deployer_key = std::fs::read_to_string(dir.join("deployer.key")).map_err(|e| format!("deployer key: {e}"))?;
    let deployer = deploy::signer(&deployer_key).map_err(|e| e.to_string())?;
    let info = Arc::new(info.clone());
    runtime()?.block_on(async move {
        for node in &nodes {
            let eth = U256::from(10u64).pow(U256::from(18u64));
            deploy::fund(
                &info.rpc_url,
                &info.deployment,
                &deployer,
                node.operator.address(),
                eth,
                node.registration.stake,
            )
            .await
            .map_err(|e| format!("funding an operator: {e}"))?;
        }
        let mut tasks = tokio::task::JoinSet::new();
        for node in nodes {
            let info = info.clone();
            tasks.spawn(async move {
                let provider = deploy::wallet_provider(&info.rpc_url, &node.operator).map_err(|e| e.to_string())?;
                deploy::register(&provider, &info.deployment, node.operator.address(), &node.registration)
                    .await
                    .map_err(|e| format!("registering operator {}: {e}", node.operator.address()))
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| e.to_string())??;
        }
        Ok(())
    })
}

/// The registry's view for a client of the testnet: a [`nox_node::Trust`] when the testnet
/// has a chain.
pub async fn trust(dir: &Path) -> Result<Option<nox_node::Trust>, TestnetError> {
    let Some(info) = load(dir) else { return Ok(None) };
    let chain = nox_node::ChainMembership::start(info.config()).await.map_err(|e| e.to_string())?;
    Ok(Some(nox_node::Trust::Chain(chain)))
}

/// Reads a TOML file holding a `[chain]` section.
pub fn load_chain_toml(path: &Path) -> Result<ChainConfig, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        chain: ChainConfig,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str::<File>(&text).map(|f| f.chain).map_err(|e| format!("{}: {e}", path.display()))
}

/// Seconds between registry reads of a directory.
const ADMISSION_PERIOD: std::time::Duration = std::time::Duration::from_secs(2);

/// The registry's active identities, re-read every [`ADMISSION_PERIOD`] (a directory admits
/// exactly those). A failed read keeps the last verified set.
pub async fn admission_feed(
    config: ChainConfig,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::sync::watch::Receiver<Vec<[u8; 32]>>, String> {
    let chain = nox_node::ChainMembership::start(config).await.map_err(|e| e.to_string())?;
    let identities = |s: &nox_chain::RegistrySnapshot| s.nodes.iter().map(|n| n.identity_key).collect::<Vec<_>>();
    let (tx, rx) = tokio::sync::watch::channel(identities(&*chain.last().await));
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(ADMISSION_PERIOD) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let snapshot = chain.refresh().await;
            tx.send_if_modified(|current| {
                let fresh = identities(&snapshot);
                let changed = *current != fresh;
                if changed {
                    *current = fresh;
                }
                changed
            });
        }
    });
    Ok(rx)
}

/// One status line: the chain, the registry's block, fingerprint and active nodes (read and
/// verified now), and how many of them the verified topology routes to.
pub fn status_line(dir: &Path, running: bool) -> Option<String> {
    let info = load(dir)?;
    let process = if info.managed { if running { " (Anvil running)" } else { " (Anvil stopped)" } } else { "" };
    let view = runtime().ok()?.block_on(async {
        let mut view = nox_chain::RegistryView::new(info.config()).map_err(|e| e.to_string())?;
        view.refresh().await.map_err(|e| e.to_string())
    });
    let registry = match view {
        Ok(s) => format!("block {} fingerprint {} registered {}", s.block, s.fingerprint, s.nodes.len()),
        Err(e) => format!("registry unreadable: {e}"),
    };
    let routable = crate::directory::topology(dir)
        .map_or_else(|e| format!("topology: {e}"), |t| format!("routable {}", t.nodes().len()));
    let pool = info
        .pool
        .as_ref()
        .map_or_else(String::new, |p| format!("; shielded pool {} (executor {})", p.pool, info.deployment.executor));
    let defi = info
        .defi
        .as_ref()
        .map_or_else(String::new, |d| format!("; Uniswap v2 NOX/WETH pair {}, swap adaptor {}", d.pair, d.adaptor));
    Some(format!(
        "chain {} at {}{process} — registry {}: {registry}, {routable}{pool}{defi}",
        info.deployment.chain_id, info.rpc_url, info.deployment.registry
    ))
}
