//! An in-memory mixnet for the client core: a signed 3 × 3 topology, every
//! node's Sphinx keys (of the geometry's scheme), hops run with `process_packet`, an exit emulated with
//! nox-message. Deterministic: fixed seeds, virtual time.
#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use nox_client::{ClientConfig, ClientCore, DROP_MAGIC, Instant, Now, Outgoing};
use nox_message::{REQUEST_LIMITS, Request, RequestAssembler, Response, reply_packets, reply_packets_from};
use nox_sphinx::{Geometry, HeaderView, NodeId, Processed, SecretKey, process_packet};
use nox_test_support::topology::{NodeSpec, fill_layers, key32, make_node};
use nox_topology::{DocumentBuilder, EpochSchedule, Layer, LayerCount, SigningKey, VerifiedTopology};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const GENESIS: u64 = 1_700_000_000;
pub const EPOCH: u32 = 5;
/// Unix time of the test: well inside epoch 5.
pub const UNIX: u64 = GENESIS + 5 * 60 + 30;

/// What a packet turned into after its last hop.
pub enum Outcome {
    /// An exit delivered this payload.
    Exit { exit: NodeId, payload: Vec<u8> },
    /// A gateway turned a SURB reply into this downstream record for `recipient`.
    Reply { gateway: NodeId, recipient: NodeId, record: Vec<u8> },
}

pub struct Mixnet {
    pub geometry: Geometry,
    pub topology: VerifiedTopology,
    keys: HashMap<NodeId, SecretKey>,
    exits: HashMap<NodeId, RequestAssembler>,
    pub rng: ChaCha20Rng,
    pub drops_seen: usize,
    pub base: Instant,
    /// Each node's link address and static link secret.
    pub links: HashMap<NodeId, (std::net::SocketAddr, [u8; 32])>,
    /// Unix time of the test.
    pub unix: u64,
    /// Nodes that silently drop every packet they receive.
    pub dead: BTreeSet<NodeId>,
}

/// One client packet carried through the mixnet by [`Mixnet::serve`].
pub struct Served {
    /// Nodes the forward packet reached, in order (a dead one last).
    pub forward: Vec<NodeId>,
    /// What the exit received, if the packet got there.
    pub exit_payload: Option<Vec<u8>>,
    /// The request the exit completed, if any (it answers echoes).
    pub request: Option<Request>,
    /// Return paths of the reply packets (a dead node last if dropped).
    pub reply_paths: Vec<Vec<NodeId>>,
    /// Downstream records for the client: (gateway, record).
    pub records: Vec<(NodeId, Vec<u8>)>,
}

impl Mixnet {
    /// 3 nodes per layer, each with keys for EPOCH and EPOCH + 1 and the given PoW difficulty.
    pub fn new(seed: u64, geometry: Geometry, difficulty: u8) -> Self {
        Self::with_genesis(seed, geometry, difficulty, GENESIS)
    }

    /// The same with the schedule starting at `genesis`; the test time is
    /// `genesis + 330` (inside epoch 5).
    pub fn with_genesis(seed: u64, geometry: Geometry, difficulty: u8, genesis: u64) -> Self {
        let unix = genesis + UNIX - GENESIS;
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let layers = LayerCount::new(3).expect("layers");
        let schedule = EpochSchedule::new(genesis, Duration::from_secs(60), Duration::from_secs(10), 1).expect("sched");
        let authority = SigningKey::from_bytes(&key32(&mut rng));
        let mut builder = DocumentBuilder::new(geometry, schedule);
        let mut keys = HashMap::new();
        let mut links = HashMap::new();
        // Listeners held until every node has its port: a port given back at
        // once may be handed out again (DuplicateAddress under load).
        let mut held = Vec::new();
        let spec = NodeSpec { scheme: geometry.scheme(), epochs: EPOCH..=EPOCH + 1, layers, difficulty };
        let nodes = fill_layers(layers, 3, |_| {
            // A free loopback port, for the tests that run real links.
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
            let address = listener.local_addr().expect("port");
            held.push(listener);
            make_node(&mut rng, &spec, address)
        });
        for node in nodes {
            let id = node.signed.descriptor.node_id();
            links.insert(id, (node.signed.descriptor.address, node.link_secret));
            keys.insert(id, node.sphinx_key(EPOCH).expect("key").clone());
            builder.add_node(node.signed);
        }
        let topology = builder.sign(&authority, unix).expect("topology");
        drop(held);
        Self {
            geometry,
            topology,
            keys,
            exits: HashMap::new(),
            rng: ChaCha20Rng::seed_from_u64(seed ^ 0xe817),
            drops_seen: 0,
            base: Instant::ORIGIN,
            links,
            unix,
            dead: BTreeSet::new(),
        }
    }

    pub fn layer(&self, id: &NodeId) -> u8 {
        self.topology.layer_of(id).expect("node").0
    }

    pub fn nodes_in(&self, layer: u8) -> Vec<NodeId> {
        self.topology.nodes_in_layer(Layer(layer)).map(|n| n.id).collect()
    }

    pub fn now(&self, after: Duration) -> Now {
        Now { at: self.base + after, unix: self.unix + after.as_secs() }
    }

    pub fn client(&self, config: ClientConfig, seed: u64) -> ClientCore {
        ClientCore::new(
            self.topology.clone(),
            config,
            ChaCha20Rng::seed_from_u64(seed),
            ChaCha20Rng::seed_from_u64(seed ^ 0x7133),
            self.now(Duration::ZERO),
        )
        .expect("client")
    }

    /// Carries a packet from `first` through every hop, checking each
    /// hop's proof of work at its advertised difficulty (`entry_min` for the first).
    pub fn route(&mut self, first: NodeId, packet: Vec<u8>, entry_min: u8) -> Outcome {
        self.trace(first, packet, entry_min, &mut Vec::new()).expect("dropped by a dead node")
    }

    /// [`Self::route`], recording the nodes reached in `path`; `None` if a
    /// dead node dropped the packet.
    pub fn trace(
        &mut self,
        first: NodeId,
        mut packet: Vec<u8>,
        entry_min: u8,
        path: &mut Vec<NodeId>,
    ) -> Option<Outcome> {
        let mut node = first;
        let mut hop = 0;
        loop {
            path.push(node);
            if self.dead.contains(&node) {
                return None;
            }
            let advertised = self.topology.node(&node).expect("node").descriptor.pow_difficulty;
            let view = HeaderView::parse(&self.geometry, &packet).expect("header");
            let needed = if hop == 0 { advertised.max(entry_min) } else { advertised };
            view.check_work(&view.replay_tag(), needed).expect("proof of work");
            let key = self.keys.get(&node).expect("key");
            match process_packet(&self.geometry, key, &mut packet).expect("process") {
                Processed::Forward { next_hop, .. } => {
                    assert_eq!(self.layer(&next_hop), (self.layer(&node) + 1) % 3, "paths go layer by layer");
                    node = next_hop;
                    hop += 1;
                }
                Processed::Deliver { payload, .. } => {
                    assert_eq!(self.layer(&node), 2, "exits are in the last layer");
                    return Some(Outcome::Exit { exit: node, payload: packet[payload].to_vec() });
                }
                Processed::Reply { recipient, surb_id, .. } => {
                    assert_eq!(self.layer(&node), 2, "reply gateways are in the last layer");
                    let header_len = self.geometry.header_len();
                    nox_link::encode_reply_in_place(&mut packet, header_len, &surb_id.0).expect("frame");
                    return Some(Outcome::Reply { gateway: node, recipient, record: packet });
                }
            }
        }
    }

    /// The exit's side: reassembles; returns the request when complete.
    pub fn exit_accept(&mut self, exit: NodeId, payload: &[u8]) -> Option<Request> {
        if payload.starts_with(DROP_MAGIC) {
            self.drops_seen += 1;
            return None;
        }
        let assembler =
            self.exits.entry(exit).or_insert_with(|| RequestAssembler::new(REQUEST_LIMITS).expect("limits"));
        assembler.accept(&self.geometry, payload, 0).expect("fragment")
    }

    /// Sends every packet; returns the requests the exits completed, with the exit.
    pub fn forward(&mut self, packets: Vec<Outgoing>, entry_min: u8) -> Vec<(NodeId, Request)> {
        let mut done = Vec::new();
        for out in packets {
            assert_eq!(self.layer(&out.entry), 0, "clients send to layer 0");
            match self.route(out.entry, out.packet, entry_min) {
                Outcome::Exit { exit, payload } => done.extend(self.exit_accept(exit, &payload).map(|r| (exit, r))),
                Outcome::Reply { .. } => panic!("a forward packet ended as a reply"),
            }
        }
        done
    }

    /// The exit sends `encoded` (a response) on SURBs taken from the front of
    /// a pool (a stream's), FEC-coded like a real exit; returns the downstream
    /// records that reach the client, with `lose` applied per reply packet.
    pub fn answer_from(
        &mut self,
        surbs: &mut Vec<nox_sphinx::Surb>,
        encoded: &[u8],
        mut lose: impl FnMut() -> bool,
    ) -> Vec<(NodeId, NodeId, Vec<u8>)> {
        let packets = reply_packets_from(&self.geometry, encoded, surbs, 0.05, 0.99, &mut self.rng).expect("reply");
        packets
            .into_iter()
            .filter(|_| !lose())
            .map(|(first, packet)| match self.route(first, packet, 0) {
                Outcome::Reply { gateway, recipient, record } => (gateway, recipient, record),
                Outcome::Exit { .. } => panic!("a reply ended at an exit"),
            })
            .collect()
    }

    /// The exit answers `request` through its SURBs; returns the downstream
    /// records the gateways produce, each with its gateway and recipient.
    pub fn answer(&mut self, request: Request, response: &Response) -> Vec<(NodeId, NodeId, Vec<u8>)> {
        let packets =
            reply_packets(&self.geometry, &response.encode(), request.surbs, 0.05, 0.99, &mut self.rng).expect("reply");
        packets
            .into_iter()
            .map(|(first, packet)| {
                assert_eq!(self.layer(&first), 0, "replies enter at layer 0");
                match self.route(first, packet, 0) {
                    Outcome::Reply { gateway, recipient, record } => (gateway, recipient, record),
                    Outcome::Exit { .. } => panic!("a reply ended at an exit"),
                }
            })
            .collect()
    }

    /// Carries one client packet to its exit; an exit that completes an
    /// echo answers it through its SURBs. Dead nodes drop what they get.
    pub fn serve(&mut self, out: Outgoing) -> Served {
        let mut served = Served {
            forward: Vec::new(),
            exit_payload: None,
            request: None,
            reply_paths: Vec::new(),
            records: Vec::new(),
        };
        let Some(outcome) = self.trace(out.entry, out.packet, 0, &mut served.forward) else { return served };
        let Outcome::Exit { exit, payload } = outcome else { panic!("a forward packet ended as a reply") };
        served.exit_payload = Some(payload.clone());
        let Some(request) = self.exit_accept(exit, &payload) else { return served };
        let nox_message::RequestBody::Echo(text) = &request.body else { panic!("only echoes here") };
        let response = Response::ok(text.clone());
        served.request = Some(request.clone());
        let packets =
            reply_packets(&self.geometry, &response.encode(), request.surbs, 0.05, 0.99, &mut self.rng).expect("reply");
        for (first, packet) in packets {
            let mut path = Vec::new();
            match self.trace(first, packet, 0, &mut path) {
                Some(Outcome::Reply { gateway, record, .. }) => served.records.push((gateway, record)),
                Some(Outcome::Exit { .. }) => panic!("a reply ended at an exit"),
                None => {}
            }
            served.reply_paths.push(path);
        }
        served
    }
}
