//! `nox`: the NOX command-line entry point.
#![forbid(unsafe_code)]

use nox::{client_cmd, dashboard, demo, operator_cmd, tx_cmd, wallet_cmd, watch_cmd, zk_cmd};
use nox_bench::bench;
use nox_testnet as testnet;

use clap::{Parser, Subcommand};

/// NOX: a Loopix-style Sphinx mixnet whose exits relay blockchain traffic.
#[derive(Parser)]
#[command(name = "nox", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build Sphinx packets and peel them through in-memory hops: a forward
    /// request, a SURB reply, and the rejections (tamper, replay, wrong key).
    Demo(demo::DemoArgs),
    /// A local testnet of node processes on loopback.
    #[command(subcommand)]
    Testnet(testnet::TestnetCommand),
    /// Run a mix node from a configuration file (docs/configuration.md).
    Node {
        /// Path to node.toml.
        #[arg(long)]
        config: std::path::PathBuf,
        /// Take the `[chain]` section from a chain preset (`anvil`, a chain id with
        /// `deployments/<id>.json`, or a record file; `nox operator`), keeping the config's
        /// operator key file.
        #[arg(long)]
        chain: Option<String>,
        /// JSON-RPC URL for `--chain` (default: the preset's).
        #[arg(long, requires = "chain")]
        rpc: Option<String>,
    },
    /// Run the directory authority: serve the signed topology over HTTP and re-sign it when
    /// admitted nodes upload new descriptors (docs/spec/directory.md).
    Directory {
        /// Path to directory.toml.
        #[arg(long)]
        config: std::path::PathBuf,
        /// A TOML file with a `[chain]` section: admit exactly the node registry's active
        /// members (re-read every few seconds) instead of a fixed list.
        #[arg(long)]
        chain: Option<std::path::PathBuf>,
    },
    /// Generate a node's long-term identity (Ed25519) and link (X25519) keys
    /// in a new directory (mode 0700, files 0600) and print the public parts.
    Keygen {
        /// Key directory; refused if it already holds keys.
        #[arg(long)]
        dir: std::path::PathBuf,
    },
    /// Measurement tooling: every result is JSON with machine and commit.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// An anonymous client: SOCKS5 and Ethereum JSON-RPC endpoints through
    /// the mixnet (`--socks`, `--rpc`), or a one-shot `echo`.
    Client(client_cmd::ClientArgs),
    /// The shielded-pool wallet: keys, deposits, balance, gas-payment proofs, withdrawals
    /// (docs/spec/notes.md).
    #[command(subcommand)]
    Wallet(wallet_cmd::WalletCommand),
    /// Anonymous paid transactions: a relayer at an exit, paid from the shielded pool by a
    /// gas-payment proof, submits the action (docs/spec/relay.md).
    #[command(subcommand)]
    Tx(tx_cmd::TxCommand),
    /// A live web page of the network: layers and nodes, packet rates, drops by reason, the
    /// mixing-delay histogram, PoW difficulty, epochs and keys, the registry (aggregates only;
    /// docs/design/dashboard.md).
    Dashboard(dashboard::DashboardArgs),
    /// Zero-knowledge tooling: the Groth16 setup ceremony (`nox zk setup`, docs/spec/ceremony.md).
    #[command(subcommand)]
    Zk(zk_cmd::ZkCommand),
    /// Run a node on a real chain: the operator key in a v3 keystore, node keys and config from
    /// a chain preset, register, status, rotate, update, unstake, withdraw, claim.
    #[command(subcommand)]
    Operator(operator_cmd::OperatorCommand),
    /// Deploy the contracts through the CREATE2 factory (same addresses on every chain) and
    /// record them in `deployments/<chain-id>.json`.
    Deploy(operator_cmd::DeployArgs),
    /// The slashing watcher: reads every directory mirror, and submits evidence of an
    /// operator's equivocation (two signed key sets for one epoch) to the registry from its
    /// own account, earning the reporter's share.
    Watch(watch_cmd::WatchArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args).map_err(|e| e.to_string()),
        Command::Keygen { dir } => keygen(&dir),
        Command::Node { config, chain, rpc } => node(&config, chain.as_deref(), rpc.as_deref()),
        Command::Directory { config, chain } => directory(&config, chain.as_deref()),
        // The demo's money part needs the wallet (this crate): the rest is nox-testnet's.
        Command::Testnet(testnet::TestnetCommand::Demo { args, packets, geometry }) => {
            demo::testnet_demo(args.dir(), packets, geometry).map_err(|e| e.to_string())
        }
        Command::Testnet(command) => testnet::run(&command),
        Command::Bench(command) => bench::run(&command).map_err(|e| e.to_string()),
        Command::Wallet(command) => wallet_cmd::run(command),
        Command::Zk(command) => zk_cmd::run(command),
        Command::Dashboard(args) => {
            init_logging();
            dashboard::run(&args)
        }
        Command::Tx(command) => tx_cmd::run(command),
        Command::Operator(command) => operator_cmd::run(command),
        Command::Deploy(args) => operator_cmd::deploy(args),
        Command::Watch(args) => {
            init_logging();
            watch_cmd::run(&args)
        }
        Command::Client(args) => {
            init_logging();
            client_cmd::run(args)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            // 3 for a transaction handed over whose outcome is unknown (wallet_cmd::EXIT_UNCONFIRMED).
            std::process::ExitCode::from(nox::wallet_cmd::exit_status(&error))
        }
    }
}

fn keygen(dir: &std::path::Path) -> Result<(), String> {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::from_os_rng();
    let identity = nox_keystore::generate_identity(dir, &mut rng).map_err(|e| e.to_string())?;
    println!("wrote keys to {}", dir.display());
    println!("{}", identity.public());
    Ok(())
}

/// Structured logs on stderr. `NOX_LOG` = error | warn | info (default) |
/// debug | trace. Nothing logs keys, packet contents or client addresses.
fn init_logging() {
    let level =
        std::env::var("NOX_LOG").ok().and_then(|v| v.parse::<tracing::Level>().ok()).unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).with_ansi(false).try_init();
}

fn node(path: &std::path::Path, chain: Option<&str>, rpc: Option<&str>) -> Result<(), String> {
    init_logging();
    let mut config = nox_node::NodeConfig::load(path, |name| std::env::var(name).ok()).map_err(|e| e.to_string())?;
    if let Some(spec) = chain {
        config.chain =
            Some(operator_cmd::chain_from_preset(spec, rpc, config.chain.take()).map_err(|e| e.to_string())?);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let handler: std::sync::Arc<dyn nox_node::ExitHandler> = match &config.exit.services {
            Some(table) => std::sync::Arc::new(nox::exit_glue::ExitAdapter::from_table(table).await?),
            None => std::sync::Arc::new(nox_node::EchoOnly),
        };
        nox_node::run_with(config, handler, nox::stop_on_signal()).await.map_err(|e| e.to_string())
    })
}

fn directory(path: &std::path::Path, chain: Option<&std::path::Path>) -> Result<(), String> {
    init_logging();
    let config = nox_directory::DirectoryConfig::load(path).map_err(|e| e.to_string())?;
    let geometry = config.geometry().map_err(|e| e.to_string())?;
    let chain = chain.map(nox_testnet::chain::load_chain_toml).transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let stop = nox::stop_on_signal();
        let admission = match chain {
            Some(chain) => Some(nox_testnet::chain::admission_feed(chain, stop.clone()).await?),
            None => None,
        };
        nox_directory::run_with_admission(config, geometry, stop, admission).await.map_err(|e| e.to_string())
    })
}
