//! Unit tests of the configuration: defaults, environment overrides, features that must be
//! built in, and every refusal with its message.

use super::*;

/// The default build has no timing log: `[observe]` is refused with a clear error. Fails if
/// the `observe` feature were on by default (in this crate or in the `nox` binary's
/// dependency on it), or if the default build accepted the section.
#[test]
fn observe_is_refused_unless_built_in_and_never_built_in_by_default() {
    let with_observe = format!("{MINIMAL}\n[observe]\nevents = \"/tmp/observe.events\"\n");
    let mut config: NodeConfig = toml::from_str(&with_observe).unwrap();
    let checked = config.apply_env(|_| None);
    if cfg!(feature = "observe") {
        assert!(checked.is_ok());
    } else {
        let error = checked.unwrap_err().to_string();
        assert!(error.contains("[observe]") && error.contains("--features observe"), "{error}");
    }
    assert_never_on_by_default("observe");
}

/// Whatever the tests were built with, the manifests must not turn `feature` on by default
/// (in this crate, or in the `nox` binary's dependency on it).
fn assert_never_on_by_default(feature: &str) {
    for manifest in [include_str!("../../Cargo.toml"), include_str!("../../../nox/Cargo.toml")] {
        let manifest: toml::Table = toml::from_str(manifest).unwrap();
        let default = manifest.get("features").and_then(|f| f.get("default"));
        assert!(default.is_none_or(|d| !format!("{d:?}").contains(feature)), "{feature} in default features");
        let dependency = manifest.get("dependencies").and_then(|d| d.get("nox-node"));
        let features = dependency.and_then(|d| d.get("features")).map(|f| format!("{f:?}")).unwrap_or_default();
        assert!(!features.contains(feature), "the nox binary enables {feature} unconditionally");
    }
}

/// The default build has no fault layer: `[chaos]` is refused; with the feature, its ranges
/// are checked.
#[test]
fn chaos_is_refused_unless_built_in_and_never_built_in_by_default() {
    let with_chaos = format!("{MINIMAL}\n[chaos]\nlink_loss = 0.1\nlink_delay_ms = 2.0\n");
    let mut config: NodeConfig = toml::from_str(&with_chaos).unwrap();
    let checked = config.apply_env(|_| None);
    if cfg!(feature = "chaos") {
        assert!(checked.is_ok());
        let mut bad: NodeConfig = toml::from_str(&format!("{MINIMAL}\n[chaos]\nlink_loss = 1.0\n")).unwrap();
        assert!(matches!(bad.apply_env(|_| None), Err(ConfigError::Invalid { section: "chaos", .. })));
    } else {
        let error = checked.unwrap_err().to_string();
        assert!(error.contains("[chaos]") && error.contains("--features chaos"), "{error}");
    }
    assert_never_on_by_default("chaos");
}

const MINIMAL: &str = r#"
    [node]
    key_dir = "/tmp/keys"
    listen = "127.0.0.1:9000"
    [topology]
    file = "/tmp/topology.json"
    authority_key = "00"
"#;

#[test]
fn defaults_and_overrides() {
    let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
    assert_eq!(
        config.mixing.mean_delay(),
        Duration::from_millis(50),
        "a node.toml without [mixing] mixes at the default μ"
    );
    assert_eq!(config.replay.capacity, 10_000_000);
    config
        .apply_env(|name| match name {
            "NOX_NODE_LISTEN" => Some("127.0.0.1:9999".into()),
            "NOX_MIXING_MEAN_DELAY_MS" => Some("5".into()),
            "NOX_TOPOLOGY_URL" => Some("http://127.0.0.1:8000".into()),
            "NOX_TOPOLOGY_MIRRORS" => Some("http://127.0.0.2:8000, http://[::1]:8000".into()),
            _ => None,
        })
        .unwrap();
    assert_eq!(config.node.listen.port(), 9999);
    assert_eq!(config.mixing.mean_delay(), Duration::from_millis(5));
    assert_eq!(config.topology.url.as_deref(), Some("http://127.0.0.1:8000"));
    assert_eq!(config.topology.mirrors, ["http://127.0.0.2:8000", "http://[::1]:8000"]);
    assert_eq!(config.topology.file.as_deref(), Some(std::path::Path::new("/tmp/topology.json")));
    let bad = config.apply_env(|name| (name == "NOX_NODE_POW_DIFFICULTY").then(|| "lots".into()));
    assert!(matches!(bad, Err(ConfigError::Env { name: "NOX_NODE_POW_DIFFICULTY", .. })));
}

#[test]
fn admission_rates_defaults_overrides_and_validation() {
    let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
    assert_eq!(config.admission.node_rate_pps, 50_000.0);
    assert_eq!(config.admission.client_rate_pps, 5_000.0);
    assert!(config.admission.adaptive_pow);
    let text = format!("{MINIMAL}\n[admission]\nclient_rate_pps = 300.0\nadaptive_pow = false\n");
    let parsed: NodeConfig = toml::from_str(&text).unwrap();
    assert_eq!((parsed.admission.client_rate_pps, parsed.admission.adaptive_pow), (300.0, false));
    config
        .apply_env(|name| match name {
            "NOX_ADMISSION_CLIENT_RATE_PPS" => Some("700".into()),
            "NOX_ADMISSION_ADAPTIVE_POW" => Some("false".into()),
            "NOX_ADMISSION_EXPECTED_CLIENT_RATE" => Some("50".into()),
            _ => None,
        })
        .unwrap();
    assert_eq!(config.admission.client_rate_pps, 700.0);
    assert_eq!(config.admission.expected_client_rate, 50.0);
    assert!(!config.admission.adaptive_pow);
    let zero = config.apply_env(|name| (name == "NOX_ADMISSION_NODE_RATE_PPS").then(|| "0".into()));
    assert!(matches!(zero, Err(ConfigError::Invalid { section: "admission", .. })), "{zero:?}");
    let bad = config.apply_env(|name| (name == "NOX_ADMISSION_ADAPTIVE_POW").then(|| "sometimes".into()));
    assert!(matches!(bad, Err(ConfigError::Env { name: "NOX_ADMISSION_ADAPTIVE_POW", .. })));
    let exit = |extra: &str| {
        let dir = std::env::temp_dir().join(format!("nox-config-exit-{}-{}", std::process::id(), extra.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("node.toml");
        let base =
            "[node]\nkey_dir = \"/k\"\nlisten = \"127.0.0.1:1\"\n[topology]\nfile = \"/t\"\nauthority_key = \"00\"\n";
        std::fs::write(&path, format!("{base}[exit]\n{extra}\n")).unwrap();
        let loaded = NodeConfig::load(&path, |_| None);
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    };
    assert!(exit("inject_reply_loss = 0.2\n[exit.services.http]\nallow = [\"127.0.0.0/8\"]").is_ok());
    assert!(matches!(exit("inject_reply_loss = 1.5"), Err(ConfigError::Invalid { section: "exit", .. })));
    assert!(matches!(exit("reply_target = 1.0"), Err(ConfigError::Invalid { section: "exit", .. })));
}

#[test]
fn the_sphinx_scheme_is_a_setting_with_a_clear_error() {
    let config: NodeConfig = toml::from_str(MINIMAL).unwrap();
    assert_eq!(config.node.sphinx_scheme, Scheme::Ristretto255);
    assert_eq!(config.node.geometry().unwrap(), Geometry::default());
    assert!(config.node.sphinx_key_dir().ends_with("keys/sphinx"));
    let text = MINIMAL.replace("[topology]", "sphinx_scheme = \"xwing\"\n[topology]");
    let mut xwing: NodeConfig = toml::from_str(&text).unwrap();
    assert_eq!(xwing.node.geometry().unwrap().scheme(), Scheme::XWing);
    assert_eq!(xwing.node.geometry().unwrap().header_len(), 3584);
    assert!(xwing.node.sphinx_key_dir().ends_with("keys/sphinx-xwing"));
    let bad = MINIMAL.replace("[topology]", "sphinx_scheme = \"kyber\"\n[topology]");
    let error = toml::from_str::<NodeConfig>(&bad).unwrap_err().to_string();
    assert!(error.contains("unknown Sphinx scheme \"kyber\"") && error.contains("sphinx_scheme"), "{error}");
    xwing.apply_env(|name| (name == "NOX_NODE_SPHINX_SCHEME").then(|| "mlkem768".into())).unwrap();
    assert_eq!(xwing.node.sphinx_scheme, Scheme::MlKem768);
    let env = xwing.apply_env(|name| (name == "NOX_NODE_SPHINX_SCHEME").then(|| "rsa".into()));
    assert!(matches!(env, Err(ConfigError::Env { name: "NOX_NODE_SPHINX_SCHEME", .. })), "{env:?}");
}

#[test]
fn the_layer_count_is_the_geometry_hop_count() {
    let config: NodeConfig = toml::from_str(MINIMAL).unwrap();
    assert_eq!((config.node.layers, config.node.geometry().unwrap().hops()), (3, 3));
    let five: NodeConfig = toml::from_str(&MINIMAL.replace("[topology]", "layers = 5\n[topology]")).unwrap();
    let geometry = five.node.geometry().unwrap();
    assert_eq!(geometry.hops(), 5);
    assert_ne!(geometry.identifier(), config.node.geometry().unwrap().identifier());
    let none: NodeConfig = toml::from_str(&MINIMAL.replace("[topology]", "layers = 0\n[topology]")).unwrap();
    assert!(none.node.geometry().is_err(), "a network of no layers has no geometry");
    let small = MINIMAL.replace("[topology]", "packet_len = 4096\n[topology]");
    let small = toml::from_str::<NodeConfig>(&small).unwrap().node.geometry().unwrap();
    assert_eq!((small.packet_len(), small.hops()), (4096, 3));
    let bad = MINIMAL.replace("[topology]", "packet_len = 4000\n[topology]");
    let error = toml::from_str::<NodeConfig>(&bad).unwrap_err().to_string();
    assert!(error.contains("unsupported packet length 4000"), "{error}");
}

#[test]
fn websocket_tls_files_come_in_pairs_with_a_websocket_listener() {
    let config = |vars: &[(&str, &str)]| {
        let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        config.apply_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())).map(|()| config)
    };
    let ok = config(&[
        ("NOX_NODE_WEBSOCKET_LISTEN", "127.0.0.1:9300"),
        ("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"),
        ("NOX_NODE_WEBSOCKET_TLS_KEY", "/etc/nox/key.pem"),
    ])
    .unwrap();
    assert_eq!(ok.node.websocket_tls_cert.as_deref(), Some(std::path::Path::new("/etc/nox/cert.pem")));
    assert_eq!(ok.node.websocket_tls_key.as_deref(), Some(std::path::Path::new("/etc/nox/key.pem")));
    let half = config(&[
        ("NOX_NODE_WEBSOCKET_LISTEN", "127.0.0.1:9300"),
        ("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"),
    ]);
    assert!(matches!(half, Err(ConfigError::Invalid { section: "node", .. })), "{half:?}");
    let nowhere =
        config(&[("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"), ("NOX_NODE_WEBSOCKET_TLS_KEY", "/k.pem")]);
    assert!(matches!(nowhere, Err(ConfigError::Invalid { section: "node", .. })), "{nowhere:?}");
    assert_eq!(config(&[]).unwrap().node.websocket_tls_cert, None);
}

#[test]
fn unknown_fields_are_refused() {
    let text = format!("{MINIMAL}\n[mixing]\nmean_dealy_ms = 3\n");
    assert!(toml::from_str::<NodeConfig>(&text).is_err());
}

/// `[operator]` names one passphrase source: none or both (a config that would fall back to
/// nothing, or leave it unclear which secret is used) is refused at load, and so is a
/// second operator key beside `[chain] operator_key_file`.
#[test]
fn operator_section_needs_exactly_one_passphrase_source() {
    let chain = "[chain]\nrpc_urls = [\"http://127.0.0.1:8545\"]\nregistry = \"0x0000000000000000000000000000000000000001\"\nchain_id = 31337\n";
    let load = |operator: &str, key_file: &str| {
        let text = format!("{MINIMAL}\n{chain}{key_file}\n[operator]\nkeystore = \"/k.json\"\n{operator}");
        let mut config: NodeConfig = toml::from_str(&text).expect("parses");
        config.apply_env(|_| None).map(|()| config)
    };
    let ok = load("password_file = \"/p\"\n", "").expect("one source");
    assert_eq!(ok.operator.map(|o| o.password_file), Some(Some(PathBuf::from("/p"))));
    assert!(load("password_env = \"NOX_OPERATOR_PASSWORD\"\n", "").is_ok());
    for bad in ["", "password_file = \"/p\"\npassword_env = \"X\"\n"] {
        assert!(matches!(load(bad, ""), Err(ConfigError::Invalid { section: "operator", .. })), "{bad:?}");
    }
    let both_keys = load("password_file = \"/p\"\n", "operator_key_file = \"/op.key\"\n");
    assert!(matches!(both_keys, Err(ConfigError::Invalid { section: "operator", .. })));
}

/// Every `NOX_*` override of docs/configuration.md reaches its own field (and no other), and
/// one that does not parse is refused by its name, whatever its field's type. Fails if an
/// override were lost or wired to the wrong field when the list is edited.
#[test]
fn every_override_reaches_its_field() {
    let vars: &[(&str, &str)] = &[
        ("NOX_NODE_LISTEN", "127.0.0.1:9999"),
        ("NOX_NODE_WEBSOCKET_LISTEN", "127.0.0.1:9300"),
        ("NOX_NODE_WEBSOCKET_TLS_CERT", "/etc/nox/cert.pem"),
        ("NOX_NODE_WEBSOCKET_TLS_KEY", "/etc/nox/key.pem"),
        ("NOX_NODE_METRICS", "127.0.0.1:9100"),
        ("NOX_NODE_KEY_DIR", "/other/keys"),
        ("NOX_NODE_POW_DIFFICULTY", "9"),
        ("NOX_NODE_SPHINX_SCHEME", "mlkem768"),
        ("NOX_TOPOLOGY_FILE", "/other/topology.json"),
        ("NOX_TOPOLOGY_URL", "http://127.0.0.1:8000"),
        ("NOX_TOPOLOGY_MIRRORS", "http://127.0.0.2:8000,,http://[::1]:8000"),
        ("NOX_TOPOLOGY_REFRESH_SECS", "77"),
        ("NOX_MIXING_MEAN_DELAY_MS", "7.5"),
        ("NOX_COVER_LOOP_RATE", "0.25"),
        ("NOX_COVER_DROP_RATE", "0.5"),
        ("NOX_PIPELINE_WORKERS", "3"),
        ("NOX_ADMISSION_NODE_RATE_PPS", "40000"),
        ("NOX_ADMISSION_CLIENT_RATE_PPS", "700"),
        ("NOX_ADMISSION_PENALIZED_RATE_PPS", "125"),
        ("NOX_ADMISSION_ADAPTIVE_POW", "false"),
        ("NOX_ADMISSION_EXPECTED_CLIENT_RATE", "50"),
    ];
    let env = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
    let mut config: NodeConfig = toml::from_str(MINIMAL).unwrap();
    let before = config.clone();
    config.apply_env(env).unwrap();
    let (node, topology) = (&config.node, &config.topology);
    assert_eq!(node.listen, "127.0.0.1:9999".parse().unwrap());
    assert_eq!(node.websocket_listen, Some("127.0.0.1:9300".parse().unwrap()));
    assert_eq!(node.websocket_tls_cert, Some(PathBuf::from("/etc/nox/cert.pem")));
    assert_eq!(node.websocket_tls_key, Some(PathBuf::from("/etc/nox/key.pem")));
    assert_eq!(node.metrics, Some("127.0.0.1:9100".parse().unwrap()));
    assert_eq!(node.key_dir, PathBuf::from("/other/keys"));
    assert_eq!(node.pow_difficulty, 9);
    assert_eq!(node.sphinx_scheme, Scheme::MlKem768);
    assert_eq!(topology.file, Some(PathBuf::from("/other/topology.json")));
    assert_eq!(topology.url.as_deref(), Some("http://127.0.0.1:8000"));
    assert_eq!(topology.mirrors, ["http://127.0.0.2:8000", "http://[::1]:8000"]);
    assert_eq!(topology.refresh_secs, 77);
    assert_eq!(config.mixing.mean_delay_ms, 7.5);
    assert_eq!((config.cover.loop_rate, config.cover.drop_rate), (0.25, 0.5));
    assert_eq!(config.pipeline.workers, 3);
    let admission = &config.admission;
    assert_eq!(
        (admission.node_rate_pps, admission.client_rate_pps, admission.penalized_rate_pps),
        (40_000.0, 700.0, 125.0)
    );
    assert!(!admission.adaptive_pow);
    assert_eq!(admission.expected_client_rate, 50.0);
    // Nothing else moved: the sections the overrides do not name are as parsed.
    assert_eq!((&config.replay, &config.exit, &config.operator), (&before.replay, &before.exit, &before.operator));

    // Absent variables leave the fields as parsed.
    let mut untouched = before.clone();
    untouched.apply_env(|_| None).unwrap();
    assert_eq!(untouched, before);

    // A value that does not parse is refused by its variable's name, for every parsed type.
    for name in [
        "NOX_NODE_LISTEN",
        "NOX_NODE_WEBSOCKET_LISTEN",
        "NOX_NODE_METRICS",
        "NOX_NODE_POW_DIFFICULTY",
        "NOX_NODE_SPHINX_SCHEME",
        "NOX_TOPOLOGY_REFRESH_SECS",
        "NOX_MIXING_MEAN_DELAY_MS",
        "NOX_PIPELINE_WORKERS",
        "NOX_ADMISSION_ADAPTIVE_POW",
    ] {
        let mut config = before.clone();
        let refused = config.apply_env(|n| (n == name).then(|| "not a value".into()));
        assert!(matches!(&refused, Err(ConfigError::Env { name: n, .. }) if *n == name), "{name}: {refused:?}");
        let text = refused.unwrap_err().to_string();
        assert!(text.starts_with(&format!("environment variable {name}: ")), "{text}");
    }
}
