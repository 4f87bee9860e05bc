//! Cover profiles in the core: a `wallet` client is silent until used, its real packets leave
//! in the very slots an `always-on` client's do, and cover runs for the padded session only.

mod common;

use std::time::Duration;

use common::Mixnet;
use nox_client::profile::{CoverProfile, WalletProfile};
use nox_client::{ClientConfig, Instant, PacketKind};
use nox_message::RequestBody;
use nox_sphinx::Geometry;

const RATE: f64 = 10.0;

/// Runs a client of `profile` for 60 virtual seconds, making one request at 10 s. Returns the
/// instants of the real and of the cover packets sent.
fn run(net: &Mixnet, profile: CoverProfile, seed: u64) -> (Vec<Instant>, Vec<Instant>) {
    let config = ClientConfig { cover_rate: RATE, profile, ..ClientConfig::default() };
    let mut core = net.client(config, seed);
    let (mut real, mut cover) = (Vec::new(), Vec::new());
    let mut requested = false;
    let end = net.base + Duration::from_secs(60);
    while let Some(at) = core.next_transmit_at() {
        if at >= end {
            break;
        }
        let use_at = net.base + Duration::from_secs(10);
        if !requested && at >= use_at {
            let (_, now_out) =
                core.request(RequestBody::Echo(vec![7; 3000]), 16, net.now(use_at - net.base)).expect("request");
            assert!(now_out.is_empty(), "real packets wait for a slot");
            requested = true;
        }
        while let Some(out) = core.poll_transmit(net.now(at - net.base)) {
            match out.expect("packet").kind {
                PacketKind::Fragment { .. } => real.push(at),
                PacketKind::Loop | PacketKind::Drop => cover.push(at),
            }
        }
    }
    (real, cover)
}

#[test]
fn a_wallet_client_is_silent_until_used_and_keeps_the_real_slots() {
    let net = Mixnet::new(31, Geometry::new(2048, 3).expect("geometry"), 0);
    let wallet =
        CoverProfile::Wallet(WalletProfile { min_session: Duration::from_secs(20), idle_tail: Duration::from_secs(5) });
    let (real_on, cover_on) = run(&net, CoverProfile::AlwaysOn, 7);
    let (real_w, cover_w) = run(&net, wallet, 7);
    assert!(real_on.len() >= 2, "a multi-fragment request: {real_on:?}");
    assert_eq!(real_w, real_on, "the profile moves no real packet");
    let use_at = net.base + Duration::from_secs(10);
    assert!(cover_on.iter().any(|t| *t < use_at), "always-on sends cover before any use");
    assert!(cover_w.iter().all(|t| *t >= use_at), "wallet is silent before the first use");
    let last = *cover_w.last().expect("cover during the session");
    assert!(last >= use_at + Duration::from_secs(19), "the session lasts its minimum: ended {last:?}");
    assert!(last < use_at + Duration::from_secs(21), "then silence: {last:?}");
    // Inside the session, every free slot is cover, as always-on would send it.
    let session: Vec<_> = cover_on.iter().filter(|t| **t >= use_at && **t < last).collect();
    assert_eq!(cover_w.iter().filter(|t| **t < last).count(), session.len());
}
