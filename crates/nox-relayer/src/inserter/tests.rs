//! The inserter's pure decisions: the queue mirror, when a batch is due, the retry backoff.

use super::*;
use alloy_sol_types::SolEvent;
use nox_pool_events::{BatchInserted, Deposited, Transacted};

fn leaf(i: u64) -> Fr {
    Fr::from(1_000 + i)
}

#[test]
fn nothing_queued_is_idle() {
    assert_eq!(decide(10_000, None, 2_000, 0, 0, 0), Decision::Idle);
    let empty = QueueAge { queued: 0, oldest_ms: 0, full_ms: None };
    assert_eq!(decide(10_000, Some(empty), 2_000, 0, 0, 0), Decision::Idle);
}

#[test]
fn a_partial_batch_waits_for_max_wait_then_jitter() {
    let age = QueueAge { queued: 2, oldest_ms: 1_000, full_ms: None };
    assert_eq!(decide(2_999, Some(age), 2_000, 0, 0, 0), Decision::WaitUntil(3_000));
    assert_eq!(decide(3_000, Some(age), 2_000, 0, 0, 0), Decision::Insert { count: 2 });
    assert_eq!(decide(3_000, Some(age), 2_000, 500, 0, 0), Decision::WaitUntil(3_500));
    assert_eq!(decide(3_500, Some(age), 2_000, 500, 0, 0), Decision::Insert { count: 2 });
}

#[test]
fn a_full_batch_goes_at_once_and_takes_sixteen() {
    let age = QueueAge { queued: BATCH_SIZE, oldest_ms: 1_000, full_ms: Some(1_200) };
    // Long before max_wait: the batch's last commitment made it full at 1,200.
    assert_eq!(decide(1_200, Some(age), 600_000, 0, 0, 0), Decision::Insert { count: BATCH_SIZE });
    assert_eq!(decide(1_200, Some(age), 600_000, 100, 0, 0), Decision::WaitUntil(1_300));
}

#[test]
fn inserters_that_find_a_batch_already_due_still_stagger_by_their_jitter() {
    // Two inserters start (their proving keys loaded) at 10,000 with a batch that was due at
    // 3,000. Counted from the deposit, both jitters have passed: both would prove and send the
    // same batch, and the later one's transaction reverts (its gas lost). Counted from when
    // each first saw the batch, the one with the smaller jitter goes first and the other finds
    // the pool moved when its proof is done.
    let age = QueueAge { queued: 2, oldest_ms: 1_000, full_ms: None };
    assert_eq!(decide(10_000, Some(age), 2_000, 200, 10_000, 0), Decision::WaitUntil(10_200));
    assert_eq!(decide(10_000, Some(age), 2_000, 800, 10_000, 0), Decision::WaitUntil(10_800));
    assert_eq!(decide(10_200, Some(age), 2_000, 200, 10_000, 0), Decision::Insert { count: 2 });
    // An inserter that saw the batch before it was due waits as before (from the deposit).
    assert_eq!(decide(3_100, Some(age), 2_000, 200, 1_500, 0), Decision::WaitUntil(3_200));
}

#[test]
fn a_back_off_delays_even_a_due_batch() {
    let age = QueueAge { queued: BATCH_SIZE, oldest_ms: 0, full_ms: Some(0) };
    assert_eq!(decide(5_000, Some(age), 0, 0, 0, 9_000), Decision::WaitUntil(9_000));
    assert_eq!(decide(9_000, Some(age), 0, 0, 0, 9_000), Decision::Insert { count: BATCH_SIZE });
}

#[test]
fn failures_back_off_doubling_to_a_cap_and_a_success_clears_it() {
    let mut r = Retry::default();
    let waits: Vec<u64> = (0..12)
        .map(|_| {
            r.on(Attempt::Failed, 100, 1_000, 60_000);
            r.not_before_ms() - 100
        })
        .collect();
    assert_eq!(&waits[..7], &[1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
    assert!(waits[7..].iter().all(|w| *w == 60_000), "capped, never abandoned: {waits:?}");
    r.on(Attempt::LostRace, 200, 1_000, 60_000);
    assert_eq!((r.failures(), r.not_before_ms()), (0, 0), "a lost race re-plans at once");
    // Very many failures: no overflow.
    for _ in 0..100 {
        r.on(Attempt::Failed, u64::MAX - 5, 1_000, u64::MAX);
    }
    assert_eq!(r.not_before_ms(), u64::MAX);
}

#[test]
fn the_mirror_plans_what_the_pool_would_insert() {
    let mut m = QueueMirror::new();
    for i in 0..3 {
        m.apply(&QueueEvent::Queued { index: i, commitment: leaf(i) }, 100 + i).unwrap();
    }
    assert_eq!(m.age(), Some(QueueAge { queued: 3, oldest_ms: 100, full_ms: None }));
    let plan = m.plan().unwrap().unwrap();
    assert_eq!(plan.count, 3);
    assert_eq!(plan.public.start_index, 0);
    assert_eq!(&plan.public.leaves[..3], &[leaf(0), leaf(1), leaf(2)]);
    assert!(plan.public.leaves[3..].iter().all(|l| *l == Fr::from(0u64)));
    assert!(nox_zk::insert::is_satisfied(&plan.public, &plan.witness).unwrap());
    // The pool's BatchInserted for it moves the mirror exactly as the plan said.
    m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 3, new_root: plan.public.new_root }, 0)
        .unwrap();
    assert_eq!(
        m.state(),
        PoolState { root: plan.public.new_root, next_leaf: BATCH_SIZE as u64, next_queue: 3, first_uninserted: 3 }
    );
    assert_eq!(m.age(), None);
    assert!(m.plan().unwrap().is_none());
    // A second batch continues at the next subtree and queue index 3, in order of queueing;
    // it ends where the pool keeps its next queue checkpoint (queue index BATCH_SIZE), so it
    // holds BATCH_SIZE − 3 leaves and is full once index BATCH_SIZE − 1 is queued.
    let b = BATCH_SIZE as u64;
    for i in 3..2 * b + 1 {
        m.apply(&QueueEvent::Queued { index: i, commitment: leaf(i) }, 1_000 + i).unwrap();
    }
    let age = m.age().unwrap();
    assert_eq!((age.queued as u64, age.oldest_ms, age.full_ms), (b - 3, 1_003, Some(1_000 + b - 1)));
    let plan = m.plan().unwrap().unwrap();
    assert_eq!((plan.count as u64, plan.public.start_index), (b - 3, b));
    assert_eq!(plan.public.leaves[0], leaf(3));
    assert!(nox_zk::insert::is_satisfied(&plan.public, &plan.witness).unwrap());
    m.apply(&QueueEvent::Inserted { start_leaf: b, first_queue: 3, count: b - 3, new_root: plan.public.new_root }, 0)
        .unwrap();
    // Then whole batches, aligned on the queue index again.
    let plan = m.plan().unwrap().unwrap();
    assert_eq!((plan.count as u64, plan.public.leaves[0]), (b, leaf(b)));
    assert_eq!(m.age().unwrap().full_ms, Some(1_000 + 2 * b - 1));
}

#[test]
fn a_batch_ends_at_the_next_queue_checkpoint_or_the_queue_end() {
    let b = BATCH_SIZE as u64;
    assert_eq!(batch_len(0, 3), 3);
    assert_eq!(batch_len(0, b + 5), b);
    assert_eq!(batch_len(3, b + 5), b - 3);
    assert_eq!(batch_len(3, 2), 2);
    assert_eq!(batch_len(b, 2 * b), b);
    assert_eq!(batch_len(2 * b - 1, 9), 1);
}

#[test]
fn the_mirror_refuses_a_stream_that_does_not_add_up() {
    let mut m = QueueMirror::new();
    m.apply(&QueueEvent::Queued { index: 0, commitment: leaf(0) }, 0).unwrap();
    assert!(matches!(
        m.apply(&QueueEvent::Queued { index: 2, commitment: leaf(2) }, 0),
        Err(MirrorError::QueueGap { expected: 1, got: 2 })
    ));
    let good = m.plan().unwrap().unwrap().public.new_root;
    // A batch whose root is not that of its leaves (a lying node, a missed event).
    assert!(matches!(
        m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 1, new_root: Fr::from(5u64) }, 0),
        Err(MirrorError::Root)
    ));
    assert!(matches!(
        m.apply(&QueueEvent::Inserted { start_leaf: 16, first_queue: 0, count: 1, new_root: good }, 0),
        Err(MirrorError::BatchPosition { .. })
    ));
    assert!(matches!(
        m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 2, new_root: good }, 0),
        Err(MirrorError::BatchCount { count: 2, queued: 1 })
    ));
    // Refusals changed nothing: the true batch still applies.
    m.apply(&QueueEvent::Inserted { start_leaf: 0, first_queue: 0, count: 1, new_root: good }, 0).unwrap();
    assert_eq!(m.state().next_leaf, BATCH_SIZE as u64);
}

fn word(x: u64) -> U256 {
    U256::from(x)
}

#[test]
fn pool_logs_decode_to_queue_events() {
    use alloy_primitives::{Address, Bytes};
    let d = Deposited {
        queueIndex: word(7),
        commitment: word(11),
        asset: Address::ZERO,
        amount: word(1),
        memo: Bytes::from(vec![1, 2, 3]),
    };
    assert_eq!(
        decode_log(&d.encode_log_data()).unwrap(),
        vec![QueueEvent::Queued { index: 7, commitment: Fr::from(11u64) }]
    );
    let t = Transacted {
        firstQueueIndex: word(8),
        nullifiers: [word(1), word(2)],
        commitments: [word(21), word(22)],
        notes: [Bytes::new(), Bytes::new()],
        asset: Address::ZERO,
        publicIn: word(0),
        publicOut: word(0),
        fee: word(3),
        recipient: Address::ZERO,
        relayer: Address::ZERO,
        actionHash: Default::default(),
    };
    assert_eq!(
        decode_log(&t.encode_log_data()).unwrap(),
        vec![
            QueueEvent::Queued { index: 8, commitment: Fr::from(21u64) },
            QueueEvent::Queued { index: 9, commitment: Fr::from(22u64) }
        ]
    );
    let b = BatchInserted { startLeafIndex: word(16), firstQueueIndex: word(3), count: word(2), newRoot: word(9) };
    assert_eq!(
        decode_log(&b.encode_log_data()).unwrap(),
        vec![QueueEvent::Inserted { start_leaf: 16, first_queue: 3, count: 2, new_root: Fr::from(9u64) }]
    );
    // A commitment ≥ r is refused, not reduced.
    let bad = Deposited { commitment: U256::MAX, ..d };
    assert!(matches!(decode_log(&bad.encode_log_data()), Err(MirrorError::NotAScalar)));
    // Other events are not the inserter's.
    assert!(decode_log(&LogData::new_unchecked(vec![Default::default()], Bytes::new())).unwrap().is_empty());
}
