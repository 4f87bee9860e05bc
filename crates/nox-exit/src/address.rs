//! Which destination addresses an exit may connect to. Pure: no I/O.
//!
//! [`classify`] refuses every address that is not globally routable unicast, by a table of
//! special-purpose ranges (IANA special-purpose registries, RFC 6890 and successors). It does
//! not use the unstable `IpAddr::is_global`. [`AddressPolicy`] adds the operator's allow-list
//! (addresses or networks, optionally narrowed to one port) on top.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer};

/// Why an address is refused: the special-purpose class and the range it falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonGlobal {
    /// Human-readable class, e.g. `"private-use"`.
    pub class: &'static str,
    /// The refused range in CIDR notation, e.g. `"10.0.0.0/8"`.
    pub network: &'static str,
}

impl fmt::Display for NonGlobal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.class, self.network)
    }
}

struct V4Range {
    base: Ipv4Addr,
    prefix: u8,
    class: &'static str,
    network: &'static str,
}

struct V6Range {
    base: Ipv6Addr,
    prefix: u8,
    class: &'static str,
    network: &'static str,
}

const fn v4(base: Ipv4Addr, prefix: u8, class: &'static str, network: &'static str) -> V4Range {
    V4Range { base, prefix, class, network }
}

const fn v6(base: Ipv6Addr, prefix: u8, class: &'static str, network: &'static str) -> V6Range {
    V6Range { base, prefix, class, network }
}

/// Refused IPv4 ranges. More specific entries come first so that the reported class is the
/// most precise one (255.255.255.255 before 240.0.0.0/4).
const V4_REFUSED: &[V4Range] = &[
    v4(Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\"", "0.0.0.0/8"), // RFC 791, RFC 6890
    v4(Ipv4Addr::new(10, 0, 0, 0), 8, "private-use", "10.0.0.0/8"),    // RFC 1918
    v4(Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space (CGNAT)", "100.64.0.0/10"), // RFC 6598
    v4(Ipv4Addr::new(127, 0, 0, 0), 8, "loopback", "127.0.0.0/8"),     // RFC 1122
    v4(Ipv4Addr::new(169, 254, 0, 0), 16, "link-local", "169.254.0.0/16"), // RFC 3927
    v4(Ipv4Addr::new(172, 16, 0, 0), 12, "private-use", "172.16.0.0/12"), // RFC 1918
    v4(Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments", "192.0.0.0/24"), // RFC 6890
    v4(Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (TEST-NET-1)", "192.0.2.0/24"), // RFC 5737
    v4(Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast", "192.88.99.0/24"), // RFC 7526
    v4(Ipv4Addr::new(192, 168, 0, 0), 16, "private-use", "192.168.0.0/16"), // RFC 1918
    v4(Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking", "198.18.0.0/15"), // RFC 2544
    v4(Ipv4Addr::new(198, 51, 100, 0), 24, "documentation (TEST-NET-2)", "198.51.100.0/24"), // RFC 5737
    v4(Ipv4Addr::new(203, 0, 113, 0), 24, "documentation (TEST-NET-3)", "203.0.113.0/24"), // RFC 5737
    v4(Ipv4Addr::new(224, 0, 0, 0), 4, "multicast", "224.0.0.0/4"),    // RFC 5771
    v4(Ipv4Addr::new(255, 255, 255, 255), 32, "limited broadcast", "255.255.255.255/32"), // RFC 919
    v4(Ipv4Addr::new(240, 0, 0, 0), 4, "reserved", "240.0.0.0/4"),     // RFC 1112
];

/// Refused IPv6 ranges, most specific first. Everything outside 2000::/3 is refused afterwards.
const V6_REFUSED: &[V6Range] = &[
    v6(Ipv6Addr::UNSPECIFIED, 128, "unspecified", "::/128"), // RFC 4291
    v6(Ipv6Addr::LOCALHOST, 128, "loopback", "::1/128"),     // RFC 4291
    v6(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, "IPv4-mapped", "::ffff:0:0/96"), // RFC 4291
    v6(Ipv6Addr::UNSPECIFIED, 96, "IPv4-compatible (deprecated)", "::/96"), // RFC 4291
    v6(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, "NAT64 well-known prefix", "64:ff9b::/96"), // RFC 6052
    v6(Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "NAT64 local-use", "64:ff9b:1::/48"), // RFC 8215
    v6(Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "discard-only", "100::/64"), // RFC 6666
    v6(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "Teredo", "2001::/32"), // RFC 4380
    v6(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "IETF protocol assignments", "2001::/23"), // RFC 2928
    v6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation", "2001:db8::/32"), // RFC 3849
    v6(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4", "2002::/16"), // RFC 3056
    v6(Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation", "3fff::/20"), // RFC 9637
    v6(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "unique-local", "fc00::/7"), // RFC 4193
    v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local", "fe80::/10"), // RFC 4291
    v6(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local (deprecated)", "fec0::/10"), // RFC 3879
    v6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast", "ff00::/8"), // RFC 4291
];

/// The IPv6 global unicast range; anything outside it is refused.
const V6_GLOBAL_UNICAST: V6Range =
    v6(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3, "not global unicast", "outside 2000::/3");

fn v4_contains(range: &V4Range, addr: Ipv4Addr) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(range.prefix)).unwrap_or(0);
    (u32::from(addr) & mask) == (u32::from(range.base) & mask)
}

fn v6_contains(range: &V6Range, addr: Ipv6Addr) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(range.prefix)).unwrap_or(0);
    (u128::from(addr) & mask) == (u128::from(range.base) & mask)
}

/// `Ok(())` if `addr` is a globally routable unicast address, otherwise the refused class.
///
/// IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible (`::/96`) and NAT64 addresses are refused
/// outright, whatever IPv4 address they embed: a resolver has no business returning them and
/// they are a classic way to smuggle an internal IPv4 address past an IPv6 check.
pub fn classify(addr: IpAddr) -> Result<(), NonGlobal> {
    match addr {
        IpAddr::V4(a) => match V4_REFUSED.iter().find(|r| v4_contains(r, a)) {
            Some(r) => Err(NonGlobal { class: r.class, network: r.network }),
            None => Ok(()),
        },
        IpAddr::V6(a) => {
            if let Some(r) = V6_REFUSED.iter().find(|r| v6_contains(r, a)) {
                return Err(NonGlobal { class: r.class, network: r.network });
            }
            if !v6_contains(&V6_GLOBAL_UNICAST, a) {
                return Err(NonGlobal { class: V6_GLOBAL_UNICAST.class, network: V6_GLOBAL_UNICAST.network });
            }
            Ok(())
        }
    }
}

/// One operator allow-list entry: a network (or one address) and, optionally, one port.
///
/// Written as a string: `"127.0.0.1:8080"` or `"[::1]:8080"` (that address and port only),
/// `"127.0.0.1"` or `"10.0.0.0/8"` (every port of that address or network). An entry with a
/// port is the narrow form meant for tests and demos: it opens one service, not a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AllowEntry {
    /// The addresses admitted.
    pub net: IpNet,
    /// The one port admitted; `None` admits every port.
    pub port: Option<u16>,
}

/// An allow-list entry that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid exit allow-list entry {0:?}: expected an address with a port (\"127.0.0.1:8080\", \"[::1]:8080\"), an address or a network (\"10.0.0.0/8\")"
)]
pub struct AllowEntryError(pub String);

impl AllowEntry {
    /// Exactly `addr` (address and port).
    pub fn socket(addr: SocketAddr) -> Self {
        Self { net: IpNet::from(addr.ip()), port: Some(addr.port()) }
    }

    /// Does this entry admit `addr`?
    pub fn admits(&self, addr: SocketAddr) -> bool {
        self.net.contains(&addr.ip()) && self.port.is_none_or(|p| p == addr.port())
    }
}

impl FromStr for AllowEntry {
    type Err = AllowEntryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || AllowEntryError(s.to_owned());
        let text = s.trim();
        if let Ok(addr) = text.parse::<SocketAddr>() {
            if addr.port() == 0 {
                return Err(invalid());
            }
            return Ok(Self::socket(addr));
        }
        if let Ok(net) = text.parse::<IpNet>() {
            return Ok(Self { net: net.trunc(), port: None });
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Self { net: IpNet::from(ip), port: None });
        }
        Err(invalid())
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}", SocketAddr::new(self.net.addr(), port)),
            None => write!(f, "{}", self.net),
        }
    }
}

impl<'de> Deserialize<'de> for AllowEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// [`classify`] plus an operator allow-list of addresses (optionally with a port) that are
/// accepted although non-global.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allow: Vec<AllowEntry>,
}

impl AddressPolicy {
    /// A policy that accepts global addresses and whatever `allow` admits.
    pub fn new(allow: Vec<AllowEntry>) -> Self {
        Self { allow }
    }

    /// `Ok(())` if the exit may connect to `addr`.
    pub fn check(&self, addr: SocketAddr) -> Result<(), NonGlobal> {
        if self.allow.iter().any(|entry| entry.admits(addr)) {
            return Ok(());
        }
        classify(addr.ip())
    }

    /// Does an entry of the one-service form (address or network **with** a port) admit
    /// `addr`? Streams accept such a destination even on a port outside their `ports` list.
    pub fn admits_with_port(&self, addr: SocketAddr) -> bool {
        self.allow.iter().any(|entry| entry.port.is_some() && entry.admits(addr))
    }

    /// Does any entry name `port` explicitly? (If none does, no address can be admitted on a
    /// port outside the streams' `ports` list, and a name need not even be resolved.)
    pub fn names_port(&self, port: u16) -> bool {
        self.allow.iter().any(|entry| entry.port == Some(port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `network` strings are what clients read; they must match the ranges matched.
    #[test]
    fn table_labels_match_the_ranges() {
        for r in V4_REFUSED {
            let net: IpNet = r.network.parse().unwrap();
            assert_eq!((net.addr(), net.prefix_len()), (IpAddr::V4(r.base), r.prefix), "{}", r.network);
            assert_eq!(net.network(), IpAddr::V4(r.base), "{} base is the network address", r.network);
        }
        for r in V6_REFUSED.iter().chain([&V6_GLOBAL_UNICAST]) {
            let label = r.network.trim_start_matches("outside ");
            let net: IpNet = label.parse().unwrap();
            assert_eq!((net.addr(), net.prefix_len()), (IpAddr::V6(r.base), r.prefix), "{}", r.network);
            assert_eq!(net.network(), IpAddr::V6(r.base), "{} base is the network address", r.network);
        }
    }
}
