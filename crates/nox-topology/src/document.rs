//! The topology document and its verification.

use core::time::Duration;
use std::collections::HashSet;
use std::sync::Arc;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use nox_sphinx::Geometry;

use crate::descriptor::{MAX_EPOCH_KEYS, SignedDescriptor, check_address};
use crate::encoding::{BodyFields, DOCUMENT_CONTEXT, encode_body, fingerprint};
use crate::error::TopologyError;
use crate::json::DocumentJson;
use crate::layer::LayerCount;
use crate::membership::Membership;
use crate::schedule::EpochSchedule;
use crate::verified::{Fingerprint, VerifiedTopology};

/// The document format version this code reads and writes.
pub const VERSION: u16 = 1;
/// Largest JSON document accepted by [`TopologyDocument::from_json`].
pub const MAX_DOCUMENT_BYTES: usize = 16 << 20;
/// Most nodes one document may list.
pub const MAX_NODES: usize = 10_000;

/// A topology document as distributed: plain data, **not** trusted until
/// [`TopologyDocument::verify`] turns it into a [`VerifiedTopology`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyDocument {
    /// Format version ([`VERSION`]).
    pub version: u16,
    /// `nox_sphinx::Geometry::identifier()` of the network's packet format.
    pub geometry: [u8; 32],
    /// The key-epoch schedule.
    pub schedule: EpochSchedule,
    /// Number of layers `L` (equal to the geometry's hop count).
    pub layers: u8,
    /// Unix second at which the authority issued the document.
    pub issued_at: u64,
    /// Self-signed node descriptors, in any order (the encoding sorts them by node id).
    pub nodes: Vec<SignedDescriptor>,
    /// The authority's Ed25519 signature over [`TopologyDocument::signing_message`].
    pub signature: Signature,
}

/// Who decides which nodes are in the network.
#[derive(Clone, Debug)]
pub enum Trust {
    /// A directory authority: the document must carry its signature, and every node it lists
    /// must pass (one bad node refuses the whole document).
    Authority(VerifyingKey),
    /// A membership read from the node registry (docs/spec/registry.md): the document is an
    /// untrusted cache. Its signature is not checked; each node is used only if the membership
    /// vouches for its identity, link key and address and its self-signature verifies. Nodes that
    /// fail are left out and reported ([`VerifiedTopology::rejected`]), so a cache or one
    /// misbehaving member cannot deny the others.
    Registry(Arc<Membership>),
}

/// What a client or node trusts when verifying a document.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// Who decides membership.
    pub trust: Trust,
    /// The geometry this client or node uses.
    pub geometry: Geometry,
    /// Documents issued longer ago than this are refused.
    pub max_age: Duration,
    /// Documents issued up to this far in the future are tolerated (clock skew).
    pub max_clock_skew: Duration,
}

impl VerifyConfig {
    /// Default freshness: documents at most 2 h old, 5 min of clock skew.
    pub fn new(authority: VerifyingKey, geometry: Geometry) -> Self {
        Self::with_trust(Trust::Authority(authority), geometry)
    }

    /// Membership from the node registry, default freshness.
    pub fn registry(membership: Arc<Membership>, geometry: Geometry) -> Self {
        Self::with_trust(Trust::Registry(membership), geometry)
    }

    fn with_trust(trust: Trust, geometry: Geometry) -> Self {
        Self { trust, geometry, max_age: Duration::from_secs(7200), max_clock_skew: Duration::from_secs(300) }
    }
}

impl TopologyDocument {
    /// Parses the JSON transport format. Checks syntax, sizes, hex lengths, the version and the
    /// key encodings; everything else is checked by [`TopologyDocument::verify`].
    pub fn from_json(bytes: &[u8]) -> Result<Self, TopologyError> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(TopologyError::TooLarge(bytes.len()));
        }
        let json: DocumentJson = serde_json::from_slice(bytes).map_err(|e| TopologyError::Json(e.to_string()))?;
        json.into_document()
    }

    /// The JSON transport format (pretty-printed).
    pub fn to_json(&self) -> Result<String, TopologyError> {
        serde_json::to_string_pretty(&DocumentJson::from_document(self)).map_err(|e| TopologyError::Json(e.to_string()))
    }

    fn fields(&self) -> BodyFields<'_> {
        BodyFields {
            version: self.version,
            geometry: &self.geometry,
            schedule: &self.schedule,
            layers: self.layers,
            issued_at: self.issued_at,
            nodes: &self.nodes,
        }
    }

    /// The canonical body encoding (docs/spec/topology.md §3.3).
    pub fn canonical_body(&self) -> Vec<u8> {
        encode_body(&self.fields())
    }

    /// The 32-byte message the authority signs: `BLAKE3-DK(DOCUMENT_CONTEXT, canonical_body)`.
    pub fn signing_message(&self) -> [u8; 32] {
        blake3::derive_key(DOCUMENT_CONTEXT, &self.canonical_body())
    }

    /// Signs (or re-signs) the document with the authority key.
    pub fn sign(&mut self, authority: &SigningKey) {
        self.signature = authority.sign(&self.signing_message());
    }

    /// Verifies everything, cheapest checks first and the per-node signatures last, so an
    /// unauthenticated document costs one signature check at most:
    ///
    /// version, geometry, layer count, freshness against `now_unix`, node count, per-node key
    /// count, authority signature; then per node: address, key list (ascending epochs, includes
    /// the issue epoch, every key of the geometry's scheme), assigned layer, no duplicate id /
    /// address / link key / Sphinx key; then every layer non-empty; then every self-signature.
    pub fn verify(&self, config: &VerifyConfig, now_unix: u64) -> Result<VerifiedTopology, TopologyError> {
        if self.version != VERSION {
            return Err(TopologyError::UnsupportedVersion(self.version));
        }
        if self.geometry != config.geometry.identifier() {
            return Err(TopologyError::GeometryMismatch);
        }
        let hops = config.geometry.hops();
        let layers = LayerCount::new(self.layers)
            .filter(|l| usize::from(l.get()) == hops)
            .ok_or(TopologyError::LayerCount { layers: self.layers, hops })?;
        let (issued_at, now) = (self.issued_at, now_unix);
        if issued_at > now.saturating_add(config.max_clock_skew.as_secs()) {
            return Err(TopologyError::IssuedInFuture { issued_at, now });
        }
        if now.saturating_sub(issued_at) > config.max_age.as_secs() {
            return Err(TopologyError::Expired { issued_at, now });
        }
        if self.nodes.is_empty() || self.nodes.len() > MAX_NODES {
            return Err(TopologyError::NodeCount(self.nodes.len()));
        }
        if let Some(n) = self.nodes.iter().find(|n| n.descriptor.sphinx_keys.len() > MAX_EPOCH_KEYS) {
            return Err(TopologyError::EpochKeys(n.node_id()));
        }
        let membership = match &config.trust {
            Trust::Authority(authority) => {
                authority
                    .verify_strict(&self.signing_message(), &self.signature)
                    .map_err(|_| TopologyError::BadDocumentSignature)?;
                None
            }
            Trust::Registry(membership) => Some(membership.as_ref()),
        };

        let issue_epoch = self.schedule.epoch_at(self.issued_at);
        let scheme = config.geometry.scheme();
        let mut seen = Seen::default();
        let mut kept = Vec::with_capacity(self.nodes.len());
        let mut rejected = Vec::new();
        let mut per_layer = vec![0usize; usize::from(layers.get())];
        for node in &self.nodes {
            let checked = match membership {
                None => seen.admit(node, layers, issue_epoch, scheme),
                Some(m) => m
                    .vouch(node)
                    .map_err(|reason| TopologyError::Unvouched { node: node.node_id(), reason })
                    .and_then(|()| node.verify_signature())
                    .and_then(|()| seen.admit(node, layers, issue_epoch, scheme)),
            };
            match checked {
                Ok(()) => {
                    per_layer[node.descriptor.layer.index()] += 1;
                    kept.push(node.clone());
                }
                Err(e) if membership.is_none() => return Err(e),
                Err(e) => rejected.push((node.node_id(), e)),
            }
        }
        if let Some(empty) = layers.iter().find(|l| per_layer[l.index()] == 0) {
            return Err(TopologyError::EmptyLayer(empty));
        }
        if membership.is_none() {
            for node in &kept {
                node.verify_signature()?;
            }
        }
        let mut document = self.clone();
        document.nodes = kept;
        let fingerprint = Fingerprint(fingerprint(&document.fields()));
        Ok(VerifiedTopology::new(document, config.geometry, layers, fingerprint, rejected))
    }
}

/// The per-node checks and the uniqueness sets across the nodes admitted so far.
#[derive(Default)]
struct Seen {
    ids: HashSet<nox_sphinx::NodeId>,
    addresses: HashSet<std::net::SocketAddr>,
    link_keys: HashSet<crate::LinkPublicKey>,
    sphinx_keys: HashSet<Vec<u8>>,
}

impl Seen {
    /// Address, key list (ascending epochs, includes the issue epoch, every key of `scheme`),
    /// assigned layer, and no duplicate id / address / link key / Sphinx key with a node
    /// admitted before. The sets change only if every check passes.
    fn admit(
        &mut self,
        node: &SignedDescriptor,
        layers: LayerCount,
        issue_epoch: u32,
        scheme: nox_sphinx::Scheme,
    ) -> Result<(), TopologyError> {
        let d = &node.descriptor;
        let id = node.node_id();
        check_address(&d.address)?;
        if let Some(websocket) = &d.websocket {
            check_address(websocket)?;
            if *websocket == d.address {
                return Err(TopologyError::InvalidAddress(websocket.to_string()));
            }
        }
        let keys = &d.sphinx_keys;
        if keys.is_empty() || keys.windows(2).any(|w| w[0].epoch >= w[1].epoch) {
            return Err(TopologyError::EpochKeys(id));
        }
        if d.sphinx_key(issue_epoch).is_none() {
            return Err(TopologyError::MissingEpochKey { node: id, epoch: issue_epoch });
        }
        crate::geometry::check_key_schemes(node, scheme)?;
        let computed = layers.assign(&id);
        if d.layer != computed {
            return Err(TopologyError::WrongLayer { node: id, claimed: d.layer, computed });
        }
        if self.ids.contains(&id) {
            return Err(TopologyError::DuplicateNodeId(id));
        }
        if self.addresses.contains(&d.address) || d.websocket.is_some_and(|w| self.addresses.contains(&w)) {
            return Err(TopologyError::DuplicateAddress(id));
        }
        if self.link_keys.contains(&d.link_key) {
            return Err(TopologyError::DuplicateLinkKey(id));
        }
        let mut own = HashSet::with_capacity(keys.len());
        if !keys.iter().all(|k| own.insert(k.key.as_bytes().to_vec()) && !self.sphinx_keys.contains(k.key.as_bytes())) {
            return Err(TopologyError::DuplicateSphinxKey(id));
        }
        self.ids.insert(id);
        self.addresses.insert(d.address);
        self.addresses.extend(d.websocket);
        self.link_keys.insert(d.link_key);
        self.sphinx_keys.extend(own);
        Ok(())
    }
}
