//! Bundles built by this crate, with real Groth16 proofs of the 2-in/2-out statement over a
//! simulated pool, pass the relayer's own admission (`nox_relayer::admit`: the off-chain proof
//! check for this relayer and the bundle's own action) — and fail it as soon as any value the
//! proof binds is changed: the action, the fee, a recipient's note ciphertext, the recipient of
//! a withdrawal, the relayer.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolValue};
use ark_bn254::Fr;
use nox_pay::adaptor::{Swap, Withdrawal, decode_swap_exact_in};
use nox_pay::{Action, Payee, Payment, asset_word, fee_from_quote, prove};
use nox_relayer::{Admission, Quote, Reason, Submission, abi, admit};
use nox_wallet::{OutputRole, PoolEvent, PoolView, Seed, memo};
use nox_zk::{Tree, note};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

const CHAIN: u64 = 31337;
const NOW: u64 = 1_800_000_000;
const ETH: u128 = 1_000_000_000_000_000_000;

/// A relayer's quote (from its JSON, so fields a newer relayer adds take their defaults).
fn quote() -> Quote {
    serde_json::from_value(serde_json::json!({
        "chain_id": CHAIN,
        "executor": Address::repeat_byte(0xe0),
        "relayer": Address::repeat_byte(0x7e),
        "pool": Address::repeat_byte(0x90),
        "block": 1,
        "base_fee": "0x3b9aca00",
        "priority_fee": "0x3b9aca00",
        "max_fee_per_gas": "0x861c4680",
        "margin_bps": 1000,
        "gas_extra_bps": 2000,
        "prices": [{ "asset": Address::ZERO, "per_million_gas": "0x8cb0e7d6f5e000" }],
        "payment_gas": 420000
    }))
    .expect("a quote")
}

fn admission(q: &Quote) -> Admission {
    Admission {
        chain_id: q.chain_id,
        executor: q.executor,
        relayer: q.relayer,
        pool: q.pool,
        assets: vec![Address::ZERO],
        min_validity: 60,
    }
}

/// A wallet with three 1-ETH notes, deposited and inserted the way the pool emits the events.
fn wallet(rng: &mut ChaCha20Rng) -> (Seed, PoolView) {
    let seed = Seed::random(rng);
    let to = seed.address().expect("address");
    let mut view = PoolView::new();
    let mut tree = Tree::new();
    let eth = Fr::from(0u64);
    for i in 0..3u64 {
        let n = nox_zk::Note::new(ETH, eth, to.owner(), rng);
        let memo = memo::seal(&to, &eth, ETH, &n.blinding, rng);
        let commitment = note::commitment(ETH, eth, n.inner().expect("inner")).expect("commitment");
        let e = PoolEvent::Deposited { queue_index: i, commitment, asset: eth, amount: ETH, memo };
        view.apply(&seed, &e).expect("deposit");
        tree.push(commitment).expect("leaf");
    }
    while !tree.len().is_multiple_of(16) {
        tree.push(Fr::from(0u64)).expect("padding");
    }
    let e = PoolEvent::BatchInserted { start_leaf: 0, first_queue: 0, count: 3, new_root: tree.root() };
    view.apply(&seed, &e).expect("insert");
    (seed, view)
}

fn edit_bundle(s: &Submission, edit: impl FnOnce(&mut abi::Bundle)) -> Submission {
    let mut call = abi::executeCall::abi_decode(&s.calldata).expect("execute calldata");
    edit(&mut call.bundle);
    Submission::new(s.chain_id, s.executor, s.relayer, call.bundle)
}

fn edit_transaction(s: &Submission, edit: impl FnOnce(&mut abi::Transaction)) -> Submission {
    edit_bundle(s, |b| {
        let mut t = abi::Transaction::abi_decode(&b.paymentData).expect("a Transaction");
        edit(&mut t);
        b.paymentData = Bytes::from(t.abi_encode());
    })
}

fn payment<'a>(q: &Quote, fee: u128, action: Action, avoid: &'a [Fr]) -> Payment<'a> {
    Payment {
        payee: Payee::of(q),
        asset: Address::ZERO,
        fee,
        action,
        outputs: Vec::new(),
        join: false,
        public_out: 0,
        recipient: Address::ZERO,
        deadline: NOW + 600,
        avoid,
    }
}

#[test]
fn paid_transactions_built_here_pass_the_relayers_admission_and_nothing_else_does() {
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let (pk, vk) = nox_zk::transfer::testnet_setup().expect("setup");
    let (seed, view) = wallet(&mut rng);
    let q = quote();
    let a = admission(&q);

    // 1. A payment-only bundle (no action): a private transfer to another wallet and a
    // withdrawal to an address in one transaction, the fee to the relayer.
    let bob = Seed::random(&mut rng).address().expect("address");
    let fee0 = fee_from_quote(&q, Address::ZERO, 0, 125).expect("priced");
    let mut transfer = payment(&q, fee0, Action::none(), &[]);
    transfer.outputs = vec![(bob, ETH / 4)];
    transfer.public_out = ETH / 10;
    transfer.recipient = Address::repeat_byte(0x5a);
    let sent = transfer.build(&view, &seed, &pk, &mut rng).expect("bundle");
    assert!(Action::none().is_none());
    let none = &sent.submission.bundle.action;
    assert_eq!((none.target, none.gas, none.value, none.data.len()), (Address::ZERO, U256::ZERO, U256::ZERO, 0));
    let ok = admit(&a, &vk, &sent.submission, NOW).expect("a payment-only bundle is admitted");
    assert_eq!((ok.fee, ok.asset, ok.deadline), (U256::from(fee0), Address::ZERO, NOW + 600));
    let to_bob = sent.outputs.iter().find(|o| o.role == OutputRole::Requested).expect("Bob's note");
    assert_eq!((to_bob.to, to_bob.value), (bob, ETH / 4));
    assert_eq!(sent.change, ETH - ETH / 4 - ETH / 10 - fee0);
    assert_eq!(sent.inputs.len(), 1, "one note covers it");
    // The relayer swaps Bob's ciphertext (for one to itself, or garbage): the proof binds both.
    let swapped = edit_transaction(&sent.submission, |t| t.notes.swap(0, 1));
    let flipped = edit_transaction(&sent.submission, |t| {
        let mut n = t.notes[0].to_vec();
        n[40] ^= 1;
        t.notes[0] = Bytes::from(n);
    });
    // Or redirects the withdrawal, or keeps more of it as its fee.
    let redirected = edit_transaction(&sent.submission, |t| t.recipient = Address::repeat_byte(0x5b));
    let greedy = edit_bundle(
        &edit_transaction(&sent.submission, |t| {
            t.fee += U256::from(1u64);
            t.publicOut -= U256::from(1u64);
        }),
        |b| b.fee += U256::from(1u64),
    );
    for s in [&swapped, &flipped, &redirected, &greedy] {
        assert_eq!(admit(&a, &vk, s, NOW).expect_err("refused").0, Reason::BadProof);
    }
    // Another relayer's admission: the payment names this one.
    let mut other = a.clone();
    other.relayer = Address::repeat_byte(0x7f);
    let elsewhere = Submission::new(CHAIN, q.executor, other.relayer, sent.submission.bundle.clone());
    assert_eq!(admit(&other, &vk, &elsewhere, NOW).expect_err("refused").0, Reason::BadProof);
    assert_eq!(admit(&a, &vk, &sent.submission, NOW + 600).expect_err("late").0, Reason::Expired);

    // 2. A private swap (a paid action): a withdrawal transaction to the adaptor bound to the swap inside the
    // action, then the payment for the adaptor call from another note.
    let w = Withdrawal {
        adaptor: Address::repeat_byte(0xad),
        chain_id: CHAIN,
        pool: q.pool,
        asset: Address::ZERO,
        amount: ETH / 10,
        swap: Swap {
            tokenOut: Address::repeat_byte(0x70),
            amountOutMin: U256::from(190u64),
            swapDeadline: U256::from(NOW + 600),
            recipient: Address::repeat_byte(0x5a),
        },
        deadline: NOW + 600,
    };
    let prepared = view.prepare_transaction(&seed, &w.request(), &mut rng).expect("withdrawal");
    let proof = prove(&pk, &prepared, &mut rng).expect("proof");
    let swap_action = w.action(&prepared, &proof, 600_000);
    let (t, swap) = decode_swap_exact_in(&swap_action.data).expect("swapExactIn calldata");
    assert_eq!((t.publicOut, t.recipient, t.fee, swap), (U256::from(w.amount), w.adaptor, U256::ZERO, w.swap.clone()));
    assert_eq!(t.deadline, U256::from(NOW + 600));
    assert!(decode_swap_exact_in(&swap_action.data[..swap_action.data.len() - 32]).is_none());
    let avoid: Vec<Fr> = prepared.inputs.iter().map(|i| i.nullifier).collect();
    let fee = fee_from_quote(&q, Address::ZERO, 600_000, 125).expect("priced");
    let exact = fee_from_quote(&q, Address::ZERO, 600_000, 100).expect("priced");
    assert_eq!(fee, exact * 5 / 4, "125 % of the quote");
    let paid = payment(&q, fee, swap_action, &avoid).build(&view, &seed, &pk, &mut rng).expect("bundle");
    assert!(
        paid.inputs.iter().all(|i| !avoid.contains(&i.nullifier)),
        "the payment spends another note than the withdrawal"
    );
    admit(&a, &vk, &paid.submission, NOW).expect("the swap bundle is admitted");
    assert_eq!(paid.change, ETH - fee);
    // Every part of the action the payment binds, changed after proving: refused.
    let refusals = [
        edit_bundle(&paid.submission, |b| b.action.data = Bytes::from_static(&[0x70, 0xa0, 0x82, 0x31])),
        edit_bundle(&paid.submission, |b| b.action.target = Address::repeat_byte(0x71)),
        edit_bundle(&paid.submission, |b| b.action.gas -= U256::from(1u64)),
        edit_bundle(&edit_transaction(&paid.submission, |t| t.fee -= U256::from(1u64)), |b| b.fee -= U256::from(1u64)),
    ];
    for s in &refusals {
        assert_eq!(admit(&a, &vk, s, NOW).expect_err("refused").0, Reason::BadProof);
    }
    assert_eq!(asset_word(Address::ZERO), Fr::from(0u64));
}

#[test]
fn a_quote_without_the_asset_or_with_an_absurd_price_is_an_error_not_a_fee() {
    let q = quote();
    assert!(matches!(
        fee_from_quote(&q, Address::repeat_byte(1), 1, 100),
        Err(nox_pay::PayError::Unpriced(a)) if a == Address::repeat_byte(1)
    ));
    let mut huge = q.clone();
    huge.prices[0].per_million_gas = U256::MAX / U256::from(2u64);
    assert!(matches!(fee_from_quote(&huge, Address::ZERO, 1, 100), Err(nox_pay::PayError::FeeTooLarge)));
}
