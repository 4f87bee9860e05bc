//! Streams (`ExitServices::connect`): the destination policy. Every refusal here happens before
//! any connection (a recording dialer stays empty), and literals are never resolved.

mod common;

use std::sync::Arc;

use common::{RecordingDialer, ScriptedResolver};
use nox_exit::{AllowEntry, ConnectError, ExitConfig, ExitServices, SystemResolver};

/// Every special-purpose class of `classify`, as literals a client could send.
const REFUSED: &[&str] = &[
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.254",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.0.1",
    "192.0.2.1",
    "198.51.100.1",
    "203.0.113.1",
    "192.88.99.1",
    "198.18.0.1",
    "::1",
    "::",
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fec0::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::a00:1",
    "64:ff9b::a00:1",
    "64:ff9b:1::1",
    "2002:a00:1::",
    "2001::1",
    "2001:db8::1",
    "3fff::1",
    "100::1",
    "4000::1",
];

fn exit_with(config: ExitConfig, resolver: Arc<ScriptedResolver>) -> (ExitServices, Arc<RecordingDialer>) {
    let dialer = Arc::new(RecordingDialer::default());
    let exit = ExitServices::with_hooks(config, resolver, dialer.clone()).unwrap();
    (exit, dialer)
}

fn allowing(entries: &[&str]) -> ExitConfig {
    let mut config = ExitConfig::default();
    config.http.allow = entries.iter().map(|e| e.parse::<AllowEntry>().unwrap()).collect();
    config
}

fn name_refused(name: &str) -> ConnectError {
    ConnectError::Forbidden(format!(
        "destination {name} refused: it does not resolve to an address this exit may connect to"
    ))
}

#[tokio::test]
async fn every_ssrf_class_is_forbidden_as_a_literal_without_resolving_or_dialing() {
    let resolver = ScriptedResolver::new("unused.test", vec![]);
    let (exit, dialer) = exit_with(ExitConfig::default(), resolver.clone());
    for literal in REFUSED {
        let bracketed = format!("[{literal}]");
        let forms = if literal.contains(':') { vec![*literal, bracketed.as_str()] } else { vec![*literal] };
        for host in forms {
            let err = exit.connect(host, 443).await.unwrap_err();
            assert!(
                matches!(&err, ConnectError::Forbidden(m) if m.starts_with(&format!("destination {literal} is not a global address ("))),
                "{host}: {err:?}"
            );
            assert_eq!(err.socks_code(), 0x02, "{host}");
        }
    }
    assert_eq!(resolver.calls(), 0, "literals are not resolved");
    assert!(dialer.dialed().is_empty(), "dialed {:?}", dialer.dialed());
}

#[tokio::test]
async fn a_name_resolving_to_any_ssrf_class_is_forbidden_without_naming_it() {
    for address in REFUSED {
        let resolver = ScriptedResolver::new("inside.test", vec![vec![address]]);
        let (exit, dialer) = exit_with(ExitConfig::default(), resolver.clone());
        let err = exit.connect("inside.test", 443).await.unwrap_err();
        assert_eq!(err, name_refused("inside.test"), "{address}");
        assert!(!err.to_string().contains(address), "{err}");
        assert_eq!(resolver.calls(), 1);
        assert!(dialer.dialed().is_empty(), "{address}: dialed {:?}", dialer.dialed());
    }
}

/// Private, mixed (either order), empty and unresolvable answers: one text, no address, no dial.
#[tokio::test]
async fn refused_names_get_one_answer_whatever_they_resolve_to() {
    let answers: Vec<Vec<Vec<&str>>> = vec![
        vec![vec!["10.0.0.1"]],
        vec![vec!["93.184.216.34", "10.0.0.1"]],
        vec![vec!["127.0.0.1", "93.184.216.34"]],
        vec![vec![]],
        vec![],
    ];
    for answer in answers {
        let label = format!("{answer:?}");
        let resolver = ScriptedResolver::new("name.test", answer);
        let (exit, dialer) = exit_with(ExitConfig::default(), resolver);
        let err = exit.connect("Name.Test", 80).await.unwrap_err();
        assert_eq!(err, name_refused("name.test"), "{label}");
        assert!(dialer.dialed().is_empty(), "{label}");
    }
}

/// With `127.0.0.0/8` allowed, IPv4-mapped forms of it stay refused (as for HTTP).
#[tokio::test]
async fn ipv4_mapped_loopback_stays_refused_with_loopback_allowed() {
    let (exit, dialer) = exit_with(allowing(&["127.0.0.0/8"]), ScriptedResolver::new("unused.test", vec![]));
    let err = exit.connect("[::ffff:127.0.0.1]", 80).await.unwrap_err();
    assert_eq!(
        err,
        ConnectError::Forbidden(
            "destination ::ffff:127.0.0.1 is not a global address (IPv4-mapped ::ffff:0:0/96)".into()
        )
    );
    assert!(dialer.dialed().is_empty());
}

/// Numeric spellings of loopback are checked as whatever the system resolver makes of them.
#[tokio::test]
async fn numeric_and_local_names_are_checked_after_system_resolution() {
    let dialer = Arc::new(RecordingDialer::default());
    let exit = ExitServices::with_hooks(ExitConfig::default(), Arc::new(SystemResolver), dialer.clone()).unwrap();
    for name in ["localhost", "2130706433", "127.1", "0x7f000001"] {
        let err = exit.connect(name, 80).await.unwrap_err();
        assert_eq!(err, name_refused(name), "{name}");
    }
    assert!(dialer.dialed().is_empty(), "dialed {:?}", dialer.dialed());
}

#[tokio::test]
async fn a_port_outside_the_list_is_forbidden_before_resolving() {
    let resolver = ScriptedResolver::new("web.test", vec![vec!["93.184.216.34"]]);
    let (exit, dialer) = exit_with(ExitConfig::default(), resolver.clone());
    let refused = ConnectError::Forbidden("destination port 22 is not allowed for streams".into());
    assert_eq!(exit.connect("web.test", 22).await.unwrap_err(), refused);
    assert_eq!(exit.connect("93.184.216.34", 22).await.unwrap_err(), refused);
    assert_eq!(exit.connect("[2606:2800:220:1::1]", 22).await.unwrap_err(), refused);
    assert_eq!(resolver.calls(), 0);
    assert!(dialer.dialed().is_empty());
}

/// An allow entry naming a port opens that port of that address only: not the address on
/// other ports, not that port on other addresses (literal or resolved).
#[tokio::test]
async fn an_allow_entry_with_a_port_opens_exactly_that_service() {
    let resolver = ScriptedResolver::new("public.test", vec![vec!["93.184.216.34"]]);
    let (exit, dialer) = exit_with(allowing(&["127.0.0.1:8443"]), resolver.clone());
    let loopback =
        ConnectError::Forbidden("destination 127.0.0.1 is not a global address (loopback 127.0.0.0/8)".into());
    assert_eq!(exit.connect("127.0.0.1", 8444).await.unwrap_err(), loopback);
    assert_eq!(exit.connect("127.0.0.1", 443).await.unwrap_err(), loopback, "a listed port does not help");
    let port = ConnectError::Forbidden("destination port 8443 is not allowed for streams".into());
    assert_eq!(exit.connect("93.184.216.34", 8443).await.unwrap_err(), port);
    assert_eq!(exit.connect("public.test", 8443).await.unwrap_err(), port);
    assert_eq!(resolver.calls(), 1);
    assert!(dialer.dialed().is_empty(), "dialed {:?}", dialer.dialed());
}

/// An allow entry without a port admits the address on the listed ports only.
#[tokio::test]
async fn an_allow_entry_without_a_port_does_not_open_unlisted_ports() {
    let (exit, dialer) = exit_with(allowing(&["127.0.0.1"]), ScriptedResolver::new("unused.test", vec![]));
    let err = exit.connect("127.0.0.1", 8443).await.unwrap_err();
    assert_eq!(err, ConnectError::Forbidden("destination port 8443 is not allowed for streams".into()));
    assert!(dialer.dialed().is_empty());
}

#[tokio::test]
async fn malformed_hosts_and_port_zero_are_bad_requests() {
    let resolver = ScriptedResolver::new("unused.test", vec![]);
    let (exit, dialer) = exit_with(ExitConfig::default(), resolver.clone());
    let long_label = format!("{}.test", "a".repeat(64));
    let long_name = format!("{}.{}", vec!["a".repeat(63); 3].join("."), "b".repeat(62));
    assert_eq!(long_name.len(), 254, "one byte over");
    let huge = "x".repeat(10_000) + " ";
    let malformed = [
        "",
        ".",
        "..",
        "a..b",
        ".a",
        "a.com..",
        "-a.com",
        "a-.com",
        "a_b.com",
        "exa mple.com",
        "example.com:80",
        "ex@mple.com",
        "exämple.com",
        "a/b",
        "a\0b",
        "http://a.com",
        "[::1",
        "::1]",
        "[]",
        "[127.0.0.1]",
        "[fe80::1%eth0]",
        "fe80::1%eth0",
        &long_label,
        &long_name,
        &huge,
    ];
    for host in malformed {
        let err = exit.connect(host, 443).await.unwrap_err();
        assert!(matches!(err, ConnectError::BadRequest(_)), "{host:?}: {err:?}");
        assert_eq!(err.socks_code(), 0x01);
        assert!(err.to_string().len() < 200, "the message clips the host: {err}");
    }
    let err = exit.connect("example.test", 0).await.unwrap_err();
    assert_eq!(err, ConnectError::BadRequest("destination port 0".into()));
    assert_eq!(resolver.calls(), 0);
    assert!(dialer.dialed().is_empty());
}

/// The edges of a valid name are names, not bad requests: they reach the resolver.
#[tokio::test]
async fn valid_names_reach_the_resolver() {
    let resolver = ScriptedResolver::new("unused.test", vec![]);
    let (exit, _) = exit_with(ExitConfig::default(), resolver.clone());
    let longest = format!("{}.{}", vec!["a".repeat(63); 3].join("."), "b".repeat(61));
    assert_eq!(longest.len(), 253);
    let names = ["a", "A-1.example", "xn--bcher-kva.example", "example.com.", "1.2.3", &"a".repeat(63), &longest];
    for name in names {
        let err = exit.connect(name, 443).await.unwrap_err();
        assert_eq!(err, name_refused(&name.to_ascii_lowercase()), "{name}");
    }
    assert_eq!(resolver.calls(), names.len());
}
