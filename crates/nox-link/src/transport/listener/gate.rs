//! Who may connect and link: the topology's [`PeerFilter`] (asked once per handshake) and the
//! [`ConnectionGate`] an operator plugs in to admit or refuse connections per address, told how
//! far each connection got ([`GateStage`]).

use std::collections::HashSet;
use std::net::IpAddr;

use crate::keys::LinkPublicKey;

/// Which node keys may open links: the current topology. Called once per
/// handshake, after the initiator proved it holds the key.
pub trait PeerFilter: Send + Sync + 'static {
    /// Whether `key` belongs to a node of the current topology.
    fn allows(&self, key: &LinkPublicKey) -> bool;
}

impl PeerFilter for HashSet<LinkPublicKey> {
    fn allows(&self, key: &LinkPublicKey) -> bool {
        self.contains(key)
    }
}

impl<F: Fn(&LinkPublicKey) -> bool + Send + Sync + 'static> PeerFilter for F {
    fn allows(&self, key: &LinkPublicKey) -> bool {
        self(key)
    }
}

/// How far a connection got, as far as the [`ConnectionGate`] is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GateStage {
    /// Admitted on accept; not (or not yet) approved after its handshake.
    Accepted,
    /// Approved after the handshake as a node of the topology, authenticated by its static link
    /// key.
    Node,
    /// Approved after the handshake as an anonymous client.
    Client,
}

/// Decides which remote addresses may connect, and hears how they behave.
/// The node backs it with `nox-admission` (connection limits per address
/// and per subnet, graduated bans); the default admits everyone.
///
/// Each connection is seen as `admit` on accept, then, if its handshake
/// completes, `authenticated` with what the handshake proved, then `closed`
/// with the last stage the gate approved. An exemption for nodes belongs in
/// `authenticated` (keyed on the authenticated static key), never in `admit`
/// (which only knows an address, possibly shared with clients).
pub trait ConnectionGate: Send + Sync + 'static {
    /// Called on accept, before any handshake work; `false` closes the
    /// connection (counted as `rejected_by_gate`).
    fn admit(&self, peer: IpAddr) -> bool;
    /// The handshake completed: `node` is the authenticated static key of a
    /// node of the topology, `None` an anonymous client. `false` closes the
    /// link (counted as `rejected_by_gate`). The default approves.
    fn authenticated(&self, peer: IpAddr, node: Option<&LinkPublicKey>) -> bool {
        let _ = (peer, node);
        true
    }
    /// The peer failed or timed out its handshake, or presented a node key
    /// that is not in the topology.
    fn offence(&self, peer: IpAddr);
    /// An admitted connection ended; `stage` is the last stage the gate
    /// approved ([`GateStage::Accepted`] if `authenticated` was not called or
    /// refused).
    fn closed(&self, peer: IpAddr, stage: GateStage);
}

/// A gate that admits every address.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenGate;

impl ConnectionGate for OpenGate {
    fn admit(&self, _peer: IpAddr) -> bool {
        true
    }
    fn offence(&self, _peer: IpAddr) {}
    fn closed(&self, _peer: IpAddr, _stage: GateStage) {}
}
