//! Address classification: every refused class, the boundaries just outside each range, and
//! IPv6 embeddings of IPv4 addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nox_exit::{AddressPolicy, AllowEntry, classify};
use proptest::prelude::*;

/// (class, network, addresses inside, addresses just outside and global)
const CASES: &[(&str, &str, &[&str], &[&str])] = &[
    ("\"this network\"", "0.0.0.0/8", &["0.0.0.0", "0.1.2.3", "0.255.255.255"], &["1.0.0.0"]),
    ("private-use", "10.0.0.0/8", &["10.0.0.0", "10.0.0.1", "10.255.255.255"], &["9.255.255.255", "11.0.0.0"]),
    (
        "shared address space (CGNAT)",
        "100.64.0.0/10",
        &["100.64.0.0", "100.127.255.255"],
        &["100.63.255.255", "100.128.0.0"],
    ),
    ("loopback", "127.0.0.0/8", &["127.0.0.1", "127.255.255.255"], &["126.255.255.255", "128.0.0.0"]),
    ("link-local", "169.254.0.0/16", &["169.254.0.0", "169.254.169.254"], &["169.253.255.255", "169.255.0.0"]),
    ("private-use", "172.16.0.0/12", &["172.16.0.0", "172.31.255.255"], &["172.15.255.255", "172.32.0.0"]),
    ("IETF protocol assignments", "192.0.0.0/24", &["192.0.0.0", "192.0.0.255"], &["191.255.255.255", "192.0.1.0"]),
    ("documentation (TEST-NET-1)", "192.0.2.0/24", &["192.0.2.0", "192.0.2.255"], &["192.0.1.255", "192.0.3.0"]),
    ("6to4 relay anycast", "192.88.99.0/24", &["192.88.99.1"], &["192.88.98.255", "192.88.100.0"]),
    ("private-use", "192.168.0.0/16", &["192.168.0.0", "192.168.255.255"], &["192.167.255.255", "192.169.0.0"]),
    ("benchmarking", "198.18.0.0/15", &["198.18.0.0", "198.19.255.255"], &["198.17.255.255", "198.20.0.0"]),
    ("documentation (TEST-NET-2)", "198.51.100.0/24", &["198.51.100.7"], &["198.51.99.255", "198.51.101.0"]),
    ("documentation (TEST-NET-3)", "203.0.113.0/24", &["203.0.113.9"], &["203.0.112.255", "203.0.114.0"]),
    ("multicast", "224.0.0.0/4", &["224.0.0.0", "239.255.255.255"], &["223.255.255.255"]),
    ("reserved", "240.0.0.0/4", &["240.0.0.0", "255.255.255.254"], &[]),
    ("limited broadcast", "255.255.255.255/32", &["255.255.255.255"], &[]),
    ("unspecified", "::/128", &["::"], &[]),
    ("loopback", "::1/128", &["::1"], &[]),
    ("IPv4-mapped", "::ffff:0:0/96", &["::ffff:127.0.0.1", "::ffff:8.8.8.8", "::ffff:0:0"], &[]),
    ("IPv4-compatible (deprecated)", "::/96", &["::2", "::127.0.0.1", "::8.8.8.8"], &[]),
    ("NAT64 well-known prefix", "64:ff9b::/96", &["64:ff9b::a00:1", "64:ff9b::808:808"], &[]),
    ("NAT64 local-use", "64:ff9b:1::/48", &["64:ff9b:1::1", "64:ff9b:1:ffff::1"], &[]),
    ("discard-only", "100::/64", &["100::", "100::ffff:ffff:ffff:ffff"], &[]),
    ("Teredo", "2001::/32", &["2001::", "2001:0:ffff::1"], &["2000:ffff:ffff:ffff::"]),
    ("IETF protocol assignments", "2001::/23", &["2001:1::1", "2001:2::", "2001:1ff:ffff::1"], &["2001:200::"]),
    ("documentation", "2001:db8::/32", &["2001:db8::", "2001:db8:ffff::1"], &["2001:db7:ffff::1", "2001:db9::"]),
    ("6to4", "2002::/16", &["2002::", "2002:7f00:1::"], &["2001:ffff:ffff::", "2003::"]),
    ("documentation", "3fff::/20", &["3fff::", "3fff:fff::1"], &["3ffe:ffff::1", "3fff:1000::"]),
    ("unique-local", "fc00::/7", &["fc00::", "fdff:ffff::1"], &[]),
    ("link-local", "fe80::/10", &["fe80::1", "febf:ffff::1"], &[]),
    ("site-local (deprecated)", "fec0::/10", &["fec0::1", "feff:ffff::1"], &[]),
    ("multicast", "ff00::/8", &["ff02::1", "ffff:ffff::1"], &[]),
    (
        "not global unicast",
        "outside 2000::/3",
        &["1fff:ffff::1", "4000::", "8000::1", "fb00::"],
        &["2000::", "3ffe::1"],
    ),
];

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn every_class_is_refused_and_boundaries_are_global() {
    for (class, network, inside, outside) in CASES {
        for addr in *inside {
            let refusal = classify(ip(addr)).expect_err(addr);
            assert_eq!((refusal.class, refusal.network), (*class, *network), "{addr}");
        }
        for addr in *outside {
            assert_eq!(classify(ip(addr)), Ok(()), "{addr} is just outside {network}");
        }
    }
}

#[test]
fn ordinary_global_addresses_pass() {
    for addr in ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001::200e", "192.0.1.1"] {
        assert_eq!(classify(ip(addr)), Ok(()), "{addr}");
    }
}

#[test]
fn refusal_display_names_class_and_network() {
    assert_eq!(classify(ip("10.0.0.1")).unwrap_err().to_string(), "private-use 10.0.0.0/8");
}

fn sock(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn allow_list_overrides_only_its_networks() {
    let policy = AddressPolicy::new(vec!["127.0.0.0/8".parse::<AllowEntry>().unwrap()]);
    assert_eq!(policy.check(sock("127.0.0.1:80")), Ok(()));
    assert_eq!(policy.check(sock("127.0.0.1:9100")), Ok(()), "a network entry admits every port");
    assert_eq!(policy.check(sock("10.0.0.1:80")).unwrap_err().network, "10.0.0.0/8");
    // The IPv4 allow-list does not open the IPv4-mapped form.
    assert_eq!(policy.check(sock("[::ffff:127.0.0.1]:80")).unwrap_err().network, "::ffff:0:0/96");
    assert_eq!(policy.check(sock("[::1]:80")).unwrap_err().class, "loopback");
    assert!(AddressPolicy::default().check(sock("127.0.0.1:80")).is_err());
}

/// An entry with a port opens that one service, not the host: the testnet's exits allow their
/// test server this way and so cannot reach the nodes' metrics ports on the same address.
#[test]
fn allow_entry_with_a_port_admits_only_that_port() {
    let policy = AddressPolicy::new(vec!["127.0.0.1:8080".parse().unwrap(), "[::1]:8443".parse().unwrap()]);
    assert_eq!(policy.check(sock("127.0.0.1:8080")), Ok(()));
    assert_eq!(policy.check(sock("127.0.0.1:8081")).unwrap_err().class, "loopback");
    assert_eq!(policy.check(sock("127.0.0.2:8080")).unwrap_err().class, "loopback");
    assert_eq!(policy.check(sock("[::1]:8443")), Ok(()));
    assert_eq!(policy.check(sock("[::1]:8080")).unwrap_err().class, "loopback");
    assert_eq!(policy.check(sock("[::ffff:127.0.0.1]:8080")).unwrap_err().class, "IPv4-mapped");
}

/// The streams' port exception: only entries that name a port count, and only for it.
#[test]
fn entries_naming_a_port_are_the_only_port_exception() {
    let policy = AddressPolicy::new(vec!["127.0.0.1:8443".parse().unwrap(), "10.0.0.0/8".parse().unwrap()]);
    assert!(policy.admits_with_port(sock("127.0.0.1:8443")));
    assert!(!policy.admits_with_port(sock("127.0.0.1:8444")));
    assert!(!policy.admits_with_port(sock("127.0.0.2:8443")));
    assert!(!policy.admits_with_port(sock("10.1.2.3:8443")), "an entry without a port opens no port");
    assert!(policy.names_port(8443));
    assert!(!policy.names_port(8444));
    assert!(!AddressPolicy::default().names_port(8443));
}

#[test]
fn allow_entries_parse_and_print() {
    let cases = [
        ("127.0.0.1:8080", "127.0.0.1:8080"),
        ("[::1]:8080", "[::1]:8080"),
        ("127.0.0.1", "127.0.0.1/32"),
        ("10.1.2.3/8", "10.0.0.0/8"),
        (" ::1/128 ", "::1/128"),
    ];
    for (text, shown) in cases {
        assert_eq!(text.parse::<AllowEntry>().unwrap().to_string(), shown, "{text}");
    }
    for text in ["127.0.0.1:0", "127.0.0.1:65536", "localhost:80", "10.0.0.0/33", "", "[::1]"] {
        let err = text.parse::<AllowEntry>().unwrap_err();
        assert!(err.to_string().contains("invalid exit allow-list entry"), "{text}: {err}");
    }
    assert_eq!(AllowEntry::socket(sock("127.0.0.1:1")), "127.0.0.1:1".parse().unwrap());
}

proptest! {
    #[test]
    fn mapped_and_compatible_never_allow_what_v4_refuses(bits: u32) {
        let v4 = Ipv4Addr::from(bits);
        let mapped = IpAddr::V6(v4.to_ipv6_mapped());
        let compatible = IpAddr::V6(v4.to_ipv6_compatible());
        let nat64 = IpAddr::V6(Ipv6Addr::from((0x64_ff9b_u128 << 96) | u128::from(bits)));
        if classify(IpAddr::V4(v4)).is_err() {
            prop_assert!(classify(mapped).is_err());
            prop_assert!(classify(compatible).is_err());
            prop_assert!(classify(nat64).is_err());
        }
        // Stronger: embedded forms are refused outright.
        prop_assert!(classify(mapped).is_err());
        prop_assert!(classify(compatible).is_err());
        prop_assert!(classify(nat64).is_err());
    }

    #[test]
    fn classify_never_panics(bits: u128) {
        let _ = classify(IpAddr::V6(Ipv6Addr::from(bits)));
        let _ = classify(IpAddr::V4(Ipv4Addr::from(bits as u32)));
    }
}
