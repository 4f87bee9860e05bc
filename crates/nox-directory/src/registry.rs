//! The authority's state, without I/O: which identities are admitted, the descriptor each
//! node last had accepted, the acceptance rules for an upload and the assembly of the signed
//! document. Every time-dependent call takes the current unix second (docs/spec/directory.md §3).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use nox_sphinx::{Geometry, NodeId};
use nox_topology::{
    DocumentBuilder, EpochSchedule, Layer, LayerCount, MAX_EPOCH_KEYS, SignedDescriptor, SigningKey, TopologyDocument,
    TopologyError, VerifiedTopology, VerifyConfig, VerifyingKey, check_address,
};

/// Why an upload was refused. Each is a client error (HTTP 4xx).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The identity key is not in the admitted set.
    #[error("identity key {0} is not admitted")]
    UnknownIdentity(String),
    /// The self-signature does not verify.
    #[error("the descriptor's self-signature does not verify")]
    BadSignature,
    /// The stated layer is not the one assigned to the node id.
    #[error("layer {claimed} is not the assigned layer {assigned}")]
    WrongLayer {
        /// What the descriptor says.
        claimed: u8,
        /// What the node id gives.
        assigned: u8,
    },
    /// A pinned field (link key or address) differs from the admitted descriptor.
    #[error("{0} differs from the admitted descriptor (pinned; re-admission needed)")]
    Changed(&'static str),
    /// The address is unusable.
    #[error("unusable address: {0}")]
    Address(String),
    /// The key list is empty, too long or not in strictly ascending epochs.
    #[error("the key list must hold 1 to {MAX_EPOCH_KEYS} keys in strictly ascending epochs")]
    KeyList,
    /// A key of an epoch whose secret must already be erased.
    #[error("epoch {0} is expired")]
    StaleEpoch(u32),
    /// A key further ahead than `current + publish_ahead`.
    #[error("epoch {epoch} is beyond the publication horizon {horizon}")]
    TooFarAhead {
        /// The offending epoch.
        epoch: u32,
        /// `current + publish_ahead`.
        horizon: u32,
    },
    /// No key for the current epoch.
    #[error("no key for the current epoch {0}")]
    MissingCurrentEpoch(u32),
    /// A new key for an epoch that has already begun.
    #[error("a new key for epoch {0}, which has begun: keys are only added for future epochs")]
    AddedForPast(u32),
    /// A different key for an epoch already published.
    #[error("the key of epoch {0} differs from the published one")]
    KeyChanged(u32),
    /// A still-valid published key is missing (an old descriptor replayed?).
    #[error("the still-valid key of epoch {0} is missing")]
    KeyWithdrawn(u32),
    /// Accepting it would make a document that clients refuse (e.g. a Sphinx key reused).
    #[error("the resulting document does not verify: {0}")]
    Document(TopologyError),
}

impl Refusal {
    /// A short stable label, for counters.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownIdentity(_) => "unknown_identity",
            Self::BadSignature => "bad_signature",
            Self::WrongLayer { .. } => "wrong_layer",
            Self::Changed(_) => "changed",
            Self::Address(_) => "address",
            Self::KeyList => "key_list",
            Self::StaleEpoch(_) => "stale_epoch",
            Self::TooFarAhead { .. } => "too_far_ahead",
            Self::MissingCurrentEpoch(_) => "missing_current_epoch",
            Self::AddedForPast(_) => "added_for_past",
            Self::KeyChanged(_) => "key_changed",
            Self::KeyWithdrawn(_) => "key_withdrawn",
            Self::Document(_) => "document",
        }
    }
}

/// What an accepted upload changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// The descriptor was already the accepted one (nothing re-signed).
    Unchanged,
    /// The descriptor replaced the node's previous one; a new document was issued.
    Updated {
        /// `issued_at` of the new document.
        issued_at: u64,
    },
    /// A directory that started empty kept the descriptor, but has no document yet: some
    /// layers still have no node (with a key for the current epoch).
    Waiting {
        /// How many layers are still empty.
        empty_layers: u8,
    },
}

/// The directory authority's registry.
#[derive(Debug)]
pub struct Registry {
    authority: SigningKey,
    geometry: Geometry,
    schedule: EpochSchedule,
    layers: LayerCount,
    admitted: BTreeSet<[u8; 32]>,
    /// The last accepted descriptor of each node.
    nodes: BTreeMap<NodeId, SignedDescriptor>,
    reissue_secs: u64,
    current: Option<VerifiedTopology>,
}

impl Registry {
    /// A registry seeded with an authority-signed document: its parameters become the
    /// network's, its descriptors the accepted ones (pinning each node's link key and address).
    /// `admitted` defaults to the identities in the document. The document is verified at its
    /// own issue time (so a restart with an old document works) and served until re-issued.
    pub fn from_document(
        authority: SigningKey,
        geometry: Geometry,
        initial: &TopologyDocument,
        admitted: Option<Vec<VerifyingKey>>,
        reissue_secs: u64,
    ) -> Result<Self, TopologyError> {
        let config = VerifyConfig::new(authority.verifying_key(), geometry);
        let verified = initial.verify(&config, initial.issued_at)?;
        let nodes: BTreeMap<NodeId, SignedDescriptor> =
            initial.nodes.iter().map(|n| (n.node_id(), n.clone())).collect();
        let admitted = match admitted {
            Some(keys) => keys.iter().map(|k| k.to_bytes()).collect(),
            None => initial.nodes.iter().map(|n| n.descriptor.identity_key.to_bytes()).collect(),
        };
        Ok(Self {
            authority,
            geometry,
            schedule: initial.schedule,
            layers: verified.layers(),
            admitted,
            nodes,
            reissue_secs: reissue_secs.max(1),
            current: Some(verified),
        })
    }

    /// A registry with no document yet (a network started without an initial document): the
    /// schedule and layer count are given, the `admitted` identities' uploads are kept, and the
    /// first document is signed by the upload (or [`Registry::refresh`]) that leaves no layer
    /// empty. Until then [`Registry::current`] is `None` ([`Registry::waiting`] says why).
    pub fn empty(
        authority: SigningKey,
        geometry: Geometry,
        schedule: EpochSchedule,
        layers: LayerCount,
        admitted: Vec<VerifyingKey>,
        reissue_secs: u64,
    ) -> Self {
        Self {
            authority,
            geometry,
            schedule,
            layers,
            admitted: admitted.iter().map(|k| k.to_bytes()).collect(),
            nodes: BTreeMap::new(),
            reissue_secs: reissue_secs.max(1),
            current: None,
        }
    }

    /// The network's geometry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The network's layer count.
    pub fn layers(&self) -> LayerCount {
        self.layers
    }

    /// The layers that no accepted node with a key for the epoch of `now` serves.
    pub fn empty_layers(&self, now: u64) -> Vec<Layer> {
        let epoch = self.schedule.epoch_at(now);
        let mut served = vec![false; usize::from(self.layers.get())];
        for node in self.nodes.values().filter(|n| n.descriptor.sphinx_key(epoch).is_some()) {
            if let Some(slot) = served.get_mut(node.descriptor.layer.index()) {
                *slot = true;
            }
        }
        self.layers.iter().filter(|l| !served[l.index()]).collect()
    }

    /// Why there is no document yet at `now` (`None` once there is one): the empty layers and
    /// how many admitted identities have uploaded. The text of the directory's 503.
    pub fn waiting(&self, now: u64) -> Option<String> {
        if self.current.is_some() {
            return None;
        }
        let empty: Vec<String> = self.empty_layers(now).iter().map(|l| l.0.to_string()).collect();
        Some(format!(
            "{}: the network starts when every layer has an admitted node's descriptor; {} of {} layers have none (layer {}); {} of {} admitted identities have uploaded",
            crate::client::NO_DOCUMENT_YET,
            empty.len(),
            self.layers.get(),
            empty.join(", "),
            self.nodes.len(),
            self.admitted.len(),
        ))
    }

    /// The network's epoch schedule.
    pub fn schedule(&self) -> &EpochSchedule {
        &self.schedule
    }

    /// The document currently served, if any.
    pub fn current(&self) -> Option<&VerifiedTopology> {
        self.current.as_ref()
    }

    /// Checks an upload against the rules of docs/spec/directory.md §3 at `now` and, if it
    /// passes, makes it the node's descriptor and issues a new document (`issued_at = now`).
    /// A refused upload changes nothing.
    pub fn submit(&mut self, upload: SignedDescriptor, now: u64) -> Result<Accepted, Refusal> {
        let d = &upload.descriptor;
        if !self.admitted.contains(d.identity_key.as_bytes()) {
            return Err(Refusal::UnknownIdentity(hex::encode(d.identity_key.as_bytes())));
        }
        upload.verify_signature().map_err(|_| Refusal::BadSignature)?;
        let id = upload.node_id();
        let assigned = self.layers.assign(&id);
        if d.layer != assigned {
            return Err(Refusal::WrongLayer { claimed: d.layer.0, assigned: assigned.0 });
        }
        check_address(&d.address).map_err(|_| Refusal::Address(d.address.to_string()))?;
        let previous = self.nodes.get(&id);
        if let Some(p) = previous {
            if p.descriptor.link_key != d.link_key {
                return Err(Refusal::Changed("link key"));
            }
            if p.descriptor.address != d.address {
                return Err(Refusal::Changed("address"));
            }
        }
        self.check_keys(&upload, previous, now)?;
        if previous == Some(&upload) {
            return Ok(Accepted::Unchanged);
        }
        let replaced = self.nodes.insert(id, upload);
        if self.current.is_none() {
            let empty = self.empty_layers(now).len();
            if empty > 0 {
                return Ok(Accepted::Waiting { empty_layers: u8::try_from(empty).unwrap_or(u8::MAX) });
            }
        }
        match self.issue(now) {
            Ok(issued_at) => Ok(Accepted::Updated { issued_at }),
            Err(error) => {
                match replaced {
                    Some(old) => self.nodes.insert(id, old),
                    None => self.nodes.remove(&id),
                };
                Err(Refusal::Document(error))
            }
        }
    }

    fn check_keys(
        &self,
        upload: &SignedDescriptor,
        previous: Option<&SignedDescriptor>,
        now: u64,
    ) -> Result<(), Refusal> {
        let keys = &upload.descriptor.sphinx_keys;
        if keys.is_empty() || keys.len() > MAX_EPOCH_KEYS || keys.windows(2).any(|w| w[0].epoch >= w[1].epoch) {
            return Err(Refusal::KeyList);
        }
        let current = self.schedule.epoch_at(now);
        let horizon = current.saturating_add(self.schedule.publish_ahead());
        for k in keys {
            if self.schedule.is_expired(k.epoch, now) {
                return Err(Refusal::StaleEpoch(k.epoch));
            }
            if k.epoch > horizon {
                return Err(Refusal::TooFarAhead { epoch: k.epoch, horizon });
            }
        }
        if upload.descriptor.sphinx_key(current).is_none() {
            return Err(Refusal::MissingCurrentEpoch(current));
        }
        let Some(previous) = previous else { return Ok(()) };
        let published: HashMap<u32, _> = previous.descriptor.sphinx_keys.iter().map(|k| (k.epoch, &k.key)).collect();
        for k in keys {
            match published.get(&k.epoch) {
                Some(key) if **key != k.key => return Err(Refusal::KeyChanged(k.epoch)),
                Some(_) => {}
                None if k.epoch < current => return Err(Refusal::AddedForPast(k.epoch)),
                None => {}
            }
        }
        if let Some(gone) =
            previous.descriptor.sphinx_keys.iter().find(|old| {
                !self.schedule.is_expired(old.epoch, now) && upload.descriptor.sphinx_key(old.epoch).is_none()
            })
        {
            return Err(Refusal::KeyWithdrawn(gone.epoch));
        }
        Ok(())
    }

    /// Replaces the admitted identities (e.g. with the node registry's members). Nodes no longer
    /// admitted leave the served document at once (re-issued at `now`); newly admitted ones are
    /// accepted on their first upload. Returns whether the admitted set changed. If the
    /// document cannot be re-issued (a layer would be empty), the previous document stays
    /// served and the error is returned; the new admitted set holds either way.
    pub fn set_admitted(
        &mut self,
        admitted: impl IntoIterator<Item = [u8; 32]>,
        now: u64,
    ) -> Result<bool, TopologyError> {
        let admitted: BTreeSet<[u8; 32]> = admitted.into_iter().collect();
        if admitted == self.admitted {
            return Ok(false);
        }
        self.admitted = admitted;
        let before = self.nodes.len();
        self.nodes.retain(|_, n| self.admitted.contains(n.descriptor.identity_key.as_bytes()));
        if self.nodes.len() != before && self.current.is_some() {
            self.issue(now)?;
        }
        Ok(true)
    }

    /// Re-issues the document if it is due at `now`: when the epoch changed since the last
    /// issue, or `reissue_secs` after it. Nodes without a key for the
    /// current epoch are left out. On failure (e.g. a layer would be empty) the previous
    /// document stays current and the error is returned.
    pub fn refresh(&mut self, now: u64) -> Result<bool, TopologyError> {
        let due = match &self.current {
            // An empty start: the first document as soon as no layer is empty.
            None => self.empty_layers(now).is_empty(),
            Some(c) => {
                self.schedule.epoch_at(c.issued_at()) != self.schedule.epoch_at(now)
                    || now.saturating_sub(c.issued_at()) >= self.reissue_secs
            }
        };
        if !due {
            return Ok(false);
        }
        self.issue(now)?;
        Ok(true)
    }

    /// Assembles and signs a document issued at `now`; it becomes current on success.
    fn issue(&mut self, now: u64) -> Result<u64, TopologyError> {
        let epoch = self.schedule.epoch_at(now);
        let mut builder = DocumentBuilder::new(self.geometry, self.schedule);
        for node in self.nodes.values().filter(|n| n.descriptor.sphinx_key(epoch).is_some()) {
            builder.add_node(node.clone());
        }
        let verified = builder.sign(&self.authority, now)?;
        self.current = Some(verified);
        Ok(now)
    }
}
