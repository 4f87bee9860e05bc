//! Connection limits (paper §4.9): at most 2 per peer and 50 per /24 (IPv6: per /64 peer and
//! per /48 subnet, see [`crate::PeerKey`] and [`crate::SubnetKey`]), plus a global cap.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::peer::{PeerKey, SubnetKey};

/// Limits enforced by a [`ConnectionTracker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections per peer.
    pub max_per_peer: u32,
    /// Open connections per subnet.
    pub max_per_subnet: u32,
    /// Open connections in total. This also bounds the tracker's memory: it only holds
    /// entries for peers with an open connection.
    pub max_total: u32,
}

impl Default for ConnectionLimits {
    /// 2 per peer, 50 per subnet (paper §4.9), 10,000 in total.
    fn default() -> Self {
        Self { max_per_peer: 2, max_per_subnet: 50, max_total: 10_000 }
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionRefused {
    /// The peer already has `max_per_peer` connections.
    #[error("too many connections from this peer")]
    PeerLimit,
    /// The peer's subnet already has `max_per_subnet` connections.
    #[error("too many connections from this subnet")]
    SubnetLimit,
    /// The node already has `max_total` connections.
    #[error("too many connections in total")]
    TotalLimit,
    /// The peer is banned (from [`crate::AdmissionPolicy`]).
    #[error("peer is banned")]
    Banned,
}

/// Counts open connections per peer and per subnet.
#[derive(Debug, Clone, Default)]
pub struct ConnectionTracker {
    limits: ConnectionLimits,
    per_peer: BTreeMap<PeerKey, u32>,
    per_subnet: BTreeMap<SubnetKey, u32>,
    total: u32,
}

impl ConnectionTracker {
    /// An empty tracker.
    pub fn new(limits: ConnectionLimits) -> Self {
        Self { limits, ..Self::default() }
    }

    /// Admits a new connection from `ip` and counts it, or refuses it.
    pub fn try_open(&mut self, ip: IpAddr) -> Result<(), ConnectionRefused> {
        let (peer, subnet) = (PeerKey::of(ip), SubnetKey::of(ip));
        if self.total >= self.limits.max_total {
            return Err(ConnectionRefused::TotalLimit);
        }
        if self.per_peer.get(&peer).copied().unwrap_or(0) >= self.limits.max_per_peer {
            return Err(ConnectionRefused::PeerLimit);
        }
        if self.per_subnet.get(&subnet).copied().unwrap_or(0) >= self.limits.max_per_subnet {
            return Err(ConnectionRefused::SubnetLimit);
        }
        *self.per_peer.entry(peer).or_insert(0) += 1;
        *self.per_subnet.entry(subnet).or_insert(0) += 1;
        self.total += 1;
        Ok(())
    }

    /// Forgets one open connection from `ip`. Returns false (and changes nothing) if none was
    /// counted.
    pub fn close(&mut self, ip: IpAddr) -> bool {
        let (peer, subnet) = (PeerKey::of(ip), SubnetKey::of(ip));
        if !self.per_peer.contains_key(&peer) {
            return false;
        }
        decrement(&mut self.per_peer, peer);
        decrement(&mut self.per_subnet, subnet);
        self.total = self.total.saturating_sub(1);
        true
    }

    /// Open connections from `ip`'s peer key.
    pub fn open_for_peer(&self, ip: IpAddr) -> u32 {
        self.per_peer.get(&PeerKey::of(ip)).copied().unwrap_or(0)
    }

    /// Open connections from `ip`'s subnet.
    pub fn open_for_subnet(&self, ip: IpAddr) -> u32 {
        self.per_subnet.get(&SubnetKey::of(ip)).copied().unwrap_or(0)
    }

    /// Open connections in total.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// Number of peer and subnet entries held (bounded by `2 × max_total`).
    pub fn tracked_entries(&self) -> usize {
        self.per_peer.len() + self.per_subnet.len()
    }
}

fn decrement<K: Ord>(map: &mut BTreeMap<K, u32>, key: K) {
    if let Some(count) = map.get_mut(&key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            map.remove(&key);
        }
    }
}
