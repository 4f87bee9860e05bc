//! The node's connection gate (paper §4.9 (3) and (4)): per-address and
//! per-subnet connection limits and graduated bans from `nox-admission`,
//! applied by the link listener on accept, before any handshake work.
//! Addresses of topology nodes are exempt: they are authenticated by their
//! link keys, and on a shared host (the testnet) every node has the same IP.

use std::{
    collections::HashSet,
    net::IpAddr,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use nox_admission::{BanConfig, BanList, ConnectionLimits, ConnectionTracker};
use nox_link::transport::ConnectionGate;
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

/// Connection limits and bans behind the link listener.
#[derive(Debug)]
pub struct AdmissionGate {
    exempt: HashSet<IpAddr>,
    ban_on_offence: bool,
    connections: Mutex<ConnectionTracker>,
    bans: Mutex<BanList>,
    /// Exempt connections currently open, so `closed` knows not to count them.
    exempt_open: Mutex<u64>,
}

impl AdmissionGate {
    /// A gate with `section`'s limits; `exempt` are the topology nodes' IPs.
    pub fn new(section: &AdmissionSection, exempt: HashSet<IpAddr>) -> Self {
        let limits = ConnectionLimits {
            max_per_peer: section.max_connections_per_address,
            max_per_subnet: section.max_connections_per_subnet,
            ..ConnectionLimits::default()
        };
        Self {
            exempt,
            ban_on_offence: section.ban_on_offence,
            connections: Mutex::new(ConnectionTracker::new(limits)),
            bans: Mutex::new(BanList::new(BanConfig::default())),
            exempt_open: Mutex::new(0),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ConnectionGate for AdmissionGate {
    fn admit(&self, peer: IpAddr) -> bool {
        if self.exempt.contains(&peer) {
            *lock(&self.exempt_open) += 1;
            return true;
        }
        if lock(&self.bans).is_banned(peer, Instant::now()) {
            return false;
        }
        lock(&self.connections).try_open(peer).is_ok()
    }

    fn offence(&self, peer: IpAddr) {
        if self.ban_on_offence && !self.exempt.contains(&peer) {
            lock(&self.bans).record_offence(peer, Instant::now());
        }
    }

    fn closed(&self, peer: IpAddr) {
        if self.exempt.contains(&peer) {
            let mut open = lock(&self.exempt_open);
            *open = open.saturating_sub(1);
        } else {
            lock(&self.connections).close(peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn limits_bans_and_exemptions() {
        let section =
            AdmissionSection { max_connections_per_address: 2, max_connections_per_subnet: 3, ..Default::default() };
        let gate = AdmissionGate::new(&section, [ip("10.9.9.9")].into());
        // Per address.
        assert!(gate.admit(ip("192.0.2.1")) && gate.admit(ip("192.0.2.1")));
        assert!(!gate.admit(ip("192.0.2.1")));
        gate.closed(ip("192.0.2.1"));
        assert!(gate.admit(ip("192.0.2.1")));
        // Per /24: two from .1 are open; one more address fills the subnet.
        assert!(gate.admit(ip("192.0.2.2")));
        assert!(!gate.admit(ip("192.0.2.3")));
        assert!(gate.admit(ip("198.51.100.7")));
        // Exempt topology addresses are never limited.
        assert!((0..10).all(|_| gate.admit(ip("10.9.9.9"))));
        // An offence bans the address, even with its limits free.
        gate.offence(ip("203.0.113.5"));
        assert!(!gate.admit(ip("203.0.113.5")));
        gate.offence(ip("10.9.9.9"));
        assert!(gate.admit(ip("10.9.9.9")));
    }
}
