//! `nox client` (the daemon: SOCKS5 and JSON-RPC endpoints through the mixnet; the one-shot
//! `nox client echo`) and the topology arguments every mixnet command shares ([`TopologyArgs`]):
//! their clap arguments and what they run. `--testnet <dir>` is the local harness's business
//! (`nox-testnet`, above this crate): the binary passes it in as a [`Testnet`].

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, Instant};

use nox_client::profile::CoverProfile;
use nox_client::{Client, ClientConfig, ClientHandle, RpcConfig, ShellConfig};
use nox_message::{RequestBody, Status};
use nox_topology::VerifiedTopology;

use crate::{ClientIoError, Endpoints, TopologySource};

/// Where the topology comes from.
#[derive(clap::Args, Debug, Clone)]
pub struct TopologyArgs {
    /// A testnet state directory (`topology.json` and `authority.pub`).
    #[arg(long, conflicts_with_all = ["topology", "authority", "directory", "chain"])]
    pub testnet: Option<PathBuf>,
    /// A topology document (JSON); needs `--authority`.
    #[arg(long, requires = "authority", conflicts_with = "directory")]
    pub topology: Option<PathBuf>,
    /// A directory mirror, `http://IP:PORT`; repeat for several (fetches fall over between
    /// them). Needs `--authority` or `--chain`.
    #[arg(long)]
    pub directory: Vec<String>,
    /// The directory authority's Ed25519 public key, hex.
    #[arg(long)]
    pub authority: Option<String>,
    /// Verify the directory's documents against the on-chain node registry, as nodes do,
    /// instead of an authority key: a chain preset (`anvil`, a chain id with
    /// `deployments/<id>.json`, a deployment record) or a TOML file with a `[chain]` section
    /// (a node.toml). The directory is then an untrusted mirror. Without `--directory`, the
    /// mirrors are the preset's deployment record's (`mirrors`).
    #[arg(long, conflicts_with_all = ["topology", "authority"])]
    pub chain: Option<String>,
    /// JSON-RPC URL of the chain (default: the preset's or the file's).
    #[arg(long, requires = "chain")]
    pub chain_rpc: Option<String>,
    /// Seconds before a request without a complete reply fails (never retried).
    #[arg(long, default_value_t = 30)]
    pub timeout_secs: u64,
    /// How the client reaches its entries and reply gateway: `tcp`, or `websocket` (the nodes'
    /// advertised WebSocket endpoints, as a browser does; docs/spec/link.md §5).
    #[arg(long, value_enum, default_value_t = LinkTransport::Tcp)]
    pub transport: LinkTransport,
}

/// `--transport`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkTransport {
    /// TCP links.
    Tcp,
    /// WebSocket links (`ws://`).
    Websocket,
}

impl From<LinkTransport> for nox_link::transport::Transport {
    fn from(t: LinkTransport) -> Self {
        match t {
            LinkTransport::Tcp => Self::Tcp,
            LinkTransport::Websocket => Self::WebSocket,
        }
    }
}

/// `nox client …`
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ClientArgs {
    #[command(subcommand)]
    pub command: Option<ClientCommand>,
    #[command(flatten)]
    pub topology: Option<TopologyArgs>,
    /// SOCKS5 endpoint, e.g. 127.0.0.1:1080: each `CONNECT` opens a TCP stream through the
    /// mixnet to the server, relayed both ways (docs/spec/streams.md), so TLS runs end to end
    /// from your program (`curl --socks5-hostname 127.0.0.1:1080 https://…`); host names are
    /// resolved at the exit. The exit sees the destination and ciphertext, not who you are.
    #[arg(long)]
    pub socks: Option<SocketAddr>,
    /// Ethereum JSON-RPC endpoint, e.g. 127.0.0.1:8645 (HTTP/1.1, keep-alive): each POST goes
    /// to an exit's JSON-RPC service through the mixnet. Point wallets (`nox wallet`/`nox tx
    /// --rpc http://127.0.0.1:8645`, cast, viem) here.
    #[arg(long)]
    pub rpc: Option<SocketAddr>,
    /// Loopix λ_P cover rate in packets per second (each one packet, 4 KiB by default); 0 = off.
    #[arg(long, default_value_t = nox_client::DAEMON_COVER_RATE)]
    pub cover_rate: f64,
    /// Cover profile: `always-on` (every free slot), `wallet` (only in sessions padded to 120 s
    /// and 30 s after the last use) or `mobile` (a 125 MB/day budget); docs/benchmarks/cover.md.
    #[arg(long, default_value = "always-on", value_parser = CoverProfile::from_name)]
    pub profile: CoverProfile,
    /// Expected JSON-RPC reply size in bytes (sizes the SURB budget).
    #[arg(long, default_value_t = 16 * 1024)]
    pub rpc_reply_len: usize,
    /// Trust the CA certificates in this PEM file for entries and gateways that serve `wss://`
    /// (with `--transport websocket`); with `--testnet`, the testnet's own `ca.pem` (written by
    /// `nox testnet up --tls`) is trusted without it.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
}

/// One-shot client commands.
#[derive(clap::Subcommand, Debug)]
pub enum ClientCommand {
    /// Send one echo request through the mixnet and print the reply and the round-trip time.
    Echo {
        #[command(flatten)]
        topology: TopologyArgs,
        /// Cover rate while waiting (packets per second; 0 = off).
        #[arg(long, default_value_t = 0.0)]
        cover_rate: f64,
        /// Trust the CA certificates in this PEM file for `wss://` entries and gateways.
        #[arg(long)]
        ca_file: Option<PathBuf>,
        /// The text to echo.
        text: String,
    },
}

/// A testnet's topology, fetched from its state directory (boxed: a plain function pointer).
pub type TestnetTopology = Pin<Box<dyn Future<Output = Result<VerifiedTopology, String>> + Send + 'static>>;

/// What `--testnet <dir>` means, supplied by the local harness (`nox-testnet`), which sits above
/// this crate.
#[derive(Clone, Copy)]
pub struct Testnet {
    /// The testnet's current verified topology (from its directory, or its file).
    pub topology: fn(PathBuf) -> TestnetTopology,
    /// The testnet's own CA file (`nox testnet up --tls`), if it has one.
    pub ca_file: fn(&Path) -> Option<PathBuf>,
}

/// What went wrong in `nox client`; the `Display` texts are the command's messages.
#[derive(Debug, thiserror::Error)]
pub enum ClientCliError {
    /// No topology source, or an incomplete one.
    #[error(
        "give --testnet <dir>, --topology <file> --authority <hex>, or --directory <url>... with --authority <hex> \
         or --chain <preset|file>"
    )]
    NoSource,
    /// The daemon was started without any topology argument.
    #[error("give --testnet <dir> or --topology <file> --authority <hex>")]
    NoTopology,
    /// The daemon was given nothing to serve.
    #[error("nothing to serve: give --socks and/or --rpc")]
    NothingToServe,
    /// The testnet's topology could not be read (the harness's message).
    #[error("{0}")]
    Testnet(String),
    /// Starting the client, its topology source or its endpoints.
    #[error(transparent)]
    Io(#[from] ClientIoError),
    /// A request through the mixnet failed.
    #[error(transparent)]
    Request(#[from] nox_client::ClientError),
    /// The exit answered the echo with an error status.
    #[error("exit answered {status:?}: {message}")]
    Refused {
        /// The status.
        status: Status,
        /// The exit's error message (empty if none).
        message: String,
    },
    /// The runtime could not be built.
    #[error("{0}")]
    Runtime(std::io::Error),
}

/// Runs `nox client` (the daemon until Ctrl-C, or `echo`).
pub fn run(args: ClientArgs, testnet: Testnet) -> Result<(), ClientCliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ClientCliError::Runtime)?;
    runtime.block_on(async move {
        match args.command {
            Some(ClientCommand::Echo { topology, cover_rate, ca_file, text }) => {
                echo(&topology, cover_rate, ca_file.as_deref(), text, testnet).await
            }
            None => {
                let topology = args.topology.ok_or(ClientCliError::NoTopology)?;
                let budgets = ReplyBudgets { rpc: args.rpc_reply_len };
                let options = (args.cover_rate, args.profile, args.ca_file.as_deref());
                daemon(&topology, options, (args.socks, args.rpc), budgets, testnet).await
            }
        }
    })
}

/// Starts the client on the topology `args` name, with always-on cover at `cover_rate`. The
/// network's geometry (scheme, packet length, hops) is the one the topology document names
/// (`nox_topology::geometry_for`): no flag chooses it, and later topologies of another geometry
/// are refused.
pub async fn start(args: &TopologyArgs, cover_rate: f64, testnet: Testnet) -> Result<ClientHandle, ClientCliError> {
    start_with(args, (cover_rate, CoverProfile::AlwaysOn, None), testnet).await
}

/// Which topology source the arguments name (`None`: `--testnet`, handled by the harness).
pub fn source(args: &TopologyArgs) -> Result<Option<TopologySource>, ClientCliError> {
    Ok(Some(match (&args.testnet, &args.topology, &args.authority) {
        (Some(_), _, _) => return Ok(None),
        // Directory mirrors, verified under the authority's key or, with `--chain`, the on-chain
        // registry's membership (as nodes do; the directory is then only a mirror, and without
        // `--directory` the mirrors are the preset's record's).
        (None, None, Some(key)) if !args.directory.is_empty() => {
            TopologySource::Mirrors { urls: args.directory.clone(), authority: crate::parse_authority(key)? }
        }
        (None, None, None) if args.chain.is_some() => TopologySource::Chain {
            spec: args.chain.clone().unwrap_or_default(),
            rpc: args.chain_rpc.clone(),
            directory: args.directory.clone(),
        },
        (None, Some(file), Some(key)) => {
            TopologySource::File { path: file.clone(), authority: crate::parse_authority(key)? }
        }
        _ => return Err(ClientCliError::NoSource),
    }))
}

/// [`start`] with a cover profile (`--profile`) and a CA file.
async fn start_with(
    args: &TopologyArgs,
    (cover_rate, profile, ca_file): (f64, CoverProfile, Option<&Path>),
    testnet: Testnet,
) -> Result<ClientHandle, ClientCliError> {
    // `wss://` entries and gateways: the CA given, or the testnet's own (`testnet up --tls`).
    let testnet_ca = args.testnet.as_deref().and_then(testnet.ca_file);
    let ca_file = ca_file.or(testnet_ca.as_deref());
    let core = ClientConfig {
        cover_rate,
        profile,
        timeout: Duration::from_secs(args.timeout_secs),
        ..ClientConfig::default()
    };
    let Some(source) = source(args)? else {
        // A testnet: the topology comes from its directory (refreshed, so keys published for
        // new epochs reach the client), or its file.
        let dir = args.testnet.clone().unwrap_or_default();
        let topology = (testnet.topology)(dir.clone()).await.map_err(ClientCliError::Testnet)?;
        let client = Client::start_trusting(ShellConfig { topology, core }, args.transport.into(), ca_file)
            .await
            .map_err(ClientIoError::from)?;
        tokio::spawn(crate::keep_fresh(client.clone(), move || (testnet.topology)(dir.clone())));
        return Ok(client);
    };
    Ok(crate::start(&source, core, args.transport.into(), ca_file).await?)
}

async fn echo(
    args: &TopologyArgs,
    cover_rate: f64,
    ca_file: Option<&Path>,
    text: String,
    testnet: Testnet,
) -> Result<(), ClientCliError> {
    let client = start_with(args, (cover_rate, CoverProfile::AlwaysOn, ca_file), testnet).await?;
    let started = Instant::now();
    let response = client.request(RequestBody::Echo(text.into_bytes()), 1024).await?;
    let rtt = started.elapsed();
    if response.status != Status::Ok {
        let message = response.error_message().unwrap_or("").to_owned();
        return Err(ClientCliError::Refused { status: response.status, message });
    }
    println!("{}", String::from_utf8_lossy(&response.body));
    println!("round trip: {:.1} ms", rtt.as_secs_f64() * 1e3);
    Ok(())
}

/// Expected reply sizes per endpoint, which size their SURB budgets.
#[derive(Clone, Copy, Debug)]
struct ReplyBudgets {
    rpc: usize,
}

async fn daemon(
    args: &TopologyArgs,
    (cover_rate, profile, ca_file): (f64, CoverProfile, Option<&Path>),
    (socks, rpc): (Option<SocketAddr>, Option<SocketAddr>),
    budgets: ReplyBudgets,
    testnet: Testnet,
) -> Result<(), ClientCliError> {
    if socks.is_none() && rpc.is_none() {
        return Err(ClientCliError::NothingToServe);
    }
    let client = start_with(args, (cover_rate, profile, ca_file), testnet).await?;
    eprintln!("nox client: cover {cover_rate} packets/s ({:.0} KiB/s), profile {}", cover_rate * 32.0, profile.name());
    let rpc = rpc.map(|addr| (addr, RpcConfig { expected_reply_len: budgets.rpc, ..RpcConfig::default() }));
    let mut endpoints = Endpoints::bind(&client, socks, rpc).await?;
    if let Some(addr) = endpoints.socks {
        eprintln!("nox client: SOCKS5 on {addr}");
    }
    if let Some(addr) = endpoints.rpc {
        eprintln!("nox client: JSON-RPC on http://{addr}");
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        stopped = endpoints.stopped() => Err(stopped.into()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        client: ClientArgs,
    }

    #[derive(clap::Parser)]
    struct TopologyCli {
        #[command(flatten)]
        topology: TopologyArgs,
    }

    fn topology(args: &[&str]) -> TopologyArgs {
        TopologyCli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).expect("parses").topology
    }

    const KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    /// The daemon sends at the rate the benchmarks measure as "the shipped default".
    #[test]
    fn the_daemon_cover_rate_is_the_published_default() {
        let parsed = Cli::try_parse_from(["client"]).expect("no arguments parse");
        assert_eq!(parsed.client.cover_rate, nox_client::DAEMON_COVER_RATE);
        let off = Cli::try_parse_from(["client", "--cover-rate", "0"]).expect("--cover-rate 0 parses");
        assert_eq!(off.client.cover_rate, 0.0);
    }

    /// Each combination of arguments names its source; an incomplete one is refused with the
    /// command's message, and a bad key names `--authority`.
    #[test]
    fn the_arguments_name_one_topology_source() {
        assert!(source(&topology(&["--testnet", "/x"])).expect("testnet").is_none(), "--testnet is the harness's");
        let Some(TopologySource::Mirrors { urls, .. }) =
            source(&topology(&["--directory", "http://1.2.3.4:5", "--authority", KEY])).expect("mirrors")
        else {
            panic!("mirrors")
        };
        assert_eq!(urls, ["http://1.2.3.4:5"]);
        let Some(TopologySource::Chain { spec, directory, .. }) =
            source(&topology(&["--chain", "anvil"])).expect("chain")
        else {
            panic!("chain")
        };
        assert_eq!((spec.as_str(), directory.len()), ("anvil", 0));
        let Some(TopologySource::File { path, .. }) =
            source(&topology(&["--topology", "t.json", "--authority", KEY])).expect("file")
        else {
            panic!("file")
        };
        assert_eq!(path, PathBuf::from("t.json"));
        let none = source(&topology(&[])).expect_err("no source");
        assert_eq!(
            none.to_string(),
            "give --testnet <dir>, --topology <file> --authority <hex>, or --directory <url>... with --authority \
             <hex> or --chain <preset|file>"
        );
        assert!(matches!(source(&topology(&["--directory", "http://1.2.3.4:5"])), Err(ClientCliError::NoSource)));
        let bad = source(&topology(&["--directory", "http://1.2.3.4:5", "--authority", "zz"])).expect_err("bad key");
        assert_eq!(bad.to_string(), "--authority: expected 64 hex digits");
    }
}
