//! Unit tests of `nox bench packet-size`: the model and the derived figures.

use super::*;

fn shape_of(req_n: usize, req_d: usize, surbs: usize, rep_d: usize) -> Value {
    json!({ "request_packets": req_n, "request_data_shards": req_d, "surbs": surbs, "reply_data_shards": rep_d })
}

#[test]
fn round_trip_without_mixing_is_slot_wait_plus_hops() {
    // μ = 0: one packet each way, so RTT = slot wait + 6 × per-hop; mean slot wait 1/λ.
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let s = round_trips(&shape_of(1, 1, 1, 1), 10.0, 0.0, 2.0, 0.0, 20_000, &mut rng);
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    assert!(s.iter().all(|v| *v >= 12.0));
    assert!((mean - 112.0).abs() < 3.0, "mean {mean}");
}

#[test]
fn more_fragments_take_longer() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let mut one = round_trips(&shape_of(1, 1, 2, 1), 2.0, 50.0, 0.1, 0.0, 5000, &mut rng);
    let mut four = round_trips(&shape_of(4, 4, 14, 11), 2.0, 50.0, 0.1, 0.0, 5000, &mut rng);
    assert!(median(&mut four) > median(&mut one) + 1000.0);
}

#[test]
fn small_packets_need_more_surbs_and_fragments() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (_, path) = path(&mut rng);
    let client = ClientConfig::default();
    let small = Geometry::with_scheme(2048, DEFAULT_HOPS, Scheme::default()).unwrap();
    let big = Geometry::default();
    let a = shape(&small, &path, &client, 16_384, &mut rng).unwrap();
    let b = shape(&big, &path, &client, 16_384, &mut rng).unwrap();
    assert!(a["surbs"].as_u64() > b["surbs"].as_u64());
    assert!(a["request_packets"].as_u64() > Some(1));
    assert_eq!(b["request_packets"].as_u64(), Some(1));
}
