//! Streams in the client core against the in-memory mixnet, in virtual
//! time, with an exit emulated by a `nox_stream::Endpoint` that echoes and
//! keeps the stream's SURB pool like the real exit service: every stream
//! message is a real Sphinx packet through three hops, every answer a real
//! SURB reply coded with FEC.

mod common;

use std::time::Duration;

use common::Mixnet;
use nox_client::{ClientConfig, ClientCore, StreamTarget};
use nox_message::{RequestBody, Response};
use nox_sphinx::{Geometry, Surb};
use nox_stream::{Endpoint, EndpointConfig, Pool, StreamId, StreamMessage};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// The exit's side of one stream: an echo service.
struct Exit {
    id: Option<StreamId>,
    pool: Vec<Surb>,
    seen_seq: u32,
    endpoint: Endpoint,
    owe_opened: bool,
    messages: usize,
}

impl Exit {
    fn new() -> Self {
        let endpoint = Endpoint::new(EndpointConfig { recv_capacity: 128 << 10, ..EndpointConfig::default() });
        Self { id: None, pool: Vec::new(), seen_seq: 0, endpoint, owe_opened: false, messages: 0 }
    }

    fn on_request(&mut self, surbs: Vec<Surb>, body: &[u8], now_ms: u64) {
        let message = StreamMessage::decode(body).expect("a valid stream message");
        self.messages += 1;
        assert!(self.id.is_none_or(|id| id == message.id), "one stream");
        self.id = Some(message.id);
        self.pool.extend(surbs);
        if let Some(batch) = message.surbs {
            self.seen_seq = self.seen_seq.max(batch.seq);
        }
        if message.open.is_some() {
            self.owe_opened = true;
        }
        self.endpoint.on_message(&message, now_ms).expect("the client keeps the protocol");
        // Echo what arrived; finish once the client has.
        let bytes = self.endpoint.read(usize::MAX, now_ms);
        assert_eq!(self.endpoint.write(&bytes), bytes.len(), "the echo buffer holds the window");
        if self.endpoint.recv_half().at_eof() {
            self.endpoint.finish();
        }
    }

    /// Messages back while the pool allows (one SURB in reserve for control frames).
    fn flush(&mut self, net: &mut Mixnet, now_ms: u64, lose: &mut impl FnMut() -> bool) -> Vec<(Vec<u8>,)> {
        let mut records = Vec::new();
        let Some(id) = self.id else { return records };
        self.endpoint.on_timer(now_ms);
        // One data shard per message (d = 1, p = 1 at 5 % loss for 0.99): 2 SURBs.
        let shard = nox_fec::shard_capacity(net.geometry.payload_capacity()).unwrap() - 2;
        while !self.pool.is_empty() {
            let mut message = StreamMessage::new(id);
            message.opened = std::mem::take(&mut self.owe_opened);
            let spend = if self.pool.len() > 2 { 2 } else { 1 };
            message.pool = Some(Pool { held: (self.pool.len() - spend) as u16, seen_seq: self.seen_seq });
            let room = if self.pool.len() > 2 { message.data_room(shard) } else { 0 };
            match self.endpoint.poll(room, now_ms) {
                Some(out) => out.apply(&mut message),
                None if message.opened => message.ack = Some(self.endpoint.ack_now()),
                None => break,
            }
            let encoded = Response::ok(message.encode()).encode();
            records.extend(net.answer_from(&mut self.pool, &encoded, &mut *lose).into_iter().map(|r| (r.2,)));
        }
        records
    }
}

struct Run {
    /// Entry node and header prefix of every packet the client sent.
    wire: Vec<(nox_sphinx::NodeId, Vec<u8>)>,
    echoed: Vec<u8>,
    sent: Vec<u8>,
    client_packets: usize,
    stream_packets_outside_slots: usize,
    virtual_secs: f64,
    core: ClientCore,
}

fn run(cover_rate: f64, loss: f64, len: usize, seed: u64) -> Run {
    let geometry = Geometry::new(4096, 3).unwrap();
    let mut net = Mixnet::new(seed, geometry, 0);
    let config = ClientConfig { cover_rate, loop_fraction: 0.0, ..ClientConfig::default() };
    let mut core = net.client(config, seed);
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x1055);
    let mut lose = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 > 1.0 - loss;
    let mut upload = vec![0u8; len];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut upload);
    let target = StreamTarget { host: "example.org".into(), port: 443 };
    let key = core.open_stream(target, net.now(Duration::ZERO)).unwrap();
    let mut exit = Exit::new();
    let (mut written, mut echoed, mut finished) = (0, Vec::new(), false);
    let (mut client_packets, mut outside) = (0, 0);
    let mut wire = Vec::new();
    let step = Duration::from_millis(5);
    let mut t = Duration::ZERO;
    loop {
        // The mixnet's keys are those of one 60 s epoch.
        assert!(t < Duration::from_secs(25), "no progress after {t:?}: {:?}", core.stream_status(key));
        let now = net.now(t);
        let now_ms = t.as_millis() as u64;
        let status = core.stream_status(key).expect("the stream");
        assert!(status.reset.is_none(), "reset: {status:?}");
        if status.closed {
            break;
        }
        if status.opened {
            written += core.stream_write(key, &upload[written..]);
            if written == len && !finished {
                core.stream_finish(key);
                finished = true;
            }
        }
        echoed.extend(core.stream_read(key, usize::MAX, now));
        let mut packets = core.poll_streams(now);
        outside += packets.len();
        while let Some(packet) = core.poll_transmit(now) {
            packets.push(packet.expect("a packet"));
        }
        client_packets += packets.len();
        wire.extend(packets.iter().map(|p| (p.entry, p.packet[..64].to_vec())));
        let packets: Vec<_> = packets.into_iter().filter(|_| !lose()).collect();
        for (_, request) in net.forward(packets, 0) {
            if let RequestBody::Stream(body) = request.body {
                exit.on_request(request.surbs, &body, now_ms);
            }
        }
        for (record,) in exit.flush(&mut net, now_ms, &mut lose) {
            core.on_downstream(Some(core.gateway()), &record, now);
        }
        let _ = core.poll_timeouts(now);
        t += step;
    }
    Run {
        wire,
        echoed,
        sent: upload,
        client_packets,
        stream_packets_outside_slots: outside,
        virtual_secs: t.as_secs_f64(),
        core,
    }
}

#[test]
fn a_stream_echoes_through_the_mixnet_and_closes() {
    let run = run(0.0, 0.0, 200_000, 1);
    assert!(run.echoed == run.sent, "echo differs ({} of {} bytes)", run.echoed.len(), run.sent.len());
    assert_eq!(run.core.stats().stream_timeouts, 0, "nothing lost, nothing resent");
    // Nothing on the wire links the stream's packets: fresh paths (several
    // entries) and fresh Sphinx headers for every message.
    let entries: std::collections::BTreeSet<_> = run.wire.iter().map(|(entry, _)| *entry).collect();
    let headers: std::collections::BTreeSet<_> = run.wire.iter().map(|(_, head)| head.clone()).collect();
    assert!(run.wire.len() > 20, "{} packets", run.wire.len());
    assert!(entries.len() > 1, "every message takes a fresh path");
    assert_eq!(headers.len(), run.wire.len(), "no two packets share a header prefix");
    assert_eq!(run.core.streams_open(), 1, "kept until the application lets go");
    let mut core = run.core;
    let key = nox_client::RequestId(0);
    core.stream_close(key);
    assert_eq!(core.streams_open(), 0);
    assert_eq!(core.surbs_held(), 0, "the stream's unused SURB keys are dropped with it");
}

#[test]
fn a_stream_survives_a_fifth_of_the_packets_lost_both_ways() {
    let run = run(0.0, 0.2, 100_000, 2);
    assert!(run.echoed == run.sent, "echo differs after loss");
    assert!(run.core.stats().stream_timeouts > 0, "losses were recovered by retransmission");
}

#[test]
fn with_cover_traffic_stream_packets_take_the_poisson_slots() {
    let rate = 50.0;
    let run = run(rate, 0.0, 60_000, 3);
    assert!(run.echoed == run.sent, "echo differs with cover on");
    assert_eq!(run.stream_packets_outside_slots, 0, "nothing bypasses the send queue");
    // Every packet the client emitted was a slot of the Poisson process:
    // as many as the rate allows in the time taken, no more.
    let expected = rate * run.virtual_secs;
    let emitted = run.client_packets as f64;
    assert!(emitted <= expected * 1.2 + 10.0, "{emitted} packets in {} s at λ = {rate}", run.virtual_secs);
    let stats = run.core.stats();
    assert!(stats.real_packets > 0 && stats.cover_packets > 0, "{stats:?}");
    assert_eq!(stats.real_packets + stats.cover_packets, run.client_packets as u64, "{stats:?}");
}
