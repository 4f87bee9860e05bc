//! `directory.toml`: the authority's configuration (docs/configuration.md).

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use nox_sphinx::{Geometry, Scheme};
use nox_topology::{SigningKey, TopologyDocument, VerifyingKey};
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
    /// An authority-signed document: the network parameters and the first descriptors.
    pub initial_document: PathBuf,
    /// Admitted node identity keys (hex); absent: the identities in `initial_document`.
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

    /// Reads the key and the initial document and builds the registry.
    pub fn registry(&self, geometry: Geometry) -> Result<Registry, ConfigError> {
        let seed = read(&self.authority_key_file)?;
        let seed = String::from_utf8(seed).map_err(|_| ConfigError::Invalid("authority key: not UTF-8".into()))?;
        let authority = SigningKey::from_bytes(&hex32(&seed, "authority_key_file")?);
        let document = TopologyDocument::from_json(&read(&self.initial_document)?)
            .map_err(|e| ConfigError::Invalid(format!("initial_document: {e}")))?;
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
        let reissue = match self.reissue_secs {
            0 => (document.schedule.epoch_length().as_secs() / 4).clamp(1, 900),
            n => n,
        };
        Registry::from_document(authority, geometry, &document, admitted, reissue)
            .map_err(|e| ConfigError::Invalid(format!("initial_document: {e}")))
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
