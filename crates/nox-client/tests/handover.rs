//! Gateway hand-over in the core: requests sent before the reply gateway
//! changes keep the old gateway in `reply_gateways()` (the shell keeps its
//! link) until they complete or time out; then it is released. Their replies,
//! arriving through the old gateway after the change, are accepted.

mod common;

use std::time::Duration;

use common::Mixnet;
use nox_client::{ClientConfig, ClientCore, HealthConfig, Now, RequestId};
use nox_message::{Request, RequestBody, Response};
use nox_sphinx::{Geometry, NodeId};

fn config() -> ClientConfig {
    ClientConfig {
        cover_rate: 10.0,
        health: HealthConfig { return_timeout: Duration::from_secs(2), ..HealthConfig::default() },
        timeout: Duration::from_secs(60),
        ..ClientConfig::default()
    }
}

fn at(net: &Mixnet, after: Duration) -> Now {
    Now { at: net.base + after, unix: net.unix }
}

/// The time of the next cover slot (where [`run`] stopped).
fn next_slot(core: &ClientCore, net: &Mixnet) -> Now {
    Now { at: core.next_transmit_at().expect("cover on"), unix: net.unix }
}

/// Runs the cover slots up to `until` (zero latency: loops come back at
/// once unless a dead node drops them). Requests queued before are carried to
/// their exit and returned unanswered (the exit holds them).
fn run(core: &mut ClientCore, net: &mut Mixnet, until: Duration, stop: impl Fn(&ClientCore) -> bool) -> Vec<Request> {
    let mut held = Vec::new();
    while let Some(when) = core.next_transmit_at() {
        if when - net.base > until || stop(core) {
            break;
        }
        let now = at(net, when - net.base);
        let real = core.queued() > 0;
        let out = core.poll_transmit(now).expect("due").expect("packet");
        if real {
            held.extend(net.forward(vec![out], 0).into_iter().map(|(_, request)| request));
        } else {
            for (gateway, record) in net.serve(out).records {
                assert!(core.on_downstream(Some(gateway), &record, now).is_none(), "cover completes nothing");
            }
        }
        assert!(core.poll_timeouts(now).is_empty(), "no request times out here");
    }
    held
}

/// The exit answers `request` with its own body; the records reach the
/// client through the gateways the SURBs name.
fn answer(net: &mut Mixnet, request: Request) -> Vec<(NodeId, Vec<u8>)> {
    let RequestBody::Echo(text) = &request.body else { panic!("an echo") };
    let response = Response::ok(text.clone());
    net.answer(request, &response).into_iter().map(|(gateway, _, record)| (gateway, record)).collect()
}

#[test]
fn requests_sent_before_a_gateway_change_keep_the_old_gateway_until_they_end() {
    let mut net = Mixnet::new(33, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(config(), 702);
    let old = core.gateway();
    assert_eq!(core.reply_gateways(), [old]);

    // Two requests whose SURBs name `old`; their exits hold them.
    let t0 = at(&net, Duration::ZERO);
    let (a, none) = core.request(RequestBody::Echo(b"a".to_vec()), 64, t0).expect("request a");
    assert!(none.is_empty(), "queued for the cover slots");
    let (b, _) = core.request(RequestBody::Echo(b"b".to_vec()), 64, t0).expect("request b");
    let mut held = run(&mut core, &mut net, Duration::from_secs(5), |c| c.queued() == 0);
    assert_eq!(held.len(), 2, "both requests reached their exits");

    // The gateway dies: lost loops mark it degraded and the client moves on.
    net.dead.insert(old);
    held.extend(run(&mut core, &mut net, Duration::from_secs(30), |c| c.gateway() != old));
    let new = core.gateway();
    assert_ne!(new, old, "the gateway changed: {:?}", core.stats());
    assert_eq!(core.reply_gateways(), [new, old], "the old gateway is still owed two replies");

    // It comes back. The exit answers `a`: the reply arrives through the old
    // gateway, after the change, and completes the request.
    net.dead.remove(&old);
    let now = next_slot(&core, &net);
    let request_b = held.pop().expect("b");
    let mut completed: Vec<(RequestId, Vec<u8>)> = Vec::new();
    for (gateway, record) in answer(&mut net, held.pop().expect("a")) {
        assert_eq!(gateway, old, "SURBs built before the change name the old gateway");
        if let Some(done) = core.on_downstream(Some(gateway), &record, now) {
            completed.push((done.id, done.result.expect("a response").body));
        }
    }
    assert_eq!(completed, [(a, b"a".to_vec())]);
    core.poll_timeouts(now);
    assert_eq!(core.reply_gateways(), [new, old], "b is still owed through the old gateway");

    // A request made now names the new gateway only.
    let (c, _) = core.request(RequestBody::Echo(b"c".to_vec()), 64, now).expect("request c");
    let request_c = run(&mut core, &mut net, Duration::from_secs(40), |c| c.queued() == 0).pop().expect("c");
    let now = next_slot(&core, &net);
    for (gateway, record) in answer(&mut net, request_c) {
        assert_eq!(gateway, new);
        if let Some(done) = core.on_downstream(Some(gateway), &record, now) {
            assert_eq!(done.id, c);
        }
    }
    assert_eq!(core.reply_gateways(), [new, old]);
    // Cover runs on with every node alive; `b` is still owed until its deadline (60 s).
    run(&mut core, &mut net, Duration::from_secs(59), |_| false);
    assert_eq!(core.gateway(), new);
    assert_eq!(core.reply_gateways(), [new, old]);

    // `b` times out: nothing is owed through the old gateway any more, and
    // it is released (the shell closes its link).
    let expired = core.poll_timeouts(at(&net, Duration::from_secs(61)));
    assert_eq!(expired.iter().map(|d| d.id).collect::<Vec<_>>(), [b]);
    assert_eq!(core.reply_gateways(), [new], "released once its last request timed out");
    // A reply on b's SURBs now is late and refused.
    let late = core.stats().late_replies;
    for (gateway, record) in answer(&mut net, request_b) {
        assert!(core.on_downstream(Some(gateway), &record, at(&net, Duration::from_secs(62))).is_none());
    }
    assert!(core.stats().late_replies > late);
    assert_eq!(core.stats().reply_gateways_evicted, 0);
}

#[test]
fn a_request_completed_before_the_change_leaves_nothing_owed() {
    let mut net = Mixnet::new(34, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(config(), 703);
    let old = core.gateway();
    let t0 = at(&net, Duration::ZERO);
    let (a, _) = core.request(RequestBody::Echo(b"a".to_vec()), 64, t0).expect("request");
    let request = run(&mut core, &mut net, Duration::from_secs(5), |c| c.queued() == 0).pop().expect("a");
    let now = next_slot(&core, &net);
    let done: Vec<RequestId> = answer(&mut net, request)
        .into_iter()
        .filter_map(|(g, r)| core.on_downstream(Some(g), &r, now))
        .map(|d| d.id)
        .collect();
    assert_eq!(done, [a]);
    net.dead.insert(old);
    run(&mut core, &mut net, Duration::from_secs(40), |c| c.gateway() != old);
    assert_ne!(core.gateway(), old);
    assert_eq!(core.reply_gateways(), [core.gateway()], "no old link kept when nothing is owed");
}

#[test]
fn with_every_gateway_dead_the_client_does_not_hop_on_every_tick() {
    let mut net = Mixnet::new(35, Geometry::new(4096, 3).unwrap(), 0);
    let mut core = net.client(config(), 704);
    net.dead.extend(net.nodes_in(2));
    let (_, _) = core.request(RequestBody::Echo(b"a".to_vec()), 64, at(&net, Duration::ZERO)).expect("request");
    let mut gateway = core.gateway();
    let mut changes = 0;
    while let Some(when) = core.next_transmit_at() {
        if when - net.base > Duration::from_secs(30) {
            break;
        }
        let now = at(&net, when - net.base);
        let out = core.poll_transmit(now).expect("due").expect("packet");
        assert!(net.serve(out).records.is_empty(), "every gateway is dead");
        core.poll_timeouts(now);
        if core.gateway() != gateway {
            gateway = core.gateway();
            changes += 1;
        }
    }
    // Each gateway it moves to is given one loop timeout (2 s) first: at most 15 moves in 30 s,
    // where a move on every slot (10 per second) would make hundreds.
    assert!((2..=15).contains(&changes), "{changes} gateway changes in 30 s");
    assert!(core.reply_gateways().len() <= 1 + nox_client::MAX_OLD_GATEWAYS);
}
