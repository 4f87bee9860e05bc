//! Rate tiers, connection limits, graduated bans, the combined policy, and bounded memory
//! under address cycling.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use nox_admission::{
    AdmissionConfig, AdmissionPolicy, BanConfig, BanList, ConnectionLimits, ConnectionRefused, ConnectionTracker,
    PacketVerdict, RateLimitConfig, RateLimiter, RateOutcome, Tier,
};

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// Sends packets from `ip` at `pps` for `seconds`; returns (admitted, outcomes that were not
/// plain admissions or refusals) and the instant reached.
fn send(
    limiter: &mut RateLimiter,
    ip: IpAddr,
    mut now: Instant,
    pps: u64,
    seconds: u64,
) -> (u64, Vec<RateOutcome>, Instant) {
    let gap = Duration::from_nanos(1_000_000_000 / pps);
    let (mut admitted, mut events) = (0, Vec::new());
    for _ in 0..pps * seconds {
        now += gap;
        match limiter.check(ip, now) {
            RateOutcome::Admitted => admitted += 1,
            RateOutcome::Refused => {}
            other => events.push(other),
        }
    }
    (admitted, events, now)
}

#[test]
fn tiers_have_their_rates() {
    let start = Instant::now();
    // No demotion here: this test is about the bucket rates alone.
    let config = RateLimitConfig { violations_to_demote: u32::MAX, ..Default::default() };
    let mut limiter = RateLimiter::new(config);
    let trusted = v4(10, 0, 0, 1);
    assert!(limiter.set_trusted(trusted));
    let unknown = v4(10, 0, 0, 2);
    // Offered 150 pps for 10 s: trusted keeps everything, unknown gets ~100 pps + 1 s burst.
    let (trusted_admitted, trusted_events, _) = send(&mut limiter, trusted, start, 150, 10);
    assert_eq!(trusted_admitted, 1_500);
    assert!(trusted_events.is_empty());
    let (unknown_admitted, _, _) = send(&mut limiter, unknown, start, 150, 10);
    assert!((1_090..=1_110).contains(&unknown_admitted), "{unknown_admitted}");
    assert_eq!(limiter.tier(trusted), Tier::Trusted);
    assert_eq!(limiter.tier(unknown), Tier::Unknown);
}

#[test]
fn violations_demote_and_good_behaviour_promotes() {
    let start = Instant::now();
    let mut limiter = RateLimiter::new(RateLimitConfig::default());
    let peer = v4(10, 0, 0, 3);
    assert!(limiter.set_trusted(peer));
    // 400 pps: over 200 → demoted to Unknown, then to Penalized, then persistent offender.
    let (_, events, now) = send(&mut limiter, peer, start, 400, 5);
    assert_eq!(events[0], RateOutcome::RefusedAndDemoted(Tier::Unknown));
    assert_eq!(events[1], RateOutcome::RefusedAndDemoted(Tier::Penalized));
    assert!(events[2..].iter().all(|e| *e == RateOutcome::RefusedPersistentOffender));
    assert_eq!(limiter.tier(peer), Tier::Penalized);
    // While penalized, 20 pps passes and 40 pps does not.
    let (admitted, _, now) = send(&mut limiter, peer, now, 20, 10);
    assert_eq!(admitted, 200);
    assert_eq!(limiter.tier(peer), Tier::Penalized, "promotion needs promote_after of calm");
    // A minute of calm: back to Unknown; another minute: back to its base tier, Trusted.
    let (_, _, now) = send(&mut limiter, peer, now, 20, 55);
    assert_eq!(limiter.tier(peer), Tier::Unknown);
    let (_, _, _) = send(&mut limiter, peer, now, 20, 61);
    assert_eq!(limiter.tier(peer), Tier::Trusted);
}

#[test]
fn unknown_peers_are_not_promoted_to_trusted() {
    let start = Instant::now();
    let mut limiter = RateLimiter::new(RateLimitConfig::default());
    let peer = v4(10, 0, 0, 4);
    let (_, events, now) = send(&mut limiter, peer, start, 300, 3);
    assert_eq!(events[0], RateOutcome::RefusedAndDemoted(Tier::Penalized));
    let (_, _, _) = send(&mut limiter, peer, now, 10, 300);
    assert_eq!(limiter.tier(peer), Tier::Unknown);
}

#[test]
fn connection_limits_per_peer_subnet_and_total() {
    let mut tracker = ConnectionTracker::new(ConnectionLimits { max_total: 60, ..Default::default() });
    let peer = v4(192, 0, 2, 1);
    assert_eq!(tracker.try_open(peer), Ok(()));
    assert_eq!(tracker.try_open(peer), Ok(()));
    assert_eq!(tracker.try_open(peer), Err(ConnectionRefused::PeerLimit));
    assert!(tracker.close(peer));
    assert_eq!(tracker.try_open(peer), Ok(()));
    // 48 more addresses in the same /24 (2 used already): the 51st connection is refused.
    for host in 2..=49 {
        assert_eq!(tracker.try_open(v4(192, 0, 2, host)), Ok(()), "host {host}");
    }
    assert_eq!(tracker.open_for_subnet(peer), 50);
    assert_eq!(tracker.try_open(v4(192, 0, 2, 200)), Err(ConnectionRefused::SubnetLimit));
    // Another /24 is independent, until the global cap.
    for host in 1..=10 {
        assert_eq!(tracker.try_open(v4(198, 51, 100, host)), Ok(()));
    }
    assert_eq!(tracker.try_open(v4(203, 0, 113, 1)), Err(ConnectionRefused::TotalLimit));
    assert!(!tracker.close(v4(8, 8, 8, 8)), "closing an unknown peer is a no-op");
    assert_eq!(tracker.total(), 60);
}

#[test]
fn ipv6_peers_are_slash_64_and_subnets_slash_48() {
    let mut tracker = ConnectionTracker::new(ConnectionLimits::default());
    let host = |subnet: u16, iid: u16| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 7, subnet, 0, 0, 0, iid));
    // Rotating the interface identifier inside one /64 does not escape the per-peer limit.
    assert_eq!(tracker.try_open(host(1, 1)), Ok(()));
    assert_eq!(tracker.try_open(host(1, 2)), Ok(()));
    assert_eq!(tracker.try_open(host(1, 3)), Err(ConnectionRefused::PeerLimit));
    // Rotating /64s inside one /48 hits the subnet limit.
    for subnet in 2..=25 {
        assert_eq!(tracker.try_open(host(subnet, 1)), Ok(()));
        assert_eq!(tracker.try_open(host(subnet, 2)), Ok(()));
    }
    assert_eq!(tracker.try_open(host(26, 1)), Err(ConnectionRefused::SubnetLimit));
    // IPv4-mapped addresses count as IPv4.
    let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
    assert_eq!(tracker.try_open(mapped), Ok(()));
    assert_eq!(tracker.open_for_peer(v4(192, 0, 2, 7)), 1);
}

#[test]
fn bans_double_cap_and_are_forgiven() {
    let start = Instant::now();
    let config = BanConfig {
        base_duration: Duration::from_secs(60),
        max_duration: Duration::from_secs(600),
        forgive_after: Duration::from_secs(3600),
        max_entries: 100,
    };
    let mut bans = BanList::new(config);
    let peer = v4(10, 9, 9, 9);
    let mut now = start;
    let mut durations = Vec::new();
    for _ in 0..6 {
        let record = bans.record_offence(peer, now);
        durations.push((record.banned_until - now).as_secs());
        assert!(bans.is_banned(peer, now));
        now = record.banned_until;
        assert!(!bans.is_banned(peer, now), "ban ends at banned_until");
    }
    assert_eq!(durations, vec![60, 120, 240, 480, 600, 600]);
    assert_eq!(bans.level(peer, now), 6);
    // Two quiet hours forgive two levels: the next ban is level 5 (capped 600 s) …
    assert_eq!(bans.level(peer, now + Duration::from_secs(2 * 3600)), 4);
    // … and after six quiet hours the peer is clean: next offence is a first offence again.
    now += Duration::from_secs(6 * 3600);
    assert_eq!(bans.level(peer, now), 0);
    let record = bans.record_offence(peer, now);
    assert_eq!((record.banned_until - now).as_secs(), 60);
    bans.prune(now + Duration::from_secs(10 * 3600));
    assert!(bans.is_empty());
}

#[test]
fn policy_combines_bans_rates_and_difficulty() {
    let start = Instant::now();
    let mut policy = AdmissionPolicy::new(AdmissionConfig::defaults(100.0), start).unwrap();
    let flooder = v4(10, 1, 1, 1);
    assert_eq!(policy.on_connect(flooder, start), Ok(()));
    let mut now = start;
    let mut verdicts = Vec::new();
    for _ in 0..2_000 {
        now += Duration::from_micros(500); // 2,000 pps from one address
        verdicts.push(policy.on_packet(flooder, now));
    }
    let banned_at = verdicts.iter().position(|v| matches!(v, PacketVerdict::RateLimitedAndBanned(_)));
    let banned_at = banned_at.expect("a persistent flood is banned");
    assert!(verdicts[banned_at + 1..].iter().all(|v| *v == PacketVerdict::Banned));
    assert_eq!(policy.on_connect(flooder, now), Err(ConnectionRefused::Banned));
    // The single flooder was rate limited, so it did not raise everyone's difficulty.
    policy.update_difficulty(now);
    assert_eq!(policy.required_difficulty(now), 12);
    assert_eq!(policy.on_offence(v4(10, 2, 2, 2), now).level, 1);
}

#[test]
fn address_cycling_cannot_grow_memory() {
    let start = Instant::now();
    let mut limiter = RateLimiter::new(RateLimitConfig { max_peers: 1_000, ..Default::default() });
    let mut bans = BanList::new(BanConfig { max_entries: 500, ..Default::default() });
    let mut now = start;
    for index in 0..50_000u32 {
        now += Duration::from_micros(10);
        let ip = IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + index));
        let _ = limiter.check(ip, now);
        let _ = bans.record_offence(ip, now);
        assert!(limiter.tracked_peers() <= 1_000);
        assert!(bans.len() <= 500);
    }
    assert_eq!(limiter.tracked_peers(), 1_000);
    assert_eq!(bans.len(), 500);
    // The most recent offenders are the ones remembered.
    assert!(bans.is_banned(IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + 49_999)), now));
    assert!(!bans.is_banned(IpAddr::V4(Ipv4Addr::from(0x0A00_0000)), now));
    // IPv6 cycling inside one /64 is a single peer.
    let mut limiter = RateLimiter::new(RateLimitConfig::default());
    for iid in 0..5_000u16 {
        let _ = limiter.check(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 1, iid)), now);
    }
    assert_eq!(limiter.tracked_peers(), 1);
    // Connection state only exists for open connections, capped by max_total.
    let mut tracker = ConnectionTracker::new(ConnectionLimits { max_total: 100, ..Default::default() });
    for index in 0..10_000u32 {
        let _ = tracker.try_open(IpAddr::V4(Ipv4Addr::from(0x0B00_0000 + index * 256)));
    }
    assert!(tracker.tracked_entries() <= 200);
}
