//! Membership vouched for by something other than the directory: in practice the on-chain node
//! registry (docs/spec/registry.md). With [`crate::Trust::Registry`], a topology document is
//! only a cache of self-signed descriptors: a node is used only if the membership lists its
//! identity key with the same link key and link address, and nothing depends on who served or
//! signed the document.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::descriptor::SignedDescriptor;

/// One member as the registry lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The Ed25519 identity key the registry holds for the node (its node id is the hash).
    pub identity_key: [u8; 32],
    /// The X25519 link key the registry holds.
    pub link_key: [u8; 32],
    /// The link address the registry holds (`ip:port`).
    pub address: SocketAddr,
    /// The operator account (an Ethereum address) that signs the node's epoch-key statements.
    pub operator: [u8; 20],
}

/// Checks a descriptor's operator statements against its member (supplied by the chain layer,
/// which holds the signature scheme and the registry's signing domain).
pub type StatementCheck = Arc<dyn Fn(&Member, &SignedDescriptor) -> Result<(), Unvouched> + Send + Sync>;

/// Why a descriptor is not vouched for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unvouched {
    /// The registry lists no node with this identity key.
    #[error("its identity key is not registered")]
    NotRegistered,
    /// The registry lists another link key for this identity.
    #[error("its link key differs from the registered one")]
    LinkKeyDiffers,
    /// The registry lists another link address for this identity.
    #[error("its link address differs from the registered one")]
    AddressDiffers,
    /// A listed Sphinx key has no valid statement from the registered operator.
    #[error("its key for epoch {0} has no valid statement from the registered operator")]
    OperatorStatement(u32),
}

/// The set of members at one point of the registry's history.
#[derive(Clone, Default)]
pub struct Membership {
    members: HashMap<[u8; 32], Member>,
    statements: Option<StatementCheck>,
}

impl core::fmt::Debug for Membership {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Membership")
            .field("members", &self.members.len())
            .field("checks_statements", &self.statements.is_some())
            .finish()
    }
}

impl Membership {
    /// A membership of these members. A later member with the same identity key replaces an
    /// earlier one (the registry never lists one identity twice).
    pub fn new(members: impl IntoIterator<Item = Member>) -> Self {
        Self { members: members.into_iter().map(|m| (m.identity_key, m)).collect(), statements: None }
    }

    /// Also require every listed Sphinx key to carry a statement that `check` accepts.
    pub fn with_statement_check(mut self, check: StatementCheck) -> Self {
        self.statements = Some(check);
        self
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// No members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member with this identity key.
    pub fn get(&self, identity_key: &[u8; 32]) -> Option<&Member> {
        self.members.get(identity_key)
    }

    /// Does the membership vouch for this descriptor's identity, link key and address (and,
    /// with a statement check, its keys)?
    pub fn vouch(&self, signed: &SignedDescriptor) -> Result<(), Unvouched> {
        let descriptor = &signed.descriptor;
        let member = self.members.get(&descriptor.identity_key.to_bytes()).ok_or(Unvouched::NotRegistered)?;
        if member.link_key != descriptor.link_key.to_bytes() {
            return Err(Unvouched::LinkKeyDiffers);
        }
        if member.address != descriptor.address {
            return Err(Unvouched::AddressDiffers);
        }
        match &self.statements {
            Some(check) => check(member, signed),
            None => Ok(()),
        }
    }
}
