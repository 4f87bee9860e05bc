//! The `[exit.services.streams]` settings: defaults, every field, and values refused.
//!
//! Parsed with serde_json like the other configuration tests of this crate (the node parses the
//! same serde derive from TOML; field names and units are the same).

use std::time::Duration;

use nox_exit::{ConfigError, DEFAULT_STREAM_PORTS, ExitConfig, ExitServices, StreamsConfig};

#[test]
fn defaults_are_the_documented_ones() {
    let expected = StreamsConfig {
        enabled: true,
        ports: vec![80, 443, 8545, 8546],
        max_streams: 256,
        max_stream_bytes: 1 << 30,
        max_lifetime: Duration::from_secs(3600),
        idle_timeout: Duration::from_secs(120),
        connect_timeout: Duration::from_secs(10),
    };
    assert_eq!(StreamsConfig::default(), expected);
    assert_eq!(DEFAULT_STREAM_PORTS, &expected.ports[..]);
    assert_eq!(ExitConfig::default().streams, expected);
    let absent: ExitConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(absent.streams, expected);
    let empty: ExitConfig = serde_json::from_str(r#"{"streams":{}}"#).unwrap();
    assert_eq!(empty.streams, expected);
    assert!(ExitServices::new(ExitConfig::default()).is_ok());
}

#[test]
fn every_field_parses() {
    let json = r#"{"streams":{"enabled":false,"ports":[443,9000],"max_streams":8,"max_stream_bytes":1048576,
        "max_lifetime_ms":600000,"idle_timeout_ms":30000,"connect_timeout_ms":2500}}"#;
    let config: ExitConfig = serde_json::from_str(json).unwrap();
    let expected = StreamsConfig {
        enabled: false,
        ports: vec![443, 9000],
        max_streams: 8,
        max_stream_bytes: 1 << 20,
        max_lifetime: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_millis(2500),
    };
    assert_eq!(config.streams, expected);
    assert!(ExitServices::new(config).is_ok());
}

#[test]
fn unknown_and_mistyped_fields_are_refused() {
    for json in [
        r#"{"streams":{"max_lifetime":1000}}"#,
        r#"{"streams":{"idle_timeout":1000}}"#,
        r#"{"streams":{"port":[80]}}"#,
        r#"{"streams":{"ports":[65536]}}"#,
        r#"{"streams":{"ports":[-1]}}"#,
        r#"{"streams":{"max_streams":-1}}"#,
        r#"{"streams":{"enabled":"yes"}}"#,
        r#"{"stream":{}}"#,
    ] {
        assert!(serde_json::from_str::<ExitConfig>(json).is_err(), "{json}");
    }
}

/// Out-of-range values are refused when the services are built, each naming its field.
#[test]
fn bad_values_are_refused_naming_the_field() {
    type Edit = fn(&mut StreamsConfig);
    let cases: [(Edit, &str); 11] = [
        (|s| s.max_streams = 0, "max_streams"),
        (|s| s.max_streams = usize::MAX, "max_streams"),
        (|s| s.max_stream_bytes = 0, "max_stream_bytes"),
        (|s| s.max_stream_bytes = u64::MAX, "max_stream_bytes"),
        (|s| s.max_lifetime = Duration::ZERO, "max_lifetime_ms"),
        (|s| s.max_lifetime = Duration::from_secs(86_401), "max_lifetime_ms"),
        (|s| s.idle_timeout = Duration::ZERO, "idle_timeout_ms"),
        (|s| s.idle_timeout = Duration::from_secs(3601), "idle_timeout_ms"),
        (|s| s.connect_timeout = Duration::ZERO, "connect_timeout_ms"),
        (|s| s.connect_timeout = Duration::from_secs(3601), "connect_timeout_ms"),
        (|s| s.ports = vec![443, 0], "ports"),
    ];
    for (edit, field) in cases {
        let mut config = ExitConfig::default();
        edit(&mut config.streams);
        // Disabled streams are checked too: a bad file is refused before it is switched on.
        config.streams.enabled = false;
        match ExitServices::new(config) {
            Err(ConfigError::Streams(msg)) => assert!(msg.starts_with(field), "{field}: {msg}"),
            Err(other) => panic!("{field}: {other}"),
            Ok(_) => panic!("{field}: accepted"),
        }
    }
    // Timeouts no longer than the stream's life.
    let mut config = ExitConfig::default();
    config.streams.max_lifetime = Duration::from_secs(60);
    config.streams.idle_timeout = Duration::from_secs(61);
    assert!(matches!(ExitServices::new(config), Err(ConfigError::Streams(m)) if m.starts_with("idle_timeout_ms")));
    let mut config = ExitConfig::default();
    config.streams.max_lifetime = Duration::from_secs(24 * 3600);
    config.streams.idle_timeout = Duration::from_secs(3600);
    config.streams.max_stream_bytes = 1 << 40;
    config.streams.ports = vec![];
    assert!(ExitServices::new(config).is_ok(), "the limits themselves are accepted");
}
