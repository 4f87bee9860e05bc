//! The JSON transport format (docs/spec/topology.md §5). Byte strings are lowercase hex; unknown
//! fields are refused. Parsing checks syntax and key encodings only; the semantic checks are in
//! [`crate::TopologyDocument::verify`].

use core::net::SocketAddr;
use core::time::Duration;

use ed25519_dalek::{Signature, VerifyingKey};
use nox_sphinx::{PublicKey, Scheme};
use serde::{Deserialize, Serialize};

use crate::descriptor::{EpochKey, LinkPublicKey, NodeDescriptor, OperatorStatement, SignedDescriptor};
use crate::document::TopologyDocument;
use crate::error::TopologyError;
use crate::layer::Layer;
use crate::schedule::EpochSchedule;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DocumentJson {
    version: u16,
    geometry: String,
    schedule: ScheduleJson,
    layers: u8,
    issued_at: u64,
    nodes: Vec<NodeJson>,
    signature: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleJson {
    genesis_unix: u64,
    epoch_length_secs: u64,
    overlap_secs: u64,
    publish_ahead: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeJson {
    node_id: String,
    identity_key: String,
    link_key: String,
    address: String,
    layer: u8,
    pow_difficulty: u8,
    sphinx_keys: Vec<EpochKeyJson>,
    signature: String,
    /// The WebSocket client endpoint (`ip:port`); absent when the node offers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    websocket: Option<String>,
    /// Operator statements (docs/spec/registry.md §5); absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    operator_statements: Vec<StatementJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StatementJson {
    epoch: u32,
    signature: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EpochKeyJson {
    epoch: u32,
    key: String,
    /// The key's scheme (`nox_sphinx::Scheme::name`); absent for ristretto255.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scheme: Option<String>,
}

fn hex_array<const N: usize>(s: &str, field: &'static str) -> Result<[u8; N], TopologyError> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).map_err(|_| TopologyError::Hex(field))?;
    Ok(out)
}

fn parse_node(n: NodeJson) -> Result<SignedDescriptor, TopologyError> {
    let identity_key = VerifyingKey::from_bytes(&hex_array(&n.identity_key, "identity_key")?)
        .map_err(|_| TopologyError::InvalidIdentityKey)?;
    let node_id: [u8; 32] = hex_array(&n.node_id, "node_id")?;
    let link_key = LinkPublicKey::from_bytes(hex_array(&n.link_key, "link_key")?)?;
    let address: SocketAddr = n.address.parse().map_err(|_| TopologyError::InvalidAddress(n.address.clone()))?;
    // `ip:port` (plain `ws://`) or `wss://ip:port` (TLS).
    let (websocket, websocket_tls) = match &n.websocket {
        None => (None, false),
        Some(w) => {
            let (address, tls) = w.strip_prefix("wss://").map_or((w.as_str(), false), |a| (a, true));
            (Some(address.parse::<SocketAddr>().map_err(|_| TopologyError::InvalidAddress(w.clone()))?), tls)
        }
    };
    let sphinx_keys = n
        .sphinx_keys
        .iter()
        .map(|k| {
            let scheme = match &k.scheme {
                None => Scheme::Ristretto255,
                Some(name) => Scheme::from_name(name).ok_or(TopologyError::InvalidSphinxKey)?,
            };
            if k.key.len() != 2 * scheme.public_key_len() {
                return Err(TopologyError::InvalidSphinxKey);
            }
            let bytes = hex::decode(&k.key).map_err(|_| TopologyError::Hex("sphinx_keys.key"))?;
            let key = PublicKey::decode(scheme, &bytes).map_err(|_| TopologyError::InvalidSphinxKey)?;
            Ok(EpochKey { epoch: k.epoch, key })
        })
        .collect::<Result<Vec<_>, TopologyError>>()?;
    let signature = Signature::from_bytes(&hex_array(&n.signature, "nodes.signature")?);
    let descriptor = NodeDescriptor {
        identity_key,
        link_key,
        address,
        layer: Layer(n.layer),
        pow_difficulty: n.pow_difficulty,
        sphinx_keys,
        websocket,
        websocket_tls,
    };
    if descriptor.node_id().0 != node_id {
        return Err(TopologyError::NodeIdMismatch);
    }
    if n.operator_statements.len() > crate::MAX_EPOCH_KEYS {
        return Err(TopologyError::Json(format!("more than {} operator statements", crate::MAX_EPOCH_KEYS)));
    }
    let operator_statements = n
        .operator_statements
        .iter()
        .map(|st| {
            Ok(OperatorStatement {
                epoch: st.epoch,
                signature: hex_array(&st.signature, "operator_statements.signature")?,
            })
        })
        .collect::<Result<Vec<_>, TopologyError>>()?;
    Ok(SignedDescriptor { descriptor, signature, operator_statements })
}

impl DocumentJson {
    pub(crate) fn into_document(self) -> Result<TopologyDocument, TopologyError> {
        if self.version != crate::document::VERSION {
            return Err(TopologyError::UnsupportedVersion(self.version));
        }
        let schedule = EpochSchedule::new(
            self.schedule.genesis_unix,
            Duration::from_secs(self.schedule.epoch_length_secs),
            Duration::from_secs(self.schedule.overlap_secs),
            self.schedule.publish_ahead,
        )?;
        if self.nodes.len() > crate::MAX_NODES {
            return Err(TopologyError::NodeCount(self.nodes.len()));
        }
        Ok(TopologyDocument {
            version: self.version,
            geometry: hex_array(&self.geometry, "geometry")?,
            schedule,
            layers: self.layers,
            issued_at: self.issued_at,
            nodes: self.nodes.into_iter().map(parse_node).collect::<Result<_, _>>()?,
            signature: Signature::from_bytes(&hex_array(&self.signature, "signature")?),
        })
    }

    pub(crate) fn from_document(d: &TopologyDocument) -> Self {
        Self {
            version: d.version,
            geometry: hex::encode(d.geometry),
            schedule: ScheduleJson {
                genesis_unix: d.schedule.genesis_unix(),
                epoch_length_secs: d.schedule.epoch_length().as_secs(),
                overlap_secs: d.schedule.overlap().as_secs(),
                publish_ahead: d.schedule.publish_ahead(),
            },
            layers: d.layers,
            issued_at: d.issued_at,
            nodes: d.nodes.iter().map(node_json).collect(),
            signature: hex::encode(d.signature.to_bytes()),
        }
    }
}

fn node_json(n: &SignedDescriptor) -> NodeJson {
    let x = &n.descriptor;
    NodeJson {
        node_id: hex::encode(x.node_id().0),
        identity_key: hex::encode(x.identity_key.as_bytes()),
        link_key: hex::encode(x.link_key.to_bytes()),
        address: x.address.to_string(),
        websocket: x.websocket.map(|w| if x.websocket_tls { format!("wss://{w}") } else { w.to_string() }),
        layer: x.layer.0,
        pow_difficulty: x.pow_difficulty,
        sphinx_keys: x
            .sphinx_keys
            .iter()
            .map(|k| EpochKeyJson {
                epoch: k.epoch,
                key: hex::encode(k.key.as_bytes()),
                scheme: k.key.scheme().is_kem().then(|| k.key.scheme().name().to_owned()),
            })
            .collect(),
        signature: hex::encode(n.signature.to_bytes()),
        operator_statements: n
            .operator_statements
            .iter()
            .map(|st| StatementJson { epoch: st.epoch, signature: hex::encode(st.signature) })
            .collect(),
    }
}

/// Largest JSON descriptor accepted by [`SignedDescriptor::from_json`].
pub const MAX_DESCRIPTOR_BYTES: usize = 16 << 10;

impl SignedDescriptor {
    /// Parses one node entry of the JSON transport format (docs/spec/topology.md §5), as a node
    /// uploads it to the directory. Checks syntax, sizes and key encodings only; the signature
    /// and the rest are checked by the caller.
    pub fn from_json(bytes: &[u8]) -> Result<Self, TopologyError> {
        if bytes.len() > MAX_DESCRIPTOR_BYTES {
            return Err(TopologyError::TooLarge(bytes.len()));
        }
        let json: NodeJson = serde_json::from_slice(bytes).map_err(|e| TopologyError::Json(e.to_string()))?;
        if json.sphinx_keys.len() > crate::MAX_EPOCH_KEYS {
            return Err(TopologyError::Json(format!("more than {} sphinx keys", crate::MAX_EPOCH_KEYS)));
        }
        parse_node(json)
    }

    /// The JSON transport format of one node entry (compact).
    pub fn to_json(&self) -> Result<String, TopologyError> {
        serde_json::to_string(&node_json(self)).map_err(|e| TopologyError::Json(e.to_string()))
    }
}
