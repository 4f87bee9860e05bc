//! `nox dashboard` on a real testnet (node processes on loopback, as tests/testnet.rs): its
//! `/api/state` lists every layer and node with live packet rates, drops by reason (a replayed
//! packet is counted), mixing-delay buckets, PoW difficulty, epochs and keys and the registry;
//! it holds no socket address; a node whose `/metrics` is garbage and a killed node show as
//! down with the reason while the dashboard keeps serving. Headless Chromium renders the page
//! (the DOM after its script ran shows the layers, the nodes and nonzero rates) and its
//! screenshot is kept in `<target>/artifacts/dashboard.png`.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

mod common;

use common::{NOX, Testnet, port_base, testnet_dir, wait_until};

/// A testnet and a dashboard on it (one of the testnet's children: killed before the testnet is
/// stopped).
struct Net {
    testnet: Testnet,
    fake: Option<SocketAddr>,
    url: SocketAddr,
}

/// `nox testnet up` in its own directory and port range (tests/testnet.rs's per-pid scheme:
/// `slot` separates this file's tests), then `nox dashboard` on `base + 9`; with `fake`, one
/// more endpoint that answers garbage on `base + 8`.
fn start(name: &str, slot: u16, extra: &[&str], fake: bool) -> Net {
    let base = port_base(20_000, 200, 20) + slot * 10;
    let mut args = vec!["--mean-delay-ms", "5", "--nodes-per-layer", "2", "--loop-rate", "4", "--drop-rate", "2"];
    args.extend_from_slice(extra);
    let testnet = Testnet::up(testnet_dir("nox-dash", name), base, &args);
    let url: SocketAddr = ([127, 0, 0, 1], base + 9).into();
    let mut net = Net { testnet, fake: None, url };
    let mut command = Command::new(NOX);
    command.args(["dashboard", "--interval-ms", "500", "--testnet"]).arg(&net.testnet.dir);
    command.arg("--listen").arg(url.to_string());
    if fake {
        let addr: SocketAddr = ([127, 0, 0, 1], base + 8).into();
        garbage_metrics_server(addr);
        command.arg("--node").arg(format!("deadbeef={addr}"));
        net.fake = Some(addr);
    }
    let dashboard = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("run nox dashboard");
    net.testnet.children.push(dashboard);
    net
}

/// A "metrics endpoint" that answers 200 with an HTML page.
fn garbage_metrics_server(addr: SocketAddr) {
    let listener = std::net::TcpListener::bind(addr).expect("bind the fake endpoint");
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let body = "<html>not metrics</html>\n";
            let _ =
                write!(stream, "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        }
    });
}

/// `GET path` → (status, body).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// The dashboard's `/api/state` at `url`: (body, parsed).
fn state(url: SocketAddr) -> Option<(String, Value)> {
    let (status, body) = get(url, "/api/state")?;
    (status == 200).then_some(())?;
    let value = serde_json::from_str(&body).ok()?;
    Some((body, value))
}

/// Polls `/api/state` until `ready` holds (or `patience` passes); returns the last state.
fn wait_state(url: SocketAddr, patience: Duration, ready: impl Fn(&Value) -> bool) -> (String, Value) {
    let mut last = None;
    let held = wait_until(patience, Duration::from_millis(200), || {
        let Some((body, value)) = state(url) else { return false };
        let done = ready(&value);
        last = Some((body, value));
        done
    });
    match last {
        Some(last) if held => last,
        last => {
            let body = last.map(|(b, _)| b).unwrap_or_else(|| "no state".into());
            panic!("the dashboard's state did not get there in {patience:?}: {body}");
        }
    }
}

fn nodes(state: &Value) -> Vec<&Value> {
    state["layers"].as_array().into_iter().flatten().flat_map(|l| l["nodes"].as_array().into_iter().flatten()).collect()
}

fn node<'a>(state: &'a Value, name: &str) -> Option<&'a Value> {
    nodes(state).into_iter().find(|n| n["name"] == name)
}

fn f64_of(value: &Value) -> f64 {
    value.as_f64().unwrap_or(0.0)
}

/// Every node directory of the testnet, with its listen and metrics addresses.
fn node_addresses(dir: &Path) -> Vec<(String, String, String)> {
    (0..)
        .map(|i| dir.join(format!("node-{i}")))
        .take_while(|d| d.exists())
        .map(|d| {
            let config = std::fs::read_to_string(d.join("node.toml")).unwrap();
            let listen =
                config.lines().find_map(|l| l.strip_prefix("listen = \"")?.strip_suffix('"')).unwrap().to_owned();
            let metrics = std::fs::read_to_string(d.join("metrics.addr")).unwrap().trim().to_owned();
            (d.file_name().unwrap().to_string_lossy().into_owned(), listen, metrics)
        })
        .collect()
}

/// Sends one packet twice to its entry: the second is a replay, counted as a drop.
fn send_a_replay(dir: &Path) {
    let runtime = common::runtime();
    runtime.block_on(async {
        let mut client = nox_testnet::TestnetClient::connect(dir).unwrap();
        let (entry, packet) = client.build(b"dashboard").unwrap();
        client.send(&entry, packet.clone()).await.unwrap();
        client.send(&entry, packet).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
}

#[test]
fn api_state_shows_the_live_network_and_down_nodes() {
    let started = Instant::now();
    let net = start("api", 0, &[], true);
    let addresses = node_addresses(&net.testnet.dir);
    assert_eq!(addresses.len(), 6);
    let mut traffic = Command::new(NOX)
        .args(["testnet", "traffic", "--packets", "600", "--rate", "200", "--dir"])
        .arg(&net.testnet.dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    send_a_replay(&net.testnet.dir);

    let (body, state) = wait_state(net.url, Duration::from_secs(30), |s| {
        let all = nodes(s);
        all.len() == 6
            && all.iter().all(|n| n["up"] == true && n["id"].is_string())
            // Every node carries traffic (cover at least) once the network has warmed up.
            && all.iter().all(|n| n["delay"]["count"].as_u64().unwrap_or(0) > 0)
            && all.iter().any(|n| f64_of(&n["rates"]["in_per_s"]) > 0.0)
            && s["totals"]["drops"]["replay"].as_u64().unwrap_or(0) >= 1
            && s["delay_total"]["count"].as_u64().unwrap_or(0) > 0
            && s["chain"]["block"].as_u64().unwrap_or(0) > 0
    });
    let _ = traffic.wait();

    // Every layer, with its role and both of its nodes.
    let layers = state["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3);
    assert_eq!(layers.iter().map(|l| l["role"].as_str().unwrap()).collect::<Vec<_>>(), ["entry", "mix", "exit"]);
    for layer in layers {
        assert_eq!(layer["nodes"].as_array().unwrap().len(), 2, "{layer}");
    }
    for (name, _, _) in &addresses {
        let n = node(&state, name).unwrap_or_else(|| panic!("{name} missing: {body}"));
        assert!(n["pow_difficulty"].is_u64(), "{n}");
        assert!(n["epoch"].as_u64().unwrap() > 0, "{n}");
        assert_eq!(n["key_status"], "ok", "{n}");
        assert!(n["key_epochs"].as_array().is_some_and(|e| !e.is_empty()), "{n}");
        assert!(n["delay"]["counts"].as_array().is_some_and(|c| c.len() > 1), "{n}");
    }
    assert!(state["topology"]["verified"] == true && state["topology"]["epoch"].as_u64().unwrap() > 0);
    assert_eq!(state["topology"]["nodes"], 6);
    // Every drop reason the nodes count is listed, the replay among them.
    for reason in nox_relay::DropReason::ALL {
        assert!(state["totals"]["drops"][reason.label()].is_u64(), "{}", reason.label());
    }
    let buckets = state["delay_total"]["counts"].as_array().unwrap();
    assert!(buckets.len() > 1 && buckets.iter().filter(|c| c.as_u64() > Some(0)).count() >= 1);
    assert_eq!(state["chain"]["registered"], 6, "{}", state["chain"]);

    // The garbage endpoint is down with the parser's reason; the others are unaffected.
    let unplaced = state["unplaced"].as_array().unwrap();
    assert_eq!(unplaced.len(), 1);
    assert_eq!(unplaced[0]["up"], false);
    let reason = unplaced[0]["down_reason"].as_str().unwrap();
    assert!(reason.starts_with("malformed metrics"), "{reason}");

    // No socket address anywhere: not the nodes' link or metrics addresses, not the fake's.
    let fake = net.fake.unwrap().to_string();
    for (name, listen, metrics) in &addresses {
        assert!(!body.contains(listen.as_str()) && !body.contains(metrics.as_str()), "{name}'s address in {body}");
    }
    assert!(!body.contains(&fake) && !body.contains("127.0.0.1"), "an address in {body}");

    // Kill an exit: it shows as down with the reason, and the dashboard goes on serving.
    let victim = layers[2]["nodes"][0]["name"].as_str().unwrap().to_owned();
    let pid = std::fs::read_to_string(net.testnet.dir.join(&victim).join("pid")).unwrap();
    assert!(Command::new("kill").arg("-KILL").arg(pid.trim()).status().unwrap().success());
    // A scrape in flight at the kill fails on its open connection ("HTTP request failed"); the
    // next one finds the port closed.
    let (_, after) = wait_state(net.url, Duration::from_secs(10), |s| {
        node(s, &victim).is_some_and(|n| n["up"] == false && n["down_reason"] == "connection refused")
    });
    let down = node(&after, &victim).unwrap();
    assert_eq!(down["down_reason"], "connection refused", "{down}");
    assert_eq!(after["totals"]["nodes_down"], 2, "the killed node and the garbage endpoint");
    assert!(nodes(&after).iter().filter(|n| n["up"] == true).count() == 5);
    let (status, page) = get(net.url, "/").unwrap();
    assert!(status == 200 && page.contains("NOX network"));
    assert_eq!(get(net.url, "/nothing").map(|(s, _)| s), Some(404));
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// `nox dashboard --directory … --authority … --node ID=ADDR…` (a network not started by
/// `nox testnet`): the node ids (8-digit prefixes, as the testnet dashboard shows them) and the
/// metrics addresses given by hand find the same six nodes in their layers, all up.
fn directory_mode_finds_the_same_network(net: &Net) {
    let (_, testnet_state) = state(net.url).expect("the testnet dashboard's state");
    let directory = nox_testnet::directory::addr(&net.testnet.dir).expect("directory.addr");
    let mut command = Command::new(NOX);
    command.args(["dashboard", "--interval-ms", "500", "--directory"]).arg(format!("http://{directory}"));
    command.arg("--authority").arg(common::authority(&net.testnet.dir));
    let mut expected = Vec::new();
    for n in nodes(&testnet_state) {
        let name = n["name"].as_str().unwrap();
        let id = n["id"].as_str().unwrap();
        let metrics = common::metrics_addr(&net.testnet.dir.join(name));
        command.arg("--node").arg(format!("{id}={metrics}"));
        expected.push((id.to_owned(), n["layer"].as_u64().unwrap()));
    }
    let url: SocketAddr = (net.url.ip(), net.url.port() - 2).into();
    command.arg("--listen").arg(url.to_string());
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("run nox dashboard");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_state(url, Duration::from_secs(20), |s| {
            nodes(s).len() == 6 && nodes(s).iter().all(|n| n["up"] == true) && s["topology"]["verified"] == true
        })
    }));
    let _ = child.kill();
    let _ = child.wait();
    let (body, directory_state) = outcome.unwrap_or_else(|e| std::panic::resume_unwind(e));
    assert_eq!(directory_state["topology"]["source"], "directory mirrors");
    for (id, layer) in expected {
        let n = node(&directory_state, &id).unwrap_or_else(|| panic!("{id} missing: {body}"));
        assert_eq!(n["layer"].as_u64(), Some(layer), "{n}");
    }
    assert!(directory_state["unplaced"].as_array().is_some_and(Vec::is_empty), "{body}");
    assert!(!body.contains("127.0.0.1"), "an address in {body}");
}

/// The target directory (`…/target`), from the test binary's path (`target/debug/deps/…`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir)
}

fn chromium() -> String {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok() {
            return name.to_owned();
        }
    }
    panic!(
        "chromium is not installed: this test renders the dashboard in headless Chromium. \
         Install it with `apt-get update && apt-get install -y chromium` (scripts/test.sh does)."
    );
}

fn run_chromium(browser: &str, profile: &Path, args: &[String]) -> std::process::Output {
    Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"])
        .args(["--no-first-run", "--disable-extensions", "--disable-background-networking", "--mute-audio"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run chromium")
}

#[test]
fn headless_chromium_renders_the_dashboard() {
    let browser = chromium();
    let net = start("ui", 1, &["--no-chain"], false);
    let mut traffic = Command::new(NOX)
        .args(["testnet", "traffic", "--packets", "1500", "--rate", "150", "--dir"])
        .arg(&net.testnet.dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_state(net.url, Duration::from_secs(30), |s| {
        let all = nodes(s);
        all.len() == 6
            && all.iter().all(|n| n["up"] == true)
            && all.iter().filter(|n| f64_of(&n["rates"]["in_per_s"]) > 1.0).count() >= 3
            && s["delay_total"]["count"].as_u64().unwrap_or(0) > 0
    });
    directory_mode_finds_the_same_network(&net);
    let profile = net.testnet.dir.join("chromium-profile");
    let url = format!("http://{}/", net.url);

    // The DOM after the page's script ran (virtual time lets its first refresh complete).
    let dump =
        run_chromium(&browser, &profile, &["--virtual-time-budget=4000".into(), "--dump-dom".into(), url.clone()]);
    let dom = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(dom.contains("data-rendered="), "the page's script did not render: {dom}");
    for layer in ["Layer 0 · entry", "Layer 1 · mix", "Layer 2 · exit"] {
        assert!(dom.contains(layer), "{layer} missing: {dom}");
    }
    for i in 0..6 {
        assert!(dom.contains(&format!("data-node=\"node-{i}\"")), "node-{i} missing: {dom}");
    }
    let rates: Vec<f64> =
        dom.split("class=\"rate-in\">").skip(1).filter_map(|rest| rest.split('<').next()?.parse().ok()).collect();
    assert_eq!(rates.len(), 6, "one input rate per node card: {dom}");
    assert!(rates.iter().filter(|r| **r > 0.0).count() >= 3, "live rates: {rates:?}");
    assert!(dom.contains("hist-svg") && dom.contains("class=\"bar\""), "the histogram: {dom}");
    assert!(dom.contains("replay") && dom.contains("mac_mismatch"), "the drops table: {dom}");
    assert!(!dom.contains("127.0.0.1:"), "an address on the page");

    // The screenshot, kept as a test artifact.
    let artifacts = target_dir().join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join("dashboard.png");
    let _ = std::fs::remove_file(&png);
    let shot = run_chromium(
        &browser,
        &profile,
        &[
            "--virtual-time-budget=4000".into(),
            format!("--screenshot={}", png.display()),
            "--window-size=1400,900".into(),
            url,
        ],
    );
    let _ = traffic.kill();
    let _ = traffic.wait();
    assert!(png.exists(), "no screenshot: {}", String::from_utf8_lossy(&shot.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1400, 900));
    let bytes_per_pixel = frame.line_size / frame.width as usize;
    let pixels = &pixels[..frame.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut background = 0usize;
    for pixel in pixels.chunks(bytes_per_pixel) {
        colours.insert(pixel[..3].to_vec());
        if pixel[..3] == [0x0f, 0x14, 0x19] {
            background += 1;
        }
    }
    let total = pixels.len() / bytes_per_pixel;
    assert!(colours.len() > 50, "a blank screenshot ({} colours)", colours.len());
    assert!(background < total * 9 / 10, "mostly background: {background} of {total} pixels");
    // The node cards' green "up" edge and the histogram's blue bars are on it.
    let has = |rgb: [u8; 3]| pixels.chunks(bytes_per_pixel).filter(|p| p[..3] == rgb).count() > 200;
    assert!(has([0x3c, 0xcf, 0x7a]), "no node card drawn");
    assert!(has([0x5a, 0xa9, 0xff]), "no histogram bar drawn");
}
