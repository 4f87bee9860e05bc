//! Loopix λ_P: the client emits at the Poisson rate whether or not real
//! requests are queued; real traffic only decides what fills each slot.

mod common;

use std::time::Duration;

use common::Mixnet;
use nox_client::{ClientConfig, ClientCore, DROP_MAGIC, Instant};
use nox_message::RequestBody;
use nox_sphinx::Geometry;

const RATE: f64 = 20.0;
const SLOTS: usize = 600;

/// Runs the send queue for `SLOTS` emissions in virtual time; every
/// `request_every`-th slot (0: never) a request is made first. Returns the
/// emission instants and the core.
fn run(net: &Mixnet, seed: u64, request_every: usize) -> (Vec<Instant>, ClientCore) {
    let config = ClientConfig { cover_rate: RATE, ..ClientConfig::default() };
    let mut core = net.client(config, seed);
    let mut times = Vec::with_capacity(SLOTS);
    while times.len() < SLOTS {
        let at = core.next_transmit_at().expect("cover on");
        let now = net.now(at - net.base);
        if request_every > 0 && times.len() % request_every == 0 {
            let (_, immediate) = core.request(RequestBody::Echo(vec![1, 2, 3]), 16, now).expect("request");
            assert!(immediate.is_empty(), "with cover on, real packets wait for a slot");
        }
        let out = core.poll_transmit(now).expect("a slot is due").expect("packet");
        assert_eq!(out.packet.len(), net.geometry.packet_len());
        assert!(core.poll_transmit(now).is_none(), "one packet per slot");
        times.push(at);
    }
    (times, core)
}

fn gaps(times: &[Instant]) -> Vec<f64> {
    times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect()
}

#[test]
fn emissions_follow_the_poisson_rate_with_and_without_traffic() {
    let net = Mixnet::new(21, Geometry::new(2048, 3).unwrap(), 0);
    let (idle, idle_core) = run(&net, 100, 0);
    let (busy, busy_core) = run(&net, 100, 3);
    assert_eq!(idle_core.stats().real_packets, 0);
    assert!(busy_core.stats().real_packets > 100, "real packets went out: {:?}", busy_core.stats());
    assert!(busy_core.stats().cover_packets > 100, "cover filled the idle slots");
    // Same timer seed: the very same instants, traffic or not.
    assert_eq!(idle, busy, "emission times do not depend on real traffic");
    let mean = 1.0 / RATE;
    for sample in [gaps(&idle), gaps(&busy)] {
        let ks = nox_stats::ks::one_sample(&sample, |x| nox_stats::exponential::cdf(x, mean), 0.01);
        assert!(!ks.rejects(), "gaps are Exp(1/λ): {ks:?}");
    }
    // Another seed, with traffic: same distribution as the idle run.
    let (other, _) = run(&net, 200, 2);
    let ks = nox_stats::ks::two_sample(&gaps(&idle), &gaps(&other), 0.01);
    assert!(!ks.rejects(), "busy and idle gap distributions match: {ks:?}");
}

#[test]
fn the_ks_check_can_fail() {
    // The same test refuses a schedule at twice the rate.
    let net = Mixnet::new(22, Geometry::new(2048, 3).unwrap(), 0);
    let (times, _) = run(&net, 300, 0);
    let sample = gaps(&times);
    let ks = nox_stats::ks::one_sample(&sample, |x| nox_stats::exponential::cdf(x, 0.5 / RATE), 0.01);
    assert!(ks.rejects());
}

#[test]
fn cover_packets_are_drops_on_full_paths() {
    let mut net = Mixnet::new(23, Geometry::new(2048, 3).unwrap(), 1);
    let config = ClientConfig { cover_rate: RATE, ..ClientConfig::default() };
    let mut core = net.client(config, 400);
    for _ in 0..20 {
        let out = core.cover_packet(net.now(Duration::ZERO)).expect("cover");
        match net.route(out.entry, out.packet, 0) {
            common::Outcome::Exit { payload, .. } => assert!(payload.starts_with(DROP_MAGIC)),
            common::Outcome::Reply { .. } => panic!("cover is a forward packet"),
        }
    }
}

#[test]
fn without_cover_packets_go_out_at_once() {
    let net = Mixnet::new(24, Geometry::new(2048, 3).unwrap(), 0);
    let mut core = net.client(ClientConfig::default(), 500);
    let (_, packets) = core.request(RequestBody::Echo(vec![0]), 16, net.now(Duration::ZERO)).unwrap();
    assert!(!packets.is_empty());
    assert_eq!(core.next_transmit_at(), None);
    assert!(core.poll_transmit(net.now(Duration::from_secs(5))).is_none());
}

/// Each packet's kind says what the exit will receive: a fragment whose first 16 bytes the
/// kind names, a drop, or a loop (an empty echo). Measurements rely on it as ground truth.
#[test]
fn packet_kinds_name_what_the_exit_receives() {
    use nox_client::PacketKind;
    let mut net = Mixnet::new(25, Geometry::new(2048, 3).unwrap(), 0);
    let config = ClientConfig { cover_rate: RATE, loop_fraction: 0.5, ..ClientConfig::default() };
    let mut core = net.client(config, 600);
    let (mut fragments, mut drops, mut loops) = (0, 0, 0);
    for slot in 0..120 {
        let at = core.next_transmit_at().expect("cover on");
        let now = net.now(at - net.base);
        if slot % 4 == 0 {
            core.request(RequestBody::Echo(vec![7; 40]), 16, now).expect("request");
        }
        let out = core.poll_transmit(now).expect("a slot is due").expect("packet");
        let kind = out.kind;
        let common::Outcome::Exit { payload, .. } = net.route(out.entry, out.packet, 0) else {
            panic!("a client packet is a forward packet");
        };
        match kind {
            PacketKind::Fragment { head } => {
                assert_eq!(&payload[..16], &head[..], "the head is the fragment's first 16 bytes");
                assert!(!payload.starts_with(DROP_MAGIC));
                fragments += 1;
            }
            PacketKind::Drop => {
                assert!(payload.starts_with(DROP_MAGIC));
                drops += 1;
            }
            PacketKind::Loop => {
                assert!(!payload.starts_with(DROP_MAGIC), "a loop is an echo, not a drop");
                loops += 1;
            }
        }
    }
    assert_eq!(fragments, 30, "one fragment per request, each in a slot");
    assert!(drops > 10 && loops > 10, "cover slots hold drops and loops: {drops} / {loops}");
}
