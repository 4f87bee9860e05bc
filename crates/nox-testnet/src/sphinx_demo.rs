//! `nox demo`: the Sphinx core end to end, in memory, with timings.
//!
//! A client sends a request carrying a SURB through entry → mix → exit; the
//! exit answers through the SURB along an independent return path; then the
//! demo shows what each defence refuses: a replayed packet, a tampered body, a
//! packet for another geometry and a packet with too little proof of work.
//! No processes and no network: the nodes are values in memory driving `nox-sphinx`.

use std::{collections::HashSet, time::Instant};

use nox_sphinx::{
    BuildOptions, Delay, Geometry, HeaderView, NodeId, PathHop, Processed, ReplayTag, SecretKey, SphinxError, Surb,
    build_forward, build_surb, process_packet,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{SeedableRng, TryRngCore};

/// Options of `nox demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Proof-of-work difficulty (bits) every node requires.
    #[arg(long, default_value_t = 8)]
    pow_difficulty: u8,
    /// Seed for a reproducible run (default: from the OS).
    #[arg(long)]
    seed: Option<u64>,
}

/// Errors the demo can report.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A Sphinx operation failed where it should have succeeded.
    #[error("sphinx: {0}")]
    Sphinx(#[from] SphinxError),
    /// A node refused a packet it should have accepted.
    #[error("refused: {0}")]
    Refused(#[from] Refusal),
    /// The packet did not do what the demo expected.
    #[error("unexpected outcome: {0}")]
    Unexpected(&'static str),
    /// A packet was still being forwarded after its path's last hop.
    #[error("unexpected outcome: {0} still forwarding after the last hop")]
    StillForwarding(&'static str),
}

/// Why a demo node refused a packet.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The replay tag was seen before.
    #[error("replay tag already seen")]
    Replay,
    /// The Sphinx layer refused it.
    #[error(transparent)]
    Sphinx(#[from] SphinxError),
}

struct Node {
    name: &'static str,
    id: NodeId,
    key: SecretKey,
    seen: HashSet<ReplayTag>,
}

const EPOCH: u32 = 1;

impl Node {
    fn new(name: &'static str, index: u8, rng: &mut ChaCha20Rng) -> Self {
        let mut id = [0u8; 32];
        id[..name.len()].copy_from_slice(name.as_bytes());
        id[31] = index;
        Self { name, id: NodeId(id), key: SecretKey::generate(rng), seen: HashSet::new() }
    }

    fn hop(&self, difficulty: u8) -> PathHop {
        PathHop { node: self.id, public_key: self.key.public_key(), delay: Delay(1000), pow_difficulty: difficulty }
    }

    /// Ingest checks then Sphinx processing, as the node pipeline does them.
    fn receive(&mut self, geometry: &Geometry, packet: &mut [u8], difficulty: u8) -> Result<Processed, Refusal> {
        let view = HeaderView::parse(geometry, packet)?;
        if view.key_epoch() != EPOCH {
            return Err(SphinxError::UnknownEpoch(view.key_epoch()).into());
        }
        let tag = view.replay_tag();
        if self.seen.contains(&tag) {
            return Err(Refusal::Replay);
        }
        view.check_work(&tag, difficulty)?;
        let outcome = process_packet(geometry, &self.key, packet)?;
        self.seen.insert(tag);
        Ok(outcome)
    }
}

/// Runs the demo and prints what happened.
pub fn run(args: &DemoArgs) -> Result<(), DemoError> {
    let seed = args.seed.unwrap_or_else(|| rand_core::OsRng.try_next_u64().unwrap_or(0));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let geometry = Geometry::default();
    let d = args.pow_difficulty;
    println!("NOX Sphinx demo (seed {seed})");
    println!(
        "geometry: {} B packets, {} hops, header {} B, payload capacity {} B, tag {:02x?}",
        geometry.packet_len(),
        geometry.hops(),
        geometry.header_len(),
        geometry.payload_capacity(),
        geometry.tag()
    );
    let mut forward =
        vec![Node::new("entry-1", 1, &mut rng), Node::new("mix-1", 2, &mut rng), Node::new("exit-1", 3, &mut rng)];
    let mut back =
        vec![Node::new("entry-2", 4, &mut rng), Node::new("mix-2", 5, &mut rng), Node::new("exit-2", 6, &mut rng)];
    let client = NodeId([0xC1; 32]);

    // The client: a SURB for the reply, then the request packet carrying it.
    let options = BuildOptions { key_epoch: EPOCH, pow_threads: 2 };
    let started = Instant::now();
    let return_path: Vec<PathHop> = back.iter().map(|n| n.hop(d)).collect();
    let (surb, recovery) = build_surb(&geometry, &options, &return_path, client, &mut rng)?;
    let mut request = b"GET https://example.org/ HTTP/1.1\n".to_vec();
    request.extend_from_slice(&surb.to_bytes());
    let path: Vec<PathHop> = forward.iter().map(|n| n.hop(d)).collect();
    let mut packet = build_forward(&geometry, &options, &path, &request, &mut rng)?;
    println!(
        "client: built SURB + request ({} B payload, PoW {d} bits for every hop) in {:.0} µs",
        request.len(),
        started.elapsed().as_secs_f64() * 1e6
    );
    let original = packet.clone();

    let payload = carry(&geometry, &mut forward, &mut packet, d, "request")?;
    let Processed::Deliver { payload: range, .. } = payload else {
        return Err(DemoError::Unexpected("request was not delivered"));
    };
    let body = &packet[range];
    let split = body.len() - Surb::encoded_len(&geometry);
    println!("exit-1: request = {:?}", String::from_utf8_lossy(&body[..split]).trim_end());
    let surb = Surb::from_bytes(&geometry, &body[split..])?;
    let first = surb.first_hop();
    let mut reply = surb.into_reply(&geometry, b"HTTP/1.1 200 OK\n\nhello from the exit")?;
    println!("exit-1: reply packet of {} B (same size as a request) sent to {}", reply.len(), name_of(&back, first));

    let outcome = carry(&geometry, &mut back, &mut reply, d, "reply")?;
    let Processed::Reply { surb_id, body, recipient, .. } = outcome else {
        return Err(DemoError::Unexpected("reply did not reach its recipient"));
    };
    let opened = recovery.open(&surb_id, &reply[body])?;
    println!(
        "client {}: opened reply for SURB {:02x?}…: {:?}",
        if recipient == client { "(recipient matches)" } else { "(WRONG recipient)" },
        &surb_id.0[..4],
        String::from_utf8_lossy(&opened)
    );

    println!("defences:");
    let mut replayed = original.clone();
    report("replayed request at entry-1", forward[0].receive(&geometry, &mut replayed, d));
    for node in forward.iter_mut() {
        node.seen.clear(); // so the next cases test something other than replay
    }
    let mut tampered = original.clone();
    tampered[geometry.header_len() + 100] ^= 1;
    let mut result = Ok(Processed::Forward { next_hop: forward[0].id, delay: Delay(0) });
    for node in forward.iter_mut() {
        if result.is_ok() {
            result = node.receive(&geometry, &mut tampered, d);
        }
    }
    report("body bit flipped before entry-1 (refused at exit-1)", result);
    let mut header_flip = original.clone();
    header_flip[60] ^= 1;
    report("header bit flipped (PoW check)", forward[0].receive(&geometry, &mut header_flip, d));
    let mut header_flip = original.clone();
    header_flip[60] ^= 1;
    report("header bit flipped (MAC check, PoW not required)", forward[0].receive(&geometry, &mut header_flip, 0));
    let other = Geometry::new(geometry.packet_len(), 4)?;
    let mut small = build_forward(&other, &BuildOptions::new(EPOCH), &path, b"x", &mut rng)?;
    report("packet of another geometry", forward[0].receive(&geometry, &mut small, d));
    let mut lazy: Vec<PathHop> = path.clone();
    lazy[0].pow_difficulty = 0;
    let mut cheap = build_forward(&geometry, &BuildOptions::new(EPOCH), &lazy, b"x", &mut rng)?;
    report("packet with too little proof of work", forward[0].receive(&geometry, &mut cheap, d + 8));
    Ok(())
}

fn carry(
    geometry: &Geometry,
    nodes: &mut [Node],
    packet: &mut [u8],
    difficulty: u8,
    what: &'static str,
) -> Result<Processed, DemoError> {
    let count = nodes.len();
    for index in 0..count {
        let started = Instant::now();
        let outcome = nodes[index].receive(geometry, packet, difficulty)?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        match &outcome {
            Processed::Forward { next_hop, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, forward to {}",
                    nodes[index].name,
                    name_of(nodes, *next_hop)
                );
            }
            Processed::Deliver { payload, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, deliver {} B payload",
                    nodes[index].name,
                    payload.len()
                );
                return Ok(outcome);
            }
            Processed::Reply { body, .. } => {
                println!(
                    "{:>8}: {what} processed in {micros:5.0} µs, hand {} B reply to client",
                    nodes[index].name,
                    body.len()
                );
                return Ok(outcome);
            }
        }
    }
    Err(DemoError::StillForwarding(what))
}

fn name_of(nodes: &[Node], id: NodeId) -> &'static str {
    nodes.iter().find(|n| n.id == id).map_or("an unknown node", |n| n.name)
}

fn report(what: &str, result: Result<Processed, Refusal>) {
    match result {
        Ok(_) => println!("  {what}: ACCEPTED (this is a bug)"),
        Err(error) => println!("  {what}: refused ({error})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk-through's request is delivered at the exit and its reply reaches the client
    /// through the SURB: `run` fails with [`DemoError::Unexpected`] or a refusal otherwise.
    #[test]
    fn the_demo_delivers_the_request_and_the_reply() {
        let outcome = run(&DemoArgs { pow_difficulty: 4, seed: Some(7) });
        assert!(outcome.is_ok(), "{outcome:?}");
    }
}
