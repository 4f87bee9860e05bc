//! Loop health: degrade on consecutive losses, recover on returns, bounded memory.

use std::time::Duration;

use nox_cover::{HealthConfig, Instant, LoopHealthTracker, LoopId, LoopReturn, NodeId, NodeStatus, RecordError};

fn node(byte: u8) -> NodeId {
    NodeId([byte; 32])
}

fn loop_id(index: u32) -> LoopId {
    let mut id = [0u8; 16];
    id[..4].copy_from_slice(&index.to_le_bytes());
    LoopId(id)
}

const TIMEOUT: Duration = Duration::from_secs(10);

fn tracker() -> LoopHealthTracker {
    LoopHealthTracker::new(HealthConfig { return_timeout: TIMEOUT, ..HealthConfig::default() })
}

#[test]
fn return_before_timeout_counts_after_it_is_a_loss() {
    let start = Instant::ORIGIN;
    let mut health = tracker();
    let path = [node(1), node(2), node(3)];
    health.record_sent(loop_id(1), &path, start).unwrap();
    health.record_sent(loop_id(2), &path, start).unwrap();
    assert_eq!(health.next_timeout_at(), Some(start + TIMEOUT));
    let almost = start + TIMEOUT - Duration::from_millis(1);
    assert_eq!(
        health.record_returned(loop_id(1), almost),
        LoopReturn::Returned { round_trip: TIMEOUT - Duration::from_millis(1) }
    );
    // The second one arrives exactly at the timeout: already lost.
    assert_eq!(health.record_returned(loop_id(2), start + TIMEOUT), LoopReturn::Unknown);
    assert_eq!(health.node_health(&node(2)).map(|h| (h.returned, h.lost)), Some((1, 1)));
    assert_eq!(health.lost_loops(), 1, "the expiry inside record_returned is counted too");
    assert_eq!(health.record_returned(loop_id(1), almost), LoopReturn::Unknown, "only once");
    assert_eq!(health.outstanding(), 0);
}

#[test]
fn a_dropping_node_is_degraded_and_its_neighbours_are_not() {
    let start = Instant::ORIGIN;
    let mut health = tracker();
    let (a, b, c, d, e) = (node(1), node(2), node(3), node(4), node(5));
    let mut now = start;
    // Node B drops every loop. A and C also carry loops on paths avoiding B, which return.
    let paths = [[a, b, c], [a, d, c], [e, b, d], [a, e, c], [d, b, e]];
    for (index, path) in paths.iter().cycle().take(30).enumerate() {
        now += Duration::from_secs(1);
        let id = loop_id(index as u32);
        health.record_sent(id, path, now).unwrap();
        if !path.contains(&b) {
            health.record_returned(id, now + Duration::from_millis(300));
        }
    }
    // Losses are charged as their timeouts pass, interleaved with returns: check the steady
    // state, not after one big jump that would charge every pending loss at once.
    health.expire(now);
    assert_eq!(health.node_status(&b), NodeStatus::Degraded);
    for healthy in [a, c, d, e] {
        assert_eq!(health.node_status(&healthy), NodeStatus::Healthy, "{healthy:?}");
    }
    assert!(health.is_path_degraded(&[a, b, c]));
    assert!(!health.is_path_degraded(&[a, d, c]));
    assert_eq!(health.degraded_nodes().collect::<Vec<_>>(), vec![&b]);
}

#[test]
fn degradation_needs_consecutive_losses_and_recovery_needs_returns() {
    let start = Instant::ORIGIN;
    let mut health = LoopHealthTracker::new(HealthConfig {
        return_timeout: TIMEOUT,
        losses_to_degrade: 3,
        ..HealthConfig::default()
    });
    let path = [node(7)];
    let mut now = start;
    let mut index = 0;
    let mut send = |health: &mut LoopHealthTracker, now: Instant, returns: bool| {
        index += 1;
        health.record_sent(loop_id(index), &path, now).unwrap();
        if returns {
            health.record_returned(loop_id(index), now + Duration::from_secs(1));
        } else {
            health.expire(now + TIMEOUT);
        }
    };
    for _ in 0..2 {
        now += TIMEOUT;
        send(&mut health, now, false);
    }
    now += TIMEOUT;
    send(&mut health, now, true); // resets the streak: two losses are not enough
    for _ in 0..2 {
        now += TIMEOUT;
        send(&mut health, now, false);
    }
    assert_eq!(health.node_status(&node(7)), NodeStatus::Healthy);
    now += TIMEOUT;
    send(&mut health, now, false);
    assert_eq!(health.node_status(&node(7)), NodeStatus::Degraded);
    now += TIMEOUT;
    send(&mut health, now, true);
    assert_eq!(health.node_status(&node(7)), NodeStatus::Degraded, "one return is not enough");
    now += TIMEOUT;
    send(&mut health, now, true);
    assert_eq!(health.node_status(&node(7)), NodeStatus::Healthy);
}

#[test]
fn memory_is_bounded() {
    let start = Instant::ORIGIN;
    let mut health = LoopHealthTracker::new(HealthConfig {
        return_timeout: TIMEOUT,
        max_outstanding: 100,
        max_nodes: 50,
        ..HealthConfig::default()
    });
    for index in 0..10_000u32 {
        let now = start + Duration::from_millis(u64::from(index));
        let byte = (index % 251) as u8;
        health.record_sent(loop_id(index), &[node(byte), node(byte.wrapping_add(1))], now).unwrap();
        assert!(health.outstanding() <= 100);
        if index % 4 == 0 {
            health.record_returned(loop_id(index.saturating_sub(50)), now);
        }
        assert!(health.tracked_nodes() <= 50);
    }
    assert!(health.evicted_loops() > 0);
    assert_eq!(health.record_sent(loop_id(1), &[], start), Err(RecordError::PathLength(0)));
    assert_eq!(health.record_sent(loop_id(9_999), &[node(1)], start), Err(RecordError::DuplicateLoopId));
}

#[test]
fn random_paths_single_dropping_node() {
    // 3 layers × 3 nodes, one loop per second on a uniformly random path, node (1, 1) drops
    // everything. Checked once per second after warm-up: the dropping node is degraded, and
    // healthy nodes are (almost) never flagged.
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    let start = Instant::ORIGIN;
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let mut health = tracker();
    let layer_node = |layer: u8, index: u8| node(layer * 3 + index + 1);
    let bad = layer_node(1, 1);
    let mut false_alarms = 0u32;
    let mut checks = 0u32;
    for second in 0..3_000u32 {
        let now = start + Duration::from_secs(u64::from(second));
        health.expire(now);
        let path: Vec<NodeId> = (0..3).map(|layer| layer_node(layer, (rng.next_u32() % 3) as u8)).collect();
        health.record_sent(loop_id(second), &path, now).unwrap();
        if !path.contains(&bad) {
            health.record_returned(loop_id(second), now + Duration::from_millis(200));
        }
        if second >= 100 {
            checks += 1;
            assert_eq!(health.node_status(&bad), NodeStatus::Degraded, "second {second}");
            false_alarms += health.degraded_nodes().filter(|id| **id != bad).count() as u32;
        }
    }
    // 6 healthy nodes in other layers, each flagged with probability about (1/3)^5 per loop.
    let rate = f64::from(false_alarms) / f64::from(checks * 8);
    assert!(rate < 0.01, "false alarm rate {rate}");
}
