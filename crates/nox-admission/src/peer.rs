//! Who a peer is, and which subnet it belongs to, for limits keyed by IP address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The identity rate limits, bans and per-peer connection limits are keyed by.
///
/// IPv4: the full address. IPv6: the /64 prefix. A /64 is the smallest subnet an IPv6 host is
/// normally given (SLAAC, privacy addresses), so one machine — or one attacker — can rotate
/// through 2⁶⁴ addresses inside it at no cost; keying by the full address would make per-peer
/// limits meaningless. A /64 plays the role of one public IPv4 address (a household behind NAT).
/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, from dual-stack sockets) are IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeerKey {
    /// An IPv4 address.
    V4([u8; 4]),
    /// The upper 64 bits of an IPv6 address.
    V6Slash64([u8; 8]),
}

/// The prefix per-subnet connection limits are keyed by.
///
/// IPv4: the /24, the smallest prefix routed on the Internet (BGP filters drop longer ones), so
/// one network operator controls at least a /24. IPv6: the /48, for the same reason: it is the
/// smallest prefix routed in BGP and the standard allocation to one site (RIPE-690 recommends a
/// /48 per business and /56 per home), so 50 connections per /48 bounds one site or small hoster
/// the way 50 per /24 does in IPv4. A /64 would be far too fine (one site holds 65,536 of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SubnetKey {
    /// The first three bytes of an IPv4 address.
    V4Slash24([u8; 3]),
    /// The first six bytes of an IPv6 address.
    V6Slash48([u8; 6]),
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

impl PeerKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match canonical(ip) {
            IpAddr::V4(v4) => PeerKey::V4(v4.octets()),
            IpAddr::V6(v6) => PeerKey::V6Slash64(prefix::<8>(&v6)),
        }
    }
}

impl SubnetKey {
    /// The subnet of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match canonical(ip) {
            IpAddr::V4(v4) => SubnetKey::V4Slash24(prefix_v4(&v4)),
            IpAddr::V6(v6) => SubnetKey::V6Slash48(prefix::<6>(&v6)),
        }
    }
}

fn prefix<const N: usize>(address: &Ipv6Addr) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&address.octets()[..N]);
    out
}

fn prefix_v4(address: &Ipv4Addr) -> [u8; 3] {
    let octets = address.octets();
    [octets[0], octets[1], octets[2]]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("valid address")
    }

    #[test]
    fn ipv4_keys() {
        assert_eq!(PeerKey::of(ip("10.1.2.3")), PeerKey::V4([10, 1, 2, 3]));
        assert_eq!(SubnetKey::of(ip("10.1.2.3")), SubnetKey::of(ip("10.1.2.200")));
        assert_ne!(SubnetKey::of(ip("10.1.2.3")), SubnetKey::of(ip("10.1.3.3")));
    }

    #[test]
    fn mapped_ipv6_is_ipv4() {
        assert_eq!(PeerKey::of(ip("::ffff:10.1.2.3")), PeerKey::of(ip("10.1.2.3")));
        assert_eq!(SubnetKey::of(ip("::ffff:10.1.2.3")), SubnetKey::of(ip("10.1.2.9")));
    }

    #[test]
    fn ipv6_peers_are_slash_64_and_subnets_slash_48() {
        assert_eq!(PeerKey::of(ip("2001:db8:1:2::1")), PeerKey::of(ip("2001:db8:1:2:ffff::9")));
        assert_ne!(PeerKey::of(ip("2001:db8:1:2::1")), PeerKey::of(ip("2001:db8:1:3::1")));
        assert_eq!(SubnetKey::of(ip("2001:db8:1:2::1")), SubnetKey::of(ip("2001:db8:1:ff::1")));
        assert_ne!(SubnetKey::of(ip("2001:db8:1::1")), SubnetKey::of(ip("2001:db8:2::1")));
    }
}
