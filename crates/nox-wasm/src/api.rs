//! The module's safe Rust core: everything the exports do, as methods on
//! [`Module`], with typed errors. The byte-buffer ABI (`abi.rs`) only moves
//! bytes in and out of it; native tests drive this type directly.

use std::collections::HashMap;

use nox_sphinx::{
    BuildOptions, DEFAULT_PACKET_LEN, Delay, Geometry, NodeId, PathHop, PublicKey, SphinxError, SurbId, SurbRecovery,
    build_forward, build_surb,
};
use nox_topology::{PathError, TopologyDocument, TopologyError, VerifiedTopology, VerifyConfig, VerifyingKey};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use zeroize::Zeroizing;

/// Length of the seed the host passes to [`Module::seed`].
pub const SEED_LEN: usize = 32;
/// One raw hop: node id (32) ‖ ristretto255 public key (32).
pub const RAW_HOP_LEN: usize = 64;

/// Why an export failed. [`WasmError::code`] is the status the ABI returns.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// An argument has the wrong length or encoding.
    #[error("bad argument: {0}")]
    BadArgument(String),
    /// A function that needs randomness was called before the host seeded the module.
    #[error("the module has no randomness yet: the host must call nox_seed first")]
    NotSeeded,
    /// No live object has this handle.
    #[error("no object has handle {0}")]
    UnknownHandle(u32),
    /// The handle names an object of another kind.
    #[error("handle {handle} is not a {expected}")]
    WrongHandle {
        /// The handle passed.
        handle: u32,
        /// The kind the function needs.
        expected: &'static str,
    },
    /// The Sphinx layer refused (bad key, wrong length, wrong geometry, reply not authentic...).
    #[error("sphinx: {0}")]
    Sphinx(#[from] SphinxError),
    /// The topology document was refused.
    #[error("topology: {0}")]
    Topology(#[from] TopologyError),
    /// No path could be drawn from the topology.
    #[error("path: {0}")]
    Path(#[from] PathError),
    /// The client core refused (no path, busy, request too large, topology change...).
    #[error("client: {0}")]
    Client(#[from] nox_client::ClientError),
    /// A client link's handshake or record failed (the host closes that link).
    #[error("link: {0}")]
    Link(#[from] nox_link::LinkError),
    /// The shielded wallet refused (bad seed or address, malformed pool view, insufficient
    /// funds, a request the pool would refuse...).
    #[error("wallet: {0}")]
    Wallet(nox_wallet::WalletError),
    /// The transfer prover refused (not a transfer proving key, a witness that does not
    /// satisfy the statement, a proof its own verifying key rejects).
    #[error("zk: {0}")]
    Zk(nox_zk::ZkError),
    /// A sealed wallet file (the seed's `wallet.key`, the view's `state`) does not open: the
    /// passphrase (or the seed, for a state file) is wrong, or a byte of the file was altered
    /// (the AEAD cannot tell the two apart).
    #[error("wrong passphrase, or the sealed wallet file was altered")]
    WrongPassphrase,
    /// A sealed wallet file is not one this version reads (wrong length, magic or KDF
    /// parameters out of range).
    #[error("not a NOX sealed wallet file: {0}")]
    BadKeyFile(&'static str),
}

impl WasmError {
    /// The status code the ABI returns for this error (0 is success).
    pub fn code(&self) -> i32 {
        match self {
            WasmError::BadArgument(_) => 1,
            WasmError::NotSeeded => 2,
            WasmError::UnknownHandle(_) => 3,
            WasmError::WrongHandle { .. } => 4,
            WasmError::Sphinx(_) => 5,
            WasmError::Topology(_) => 6,
            WasmError::Path(_) => 7,
            WasmError::Client(_) => 8,
            WasmError::Link(_) => 9,
            WasmError::Wallet(_) => 10,
            WasmError::Zk(_) => 11,
            WasmError::WrongPassphrase => 12,
            WasmError::BadKeyFile(_) => 13,
        }
    }
}

pub(crate) fn bad(what: impl Into<String>) -> WasmError {
    WasmError::BadArgument(what.into())
}

/// An object the host refers to by handle.
pub(crate) enum Object {
    Topology(Box<VerifiedTopology>),
    Recovery(Box<SurbRecovery>),
    Client(Box<nox_client::ClientCore>),
    Link(Box<crate::link::ClientLink>),
    /// A transfer proving key (decoded once, used by every proof).
    ProvingKey(Box<nox_zk::groth16::ProvingKey<ark_bn254::Bn254>>),
    /// A prepared transaction waiting for its proof (its witness is zeroized on drop).
    Prepared(Box<nox_wallet::PreparedTransaction>),
}

/// A new SURB: the handle of its recovery keys (kept in the module), its id
/// and the SURB to send to the replier.
#[derive(Debug)]
pub struct NewSurb {
    /// Handle of the [`SurbRecovery`] kept in the module.
    pub handle: u32,
    /// The SURB's id (the reply arrives with it).
    pub id: SurbId,
    /// The node the replier sends the reply packet to.
    pub first_hop: NodeId,
    /// `Surb::to_bytes`: first hop ‖ reply key ‖ header.
    pub surb: Vec<u8>,
}

/// The state of one module instance: the host-seeded RNG and the objects
/// handed out by handle.
#[derive(Default)]
pub struct Module {
    rng: Option<ChaCha20Rng>,
    pub(crate) objects: HashMap<u32, Object>,
    next_handle: u32,
}

impl Module {
    /// A module with no randomness and no objects.
    pub fn new() -> Self {
        Self::default()
    }

    /// Seeds (or re-seeds) the module's ChaCha20 RNG with 32 bytes the host
    /// drew from its CSPRNG (`crypto.getRandomValues`). Nothing else in the
    /// module produces randomness.
    pub fn seed(&mut self, seed: &[u8]) -> Result<(), WasmError> {
        let seed: [u8; SEED_LEN] =
            seed.try_into().map_err(|_| bad(format!("seed must be {SEED_LEN} bytes, got {}", seed.len())))?;
        let seed = Zeroizing::new(seed);
        self.rng = Some(ChaCha20Rng::from_seed(*seed));
        Ok(())
    }

    pub(crate) fn rng(&mut self) -> Result<&mut ChaCha20Rng, WasmError> {
        self.rng.as_mut().ok_or(WasmError::NotSeeded)
    }

    pub(crate) fn insert(&mut self, object: Object) -> u32 {
        loop {
            self.next_handle = self.next_handle.wrapping_add(1);
            if self.next_handle != 0 && !self.objects.contains_key(&self.next_handle) {
                break;
            }
        }
        self.objects.insert(self.next_handle, object);
        self.next_handle
    }

    /// Frees the object behind `handle` (recovery keys are zeroized on drop).
    pub fn drop_handle(&mut self, handle: u32) -> Result<(), WasmError> {
        self.objects.remove(&handle).map(|_| ()).ok_or(WasmError::UnknownHandle(handle))
    }

    /// Number of live objects.
    pub fn live_objects(&self) -> usize {
        self.objects.len()
    }

    pub(crate) fn topology(&self, handle: u32) -> Result<&VerifiedTopology, WasmError> {
        match self.objects.get(&handle) {
            Some(Object::Topology(t)) => Ok(t),
            Some(_) => Err(WasmError::WrongHandle { handle, expected: "topology" }),
            None => Err(WasmError::UnknownHandle(handle)),
        }
    }

    fn recovery(&self, handle: u32) -> Result<&SurbRecovery, WasmError> {
        match self.objects.get(&handle) {
            Some(Object::Recovery(r)) => Ok(r),
            Some(_) => Err(WasmError::WrongHandle { handle, expected: "SURB recovery" }),
            None => Err(WasmError::UnknownHandle(handle)),
        }
    }

    /// A forward packet along raw hops (`n × (node id ‖ ristretto255 key)`,
    /// 1–16 hops) in the default-length geometry with `n` hops, no PoW, node-chosen delays.
    pub fn build_forward_raw(&mut self, hops: &[u8], payload: &[u8], key_epoch: u32) -> Result<Vec<u8>, WasmError> {
        let (geometry, path) = raw_path(hops)?;
        let rng = self.rng()?;
        Ok(build_forward(&geometry, &BuildOptions::new(key_epoch), &path, payload, rng)?)
    }

    /// A SURB along raw hops (as [`Module::build_forward_raw`]) ending at `recipient` (32 bytes).
    pub fn build_surb_raw(&mut self, hops: &[u8], recipient: &[u8], key_epoch: u32) -> Result<NewSurb, WasmError> {
        let (geometry, path) = raw_path(hops)?;
        let recipient = node_id(recipient, "recipient")?;
        self.new_surb(&geometry, &path, recipient, key_epoch)
    }

    fn new_surb(
        &mut self,
        geometry: &Geometry,
        path: &[PathHop],
        recipient: NodeId,
        key_epoch: u32,
    ) -> Result<NewSurb, WasmError> {
        let rng = self.rng()?;
        let (surb, recovery) = build_surb(geometry, &BuildOptions::new(key_epoch), path, recipient, rng)?;
        let id = recovery.id();
        let handle = self.insert(Object::Recovery(Box::new(recovery)));
        Ok(NewSurb { handle, id, first_hop: surb.first_hop(), surb: surb.to_bytes() })
    }

    /// Opens a reply body delivered with `surb_id` (16 bytes) using the
    /// recovery keys behind `handle`. The keys stay until [`Module::drop_handle`].
    pub fn surb_open(&self, handle: u32, surb_id: &[u8], body: &[u8]) -> Result<Vec<u8>, WasmError> {
        let id: [u8; 16] =
            surb_id.try_into().map_err(|_| bad(format!("SURB id must be 16 bytes, got {}", surb_id.len())))?;
        Ok(self.recovery(handle)?.open(&SurbId(id), body)?)
    }

    /// Parses and verifies a topology document (the directory's signed JSON)
    /// against the authority's Ed25519 key at `now_unix`, under the geometry
    /// the document names. Returns its handle.
    pub fn verify_topology(&mut self, json: &[u8], authority: &[u8], now_unix: u64) -> Result<u32, WasmError> {
        let authority: [u8; 32] = authority
            .try_into()
            .map_err(|_| bad(format!("authority key must be 32 bytes, got {}", authority.len())))?;
        let authority =
            VerifyingKey::from_bytes(&authority).map_err(|_| bad("authority key is not an Ed25519 point"))?;
        let document = TopologyDocument::from_json(json)?;
        let geometry = nox_topology::geometry_for(&document)?;
        let verified = document.verify(&VerifyConfig::new(authority, geometry), now_unix)?;
        Ok(self.insert(Object::Topology(Box::new(verified))))
    }

    /// A JSON summary of a verified topology: fingerprint, geometry, layers,
    /// the client epoch at `now_unix` and every node (id, layer, address, WebSocket endpoint and
    /// whether it is `wss://`, PoW).
    pub fn topology_info(&self, handle: u32, now_unix: u64) -> Result<String, WasmError> {
        let topology = self.topology(handle)?;
        let nodes: Vec<serde_json::Value> = topology
            .nodes()
            .iter()
            .map(|n| {
                serde_json::json!({
                    "id": hex::encode(n.id.0),
                    "layer": n.descriptor.layer.index(),
                    "address": n.descriptor.address.to_string(),
                    "websocket": n.descriptor.websocket.map(|w| w.to_string()),
                    "websocket_tls": n.descriptor.websocket_tls,
                    "link_key": hex::encode(n.descriptor.link_key.to_bytes()),
                    "pow_difficulty": n.descriptor.pow_difficulty,
                })
            })
            .collect();
        let info = serde_json::json!({
            "fingerprint": hex::encode(topology.fingerprint().0),
            "geometry": hex::encode(topology.geometry().identifier()),
            "scheme": topology.geometry().scheme().to_string(),
            "packet_len": topology.geometry().packet_len(),
            "payload_capacity": topology.geometry().payload_capacity(),
            "layers": topology.layers().get(),
            "issued_at": topology.issued_at(),
            "client_epoch": topology.client_epoch(now_unix),
            "nodes": nodes,
        });
        Ok(info.to_string())
    }

    /// The path for a topology packet: the given node ids (`L × 32` bytes,
    /// node `i` in layer `i`) or, if `ids` is empty, a uniform random path.
    fn topology_path(&mut self, handle: u32, ids: &[u8], epoch: u32) -> Result<(Geometry, Vec<PathHop>), WasmError> {
        let topology = self.topology(handle)?;
        let geometry = *topology.geometry();
        if ids.is_empty() {
            // Disjoint borrows: the topology from the object table, the RNG beside it.
            let Module { rng, objects, .. } = self;
            let rng = rng.as_mut().ok_or(WasmError::NotSeeded)?;
            let Some(Object::Topology(topology)) = objects.get(&handle) else {
                return Err(WasmError::UnknownHandle(handle));
            };
            return Ok((geometry, topology.random_path(rng, epoch, &|_| false)?));
        }
        let layers = usize::from(topology.layers().get());
        if ids.len() != layers * 32 {
            return Err(bad(format!("path must be {layers} node ids of 32 bytes, got {} bytes", ids.len())));
        }
        let mut path = Vec::with_capacity(layers);
        for (i, id) in ids.chunks_exact(32).enumerate() {
            let id = node_id(id, "node id")?;
            let node = topology
                .node(&id)
                .ok_or_else(|| bad(format!("hop {i}: node {} is not in the topology", hex::encode(id.0))))?;
            if node.descriptor.layer.index() != i {
                return Err(bad(format!(
                    "hop {i}: node {} is in layer {}",
                    hex::encode(id.0),
                    node.descriptor.layer.index()
                )));
            }
            let public_key = topology
                .sphinx_key(&id, epoch)
                .ok_or_else(|| bad(format!("hop {i}: node {} has no key for epoch {epoch}", hex::encode(id.0))))?;
            path.push(PathHop {
                node: id,
                public_key,
                delay: Delay(0),
                pow_difficulty: node.descriptor.pow_difficulty,
            });
        }
        Ok((geometry, path))
    }

    /// A forward packet through a verified topology for the client epoch at
    /// `now_unix` (proof of work solved for every hop). Returns the first
    /// hop (where to send it) and the packet.
    pub fn topology_forward(
        &mut self,
        handle: u32,
        payload: &[u8],
        ids: &[u8],
        now_unix: u64,
    ) -> Result<(NodeId, Vec<u8>), WasmError> {
        let epoch = self.topology(handle)?.client_epoch(now_unix);
        let (geometry, path) = self.topology_path(handle, ids, epoch)?;
        let first = path.first().map(|h| h.node).ok_or_else(|| bad("empty path"))?;
        let rng = self.rng()?;
        let packet = build_forward(&geometry, &BuildOptions::new(epoch), &path, payload, rng)?;
        Ok((first, packet))
    }

    /// A SURB through a verified topology for the client epoch at `now_unix`
    /// whose last hop hands the reply to `recipient` (32 bytes).
    pub fn topology_surb(
        &mut self,
        handle: u32,
        recipient: &[u8],
        ids: &[u8],
        now_unix: u64,
    ) -> Result<NewSurb, WasmError> {
        let recipient = node_id(recipient, "recipient")?;
        let epoch = self.topology(handle)?.client_epoch(now_unix);
        let (geometry, path) = self.topology_path(handle, ids, epoch)?;
        self.new_surb(&geometry, &path, recipient, epoch)
    }
}

pub(crate) fn node_id(bytes: &[u8], what: &str) -> Result<NodeId, WasmError> {
    let id: [u8; 32] = bytes.try_into().map_err(|_| bad(format!("{what} must be 32 bytes, got {}", bytes.len())))?;
    Ok(NodeId(id))
}

/// Parses `n × (node id ‖ ristretto255 public key)`.
fn raw_path(hops: &[u8]) -> Result<(Geometry, Vec<PathHop>), WasmError> {
    if hops.is_empty() || !hops.len().is_multiple_of(RAW_HOP_LEN) {
        return Err(bad(format!("hops must be a non-empty multiple of {RAW_HOP_LEN} bytes, got {}", hops.len())));
    }
    let count = hops.len() / RAW_HOP_LEN;
    let geometry = Geometry::new(DEFAULT_PACKET_LEN, count)?;
    let mut path = Vec::with_capacity(count);
    for (i, hop) in hops.chunks_exact(RAW_HOP_LEN).enumerate() {
        let node = node_id(&hop[..32], "node id")?;
        let key: [u8; 32] = hop[32..].try_into().map_err(|_| bad("hop key must be 32 bytes"))?;
        let public_key = PublicKey::from_bytes(&key).map_err(|e| bad(format!("hop {i}: public key: {e}")))?;
        path.push(PathHop { node, public_key, delay: Delay(0), pow_difficulty: 0 });
    }
    Ok((geometry, path))
}
