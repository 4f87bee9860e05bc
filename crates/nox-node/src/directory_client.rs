//! The node's side of the directory (docs/spec/directory.md): a refreshable topology shared by
//! the link layer, the layer rule and cover traffic; fetching and verifying it at start and
//! every `refresh_secs`; uploading the node's self-signed descriptor whenever its published
//! epoch keys change.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use nox_directory::Mirrors;
use nox_keystore::{EpochKeyStore, NodeIdentity};
use nox_link::{
    LinkPublicKey,
    transport::{PeerDirectory, PeerFilter},
};
use nox_sphinx::{Geometry, NodeId};
use nox_topology::{EpochKey, EpochSchedule, LayerCount, VerifiedTopology};
use tokio::sync::watch;

use crate::{NodeError, TopologySection, trust::Trust};

/// The file, in the node's key directory, holding the last topology document it verified.
pub const LAST_VERIFIED: &str = "topology.last.json";

/// Time allowed for one exchange with the directory.
const TIMEOUT: Duration = Duration::from_secs(5);

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

struct View {
    topology: Arc<VerifiedTopology>,
    address_of: HashMap<LinkPublicKey, SocketAddr>,
    node_of: HashMap<LinkPublicKey, NodeId>,
    link_key_of: HashMap<NodeId, LinkPublicKey>,
}

impl View {
    fn new(topology: VerifiedTopology) -> Arc<Self> {
        let mut view = Self {
            address_of: HashMap::new(),
            node_of: HashMap::new(),
            link_key_of: HashMap::new(),
            topology: Arc::new(topology),
        };
        for node in view.topology.nodes() {
            let key = LinkPublicKey(node.descriptor.link_key.to_bytes());
            view.address_of.insert(key, node.descriptor.address);
            view.node_of.insert(key, node.id);
            view.link_key_of.insert(node.id, key);
        }
        Arc::new(view)
    }
}

/// The node's current verified topology, replaced as a whole when a newer one is verified.
/// Cheap to clone; readers take an `Arc` snapshot and never block the refresher for long.
#[derive(Clone)]
pub struct SharedTopology(Arc<RwLock<Arc<View>>>);

impl std::fmt::Debug for SharedTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTopology").field("fingerprint", &self.current().fingerprint()).finish()
    }
}

impl SharedTopology {
    /// Starts with `topology`.
    pub fn new(topology: VerifiedTopology) -> Self {
        Self(Arc::new(RwLock::new(View::new(topology))))
    }

    fn view(&self) -> Arc<View> {
        match self.0.read() {
            Ok(view) => view.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The topology node behind a link key (an authenticated peer).
    pub fn node_of(&self, key: &LinkPublicKey) -> Option<NodeId> {
        self.view().node_of.get(key).copied()
    }

    /// The link key of a topology node (where to send its packets).
    pub fn link_key_of(&self, id: &NodeId) -> Option<LinkPublicKey> {
        self.view().link_key_of.get(id).copied()
    }

    /// The current topology.
    pub fn current(&self) -> Arc<VerifiedTopology> {
        self.view().topology.clone()
    }

    /// Makes `topology` current.
    pub fn replace(&self, topology: VerifiedTopology) {
        let view = View::new(topology);
        match self.0.write() {
            Ok(mut slot) => *slot = view,
            Err(poisoned) => *poisoned.into_inner() = view,
        }
    }
}

/// Links accept node keys of the current topology.
impl PeerFilter for SharedTopology {
    fn allows(&self, key: &LinkPublicKey) -> bool {
        self.view().address_of.contains_key(key)
    }
}

/// Links dial the addresses of the current topology.
impl PeerDirectory for SharedTopology {
    fn address(&self, peer: &LinkPublicKey) -> Option<SocketAddr> {
        self.view().address_of.get(peer).copied()
    }
}

impl TopologySection {
    /// The directory mirrors, `url` first then `mirrors`; `None` when neither is set.
    pub fn directory(&self) -> Result<Option<Mirrors>, NodeError> {
        if self.url.is_none() && self.mirrors.is_empty() {
            return Ok(None);
        }
        Mirrors::parse(self.url.iter().chain(&self.mirrors)).map(Some).map_err(|e| NodeError::Topology(e.to_string()))
    }
}

/// A verified document from the first mirror that serves one, under `trust` (for the registry:
/// the membership read now, or the last verified one if the chain cannot be read).
async fn fetch_verified(mirrors: &Mirrors, trust: &Trust, geometry: &Geometry) -> Result<VerifiedTopology, String> {
    let config = trust.verify_config(geometry).await;
    let verified =
        mirrors.fetch(TIMEOUT, |document| document.verify(&config, now_unix())).await.map_err(|e| e.to_string())?;
    for (node, reason) in verified.rejected() {
        tracing::warn!(node = %hex::encode(&node.0[..4]), %reason, "descriptor refused");
    }
    Ok(verified)
}

/// Keeps the last topology document this node verified from its directory, so that a node
/// restarted while every mirror is down starts on it (verified again, under the trust of the
/// moment) rather than on an older `file` or not at all.
fn remember(cache: Option<&Path>, topology: &VerifiedTopology) {
    let Some(path) = cache else { return };
    match topology.document().to_json() {
        Ok(json) => keep(path, json.as_bytes(), "the last verified topology"),
        Err(error) => tracing::warn!(%error, "cannot keep the last verified topology"),
    }
}

/// Replaces `path` with `bytes` by writing a temporary file and renaming it over `path`: a crash
/// leaves the previous content or the new one, never half. A failure is logged as not keeping
/// `what` (the node runs on; only its next restart loses the copy).
pub(crate) fn keep(path: &Path, bytes: &[u8], what: &str) {
    let temporary = path.with_extension("json.tmp");
    let kept = std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = kept {
        tracing::warn!(%error, path = %path.display(), "cannot keep {what}");
    }
}

/// The topology at start: from the directory mirrors (a few rounds), else the last document
/// this node verified (`cache`, kept by [`remember`]), else `file`; each verified under
/// `trust` now.
pub async fn initial_topology(
    section: &TopologySection,
    geometry: &Geometry,
    trust: &Trust,
    cache: Option<&Path>,
) -> Result<VerifiedTopology, NodeError> {
    if let Some(mirrors) = section.directory()? {
        let cached = cache.filter(|path| path.exists());
        let tries = if section.file.is_some() || cached.is_some() { 1 } else { 10 };
        let mut last = String::new();
        for attempt in 0..tries {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            match fetch_verified(&mirrors, trust, geometry).await {
                Ok(topology) => {
                    remember(cache, &topology);
                    return Ok(topology);
                }
                Err(error) => last = error,
            }
        }
        if let Some(path) = cached {
            match crate::runtime::load_topology_with(path, trust, geometry).await {
                Ok(topology) => {
                    tracing::warn!(error = %last, issued_at = topology.issued_at(), "directory unavailable at start; using the last verified topology");
                    return Ok(topology);
                }
                Err(error) => tracing::warn!(%error, "the last verified topology no longer verifies"),
            }
        }
        match &section.file {
            Some(_) => tracing::warn!(error = %last, "directory unavailable at start; using the topology file"),
            None => return Err(NodeError::Topology(last)),
        }
    }
    match &section.file {
        Some(file) => crate::runtime::load_topology_with(file, trust, geometry).await,
        None => Err(NodeError::Topology("[topology] needs `file` or `url`".into())),
    }
}

/// Hands the node's published epoch keys to the uploader (a no-op without a directory).
pub struct Publisher(Option<watch::Sender<Vec<EpochKey>>>);

impl Publisher {
    /// Offers the keys `store` publishes at `now`; uploaded if they differ from the last
    /// accepted upload. Call after every rotation.
    pub fn offer(&self, store: &EpochKeyStore, now: u64) {
        let Some(tx) = &self.0 else { return };
        match store.public_keys(store.schedule().published_epochs(now)) {
            Ok(keys) => {
                tx.send_if_modified(|current| {
                    let changed = *current != keys;
                    if changed {
                        *current = keys;
                    }
                    changed
                });
            }
            Err(error) => tracing::warn!(%error, "cannot read the public epoch keys to publish"),
        }
    }
}

/// How long a new node waits to appear in the directory's document after announcing itself
/// (the directory admits it once it has re-read the registry, every few seconds).
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a node of a network that has no document yet (a directory started empty) waits for
/// the first one: until every layer has a node, which takes as long as the last operator of the
/// first set takes to start.
pub const FIRST_DOCUMENT_TIMEOUT: Duration = Duration::from_secs(600);

/// The network's parameters from the first mirror that serves them (`GET /parameters`), for a
/// node whose directory has no document yet; `None` without a directory, when no mirror says
/// it has no document yet (a 503 [`nox_directory::NO_DOCUMENT_YET`]: a document that does not
/// parse or verify is the directory's failure, not an empty start to announce into) or when no
/// mirror serves them. Parameters of another geometry or layer count than the node's are an
/// error: the node could never run on that network.
pub async fn network_parameters(
    section: &TopologySection,
    geometry: &Geometry,
) -> Result<Option<nox_directory::NetworkParameters>, NodeError> {
    let Some(mirrors) = section.directory()? else { return Ok(None) };
    if !mirrors.first_document_pending(TIMEOUT).await {
        return Ok(None);
    }
    let p = match mirrors.parameters(TIMEOUT).await {
        Ok(p) => p,
        Err(error) => {
            tracing::debug!(%error, "no network parameters");
            return Ok(None);
        }
    };
    if p.sphinx_scheme != geometry.scheme() || p.packet_len != geometry.packet_len() {
        return Err(NodeError::Topology(format!(
            "the directory runs {} packets of {} bytes; this node is configured for {} packets of {} bytes",
            p.sphinx_scheme,
            p.packet_len,
            geometry.scheme(),
            geometry.packet_len()
        )));
    }
    // The layer count is the packets' hop count: a descriptor claiming a layer of another count
    // is in no document this node's packets fit (refused before announcing it).
    if usize::from(p.layers.get()) != geometry.hops() {
        return Err(NodeError::Topology(format!(
            "the directory's network has {} layers; this node's geometry has {} hops ([node] layers)",
            p.layers.get(),
            geometry.hops()
        )));
    }
    Ok(Some(p))
}

/// A node that announced itself made its epoch keys for one schedule and claimed a layer of
/// one layer count, both from `expected` (a network's `GET /parameters` when it had no document
/// yet, else the document the node started from). The document that finally names it must
/// carry the same: a node running on another schedule would publish keys for epochs nobody
/// else is in, and on another layer count sits in a layer the document does not assign it.
/// The refusal names both values and where the expected ones came from.
pub fn check_announced_document(
    document: &VerifiedTopology,
    expected: (&EpochSchedule, LayerCount),
    expected_from: &str,
) -> Result<(), NodeError> {
    check_same_parameters((document.schedule(), document.layers()), expected, expected_from)
}

fn check_same_parameters(
    document: (&EpochSchedule, LayerCount),
    expected: (&EpochSchedule, LayerCount),
    expected_from: &str,
) -> Result<(), NodeError> {
    let mut differences = Vec::new();
    if document.0 != expected.0 {
        differences.push(format!(
            "its schedule is {}, {expected_from} said {}",
            describe_schedule(document.0),
            describe_schedule(expected.0)
        ));
    }
    if document.1 != expected.1 {
        differences.push(format!("it has {} layers, {expected_from} said {}", document.1.get(), expected.1.get()));
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(NodeError::Topology(format!(
        "the directory's document differs from what this node's keys were made for: {} (not running on it)",
        differences.join("; ")
    )))
}

fn describe_schedule(s: &EpochSchedule) -> String {
    format!(
        "genesis {} with {} s epochs, {} s overlap, {} published ahead",
        s.genesis_unix(),
        s.epoch_length().as_secs(),
        s.overlap().as_secs(),
        s.publish_ahead()
    )
}

/// A registered node that the directory's document does not name yet (a new node joining a
/// running network): uploads `descriptor` (its first, with the operator's statements) to every
/// mirror until a verified document names the node, and returns that document. Without this,
/// a node could only join a network whose directory someone had given its descriptor already.
pub async fn announce(
    section: &TopologySection,
    geometry: &Geometry,
    trust: &Trust,
    descriptor: &nox_topology::SignedDescriptor,
    me: NodeId,
    patience: Duration,
) -> Result<VerifiedTopology, NodeError> {
    let Some(mirrors) = section.directory()? else {
        return Err(NodeError::NotInTopology(format!("{} (no directory to announce it to)", hex::encode(&me.0[..4]))));
    };
    let deadline = tokio::time::Instant::now() + patience;
    let mut last = String::new();
    loop {
        for &addr in mirrors.addrs() {
            match nox_directory::upload_descriptor(addr, descriptor, TIMEOUT).await {
                Ok(answer) => tracing::info!(%answer, %addr, "first descriptor announced"),
                Err(error) => last = format!("{addr}: {error}"),
            }
        }
        match fetch_verified(&mirrors, trust, geometry).await {
            Ok(topology) if topology.node(&me).is_some() => return Ok(topology),
            Ok(_) => {}
            Err(error) => last = error,
        }
        if tokio::time::Instant::now() > deadline {
            return Err(NodeError::NotInTopology(format!(
                "{}: announced for {} s, not admitted by the directory ({last})",
                hex::encode(&me.0[..4]),
                patience.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Starts the refresh task and one upload task per mirror when a directory is configured. `initial` is the topology the
/// node started with (it fixes the node's address, the layer count and the schedule).
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    section: &TopologySection,
    geometry: &Geometry,
    trust: &Trust,
    operator: Option<Arc<crate::OperatorSigner>>,
    identity: NodeIdentity,
    pow_difficulty: u8,
    shared: &SharedTopology,
    cache: Option<PathBuf>,
    shutdown: &watch::Receiver<bool>,
) -> Result<Publisher, NodeError> {
    let Some(mirrors) = section.directory()? else { return Ok(Publisher(None)) };
    let initial = shared.current();
    let me = identity.node_id();
    // The node's endpoints are those of its entry in the topology it started with: its link
    // address and, for an entry or gateway, its WebSocket client endpoint (kept on republish).
    let mine = &initial.node(&me).ok_or_else(|| NodeError::NotInTopology(hex::encode(&me.0[..4])))?.descriptor;
    let (address, websocket, websocket_tls) = (mine.address, mine.websocket, mine.websocket_tls);
    let schedule = *initial.schedule();
    let period = match section.refresh_secs {
        0 => Duration::from_secs((schedule.epoch_length().as_secs() / 4).clamp(1, 300)),
        n => Duration::from_secs(n),
    };
    let (tx, rx) = watch::channel(Vec::new());
    // Every mirror holds its own registry: each gets the descriptor, and tracks what it accepted.
    for &addr in mirrors.addrs() {
        let upload = Upload {
            addr,
            identity: identity.clone(),
            address,
            websocket,
            websocket_tls,
            pow_difficulty,
            layers: initial.layers(),
            retry: period,
            operator: operator.clone(),
        };
        tokio::spawn(upload.run(rx.clone(), shutdown.clone()));
    }
    let refresh =
        Refresh { mirrors, trust: trust.clone(), geometry: *geometry, shared: shared.clone(), me, period, cache };
    tokio::spawn(refresh.run(shutdown.clone()));
    Ok(Publisher(Some(tx)))
}

/// The refresh task: fetches and verifies the document every `period`, keeps it (and
/// [`remember`]s it) if it is newer and still names this node.
struct Refresh {
    mirrors: Mirrors,
    trust: Trust,
    geometry: Geometry,
    shared: SharedTopology,
    me: NodeId,
    period: Duration,
    cache: Option<PathBuf>,
}

impl Refresh {
    async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let Self { mirrors, trust, geometry, shared, me, period, cache } = self;
        loop {
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            let fresh = match fetch_verified(&mirrors, &trust, &geometry).await {
                Ok(fresh) => fresh,
                Err(error) => {
                    tracing::warn!(%error, "topology refresh failed; keeping the current one");
                    continue;
                }
            };
            let current = shared.current();
            if fresh.schedule() != current.schedule() || fresh.layers() != current.layers() {
                tracing::warn!("the directory changed the schedule or the layers; refresh refused");
            } else if fresh.issued_at() < current.issued_at() {
                tracing::debug!("the directory served an older document; ignored");
            } else if fresh.node(&me).is_none() {
                tracing::warn!("this node is missing from the directory's document; keeping the current one");
            } else {
                if fresh.fingerprint() != current.fingerprint() {
                    tracing::info!(fingerprint = %fresh.fingerprint(), issued_at = fresh.issued_at(), "topology updated");
                    remember(cache.as_deref(), &fresh);
                }
                shared.replace(fresh);
            }
        }
    }
}

struct Upload {
    addr: SocketAddr,
    identity: NodeIdentity,
    address: SocketAddr,
    websocket: Option<SocketAddr>,
    websocket_tls: bool,
    pow_difficulty: u8,
    layers: nox_topology::LayerCount,
    retry: Duration,
    operator: Option<Arc<crate::OperatorSigner>>,
}

impl Upload {
    /// Uploads the offered keys when they differ from the last accepted upload, retrying every
    /// `retry` while it fails; also re-asserts them every `retry`, so a restarted directory
    /// (which starts from its initial document) learns the node's current keys again.
    async fn run(self, mut keys: watch::Receiver<Vec<EpochKey>>, mut shutdown: watch::Receiver<bool>) {
        let mut accepted: Option<Vec<EpochKey>> = None;
        loop {
            let offered = keys.borrow_and_update().clone();
            if !offered.is_empty() && accepted.as_ref() != Some(&offered) {
                match self.upload(offered.clone()).await {
                    Ok(answer) if answer == "unchanged" => accepted = Some(offered),
                    Ok(answer) => {
                        let epochs: Vec<u32> = offered.iter().map(|k| k.epoch).collect();
                        tracing::info!(?epochs, %answer, "descriptor published");
                        accepted = Some(offered);
                    }
                    Err(error) => tracing::warn!(%error, "descriptor upload failed; will retry"),
                }
            }
            tokio::select! {
                changed = keys.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(self.retry) => accepted = None,
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    }

    async fn upload(&self, keys: Vec<EpochKey>) -> Result<String, String> {
        let descriptor = self
            .identity
            .descriptor_with_endpoints(
                self.address,
                self.websocket,
                self.websocket_tls,
                self.layers,
                self.pow_difficulty,
                keys,
            )
            .map_err(|e| e.to_string())?;
        let descriptor = match &self.operator {
            Some(operator) => operator.attach(descriptor)?,
            None => descriptor,
        };
        nox_directory::upload_descriptor(self.addr, &descriptor, TIMEOUT).await.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use nox_topology::{EpochSchedule, LayerCount};

    use super::check_same_parameters;
    use crate::NodeError;

    fn schedule(genesis: u64, epoch_secs: u64) -> EpochSchedule {
        EpochSchedule::new(genesis, Duration::from_secs(epoch_secs), Duration::from_secs(20), 1).expect("schedule")
    }

    fn layers(n: u8) -> LayerCount {
        LayerCount::new(n).expect("layers")
    }

    fn refusal(result: Result<(), NodeError>) -> String {
        match result {
            Err(NodeError::Topology(text)) => text,
            other => panic!("expected a topology refusal, got {other:?}"),
        }
    }

    #[test]
    fn the_promised_schedule_and_layers_pass() {
        let s = schedule(1_700_000_000, 600);
        check_same_parameters((&s, layers(3)), (&s, layers(3)), "/parameters").expect("same parameters");
    }

    #[test]
    fn another_schedule_is_refused_naming_both() {
        let promised = schedule(1_700_000_000, 600);
        for lie in [schedule(1_700_000_000, 3_600), schedule(1_700_000_001, 600)] {
            let text = refusal(check_same_parameters((&lie, layers(3)), (&promised, layers(3)), "/parameters"));
            assert!(
                text.contains(&format!(
                    "genesis {} with {} s epochs",
                    lie.genesis_unix(),
                    lie.epoch_length().as_secs()
                )),
                "{text}"
            );
            assert!(text.contains("/parameters said genesis 1700000000 with 600 s epochs"), "{text}");
            assert!(text.contains("not running on it") && !text.contains("layers"), "{text}");
        }
        // Overlap and publish-ahead are part of the schedule too.
        let other =
            EpochSchedule::new(1_700_000_000, Duration::from_secs(600), Duration::from_secs(30), 1).expect("schedule");
        refusal(check_same_parameters((&other, layers(3)), (&promised, layers(3)), "/parameters"));
        let other =
            EpochSchedule::new(1_700_000_000, Duration::from_secs(600), Duration::from_secs(20), 2).expect("schedule");
        refusal(check_same_parameters((&other, layers(3)), (&promised, layers(3)), "/parameters"));
    }

    #[test]
    fn another_layer_count_is_refused_naming_both() {
        let s = schedule(1_700_000_000, 600);
        let text = refusal(check_same_parameters((&s, layers(4)), (&s, layers(3)), "/parameters"));
        assert!(text.contains("it has 4 layers, /parameters said 3"), "{text}");
        assert!(!text.contains("schedule"), "{text}");
        // Both differ: both named.
        let text = refusal(check_same_parameters((&schedule(5, 60), layers(2)), (&s, layers(3)), "/parameters"));
        assert!(
            text.contains("genesis 5 with 60 s epochs") && text.contains("it has 2 layers, /parameters said 3"),
            "{text}"
        );
    }
}
