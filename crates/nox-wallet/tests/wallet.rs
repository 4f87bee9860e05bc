//! The wallet core against a simulated pool. Every event is built the way `ShieldedPool` builds
//! it: a deposit's commitment from the amount; a transaction's `Transacted` event from the
//! `Transaction` it executes, after the pool's own checks (root known, nullifiers unseen, the
//! context recomputed from the transaction, the statement satisfied — checked with
//! `transfer::is_satisfied`, no proof is made); leaves inserted by aligned batches of `BATCH_SIZE` (32).
//!
//! The simulator (pool, wallets, request builders) is in `wallet_sim/`.

use ark_bn254::Fr;
use nox_wallet::{
    CorruptReason, Origin, OutputRole, PaymentAddress, PoolEvent, PoolView, PreparedTransaction, Seed, TxRequest,
    WalletError,
    file::{self, KdfParams},
    memo,
};
use nox_zk::{
    Tree, field, note,
    transfer::{self, TransferContext},
};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

mod wallet_sim;
use wallet_sim::*;

#[test]
fn two_wallets_deposit_split_join_transfer_and_spend_with_exact_balances() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let mut b = Wallet::new(&mut r);
    let (a_addr, b_addr) = (a.address(), b.address());

    // A deposits 1000. Queued: pending, not spendable; B sees nothing.
    pool.deposit(&a_addr, eth(), 1000, &mut r);
    a.sync(&pool);
    b.sync(&pool);
    assert_eq!(a.eth(), (0, 1000));
    assert!(matches!(
        a.view.prepare_transaction(&a.seed, &paid(vec![(b_addr, 1)], 1), &mut r),
        Err(WalletError::InsufficientFunds { have: 0, need: 2, pending: 1000 })
    ));
    pool.insert_all();
    a.sync(&pool);
    assert_eq!(a.eth(), (1000, 0));

    // Split 1000 into 600 + 390, paying a fee of 10 through the mixnet: exact, no change.
    let split = a.view.prepare_transaction(&a.seed, &paid(vec![(a_addr, 600), (a_addr, 390)], 10), &mut r).unwrap();
    assert_eq!((split.inputs.len(), split.change), (1, 0));
    assert_eq!(
        split.outputs.clone().map(|o| (o.value, o.role)),
        [(600, OutputRole::Requested), (390, OutputRole::Requested)]
    );
    assert_eq!(pool.transact(&split, RELAYER, ACTION), Ok(()));
    a.sync(&pool);
    assert_eq!(a.eth(), (0, 990), "the 1000 note is spent, both outputs pending");
    pool.insert_all();
    a.sync(&pool);
    assert_eq!(a.eth(), (990, 0));
    assert_eq!(a.note_values(), [390, 600]);
    assert!(a.view.notes().iter().filter(|n| !n.spent).all(|n| n.origin == Origin::Own));

    // Join the two (fee 5): one note of 985 (+ a zero-value padding note, not kept).
    let join = a.view.prepare_join(&a.seed, &paid(vec![], 5), &mut r).unwrap();
    assert_eq!((join.inputs.len(), join.change), (2, 985));
    assert_eq!(join.outputs.clone().map(|o| (o.value, o.role)), [(985, OutputRole::Change), (0, OutputRole::Padding)]);
    pool.transact(&join, RELAYER, ACTION).unwrap();
    pool.insert_all();
    a.sync(&pool);
    assert_eq!(a.eth(), (985, 0));
    assert_eq!(a.note_values(), [985]);

    // A pays B 700 (fee 5): change 280 back to A.
    let pay = a.view.prepare_transaction(&a.seed, &paid(vec![(b_addr, 700)], 5), &mut r).unwrap();
    assert_eq!(pay.change, 280);
    assert_eq!(pay.outputs[0].to, b_addr);
    assert_eq!((pay.outputs[1].to, pay.outputs[1].value, pay.outputs[1].role), (a_addr, 280, OutputRole::Change));
    pool.transact(&pay, RELAYER, ACTION).unwrap();
    a.sync(&pool);
    b.sync(&pool);
    assert_eq!((a.eth(), b.eth()), ((0, 280), (0, 700)), "both outputs queued");
    pool.insert_all();
    a.sync(&pool);
    b.sync(&pool);
    assert_eq!((a.eth(), b.eth()), ((280, 0), (700, 0)));
    let received = b.view.notes().iter().find(|n| !n.spent).unwrap();
    assert_eq!((received.value, received.origin), (700, Origin::Received));

    // B withdraws 300 to a fresh address, directly: change 400.
    let mut w = direct(vec![]);
    w.public_out = 300;
    w.recipient = [0x44; 20];
    let withdrawal = b.view.prepare_transaction(&b.seed, &w, &mut r).unwrap();
    assert_eq!(withdrawal.change, 400);
    assert_eq!((withdrawal.fields.public_out, withdrawal.fields.recipient), (300, [0x44; 20]));
    pool.transact(&withdrawal, [0; 20], [0; 32]).unwrap();
    // B pays A 100 through the mixnet from the 400 change, once inserted.
    pool.insert_all();
    b.sync(&pool);
    assert_eq!(b.eth(), (400, 0));
    let back = b.view.prepare_transaction(&b.seed, &paid(vec![(a_addr, 100)], 3), &mut r).unwrap();
    pool.transact(&back, RELAYER, ACTION).unwrap();
    pool.insert_all();
    a.sync(&pool);
    b.sync(&pool);
    assert_eq!((a.eth(), b.eth()), ((380, 0), (297, 0)));
    // Conservation: deposits = balances + withdrawals + fees.
    assert_eq!(1000, 380 + 297 + 300 + (10 + 5 + 5 + 3));
    assert!(a.view.corrupt_notes().is_empty() && b.view.corrupt_notes().is_empty());

    // A replay of any of these transactions is refused (its nullifiers are spent).
    assert_eq!(pool.transact(&pay, RELAYER, ACTION), Err(Refused::SpentNullifier));

    // Restored wallets (seed only, every event replayed) reach the same state.
    for w in [&a, &b] {
        let mut restored = PoolView::new();
        restored.apply_all(&w.seed, &pool.events).unwrap();
        assert_eq!(restored.notes(), w.view.notes());
        assert_eq!(restored.balance(&eth()), w.view.balance(&eth()));
        assert_eq!(restored.root(), pool.tree.root());
        // One event at a time gives the same view as all at once.
        let mut one_by_one = PoolView::new();
        for e in &pool.events {
            one_by_one.apply(&w.seed, e).unwrap();
        }
        assert_eq!(one_by_one.notes(), w.view.notes());
        // And the view survives serialisation.
        let back = PoolView::from_json(&w.view.to_json().unwrap()).unwrap();
        assert_eq!((back.notes(), back.root()), (w.view.notes(), w.view.root()));
    }
}

#[test]
fn a_viewing_key_sees_incoming_notes_but_not_spends_and_cannot_spend() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let b = Wallet::new(&mut r);
    pool.deposit(&a.address(), eth(), 500, &mut r);
    pool.insert_all();
    a.sync(&pool);
    let pay = a.view.prepare_transaction(&a.seed, &paid(vec![(b.address(), 200)], 0), &mut r).unwrap();
    pool.transact(&pay, RELAYER, ACTION).unwrap();
    pool.insert_all();
    a.sync(&pool);
    assert_eq!(a.eth(), (300, 0));

    // An auditor with A's viewing key: both of A's notes (the deposit and the change), neither
    // spend — the 500 note still looks unspent, so "spendable" reads 800 received.
    let vk = a.seed.viewing_key().unwrap();
    let mut audit = PoolView::new_viewing_only();
    audit.apply_viewing(&vk, &pool.events).unwrap();
    assert!(audit.viewing_only());
    let mut seen: Vec<u128> = audit.notes().iter().map(|n| n.value).collect();
    seen.sort_unstable();
    assert_eq!(seen, [300, 500]);
    assert!(audit.notes().iter().all(|n| !n.spent && n.nullifier.is_none()));
    assert_eq!(audit.balance(&eth()).spendable, 800);
    assert!(matches!(
        audit.prepare_transaction(&a.seed, &paid(vec![(b.address(), 1)], 0), &mut r),
        Err(WalletError::ViewMode(_))
    ));
    // The two kinds of view are not mixed up.
    assert!(matches!(audit.apply_all(&a.seed, &pool.events), Err(WalletError::ViewMode(_))));
    assert!(matches!(PoolView::new().apply_viewing(&vk, &pool.events), Err(WalletError::ViewMode(_))));
    let back = PoolView::from_json(&audit.to_json().unwrap()).unwrap();
    assert!(back.viewing_only());
}

#[test]
fn note_selection_fewest_notes_smallest_cover_and_joins() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let to = Wallet::new(&mut r).address();
    for v in [100, 120, 200, 250] {
        pool.deposit(&a.address(), eth(), v, &mut r);
    }
    pool.insert_all();
    a.sync(&pool);
    let spent = |p: &PreparedTransaction| {
        let mut v: Vec<u128> = p.inputs.iter().map(|i| i.value).collect();
        v.sort_unstable();
        v
    };
    let pay = |v: u128| direct(vec![(to, v)]);
    // One note when one covers: the smallest that does (exact first).
    assert_eq!(spent(&a.view.prepare_transaction(&a.seed, &pay(250), &mut r).unwrap()), [250]);
    assert_eq!(spent(&a.view.prepare_transaction(&a.seed, &pay(150), &mut r).unwrap()), [200]);
    // Else two: the smallest covering pair (260: 100 + 200, not 120 + 200; 320: exactly 120 + 200).
    let two = a.view.prepare_transaction(&a.seed, &pay(260), &mut r).unwrap();
    assert_eq!((spent(&two), two.change), (vec![100, 200], 40));
    let exact = a.view.prepare_transaction(&a.seed, &pay(320), &mut r).unwrap();
    assert_eq!((spent(&exact), exact.change), (vec![120, 200], 0));
    assert_eq!(exact.outputs[1].role, OutputRole::Padding);
    assert_eq!(spent(&a.view.prepare_transaction(&a.seed, &pay(450), &mut r).unwrap()), [200, 250]);
    // A note in flight is skipped.
    let first = a.view.prepare_transaction(&a.seed, &pay(250), &mut r).unwrap();
    let mut req = pay(250);
    req.avoid = first.inputs.iter().map(|i| i.nullifier).collect();
    assert_eq!(spent(&a.view.prepare_transaction(&a.seed, &req, &mut r).unwrap()), [100, 200]);
    // Enough in all (670) but no pair covers 500: join first. More than all: insufficient.
    assert!(matches!(
        a.view.prepare_transaction(&a.seed, &pay(500), &mut r),
        Err(WalletError::NeedsJoin { total: 670, largest_pair: 450, needed: 500 })
    ));
    assert!(matches!(
        a.view.prepare_transaction(&a.seed, &pay(671), &mut r),
        Err(WalletError::InsufficientFunds { have: 670, need: 671, pending: 0 })
    ));
    let bal = a.view.balance(&eth());
    assert_eq!((bal.largest, bal.largest_pair, bal.notes), (250, 450, 4));

    // The CLI's loop: join the two smallest until a pair covers, then pay.
    let mut joins = 0;
    let prepared = loop {
        match a.view.prepare_transaction(&a.seed, &pay(500), &mut r) {
            Err(WalletError::NeedsJoin { .. }) => {
                let j = a.view.prepare_join(&a.seed, &direct(vec![]), &mut r).unwrap();
                assert_eq!(j.inputs.len(), 2);
                pool.transact(&j, [0; 20], [0; 32]).unwrap();
                pool.insert_all();
                a.sync(&pool);
                joins += 1;
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(joins, 2, "100 + 120 → 220; 200 + 220 → 420; then 250 + 420 ≥ 500");
    assert_eq!((spent(&prepared), prepared.change), (vec![250, 420], 170));
    assert_eq!(a.eth(), (670, 0));

    // A join needs two notes.
    let mut b = Wallet::new(&mut r);
    pool.deposit(&b.address(), eth(), 5, &mut r);
    pool.insert_all();
    b.sync(&pool);
    assert!(matches!(
        b.view.prepare_join(&b.seed, &direct(vec![]), &mut r),
        Err(WalletError::NothingToJoin { notes: 1 })
    ));
}

#[test]
fn requests_the_pool_would_refuse_are_refused_before_any_work() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let me = a.address();
    pool.deposit(&me, eth(), 100, &mut r);
    pool.insert_all();
    a.sync(&pool);
    let bad = |req: TxRequest, a: &Wallet, r: &mut ChaCha20Rng| a.view.prepare_transaction(&a.seed, &req, r).err();

    let mut w = direct(vec![]);
    w.public_out = 10; // a withdrawal with no recipient
    assert!(matches!(bad(w, &a, &mut r), Some(WalletError::BadRequest(_))));
    let mut w = direct(vec![(me, 10)]);
    w.recipient = [0x44; 20]; // a recipient with nothing withdrawn
    assert!(matches!(bad(w, &a, &mut r), Some(WalletError::BadRequest(_))));
    let mut w = direct(vec![(me, 10)]);
    w.fee = 1; // a fee with no relayer
    assert!(matches!(bad(w, &a, &mut r), Some(WalletError::BadRequest(_))));
    let mut w = paid(vec![(me, 10)], 1);
    w.public_in = 5; // value in through a relayer
    assert!(matches!(bad(w, &a, &mut r), Some(WalletError::BadRequest(_))));
    let mut w = paid(vec![(me, 10)], 1);
    w.asset = Fr::from(2u64).pow_u64(160); // not an address
    assert!(matches!(bad(w, &a, &mut r), Some(WalletError::BadRequest(_))));
    assert!(matches!(bad(paid(vec![(me, 0)], 1), &a, &mut r), Some(WalletError::BadRequest(_))));
    assert!(matches!(bad(paid(vec![(me, u128::MAX)], 1), &a, &mut r), Some(WalletError::BadRequest(_))));
    assert!(matches!(
        bad(paid(vec![(me, 1), (me, 1), (me, 1)], 1), &a, &mut r),
        Some(WalletError::TooManyOutputs { outputs: 3 })
    ));
    // A split that leaves change has no output for it.
    assert!(matches!(
        bad(paid(vec![(me, 50), (me, 40)], 1), &a, &mut r),
        Some(WalletError::NoRoomForChange { change: 9 })
    ));

    // A deposit into notes through `transact` spends nothing: the public input is the change.
    let mut d = direct(vec![]);
    d.public_in = 40;
    let dep = a.view.prepare_transaction(&a.seed, &d, &mut r).unwrap();
    assert_eq!((dep.inputs.len(), dep.change), (0, 40));
    pool.transact(&dep, [0; 20], [0; 32]).unwrap();
    pool.insert_all();
    a.sync(&pool);
    assert_eq!(a.eth(), (140, 0));
    // Withdrawing everything leaves two padding outputs.
    let mut all = direct(vec![]);
    all.public_out = 100;
    all.recipient = [0x44; 20];
    let out = a.view.prepare_transaction(&a.seed, &all, &mut r).unwrap();
    assert_eq!(out.outputs.clone().map(|o| (o.value, o.role)), [(0, OutputRole::Padding), (0, OutputRole::Padding)]);
    assert_eq!(out.change, 0);
}

#[test]
fn the_proof_binds_the_relayer_action_chain_pool_fee_and_both_ciphertexts() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let b = Wallet::new(&mut r);
    pool.deposit(&a.address(), eth(), 100, &mut r);
    pool.insert_all();
    a.sync(&pool);
    let p = a.view.prepare_transaction(&a.seed, &paid(vec![(b.address(), 60)], 4), &mut r).unwrap();
    // Another relayer or action: the pool's context differs from the proof's.
    assert_eq!(pool.transact(&p, [0x99; 20], ACTION), Err(Refused::Context));
    assert_eq!(pool.transact(&p, RELAYER, [0x98; 32]), Err(Refused::Context));
    // A relayer that swaps the two ciphertexts, or alters one (to re-target B's note).
    let mut swapped = a.view.prepare_transaction(&a.seed, &paid(vec![(b.address(), 60)], 4), &mut r).unwrap();
    swapped.fields.notes.swap(0, 1);
    assert_eq!(pool.transact(&swapped, RELAYER, ACTION), Err(Refused::Context));
    let mut altered = a.view.prepare_transaction(&a.seed, &paid(vec![(b.address(), 60)], 4), &mut r).unwrap();
    altered.fields.notes[0][50] ^= 1;
    assert_eq!(pool.transact(&altered, RELAYER, ACTION), Err(Refused::Context));
    // Another fee: the context (and the public amount) differ.
    let mut fee = a.view.prepare_transaction(&a.seed, &paid(vec![(b.address(), 60)], 4), &mut r).unwrap();
    fee.fields.fee = 40;
    assert_eq!(pool.transact(&fee, RELAYER, ACTION), Err(Refused::Context));
    // The honest one passes.
    assert_eq!(pool.transact(&p, RELAYER, ACTION), Ok(()));
}

#[test]
fn corrupt_or_retargeted_notes_addressed_to_the_wallet_are_reported() {
    let mut r = rng();
    let b = Wallet::new(&mut r);
    let b_addr = b.address();
    let asset = eth();
    let other_asset = Fr::from(0xdeadu64);
    let mut events = Vec::new();
    let mut q = 0u64;
    let mut push_tx = |notes: [Vec<u8>; 2], commitments: [Fr; 2], asset: Fr, events: &mut Vec<PoolEvent>| {
        events.push(PoolEvent::Transacted {
            first_queue_index: q,
            nullifiers: [Fr::from(q + 1000), Fr::from(q + 2000)],
            commitments,
            notes,
            asset,
            public_in: 0,
            public_out: 0,
            fee: 0,
        });
        q += 2;
    };
    let filler = |r: &mut ChaCha20Rng| {
        let stranger = Seed::random(r).address().unwrap();
        let n = nox_zk::Note::new(1, asset, stranger.owner(), r);
        (memo::seal(&stranger, &asset, 1, &n.blinding, r), n.commitment().unwrap())
    };

    // 1. A lying sender: a ciphertext promising B 1,000,000 beside a commitment to 1.
    let n = nox_zk::Note::new(1, asset, b_addr.owner(), &mut r);
    let lie = memo::seal(&b_addr, &asset, 1_000_000, &n.blinding, &mut r);
    let (f, fc) = filler(&mut r);
    push_tx([lie, f], [n.commitment().unwrap(), fc], asset, &mut events);
    // 2. A note for B of asset X published under asset Y (re-targeted): does not authenticate.
    let n2 = nox_zk::Note::new(7, other_asset, b_addr.owner(), &mut r);
    let moved = memo::seal(&b_addr, &other_asset, 7, &n2.blinding, &mut r);
    let (f, fc) = filler(&mut r);
    push_tx([f, moved], [fc, n2.commitment().unwrap()], asset, &mut events);
    // 3. A note for B with a flipped byte in its sealed part.
    let n3 = nox_zk::Note::new(9, asset, b_addr.owner(), &mut r);
    let mut flipped = memo::seal(&b_addr, &asset, 9, &n3.blinding, &mut r);
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let (f, fc) = filler(&mut r);
    push_tx([flipped, f], [n3.commitment().unwrap(), fc], asset, &mut events);
    // 4. A deposit whose ciphertext claims more than was deposited.
    let n4 = nox_zk::Note::new(5, asset, b_addr.owner(), &mut r);
    events.push(PoolEvent::Deposited {
        queue_index: q,
        commitment: n4.commitment().unwrap(),
        asset,
        amount: 5,
        memo: memo::seal(&b_addr, &asset, 500, &n4.blinding, &mut r),
    });
    // 5. An honest note of 9 for B, for comparison.
    let good = nox_zk::Note::new(9, asset, b_addr.owner(), &mut r);
    let (f, fc) = filler(&mut r);
    let mut q2 = q + 1;
    events.push(PoolEvent::Transacted {
        first_queue_index: q2,
        nullifiers: [Fr::from(1u64), Fr::from(2u64)],
        commitments: [fc, good.commitment().unwrap()],
        notes: [f, memo::seal(&b_addr, &asset, 9, &good.blinding, &mut r)],
        asset,
        public_in: 0,
        public_out: 0,
        fee: 0,
    });
    q2 += 2;

    let mut view = PoolView::new();
    view.apply_all(&b.seed, &events).unwrap();
    assert_eq!(view.queue_len(), q2);
    let c: Vec<(u64, CorruptReason, Option<u128>)> =
        view.corrupt_notes().iter().map(|c| (c.queue_index, c.reason, c.claimed_value)).collect();
    assert_eq!(
        c,
        [
            (0, CorruptReason::CommitmentMismatch, Some(1_000_000)),
            (3, CorruptReason::Undecryptable, None),
            (4, CorruptReason::Undecryptable, None),
            (6, CorruptReason::CommitmentMismatch, Some(500)),
        ]
    );
    // Only the honest note counts.
    assert_eq!(view.notes().len(), 1);
    assert_eq!(view.balance(&asset).pending, 9);
    // A stranger sees none of it.
    let stranger = Seed::random(&mut r);
    let mut sv = PoolView::new();
    sv.apply_all(&stranger, &events).unwrap();
    assert!(sv.notes().is_empty() && sv.corrupt_notes().is_empty());
    // The report survives serialisation.
    assert_eq!(PoolView::from_json(&view.to_json().unwrap()).unwrap().corrupt_notes(), view.corrupt_notes());
}

#[test]
fn the_views_batch_tree_gives_nox_zks_roots_paths_and_insertion_statements() {
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let stranger = Wallet::new(&mut r).address();
    for i in 0..nox_wallet::state::BATCH_SIZE as u128 + 4 {
        pool.deposit(&stranger, eth(), i + 1, &mut r);
    }
    pool.insert(); // a full batch
    pool.insert(); // 4 leaves, then zeros
    for i in 0..3u128 {
        pool.deposit(&a.address(), eth(), i + 1, &mut r);
    }
    a.sync(&pool);
    assert_eq!(a.view.root(), pool.tree.root());
    for i in 0..pool.tree.len() {
        assert_eq!(a.view.path(i).unwrap(), pool.tree.path(i).unwrap(), "leaf {i}");
    }
    assert!(a.view.path(pool.tree.len()).is_err());
    // The next batch's insertion statement is the one nox_zk's tree makes, and is satisfied.
    let queued: Vec<Fr> = a.view.queued().map(|(_, c)| c).collect();
    assert_eq!(queued.len(), 3);
    let (public, witness) = a.view.insert_statement(&queued).unwrap();
    assert_eq!((public.clone(), witness.clone()), pool.tree.clone().insert_batch(&queued).unwrap());
    assert!(nox_zk::insert::is_satisfied(&public, &witness).unwrap());
    assert!(a.view.insert_statement(&[]).is_err());
    // Inserting it moves the view to the same root.
    pool.insert();
    a.sync(&pool);
    assert_eq!(a.view.root(), public.new_root);
    assert_eq!(a.eth(), (6, 0));
}

#[test]
fn inconsistent_events_are_refused() {
    let mut r = rng();
    let alice = Seed::random(&mut r);
    let mut pool = Pool::new();
    pool.deposit(&alice.address().unwrap(), eth(), 10, &mut r);
    pool.deposit(&alice.address().unwrap(), eth(), 20, &mut r);
    pool.insert();

    // A skipped event (queue index out of sequence).
    let mut view = PoolView::new();
    let err = view.apply(&alice, &pool.events[1]).unwrap_err();
    assert!(matches!(err, WalletError::Inconsistent(_)), "{err}");

    // A batch whose root the leaves do not produce.
    let mut view = PoolView::new();
    view.apply_all(&alice, &pool.events[..2]).unwrap();
    let PoolEvent::BatchInserted { start_leaf, first_queue, count, .. } = pool.events[2].clone() else { panic!() };
    let forged = PoolEvent::BatchInserted { start_leaf, first_queue, count, new_root: Fr::from(99u64) };
    assert!(matches!(view.apply(&alice, &forged), Err(WalletError::Inconsistent(_))));

    // A batch that does not start where the tree ends.
    let mut view = PoolView::new();
    view.apply_all(&alice, &pool.events[..2]).unwrap();
    let skewed = PoolEvent::BatchInserted {
        start_leaf: nox_wallet::state::BATCH_SIZE,
        first_queue,
        count,
        new_root: Fr::from(0u64),
    };
    assert!(matches!(view.apply(&alice, &skewed), Err(WalletError::Inconsistent(_))));

    // A transaction whose outputs do not follow the queue (a repeated event).
    let mut view = PoolView::new();
    view.apply_all(&alice, &pool.events[..2]).unwrap();
    let z = Fr::from(0u64);
    let repeated = PoolEvent::Transacted {
        first_queue_index: 1,
        nullifiers: [z, Fr::from(1u64)],
        commitments: [z, z],
        notes: [vec![], vec![]],
        asset: eth(),
        public_in: 0,
        public_out: 0,
        fee: 0,
    };
    assert!(matches!(view.apply(&alice, &repeated), Err(WalletError::Inconsistent(_))));

    // A view file from before private transfers (version 1) is refused: resynchronise instead.
    assert!(matches!(PoolView::from_json(br#"{"version":1,"notes":[]}"#), Err(WalletError::State(_))));
}

#[test]
fn seed_file_needs_the_passphrase_and_an_untouched_header() {
    let mut r = rng();
    let seed = Seed::random(&mut r);
    let light = KdfParams { m_cost: 256, t_cost: 1, lanes: 1 };
    let f = file::seal_seed(&seed, b"correct horse", light, &mut r).unwrap();
    let back = file::open_seed(&f, b"correct horse").unwrap();
    assert_eq!(back.address().unwrap(), seed.address().unwrap());
    assert!(matches!(file::open_seed(&f, b"wrong"), Err(WalletError::Decrypt)));
    let mut t = f.clone();
    t[11] ^= 1; // m_cost: still in range, but authenticated
    assert!(matches!(file::open_seed(&t, b"correct horse"), Err(WalletError::Decrypt)));
    let mut t = f.clone();
    t[8] = 0xff; // m_cost ≥ 4 GiB: refused before any allocation
    assert!(matches!(file::open_seed(&t, b"correct horse"), Err(WalletError::BadFile(_))));
    assert!(matches!(file::open_seed(&f[..f.len() - 1], b"correct horse"), Err(WalletError::BadFile(_))));
    let mut t = f.clone();
    t[0] = b'X';
    assert!(matches!(file::open_seed(&t, b"correct horse"), Err(WalletError::BadFile(_))));

    let state = file::seal_state(&seed, b"{\"x\":1}", &mut r).unwrap();
    assert_eq!(file::open_state(&seed, &state).unwrap(), b"{\"x\":1}");
    let other = Seed::random(&mut r);
    assert!(matches!(file::open_state(&other, &state), Err(WalletError::Decrypt)));
}

/// The privacy advice's inputs come from the view (issue 35): every pool deposit with the block
/// time the caller recorded, the wallet's own among them; a withdrawal right after a deposit of a
/// unique amount is flagged twice. The history survives the state file, and a file of format 2
/// (no history) still loads, its history starting after its last block.
#[test]
fn the_view_keeps_the_deposit_history_the_privacy_advice_needs_and_old_files_load() {
    use nox_wallet::privacy::{self, AdvicePolicy, PrivacyWarning, WithdrawalPlan};
    let mut r = rng();
    let mut pool = Pool::new();
    let mut a = Wallet::new(&mut r);
    let b = Wallet::new(&mut r);
    for _ in 0..3 {
        pool.deposit(&b.address(), eth(), 1_000_000, &mut r);
    }
    pool.deposit(&a.address(), eth(), 1_234_567, &mut r);
    pool.insert_all();
    a.sync(&pool);
    a.view.last_block = 40;
    for (i, t) in [(0, 1_000), (1, 2_000), (2, 3_000), (3, 10_000)] {
        a.view.set_deposit_time(i, t);
    }
    let check = |view: &PoolView| {
        let (own, all) = privacy::deposit_history(view, &eth());
        assert_eq!(own, vec![privacy::PublicDeposit { time_s: 10_000, amount: 1_234_567 }]);
        assert_eq!(all.len(), 4);
        let plan = WithdrawalPlan { time_s: 10_060, public_out: 1_234_000, fee: 0 };
        let w = privacy::advise_withdrawal(&plan, &own, &all, &AdvicePolicy::default());
        assert!(
            matches!(
                w.as_slice(),
                [PrivacyWarning::MatchesOwnDeposit { crowd: 1, .. }, PrivacyWarning::SoonAfterOwnDeposit { .. }]
            ),
            "{w:?}"
        );
        let text = w[0].describe(|v| format!("{v} units"));
        assert!(text.contains("your deposit of 1234567 units made 1 min ago"), "{text}");
    };
    check(&a.view);
    let json = a.view.to_json().unwrap();
    let back = PoolView::from_json(&json).unwrap();
    assert_eq!(back.deposits(), a.view.deposits());
    check(&back);

    // A format-2 file: no history; it loads, notes and balance intact.
    let mut old: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let o = old.as_object_mut().unwrap();
    o.insert("version".into(), 2.into());
    o.remove("deposits");
    o.remove("deposits_from_block");
    let old = PoolView::from_json(&serde_json::to_vec(&old).unwrap()).unwrap();
    assert!(old.deposits().is_empty());
    assert_eq!(old.deposits_from_block(), 41);
    assert_eq!(old.balance(&eth()).spendable, 1_234_567);
    assert_eq!(a.view.deposits_from_block(), 0);
}
