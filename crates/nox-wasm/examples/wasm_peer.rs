//! The native side of the WebAssembly cross-checks and benchmark
//! (`crates/nox-wasm/js/test/*.test.mjs`, `crates/nox-wasm/bench/bench.mjs`):
//! it makes keys and topologies, processes packets the module built hop by
//! hop with native `nox_sphinx`, answers SURBs natively, and times the same
//! operations natively. Files and JSON on stdout; every failure exits non-zero.
//!
//! ```text
//! wasm_peer keys <hops> <seed> <out.json>
//! wasm_peer topology <now_unix> <seed> <doc.json> <secrets.json> [<node id hex to leave out>]
//! wasm_peer process <secrets.json> <hops> <epoch> <first hop hex> <packet file>
//! wasm_peer reply <secrets.json> <hops> <epoch> <surb file> <reply hex> <body out file>
//! wasm_peer exit <secrets.json> <epoch> <packets file> <records out file>
//! wasm_peer bench <seconds per operation>
//! ```
//!
//! `exit` plays the mixnet and an echo exit for the client core: the packets file is
//! `count (u32 LE) ‖ count × (entry (32) ‖ length (u32 LE) ‖ packet)` (what
//! `nox_client_request` returns after the request id); every packet is routed to its exit,
//! a completed echo request is answered through its SURBs, and the downstream records the
//! gateways produce are written as `count ‖ count × (gateway (32) ‖ length ‖ record)`.
//!
//! `secrets.json` maps a node id (hex) to `{ "<epoch>": "<secret key hex>" }`.

use std::collections::BTreeMap;
use std::time::Instant;

use nox_sphinx::{
    BuildOptions, DEFAULT_PACKET_LEN, Delay, Geometry, NodeId, PathHop, Processed, SecretKey, Surb, build_forward,
    build_surb, process_packet,
};
use nox_topology::{DocumentBuilder, EpochKey, EpochSchedule, LayerCount, LinkPublicKey, NodeDescriptor, SigningKey};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

type Secrets = BTreeMap<String, BTreeMap<String, String>>;

/// The nodes' secrets and the proof-of-work difficulty they demand.
struct Nodes {
    secrets: Secrets,
    pow: u8,
}
type Failure = Box<dyn std::error::Error>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("keys") if args.len() == 4 => keys(&args[1], &args[2], &args[3]),
        Some("topology") if args.len() == 5 || args.len() == 6 => {
            topology(&args[1], &args[2], &args[3], &args[4], args.get(5).map(String::as_str))
        }
        Some("process") if args.len() == 6 => process(&args[1], &args[2], &args[3], &args[4], &args[5]),
        Some("reply") if args.len() == 7 => reply(&args[1..]),
        Some("exit") if args.len() == 5 => exit(&args[1], &args[2], &args[3], &args[4]),
        Some("bench") if args.len() == 2 => bench(&args[1]),
        _ => Err("usage: wasm_peer keys|topology|process|reply|bench ... (see the source)".into()),
    };
    if let Err(error) = result {
        eprintln!("wasm_peer: {error}");
        std::process::exit(1);
    }
}

fn geometry(hops: &str) -> Result<Geometry, Failure> {
    Ok(Geometry::new(DEFAULT_PACKET_LEN, hops.parse()?)?)
}

/// `hops` ristretto255 keys; node `i` has id `[i + 1; 32]`. Writes
/// `{ "hops": hex(n × (id ‖ public key)), "secrets": Secrets }` for epoch 7.
fn keys(hops: &str, seed: &str, out: &str) -> Result<(), Failure> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed.parse()?);
    let mut raw = Vec::new();
    let mut secrets = Secrets::new();
    for i in 0..hops.parse::<u8>()? {
        let key = SecretKey::generate(&mut rng);
        let id = [i + 1; 32];
        raw.extend_from_slice(&id);
        raw.extend_from_slice(key.public_key().as_bytes());
        secrets.insert(hex::encode(id), BTreeMap::from([("7".to_string(), hex::encode(key.to_bytes()))]));
    }
    let json = serde_json::json!({ "hops": hex::encode(raw), "secrets": secrets, "pow": 0 });
    std::fs::write(out, json.to_string())?;
    Ok(())
}

/// A signed 3-layer topology (default geometry, two nodes per layer, PoW
/// difficulty 4) issued at `now`, its authority key and every node's
/// secret key for every published epoch. With `omit` (a node id in hex), the
/// same seed's document without that node: the network after it left (same
/// keys for every other node, so one secrets file serves both).
fn topology(now: &str, seed: &str, doc_out: &str, secrets_out: &str, omit: Option<&str>) -> Result<(), Failure> {
    let now: u64 = now.parse()?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed.parse()?);
    let geometry = Geometry::default();
    let layers = LayerCount::new(3).ok_or("layer count")?;
    let schedule = EpochSchedule::with_defaults(now - 3 * 3600 - 600);
    let mut authority_seed = [0u8; 32];
    rng.fill_bytes(&mut authority_seed);
    let authority = SigningKey::from_bytes(&authority_seed);
    let mut builder = DocumentBuilder::new(geometry, schedule);
    let mut per_layer = [0usize; 3];
    let mut secrets = Secrets::new();
    let mut port = 9000u16;
    while per_layer.iter().any(|&n| n < 2) {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let identity = SigningKey::from_bytes(&seed);
        let mut epoch_secrets = BTreeMap::new();
        let mut epoch_keys = Vec::new();
        for epoch in schedule.published_epochs(now) {
            let key = SecretKey::generate(&mut rng);
            epoch_keys.push(EpochKey { epoch, key: key.public_key() });
            epoch_secrets.insert(epoch.to_string(), hex::encode(key.to_bytes()));
        }
        let link = LinkPublicKey::from_secret(&seed.map(|b| b ^ 0x5c));
        let descriptor = NodeDescriptor::new(
            identity.verifying_key(),
            link,
            format!("127.0.0.1:{port}").parse()?,
            layers,
            4,
            epoch_keys,
        );
        port += 1;
        let layer = descriptor.layer.index();
        if per_layer[layer] >= 2 {
            continue;
        }
        per_layer[layer] += 1;
        let id = hex::encode(nox_topology::node_id_of(&identity.verifying_key()).0);
        if omit != Some(id.as_str()) {
            builder.add_node(descriptor.sign(&identity)?);
        }
        secrets.insert(id, epoch_secrets);
    }
    let verified = builder.sign(&authority, now)?;
    std::fs::write(doc_out, verified.document().to_json()?)?;
    let json = serde_json::json!({
        "authority": hex::encode(authority.verifying_key().to_bytes()),
        "secrets": secrets,
        "pow": 4,
    });
    std::fs::write(secrets_out, json.to_string())?;
    Ok(())
}

fn read_secrets(path: &str) -> Result<Nodes, Failure> {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let secrets = serde_json::from_value(json.get("secrets").cloned().ok_or("no secrets")?)?;
    let pow = json.get("pow").and_then(serde_json::Value::as_u64).ok_or("no pow")?;
    Ok(Nodes { secrets, pow: u8::try_from(pow)? })
}

fn secret_of(secrets: &Secrets, node: &NodeId, epoch: &str) -> Result<SecretKey, Failure> {
    let hex_key = secrets
        .get(&hex::encode(node.0))
        .and_then(|epochs| epochs.get(epoch))
        .ok_or_else(|| format!("no secret for node {} epoch {epoch}", hex::encode(node.0)))?;
    let bytes: [u8; 32] = hex::decode(hex_key)?.try_into().map_err(|_| "secret length")?;
    SecretKey::from_bytes(&bytes).ok_or_else(|| "bad secret".into())
}

/// Runs `packet` from `first` through the nodes' secrets until it leaves
/// the mixnet; returns the outcome, the packet buffer and the path taken.
fn run_path(
    nodes: &Nodes,
    geometry: &Geometry,
    epoch: &str,
    mut node: NodeId,
    packet: &mut [u8],
) -> Result<(Processed, Vec<String>), Failure> {
    let mut path = Vec::new();
    for _ in 0..geometry.hops() {
        path.push(hex::encode(node.0));
        let key = secret_of(&nodes.secrets, &node, epoch)?;
        // A node's checks before public-key work: geometry, then the proof of work it demands.
        let view = nox_sphinx::HeaderView::parse(geometry, packet)?;
        view.check_work(&view.replay_tag(), nodes.pow)?;
        match process_packet(geometry, &key, packet)? {
            Processed::Forward { next_hop, .. } => node = next_hop,
            done => return Ok((done, path)),
        }
    }
    Err("the packet did not leave the mixnet within the geometry's hops".into())
}

fn process(secrets: &str, hops: &str, epoch: &str, first: &str, packet_file: &str) -> Result<(), Failure> {
    let secrets = read_secrets(secrets)?;
    let geometry = geometry(hops)?;
    let first: [u8; 32] = hex::decode(first)?.try_into().map_err(|_| "first hop length")?;
    let mut packet = std::fs::read(packet_file)?;
    let (outcome, path) = run_path(&secrets, &geometry, epoch, NodeId(first), &mut packet)?;
    let json = match outcome {
        Processed::Deliver { payload, .. } => {
            serde_json::json!({ "kind": "deliver", "payload": hex::encode(&packet[payload]), "path": path })
        }
        Processed::Reply { recipient, surb_id, .. } => serde_json::json!({
            "kind": "reply", "recipient": hex::encode(recipient.0), "surb_id": hex::encode(surb_id.0), "path": path,
        }),
        Processed::Forward { .. } => return Err("still forwarding".into()),
    };
    println!("{json}");
    Ok(())
}

/// Answers a SURB natively: the reply packet from `Surb::into_reply`, run
/// through the return path; writes the body the recipient gets.
fn reply(args: &[String]) -> Result<(), Failure> {
    let [secrets, hops, epoch, surb_file, reply_hex, body_out] = args else {
        return Err("reply: six arguments".into());
    };
    let secrets = read_secrets(secrets)?;
    let geometry = geometry(hops)?;
    let surb = Surb::from_bytes(&geometry, &std::fs::read(surb_file)?)?;
    let first = surb.first_hop();
    let mut packet = surb.into_reply(&geometry, &hex::decode(reply_hex)?)?;
    let (outcome, path) = run_path(&secrets, &geometry, epoch, first, &mut packet)?;
    let Processed::Reply { recipient, surb_id, body, .. } = outcome else {
        return Err("the reply was not delivered as a reply".into());
    };
    std::fs::write(body_out, &packet[body])?;
    let json = serde_json::json!({
        "recipient": hex::encode(recipient.0), "surb_id": hex::encode(surb_id.0), "path": path,
    });
    println!("{json}");
    Ok(())
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], Failure> {
    if bytes.len() < n {
        return Err("truncated packets file".into());
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(head)
}

fn take_u32(bytes: &mut &[u8]) -> Result<usize, Failure> {
    Ok(u32::from_le_bytes(take(bytes, 4)?.try_into()?) as usize)
}

/// Routes the client's packets to their exit, answers a completed echo
/// request through its SURBs, and writes the gateways' downstream records.
fn exit(secrets: &str, epoch: &str, packets_file: &str, records_out: &str) -> Result<(), Failure> {
    let nodes = read_secrets(secrets)?;
    let geometry = Geometry::default();
    let bytes = std::fs::read(packets_file)?;
    let mut rest = bytes.as_slice();
    let count = take_u32(&mut rest)?;
    let mut assemblers: BTreeMap<[u8; 32], nox_message::RequestAssembler> = BTreeMap::new();
    let mut requests = Vec::new();
    for _ in 0..count {
        let entry: [u8; 32] = take(&mut rest, 32)?.try_into()?;
        let len = take_u32(&mut rest)?;
        let mut packet = take(&mut rest, len)?.to_vec();
        let (outcome, path) = run_path(&nodes, &geometry, epoch, NodeId(entry), &mut packet)?;
        let Processed::Deliver { payload, .. } = outcome else {
            return Err("a request packet did not reach an exit".into());
        };
        let exit = hex::decode(path.last().ok_or("empty path")?)?.try_into().map_err(|_| "exit id")?;
        let assembler = match assemblers.entry(exit) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(nox_message::RequestAssembler::new(nox_message::REQUEST_LIMITS)?)
            }
        };
        if let Some(request) = assembler.accept(&geometry, &packet[payload], 0)? {
            requests.push(request);
        }
    }
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let mut records = Vec::new();
    let mut answered = 0;
    for request in requests {
        let nox_message::RequestBody::Echo(text) = &request.body else {
            return Err("this exit answers echo requests only".into());
        };
        let response = nox_message::Response::ok(text.clone());
        let replies = nox_message::reply_packets(&geometry, &response.encode(), request.surbs, 0.05, 0.99, &mut rng)?;
        for (first, mut packet) in replies {
            let (outcome, path) = run_path(&nodes, &geometry, epoch, first, &mut packet)?;
            let Processed::Reply { surb_id, .. } = outcome else {
                return Err("a reply did not end at a gateway".into());
            };
            nox_link::encode_reply_in_place(&mut packet, geometry.header_len(), &surb_id.0)?;
            let gateway: [u8; 32] = hex::decode(path.last().ok_or("empty path")?)?.try_into().map_err(|_| "id")?;
            records.push((gateway, packet));
        }
        answered += 1;
    }
    let mut out = (records.len() as u32).to_le_bytes().to_vec();
    for (gateway, record) in &records {
        out.extend_from_slice(gateway);
        out.extend_from_slice(&(record.len() as u32).to_le_bytes());
        out.extend_from_slice(record);
    }
    std::fs::write(records_out, out)?;
    println!("{}", serde_json::json!({ "answered": answered, "records": records.len() }));
    Ok(())
}

/// Median of `batches` timings of `op`, in microseconds per call, with
/// the number of calls made; the same method as `bench/bench.mjs`.
fn time_op(seconds: f64, mut op: impl FnMut() -> Result<(), Failure>) -> Result<serde_json::Value, Failure> {
    for _ in 0..5 {
        op()?;
    }
    let start = Instant::now();
    op()?;
    let one = start.elapsed().as_secs_f64().max(1e-7);
    let batches = 15usize;
    let per_batch = ((seconds / batches as f64 / one).ceil() as usize).max(1);
    let mut samples = Vec::with_capacity(batches);
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..per_batch {
            op()?;
        }
        samples.push(start.elapsed().as_secs_f64() * 1e6 / per_batch as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(serde_json::json!({
        "median_us": samples[batches / 2], "min_us": samples[0], "max_us": samples[batches - 1],
        "calls": batches * per_batch,
    }))
}

fn bench(seconds: &str) -> Result<(), Failure> {
    let seconds: f64 = seconds.parse()?;
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let geometry = Geometry::default();
    let keys: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate(&mut rng)).collect();
    let path: Vec<PathHop> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| PathHop {
            node: NodeId([i as u8 + 1; 32]),
            public_key: k.public_key(),
            delay: Delay(0),
            pow_difficulty: 0,
        })
        .collect();
    let options = BuildOptions::new(7);
    let forward = time_op(seconds, || {
        std::hint::black_box(build_forward(&geometry, &options, &path, &[7u8; 256], &mut rng)?);
        Ok(())
    })?;
    let surb_build = time_op(seconds, || {
        std::hint::black_box(build_surb(&geometry, &options, &path, NodeId([9; 32]), &mut rng)?);
        Ok(())
    })?;
    let (surb, recovery) = build_surb(&geometry, &options, &path, NodeId([9; 32]), &mut rng)?;
    let mut packet = surb.into_reply(&geometry, &[1u8; 1000])?;
    let mut outcome = None;
    for key in &keys {
        outcome = Some(process_packet(&geometry, key, &mut packet)?);
    }
    let Some(Processed::Reply { surb_id, body, .. }) = outcome else {
        return Err("no reply".into());
    };
    let open = time_op(seconds, || {
        let reply = recovery.open(&surb_id, &packet[body.clone()])?;
        if reply.len() != 1000 {
            return Err("reply length".into());
        }
        Ok(())
    })?;
    let json = serde_json::json!({
        "forward_3_hops_256B": forward, "surb_build_3_hops": surb_build, "surb_reply_open_1000B": open,
        "seconds_per_op": seconds,
    });
    println!("{json}");
    Ok(())
}
