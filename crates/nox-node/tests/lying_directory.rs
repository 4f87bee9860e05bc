//! A node against a directory that lies (issue 33). A real HTTP directory in the test answers
//! `GET /parameters`, `GET /topology` and `POST /descriptor` as each test tells it, and the whole
//! start path (`nox_node::run`, in-process) runs against it. Each lie must end the start with a
//! typed error whose text names what was wrong, before the node listens on its link address
//! and without uploading anything more; the honest directory of the same shape is joined, so
//! the checks can fail.
//!
//! The lies: a signed document on another epoch schedule than the unsigned `/parameters` the
//! node made its keys for (epoch length, genesis, overlap, publish-ahead); `/parameters` of
//! another layer count or geometry than the node's; a document that omits the node; a
//! document signed by another key; and answers that are garbage or cut short.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use nox_directory::{NO_DOCUMENT_YET, NetworkParameters};
use nox_node::{NodeConfig, NodeError};
use nox_sphinx::{Geometry, Scheme};
use nox_test_support::topology::{NodeSpec, fill_layers, make_node};
use nox_topology::{DocumentBuilder, EpochSchedule, LayerCount, SignedDescriptor, SigningKey};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a refused start may take: ten rounds of `GET /topology` half a second apart (the
/// node's patience at start without a file), then the announcement; 2–3× an idle run.
const REFUSAL: Duration = Duration::from_secs(45);

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs()
}

/// The honest schedule: 100 s epochs, we are 50 s into epoch 10 (so the few seconds a test
/// takes never cross into an epoch the node has no key for).
fn honest_schedule(now: u64) -> EpochSchedule {
    EpochSchedule::new(now - 1_050, Duration::from_secs(100), Duration::from_secs(20), 1).expect("schedule")
}

fn geometry() -> Geometry {
    nox_topology::network_geometry_with_len(Scheme::Ristretto255, 3, nox_topology::PacketLen::default())
        .expect("the default geometry")
}

fn parameters(schedule: EpochSchedule, layers: u8, geometry: Geometry) -> NetworkParameters {
    NetworkParameters {
        schedule,
        layers: LayerCount::new(layers).expect("layers"),
        sphinx_scheme: geometry.scheme(),
        packet_len: geometry.packet_len(),
    }
}

/// A document signed by `authority` on `schedule`, issued now: one filler node per layer (keys
/// for the epochs around now), plus `extra` (the node under test, as it uploaded itself).
fn document(authority: &SigningKey, schedule: EpochSchedule, extra: Option<&SignedDescriptor>) -> Option<Vec<u8>> {
    document_with(authority, schedule, extra, 1, now_unix())
}

/// [`document`] with `per_layer` fillers in each layer, issued at `issued_at`.
fn document_with(
    authority: &SigningKey,
    schedule: EpochSchedule,
    extra: Option<&SignedDescriptor>,
    per_layer: usize,
    issued_at: u64,
) -> Option<Vec<u8>> {
    let e = schedule.epoch_at(issued_at);
    let spec = NodeSpec {
        scheme: Scheme::Ristretto255,
        epochs: e.saturating_sub(1)..=e + 2,
        layers: LayerCount::new(3).expect("layers"),
        difficulty: 0,
    };
    let mut rng = ChaCha20Rng::seed_from_u64(33);
    let fillers =
        fill_layers(spec.layers, per_layer, |i| make_node(&mut rng, &spec, ([127, 0, 0, 1], 20_001 + i).into()));
    let mut builder = DocumentBuilder::new(geometry(), schedule);
    for filler in fillers {
        builder.add_node(filler.signed);
    }
    if let Some(extra) = extra {
        builder.add_node(extra.clone());
    }
    let signed = builder.sign(authority, issued_at).ok()?;
    Some(signed.document().to_json().expect("a signed document encodes").into_bytes())
}

fn http(status: u16, body: &[u8]) -> Vec<u8> {
    let mut out =
        format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn no_document_yet() -> Vec<u8> {
    http(503, format!("{NO_DOCUMENT_YET}: the network starts when every layer has a node").as_bytes())
}

/// What the directory answers: given the request line (`GET /topology`) and the descriptors
/// uploaded so far, the raw bytes of the response (possibly not HTTP at all).
type Answer = dyn Fn(&str, &[SignedDescriptor]) -> Vec<u8> + Send + Sync;

/// A directory in the test: every request and upload is recorded.
struct Directory {
    addr: SocketAddr,
    uploads: Arc<Mutex<Vec<SignedDescriptor>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Directory {
    async fn start(answer: Arc<Answer>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let uploads: Arc<Mutex<Vec<SignedDescriptor>>> = Arc::default();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let (u, r) = (uploads.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (uploads, requests, answer) = (u.clone(), r.clone(), answer.clone());
                tokio::spawn(async move {
                    let Some((line, body)) = read_request(&mut stream).await else { return };
                    if line == "POST /descriptor"
                        && let Ok(descriptor) = SignedDescriptor::from_json(&body)
                    {
                        uploads.lock().expect("uploads").push(descriptor);
                    }
                    requests.lock().expect("requests").push(line.clone());
                    let seen = uploads.lock().expect("uploads").clone();
                    let _ = stream.write_all(&answer(&line, &seen)).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { addr, uploads, requests }
    }

    fn uploads(&self) -> usize {
        self.uploads.lock().expect("uploads").len()
    }

    fn asked(&self, line: &str) -> usize {
        self.requests.lock().expect("requests").iter().filter(|l| *l == line).count()
    }
}

/// The request line (method and path) and the body (by `content-length`), or `None` for
/// anything else.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || bytes.len() > 64 << 10 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    let mut words = head.split_whitespace();
    let line = format!("{} {}", words.next()?, words.next()?);
    Some((line, bytes[head_end..head_end + length].to_vec()))
}

/// A node's configuration against `directory`: fresh keys in a directory of its own, a link
/// address nothing else uses.
struct TestNode {
    config: NodeConfig,
    listen: SocketAddr,
    dir: PathBuf,
}

impl TestNode {
    fn new(name: &str, directory: SocketAddr, authority: &SigningKey) -> Self {
        let dir = std::env::temp_dir().join(format!("nox-lying-directory-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("state directory");
        let keys = dir.join("keys");
        let mut rng = ChaCha20Rng::from_os_rng();
        nox_keystore::generate_identity(&keys, &mut rng).expect("node identity");
        let listen = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address");
        let text = format!(
            "[node]\nkey_dir = \"{}\"\nlisten = \"{listen}\"\n[topology]\nurl = \"http://{directory}\"\nauthority_key = \"{}\"\n\
             [cover]\nloop_rate = 0.0\ndrop_rate = 0.0\n",
            keys.display(),
            hex::encode(authority.verifying_key().to_bytes()),
        );
        let config: NodeConfig = toml::from_str(&text).expect("node configuration");
        Self { config, listen, dir }
    }

    fn listening(&self) -> bool {
        std::net::TcpStream::connect_timeout(&self.listen, Duration::from_millis(200)).is_ok()
    }

    /// Runs the node until it returns; a lie must make it return an error within [`REFUSAL`].
    async fn refused(&self) -> NodeError {
        let (_stop, stop_rx) = tokio::sync::watch::channel(false);
        match tokio::time::timeout(REFUSAL, nox_node::run(self.config.clone(), stop_rx)).await {
            Err(_) => panic!("the node still runs after {REFUSAL:?}: the lie was not refused"),
            Ok(Ok(())) => panic!("the node ran and stopped cleanly: the lie was not refused"),
            Ok(Err(error)) => error,
        }
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// After a refusal: the node does not listen, and nothing more is uploaded (the background
/// uploader offers the keys at once when it is started; it must never be).
async fn assert_stopped(node: &TestNode, directory: &Directory, uploads_at_refusal: usize) {
    assert!(!node.listening(), "a refused node listens on {}", node.listen);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(directory.uploads(), uploads_at_refusal, "a refused node went on uploading its descriptor");
}

/// One case of a test, run beside the others.
type Case = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs `cases` at once (each with its own directory and node: a start spends most of its time
/// waiting between rounds) and fails with the first case's own panic.
async fn all(cases: Vec<Case>) {
    let mut set = tokio::task::JoinSet::new();
    for case in cases {
        set.spawn(case);
    }
    while let Some(done) = set.join_next().await {
        if let Err(error) = done {
            match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(error) => panic!("a case did not finish: {error}"),
            }
        }
    }
}

/// The directory of a network that has no document yet: `/parameters` as given, `/topology`
/// 503 until the node uploads, then a document on `document_schedule` naming it.
fn empty_start(authority: SigningKey, served: NetworkParameters, document_schedule: EpochSchedule) -> Arc<Answer> {
    Arc::new(move |line: &str, uploads: &[SignedDescriptor]| match line {
        "GET /parameters" => http(200, served.render().as_bytes()),
        "POST /descriptor" => http(200, b"accepted"),
        "GET /topology" => match uploads.last().and_then(|mine| document(&authority, document_schedule, Some(mine))) {
            Some(json) => http(200, &json),
            None => no_document_yet(),
        },
        _ => http(404, b"no such endpoint"),
    })
}

/// The honest case of the same directory: `/parameters` and the document agree; the node
/// announces itself, runs (listens on its link address) and stops cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_empty_directory_is_joined() {
    let authority = SigningKey::from_bytes(&[41; 32]);
    let schedule = honest_schedule(now_unix());
    let directory =
        Directory::start(empty_start(authority.clone(), parameters(schedule, 3, geometry()), schedule)).await;
    let node = TestNode::new("honest", directory.addr, &authority);
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let run = nox_node::run(node.config.clone(), stop_rx);
    tokio::pin!(run);
    let deadline = Instant::now() + REFUSAL;
    loop {
        tokio::select! {
            ended = &mut run => panic!("the node stopped against an honest directory: {ended:?}"),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        if node.listening() {
            break;
        }
        assert!(Instant::now() < deadline, "the node did not start within {REFUSAL:?}");
    }
    assert!(directory.uploads() >= 1, "the node announced itself");
    assert!(directory.asked("GET /parameters") >= 1, "the node read the parameters");
    stop.send(true).expect("stop");
    let stopped = tokio::time::timeout(Duration::from_secs(30), &mut run).await.expect("stops within 30 s");
    stopped.expect("a clean stop");
}

/// `/parameters` (unsigned) names one schedule, the signed document that finally names the
/// node another: each difference is refused with both schedules in the error, after the one
/// announcement and before the node listens. Each lie keeps the document's issue epoch among
/// the node's keys, so the document verifies and only the comparison can catch it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_on_another_schedule_than_the_parameters_is_refused() {
    let now = now_unix();
    let promised = honest_schedule(now);
    let lies = [
        // 200 s epochs, genesis moved so that now is in epoch 10 too.
        EpochSchedule::new(now - 2_050, Duration::from_secs(200), Duration::from_secs(20), 1).expect("schedule"),
        // Genesis 30 s earlier: the same epoch number now, other boundaries.
        EpochSchedule::new(now - 1_080, Duration::from_secs(100), Duration::from_secs(20), 1).expect("schedule"),
        // Overlap and publish-ahead are the schedule too.
        EpochSchedule::new(now - 1_050, Duration::from_secs(100), Duration::from_secs(30), 1).expect("schedule"),
        EpochSchedule::new(now - 1_050, Duration::from_secs(100), Duration::from_secs(20), 2).expect("schedule"),
    ];
    let mut cases: Vec<Case> = Vec::new();
    for (i, lie) in lies.into_iter().enumerate() {
        cases.push(Box::pin(async move {
        assert_eq!(lie.epoch_at(now_unix()), promised.epoch_at(now_unix()), "lie {i} keeps the epoch");
        let authority = SigningKey::from_bytes(&[42; 32]);
        let directory =
            Directory::start(empty_start(authority.clone(), parameters(promised, 3, geometry()), lie)).await;
        let node = TestNode::new(&format!("schedule-{i}"), directory.addr, &authority);
        let error = node.refused().await;
        let text = error.to_string();
        assert!(matches!(error, NodeError::Topology(_)), "{error:?}");
        let told = format!(
            "its schedule is genesis {} with {} s epochs, {} s overlap, {} published ahead, /parameters said genesis {} \
             with 100 s epochs, 20 s overlap, 1 published ahead",
            lie.genesis_unix(),
            lie.epoch_length().as_secs(),
            lie.overlap().as_secs(),
            lie.publish_ahead(),
            promised.genesis_unix(),
        );
        assert!(text.contains(&told), "lie {i}: {text}");
        assert!(text.contains("not running on it") && !text.contains("layers"), "lie {i}: {text}");
        assert_eq!(directory.uploads(), 1, "lie {i}: announced once, for the first document");
        assert_stopped(&node, &directory, 1).await;
        }));
    }
    all(cases).await;
}

/// `/parameters` of another layer count than the node's geometry (its hop count): the node
/// could never be in a document its packets fit, so it refuses at once, naming both counts,
/// without announcing a descriptor claiming a layer of the lie's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_of_another_layer_count_are_refused_before_announcing() {
    let mut cases: Vec<Case> = Vec::new();
    for layers in [4u8, 2] {
        cases.push(Box::pin(async move {
            let authority = SigningKey::from_bytes(&[43; 32]);
            let schedule = honest_schedule(now_unix());
            let served = parameters(schedule, layers, geometry());
            let directory = Directory::start(empty_start(authority.clone(), served, schedule)).await;
            let node = TestNode::new(&format!("layers-{layers}"), directory.addr, &authority);
            let started = Instant::now();
            let error = node.refused().await;
            let text = error.to_string();
            assert!(matches!(error, NodeError::Topology(_)), "{error:?}");
            assert!(text.contains(&format!("the directory's network has {layers} layers")), "{text}");
            assert!(text.contains("this node's geometry has 3 hops"), "{text}");
            assert_eq!(directory.uploads(), 0, "{layers} layers: nothing announced");
            assert!(started.elapsed() < REFUSAL, "refused in {:?}", started.elapsed());
            assert_stopped(&node, &directory, 0).await;
        }));
    }
    all(cases).await;
}

/// `/parameters` of another geometry (packet length, scheme): refused before announcing,
/// naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_of_another_geometry_are_refused_before_announcing() {
    let other_len = nox_topology::network_geometry_with_len(
        Scheme::Ristretto255,
        3,
        nox_topology::PacketLen::new(8192).expect("a packet length"),
    )
    .expect("geometry");
    let other_scheme =
        nox_topology::network_geometry_with_len(Scheme::X25519Kem, 3, nox_topology::PacketLen::default())
            .expect("geometry");
    let mut cases: Vec<Case> = Vec::new();
    for (i, other) in [other_len, other_scheme].into_iter().enumerate() {
        cases.push(Box::pin(async move {
            let authority = SigningKey::from_bytes(&[44; 32]);
            let schedule = honest_schedule(now_unix());
            let directory =
                Directory::start(empty_start(authority.clone(), parameters(schedule, 3, other), schedule)).await;
            let node = TestNode::new(&format!("geometry-{i}"), directory.addr, &authority);
            let error = node.refused().await;
            let text = error.to_string();
            let told = format!(
                "the directory runs {} packets of {} bytes; this node is configured for {} packets of {} bytes",
                other.scheme(),
                other.packet_len(),
                geometry().scheme(),
                geometry().packet_len()
            );
            assert!(text.contains(&told), "{text}");
            assert_eq!(directory.uploads(), 0, "nothing announced");
            assert_stopped(&node, &directory, 0).await;
        }));
    }
    all(cases).await;
}

/// A signed, valid document that does not name the node (a node without an operator does not
/// announce itself into a running network): refused, naming the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_that_omits_the_node_is_refused() {
    let authority = SigningKey::from_bytes(&[45; 32]);
    let schedule = honest_schedule(now_unix());
    let served = parameters(schedule, 3, geometry());
    let answer: Arc<Answer> = {
        let authority = authority.clone();
        Arc::new(move |line: &str, _: &[SignedDescriptor]| match line {
            "GET /parameters" => http(200, served.render().as_bytes()),
            "GET /topology" => http(200, &document(&authority, schedule, None).expect("a document")),
            _ => http(200, b"accepted"),
        })
    };
    let directory = Directory::start(answer).await;
    let node = TestNode::new("omitted", directory.addr, &authority);
    let error = node.refused().await;
    assert!(matches!(error, NodeError::NotInTopology(_)), "{error:?}");
    assert!(error.to_string().contains("is not in the topology"), "{error}");
    assert_stopped(&node, &directory, 0).await;
}

/// What a lying or broken directory answers to `GET /topology`, and to `GET /parameters`.
struct Garbage {
    name: &'static str,
    topology: Vec<u8>,
    parameters: Vec<u8>,
    /// A word the error must contain (what was wrong).
    reason: &'static str,
}

fn garbage_cases(authority: &SigningKey, served: &NetworkParameters) -> Vec<Garbage> {
    let schedule = served.schedule;
    let json = document(authority, schedule, None).expect("a document");
    let forged = document(&SigningKey::from_bytes(&[99; 32]), schedule, None).expect("a document");
    let honest_parameters = http(200, served.render().as_bytes());
    let half_parameters = served.render().as_bytes()[..20].to_vec();
    vec![
        Garbage {
            name: "not JSON, no parameters",
            topology: http(200, b"<html>hello</html>"),
            parameters: http(200, b"<html>hello</html>"),
            reason: "document",
        },
        Garbage {
            name: "a truncated document and truncated parameters",
            topology: http(200, &json[..json.len() / 2]),
            parameters: http(200, &half_parameters),
            reason: "document",
        },
        Garbage {
            name: "a body shorter than its content-length",
            topology: {
                let mut cut = http(200, &json);
                cut.truncate(cut.len() - 10);
                cut
            },
            parameters: b"HTTP/1.1 200 OK\r\ncontent-length: 400\r\n\r\ngenesis_unix".to_vec(),
            reason: "connection closed before the message was complete",
        },
        Garbage {
            name: "binary bytes instead of HTTP",
            topology: vec![0xff, 0x00, 0xfe, b'\r', b'\n', b'\r', b'\n', 0x80],
            parameters: vec![0x00; 64],
            reason: "directory response",
        },
        Garbage { name: "no answer at all", topology: Vec::new(), parameters: Vec::new(), reason: "directory" },
        // The two below serve honest parameters: the node must not take a broken or forged
        // document for "no document yet" and announce itself into it.
        Garbage {
            name: "a truncated document beside honest parameters",
            topology: http(200, &json[..json.len() - 1]),
            parameters: honest_parameters.clone(),
            reason: "document",
        },
        Garbage {
            name: "a document signed by another key beside honest parameters",
            topology: http(200, &forged),
            parameters: honest_parameters,
            reason: "signature",
        },
    ]
}

/// Garbage, truncated, forged or missing answers: each start ends with a topology error
/// naming the directory and what was wrong; no panic, no announcement, no listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_truncated_answers_are_clear_errors() {
    let authority = SigningKey::from_bytes(&[46; 32]);
    let served = parameters(honest_schedule(now_unix()), 3, geometry());
    let mut cases: Vec<Case> = Vec::new();
    for (i, case) in garbage_cases(&authority, &served).into_iter().enumerate() {
        let authority = authority.clone();
        cases.push(Box::pin(async move {
            let Garbage { name, topology, parameters, reason } = case;
            let answer: Arc<Answer> = Arc::new(move |line: &str, _: &[SignedDescriptor]| match line {
                "GET /topology" => topology.clone(),
                "GET /parameters" => parameters.clone(),
                _ => http(200, b"accepted"),
            });
            let directory = Directory::start(answer).await;
            let node = TestNode::new(&format!("garbage-{i}"), directory.addr, &authority);
            let started = Instant::now();
            let error = node.refused().await;
            let text = error.to_string();
            assert!(matches!(error, NodeError::Topology(_)), "{name}: {error:?}");
            assert!(text.contains(&directory.addr.to_string()) && text.contains(reason), "{name}: {text}");
            assert_eq!(directory.uploads(), 0, "{name}: nothing announced");
            assert!(started.elapsed() < REFUSAL, "{name}: refused in {:?}", started.elapsed());
            assert_stopped(&node, &directory, 0).await;
        }));
    }
    all(cases).await;
}

/// `GET /metrics` of a running node: the value of `name`, if it answers.
async fn metric(addr: SocketAddr, name: &str) -> Option<u64> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: node\r\nconnection: close\r\n\r\n").await.ok()?;
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut text)).await.ok()?.ok()?;
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// What the directory of the refresh test serves (switched by the test).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refresh {
    /// The document the node runs on: three fillers and the node, issued now (503 until the node
    /// has uploaded its descriptor).
    Honest,
    /// Six fillers and the node, on another schedule.
    OtherSchedule,
    /// Six fillers and the node, issued before the document the node runs on.
    Older,
    /// Six fillers, without the node.
    WithoutTheNode,
    /// Six fillers and the node, issued now: the update a node must take.
    Newer,
}

/// A running node refreshes its document every second: a refresh on another schedule, older
/// than the current document or without the node is not taken (the node keeps its 4 nodes and
/// runs on), and the honest newer document is (7 nodes), so the checks can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_refreshes_are_not_taken_and_an_honest_one_is() {
    let authority = SigningKey::from_bytes(&[47; 32]);
    let now = now_unix();
    // 10 s into epoch 10: the test ends well before the next epoch.
    let schedule =
        EpochSchedule::new(now - 1_010, Duration::from_secs(100), Duration::from_secs(20), 1).expect("schedule");
    let other =
        EpochSchedule::new(now - 1_010, Duration::from_secs(100), Duration::from_secs(30), 1).expect("schedule");
    let phase = Arc::new(Mutex::new(Refresh::Honest));
    let answer: Arc<Answer> = {
        let (authority, phase) = (authority.clone(), phase.clone());
        Arc::new(move |line: &str, uploads: &[SignedDescriptor]| {
            let phase = *phase.lock().expect("phase");
            let mine = uploads.last();
            let now = now_unix();
            let json = match phase {
                // An empty start: no document until the node has announced itself.
                Refresh::Honest => mine.and_then(|m| document_with(&authority, schedule, Some(m), 1, now)),
                Refresh::OtherSchedule => document_with(&authority, other, mine, 2, now),
                Refresh::Older => document_with(&authority, schedule, mine, 2, now - 20),
                Refresh::WithoutTheNode => document_with(&authority, schedule, None, 2, now),
                Refresh::Newer => document_with(&authority, schedule, mine, 2, now),
            };
            match (line, json) {
                ("GET /parameters", _) => http(200, parameters(schedule, 3, geometry()).render().as_bytes()),
                ("POST /descriptor", _) => http(200, b"accepted"),
                ("GET /topology", Some(json)) => http(200, &json),
                ("GET /topology", None) => no_document_yet(),
                _ => http(404, b"no such endpoint"),
            }
        })
    };
    let directory = Directory::start(answer).await;
    let mut node = TestNode::new("refresh", directory.addr, &authority);
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address");
    node.config.node.metrics = Some(metrics);
    node.config.topology.refresh_secs = 1;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let run = tokio::spawn(nox_node::run(node.config.clone(), stop_rx));
    let wait_for = |want: u64, what: &'static str| {
        let run_finished = || run.is_finished();
        async move {
            let deadline = Instant::now() + REFUSAL;
            loop {
                assert!(!run_finished(), "the node stopped ({what})");
                if metric(metrics, "nox_topology_nodes").await == Some(want) {
                    return;
                }
                assert!(Instant::now() < deadline, "{what}: no {want} nodes within {REFUSAL:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    wait_for(4, "started on the honest document").await;
    for lie in [Refresh::OtherSchedule, Refresh::Older, Refresh::WithoutTheNode] {
        *phase.lock().expect("phase") = lie;
        // Three refreshes of the lie, each a full fetch and verification.
        let asked = directory.asked("GET /topology");
        let deadline = Instant::now() + REFUSAL;
        while directory.asked("GET /topology") < asked + 3 {
            assert!(Instant::now() < deadline, "{lie:?}: the node stopped refreshing");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(!run.is_finished(), "{lie:?}: the node stopped");
        assert_eq!(metric(metrics, "nox_topology_nodes").await, Some(4), "{lie:?} was taken");
    }
    *phase.lock().expect("phase") = Refresh::Newer;
    wait_for(7, "the honest newer document").await;
    stop.send(true).expect("stop");
    let stopped = tokio::time::timeout(Duration::from_secs(30), run).await.expect("stops within 30 s");
    stopped.expect("no panic").expect("a clean stop");
}
