//! `node.toml`: the node's configuration, with `NOX_*` environment overrides.
//! Every field is documented in docs/configuration.md.
//!
//! This module holds the sections as `node.toml` spells them and [`ConfigError`]; `load` reads
//! the file and applies the environment overrides; `tests` checks defaults, overrides and every
//! refusal.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use nox_sphinx::{Geometry, Scheme};
use serde::Deserialize;

mod load;
#[cfg(test)]
mod tests;

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
