//! `nox client`: the client daemon (a SOCKS5 endpoint whose `CONNECT`s become streams through
//! the mixnet, and a JSON-RPC endpoint) and the one-shot `nox client echo`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nox_client::{Client, ClientConfig, ClientHandle, RpcConfig, ShellConfig};
use nox_client_io::{Endpoints, TopologySource};
use nox_message::{RequestBody, Status};

/// Topology files read and verified for the geometry they name (`nox_client_io`).
pub use nox_client_io::{load_file, verify_named};

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
    #[arg(long, default_value = "always-on", value_parser = nox_client::profile::CoverProfile::from_name)]
    pub profile: nox_client::profile::CoverProfile,
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

/// Runs `nox client`.
pub fn run(args: ClientArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        match args.command {
            Some(ClientCommand::Echo { topology, cover_rate, ca_file, text }) => {
                echo(&topology, cover_rate, ca_file.as_deref(), text).await
            }
            None => {
                let topology = args.topology.ok_or("give --testnet <dir> or --topology <file> --authority <hex>")?;
                let budgets = ReplyBudgets { rpc: args.rpc_reply_len };
                daemon(
                    &topology,
                    (args.cover_rate, args.profile, args.ca_file.as_deref()),
                    args.socks,
                    args.rpc,
                    budgets,
                )
                .await
            }
        }
    })
}

/// Starts the client on the topology `args` name. The network's geometry (scheme, packet
/// length, hops) is the one the topology document names (`nox_topology::geometry_for`): no flag
/// chooses it, and later topologies of another geometry are refused.
pub(crate) async fn start(args: &TopologyArgs, cover_rate: f64) -> Result<ClientHandle, String> {
    start_with(args, cover_rate, nox_client::profile::CoverProfile::AlwaysOn, None).await
}

/// [`start`] with a cover profile (`--profile`).
async fn start_with(
    args: &TopologyArgs,
    cover_rate: f64,
    profile: nox_client::profile::CoverProfile,
    ca_file: Option<&Path>,
) -> Result<ClientHandle, String> {
    // `wss://` entries and gateways: the CA given, or the testnet's own (`testnet up --tls`).
    let testnet_ca = args.testnet.as_deref().and_then(nox_testnet::tls::existing_ca_file);
    let ca_file = ca_file.or(testnet_ca.as_deref());
    let core = ClientConfig {
        cover_rate,
        profile,
        timeout: Duration::from_secs(args.timeout_secs),
        ..ClientConfig::default()
    };
    let source = match (&args.testnet, &args.topology, &args.authority) {
        // A testnet: the topology comes from its directory (refreshed, so
        // keys published for new epochs reach the client), or its file.
        (Some(dir), _, _) => {
            let topology = nox_testnet::directory::topology_async(dir).await?;
            let client = Client::start_trusting(ShellConfig { topology, core }, args.transport.into(), ca_file)
                .await
                .map_err(|e| e.to_string())?;
            let dir = dir.clone();
            tokio::spawn(nox_client_io::keep_fresh(client.clone(), move || {
                let dir = dir.clone();
                async move { nox_testnet::directory::topology_async(&dir).await }
            }));
            return Ok(client);
        }
        // Directory mirrors, verified under the authority's key or, with `--chain`, the on-chain
        // registry's membership (as nodes do; the directory is then only a mirror, and without
        // `--directory` the mirrors are the preset's record's).
        (None, None, Some(key)) if !args.directory.is_empty() => TopologySource::Mirrors {
            urls: args.directory.clone(),
            authority: nox_client_io::parse_authority(key).map_err(|e| e.to_string())?,
        },
        (None, None, None) if args.chain.is_some() => TopologySource::Chain {
            spec: args.chain.clone().unwrap_or_default(),
            rpc: args.chain_rpc.clone(),
            directory: args.directory.clone(),
        },
        (None, Some(file), Some(key)) => TopologySource::File {
            path: file.clone(),
            authority: nox_client_io::parse_authority(key).map_err(|e| e.to_string())?,
        },
        _ => {
            return Err("give --testnet <dir>, --topology <file> --authority <hex>, or --directory <url>... with \
                        --authority <hex> or --chain <preset|file>"
                .into());
        }
    };
    nox_client_io::start(&source, core, args.transport.into(), ca_file).await.map_err(|e| e.to_string())
}

async fn echo(args: &TopologyArgs, cover_rate: f64, ca_file: Option<&Path>, text: String) -> Result<(), String> {
    let client = start_with(args, cover_rate, nox_client::profile::CoverProfile::AlwaysOn, ca_file).await?;
    let started = Instant::now();
    let response = client.request(RequestBody::Echo(text.into_bytes()), 1024).await.map_err(|e| e.to_string())?;
    let rtt = started.elapsed();
    if response.status != Status::Ok {
        return Err(format!("exit answered {:?}: {}", response.status, response.error_message().unwrap_or("")));
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
    (cover_rate, profile, ca_file): (f64, nox_client::profile::CoverProfile, Option<&Path>),
    socks: Option<SocketAddr>,
    rpc: Option<SocketAddr>,
    budgets: ReplyBudgets,
) -> Result<(), String> {
    if socks.is_none() && rpc.is_none() {
        return Err("nothing to serve: give --socks and/or --rpc".into());
    }
    let client = start_with(args, cover_rate, profile, ca_file).await?;
    eprintln!("nox client: cover {cover_rate} packets/s ({:.0} KiB/s), profile {}", cover_rate * 32.0, profile.name());
    let rpc = rpc.map(|addr| (addr, RpcConfig { expected_reply_len: budgets.rpc, ..RpcConfig::default() }));
    let mut endpoints = Endpoints::bind(&client, socks, rpc).await.map_err(|e| e.to_string())?;
    if let Some(addr) = endpoints.socks {
        eprintln!("nox client: SOCKS5 on {addr}");
    }
    if let Some(addr) = endpoints.rpc {
        eprintln!("nox client: JSON-RPC on http://{addr}");
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        stopped = endpoints.stopped() => Err(stopped.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        client: super::ClientArgs,
    }

    /// The daemon sends at the rate the benchmarks measure as "the shipped default".
    #[test]
    fn the_daemon_cover_rate_is_the_published_default() {
        let parsed = Cli::try_parse_from(["client"]).expect("no arguments parse");
        assert_eq!(parsed.client.cover_rate, nox_client::DAEMON_COVER_RATE);
        let off = Cli::try_parse_from(["client", "--cover-rate", "0"]).expect("--cover-rate 0 parses");
        assert_eq!(off.client.cover_rate, 0.0);
    }
}
