//! Unit tests of the dashboard state.

use super::*;

fn reading(received: u64, forwarded: u64, replay: u64) -> NodeReading {
    let mut drops = BTreeMap::new();
    drops.insert("replay".to_owned(), replay);
    NodeReading {
        received,
        forwarded,
        drops,
        epoch: 7,
        delay: Some(Histogram {
            le_seconds: vec![Some(0.001), None],
            counts: vec![forwarded, 0],
            count: forwarded,
            sum_seconds: 0.0,
        }),
        ..NodeReading::default()
    }
}

fn endpoint(name: &str, layer: u8) -> Endpoint {
    Endpoint { name: name.into(), id: None, layer_hint: Some(layer) }
}

#[test]
fn rates_come_from_counter_deltas_over_the_window() {
    let mut tracker = Tracker::new(vec![endpoint("node-0", 0), endpoint("node-1", 1)]);
    let start = Instant::now();
    tracker.record(0, start, Ok(reading(100, 90, 1)));
    tracker.record(0, start + Duration::from_secs(2), Ok(reading(300, 250, 3)));
    tracker.record(1, start, Err("connection refused".into()));
    let state = tracker.state(start + Duration::from_secs(2), 0, &TopologyStatus::default(), None);
    assert_eq!(state.layers.len(), 2);
    let up = &state.layers[0].nodes[0];
    assert!(up.up && up.down_reason.is_none());
    assert_eq!((up.rates.in_per_s, up.rates.out_per_s, up.rates.dropped_per_s), (100.0, 80.0, 1.0));
    assert_eq!(state.totals.drops.get("replay"), Some(&3));
    assert_eq!(state.delay_recent.counts, vec![160, 0], "the window's releases");
    assert_eq!(state.delay_total.counts, vec![250, 0]);
    let down = &state.layers[1].nodes[0];
    assert!(!down.up);
    assert_eq!(down.down_reason.as_deref(), Some("connection refused"));
    assert_eq!((state.totals.nodes_up, state.totals.nodes_down), (1, 1));
}

#[test]
fn the_window_slides_and_a_restart_starts_over() {
    let mut tracker = Tracker::new(vec![endpoint("node-0", 0)]);
    let start = Instant::now();
    for second in 0..=10u64 {
        tracker.record(0, start + Duration::from_secs(second), Ok(reading(second * 10, 0, 0)));
    }
    assert!(tracker.tracks[0].history.len() <= 7, "old readings leave the window");
    let state = tracker.state(start + Duration::from_secs(10), 0, &TopologyStatus::default(), None);
    assert_eq!(state.layers[0].nodes[0].rates.in_per_s, 10.0);
    // The node restarted: its counters are back near zero; no negative or huge rate.
    tracker.record(0, start + Duration::from_secs(11), Ok(reading(5, 0, 0)));
    let state = tracker.state(start + Duration::from_secs(11), 0, &TopologyStatus::default(), None);
    assert_eq!(state.layers[0].nodes[0].rates.in_per_s, 0.0);
}

#[test]
fn a_node_that_stops_answering_is_down_with_its_last_figures() {
    let mut tracker = Tracker::new(vec![endpoint("node-0", 0)]);
    let start = Instant::now();
    tracker.record(0, start, Ok(reading(10, 10, 0)));
    tracker.record(0, start + Duration::from_secs(1), Err("malformed metrics: line 3: bad value".into()));
    let state = tracker.state(start + Duration::from_secs(3), 0, &TopologyStatus::default(), None);
    let node = &state.layers[0].nodes[0];
    assert!(!node.up);
    assert_eq!(node.down_reason.as_deref(), Some("malformed metrics: line 3: bad value"));
    assert_eq!(node.scrape_age_s, Some(3.0));
    assert_eq!(node.totals.received, 10);
}

#[test]
fn the_chain_view_falls_back_to_the_nodes() {
    let mut tracker = Tracker::new(vec![endpoint("node-0", 0), endpoint("node-1", 0)]);
    let now = Instant::now();
    tracker.record(0, now, Ok(NodeReading { chain: Some((40, 3)), ..reading(0, 0, 0) }));
    tracker.record(1, now, Ok(NodeReading { chain: Some((42, 3)), ..reading(0, 0, 0) }));
    let state = tracker.state(now, 0, &TopologyStatus::default(), None);
    assert_eq!(state.chain.map(|c| (c.block, c.registered, c.source)), Some((42, 3, "nodes")));
}

#[test]
fn roles_name_the_layers() {
    assert_eq!([role(0, 3), role(1, 3), role(2, 3)], ["entry", "mix", "exit"]);
}
