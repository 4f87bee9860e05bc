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
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use nox_directory::NetworkParameters;
use nox_node::NodeError;
use nox_sphinx::Scheme;
use nox_topology::{EpochSchedule, SignedDescriptor, SigningKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// The harness lives beside this file; one test binary (each binary costs a link in CI).
#[path = "lying_directory/harness.rs"]
mod harness;

use harness::{
    Answer, Case, Directory, REFUSAL, TestNode, all, assert_stopped, document, document_with, empty_start, geometry,
    honest_schedule, http, no_document_yet, now_unix, parameters,
};

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
