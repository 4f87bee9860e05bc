//! Layout parsing and defaults.

use super::Layout;

#[test]
fn the_default_layout_is_the_command_line_default() {
    let layout = Layout::default();
    assert_eq!((layout.layers, layout.per_layer, layout.base_port), (3, 3, 19_000));
    assert_eq!((layout.epoch_secs, layout.overlap_secs, layout.observe), (3600, 300, false));
    assert_eq!((layout.mean_delay_ms, layout.reply_loss_estimate, layout.inject_reply_loss), (1.0, 0.05, 0.0));
    assert!(layout.rpc_upstream.is_none() && layout.exit_sink.is_none());
    assert!(layout.exit_allow.is_empty() && layout.rpc_chain_id.is_none());
    assert_eq!(layout.geometry, nox_sphinx::Scheme::Ristretto255);
}

#[test]
fn geometry_names_a_scheme() {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Up {
        #[command(flatten)]
        layout: Layout,
    }
    let parsed = Up::try_parse_from(["up", "--geometry", "xwing"]).unwrap();
    assert_eq!(parsed.layout.geometry, nox_sphinx::Scheme::XWing);
    let error = Up::try_parse_from(["up", "--geometry", "kyber"]).err().unwrap().to_string();
    assert!(error.contains("unknown Sphinx scheme") && error.contains("xwing"), "{error}");
}

#[test]
fn packet_len_is_a_supported_length() {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Up {
        #[command(flatten)]
        layout: Layout,
    }
    assert_eq!(Layout::default().packet_len.bytes(), nox_sphinx::DEFAULT_PACKET_LEN);
    let parsed = Up::try_parse_from(["up", "--packet-len", "4096"]).unwrap();
    assert_eq!(parsed.layout.packet_len.bytes(), 4096);
    let error = Up::try_parse_from(["up", "--packet-len", "5000"]).err().unwrap().to_string();
    assert!(error.contains("unsupported packet length 5000") && error.contains("2048"), "{error}");
}

/// The exit section names exactly the allowed services, never a network.
#[test]
fn exit_summaries_name_the_json_rpc_service_and_the_relayer() {
    let listen: std::net::SocketAddr = "127.0.0.1:9002".parse().unwrap();
    let account = alloy::primitives::Address::repeat_byte(0xab);
    let line = super::exit_summary("node-2", listen, Some("http://127.0.0.1:8545"), Some(31337), Some(account));
    assert_eq!(
        line,
        format!(
            "exit node-2 at 127.0.0.1:9002: JSON-RPC to http://127.0.0.1:8545 (relays eth_sendRawTransaction for chain 31337); paid relayer {account} (funded 100 ETH by the deployer)"
        )
    );
    let bare = super::exit_summary("node-5", listen, None, None, None);
    assert_eq!(bare, "exit node-5 at 127.0.0.1:9002: no JSON-RPC service; no paid relayer");
}

#[test]
fn exit_services_allow_only_the_listed_services() {
    let allow = ["127.0.0.1:8080".parse().unwrap(), "[::1]:8080".parse().unwrap()];
    let section = super::exit_services(Some("http://127.0.0.1:8545"), Some(31337), &allow);
    assert!(section.contains("allow = [\"127.0.0.1:8080\", \"[::1]:8080\"]\n"), "{section}");
    assert!(section.contains("chain_id = 31337\n"), "{section}");
    assert!(!section.contains("/8") && !section.contains("/128"), "{section}");
    let none = super::exit_services(None, None, &[]);
    assert!(none.contains("allow = []\n") && !none.contains("json_rpc"), "{none}");
    let document: toml::Table = toml::from_str(&section).unwrap();
    let config: nox_exit::ExitConfig = document["exit"]["services"].clone().try_into().unwrap();
    assert_eq!(config.http.allow.len(), 2);
    assert_eq!(config.json_rpc.and_then(|r| r.chain_id), Some(31337));
}

#[test]
fn exit_allow_refuses_the_nodes_ports() {
    let at = |port: u16| vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))];
    for port in [19_000, 19_008, 19_100, 19_108, 0] {
        assert!(super::check_exit_allow(&at(port), 19_000, 9).is_err(), "{port}");
    }
    for port in [18_999, 19_009, 19_099, 19_109, 8080] {
        assert!(super::check_exit_allow(&at(port), 19_000, 9).is_ok(), "{port}");
    }
}
