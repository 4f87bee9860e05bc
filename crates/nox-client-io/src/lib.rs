//! Starting a NOX client where a program runs it (issue 34, moved out of `nox client`): where its
//! topology comes from ([`TopologySource`]), keeping that topology fresh (a task per client that
//! re-fetches or re-reads it every [`TOPOLOGY_POLL`] and hands a newer document to the client),
//! and the daemon's SOCKS5 / JSON-RPC listeners ([`Endpoints`]). The client itself is
//! `nox-client`. [`cli`] is `nox client` itself (its arguments, the daemon, `echo`) and the
//! topology arguments every mixnet command shares; [`daemon_hint`] explains an unreachable
//! `--rpc` endpoint (`nox wallet`, `nox tx`).
//!
//! A topology is always verified for the geometry its document names
//! (`nox_topology::geometry_for`); refreshes of another geometry are refused.

pub mod cli;
pub mod daemon_hint;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nox_client::{Client, ClientConfig, ClientHandle, RpcConfig, ShellConfig, SocksConfig};
use nox_link::transport::Transport;
use nox_sphinx::Geometry;
use nox_topology::{TopologyDocument, VerifiedTopology, VerifyConfig, VerifyingKey};

/// How often a client's topology source is checked for a newer document.
pub const TOPOLOGY_POLL: Duration = Duration::from_secs(5);
/// Time allowed for one directory fetch, per mirror.
pub const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong starting a client or its endpoints. The `Display` texts are the `nox client`
/// messages.
#[derive(Debug, thiserror::Error)]
pub enum ClientIoError {
    /// The authority key is not 64 hex digits.
    #[error("--authority: expected 64 hex digits")]
    AuthorityHex,
    /// The authority key is not an Ed25519 point.
    #[error("--authority: {0}")]
    AuthorityKey(String),
    /// A topology file could not be read, parsed or verified.
    #[error("{}: {message}", path.display())]
    TopologyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// `--chain` names no mirror and none was given.
    #[error(
        "--chain {spec}: no directory mirror: give --directory <url>, or list `mirrors` in the chain's \
         deployment record (nox deploy --mirror <url>)"
    )]
    NoMirror {
        /// The preset or file given.
        spec: String,
    },
    /// A TOML file given as the chain has no `[chain]` section.
    #[error("{spec}: no [chain] section")]
    NoChainSection {
        /// The file.
        spec: String,
    },
    /// The TOML file's `[chain]` section is unreadable or wrong.
    #[error(transparent)]
    ChainSection(#[from] nox_node::ConfigError),
    /// The chain preset could not be resolved.
    #[error(transparent)]
    Preset(#[from] nox_operator::OperatorError),
    /// The registry could not be read.
    #[error(transparent)]
    Registry(#[from] nox_node::NodeError),
    /// No directory mirror gave a document that verifies (or a mirror URL is wrong).
    #[error(transparent)]
    Directory(#[from] nox_directory::ClientError),
    /// The client did not start.
    #[error(transparent)]
    Client(#[from] nox_client::ClientError),
    /// An endpoint's address could not be bound.
    #[error("{name} {addr}: {source}")]
    Bind {
        /// `socks` or `rpc`.
        name: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An endpoint stopped (its accept loop failed, or the task ended).
    #[error("{0}")]
    Endpoint(String),
}

/// Where a client's topology comes from, and how it is trusted.
#[derive(Clone, Debug)]
pub enum TopologySource {
    /// A topology document on disk, verified under the authority's key; re-read when its
    /// modification time changes (keys rotate every epoch).
    File {
        /// The document.
        path: PathBuf,
        /// The authority's key.
        authority: VerifyingKey,
    },
    /// Directory mirrors (`http://IP:PORT`, fetches fall over between them), documents verified
    /// under the authority's key.
    Mirrors {
        /// The mirrors.
        urls: Vec<String>,
        /// The authority's key.
        authority: VerifyingKey,
    },
    /// The on-chain registry's membership (as nodes verify), the directory only an untrusted
    /// mirror: `spec` is a chain preset (`anvil`, a chain id with `deployments/<id>.json`, a
    /// deployment record) or a TOML file with a `[chain]` section. The mirrors are `directory`,
    /// or, when empty, the ones the preset's deployment record lists.
    Chain {
        /// The preset or TOML file.
        spec: String,
        /// The chain's JSON-RPC URL (default: the preset's or the file's).
        rpc: Option<String>,
        /// Mirrors given explicitly (replace the record's).
        directory: Vec<String>,
    },
}

/// Parses a directory authority's Ed25519 public key (64 hex digits).
pub fn parse_authority(hex_key: &str) -> Result<VerifyingKey, ClientIoError> {
    let bytes: [u8; 32] =
        hex::decode(hex_key.trim()).ok().and_then(|b| b.try_into().ok()).ok_or(ClientIoError::AuthorityHex)?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| ClientIoError::AuthorityKey(e.to_string()))
}

/// The chain's `[chain]` section and the directory mirrors its deployment record lists: a TOML
/// file's section (no mirrors; `rpc` replaces its URLs), or a preset's (looked up in
/// `./deployments` after the built-in names).
pub fn chain_and_mirrors(
    spec: &str,
    rpc: Option<&str>,
) -> Result<(nox_chain::ChainConfig, Vec<String>), ClientIoError> {
    let path = Path::new(spec);
    if path.extension().is_some_and(|e| e == "toml") {
        let mut chain = nox_node::chain_preset::chain_section(path)?
            .ok_or_else(|| ClientIoError::NoChainSection { spec: spec.to_owned() })?;
        chain.operator_key_file = None;
        if let Some(rpc) = rpc {
            chain.rpc_urls = vec![rpc.to_owned()];
        }
        return Ok((chain, Vec::new()));
    }
    let preset = nox_operator::preset::Preset::resolve(spec, Path::new("deployments"))?;
    let chain = preset.chain_config(&preset.rpc(rpc)?);
    Ok((chain, preset.record.mirrors))
}

/// Verifies `document` under `authority` for the geometry the document names.
pub fn verify_named(
    document: &TopologyDocument,
    authority: VerifyingKey,
) -> Result<VerifiedTopology, nox_topology::TopologyError> {
    let geometry = nox_topology::geometry_for(document)?;
    document.verify(&VerifyConfig::new(authority, geometry), now_unix())
}

/// Reads a topology file and verifies it for the geometry it names.
pub fn load_file(file: &Path, authority: VerifyingKey) -> Result<VerifiedTopology, ClientIoError> {
    let failed = |message: String| ClientIoError::TopologyFile { path: file.to_path_buf(), message };
    let bytes = std::fs::read(file).map_err(|e| failed(e.to_string()))?;
    let document = TopologyDocument::from_json(&bytes).map_err(|e| failed(e.to_string()))?;
    verify_named(&document, authority).map_err(|e| failed(e.to_string()))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Starts a client on `source`'s topology (`core`'s settings, links over `transport`, `wss://`
/// nodes trusted under `ca_file`'s CAs) and spawns the task that keeps the topology fresh. Call
/// inside a tokio runtime.
pub async fn start(
    source: &TopologySource,
    core: ClientConfig,
    transport: Transport,
    ca_file: Option<&Path>,
) -> Result<ClientHandle, ClientIoError> {
    match source {
        TopologySource::File { path, authority } => {
            let topology = load_file(path, *authority)?;
            let geometry = *topology.geometry();
            let client = Client::start_trusting(ShellConfig { topology, core }, transport, ca_file).await?;
            tokio::spawn(reload_file(client.clone(), path.clone(), hex::encode(authority.to_bytes()), geometry));
            Ok(client)
        }
        TopologySource::Mirrors { urls, authority } => {
            let mirrors = nox_directory::Mirrors::parse(urls)?;
            start_from_mirrors(mirrors, nox_node::Trust::Authority(*authority), None, core, transport, ca_file).await
        }
        TopologySource::Chain { spec, rpc, directory } => {
            let (chain, listed) = chain_and_mirrors(spec, rpc.as_deref())?;
            let urls = if directory.is_empty() { listed } else { directory.clone() };
            if urls.is_empty() {
                return Err(ClientIoError::NoMirror { spec: spec.clone() });
            }
            let mirrors = nox_directory::Mirrors::parse(&urls)?;
            let chain = nox_node::ChainMembership::start(chain).await?;
            let members = Arc::new(chain.refresh().await.membership().0);
            start_from_mirrors(mirrors, nox_node::Trust::Chain(chain), Some(members), core, transport, ca_file).await
        }
    }
}

/// The first document from `mirrors` verified under `trust` (with the registry: `members`, the
/// first snapshot's membership), the client on it, and its refresh task.
async fn start_from_mirrors(
    mirrors: nox_directory::Mirrors,
    trust: nox_node::Trust,
    members: Option<Arc<nox_topology::Membership>>,
    core: ClientConfig,
    transport: Transport,
    ca_file: Option<&Path>,
) -> Result<ClientHandle, ClientIoError> {
    let topology = mirrors
        .fetch(DIRECTORY_TIMEOUT, |document| {
            let geometry = nox_topology::geometry_for(&document)?;
            let config = match (&trust, &members) {
                (nox_node::Trust::Authority(key), _) => VerifyConfig::new(*key, geometry),
                (_, members) => VerifyConfig::registry(members.clone().unwrap_or_default(), geometry),
            };
            document.verify(&config, now_unix())
        })
        .await?;
    // Refreshes must be of the same geometry.
    let geometry = *topology.geometry();
    let client = Client::start_trusting(ShellConfig { topology, core }, transport, ca_file).await?;
    tokio::spawn(keep_fresh(client.clone(), move || {
        let (mirrors, trust) = (mirrors.clone(), trust.clone());
        async move {
            let config = trust.verify_config(&geometry).await;
            mirrors.fetch(DIRECTORY_TIMEOUT, |document| document.verify(&config, now_unix())).await
        }
    }));
    Ok(client)
}

/// Calls `fetch` every [`TOPOLOGY_POLL`] and hands a newer document (by issue time) to the
/// client; failures are logged and retried at the next poll. Runs until the task is dropped.
pub async fn keep_fresh<F, Fut, E>(client: ClientHandle, mut fetch: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<VerifiedTopology, E>>,
    E: std::fmt::Display,
{
    let mut issued = 0;
    loop {
        tokio::time::sleep(TOPOLOGY_POLL).await;
        match fetch().await {
            Ok(topology) if topology.issued_at() > issued => {
                issued = topology.issued_at();
                if let Err(e) = client.set_topology(topology) {
                    tracing::warn!("new topology not usable: {e}");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("topology refresh failed: {e}"),
        }
    }
}

/// Re-reads the topology file when its modification time changes (keys rotate every epoch).
async fn reload_file(client: ClientHandle, file: PathBuf, authority: String, geometry: Geometry) {
    let modified = |file: &PathBuf| std::fs::metadata(file).and_then(|m| m.modified()).ok();
    let mut seen = modified(&file);
    loop {
        tokio::time::sleep(TOPOLOGY_POLL).await;
        let now = modified(&file);
        if now == seen {
            continue;
        }
        seen = now;
        match nox_node::load_topology(&file, &authority, &geometry) {
            Ok(topology) => match client.set_topology(topology) {
                Ok(()) => tracing::info!("topology reloaded"),
                Err(e) => tracing::warn!("new topology not usable: {e}"),
            },
            Err(e) => tracing::warn!("topology reload failed: {e}"),
        }
    }
}

/// A client daemon's listeners, bound and serving.
pub struct Endpoints {
    /// The SOCKS5 endpoint's bound address.
    pub socks: Option<SocketAddr>,
    /// The JSON-RPC endpoint's bound address.
    pub rpc: Option<SocketAddr>,
    tasks: tokio::task::JoinSet<std::io::Result<()>>,
}

impl Endpoints {
    /// Binds the SOCKS5 endpoint at `socks` and the JSON-RPC endpoint at `rpc` (each optional)
    /// and serves them on `client`.
    pub async fn bind(
        client: &ClientHandle,
        socks: Option<SocketAddr>,
        rpc: Option<(SocketAddr, RpcConfig)>,
    ) -> Result<Self, ClientIoError> {
        let mut tasks = tokio::task::JoinSet::new();
        let bind = |name, addr| async move {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ClientIoError::Bind {
                name,
                addr,
                source,
            })?;
            let local = listener.local_addr().map_err(|e| ClientIoError::Endpoint(e.to_string()))?;
            Ok::<_, ClientIoError>((listener, local))
        };
        let mut bound = Self { socks: None, rpc: None, tasks: tokio::task::JoinSet::new() };
        if let Some(addr) = socks {
            let (listener, local) = bind("socks", addr).await?;
            bound.socks = Some(local);
            tasks.spawn(nox_client::serve_socks(listener, client.clone(), SocksConfig::default()));
        }
        if let Some((addr, config)) = rpc {
            let (listener, local) = bind("rpc", addr).await?;
            bound.rpc = Some(local);
            tasks.spawn(nox_client::serve_rpc(listener, client.clone(), config));
        }
        bound.tasks = tasks;
        Ok(bound)
    }

    /// Waits until an endpoint stops; always an error (`endpoint failed: …` or
    /// `endpoint stopped`). Nothing bound: pending forever.
    pub async fn stopped(&mut self) -> ClientIoError {
        match self.tasks.join_next().await {
            Some(Ok(Err(e))) => ClientIoError::Endpoint(format!("endpoint failed: {e}")),
            Some(_) => ClientIoError::Endpoint("endpoint stopped".into()),
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_keys_are_checked() {
        assert!(matches!(parse_authority("zz"), Err(ClientIoError::AuthorityHex)));
        assert!(matches!(parse_authority(&"ab".repeat(31)), Err(ClientIoError::AuthorityHex)));
        assert_eq!(parse_authority("zz").unwrap_err().to_string(), "--authority: expected 64 hex digits");
        let key = nox_topology::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let parsed = parse_authority(&format!(" {} \n", hex::encode(key.to_bytes()))).expect("a key");
        assert_eq!(parsed, key);
    }

    /// A preset with no mirror and none given stops before any network I/O, naming both ways.
    #[tokio::test]
    async fn a_chain_without_mirrors_is_refused_before_any_io() {
        let source =
            TopologySource::Chain { spec: "anvil".into(), rpc: Some("http://127.0.0.1:1".into()), directory: vec![] };
        let Err(error) = start(&source, ClientConfig::default(), Transport::Tcp, None).await else {
            panic!("a client started with no mirror");
        };
        assert!(matches!(error, ClientIoError::NoMirror { .. }), "{error}");
        assert!(error.to_string().contains("--directory") && error.to_string().contains("mirrors"), "{error}");
    }

    /// The record's mirrors are what `start` fetches from; given ones replace them.
    #[test]
    fn a_records_mirrors_are_listed() {
        let (chain, mirrors) = chain_and_mirrors("anvil", Some("http://127.0.0.1:9")).expect("the built-in preset");
        assert_eq!(chain.chain_id, 31337);
        assert_eq!(chain.rpc_urls, vec!["http://127.0.0.1:9".to_owned()]);
        assert!(mirrors.is_empty(), "the committed anvil record lists no mirror");
        let tmp = tempfile::tempdir().unwrap();
        let mut record = nox_operator::preset::Preset::resolve("anvil", tmp.path()).unwrap().record;
        record.mirrors = vec!["http://127.0.0.1:7000".into()];
        let file = tmp.path().join("record.json");
        std::fs::write(&file, record.to_json()).unwrap();
        let (_, mirrors) = chain_and_mirrors(file.to_str().unwrap(), Some("http://127.0.0.1:9")).unwrap();
        assert_eq!(mirrors, vec!["http://127.0.0.1:7000".to_owned()]);
        let toml = tmp.path().join("node.toml");
        std::fs::write(&toml, "[node]\n").unwrap();
        let error = chain_and_mirrors(toml.to_str().unwrap(), None).expect_err("no [chain]");
        assert!(matches!(error, ClientIoError::NoChainSection { .. }), "{error}");
    }

    #[test]
    fn a_missing_topology_file_is_named() {
        let key = nox_topology::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let error = load_file(Path::new("/nonexistent/topology.json"), key).expect_err("no file");
        assert!(error.to_string().starts_with("/nonexistent/topology.json: "), "{error}");
    }
}
