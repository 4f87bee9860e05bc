//! The node's connection gate (paper §4.9 (3) and (4)): per-address and
//! per-subnet connection limits and graduated bans from `nox-admission`,
//! applied by the link listener.
//!
//! Nodes of the topology are exempt from the per-address limits, and the
//! exemption is keyed on what the Noise handshake authenticated — the node's
//! static link key, which the listener has checked against the topology —
//! never on an address: a client on an address that also hosts a node (a
//! shared host, NAT, the testnet) is limited and banned like any other.
//!
//! - An address that hosts no topology node: limits and bans apply on
//!   accept, before any handshake work; a connection that then authenticates
//!   as a node gives its slot back.
//! - An address that hosts topology nodes: a node there must never be locked
//!   out by a client's behaviour, so on accept the connection only takes a
//!   *provisional* slot (bounded: a few per node at that address, plus the
//!   per-address limit); after the handshake a node is admitted, a client is
//!   checked against the bans and charged to the per-address and per-subnet
//!   limits like anyone else, or closed.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use nox_admission::{BanConfig, BanList, ConnectionLimits, ConnectionTracker};
use nox_link::{
    LinkPublicKey,
    transport::{ConnectionGate, GateStage},
};
use serde::Deserialize;

/// `[admission]`
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AdmissionSection {
    /// Open connections per client address (IPv4 address or IPv6 /64).
    pub max_connections_per_address: u32,
    /// Open connections per subnet (IPv4 /24 or IPv6 /48).
    pub max_connections_per_subnet: u32,
    /// Ban addresses whose handshakes fail (1 min, doubling up to 24 h),
    /// and clients that keep exceeding their penalized rate.
    pub ban_on_offence: bool,
    /// Packets per second from each topology node (the trusted tier).
    pub node_rate_pps: f64,
    /// Packets per second from each client address (the unknown tier).
    pub client_rate_pps: f64,
    /// Packets per second from a demoted peer (the penalized tier).
    pub penalized_rate_pps: f64,
    /// Bucket depth, in seconds of the tier's rate.
    pub rate_burst_s: f64,
    /// Entry nodes raise the proof of work required of client packets under
    /// load (base: `node.pow_difficulty`; +4, +8, +12 bits at 2×, 5×, 10× the
    /// expected rate) and announce it to their clients.
    pub adaptive_pow: bool,
    /// Client packets per second an entry node expects at normal load.
    pub expected_client_rate: f64,
}

impl Default for AdmissionSection {
    /// Rates per peer sized so that the testnet benchmark (~5,000 packets/s
    /// from one client through three entries) is never limited; reasoning in
    /// docs/design/admission.md.
    fn default() -> Self {
        Self {
            max_connections_per_address: 2,
            max_connections_per_subnet: 50,
            ban_on_offence: true,
            node_rate_pps: 50_000.0,
            client_rate_pps: 5_000.0,
            penalized_rate_pps: 1_250.0,
            rate_burst_s: 1.0,
            adaptive_pow: true,
            expected_client_rate: 2_000.0,
        }
    }
}

/// Handshakes in flight allowed per topology node at a node-hosting
/// address (a node dials each peer once; redials after a failure).
const HANDSHAKES_PER_NODE: u32 = 4;

/// Connection limits and bans behind the link listener.
#[derive(Debug)]
pub struct AdmissionGate {
    /// Addresses hosting topology nodes, and how many nodes each hosts.
    node_hosts: HashMap<IpAddr, u32>,
    max_per_address: u32,
    ban_on_offence: bool,
    connections: Mutex<ConnectionTracker>,
    bans: Mutex<BanList>,
    /// Provisional (not yet authenticated) connections per node-hosting address.
    provisional: Mutex<HashMap<IpAddr, u32>>,
}

impl AdmissionGate {
    /// A gate with `section`'s limits; `node_hosts` are the topology nodes'
    /// addresses (one entry per node; an address may repeat). They only defer
    /// the decision to after the handshake: they exempt nothing.
    pub fn new(section: &AdmissionSection, node_hosts: impl IntoIterator<Item = IpAddr>) -> Self {
        let limits = ConnectionLimits {
            max_per_peer: section.max_connections_per_address,
            max_per_subnet: section.max_connections_per_subnet,
            ..ConnectionLimits::default()
        };
        let mut hosts = HashMap::new();
        for ip in node_hosts {
            *hosts.entry(ip).or_insert(0u32) += 1;
        }
        Self {
            node_hosts: hosts,
            max_per_address: section.max_connections_per_address,
            ban_on_offence: section.ban_on_offence,
            connections: Mutex::new(ConnectionTracker::new(limits)),
            bans: Mutex::new(BanList::new(BanConfig::default())),
            provisional: Mutex::new(HashMap::new()),
        }
    }

    fn provisional_cap(&self, peer: IpAddr) -> Option<u32> {
        let nodes = self.node_hosts.get(&peer)?;
        Some(nodes.saturating_mul(HANDSHAKES_PER_NODE).saturating_add(self.max_per_address))
    }

    fn release_provisional(&self, peer: IpAddr) {
        let mut provisional = lock(&self.provisional);
        if let Some(open) = provisional.get_mut(&peer) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                provisional.remove(&peer);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ConnectionGate for AdmissionGate {
    fn admit(&self, peer: IpAddr) -> bool {
        if let Some(cap) = self.provisional_cap(peer) {
            let mut provisional = lock(&self.provisional);
            let open = provisional.entry(peer).or_insert(0);
            if *open >= cap {
                return false;
            }
            *open += 1;
            return true;
        }
        if lock(&self.bans).is_banned(peer, Instant::now()) {
            return false;
        }
        lock(&self.connections).try_open(peer).is_ok()
    }

    fn authenticated(&self, peer: IpAddr, node: Option<&LinkPublicKey>) -> bool {
        let provisional = self.node_hosts.contains_key(&peer);
        match (node, provisional) {
            // A node (its key checked against the topology by the listener):
            // exempt from the per-address limits, by identity.
            (Some(_), true) => self.release_provisional(peer),
            (Some(_), false) => {
                lock(&self.connections).close(peer);
            }
            // A client on a node-hosting address: the same rules as anywhere.
            (None, true) => {
                if lock(&self.bans).is_banned(peer, Instant::now()) || lock(&self.connections).try_open(peer).is_err() {
                    return false; // still provisional: `closed(Accepted)` releases it
                }
                self.release_provisional(peer);
            }
            (None, false) => {} // charged on accept already
        }
        true
    }

    fn offence(&self, peer: IpAddr) {
        // Recorded for every address: on a node-hosting one the ban is checked
        // after the handshake, for clients only.
        if self.ban_on_offence {
            lock(&self.bans).record_offence(peer, Instant::now());
        }
    }

    fn closed(&self, peer: IpAddr, stage: GateStage) {
        match stage {
            GateStage::Accepted if self.node_hosts.contains_key(&peer) => self.release_provisional(peer),
            GateStage::Accepted | GateStage::Client => {
                lock(&self.connections).close(peer);
            }
            GateStage::Node => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn section() -> AdmissionSection {
        AdmissionSection { max_connections_per_address: 2, max_connections_per_subnet: 3, ..Default::default() }
    }

    const NODE_KEY: LinkPublicKey = LinkPublicKey([7; 32]);

    #[test]
    fn limits_and_bans_on_addresses_without_nodes() {
        let gate = AdmissionGate::new(&section(), [ip("10.9.9.9")]);
        // Per address.
        assert!(gate.admit(ip("192.0.2.1")) && gate.admit(ip("192.0.2.1")));
        assert!(!gate.admit(ip("192.0.2.1")));
        gate.closed(ip("192.0.2.1"), GateStage::Accepted);
        assert!(gate.admit(ip("192.0.2.1")));
        // Per /24: two from .1 are open; one more address fills the subnet.
        assert!(gate.admit(ip("192.0.2.2")));
        assert!(!gate.admit(ip("192.0.2.3")));
        assert!(gate.admit(ip("198.51.100.7")));
        // An offence bans the address, even with its limits free.
        gate.offence(ip("203.0.113.5"));
        assert!(!gate.admit(ip("203.0.113.5")));
        // A node connecting from an ordinary address gives its slot back once authenticated.
        assert!(gate.admit(ip("198.51.100.8")) && gate.admit(ip("198.51.100.8")));
        assert!(gate.authenticated(ip("198.51.100.8"), Some(&NODE_KEY)));
        assert!(gate.authenticated(ip("198.51.100.8"), Some(&NODE_KEY)));
        assert!(gate.admit(ip("198.51.100.8")), "the nodes' links hold no per-address slot");
    }

    /// The exemption follows the authenticated node key, not the address: a client on a
    /// node's address is limited and banned; the nodes there are not.
    #[test]
    fn a_client_on_a_nodes_address_gets_no_exemption() {
        let host = ip("10.9.9.9");
        let gate = AdmissionGate::new(&section(), [host, host]);
        let client = |gate: &AdmissionGate| gate.admit(host) && gate.authenticated(host, None);
        // Two client links (the per-address limit), then refused after their handshake.
        assert!(client(&gate) && client(&gate));
        assert!(gate.admit(host), "provisional until the handshake tells");
        assert!(!gate.authenticated(host, None), "a third client link from the node's address");
        gate.closed(host, GateStage::Accepted);
        // Nodes at the same address are not limited by those clients...
        for _ in 0..10 {
            assert!(gate.admit(host) && gate.authenticated(host, Some(&NODE_KEY)));
        }
        // ...nor by bans earned by a client there; the client is banned.
        gate.closed(host, GateStage::Client);
        gate.offence(host);
        assert!(gate.admit(host) && gate.authenticated(host, Some(&NODE_KEY)));
        assert!(gate.admit(host));
        assert!(!gate.authenticated(host, None), "a banned address's clients are refused");
        gate.closed(host, GateStage::Accepted);
        // Handshakes in flight from a node-hosting address are bounded too: 2 nodes × 4 + 2.
        let pending = (0..100).take_while(|_| gate.admit(host)).count();
        assert_eq!(pending, 10);
    }
}
