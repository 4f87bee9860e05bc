//! `nox operator …` and `nox deploy`: a thin clap shell over `nox-operator` (keystore, CREATE2
//! deployment, chain presets, registry calls). Every command takes `--chain <preset>` (built-in
//! `anvil`, a chain id with `deployments/<id>.json`, or a record file) and `--rpc URL`.

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use nox_chain::{Address, PrivateKeySigner, Registration, U256};
use nox_operator::ops::{self, NodeStatus};
use nox_operator::session::{self, Session};
use nox_operator::{DeployPlan, OperatorError, Preset};

/// The operator's key.
#[derive(Args, Clone, Debug)]
pub struct KeyArgs {
    /// Web3 Secret Storage v3 keystore (JSON) holding the operator's Ethereum key.
    #[arg(long)]
    pub keystore: PathBuf,
    /// A file whose first line is the passphrase (else NOX_OPERATOR_PASSWORD, else a prompt).
    #[arg(long)]
    pub password_file: Option<PathBuf>,
}

/// The chain.
#[derive(Args, Clone, Debug)]
pub struct ChainArgs {
    /// Chain preset: `anvil`, a chain id (`deployments/<id>.json`), or a record file.
    #[arg(long, default_value = "anvil")]
    pub chain: String,
    /// JSON-RPC URL (default: the preset's).
    #[arg(long)]
    pub rpc: Option<String>,
    /// Directory of deployment records.
    #[arg(long, default_value = "deployments")]
    pub deployments: PathBuf,
}

/// The node as the registry records it (`register`, `update`).
#[derive(Args, Clone, Debug)]
pub struct NodeArgs {
    /// The node's directory (or key directory): its identity and link keys.
    #[arg(long)]
    pub node_dir: PathBuf,
    /// Link address registered (`ip:port`, the address other nodes dial).
    #[arg(long)]
    pub address: String,
    /// Role bits: 1 relay, 2 exit, 3 both.
    #[arg(long, default_value_t = 1)]
    pub role: u8,
}

/// `nox deploy`.
#[derive(Args, Clone, Debug)]
pub struct DeployArgs {
    #[command(flatten)]
    pub key: KeyArgs,
    /// JSON-RPC URL.
    #[arg(long)]
    pub rpc: String,
    /// Where to write `<chain-id>.json`.
    #[arg(long, default_value = "deployments")]
    pub deployments: PathBuf,
    /// CREATE2 salt (32 bytes hex; default keccak256("nox.deploy.v1")).
    #[arg(long)]
    pub salt: Option<String>,
    /// Stake an existing ERC-20 instead of deploying the testnet token.
    #[arg(long)]
    pub stake_token: Option<Address>,
    /// Minimum stake (token base units; default 1000e18).
    #[arg(long)]
    pub min_stake: Option<U256>,
    /// Unstake delay in seconds (default 3600).
    #[arg(long)]
    pub unstake_delay: Option<u64>,
    /// Do not deploy the shielded pool.
    #[arg(long)]
    pub no_pool: bool,
    /// Deploy the TESTNET verifier keys (public randomness) on a chain that is not a local
    /// development chain: anyone could forge proofs. Throwaway deployments only.
    #[arg(long)]
    pub allow_testnet_keys_on_public_chain: bool,
    /// A directory mirror (`http://HOST:PORT`) to list in the record, so clients start from
    /// the preset alone; repeat for several. Without it the record keeps the mirrors it lists.
    #[arg(long = "mirror", value_name = "URL")]
    pub mirrors: Vec<String>,
}

/// The exit services `init` configures (an exit registers with `--role 2` or `3`).
#[derive(Args, Clone, Debug)]
pub struct ExitInitArgs {
    /// Run the paid relayer with the operator's keystore (needs --keystore): the fees this exit
    /// earns are credited to the operator in the RewardLedger (`nox operator claim`).
    #[arg(long, requires = "keystore")]
    pub relay: bool,
    /// The pool's transfer verifying key file (its ceremony's); without it, on a deployment with
    /// the testnet verifier keys, the testnet key is written next to node.toml.
    #[arg(long, requires = "relay")]
    pub verifying_key: Option<PathBuf>,
    /// The insertion proving key file (its ceremony's); without it the testnet key (derived by
    /// the node at start; refused on a deployment that does not use it).
    #[arg(long, requires = "relay", conflicts_with = "no_inserter")]
    pub insert_proving_key: Option<PathBuf>,
    /// Relay without inserting queued notes (someone else inserts them).
    #[arg(long, requires = "relay")]
    pub no_inserter: bool,
    /// Serve clients' chain reads through this exit from this upstream JSON-RPC URL (e.g. the
    /// operator's own node): every read a wallet makes through the mixnet ends there.
    #[arg(long, value_name = "URL")]
    pub serve_rpc: Option<String>,
}

/// `nox operator …`.
#[derive(Subcommand, Clone, Debug)]
pub enum OperatorCommand {
    /// Create a keystore with a fresh random operator key (or import one: --import-key-file).
    NewKey {
        #[command(flatten)]
        key: KeyArgs,
        /// Import the hex private key in this file instead of generating one.
        #[arg(long)]
        import_key_file: Option<PathBuf>,
    },
    /// Node keys and node.toml from a chain preset.
    Init {
        #[command(flatten)]
        chain: ChainArgs,
        /// The node's directory.
        #[arg(long)]
        dir: PathBuf,
        /// Link listen address (registered on chain).
        #[arg(long)]
        listen: SocketAddr,
        /// The directory serving descriptors (`http://IP:PORT`).
        #[arg(long)]
        directory: String,
        /// Layers of the network.
        #[arg(long, default_value_t = 3)]
        layers: u8,
        /// The operator's keystore, named in node.toml's `[operator]` so that `nox node --config`
        /// unlocks it at start (passphrase from --password-file, else NOX_OPERATOR_PASSWORD).
        #[arg(long)]
        keystore: Option<PathBuf>,
        /// The passphrase file node.toml names (with --keystore).
        #[arg(long, requires = "keystore")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        exit: ExitInitArgs,
    },
    /// Stake and register the node (shows gas and stake, asks on a terminal).
    Register {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
        #[command(flatten)]
        node: NodeArgs,
        /// Stake (token base units; default: the registry's minimum).
        #[arg(long)]
        stake: Option<U256>,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
    },
    /// The node's registry record, balances and unclaimed rewards.
    Status {
        #[command(flatten)]
        chain: ChainArgs,
        /// The operator's keystore (or give --address).
        #[arg(long)]
        keystore: Option<PathBuf>,
        /// The operator's address.
        #[arg(long)]
        address: Option<Address>,
        /// Passphrase file for --keystore.
        #[arg(long)]
        password_file: Option<PathBuf>,
    },
    /// Register the node's current identity key (after regenerating it).
    Rotate {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
        /// The node's directory.
        #[arg(long)]
        node_dir: PathBuf,
    },
    /// Change the link key (from the node's directory), address and role.
    Update {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
        #[command(flatten)]
        node: NodeArgs,
    },
    /// Leave the network: out of the active list now, stake withdrawable after the delay.
    Unstake {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Take the stake back after the unstake delay.
    Withdraw {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Claim relayer rewards from the RewardLedger.
    Claim {
        #[command(flatten)]
        key: KeyArgs,
        #[command(flatten)]
        chain: ChainArgs,
        /// Asset (default: the stake token; 0x000…0 for ETH).
        #[arg(long)]
        asset: Option<Address>,
        /// Recipient (default: the operator).
        #[arg(long)]
        to: Option<Address>,
    },
}

/// `nox node --chain <preset> [--rpc URL]` (`nox_operator::preset`).
pub use nox_operator::preset::chain_from_preset;

fn open(key: &KeyArgs) -> Result<PrivateKeySigner, OperatorError> {
    session::open_key(&key.keystore, key.password_file.as_deref())
}

fn preset(chain: &ChainArgs) -> Result<(Preset, String), OperatorError> {
    session::resolve(&chain.chain, &chain.deployments, chain.rpc.as_deref())
}

fn open_session(key: &KeyArgs, chain: &ChainArgs) -> Result<Session, OperatorError> {
    Session::open(&key.keystore, key.password_file.as_deref(), &chain.chain, &chain.deployments, chain.rpc.as_deref())
}

fn ask(question: &str) -> Result<(), OperatorError> {
    if !std::io::stdin().is_terminal() {
        return Err(OperatorError::State("not a terminal: add --yes to send without asking".into()));
    }
    print!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| OperatorError::Passphrase(e.to_string()))?;
    if matches!(line.trim(), "y" | "Y" | "yes") { Ok(()) } else { Err(OperatorError::Cancelled) }
}

/// `nox deploy`.
pub fn deploy(args: DeployArgs) -> Result<(), String> {
    let signer = open(&args.key).map_err(|e| e.to_string())?;
    let mut plan = DeployPlan::development();
    if let Some(salt) = &args.salt {
        plan.salt = salt.parse().map_err(|e| format!("--salt: {e}"))?;
    }
    plan.stake_token = args.stake_token;
    if let Some(m) = args.min_stake {
        plan.params.min_stake = m;
    }
    if let Some(d) = args.unstake_delay {
        plan.params.unstake_delay = d;
    }
    plan.pool = !args.no_pool;
    plan.allow_testnet_keys = args.allow_testnet_keys_on_public_chain;
    let outcome = session::runtime()
        .map_err(|e| e.to_string())?
        .block_on(nox_operator::deploy::deploy(&args.rpc, &signer, &plan))
        .map_err(|e| e.to_string())?;
    if let Some(w) = &outcome.warning {
        eprintln!("{w}");
    }
    let mut outcome = outcome;
    outcome.record.mirrors =
        nox_operator::deploy::mirrors_for(&args.deployments, outcome.record.chain_id, &args.mirrors)
            .map_err(|e| e.to_string())?;
    let path = outcome.record.store(&args.deployments).map_err(|e| e.to_string())?;
    if outcome.created.is_empty() {
        println!("nothing to deploy: every contract is already at its address");
    }
    for (name, at) in &outcome.created {
        println!("deployed {name} at {at}");
    }
    println!(
        "registry {} (chain {}, from block {})",
        outcome.record.contracts.registry, outcome.record.chain_id, outcome.record.start_block
    );
    println!("wrote {}", path.display());
    Ok(())
}

/// The relayer's transfer verifying key: the file given, or (a deployment with the testnet
/// verifier keys only) the testnet key written to `<dir>/transfer.vk`.
fn relay_verifying_key(preset: &Preset, dir: &Path, given: Option<PathBuf>) -> Result<PathBuf, OperatorError> {
    if let Some(file) = given {
        let text = std::fs::read_to_string(&file).map_err(|e| OperatorError::io(&file, e))?;
        nox_relayer::decode_verifying_key(&text)
            .map_err(|e| OperatorError::Record(format!("--verifying-key {}: {e}", file.display())))?;
        return Ok(file);
    }
    if !preset.record.testnet_verifier_keys {
        return Err(OperatorError::Record(format!(
            "--relay: chain preset {:?} does not use the testnet verifier keys: give its transfer verifying key \
             (--verifying-key)",
            preset.name
        )));
    }
    let (_, vk) = nox_zk::transfer::testnet_keys().map_err(|e| OperatorError::Record(format!("testnet keys: {e}")))?;
    std::fs::create_dir_all(dir).map_err(|e| OperatorError::io(dir, e))?;
    let file = dir.join("transfer.vk");
    std::fs::write(&file, nox_relayer::encode_verifying_key(vk)).map_err(|e| OperatorError::io(&file, e))?;
    Ok(file)
}

/// `nox operator …`.
pub fn run(command: OperatorCommand) -> Result<(), String> {
    run_inner(command).map_err(|e| e.to_string())
}

fn run_inner(command: OperatorCommand) -> Result<(), OperatorError> {
    match command {
        OperatorCommand::NewKey { key, import_key_file } => {
            let signer = session::new_key(&key.keystore, key.password_file.as_deref(), import_key_file.as_deref())?;
            println!("operator {} in {}", signer.address(), key.keystore.display());
        }
        OperatorCommand::Init { chain, dir, listen, directory, layers, keystore, password_file, exit } => {
            let (preset, rpc) = preset(&chain)?;
            let operator = keystore.map(|keystore| nox_operator::init::OperatorKey { keystore, password_file });
            let relay = match exit.relay {
                false => None,
                true => Some(nox_operator::init::RelayOptions {
                    verifying_key: relay_verifying_key(&preset, &dir, exit.verifying_key)?,
                    inserter: !exit.no_inserter,
                    insert_proving_key: exit.insert_proving_key,
                }),
            };
            let options = nox_operator::init::InitOptions {
                dir,
                listen,
                directory_url: directory,
                layers,
                rpc_url: rpc,
                operator,
                relay,
                serve_rpc: exit.serve_rpc,
            };
            let (identity, config) = nox_operator::init::init(&options, &preset)?;
            println!("{}", identity.public());
            println!(
                "wrote {} (chain {}, registry {})",
                config.display(),
                preset.record.chain_id,
                preset.record.contracts.registry
            );
        }
        OperatorCommand::Register { key, chain, node: NodeArgs { node_dir, address, role }, stake, yes } => {
            let (identity_key, link_key) = session::node_keys(&node_dir)?;
            let s = open_session(&key, &chain)?;
            let (record, operator) = (s.record(), s.operator());
            s.block_on(async {
                let stake = match stake {
                    Some(stake) => stake,
                    None => s.min_stake().await?,
                };
                let registration = Registration { identity_key, link_key, link_address: address, role, stake };
                let q = ops::quote_register(&s.provider, record, operator, &registration).await?;
                println!("operator      {operator}");
                println!("registry      {} (chain {})", record.contracts.registry, record.chain_id);
                println!("stake         {} (minimum {}, balance {})", q.stake, q.min_stake, q.tokens);
                println!(
                    "gas           approve {} + register {}{} at {} wei/gas: at most {} wei (balance {} wei)",
                    q.approve_gas,
                    q.register_gas,
                    if q.register_gas_is_bound { " (bound)" } else { "" },
                    q.gas_price,
                    q.max_fee(),
                    q.eth
                );
                if !yes {
                    ask("send?")?;
                }
                nox_chain::deploy::register(&s.provider, &record.deployment(), operator, &registration).await?;
                println!("registered {operator} at {}", registration.link_address);
                Ok(())
            })?;
        }
        OperatorCommand::Status { chain, keystore, address, password_file } => {
            let (preset, rpc) = preset(&chain)?;
            let operator = match (address, keystore) {
                (Some(a), _) => a,
                (None, Some(k)) => open(&KeyArgs { keystore: k, password_file })?.address(),
                (None, None) => return Err(OperatorError::State("give --keystore or --address".into())),
            };
            let provider = nox_chain::deploy::wallet_provider(&rpc, &PrivateKeySigner::random())?;
            let rt = session::runtime().map_err(|e| OperatorError::Passphrase(e.to_string()))?;
            let s = rt.block_on(ops::status(&provider, &preset.record, operator, &[]))?;
            println!("operator {}", s.operator);
            match s.status {
                NodeStatus::None => println!("status   not registered"),
                NodeStatus::Active => println!("status   active"),
                NodeStatus::Unstaking { available_at } => {
                    println!("status   unstaking (withdrawable from unix time {available_at})")
                }
            }
            if let Some(n) = &s.node {
                println!("address  {}", n.link_address);
                println!("role     {}", n.role);
                println!("stake    {}", n.stake);
                println!("identity {}", hex::encode(n.identity_key));
                println!("link     {}", hex::encode(n.link_key));
            }
            println!("balance  {} wei, {} stake tokens", s.eth, s.tokens);
            for (asset, amount) in &s.rewards {
                println!("reward   {amount} of {asset}");
            }
        }
        OperatorCommand::Rotate { key, chain, node_dir } => {
            let (identity_key, _) = session::node_keys(&node_dir)?;
            let s = open_session(&key, &chain)?;
            s.block_on(ops::rotate(&s.provider, s.record(), identity_key))?;
            println!("identity key now {}", hex::encode(identity_key));
        }
        OperatorCommand::Update { key, chain, node: NodeArgs { node_dir, address, role } } => {
            let (_, link_key) = session::node_keys(&node_dir)?;
            let s = open_session(&key, &chain)?;
            s.block_on(ops::update(&s.provider, s.record(), link_key, &address, role))?;
            println!("updated: {address}, role {role}");
        }
        OperatorCommand::Unstake { key, chain } => {
            let s = open_session(&key, &chain)?;
            let at = s.block_on(ops::unstake(&s.provider, s.record(), s.operator()))?;
            println!("left the active list; stake withdrawable from unix time {at}");
        }
        OperatorCommand::Withdraw { key, chain } => {
            let s = open_session(&key, &chain)?;
            let amount = s.block_on(ops::withdraw(&s.provider, s.record(), s.operator()))?;
            println!("withdrew {amount} stake tokens");
        }
        OperatorCommand::Claim { key, chain, asset, to } => {
            let s = open_session(&key, &chain)?;
            let asset = asset.unwrap_or(s.record().contracts.stake_token);
            let to = to.unwrap_or(s.operator());
            let amount = s.block_on(ops::claim(&s.provider, s.record(), s.operator(), asset, to))?;
            println!("claimed {amount} of {asset} to {to}");
        }
    }
    Ok(())
}
