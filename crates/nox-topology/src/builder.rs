//! Building and signing a document (the testnet's directory authority).

use core::time::Duration;

use ed25519_dalek::{Signature, SigningKey};
use nox_sphinx::Geometry;

use crate::descriptor::SignedDescriptor;
use crate::document::{TopologyDocument, VERSION, VerifyConfig};
use crate::error::TopologyError;
use crate::schedule::EpochSchedule;
use crate::verified::VerifiedTopology;

/// Collects self-signed descriptors and signs them into a document.
#[derive(Clone, Debug)]
pub struct DocumentBuilder {
    geometry: Geometry,
    schedule: EpochSchedule,
    nodes: Vec<SignedDescriptor>,
}

impl DocumentBuilder {
    /// A builder for a network with this geometry (`L` = its hop count) and schedule.
    pub fn new(geometry: Geometry, schedule: EpochSchedule) -> Self {
        Self { geometry, schedule, nodes: Vec::new() }
    }

    /// Adds a node.
    pub fn add_node(&mut self, node: SignedDescriptor) -> &mut Self {
        self.nodes.push(node);
        self
    }

    /// Signs the document as issued at `issued_at`, then verifies it exactly as a client would
    /// at that instant, so the builder never hands out a document clients would refuse. The
    /// signed document is [`VerifiedTopology::document`].
    pub fn sign(&self, authority: &SigningKey, issued_at: u64) -> Result<VerifiedTopology, TopologyError> {
        let hops = self.geometry.hops();
        let layers = u8::try_from(hops).map_err(|_| TopologyError::LayerCount { layers: u8::MAX, hops })?;
        let mut document = TopologyDocument {
            version: VERSION,
            geometry: self.geometry.identifier(),
            schedule: self.schedule,
            layers,
            issued_at,
            nodes: self.nodes.clone(),
            signature: Signature::from_bytes(&[0; 64]),
        };
        document.sign(authority);
        let config = VerifyConfig {
            trust: crate::Trust::Authority(authority.verifying_key()),
            geometry: self.geometry,
            max_age: Duration::ZERO,
            max_clock_skew: Duration::ZERO,
        };
        document.verify(&config, issued_at)
    }
}
