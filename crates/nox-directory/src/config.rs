//! `directory.toml`: the authority's configuration (docs/configuration.md).

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use nox_sphinx::{Geometry, Scheme};
use nox_topology::{EpochSchedule, LayerCount, SigningKey, TopologyDocument, VerifyingKey};
use serde::Deserialize;

use crate::registry::Registry;

/// The whole file. Unknown keys are refused.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DirectoryConfig {
    /// HTTP listen address (port 0: any free port; see `addr_file`).
    pub listen: SocketAddr,
    /// File holding the authority's Ed25519 secret seed: 64 hex digits.
    pub authority_key_file: PathBuf,
    /// An authority-signed document: the network parameters and the first descriptors. Absent:
    /// the directory starts empty, with the network's parameters from `[schedule]` and the
    /// geometry keys, and signs its first document once every layer has an admitted node's
    /// valid uploaded descriptor (until then `GET /topology` answers 503 saying what it waits for).
    #[serde(default)]
    pub initial_document: Option<PathBuf>,
    /// The epoch schedule of a network started without `initial_document` (refused with one:
    /// the document names the schedule).
    #[serde(default)]
    pub schedule: Option<ScheduleSection>,
    /// Without `initial_document`: where the schedule chosen at the first start (its genesis
    /// above all, when `genesis = "now"`) is kept, so that a restart keeps it.
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    /// Admitted node identity keys (hex); absent: the identities in `initial_document` (without
    /// one: none until `--chain` admits the registry's members).
    #[serde(default)]
    pub admitted: Option<Vec<String>>,
    /// Re-issue the document at least this often, seconds (0: a quarter epoch, 1 s to 15 min).
    #[serde(default)]
    pub reissue_secs: u64,
    /// Write the bound address here once listening (for tools that started it on port 0).
    #[serde(default)]
    pub addr_file: Option<PathBuf>,
    /// Time allowed to send one whole request, milliseconds.
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Time allowed before a connection's first byte, milliseconds (idle connections are
    /// closed after it).
    #[serde(default = "default_first_byte_timeout_ms")]
    pub first_byte_timeout_ms: u64,
    /// Connections served at once; more are closed unanswered (and counted).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections served at once from one address (IPv4, or IPv6 /64); more are closed
    /// unanswered (and counted).
    #[serde(default = "default_max_connections_per_address")]
    pub max_connections_per_address: usize,
    /// Connections served at once from one subnet (IPv4 /24, or IPv6 /48); more are closed
    /// unanswered (and counted).
    #[serde(default = "default_max_connections_per_subnet")]
    pub max_connections_per_subnet: usize,
    /// The Sphinx scheme of the network's geometry (`ristretto255`, the default, `x25519-kem`,
    /// `mlkem768` or `xwing`): the initial document and every upload must be of it.
    #[serde(default, deserialize_with = "scheme")]
    pub sphinx_scheme: Scheme,
    /// The network's layer count, which is its packets' hop count (default 3): with the scheme,
    /// it names the geometry the initial document and every upload must be of.
    #[serde(default = "default_layers")]
    pub layers: u8,
    /// The network's packet length in bytes (default 4096; 2048, 8192, 16384 or 32768): with
    /// the scheme and layers, it names the geometry.
    #[serde(default)]
    pub packet_len: nox_topology::PacketLen,
}

/// `[schedule]`: the key-epoch schedule of a network whose directory starts empty.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSection {
    /// Epoch 0's first second: a unix second, or `"now"` (the first start's second, kept in
    /// `state_file`).
    pub genesis: Genesis,
    /// Length of one key epoch, seconds (default 3600).
    #[serde(default = "default_epoch_secs")]
    pub epoch_secs: u64,
    /// How long after an epoch ends its keys still work, seconds (default 300; less than an
    /// epoch).
    #[serde(default = "default_overlap_secs")]
    pub overlap_secs: u64,
    /// How many future epochs' keys a node publishes (default 1, at most 8).
    #[serde(default = "default_publish_ahead")]
    pub publish_ahead: u32,
}

/// `genesis` of `[schedule]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Genesis {
    /// The second of the directory's first start.
    Now,
    /// This unix second.
    At(u64),
}

impl<'de> Deserialize<'de> for Genesis {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Genesis;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"now\" or a unix second")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Genesis, E> {
                match v {
                    "now" => Ok(Genesis::Now),
                    other => Err(E::custom(format!("genesis {other:?}: expected \"now\" or a unix second"))),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Genesis, E> {
                u64::try_from(v)
                    .map(Genesis::At)
                    .map_err(|_| E::custom(format!("genesis {v}: expected \"now\" or a unix second")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Genesis, E> {
                Ok(Genesis::At(v))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

fn default_epoch_secs() -> u64 {
    nox_topology::DEFAULT_EPOCH_LENGTH.as_secs()
}

fn default_overlap_secs() -> u64 {
    nox_topology::DEFAULT_OVERLAP.as_secs()
}

fn default_publish_ahead() -> u32 {
    nox_topology::DEFAULT_PUBLISH_AHEAD
}

/// The schedule kept in `state_file` (TOML, written by the directory at its first start).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct KeptSchedule {
    genesis_unix: u64,
    epoch_secs: u64,
    overlap_secs: u64,
    publish_ahead: u32,
}

impl KeptSchedule {
    fn render(&self) -> String {
        format!(
            "# Written by nox directory at its first start: the network's epoch schedule. Do not edit.\ngenesis_unix = {}\nepoch_secs = {}\noverlap_secs = {}\npublish_ahead = {}\n",
            self.genesis_unix, self.epoch_secs, self.overlap_secs, self.publish_ahead
        )
    }
}

/// The schedule of an empty start at `now`: the kept one (`kept`, from `state_file`) if any,
/// which must agree with `section`; else `section`'s, `genesis = "now"` being `now`. Returns
/// the schedule and, at a first start, the state to keep. Pure: the caller reads and writes
/// the file.
pub fn resolve_schedule(
    section: &ScheduleSection,
    kept: Option<&str>,
    now: u64,
) -> Result<(EpochSchedule, Option<String>), ConfigError> {
    let wanted = |genesis_unix| KeptSchedule {
        genesis_unix,
        epoch_secs: section.epoch_secs,
        overlap_secs: section.overlap_secs,
        publish_ahead: section.publish_ahead,
    };
    let (state, first) = match kept {
        None => (
            wanted(match section.genesis {
                Genesis::Now => now,
                Genesis::At(t) => t,
            }),
            true,
        ),
        Some(text) => {
            let state: KeptSchedule =
                toml::from_str(text).map_err(|e| ConfigError::Invalid(format!("state_file: {e}")))?;
            let genesis = match section.genesis {
                Genesis::Now => state.genesis_unix,
                Genesis::At(t) => t,
            };
            if state != wanted(genesis) {
                return Err(ConfigError::Invalid(format!(
                    "[schedule] differs from the one kept in state_file (genesis {}, epoch_secs {}, overlap_secs {}, publish_ahead {}): a running network's schedule cannot change",
                    state.genesis_unix, state.epoch_secs, state.overlap_secs, state.publish_ahead
                )));
            }
            (state, false)
        }
    };
    let schedule = EpochSchedule::new(
        state.genesis_unix,
        Duration::from_secs(state.epoch_secs),
        Duration::from_secs(state.overlap_secs),
        state.publish_ahead,
    )
    .map_err(|e| ConfigError::Invalid(format!("[schedule]: {e}")))?;
    Ok((schedule, first.then(|| state.render())))
}

fn default_layers() -> u8 {
    // DEFAULT_HOPS is a small constant (3); the conversion cannot fail.
    u8::try_from(nox_sphinx::DEFAULT_HOPS).unwrap_or(3)
}

fn scheme<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Scheme, D::Error> {
    let name = String::deserialize(deserializer)?;
    nox_topology::parse_scheme(&name).map_err(serde::de::Error::custom)
}

fn default_first_byte_timeout_ms() -> u64 {
    500
}

fn default_max_connections_per_address() -> usize {
    4
}

fn default_max_connections_per_subnet() -> usize {
    16
}

fn default_request_timeout_ms() -> u64 {
    2000
}

fn default_max_connections() -> usize {
    64
}

/// Why the directory could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("reading {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// Invalid TOML, key or document.
    #[error("{0}")]
    Invalid(String),
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| ConfigError::Read { path: path.clone(), message: e.to_string() })
}

fn hex32(text: &str, what: &str) -> Result<[u8; 32], ConfigError> {
    hex::decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| ConfigError::Invalid(format!("{what}: expected 64 hex digits")))
}

impl DirectoryConfig {
    /// Reads and parses `path`.
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = read(&path.to_path_buf())?;
        let text =
            String::from_utf8(text).map_err(|_| ConfigError::Invalid(format!("{}: not UTF-8", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError::Invalid(format!("{}: {e}", path.display())))
    }

    /// The network's geometry: [`DirectoryConfig::sphinx_scheme`] at [`DirectoryConfig::packet_len`],
    /// with [`DirectoryConfig::layers`] hops.
    pub fn geometry(&self) -> Result<Geometry, ConfigError> {
        nox_topology::network_geometry_with_len(self.sphinx_scheme, usize::from(self.layers), self.packet_len).map_err(
            |e| ConfigError::Invalid(format!("sphinx_scheme {} with {} layers: {e}", self.sphinx_scheme, self.layers)),
        )
    }

    /// The request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms.max(1))
    }

    /// The service's limits.
    pub fn limits(&self) -> crate::Limits {
        crate::Limits {
            request_timeout: self.request_timeout(),
            first_byte_timeout: Duration::from_millis(self.first_byte_timeout_ms.max(1)),
            max_connections: self.max_connections.max(1),
            max_connections_per_address: self.max_connections_per_address.max(1),
            max_connections_per_subnet: self.max_connections_per_subnet.max(1),
        }
    }

    /// Whether the directory can admit anyone without an admission feed (`--chain`): it has an
    /// `admitted` list or an initial document to take the identities from.
    pub fn admits_without_feed(&self) -> bool {
        self.admitted.is_some() || self.initial_document.is_some()
    }

    /// Checks the combination of keys that decides how the directory starts (before any file is
    /// read): an initial document, or `[schedule]` and `state_file`, not both.
    pub fn check_start(&self) -> Result<(), ConfigError> {
        match (&self.initial_document, &self.schedule, &self.state_file) {
            (Some(_), Some(_), _) => Err(ConfigError::Invalid(
                "[schedule] with initial_document: the document names the schedule; remove one".into(),
            )),
            (Some(_), None, Some(_)) => Err(ConfigError::Invalid(
                "state_file with initial_document: the state file keeps the schedule of an empty start only".into(),
            )),
            (None, None, _) => Err(ConfigError::Invalid(
                "no initial_document and no [schedule]: a directory that starts empty needs the network's schedule"
                    .into(),
            )),
            (None, Some(_), None) => Err(ConfigError::Invalid(
                "[schedule] without state_file: the schedule chosen at the first start must be kept for restarts"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// Without `initial_document`: where the last issued document is kept (beside `state_file`,
    /// its extension replaced by `document.json`), so that a restart serves it again.
    pub fn document_file(&self) -> Option<PathBuf> {
        match (&self.initial_document, &self.state_file) {
            (None, Some(state)) => Some(state.with_extension("document.json")),
            _ => None,
        }
    }

    fn reissue_for(&self, schedule: &EpochSchedule) -> u64 {
        match self.reissue_secs {
            0 => (schedule.epoch_length().as_secs() / 4).clamp(1, 900),
            n => n,
        }
    }

    /// Reads the key and the initial document (or, for an empty start, the kept schedule,
    /// writing it at the first start) and builds the registry.
    pub fn registry(&self, geometry: Geometry) -> Result<Registry, ConfigError> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.registry_at(geometry, now)
    }

    /// [`DirectoryConfig::registry`] at unix second `now` (the genesis of `genesis = "now"`).
    pub fn registry_at(&self, geometry: Geometry, now: u64) -> Result<Registry, ConfigError> {
        self.check_start()?;
        let seed = read(&self.authority_key_file)?;
        let seed = String::from_utf8(seed).map_err(|_| ConfigError::Invalid("authority key: not UTF-8".into()))?;
        let authority = SigningKey::from_bytes(&hex32(&seed, "authority_key_file")?);
        let admitted = match &self.admitted {
            None => None,
            Some(keys) => Some(
                keys.iter()
                    .map(|k| {
                        VerifyingKey::from_bytes(&hex32(k, "admitted")?)
                            .map_err(|e| ConfigError::Invalid(format!("admitted key {k}: {e}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        match (&self.initial_document, &self.schedule, &self.state_file) {
            (Some(initial), _, _) => {
                let document = TopologyDocument::from_json(&read(initial)?)
                    .map_err(|e| ConfigError::Invalid(format!("initial_document: {e}")))?;
                let reissue = self.reissue_for(&document.schedule);
                Registry::from_document(authority, geometry, &document, admitted, reissue)
                    .map_err(|e| ConfigError::Invalid(format!("initial_document: {e}")))
            }
            (None, Some(section), Some(state_file)) => {
                let layers = LayerCount::new(self.layers).ok_or_else(|| {
                    ConfigError::Invalid(format!("layers {}: expected 1 to {}", self.layers, nox_topology::MAX_LAYERS))
                })?;
                let kept = match std::fs::read(state_file) {
                    Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
                        ConfigError::Invalid(format!("state_file {}: not UTF-8", state_file.display()))
                    })?),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(ConfigError::Read { path: state_file.clone(), message: e.to_string() }),
                };
                let (schedule, first) = resolve_schedule(section, kept.as_deref(), now)
                    .map_err(|e| ConfigError::Invalid(format!("{}: {e}", state_file.display())))?;
                if let Some(text) = first {
                    let temp = state_file.with_extension("tmp");
                    std::fs::write(&temp, text)
                        .and_then(|()| std::fs::rename(&temp, state_file))
                        .map_err(|e| ConfigError::Read { path: state_file.clone(), message: e.to_string() })?;
                }
                let reissue = self.reissue_for(&schedule);
                let kept_document = self.document_file().filter(|path| path.exists());
                let Some(path) = kept_document else {
                    return Ok(Registry::empty(
                        authority,
                        geometry,
                        schedule,
                        layers,
                        admitted.unwrap_or_default(),
                        reissue,
                    ));
                };
                // A restart after the first document: serve the last one issued (the nodes only
                // upload again when their keys change), if it is of this network.
                let named = |e: String| ConfigError::Invalid(format!("{} (kept document): {e}", path.display()));
                let document = TopologyDocument::from_json(&read(&path)?).map_err(|e| named(e.to_string()))?;
                if document.schedule != schedule {
                    return Err(named("its schedule differs from the one kept in state_file".into()));
                }
                let registry = Registry::from_document(authority, geometry, &document, admitted, reissue)
                    .map_err(|e| named(e.to_string()))?;
                if registry.layers() != layers {
                    return Err(named(format!("{} layers, the config says {}", registry.layers().get(), layers.get())));
                }
                Ok(registry)
            }
            // `check_start` refused every other combination above.
            _ => Err(ConfigError::Invalid("initial_document, or [schedule] with state_file, is needed".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "listen = \"127.0.0.1:0\"\nauthority_key_file = \"/k\"\ninitial_document = \"/t\"\n";

    #[test]
    fn the_sphinx_scheme_defaults_to_classical_and_names_an_unknown_one() {
        let config: DirectoryConfig = toml::from_str(MINIMAL).unwrap();
        assert_eq!(config.geometry().unwrap(), Geometry::default());
        let xwing: DirectoryConfig = toml::from_str(&format!("{MINIMAL}sphinx_scheme = \"xwing\"\n")).unwrap();
        assert_eq!(xwing.geometry().unwrap().scheme(), Scheme::XWing);
        let error = toml::from_str::<DirectoryConfig>(&format!("{MINIMAL}sphinx_scheme = \"kyber\"\n")).unwrap_err();
        assert!(error.to_string().contains("unknown Sphinx scheme \"kyber\""), "{error}");
    }

    #[test]
    fn the_packet_length_is_part_of_the_geometry_with_a_clear_error() {
        let small: DirectoryConfig = toml::from_str(&format!("{MINIMAL}packet_len = 4096\n")).unwrap();
        assert_eq!(small.geometry().unwrap().packet_len(), 4096);
        let error = toml::from_str::<DirectoryConfig>(&format!("{MINIMAL}packet_len = 3000\n")).unwrap_err();
        assert!(error.to_string().contains("unsupported packet length 3000"), "{error}");
    }
}
