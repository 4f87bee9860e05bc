//! Encoding and decoding: every loss pattern up to p recovers the exact bytes,
//! p + 1 losses fail, and the layout rules hold.

use nox_fec::{
    CodecError, Fragment, HEADER_LEN, Layout, LayoutError, MessageId, Parity, ParityRatio, decode, decode_fragments,
    encode, fragment_message, max_message_len_for, shard_capacity,
};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

const ID: MessageId = MessageId::from_bytes([0xab; 16]);

fn message_of(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut message = vec![0u8; len];
    rng.fill_bytes(&mut message);
    message
}

fn shards(fragments: &[Vec<u8>]) -> Vec<(usize, &[u8])> {
    fragments.iter().enumerate().map(|(i, f)| (i, &f[HEADER_LEN..])).collect()
}

/// Decodes from the shards whose bit is set in `kept`.
fn decode_kept(layout: &Layout, all: &[(usize, &[u8])], kept: u64) -> Result<Vec<u8>, CodecError> {
    decode(layout, all.iter().copied().filter(|(i, _)| kept & (1 << i) != 0))
}

#[test]
fn exhaustive_d4_p3_every_subset() {
    let message = message_of(101, 1);
    let layout = Layout::new(message.len(), 4, 3).unwrap();
    let fragments = encode(&message, ID, &layout).unwrap();
    let all = shards(&fragments);
    let mut recovered = 0;
    for kept in 0u64..(1 << 7) {
        let count = kept.count_ones() as usize;
        match decode_kept(&layout, &all, kept) {
            Ok(decoded) => {
                assert!(count >= 4, "decoded from only {count} shards");
                assert_eq!(decoded, message, "wrong bytes for subset {kept:07b}");
                recovered += 1;
            }
            Err(err) => {
                assert!(count < 4, "subset {kept:07b} with {count} shards failed: {err}");
                assert_eq!(err, CodecError::NotEnoughShards { received: count, needed: 4 });
            }
        }
    }
    // C(7,4) + C(7,5) + C(7,6) + C(7,7) subsets keep at least d shards.
    assert_eq!(recovered, 35 + 21 + 7 + 1);
}

fn random_losses(d: usize, p: usize, len: usize, patterns: usize, seed: u64) {
    let message = message_of(len, seed);
    let layout = Layout::new(len, d, p).unwrap();
    let fragments = encode(&message, ID, &layout).unwrap();
    let all = shards(&fragments);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for _ in 0..patterns {
        // A random subset of exactly `lost` indices, lost in 0..=p+1.
        let lost = (rng.next_u32() as usize) % (p + 2);
        let mut order: Vec<usize> = (0..d + p).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.next_u32() as usize % (i + 1));
        }
        let survivors: Vec<(usize, &[u8])> = order[lost..].iter().map(|&i| all[i]).collect();
        let result = decode(&layout, survivors.iter().copied());
        if lost <= p {
            assert_eq!(result.unwrap(), message, "d={d} p={p} lost {:?}", &order[..lost]);
        } else {
            assert_eq!(result, Err(CodecError::NotEnoughShards { received: d - 1, needed: d }));
        }
    }
}

#[test]
fn random_loss_patterns_d11_p4() {
    random_losses(11, 4, 11 * 40 - 3, 400, 2);
}

#[test]
fn random_loss_patterns_larger_counts() {
    random_losses(32, 16, 32 * 64, 60, 3);
    random_losses(200, 55, 200 * 4 - 1, 12, 4);
}

#[test]
fn every_pattern_of_exactly_p_losses_d11_p4() {
    // All C(15, 4) = 1365 patterns of exactly p losses.
    let message = message_of(11 * 20, 5);
    let layout = Layout::new(message.len(), 11, 4).unwrap();
    let fragments = encode(&message, ID, &layout).unwrap();
    let all = shards(&fragments);
    let mut patterns = 0;
    for kept in 0u64..(1 << 15) {
        if kept.count_ones() == 11 {
            assert_eq!(decode_kept(&layout, &all, kept).unwrap(), message);
            patterns += 1;
        }
    }
    assert_eq!(patterns, 1365);
}

#[test]
fn all_data_shards_decode_without_parity() {
    let message = message_of(1000, 6);
    let layout = Layout::new(message.len(), 5, 2).unwrap();
    let fragments = encode(&message, ID, &layout).unwrap();
    let data_only = &shards(&fragments)[..5];
    assert_eq!(decode(&layout, data_only.iter().copied()).unwrap(), message);
}

#[test]
fn duplicates_and_order_do_not_matter() {
    let message = message_of(333, 7);
    let layout = Layout::new(message.len(), 3, 2).unwrap();
    let fragments = encode(&message, ID, &layout).unwrap();
    let all = shards(&fragments);
    let given = [all[4], all[4], all[1], all[4], all[3]];
    assert_eq!(decode(&layout, given.iter().copied()).unwrap(), message);
    // Duplicates do not count twice toward d.
    let too_few = [all[4], all[4], all[4], all[1]];
    assert_eq!(decode(&layout, too_few.iter().copied()), Err(CodecError::NotEnoughShards { received: 2, needed: 3 }));
}

#[test]
fn decode_rejects_bad_index_and_length() {
    let layout = Layout::new(10, 2, 1).unwrap();
    let shard = [0u8; 6];
    assert_eq!(decode(&layout, [(3, &shard[..])]), Err(CodecError::IndexOutOfRange { index: 3, total: 3 }));
    assert_eq!(
        decode(&layout, [(0, &shard[..5])]),
        Err(CodecError::ShardLengthMismatch { index: 0, expected: 6, actual: 5 })
    );
}

#[test]
fn single_shard_messages() {
    for len in [0usize, 1, 2, 31] {
        let message = message_of(len, 8);
        for parity in [0, 1, 2] {
            let layout = Layout::new(len, 1, parity).unwrap();
            let fragments = encode(&message, ID, &layout).unwrap();
            assert_eq!(fragments.len(), 1 + parity);
            // Any one fragment alone rebuilds the message.
            for fragment in &fragments {
                let parsed = Fragment::parse(fragment).unwrap();
                assert_eq!(decode_fragments(&[parsed]).unwrap(), (ID, message.clone()));
            }
        }
    }
}

#[test]
fn one_data_shard_parity_is_what_the_backend_produces() {
    // The encoder copies the data shard when d = 1; the Reed-Solomon code
    // gives the same bytes, so the format does not depend on the shortcut.
    for len in [2usize, 22, 1000] {
        let message = message_of(len, 9);
        for parity in [1usize, 4, 254] {
            let layout = Layout::new(len, 1, parity).unwrap();
            let fragments = encode(&message, ID, &layout).unwrap();
            let backend = reed_solomon_simd::encode(1, parity, [&message]).unwrap();
            for (fragment, recovery) in fragments[1..].iter().zip(&backend) {
                assert_eq!(&fragment[HEADER_LEN..], &recovery[..]);
            }
        }
    }
}

#[test]
fn decode_fragments_refuses_mixed_messages() {
    let layout = Layout::new(40, 2, 1).unwrap();
    let a = encode(&[1u8; 40], ID, &layout).unwrap();
    let b = encode(&[2u8; 40], MessageId::from_bytes([1; 16]), &layout).unwrap();
    let parsed = [Fragment::parse(&a[0]).unwrap(), Fragment::parse(&b[1]).unwrap()];
    assert_eq!(decode_fragments(&parsed), Err(CodecError::MixedMessages));
}

#[test]
fn encode_refuses_a_message_of_another_length() {
    let layout = Layout::new(10, 1, 0).unwrap();
    assert_eq!(encode(&[0u8; 9], ID, &layout), Err(CodecError::MessageLengthMismatch { expected: 10, actual: 9 }));
}

#[test]
fn fragments_fit_and_share_one_length() {
    for max_fragment_len in [26usize, 64, 65, 1000, 32_400] {
        for len in [0usize, 1, 2, 3, 39, 40, 41, 999, 5000] {
            let message = message_of(len, len as u64);
            let Ok((layout, fragments)) =
                fragment_message(&message, ID, max_fragment_len, Parity::Ratio(ParityRatio::percent(30).unwrap()))
            else {
                // Only too many shards for tiny fragments may fail.
                assert!(len.div_ceil(shard_capacity(max_fragment_len).unwrap()) > 196);
                continue;
            };
            assert!(fragments.iter().all(|f| f.len() == layout.fragment_len()));
            assert!(layout.fragment_len() <= max_fragment_len);
            assert_eq!(layout.shard_len() % 2, 0);
            let all = shards(&fragments);
            assert_eq!(decode(&layout, all.iter().copied()).unwrap(), message);
        }
    }
}

#[test]
fn parity_ratio_is_exact_integer_ceiling() {
    let thirty = ParityRatio::percent(30).unwrap();
    assert_eq!(thirty.parity_for(11), 4); // the paper's d = 11, r = 0.3
    assert_eq!(thirty.parity_for(10), 3); // 10 · 0.3 is exactly 3, not 4
    assert_eq!(thirty.parity_for(1), 1);
    assert_eq!(ParityRatio::per_mille(0).unwrap().parity_for(200), 0);
    assert_eq!(ParityRatio::per_mille(1).unwrap().parity_for(1), 1);
    assert!(ParityRatio::per_mille(100_001).is_err());
}

#[test]
fn layout_rules() {
    assert_eq!(Layout::new(10, 0, 0), Err(LayoutError::NoDataShards));
    assert_eq!(Layout::new(1000, 200, 56), Err(LayoutError::TooManyShards { data: 200, parity: 56 }));
    assert!(Layout::new(2000, 200, 55).is_ok());
    // Odd per-shard lengths round up to even.
    assert_eq!(Layout::new(101, 4, 0).unwrap().shard_len(), 26);
    assert_eq!(Layout::new(0, 1, 0).unwrap().shard_len(), 2);
    // 3 shards of 2 bytes for 4 bytes: the third shard would be all padding.
    assert_eq!(Layout::new(4, 3, 0), Err(LayoutError::PaddingOnlyShard { message_len: 4, data_shards: 3 }));
    assert_eq!(shard_capacity(25), Err(LayoutError::FragmentTooSmall { max_fragment_len: 25, min: 26 }));
    assert_eq!(shard_capacity(65), Ok(40));
    assert_eq!(Layout::for_message(300 * 1024, 32_400, Parity::None).unwrap().data_shards(), 10);
    assert!(matches!(
        Layout::for_message(256 * 40, 64, Parity::None),
        Err(LayoutError::MessageTooLarge { max: 10_200, .. })
    ));
    assert!(matches!(
        Layout::for_message(255 * 40, 64, Parity::Fixed(1)),
        Err(LayoutError::TooManyShards { data: 255, parity: 1 })
    ));
    assert!(matches!(Layout::new(u32::MAX as usize, 1, 0), Err(LayoutError::MessageTooLarge { .. })));
}

#[test]
fn largest_message_for_a_fragment_size() {
    let largest = max_message_len_for(64, 4).unwrap();
    assert_eq!(largest, 251 * 40);
    let fits = Layout::for_message(largest, 64, Parity::Fixed(4)).unwrap();
    assert_eq!(fits.total_shards(), 255);
    assert!(Layout::for_message(largest + 1, 64, Parity::Fixed(4)).is_err());
}

#[test]
fn reused_encoder_matches_fresh_encoding_across_layouts() {
    let mut encoder = nox_fec::Encoder::new();
    for (len, d, p) in [(5000usize, 5usize, 2usize), (101, 4, 3), (30_000, 11, 4), (64, 2, 0), (9000, 3, 5)] {
        let message = message_of(len, len as u64);
        let layout = Layout::new(len, d, p).unwrap();
        assert_eq!(encoder.encode(&message, ID, &layout).unwrap(), encode(&message, ID, &layout).unwrap());
    }
}
