//! The reassembler: reordering, duplicates, inconsistent headers, expiry and
//! every cap, each with the behaviour specified in the crate README.

use nox_fec::{
    Accepted, Fragment, FragmentError, HEADER_LEN, Layout, LimitsError, MessageId, PENDING_MESSAGE_OVERHEAD,
    Reassembler, ReassemblyError, ReassemblyLimits, encode,
};

const ID: MessageId = MessageId::from_bytes([9; 16]);
const TTL: u64 = 1_000;

fn limits() -> ReassemblyLimits {
    ReassemblyLimits {
        max_message_len: 10_000,
        max_buffered_bytes: 100_000,
        max_pending_messages: 4,
        pending_ttl_ms: TTL,
        max_remembered_completed: 8,
        completed_ttl_ms: 5_000,
    }
}

fn message(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7).wrapping_add(salt)).collect()
}

/// 4 data + 2 parity fragments of a 200-byte message (50-byte shards).
fn fragments_of(id: MessageId, salt: u8) -> (Vec<u8>, Vec<Vec<u8>>) {
    let message = message(200, salt);
    let layout = Layout::new(200, 4, 2).unwrap();
    let fragments = encode(&message, id, &layout).unwrap();
    (message, fragments)
}

fn complete(outcome: Result<Accepted, ReassemblyError>) -> Vec<u8> {
    match outcome {
        Ok(Accepted::Complete { message, .. }) => message,
        other => panic!("expected a complete message, got {other:?}"),
    }
}

#[test]
fn completes_on_the_dth_distinct_shard_in_any_order() {
    let (message, fragments) = fragments_of(ID, 1);
    for order in [[5, 0, 3, 4], [0, 1, 2, 3], [4, 5, 1, 2], [3, 2, 1, 0]] {
        let mut r = Reassembler::new(limits()).unwrap();
        for (step, &i) in order[..3].iter().enumerate() {
            assert_eq!(
                r.accept(&fragments[i], 0),
                Ok(Accepted::Pending { message_id: ID, received: step + 1, needed: 4 })
            );
        }
        assert_eq!(complete(r.accept(&fragments[order[3]], 0)), message);
        assert_eq!(r.buffered_bytes(), 0);
        assert_eq!(r.pending_messages(), 0);
    }
}

#[test]
fn single_fragment_message_completes_at_once_and_stores_nothing() {
    let layout = Layout::new(30, 1, 0).unwrap();
    let fragment = encode(&message(30, 2), ID, &layout).unwrap().remove(0);
    let mut r = Reassembler::new(limits()).unwrap();
    assert_eq!(complete(r.accept(&fragment, 0)), message(30, 2));
    assert_eq!(r.buffered_bytes(), 0);
    assert_eq!(r.accept(&fragment, 1), Ok(Accepted::AlreadyComplete { message_id: ID }));
}

#[test]
fn identical_duplicates_are_ignored() {
    let (message, fragments) = fragments_of(ID, 3);
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[0], 0).unwrap();
    let before = r.buffered_bytes();
    for _ in 0..5 {
        assert_eq!(r.accept(&fragments[0], 0), Ok(Accepted::Duplicate { message_id: ID }));
    }
    assert_eq!(r.buffered_bytes(), before);
    let _ = r.accept(&fragments[1], 0).unwrap();
    let _ = r.accept(&fragments[5], 0).unwrap();
    assert_eq!(r.accept(&fragments[1], 0), Ok(Accepted::Duplicate { message_id: ID }));
    assert_eq!(complete(r.accept(&fragments[2], 0)), message);
}

#[test]
fn conflicting_duplicate_is_refused_and_first_copy_kept() {
    let (message, fragments) = fragments_of(ID, 4);
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[2], 0).unwrap();
    let mut forged = fragments[2].clone();
    forged[HEADER_LEN + 3] ^= 0xff;
    assert_eq!(r.accept(&forged, 0), Err(ReassemblyError::ConflictingDuplicate { message_id: ID, index: 2 }));
    let _ = r.accept(&fragments[0], 0).unwrap();
    let _ = r.accept(&fragments[4], 0).unwrap();
    assert_eq!(complete(r.accept(&fragments[5], 0)), message);
}

#[test]
fn inconsistent_headers_are_refused_without_harm() {
    let (message, fragments) = fragments_of(ID, 5);
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[0], 0).unwrap();
    let held = r.buffered_bytes();

    // Same id, other parity count: 4 + 3 shards of the same length.
    let other_parity = encode(&message, ID, &Layout::new(200, 4, 3).unwrap()).unwrap();
    assert_eq!(
        r.accept(&other_parity[1], 0),
        Err(ReassemblyError::Inconsistent { message_id: ID, field: "parity shard count" })
    );
    // Same id, other data count.
    let other_data = encode(&message, ID, &Layout::new(200, 5, 1).unwrap()).unwrap();
    assert_eq!(
        r.accept(&other_data[1], 0),
        Err(ReassemblyError::Inconsistent { message_id: ID, field: "data shard count" })
    );
    // Same id and counts, other length (199 bytes still gives 50-byte shards).
    let other_len = encode(&message[..199], ID, &Layout::new(199, 4, 2).unwrap()).unwrap();
    assert_eq!(
        r.accept(&other_len[1], 0),
        Err(ReassemblyError::Inconsistent { message_id: ID, field: "message length" })
    );
    assert_eq!(r.buffered_bytes(), held);
    for fragment in &fragments[1..3] {
        let _ = r.accept(fragment, 0).unwrap();
    }
    assert_eq!(complete(r.accept(&fragments[3], 0)), message);
}

#[test]
fn malformed_bytes_are_refused() {
    let (_, fragments) = fragments_of(ID, 6);
    let mut r = Reassembler::new(limits()).unwrap();
    let mut out_of_range = fragments[0].clone();
    out_of_range[17] = 6;
    assert_eq!(r.accept(&out_of_range, 0), Err(FragmentError::IndexOutOfRange { index: 6, total: 6 }.into()));
    assert_eq!(
        r.accept(&fragments[0][..HEADER_LEN + 49], 0),
        Err(FragmentError::ShardLengthMismatch { expected: 50, actual: 49 }.into())
    );
    let mut oversized = fragments[0].clone();
    oversized.extend_from_slice(&[0; 10]);
    assert_eq!(r.accept(&oversized, 0), Err(FragmentError::ShardLengthMismatch { expected: 50, actual: 60 }.into()));
    assert_eq!(r.accept(&[], 0), Err(FragmentError::Truncated { len: 0 }.into()));
    assert_eq!(r.pending_messages(), 0);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn late_fragments_after_completion_are_dropped() {
    let (_, fragments) = fragments_of(ID, 7);
    let mut r = Reassembler::new(limits()).unwrap();
    for fragment in &fragments[..3] {
        let _ = r.accept(fragment, 0).unwrap();
    }
    let _ = complete(r.accept(&fragments[3], 0));
    for fragment in &fragments {
        assert_eq!(r.accept(fragment, 10), Ok(Accepted::AlreadyComplete { message_id: ID }));
    }
    assert_eq!(r.pending_messages(), 0);
    assert_eq!(r.remembered_completed(), 1);
    // After the completed TTL the id is forgotten: a late fragment starts anew.
    assert_eq!(r.next_deadline(), Some(5_000));
    assert!(matches!(r.accept(&fragments[4], 5_000), Ok(Accepted::Pending { received: 1, .. })));
    assert_eq!(r.remembered_completed(), 0);
}

#[test]
fn incomplete_messages_expire_after_the_ttl() {
    let (message, fragments) = fragments_of(ID, 8);
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[0], 100).unwrap();
    let _ = r.accept(&fragments[1], 600).unwrap();
    assert_eq!(r.next_deadline(), Some(100 + TTL));
    // The deadline runs from the first fragment; later ones do not extend it.
    assert_eq!(r.expire(100 + TTL - 1), 0);
    assert_eq!(r.pending_messages(), 1);
    assert_eq!(r.expire(100 + TTL), 1);
    assert_eq!((r.pending_messages(), r.buffered_bytes(), r.next_deadline()), (0, 0, None));
    // Arriving after the deadline, the rest cannot complete the old state.
    assert!(matches!(r.accept(&fragments[2], 2_000), Ok(Accepted::Pending { received: 1, .. })));
    let _ = r.accept(&fragments[3], 2_000).unwrap();
    let _ = r.accept(&fragments[4], 2_000).unwrap();
    assert_eq!(complete(r.accept(&fragments[5], 2_000)), message);
}

#[test]
fn accept_expires_stale_state_first() {
    let mut r = Reassembler::new(limits()).unwrap();
    for salt in 0..4u8 {
        let (_, fragments) = fragments_of(MessageId::from_bytes([salt; 16]), salt);
        let _ = r.accept(&fragments[0], 0).unwrap();
    }
    let (_, fragments) = fragments_of(MessageId::from_bytes([99; 16]), 99);
    assert_eq!(r.accept(&fragments[0], TTL - 1), Err(ReassemblyError::TooManyMessages { max: 4 }));
    assert!(r.accept(&fragments[0], TTL).is_ok());
    assert_eq!(r.pending_messages(), 1);
}

#[test]
fn oversized_announced_message_is_refused() {
    let layout = Layout::new(10_001, 2, 0).unwrap();
    let fragments = encode(&message(10_001, 0), ID, &layout).unwrap();
    let mut r = Reassembler::new(limits()).unwrap();
    assert_eq!(r.accept(&fragments[0], 0), Err(ReassemblyError::MessageTooLarge { message_len: 10_001, max: 10_000 }));
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn memory_cap_refuses_before_storing_and_keeps_progress() {
    // Accounted per message: overhead, d - 1 = 3 slots, the first 50-byte shard.
    let per_message = PENDING_MESSAGE_OVERHEAD + 3 * std::mem::size_of::<(u8, Vec<u8>)>() + 50;
    let cap = 2 * per_message + 100;
    let mut r = Reassembler::new(ReassemblyLimits { max_buffered_bytes: cap, ..limits() }).unwrap();
    let (message_a, a) = fragments_of(MessageId::from_bytes([1; 16]), 1);
    let (message_b, b) = fragments_of(MessageId::from_bytes([2; 16]), 2);
    let (_, c) = fragments_of(MessageId::from_bytes([3; 16]), 3);
    let _ = r.accept(&a[0], 0).unwrap();
    let _ = r.accept(&b[0], 0).unwrap();
    assert_eq!(r.buffered_bytes(), 2 * per_message);
    assert_eq!(
        r.accept(&c[0], 0),
        Err(ReassemblyError::MemoryFull { needed: per_message, used: 2 * per_message, max: cap })
    );
    let _ = r.accept(&a[1], 0).unwrap();
    let _ = r.accept(&a[2], 0).unwrap();
    assert_eq!(r.buffered_bytes(), cap);
    assert_eq!(r.accept(&b[1], 0), Err(ReassemblyError::MemoryFull { needed: 50, used: cap, max: cap }));
    // The d-th shard is decoded from, never stored: a completes at the cap.
    assert_eq!(complete(r.accept(&a[4], 0)), message_a);
    assert_eq!(r.buffered_bytes(), per_message);
    // The refused shard of b did not disturb b; it can be sent again.
    let _ = r.accept(&b[1], 0).unwrap();
    let _ = r.accept(&b[2], 0).unwrap();
    assert_eq!(complete(r.accept(&b[5], 0)), message_b);
    assert_eq!(r.buffered_bytes(), 0);
    assert!(r.accept(&c[0], 0).is_ok());
}

#[test]
fn completed_ids_are_bounded() {
    let mut r = Reassembler::new(limits()).unwrap();
    let layout = Layout::new(4, 1, 0).unwrap();
    for n in 0..20u8 {
        let fragment = encode(&[n; 4], MessageId::from_bytes([n; 16]), &layout).unwrap();
        let _ = complete(r.accept(&fragment[0], u64::from(n)));
        assert!(r.remembered_completed() <= 8);
    }
    // The oldest ids were forgotten first.
    let oldest = encode(&[0; 4], MessageId::from_bytes([0; 16]), &layout).unwrap();
    assert!(matches!(r.accept(&oldest[0], 20), Ok(Accepted::Complete { .. })));
    let newest = encode(&[19; 4], MessageId::from_bytes([19; 16]), &layout).unwrap();
    assert!(matches!(r.accept(&newest[0], 20), Ok(Accepted::AlreadyComplete { .. })));
}

#[test]
fn cancel_releases_memory() {
    let (_, fragments) = fragments_of(ID, 9);
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[0], 0).unwrap();
    assert!(r.cancel(&ID));
    assert!(!r.cancel(&ID));
    assert_eq!((r.buffered_bytes(), r.pending_messages(), r.next_deadline()), (0, 0, None));
}

#[test]
fn limits_are_validated() {
    let zero_ttl = ReassemblyLimits { pending_ttl_ms: 0, ..limits() };
    assert_eq!(Reassembler::new(zero_ttl).unwrap_err(), LimitsError::Zero("pending_ttl_ms"));
    let zero_memory = ReassemblyLimits { max_buffered_bytes: 0, ..limits() };
    assert_eq!(Reassembler::new(zero_memory).unwrap_err(), LimitsError::Zero("max_buffered_bytes"));
}

#[test]
fn parsed_fragments_are_accepted_too() {
    let (message, fragments) = fragments_of(ID, 10);
    let mut r = Reassembler::new(limits()).unwrap();
    let mut last = None;
    for fragment in &fragments[2..] {
        last = Some(r.accept_fragment(&Fragment::parse(fragment).unwrap(), 0));
    }
    assert_eq!(complete(last.unwrap()), message);
}

#[test]
fn debug_output_shows_counts_not_bytes() {
    let layout = Layout::new(200, 4, 2).unwrap();
    let secret = vec![0x5a; 200];
    let fragments = encode(&secret, ID, &layout).unwrap();
    let mut r = Reassembler::new(limits()).unwrap();
    let _ = r.accept(&fragments[0], 0).unwrap();
    let shown = format!("{r:?}");
    assert!(shown.contains("pending_messages: 1"), "{shown}");
    assert!(!shown.contains("90, 90"), "shard bytes leaked: {shown}");
}
