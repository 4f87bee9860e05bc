//! The lying directory's harness: a real HTTP directory answering as each test tells it, a node
//! configured against it, the documents and parameters the tests serve, and the checks after a
//! refusal.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
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
pub(crate) const REFUSAL: Duration = Duration::from_secs(45);

pub(crate) fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs()
}

/// The honest schedule: 100 s epochs, we are 50 s into epoch 10 (so the few seconds a test
/// takes never cross into an epoch the node has no key for).
pub(crate) fn honest_schedule(now: u64) -> EpochSchedule {
    EpochSchedule::new(now - 1_050, Duration::from_secs(100), Duration::from_secs(20), 1).expect("schedule")
}

pub(crate) fn geometry() -> Geometry {
    nox_topology::network_geometry_with_len(Scheme::Ristretto255, 3, nox_topology::PacketLen::default())
        .expect("the default geometry")
}

pub(crate) fn parameters(schedule: EpochSchedule, layers: u8, geometry: Geometry) -> NetworkParameters {
    NetworkParameters {
        schedule,
        layers: LayerCount::new(layers).expect("layers"),
        sphinx_scheme: geometry.scheme(),
        packet_len: geometry.packet_len(),
    }
}

/// A document signed by `authority` on `schedule`, issued now: one filler node per layer (keys
/// for the epochs around now), plus `extra` (the node under test, as it uploaded itself).
pub(crate) fn document(
    authority: &SigningKey,
    schedule: EpochSchedule,
    extra: Option<&SignedDescriptor>,
) -> Option<Vec<u8>> {
    document_with(authority, schedule, extra, 1, now_unix())
}

/// [`document`] with `per_layer` fillers in each layer, issued at `issued_at`.
pub(crate) fn document_with(
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

pub(crate) fn http(status: u16, body: &[u8]) -> Vec<u8> {
    let mut out =
        format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

pub(crate) fn no_document_yet() -> Vec<u8> {
    http(503, format!("{NO_DOCUMENT_YET}: the network starts when every layer has a node").as_bytes())
}

/// What the directory answers: given the request line (`GET /topology`) and the descriptors
/// uploaded so far, the raw bytes of the response (possibly not HTTP at all).
pub(crate) type Answer = dyn Fn(&str, &[SignedDescriptor]) -> Vec<u8> + Send + Sync;

/// A directory in the test: every request and upload is recorded.
pub(crate) struct Directory {
    pub(crate) addr: SocketAddr,
    uploads: Arc<Mutex<Vec<SignedDescriptor>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Directory {
    pub(crate) async fn start(answer: Arc<Answer>) -> Self {
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

    pub(crate) fn uploads(&self) -> usize {
        self.uploads.lock().expect("uploads").len()
    }

    pub(crate) fn asked(&self, line: &str) -> usize {
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
pub(crate) struct TestNode {
    pub(crate) config: NodeConfig,
    listen: SocketAddr,
    dir: PathBuf,
}

impl TestNode {
    pub(crate) fn new(name: &str, directory: SocketAddr, authority: &SigningKey) -> Self {
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

    pub(crate) fn listening(&self) -> bool {
        std::net::TcpStream::connect_timeout(&self.listen, Duration::from_millis(200)).is_ok()
    }

    /// Runs the node until it returns; a lie must make it return an error within [`REFUSAL`].
    pub(crate) async fn refused(&self) -> NodeError {
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
pub(crate) async fn assert_stopped(node: &TestNode, directory: &Directory, uploads_at_refusal: usize) {
    assert!(!node.listening(), "a refused node listens on {}", node.listen);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(directory.uploads(), uploads_at_refusal, "a refused node went on uploading its descriptor");
}

/// One case of a test, run beside the others.
pub(crate) type Case = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs `cases` at once (each with its own directory and node: a start spends most of its time
/// waiting between rounds) and fails with the first case's own panic.
pub(crate) async fn all(cases: Vec<Case>) {
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
pub(crate) fn empty_start(
    authority: SigningKey,
    served: NetworkParameters,
    document_schedule: EpochSchedule,
) -> Arc<Answer> {
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
