//! Property tests: round trips over random sizes, counts, ratios and loss
//! patterns; the caps under a flood of bogus fragments.

use nox_fec::{
    Accepted, CodecError, HEADER_LEN, Layout, MessageId, Parity, ParityRatio, Reassembler, ReassemblyLimits, decode,
    encode, fragment_message,
};
use proptest::prelude::*;

fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        // xorshift64: enough to vary the order between cases.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn round_trip_through_the_reassembler(
        message in prop::collection::vec(any::<u8>(), 0..4000),
        max_fragment_len in 26usize..700,
        ratio_per_mille in 0u32..=1000,
        id in any::<[u8; 16]>(),
        loss_seed in any::<u64>(),
        order_seed in any::<u64>(),
    ) {
        let ratio = ParityRatio::per_mille(ratio_per_mille).unwrap();
        let planned = fragment_message(&message, MessageId::from_bytes(id), max_fragment_len, Parity::Ratio(ratio));
        let Ok((layout, fragments)) = planned else {
            // Only messages needing more than 255 shards may be refused.
            let capacity = (max_fragment_len - HEADER_LEN) & !1;
            let d = message.len().div_ceil(capacity).max(1);
            prop_assert!(d + ratio.parity_for(d) > 255);
            return Ok(());
        };
        prop_assert_eq!(layout.parity_shards(), ratio.parity_for(layout.data_shards()));
        // Lose a random subset of at most p shards, deliver the rest shuffled.
        let mut order: Vec<usize> = (0..fragments.len()).collect();
        shuffle(&mut order, loss_seed);
        let lost = (loss_seed as usize) % (layout.parity_shards() + 1);
        let mut delivered = order[lost..].to_vec();
        shuffle(&mut delivered, order_seed);

        let limits = ReassemblyLimits { max_message_len: 4000, ..ReassemblyLimits::default() };
        let mut reassembler = Reassembler::new(limits).unwrap();
        let mut completed = None;
        for (step, &i) in delivered.iter().enumerate() {
            match reassembler.accept(&fragments[i], step as u64) {
                Ok(Accepted::Complete { message: rebuilt, .. }) => {
                    prop_assert_eq!(step + 1, layout.data_shards(), "completed before or after d shards");
                    completed = Some(rebuilt);
                }
                Ok(Accepted::Pending { .. }) => prop_assert!(completed.is_none()),
                Ok(Accepted::AlreadyComplete { .. }) => prop_assert!(completed.is_some()),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
        prop_assert_eq!(completed.as_ref(), Some(&message));
        prop_assert_eq!(reassembler.buffered_bytes(), 0);

        // p + 1 losses fail cleanly.
        let survivors = &order[layout.parity_shards() + 1..];
        let shards = survivors.iter().map(|&i| (i, &fragments[i][HEADER_LEN..]));
        prop_assert_eq!(
            decode(&layout, shards),
            Err(CodecError::NotEnoughShards {
                received: layout.data_shards() - 1,
                needed: layout.data_shards(),
            })
        );
    }
}

/// One bogus input: arbitrary bytes, or a well-formed header (from a small
/// pool of ids, so fragments collide) with arbitrary counts and shard bytes.
#[derive(Debug, Clone)]
enum Bogus {
    Bytes(Vec<u8>),
    Shaped { id: u8, index: u8, data: u8, parity: u8, len: u16, fill: u8 },
}

fn bogus() -> impl Strategy<Value = Bogus> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..120).prop_map(Bogus::Bytes),
        4 => (0u8..4, any::<u8>(), 2u8..6, 0u8..3, prop_oneof![Just(900u16), 0u16..2200], 0u8..2).prop_map(
            |(id, index, data, parity, len, fill)| Bogus::Shaped { id, index, data, parity, len, fill }
        ),
    ]
}

fn render(bogus: &Bogus) -> Vec<u8> {
    match bogus {
        Bogus::Bytes(bytes) => bytes.clone(),
        Bogus::Shaped { id, index, data, parity, len, fill } => {
            let Ok(layout) = Layout::new(usize::from(*len), usize::from(*data), usize::from(*parity)) else {
                return vec![1; HEADER_LEN];
            };
            let mut bytes = vec![1u8];
            bytes.extend_from_slice(&[*id; 16]);
            bytes.extend_from_slice(&[*index % (*data + *parity), *data, *parity]);
            bytes.extend_from_slice(&u32::from(*len).to_be_bytes());
            bytes.resize(HEADER_LEN + layout.shard_len(), *fill);
            bytes
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn caps_hold_under_a_flood(
        flood in prop::collection::vec((bogus(), 0u64..300), 1..300),
        legit_at in prop::collection::vec(0usize..300, 4),
    ) {
        let limits = ReassemblyLimits {
            max_message_len: 2000,
            max_buffered_bytes: 2000,
            max_pending_messages: 3,
            pending_ttl_ms: 1000,
            max_remembered_completed: 4,
            completed_ttl_ms: 2000,
        };
        // A legitimate message interleaved with the flood: it may be refused
        // for lack of room, but must never complete with other bytes.
        let legit_id = MessageId::from_bytes([0xee; 16]);
        let legit: Vec<u8> = (0..600u32).map(|i| (i * 13) as u8).collect();
        let legit_fragments = encode(&legit, legit_id, &Layout::new(600, 4, 2).unwrap()).unwrap();

        let mut reassembler = Reassembler::new(limits).unwrap();
        let mut now = 0u64;
        for (step, (item, advance)) in flood.iter().enumerate() {
            now += advance;
            let outcome = reassembler.accept(&render(item), now);
            if let Ok(Accepted::Complete { message, .. }) = &outcome {
                prop_assert!(message.len() <= limits.max_message_len);
            }
            for (shard, _) in legit_at.iter().enumerate().filter(|(_, at)| **at == step) {
                if let Ok(Accepted::Complete { message_id, message }) =
                    reassembler.accept(&legit_fragments[shard], now)
                {
                    prop_assert_eq!(message_id, legit_id);
                    prop_assert_eq!(&message, &legit);
                }
            }
            prop_assert!(reassembler.buffered_bytes() <= limits.max_buffered_bytes);
            prop_assert!(reassembler.pending_messages() <= limits.max_pending_messages);
            prop_assert!(reassembler.remembered_completed() <= limits.max_remembered_completed);
        }
        reassembler.expire(now + limits.completed_ttl_ms);
        prop_assert_eq!(reassembler.buffered_bytes(), 0);
        prop_assert_eq!(reassembler.pending_messages(), 0);
        prop_assert_eq!(reassembler.remembered_completed(), 0);
    }
}
