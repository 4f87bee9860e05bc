//! The pool a command works on (issue 34, moved out of the binary's `wallet_cmd.rs`): its
//! arguments ([`PoolArgs`], [`ChainArgs`]), where it is ([`resolve`]: a testnet's chain.json, a
//! `--chain` preset's deployment record, or the flags), the JSON-RPC endpoint every read goes
//! through ([`read_endpoint`]: `--rpc`, an explicit `--direct-rpc` with a warning, or a local
//! endpoint served by an in-process mixnet client — never the URL in chain.json), and the wallet
//! synced with it ([`synced`]).
//!
//! `--testnet <dir>` is the local harness's business (`nox-testnet`, which sits above this
//! crate): the caller passes what it means in as a [`Testnet`].

use std::path::{Path, PathBuf};

use alloy::{primitives::Address, providers::DynProvider};
use clap::Args;
use nox_client_io::cli::{LinkTransport, TopologyArgs};
use nox_wallet::{PoolView, Seed};

use crate::{
    CliError, Stop,
    files::WalletArgs,
    session::{self, PoolAt, read_provider},
};

/// What `--testnet <dir>` means, supplied by the local harness (`nox-testnet`).
#[derive(Clone, Copy)]
pub struct Testnet {
    /// The testnet's mixnet (its topology and CA file), for the in-process client.
    pub client: nox_client_io::cli::Testnet,
    /// The testnet's chain (its chain.json); `None`: the testnet is not up.
    pub chain: fn(&Path) -> Option<TestnetChain>,
}

/// What a wallet command needs of a testnet's chain.json.
#[derive(Clone, Debug)]
pub struct TestnetChain {
    /// The shielded pool and its deployment block (`None`: the testnet has no pool).
    pub pool: Option<(Address, u64)>,
    /// The BatchExecutor.
    pub executor: Address,
    /// Uniswap v2 and the pool's swap adaptor (`nox tx swap`), when deployed.
    pub defi: Option<nox_chain::defi::DefiDeployment>,
}

/// Why the pool, or the way to read it, could not be found. Every message is the one the
/// command printed before the move, byte for byte.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Neither a mixnet (`--testnet`, `--chain`), `--rpc` nor `--direct-rpc`.
    #[error(
        "no way to read the chain privately: give --testnet <dir> or --chain <preset> (the command reads through its \
         own mixnet client), or --rpc <URL> of a `nox client --rpc` daemon (start one with `nox client --testnet \
         <dir> --rpc 127.0.0.1:8645`); --direct-rpc <URL> reads directly, not privately"
    )]
    NoReadPath,
    /// The local endpoint of the in-process mixnet client could not be bound.
    #[error("local endpoint: {0}")]
    LocalEndpoint(std::io::Error),
    /// Local I/O.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The in-process mixnet client did not start.
    #[error(transparent)]
    Client(Box<nox_client_io::cli::ClientCliError>),
    /// `--chain` names no preset, or its record does not parse.
    #[error("--chain: {0}")]
    Preset(Box<nox_operator::OperatorError>),
    /// The `--chain` record lists no directory mirror and none was given.
    #[error("--chain {0}: its record lists no directory mirror; give --directory http://HOST:PORT")]
    NoMirror(String),
    /// The `--chain` record has no shielded pool and `--pool` was not given.
    #[error("give --pool: the --chain record has no shielded pool")]
    NoPoolInRecord,
    /// The testnet directory has no chain.json.
    #[error("{}: no chain.json (is the testnet up?)", .0.display())]
    NoChainJson(PathBuf),
    /// No pool named at all.
    #[error("give --pool, a --testnet or a --chain with a pool")]
    NoPool,
    /// A chain read failed; the message says how to reach the chain (`daemon_hint`).
    #[error("{0}")]
    Read(String),
    /// The wallet (its files, its sync).
    #[error(transparent)]
    Wallet(Box<CliError>),
}

impl From<CliError> for PoolError {
    fn from(e: CliError) -> Self {
        PoolError::Wallet(Box::new(e))
    }
}

impl From<PoolError> for Stop {
    fn from(e: PoolError) -> Self {
        Stop::Failed(e.to_string())
    }
}

/// An Ethereum address as a command-line value (`nox_wallet::units::parse_eth_address`).
pub fn parse_eth_address(text: &str) -> Result<Address, nox_wallet::units::EthAddressError> {
    nox_wallet::units::parse_eth_address(text)
}

/// The pool to use.
#[derive(Args, Clone)]
pub struct PoolArgs {
    /// A testnet directory (`nox testnet up --dir`): its chain.json names the pool, its
    /// topology the mixnet the chain is read through when `--rpc` is not given.
    #[arg(long)]
    pub testnet: Option<PathBuf>,
    /// The JSON-RPC endpoint of a `nox client --rpc` daemon: every chain read goes through the
    /// mixnet. Without it (and without `--direct-rpc`), the command starts its own mixnet
    /// client of the `--testnet`'s topology.
    #[arg(long, conflicts_with = "direct_rpc")]
    pub rpc: Option<String>,
    /// Read the chain directly from this JSON-RPC URL, NOT through the mixnet (its operator sees
    /// every read and your IP address); the command warns when it does.
    #[arg(long, value_name = "URL")]
    pub direct_rpc: Option<String>,
    /// A network on a chain instead of a testnet: a chain preset (`anvil`, a chain id with
    /// `deployments/<id>.json`, or a deployment record file). The pool, the executor and the
    /// first block come from its record; the mixnet from its directory mirrors (or
    /// `--directory`), every node admitted only if the chain's registry lists it.
    #[arg(long, value_name = "PRESET", conflicts_with = "testnet")]
    pub chain: Option<String>,
    /// With `--chain`: a directory mirror (`http://HOST:PORT`; repeat for several) instead of
    /// the record's mirrors.
    #[arg(long, value_name = "URL", requires = "chain")]
    pub directory: Vec<String>,
    /// With `--chain`: the JSON-RPC URL the registry is read from to admit the mirrors' nodes
    /// (default: the preset's). The wallet's own reads still go through the mixnet.
    #[arg(long, value_name = "URL", requires = "chain")]
    pub chain_rpc: Option<String>,
    /// The ShieldedPool address (overrides the testnet's).
    #[arg(long, value_parser = parse_eth_address)]
    pub pool: Option<Address>,
    /// First block to scan when the wallet has no state yet (the pool's deployment block).
    #[arg(long)]
    pub from_block: Option<u64>,
}

/// Wallet and pool.
#[derive(Args, Clone)]
pub struct ChainArgs {
    /// The wallet's directory and passphrase.
    #[command(flatten)]
    pub wallet: WalletArgs,
    /// The pool and how it is read.
    #[command(flatten)]
    pub pool: PoolArgs,
}

/// The seconds an in-process mixnet client waits for each chain read's answer.
const MIXNET_READ_TIMEOUT_S: u64 = 180;
/// The cover rate of an in-process mixnet client started for chain reads (packets per second),
/// `nox tx`'s default.
const MIXNET_READ_COVER_RATE: f64 = 2.0;

/// The JSON-RPC URL the command reads (and sends) through: `--rpc` (a mixnet daemon), an
/// explicit `--direct-rpc` (with a warning on stderr), or a local endpoint served by a mixnet
/// client — `mixnet` if the caller already runs one (`nox tx`), else one started here from the
/// `--testnet`'s topology. Never the chain.json URL.
pub async fn read_endpoint(
    p: &PoolArgs,
    mixnet: Option<&nox_client::ClientHandle>,
    testnet: Testnet,
) -> Result<String, PoolError> {
    if let Some(url) = &p.rpc {
        return Ok(url.clone());
    }
    if let Some(url) = &p.direct_rpc {
        eprintln!(
            "warning: reading the chain directly from {url} (--direct-rpc), not through the mixnet: that node's \
             operator sees every read of this wallet and your IP address"
        );
        return Ok(url.clone());
    }
    let client = match (mixnet, p.topology(MIXNET_READ_TIMEOUT_S)?) {
        (Some(client), _) => client.clone(),
        (None, Some(topology)) => nox_client_io::cli::start(&topology, MIXNET_READ_COVER_RATE, testnet.client)
            .await
            .map_err(|e| PoolError::Client(Box::new(e)))?,
        (None, None) => return Err(PoolError::NoReadPath),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(PoolError::LocalEndpoint)?;
    let addr = listener.local_addr()?;
    tokio::spawn(nox_client::serve_rpc(listener, client, nox_client::RpcConfig::default()));
    eprintln!("reading the chain through the mixnet (an in-process client; endpoint http://{addr})");
    Ok(format!("http://{addr}"))
}

impl PoolArgs {
    /// The mixnet this command reaches by itself: the `--testnet`'s topology, or the `--chain`
    /// preset's directory mirrors (`--directory` first) admitted by its registry; `None`: neither.
    pub fn topology(&self, timeout_secs: u64) -> Result<Option<TopologyArgs>, PoolError> {
        let mut topology = TopologyArgs {
            testnet: None,
            topology: None,
            directory: Vec::new(),
            authority: None,
            chain: None,
            chain_rpc: None,
            timeout_secs,
            transport: LinkTransport::Tcp,
        };
        if let Some(dir) = &self.testnet {
            topology.testnet = Some(dir.clone());
        } else if let (Some(spec), Some(record)) = (&self.chain, self.record()?) {
            topology.directory = if self.directory.is_empty() { record.mirrors } else { self.directory.clone() };
            if topology.directory.is_empty() {
                return Err(PoolError::NoMirror(spec.clone()));
            }
            topology.chain = Some(spec.clone());
            topology.chain_rpc = self.chain_rpc.clone();
        } else {
            return Ok(None);
        }
        Ok(Some(topology))
    }

    /// The `--chain` preset's deployment record.
    pub fn record(&self) -> Result<Option<nox_operator::DeploymentRecord>, PoolError> {
        let Some(spec) = &self.chain else { return Ok(None) };
        let preset = nox_operator::Preset::resolve(spec, Path::new("deployments"))
            .map_err(|e| PoolError::Preset(Box::new(e)))?;
        Ok(Some(preset.record))
    }
}

/// Refuses a pool that verifies with the testnet keys on a chain that is not a development
/// chain (`NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN=1`: a warning on stderr instead).
async fn guard_testnet_keys(rpc: &str, pool: Address) -> Result<(), PoolError> {
    if let Some(warning) = nox_chain::testnet_keys::guard_pool_from_env(rpc, pool)
        .await
        .map_err(|e| PoolError::Read(nox_client_io::daemon_hint::explain(rpc, &e.to_string())))?
    {
        eprintln!("{warning}");
    }
    Ok(())
}

/// Where the pool is: the `--chain` record's, else the `--testnet`'s (`--pool` and
/// `--from-block` override either), read through [`read_endpoint`].
pub async fn resolve(
    p: &PoolArgs,
    mixnet: Option<&nox_client::ClientHandle>,
    testnet: Testnet,
) -> Result<PoolAt, PoolError> {
    if let Some(record) = p.record()? {
        let deployed = record.contracts.pool.as_ref().map(|c| c.pool);
        let pool = p.pool.or(deployed).ok_or(PoolError::NoPoolInRecord)?;
        let rpc = read_endpoint(p, mixnet, testnet).await?;
        guard_testnet_keys(&rpc, pool).await?;
        let from_block = p.from_block.unwrap_or(record.start_block);
        return Ok(PoolAt { rpc, pool, executor: Some(record.contracts.executor), from_block });
    }
    let info = match &p.testnet {
        Some(dir) => Some((testnet.chain)(dir).ok_or_else(|| PoolError::NoChainJson(dir.clone()))?),
        None => None,
    };
    let pools = info.as_ref().and_then(|i| i.pool);
    let pool = p.pool.or(pools.map(|(pool, _)| pool)).ok_or(PoolError::NoPool)?;
    let rpc = read_endpoint(p, mixnet, testnet).await?;
    // The wallet proves with the TESTNET keys: a pool verifying with them on a chain that is not
    // a development chain is refused (NOX_ALLOW_TESTNET_KEYS_ON_PUBLIC_CHAIN=1: a warning).
    guard_testnet_keys(&rpc, pool).await?;
    let from_block = p.from_block.or(pools.map(|(_, block)| block)).unwrap_or(0);
    Ok(PoolAt { rpc, pool, executor: info.map(|i| i.executor), from_block })
}

/// Resolves the pool, opens the wallet and syncs it ([`synced_at`]).
pub async fn synced(c: &ChainArgs, testnet: Testnet) -> Result<(Seed, PoolAt, DynProvider, PoolView), PoolError> {
    let at = resolve(&c.pool, None, testnet).await?;
    let provider = read_provider(&at.rpc)?;
    let (seed, view) = synced_at(c, &at, &provider).await?;
    Ok((seed, at, provider, view))
}

/// Opens the wallet and syncs its view through `provider` (the pool `at`), saving the state; a
/// failed read says how to reach the chain (`daemon_hint`).
pub async fn synced_at(c: &ChainArgs, at: &PoolAt, provider: &DynProvider) -> Result<(Seed, PoolView), PoolError> {
    session::sync_view(&c.wallet, at, provider).await.map_err(|e| match &e {
        CliError::Sync(s) if s.is_read() => {
            PoolError::Read(nox_client_io::daemon_hint::explain(&at.rpc, &e.to_string()))
        }
        _ => PoolError::Wallet(Box::new(e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        pool: PoolArgs,
    }

    fn pool(args: &[&str]) -> PoolArgs {
        Cli::try_parse_from(std::iter::once("nox").chain(args.iter().copied())).expect("parses").pool
    }

    #[test]
    fn the_testnet_names_the_mixnet_and_nothing_names_none() {
        let t = pool(&["--testnet", "/tmp/t"]).topology(7).expect("a topology").expect("some");
        assert_eq!(t.testnet.as_deref(), Some(Path::new("/tmp/t")));
        assert_eq!(t.timeout_secs, 7);
        assert!(t.chain.is_none() && t.directory.is_empty());
        assert!(pool(&["--rpc", "http://127.0.0.1:1"]).topology(7).expect("no error").is_none());
    }

    #[test]
    fn a_chain_preset_names_its_mirrors_and_directory_flags_replace_them() {
        let dir = ["--chain", "anvil", "--directory", "http://10.0.0.1:9", "--chain-rpc", "http://r:1"];
        let t = pool(&dir).topology(5).expect("a topology").expect("some");
        assert_eq!(t.directory, vec!["http://10.0.0.1:9".to_owned()]);
        assert_eq!(t.chain.as_deref(), Some("anvil"));
        assert_eq!(t.chain_rpc.as_deref(), Some("http://r:1"));
    }

    #[test]
    fn an_unknown_preset_is_refused_by_name() {
        let e = pool(&["--chain", "/nonexistent/record.json"]).topology(5).expect_err("refused");
        assert!(e.to_string().starts_with("--chain: "), "{e}");
    }

    #[tokio::test]
    async fn no_way_to_read_privately_is_said_in_full() {
        let testnet = Testnet {
            client: nox_client_io::cli::Testnet { topology: |_| unreachable!("no testnet given"), ca_file: |_| None },
            chain: |_| None,
        };
        let e = read_endpoint(&pool(&[]), None, testnet).await.expect_err("refused");
        assert!(matches!(e, PoolError::NoReadPath));
        assert!(e.to_string().starts_with("no way to read the chain privately: give --testnet <dir>"), "{e}");
        let direct = pool(&["--direct-rpc", "http://127.0.0.1:1"]);
        assert_eq!(read_endpoint(&direct, None, testnet).await.expect("direct"), "http://127.0.0.1:1");
        let e = resolve(&pool(&["--testnet", "/nonexistent"]), None, testnet).await.expect_err("refused");
        assert_eq!(e.to_string(), "/nonexistent: no chain.json (is the testnet up?)");
        let e = resolve(&pool(&["--rpc", "http://127.0.0.1:1"]), None, testnet).await.expect_err("refused");
        assert_eq!(e.to_string(), "give --pool, a --testnet or a --chain with a pool");
    }
}
