//! Two endpoints joined by a channel that loses, delays, reorders and
//! duplicates messages: every byte arrives once, in order, and both ends close.

use nox_stream::{Endpoint, EndpointConfig, StreamId, StreamMessage};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

struct Channel {
    in_flight: Vec<(u64, Vec<u8>, bool)>, // (arrival, encoded message, to b?)
    rng: ChaCha20Rng,
    loss: f64,
}

impl Channel {
    fn send(&mut self, now: u64, to_b: bool, message: &StreamMessage) {
        let draw = |rng: &mut ChaCha20Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if draw(&mut self.rng) < self.loss {
            return;
        }
        let copies = if draw(&mut self.rng) < 0.05 { 2 } else { 1 };
        for _ in 0..copies {
            let delay = 5 + self.rng.next_u64() % 200;
            self.in_flight.push((now + delay, message.encode(), to_b));
        }
    }
}

fn run(seed: u64, loss: f64, up: usize, down: usize, chunk: usize) {
    // A smaller first window than the protocol's is allowed: it only slows the start.
    //
    // The peer is never gone here, so the give-up threshold is raised: a retransmission
    // succeeds only if it and its acknowledgement both arrive (0.67² ≈ 0.45 at a third lost each
    // way), and the default 5 backoffs give up after 6 failures in a row — 2 % per stalled
    // segment, a reset that a run of 24 cases met (seed 3577961228770382709, below). With 40 the
    // chance is 0.55^41 ≈ 2·10⁻¹¹ per stall. The default's give-up is tested in endpoint.rs.
    let config = EndpointConfig {
        recv_capacity: 64 << 10,
        initial_peer_window: 16 << 10,
        max_backoffs: 40,
        ..Default::default()
    };
    let (mut a, mut b) = (Endpoint::new(config), Endpoint::new(config));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut upload = vec![0u8; up];
    let mut download = vec![0u8; down];
    rng.fill_bytes(&mut upload);
    rng.fill_bytes(&mut download);
    let mut channel = Channel { in_flight: Vec::new(), rng, loss };
    let (mut wrote_a, mut wrote_b) = (0, 0);
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    let mut now = 0u64;
    let id = StreamId([9; 16]);
    while !(a.closed() && b.closed()) {
        assert!(now < 10_000_000, "no progress by {now} ms: {a:?} {b:?}");
        assert!(a.reset_code().is_none() && b.reset_code().is_none(), "reset: {a:?} {b:?}");
        wrote_a += a.write(&upload[wrote_a..]);
        if wrote_a == up {
            a.finish();
        }
        wrote_b += b.write(&download[wrote_b..]);
        if wrote_b == down {
            b.finish();
        }
        got_b.extend(b.read(usize::MAX, now));
        got_a.extend(a.read(usize::MAX, now));
        a.on_timer(now);
        b.on_timer(now);
        for (end, to_b) in [(&mut a, true), (&mut b, false)] {
            while let Some(out) = end.poll(chunk, now) {
                let mut m = StreamMessage::new(id);
                out.apply(&mut m);
                channel.send(now, to_b, &m);
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = channel.in_flight.drain(..).partition(|(at, ..)| *at <= now);
        channel.in_flight = later;
        for (_, bytes, to_b) in due {
            let m = StreamMessage::decode(&bytes).unwrap();
            let end = if to_b { &mut b } else { &mut a };
            end.on_message(&m, now).unwrap();
        }
        now += 5;
    }
    assert_eq!(got_b, upload);
    assert_eq!(got_a, download);
}

#[test]
fn a_megabyte_each_way_through_ten_percent_loss() {
    run(1, 0.10, 1 << 20, 1 << 20, 30_000);
}

#[test]
fn six_lost_retransmissions_in_a_row_at_31_percent_loss() {
    // The case a CI run met (2026-11-26): the last segment and its acknowledgement were lost six
    // times in a row; with the default threshold the sender reset the stream as idle.
    run(3577961228770382709, 0.310535233225697, 43361, 197717, 24662);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_loss_below_a_third_delivers_everything(
        seed in any::<u64>(), loss in 0.0f64..0.33, up in 0usize..200_000, down in 0usize..200_000, chunk in 1usize..40_000
    ) {
        run(seed, loss, up, down, chunk.max(500));
    }
}
