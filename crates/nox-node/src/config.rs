//! `node.toml`: the node's configuration, with `NOX_*` environment overrides.
//! Every field is documented in docs/configuration.md.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use nox_sphinx::{Geometry, Scheme};
use serde::Deserialize;

/// The whole configuration file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Identity, keys and addresses.
    pub node: NodeSection,
    /// Where the topology comes from and who signs it.
    pub topology: TopologySection,
    /// Poisson mixing.
    #[serde(default)]
    pub mixing: MixingSection,
    /// Pipeline sizes.
    #[serde(default)]
    pub pipeline: PipelineSection,
    /// Replay cache.
    #[serde(default)]
    pub replay: ReplaySection,
    /// What an exit does with delivered payloads.
    #[serde(default)]
    pub exit: ExitSection,
    /// Loop and drop cover traffic.
    #[serde(default)]
    pub cover: crate::CoverSection,
    /// Connection limits and bans.
    #[serde(default)]
    pub admission: crate::AdmissionSection,
    /// Measurement only, absent by default: link-timing capture for `nox bench anonymity`.
    /// Refused unless the node is built with the `observe` cargo feature.
    #[serde(default)]
    pub observe: Option<crate::ObserveSection>,
    /// Testing only, absent by default: loss and delay injected on this node's links
    /// (`nox bench soak`). Refused unless the node is built with the `chaos` cargo feature.
    #[serde(default)]
    pub chaos: Option<crate::ChaosSection>,
    /// Membership from the on-chain node registry (docs/spec/registry.md) instead of a
    /// directory authority.
    #[serde(default)]
    pub chain: Option<nox_chain::ChainConfig>,
    /// With `[chain]`: the operator's key in an encrypted keystore, unlocked at start (instead
    /// of `[chain] operator_key_file`).
    #[serde(default)]
    pub operator: Option<OperatorSection>,
}

/// `[operator]`: the operator's Ethereum key as a Web3 Secret Storage v3 keystore (`nox operator
/// new-key`), and where its passphrase comes from: a file or an environment variable, exactly
/// one (never the command line, where other users of the host could read it).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OperatorSection {
    /// The keystore (JSON).
    pub keystore: PathBuf,
    /// A file whose first line is the passphrase (mode 0600, e.g. a systemd credential).
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// The name of the environment variable holding the passphrase.
    #[serde(default)]
    pub password_env: Option<String>,
}

/// `[exit]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ExitSection {
    /// Loss rate of reply packets the exit plans FEC parity for (Theorem 1;
    /// default 0.05). Parity never exceeds the SURBs the request carried.
    pub reply_loss_estimate: f64,
    /// Delivery probability the reply parity aims at (default 0.999).
    pub reply_target: f64,
    /// Measurement knob, 0 in production: drop this fraction of reply
    /// packets at the exit (counted), to measure and test FEC recovery on
    /// the real network.
    pub inject_reply_loss: f64,
    /// Send the first 64 bytes of every delivered payload, as one UDP
    /// datagram, to this address: a measurement sink for benchmarks and
    /// tests. Independent of the services below.
    pub sink: Option<SocketAddr>,
    /// `[exit.services]`: the exit services' own settings (HTTP fetch
    /// limits and allow-list, JSON-RPC upstream and method allow-list),
    /// read by the `nox` binary with the `nox-exit` crate. Absent: the exit
    /// answers echo requests only.
    pub services: Option<toml::Table>,
}

impl Default for ExitSection {
    fn default() -> Self {
        Self { reply_loss_estimate: 0.05, reply_target: 0.999, inject_reply_loss: 0.0, sink: None, services: None }
    }
}

/// `[node]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSection {
    /// Directory of `identity.key`, `link.key` and `sphinx/` (mode 0700).
    pub key_dir: PathBuf,
    /// Link listen address (node-to-node and client-to-entry).
    pub listen: SocketAddr,
    /// Client links over WebSocket (docs/spec/link.md §5), for browsers: entries and gateways
    /// only (a node of another layer ignores it, with a warning). Absent: none. The address
    /// clients dial is the `websocket` field of the node's descriptor in the topology.
    #[serde(default)]
    pub websocket_listen: Option<SocketAddr>,
    /// The link address peers and clients dial when it is not `listen` (behind a port
    /// forward, a NAT or a relay): the one the node announces in its descriptor and expects in
    /// its registry record. Absent: `listen`.
    #[serde(default)]
    pub advertise: Option<SocketAddr>,
    /// The WebSocket address clients dial when it is not `websocket_listen` (as `advertise`).
    #[serde(default)]
    pub websocket_advertise: Option<SocketAddr>,
    /// TLS on the WebSocket listener (`wss://`, docs/spec/link.md §5.3), so pages served over
    /// `https://` can connect: the certificate chain (PEM, leaf first; it must name the
    /// address clients dial) and its private key (PEM). Both or neither; read at start (a bad
    /// or mismatched pair stops the start with the reason) and reloaded when either file
    /// changes (checked every 10 s): new connections get the new certificate, open links keep
    /// theirs. Advertise it by publishing the descriptor's endpoint as `wss://`.
    #[serde(default)]
    pub websocket_tls_cert: Option<PathBuf>,
    /// The private key of `websocket_tls_cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub websocket_tls_key: Option<PathBuf>,
    /// Prometheus `/metrics` address; absent: no metrics endpoint.
    #[serde(default)]
    pub metrics: Option<SocketAddr>,
    /// Proof-of-work difficulty (bits) required at ingest.
    #[serde(default)]
    pub pow_difficulty: u8,
    /// The Sphinx scheme of the network's geometry (`ristretto255`, the default, `x25519-kem`,
    /// `mlkem768` or `xwing`): the node's epoch keys are of it (in `<key_dir>/sphinx` or
    /// `<key_dir>/sphinx-<name>`) and it refuses a topology of another geometry.
    #[serde(default, deserialize_with = "scheme")]
    pub sphinx_scheme: Scheme,
    /// The network's layer count, which is its packets' hop count (default 3). A topology of
    /// another geometry is refused, so every node of a network has the same value.
    #[serde(default = "default_layers")]
    pub layers: u8,
    /// The network's packet length in bytes (default 4096; 2048, 8192, 16384 or 32768): part
    /// of the geometry, so every node of a network has the same value.
    #[serde(default)]
    pub packet_len: nox_topology::PacketLen,
}

fn default_layers() -> u8 {
    // DEFAULT_HOPS is a small constant (3); the conversion cannot fail.
    u8::try_from(nox_sphinx::DEFAULT_HOPS).unwrap_or(3)
}

impl NodeSection {
    /// The network's geometry: [`NodeSection::sphinx_scheme`] at [`NodeSection::packet_len`],
    /// with [`NodeSection::layers`] hops.
    pub fn geometry(&self) -> Result<Geometry, nox_sphinx::SphinxError> {
        nox_topology::network_geometry_with_len(self.sphinx_scheme, usize::from(self.layers), self.packet_len)
    }

    /// The link address others dial: [`NodeSection::advertise`], else [`NodeSection::listen`].
    pub fn link_address(&self) -> SocketAddr {
        self.advertise.unwrap_or(self.listen)
    }

    /// The WebSocket address clients dial: [`NodeSection::websocket_advertise`], else
    /// [`NodeSection::websocket_listen`].
    pub fn websocket_address(&self) -> Option<SocketAddr> {
        self.websocket_advertise.or(self.websocket_listen)
    }

    /// Where this node's epoch keys are: one directory per scheme ([`nox_keystore::sphinx_dir`]).
    pub fn sphinx_key_dir(&self) -> PathBuf {
        nox_keystore::sphinx_dir(&self.key_dir, self.sphinx_scheme)
    }
}

fn scheme<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Scheme, D::Error> {
    let name = String::deserialize(deserializer)?;
    nox_topology::parse_scheme(&name).map_err(serde::de::Error::custom)
}

/// `[topology]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TopologySection {
    /// A topology document (JSON) on disk: the source when `url` is absent, the fallback at
    /// start when the directory cannot be reached.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// The directory (`http://IP:PORT`): fetched at start and every `refresh_secs`; the node
    /// uploads its descriptor there when it creates new epoch keys.
    #[serde(default)]
    pub url: Option<String>,
    /// Further directory mirrors: fetches fall over between `url` and these; the descriptor
    /// is uploaded to each.
    #[serde(default)]
    pub mirrors: Vec<String>,
    /// The directory authority's Ed25519 public key, hex. Required without `[chain]`; with
    /// `[chain]` membership comes from the registry and this key is not relied upon.
    #[serde(default)]
    pub authority_key: Option<String>,
    /// Seconds between fetches from `url`; 0: a quarter of the epoch length (1 s to 5 min).
    #[serde(default)]
    pub refresh_secs: u64,
}

/// `[mixing]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MixingSection {
    /// Mean of the exponential delay, milliseconds (0: no delay).
    pub mean_delay_ms: f64,
    /// Packets the mixer may hold.
    pub capacity: usize,
}

/// The mean mixing delay a node uses unless configured, ms. Chosen from the measured curve of
/// sender entropy against a global observer (docs/benchmarks/cover.md): at 1 ms the observer's
/// best guess is the sender for 83-100 % of requests at every client cover rate up to 8/s; at
/// 50 ms, with the client daemon's λ_P = 2/s, the sender entropy is 2.0 of log₂ 10 = 3.3 bits
/// on the 10-client testnet, for a request round trip of ~0.64 s (p50). Test networks set their
/// own (`nox testnet up` runs 1 ms).
pub const DEFAULT_MEAN_DELAY_MS: f64 = 50.0;

impl Default for MixingSection {
    fn default() -> Self {
        Self { mean_delay_ms: DEFAULT_MEAN_DELAY_MS, capacity: 100_000 }
    }
}

impl MixingSection {
    /// The mean delay as a `Duration` (negative or NaN becomes zero).
    pub fn mean_delay(&self) -> Duration {
        Duration::try_from_secs_f64(self.mean_delay_ms / 1000.0).unwrap_or_default()
    }
}

/// `[pipeline]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Sphinx worker threads; 0 means one per core.
    pub workers: usize,
    /// Capacity of each inter-stage queue.
    pub queue: usize,
}

impl Default for PipelineSection {
    fn default() -> Self {
        Self { workers: 0, queue: 4096 }
    }
}

/// `[replay]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReplaySection {
    /// Tags per epoch the Bloom filter is sized for.
    pub capacity: u64,
    /// Target false-positive rate at capacity.
    pub false_positive_rate: f64,
    /// Snapshots and journals; default `<key_dir>/replay`.
    pub dir: Option<PathBuf>,
    /// Most tags per group commit (one write and one `fdatasync`).
    pub sync_batch: usize,
    /// Minimum time between two syncs' starts, in microseconds (0: the next
    /// sync starts as soon as the previous one ends). Packets never leave
    /// before their tag is durable, so a larger value adds latency and
    /// saves disk operations.
    pub sync_interval_us: u64,
}

impl Default for ReplaySection {
    fn default() -> Self {
        Self { capacity: 10_000_000, false_positive_rate: 0.001, dir: None, sync_batch: 4096, sync_interval_us: 0 }
    }
}

impl ReplaySection {
    /// The group-commit settings.
    pub fn group_commit(&self) -> crate::GroupCommitConfig {
        crate::GroupCommitConfig {
            max_batch: self.sync_batch.max(1),
            min_interval: Duration::from_micros(self.sync_interval_us),
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The TOML is invalid or has unknown or missing fields.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A section's values are inconsistent or out of range.
    #[error("[{section}]: {message}")]
    Invalid {
        /// The section.
        section: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An environment override has an invalid value.
    #[error("environment variable {name}: {message}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl NodeConfig {
    /// Reads `path` (a `[chain] preset` expanded, [`crate::chain_preset`]), then applies `NOX_*`
    /// overrides from `env`.
    pub fn load(path: &std::path::Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        let parse_error = |e: toml::de::Error| ConfigError::Parse { path: path.to_path_buf(), message: e.to_string() };
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        let mut config: NodeConfig = match crate::chain_preset::expanded(&text, dir)? {
            Some(table) => table.try_into().map_err(parse_error)?,
            None => toml::from_str(&text).map_err(parse_error)?,
        };
        config.apply_env(env)?;
        Ok(config)
    }

    /// Environment overrides (documented in docs/configuration.md).
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        fn parse<T: std::str::FromStr>(name: &'static str, value: String) -> Result<T, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            value.parse().map_err(|e: T::Err| ConfigError::Env { name, message: e.to_string() })
        }
        if let Some(v) = env("NOX_NODE_LISTEN") {
            self.node.listen = parse("NOX_NODE_LISTEN", v)?;
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_LISTEN") {
            self.node.websocket_listen = Some(parse("NOX_NODE_WEBSOCKET_LISTEN", v)?);
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_TLS_CERT") {
            self.node.websocket_tls_cert = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_NODE_WEBSOCKET_TLS_KEY") {
            self.node.websocket_tls_key = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_NODE_METRICS") {
            self.node.metrics = Some(parse("NOX_NODE_METRICS", v)?);
        }
        if let Some(v) = env("NOX_NODE_KEY_DIR") {
            self.node.key_dir = PathBuf::from(v);
        }
        if let Some(v) = env("NOX_NODE_POW_DIFFICULTY") {
            self.node.pow_difficulty = parse("NOX_NODE_POW_DIFFICULTY", v)?;
        }
        if let Some(v) = env("NOX_NODE_SPHINX_SCHEME") {
            self.node.sphinx_scheme = nox_topology::parse_scheme(&v)
                .map_err(|e| ConfigError::Env { name: "NOX_NODE_SPHINX_SCHEME", message: e.to_string() })?;
        }
        if let Some(v) = env("NOX_TOPOLOGY_FILE") {
            self.topology.file = Some(PathBuf::from(v));
        }
        if let Some(v) = env("NOX_TOPOLOGY_URL") {
            self.topology.url = Some(v);
        }
        if let Some(v) = env("NOX_TOPOLOGY_MIRRORS") {
            self.topology.mirrors = v.split(',').map(str::trim).filter(|u| !u.is_empty()).map(String::from).collect();
        }
        if let Some(v) = env("NOX_TOPOLOGY_REFRESH_SECS") {
            self.topology.refresh_secs = parse("NOX_TOPOLOGY_REFRESH_SECS", v)?;
        }
        if let Some(v) = env("NOX_MIXING_MEAN_DELAY_MS") {
            self.mixing.mean_delay_ms = parse("NOX_MIXING_MEAN_DELAY_MS", v)?;
        }
        if let Some(v) = env("NOX_COVER_LOOP_RATE") {
            self.cover.loop_rate = parse("NOX_COVER_LOOP_RATE", v)?;
        }
        if let Some(v) = env("NOX_COVER_DROP_RATE") {
            self.cover.drop_rate = parse("NOX_COVER_DROP_RATE", v)?;
        }
        if let Some(v) = env("NOX_PIPELINE_WORKERS") {
            self.pipeline.workers = parse("NOX_PIPELINE_WORKERS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_NODE_RATE_PPS") {
            self.admission.node_rate_pps = parse("NOX_ADMISSION_NODE_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_CLIENT_RATE_PPS") {
            self.admission.client_rate_pps = parse("NOX_ADMISSION_CLIENT_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_PENALIZED_RATE_PPS") {
            self.admission.penalized_rate_pps = parse("NOX_ADMISSION_PENALIZED_RATE_PPS", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_ADAPTIVE_POW") {
            self.admission.adaptive_pow = parse("NOX_ADMISSION_ADAPTIVE_POW", v)?;
        }
        if let Some(v) = env("NOX_ADMISSION_EXPECTED_CLIENT_RATE") {
            self.admission.expected_client_rate = parse("NOX_ADMISSION_EXPECTED_CLIENT_RATE", v)?;
        }
        self.admission.validate().map_err(|e| ConfigError::Invalid { section: "admission", message: e.to_string() })?;
        if self.node.websocket_tls_cert.is_some() != self.node.websocket_tls_key.is_some() {
            return Err(ConfigError::Invalid {
                section: "node",
                message: "websocket_tls_cert and websocket_tls_key go together".into(),
            });
        }
        if self.node.websocket_tls_cert.is_some() && self.node.websocket_listen.is_none() {
            return Err(ConfigError::Invalid {
                section: "node",
                message: "websocket_tls_cert without websocket_listen".into(),
            });
        }
        if let Some(operator) = &self.operator {
            let message = match &self.chain {
                Some(chain) if chain.operator_key_file.is_some() => {
                    Some("[operator] keystore and [chain] operator_key_file both name the operator key: keep one")
                }
                _ if operator.password_file.is_some() == operator.password_env.is_some() => {
                    Some("give exactly one of password_file and password_env")
                }
                _ => None,
            };
            if let Some(message) = message {
                return Err(ConfigError::Invalid { section: "operator", message: message.into() });
            }
        }
        if self.observe.is_some() && !crate::observe::COMPILED_IN {
            return Err(ConfigError::Invalid { section: "observe", message: crate::observe::NOT_BUILT.into() });
        }
        if let Some(chaos) = &self.chaos {
            if !crate::chaos::COMPILED_IN {
                return Err(ConfigError::Invalid { section: "chaos", message: crate::chaos::NOT_BUILT.into() });
            }
            chaos.validate().map_err(|message| ConfigError::Invalid { section: "chaos", message })?;
        }
        let exit = &self.exit;
        let probability = |x: f64| (0.0..1.0).contains(&x);
        if !probability(exit.reply_loss_estimate) || !probability(exit.inject_reply_loss) {
            return Err(ConfigError::Invalid {
                section: "exit",
                message: "reply_loss_estimate and inject_reply_loss must be in [0, 1)".into(),
            });
        }
        if !(exit.reply_target > 0.0 && exit.reply_target < 1.0) {
            return Err(ConfigError::Invalid { section: "exit", message: "reply_target must be in (0, 1)".into() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default build has no timing log: `[observe]` is refused with a clear error. Fails if
    /// the `observe` feature were on by default (in this crate or in the `nox` binary's
    /// dependency on it), or if the default build accepted the section.
    #[test]
    fn observe_is_refused_unless_built_in_and_never_built_in_by_default() {
        let with_observe = format!("{MINIMAL}\n[observe]\nevents = \"/tmp/observe.events\"\n");
        let mut config: NodeConfig = toml::from_str(&with_observe).unwrap();
        let checked = config.apply_env(|_| None);
        if cfg!(feature = "observe") {
            assert!(checked.is_ok());
        } else {
            let error = checked.unwrap_err().to_string();
            assert!(error.contains("[observe]") && error.contains("--features observe"), "{error}");
        }
        assert_never_on_by_default("observe");
    }

    /// Whatever the tests were built with, the manifests must not turn `feature` on by default
    /// (in this crate, or in the `nox` binary's dependency on it).
    fn assert_never_on_by_default(feature: &str) {
        for manifest in [include_str!("../Cargo.toml"), include_str!("../../nox/Cargo.toml")] {
            let manifest: toml::Table = toml::from_str(manifest).unwrap();
            let default = manifest.get("features").and_then(|f| f.get("default"));
            assert!(default.is_none_or(|d| !format!("{d:?}").contains(feature)), "{feature} in default features");
            let dependency = manifest.get("dependencies").and_then(|d| d.get("nox-node"));
            let features = dependency.and_then(|d| d.get("features")).map(|f| format!("{f:?}")).unwrap_or_default();
            assert!(!features.contains(feature), "the nox binary enables {feature} unconditionally");
        }
    }

    /// The default build has no fault layer: `[chaos]` is refused; with the feature, its ranges
    /// are checked.
    #[test]
    fn chaos_is_refused_unless_built_in_and_never_built_in_by_default() {
        let with_chaos = format!("{MINIMAL}\n[chaos]\nlink_loss = 0.1\nlink_delay_ms = 2.0\n");
        let mut config: NodeConfig = toml::from_str(&with_chaos).unwrap();
        let checked = config.apply_env(|_| None);
        if cfg!(feature = "chaos") {
            assert!(checked.is_ok());
            let mut bad: NodeConfig = toml::from_str(&format!("{MINIMAL}\n[chaos]\nlink_loss = 1.0\n")).unwrap();
            assert!(matches!(bad.apply_env(|_| None), Err(ConfigError::Invalid { section: "chaos", .. })));
        } else {
            let error = checked.unwrap_err().to_string();
            assert!(error.contains("[chaos]") && error.contains("--features chaos"), "{error}");
        }
        assert_never_on_by_default("chaos");
    }

    const MINIMAL: &str = r#"
        [node]
        key_dir = "/tmp/keys"
        listen = "127.0.0.1:9000"
        [topology]
        file = "/tmp/topology.json"
        authority_key = "00"
    "#;

    #[test]
    fn defaults_and_overrides() {
        let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
        assert_eq!(
            config.mixing.mean_delay(),
            Duration::from_millis(50),
            "a node.toml without [mixing] mixes at the default μ"
        );
        assert_eq!(config.replay.capacity, 10_000_000);
        config
            .apply_env(|name| match name {
                "NOX_NODE_LISTEN" => Some("127.0.0.1:9999".into()),
                "NOX_MIXING_MEAN_DELAY_MS" => Some("5".into()),
                "NOX_TOPOLOGY_URL" => Some("http://127.0.0.1:8000".into()),
                "NOX_TOPOLOGY_MIRRORS" => Some("http://127.0.0.2:8000, http://[::1]:8000".into()),
                _ => None,
            })
            .unwrap();
        assert_eq!(config.node.listen.port(), 9999);
        assert_eq!(config.mixing.mean_delay(), Duration::from_millis(5));
        assert_eq!(config.topology.url.as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(config.topology.mirrors, ["http://127.0.0.2:8000", "http://[::1]:8000"]);
        assert_eq!(config.topology.file.as_deref(), Some(std::path::Path::new("/tmp/topology.json")));
        let bad = config.apply_env(|name| (name == "NOX_NODE_POW_DIFFICULTY").then(|| "lots".into()));
        assert!(matches!(bad, Err(ConfigError::Env { name: "NOX_NODE_POW_DIFFICULTY", .. })));
    }

    #[test]
    fn admission_rates_defaults_overrides_and_validation() {
        let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
        assert_eq!(config.admission.node_rate_pps, 50_000.0);
        assert_eq!(config.admission.client_rate_pps, 5_000.0);
        assert!(config.admission.adaptive_pow);
        let text = format!("{MINIMAL}\n[admission]\nclient_rate_pps = 300.0\nadaptive_pow = false\n");
        let parsed: NodeConfig = toml::from_str(&text).unwrap();
        assert_eq!((parsed.admission.client_rate_pps, parsed.admission.adaptive_pow), (300.0, false));
        config
            .apply_env(|name| match name {
                "NOX_ADMISSION_CLIENT_RATE_PPS" => Some("700".into()),
                "NOX_ADMISSION_ADAPTIVE_POW" => Some("false".into()),
                "NOX_ADMISSION_EXPECTED_CLIENT_RATE" => Some("50".into()),
                _ => None,
            })
            .unwrap();
        assert_eq!(config.admission.client_rate_pps, 700.0);
        assert_eq!(config.admission.expected_client_rate, 50.0);
        assert!(!config.admission.adaptive_pow);
        let zero = config.apply_env(|name| (name == "NOX_ADMISSION_NODE_RATE_PPS").then(|| "0".into()));
        assert!(matches!(zero, Err(ConfigError::Invalid { section: "admission", .. })), "{zero:?}");
        let bad = config.apply_env(|name| (name == "NOX_ADMISSION_ADAPTIVE_POW").then(|| "sometimes".into()));
        assert!(matches!(bad, Err(ConfigError::Env { name: "NOX_ADMISSION_ADAPTIVE_POW", .. })));
        let exit = |extra: &str| {
            let dir = std::env::temp_dir().join(format!("nox-config-exit-{}-{}", std::process::id(), extra.len()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("node.toml");
            let base = "[node]\nkey_dir = \"/k\"\nlisten = \"127.0.0.1:1\"\n[topology]\nfile = \"/t\"\nauthority_key = \"00\"\n";
            std::fs::write(&path, format!("{base}[exit]\n{extra}\n")).unwrap();
            let loaded = NodeConfig::load(&path, |_| None);
            let _ = std::fs::remove_dir_all(&dir);
            loaded
        };
        assert!(exit("inject_reply_loss = 0.2\n[exit.services.http]\nallow = [\"127.0.0.0/8\"]").is_ok());
        assert!(matches!(exit("inject_reply_loss = 1.5"), Err(ConfigError::Invalid { section: "exit", .. })));
        assert!(matches!(exit("reply_target = 1.0"), Err(ConfigError::Invalid { section: "exit", .. })));
    }

    #[test]
    fn the_sphinx_scheme_is_a_setting_with_a_clear_error() {
        let config: NodeConfig = toml::from_str(MINIMAL).unwrap();
        assert_eq!(config.node.sphinx_scheme, Scheme::Ristretto255);
        assert_eq!(config.node.geometry().unwrap(), Geometry::default());
        assert!(config.node.sphinx_key_dir().ends_with("keys/sphinx"));
        let text = MINIMAL.replace("[topology]", "sphinx_scheme = \"xwing\"\n[topology]");
        let mut xwing: NodeConfig = toml::from_str(&text).unwrap();
        assert_eq!(xwing.node.geometry().unwrap().scheme(), Scheme::XWing);
        assert_eq!(xwing.node.geometry().unwrap().header_len(), 3584);
        assert!(xwing.node.sphinx_key_dir().ends_with("keys/sphinx-xwing"));
        let bad = MINIMAL.replace("[topology]", "sphinx_scheme = \"kyber\"\n[topology]");
        let error = toml::from_str::<NodeConfig>(&bad).unwrap_err().to_string();
        assert!(error.contains("unknown Sphinx scheme \"kyber\"") && error.contains("sphinx_scheme"), "{error}");
        xwing.apply_env(|name| (name == "NOX_NODE_SPHINX_SCHEME").then(|| "mlkem768".into())).unwrap();
        assert_eq!(xwing.node.sphinx_scheme, Scheme::MlKem768);
        let env = xwing.apply_env(|name| (name == "NOX_NODE_SPHINX_SCHEME").then(|| "rsa".into()));
        assert!(matches!(env, Err(ConfigError::Env { name: "NOX_NODE_SPHINX_SCHEME", .. })), "{env:?}");
    }

    #[test]
    fn the_layer_count_is_the_geometry_hop_count() {
        let config: NodeConfig = toml::from_str(MINIMAL).unwrap();
        assert_eq!((config.node.layers, config.node.geometry().unwrap().hops()), (3, 3));
        let five: NodeConfig = toml::from_str(&MINIMAL.replace("[topology]", "layers = 5\n[topology]")).unwrap();
        let geometry = five.node.geometry().unwrap();
        assert_eq!(geometry.hops(), 5);
        assert_ne!(geometry.identifier(), config.node.geometry().unwrap().identifier());
        let none: NodeConfig = toml::from_str(&MINIMAL.replace("[topology]", "layers = 0\n[topology]")).unwrap();
        assert!(none.node.geometry().is_err(), "a network of no layers has no geometry");
        let small = MINIMAL.replace("[topology]", "packet_len = 4096\n[topology]");
        let small = toml::from_str::<NodeConfig>(&small).unwrap().node.geometry().unwrap();
        assert_eq!((small.packet_len(), small.hops()), (4096, 3));
        let bad = MINIMAL.replace("[topology]", "packet_len = 4000\n[topology]");
        let error = toml::from_str::<NodeConfig>(&bad).unwrap_err().to_string();
        assert!(error.contains("unsupported packet length 4000"), "{error}");
    }

    #[test]
    fn websocket_tls_files_come_in_pairs_with_a_websocket_listener() {
        let config = |vars: &[(&str, &str)]| {
            let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
            let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
            config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())).map(|()| config)
        };
        let ok = config(&[
            ("NOX_NODE_WEBSOCKET_LISTEN", "127.0.0.1:9300"),
            ("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"),
            ("NOX_NODE_WEBSOCKET_TLS_KEY", "/etc/nox/key.pem"),
        ])
        .unwrap();
        assert_eq!(ok.node.websocket_tls_cert.as_deref(), Some(std::path::Path::new("/etc/nox/cert.pem")));
        assert_eq!(ok.node.websocket_tls_key.as_deref(), Some(std::path::Path::new("/etc/nox/key.pem")));
        let half = config(&[
            ("NOX_NODE_WEBSOCKET_LISTEN", "127.0.0.1:9300"),
            ("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"),
        ]);
        assert!(matches!(half, Err(ConfigError::Invalid { section: "node", .. })), "{half:?}");
        let nowhere =
            config(&[("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"), ("NOX_NODE_WEBSOCKET_TLS_KEY", "/k.pem")]);
        assert!(matches!(nowhere, Err(ConfigError::Invalid { section: "node", .. })), "{nowhere:?}");
        assert_eq!(config(&[]).unwrap().node.websocket_tls_cert, None);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let text = format!("{MINIMAL}\n[mixing]\nmean_dealy_ms = 3\n");
        assert!(toml::from_str::<NodeConfig>(&text).is_err());
    }

    /// `[operator]` names one passphrase source: none or both (a config that would fall back to
    /// nothing, or leave it unclear which secret is used) is refused at load, and so is a
    /// second operator key beside `[chain] operator_key_file`.
    #[test]
    fn operator_section_needs_exactly_one_passphrase_source() {
        let chain = "[chain]\nrpc_urls = [\"http://127.0.0.1:8545\"]\nregistry = \"0x0000000000000000000000000000000000000001\"\nchain_id = 31337\n";
        let load = |operator: &str, key_file: &str| {
            let text = format!("{MINIMAL}\n{chain}{key_file}\n[operator]\nkeystore = \"/k.json\"\n{operator}");
            let mut config: NodeConfig = toml::from_str(&text).expect("parses");
            config.apply_env(|_| None).map(|()| config)
        };
        let ok = load("password_file = \"/p\"\n", "").expect("one source");
        assert_eq!(ok.operator.map(|o| o.password_file), Some(Some(PathBuf::from("/p"))));
        assert!(load("password_env = \"NOX_OPERATOR_PASSWORD\"\n", "").is_ok());
        for bad in ["", "password_file = \"/p\"\npassword_env = \"X\"\n"] {
            assert!(matches!(load(bad, ""), Err(ConfigError::Invalid { section: "operator", .. })), "{bad:?}");
        }
        let both_keys = load("password_file = \"/p\"\n", "operator_key_file = \"/op.key\"\n");
        assert!(matches!(both_keys, Err(ConfigError::Invalid { section: "operator", .. })));
    }
}
