//! Running a node as a service (issue 33): the OCI image definition (`deploy/Containerfile`),
//! the systemd unit and the Prometheus files (`deploy/prometheus/`) checked against the node
//! itself — the image's user, volume, command and healthcheck against the configuration
//! `nox operator init` writes and the node's loader reads; every metric an alert rule names
//! against a running testnet node's `/metrics`.
//! Run under the e2e lock: `flock /tmp/nox-e2e.lock cargo test -p nox --test operator_e2e`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod common;

use common::{NOX, Testnet, port_base, testnet_dir, wait_until};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The runtime stage of a Containerfile: its instructions (continuation lines joined, comments
/// dropped) after the last `FROM`, as (instruction, arguments).
fn runtime_stage(text: &str) -> Vec<(String, String)> {
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            logical.push(std::mem::take(&mut current));
        }
    }
    let last_from = logical.iter().rposition(|l| l.starts_with("FROM ")).expect("a FROM");
    logical[last_from..]
        .iter()
        .map(|l| {
            let (op, args) = l.split_once(' ').unwrap_or((l.as_str(), ""));
            (op.to_owned(), args.trim().to_owned())
        })
        .collect()
}

/// The one argument of instruction `op` (panics if absent or repeated).
fn single<'a>(stage: &'a [(String, String)], op: &str) -> &'a str {
    let found: Vec<_> = stage.iter().filter(|(o, _)| o == op).collect();
    assert_eq!(found.len(), 1, "one {op} in the runtime stage: {found:?}");
    &found[0].1
}

/// A JSON-array (exec form) argument.
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("not exec form ({e}): {args}"))
}

/// `ENV K=V K2=V2 …` of the runtime stage.
fn env_of(stage: &[(String, String)]) -> BTreeMap<String, String> {
    stage
        .iter()
        .filter(|(o, _)| o == "ENV")
        .flat_map(|(_, a)| a.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("ENV K=V");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// `Key=value` lines of a systemd unit (the last one wins, as systemd reads a repeated scalar).
fn unit_settings(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The image and the unit run the node the guide describes, as the unprivileged `nox` user,
/// from the state directory's `node.toml`, with the state directory the one writable place; the
/// image's environment turns on the metrics endpoint its healthcheck and the Prometheus scrape
/// read, as the node's own configuration loader sees it; every path of the configuration
/// `nox operator init --dir <state>` writes lies in the state directory.
#[test]
fn image_unit_and_scrape_config_match_the_node() {
    let stage = runtime_stage(&read("deploy/Containerfile"));
    let build_stages = read("deploy/Containerfile").lines().filter(|l| l.starts_with("FROM ")).count();
    assert!(build_stages >= 2, "a multi-stage build");
    assert!(
        stage.iter().any(|(o, a)| o == "COPY" && a.starts_with("--from=") && a.ends_with("/usr/local/bin/nox")),
        "the runtime stage takes only the built binary: {stage:?}"
    );

    // Not root.
    let user = single(&stage, "USER");
    let name = user.split(':').next().unwrap_or_default();
    assert!(!name.is_empty() && name != "root" && name != "0", "USER {user}");

    // The state directory is the one volume, and the command's config lives in it.
    let volumes = exec_form(single(&stage, "VOLUME"));
    assert_eq!(volumes, vec!["/var/lib/nox".to_owned()], "one writable volume");
    let state = Path::new(&volumes[0]);
    assert_eq!(single(&stage, "WORKDIR"), volumes[0]);
    let mut command = exec_form(single(&stage, "ENTRYPOINT"));
    command.extend(exec_form(single(&stage, "CMD")));
    let expected = ["/usr/local/bin/nox", "node", "--config", "/var/lib/nox/node.toml"].map(str::to_owned);
    assert_eq!(command, expected, "the image runs `nox node --config <state>/node.toml`, no other flag");
    assert!(Path::new(&command[3]).starts_with(state));

    // The systemd unit runs the same command as the same user with the same state directory.
    let unit = unit_settings(&read("deploy/nox-node.service"));
    assert_eq!(unit.get("ExecStart").map(String::as_str), Some(command.join(" ").as_str()));
    assert_eq!(unit.get("User").map(String::as_str), Some(name));
    assert_eq!(unit.get("StateDirectory").map(|d| Path::new("/var/lib").join(d)), Some(state.to_path_buf()));
    assert_eq!(unit.get("ProtectSystem").map(String::as_str), Some("strict"), "read-only root under systemd");

    // The metrics endpoint: set by the image's environment as the node's loader reads it.
    let env = env_of(&stage);
    let tmp = tempfile::tempdir().unwrap();
    let node_dir = tmp.path().join("state");
    let record = repo().join("deployments/31337.json");
    let out = Command::new(NOX)
        .args(["operator", "init", "--chain"])
        .arg(&record)
        .args(["--rpc", "http://127.0.0.1:1", "--listen", "127.0.0.1:9000", "--directory", "http://127.0.0.1:1"])
        .arg("--dir")
        .arg(&node_dir)
        .output()
        .expect("nox operator init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config = nox_node::NodeConfig::load(&node_dir.join("node.toml"), |k| env.get(k).cloned())
        .expect("the image's environment is a valid override");
    let metrics: SocketAddr = config.node.metrics.expect("the image turns the metrics endpoint on");
    assert!(config.node.key_dir.starts_with(&node_dir), "keys outside the state directory");
    if let Some(replay) = &config.replay.dir {
        assert!(replay.starts_with(&node_dir), "replay journal outside the state directory");
    }
    let without_env = nox_node::NodeConfig::load(&node_dir.join("node.toml"), |_| None).unwrap();
    assert_eq!(without_env.node.metrics, None, "the image's ENV, not the init'ed config, turns metrics on");

    // The healthcheck asks that endpoint (from inside the container: loopback, the same port).
    let health = single(&stage, "HEALTHCHECK");
    let cmd_at = health.find("CMD ").expect("HEALTHCHECK … CMD");
    let probe = exec_form(&health[cmd_at + 4..]);
    let url = probe.iter().find(|a| a.starts_with("http://")).expect("a URL");
    assert_eq!(url, &format!("http://127.0.0.1:{}/metrics", metrics.port()), "{probe:?}");
    assert!(probe.iter().any(|a| a.contains('f')), "the probe fails on an HTTP error: {probe:?}");

    // Prometheus scrapes that port and path, and loads the rules file next to it.
    let scrape = read("deploy/prometheus/prometheus.yml");
    assert!(scrape.contains("metrics_path: /metrics"), "{scrape}");
    assert!(scrape.contains(&format!(":{}", metrics.port())), "the scrape target's port: {scrape}");
    assert!(scrape.contains("- alerts.yml") && repo().join("deploy/prometheus/alerts.yml").exists());
}

/// The metric names an expression mentions (`nox_…`, plus Prometheus' own `up`).
fn metric_names(rules: &str) -> Vec<String> {
    let mut names: Vec<String> = rules
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| {
            l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("nox_"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every metric `deploy/prometheus/alerts.yml` names is a series a running node exports (on a
/// testnet with its chain, so that the registry gauges are there): a renamed or removed metric
/// fails here instead of silently never firing.
#[test]
fn every_alerted_metric_is_exported_by_a_running_node() {
    let rules = read("deploy/prometheus/alerts.yml");
    let names = metric_names(&rules);
    assert!(names.len() >= 10, "{names:?}");
    // Lane B's ports (10 000–32 767): this binary runs beside the money binary, whose blocks sit
    // below 10 000 (tests/money/main.rs); at 2 000 its Anvil once met a money testnet's node.
    let base = port_base(14_000, 50, 40);
    let dir = testnet_dir("nox-it", "operator-e2e");
    let _ = std::fs::remove_dir_all(&dir);
    let net = Testnet::up(dir.clone(), base, &["--nodes-per-layer", "1"]);
    let node = nox_testnet::nodes(&net.dir).into_iter().next().expect("a node");
    let exported = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .map(str::to_owned)
            .collect()
    };
    let mut last = String::new();
    let all_there = wait_until(Duration::from_secs(30), Duration::from_millis(250), || {
        last = nox_testnet::scrape(node.metrics).unwrap_or_default();
        let series = exported(&last);
        names.iter().all(|n| series.contains(n))
    });
    let series = exported(&last);
    let missing: Vec<_> = names.iter().filter(|n| !series.contains(n)).collect();
    assert!(all_there, "alerts name metrics no node exports: {missing:?}\n{last}");
    drop(net);
}

/// The name extraction itself: a rule on a metric that does not exist is caught.
#[test]
fn a_rule_on_an_unknown_metric_is_named() {
    let names =
        metric_names("expr: rate(nox_packets_received_total[5m]) > 0 and nox_no_such_metric == 1\n# nox_commented");
    assert_eq!(names, vec!["nox_no_such_metric".to_owned(), "nox_packets_received_total".to_owned()]);
}
