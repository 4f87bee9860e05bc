//! The wallet core against a simulated pool: every event is built the way the pool contract
//! builds it (commitment computed from the amount, leaves inserted by aligned batches of 16).

use ark_bn254::Fr;
use nox_wallet::{
    PoolEvent, PoolView, Seed, SpendKind, SpendRequest, WalletError,
    file::{self, KdfParams},
    memo,
    spend::withdraw_domain,
};
use nox_zk::{Tree, note};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::from_seed([7; 32])
}

/// A pool simulator: queue, tree, events.
struct Pool {
    queue: Vec<Fr>,
    inserted: usize,
    tree: Tree,
    events: Vec<PoolEvent>,
}

impl Pool {
    fn new() -> Self {
        Pool { queue: vec![], inserted: 0, tree: Tree::new(), events: vec![] }
    }

    /// A deposit of `amount` of `asset` to `to`, with a memo, as `ShieldedPool.deposit` emits it.
    fn deposit(&mut self, to: &nox_wallet::PaymentAddress, asset: Fr, amount: u128, rng: &mut ChaCha20Rng) {
        let n = nox_zk::Note::new(amount, asset, to.owner, rng);
        let memo = memo::seal(&to.viewing, &asset, amount, &n.blinding, rng).expect("memo");
        let commitment = note::commitment(amount, asset, n.inner().unwrap()).unwrap();
        self.events.push(PoolEvent::Deposited {
            queue_index: self.queue.len() as u64,
            commitment,
            asset,
            amount,
            memo: memo.to_vec(),
        });
        self.queue.push(commitment);
    }

    fn spend(&mut self, nullifier: Fr, change_commitment: Fr, asset: Fr, fee: u128) {
        self.events.push(PoolEvent::Spent {
            nullifier,
            queue_index: self.queue.len() as u64,
            change_commitment,
            asset,
            fee,
        });
        self.queue.push(change_commitment);
    }

    /// Inserts up to 16 queued leaves, padding the subtree with zeros.
    fn insert(&mut self) {
        let start = self.tree.len();
        let count = (self.queue.len() - self.inserted).min(16);
        for i in 0..count {
            self.tree.push(self.queue[self.inserted + i]).unwrap();
        }
        while !self.tree.len().is_multiple_of(16) {
            self.tree.push(Fr::from(0u64)).unwrap();
        }
        self.events.push(PoolEvent::BatchInserted {
            start_leaf: start,
            first_queue: self.inserted as u64,
            count: count as u64,
            new_root: self.tree.root(),
        });
        self.inserted += count;
    }

    fn sync(&self, seed: &Seed, view: &mut PoolView, from: usize) -> Result<(), WalletError> {
        for e in &self.events[from..] {
            view.apply(seed, e)?;
        }
        Ok(())
    }
}

const ETH: u64 = 0;

fn pay_request(amount: u128) -> SpendRequest {
    SpendRequest {
        asset: Fr::from(ETH),
        amount,
        kind: SpendKind::Pay { relayer: [0x11; 20], action_hash: [0x22; 32] },
        chain_id: 31337,
        pool: [0x33; 20],
        deadline: 4_102_444_800,
    }
}

#[test]
fn memo_opens_only_for_its_viewing_key_and_asset() {
    let mut r = rng();
    let alice = Seed::random(&mut r);
    let bob = Seed::random(&mut r);
    let a = alice.address().unwrap();
    let blinding = note::random_scalar(&mut r);
    let asset = Fr::from(5u64);
    let m = memo::seal(&a.viewing, &asset, 1234, &blinding, &mut r).unwrap();
    assert_eq!(m.len(), memo::MEMO_LEN);
    assert_eq!(memo::open(&alice.viewing_secret(), &asset, &m), Some((1234, blinding)));
    assert_eq!(memo::open(&bob.viewing_secret(), &asset, &m), None, "another wallet's key");
    assert_eq!(memo::open(&alice.viewing_secret(), &Fr::from(6u64), &m), None, "the asset is authenticated");
    for i in 0..m.len() {
        let mut t = m;
        t[i] ^= 1;
        assert_eq!(memo::open(&alice.viewing_secret(), &asset, &t), None, "byte {i} flipped");
    }
    assert_eq!(memo::open(&alice.viewing_secret(), &asset, &m[..95]), None);
    // A low-order viewing key (all zero) is refused when sealing.
    assert!(memo::seal(&[0u8; 32], &asset, 1, &blinding, &mut r).is_none());
}

#[test]
fn payment_address_round_trips_and_refuses_garbage() {
    let mut r = rng();
    let a = Seed::random(&mut r).address().unwrap();
    let s = a.to_string();
    assert!(s.starts_with("noxpay:") && s.len() == 7 + 128);
    assert_eq!(s.parse::<nox_wallet::PaymentAddress>().unwrap(), a);
    for bad in ["", "noxpay:", &s[..s.len() - 2], &s.replace("noxpay:", "nox:"), &format!("noxpay:{}", "f".repeat(128))]
    {
        assert!(bad.parse::<nox_wallet::PaymentAddress>().is_err(), "{bad:?} accepted");
    }
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

#[test]
fn wallet_recovers_deposits_change_and_spends_from_events_alone() {
    let mut r = rng();
    let alice = Seed::random(&mut r);
    let bob = Seed::random(&mut r);
    let eth = Fr::from(ETH);
    let mut pool = Pool::new();
    pool.deposit(&bob.address().unwrap(), eth, 50, &mut r);
    pool.deposit(&alice.address().unwrap(), eth, 1000, &mut r);
    pool.deposit(&alice.address().unwrap(), eth, 300, &mut r);

    let mut view = PoolView::new();
    pool.sync(&alice, &mut view, 0).unwrap();
    let b = view.balance(&eth);
    assert_eq!((b.spendable, b.pending), (0, 1300), "queued, not yet spendable");
    assert!(matches!(view.prepare_spend(&alice, &pay_request(10)), Err(WalletError::InsufficientFunds { .. })));

    let seen = pool.events.len();
    pool.insert();
    pool.sync(&alice, &mut view, seen).unwrap();
    let b = view.balance(&eth);
    assert_eq!((b.spendable, b.pending, b.largest), (1300, 0, 1000));
    assert_eq!(view.notes().len(), 2, "bob's deposit is not alice's");
    assert_eq!(view.root(), pool.tree.root());

    // Pay 250 from the smallest note that covers it (300), and check the statement holds.
    let prepared = view.prepare_spend(&alice, &pay_request(250)).unwrap();
    assert_eq!(prepared.change_value, 50);
    // A second spend for the same transaction avoids that note: the 1000 one, another nullifier.
    let other = view.prepare_spend_avoiding(&alice, &pay_request(250), &[prepared.spent_commitment]).unwrap();
    assert_eq!(other.change_value, 750);
    assert_ne!(other.public.nullifier, prepared.public.nullifier);
    let both = [prepared.spent_commitment, other.spent_commitment];
    assert!(matches!(
        view.prepare_spend_avoiding(&alice, &pay_request(1), &both),
        Err(WalletError::InsufficientFunds { .. })
    ));
    assert!(nox_zk::is_satisfied(&prepared.public, &prepared.witness).unwrap());
    assert!(prepared.public.relayer < withdraw_domain());

    // The pool accepts it: alice sees her note spent and her change, with no memo at all.
    let seen = pool.events.len();
    pool.spend(prepared.public.nullifier, prepared.public.change_commitment, eth, 250);
    pool.deposit(&bob.address().unwrap(), eth, 7, &mut r);
    pool.insert();
    pool.sync(&alice, &mut view, seen).unwrap();
    let b = view.balance(&eth);
    assert_eq!((b.spendable, b.pending), (1050, 0));

    // A fresh wallet restored from the seed alone reaches the same view.
    let mut restored = PoolView::new();
    pool.sync(&alice, &mut restored, 0).unwrap();
    assert_eq!(restored.notes(), view.notes());
    assert_eq!(restored.balance(&eth), view.balance(&eth));

    // The change (50, at leaf 16) is spendable: withdraw 40 of it.
    let req = SpendRequest {
        amount: 40,
        kind: SpendKind::Withdraw { recipient: [0x44; 20], action_hash: [0; 32] },
        ..pay_request(40)
    };
    let w = view.prepare_spend(&alice, &req).unwrap();
    assert!(nox_zk::is_satisfied(&w.public, &w.witness).unwrap());
    assert!(w.public.relayer >= withdraw_domain(), "withdrawals are in their own domain");

    // The view survives serialisation.
    let json = view.to_json().unwrap();
    let back = PoolView::from_json(&json).unwrap();
    assert_eq!(back.notes(), view.notes());
    assert_eq!(back.root(), view.root());
}

#[test]
fn inconsistent_events_are_refused() {
    let mut r = rng();
    let alice = Seed::random(&mut r);
    let eth = Fr::from(ETH);
    let mut pool = Pool::new();
    pool.deposit(&alice.address().unwrap(), eth, 10, &mut r);
    pool.deposit(&alice.address().unwrap(), eth, 20, &mut r);
    pool.insert();

    // A skipped event (queue index out of sequence).
    let mut view = PoolView::new();
    let err = view.apply(&alice, &pool.events[1]).unwrap_err();
    assert!(matches!(err, WalletError::Inconsistent(_)), "{err}");

    // A batch whose root the leaves do not produce.
    let mut view = PoolView::new();
    view.apply(&alice, &pool.events[0]).unwrap();
    view.apply(&alice, &pool.events[1]).unwrap();
    let PoolEvent::BatchInserted { start_leaf, first_queue, count, .. } = pool.events[2].clone() else { panic!() };
    let forged = PoolEvent::BatchInserted { start_leaf, first_queue, count, new_root: Fr::from(99u64) };
    assert!(matches!(view.apply(&alice, &forged), Err(WalletError::Inconsistent(_))));

    // A batch that does not start where the tree ends.
    let mut view = PoolView::new();
    view.apply(&alice, &pool.events[0]).unwrap();
    view.apply(&alice, &pool.events[1]).unwrap();
    let skewed = PoolEvent::BatchInserted { start_leaf: 16, first_queue, count, new_root: Fr::from(0u64) };
    assert!(matches!(view.apply(&alice, &skewed), Err(WalletError::Inconsistent(_))));
}

#[test]
fn a_memo_that_opens_but_does_not_match_its_commitment_is_ignored() {
    let mut r = rng();
    let alice = Seed::random(&mut r);
    let a = alice.address().unwrap();
    let eth = Fr::from(ETH);
    // A forger publishes a memo promising 1,000,000 with a commitment to 1.
    let n = nox_zk::Note::new(1, eth, a.owner, &mut r);
    let memo = memo::seal(&a.viewing, &eth, 1_000_000, &n.blinding, &mut r).unwrap();
    let ev = PoolEvent::Deposited {
        queue_index: 0,
        commitment: note::commitment(1, eth, n.inner().unwrap()).unwrap(),
        asset: eth,
        amount: 1,
        memo: memo.to_vec(),
    };
    let mut view = PoolView::new();
    view.apply(&alice, &ev).unwrap();
    assert!(view.notes().is_empty());
}
