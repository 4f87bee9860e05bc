//! Bundles built by this crate, with real Groth16 proofs over a simulated pool, pass the
//! relayer's own admission (`nox_relayer::admit`: the off-chain proof check for this relayer and
//! the bundle's own action) — and fail it as soon as any value the proof binds is changed.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolCall;
use ark_bn254::Fr;
use nox_pay::adaptor::{Swap, Withdrawal, decode_swap_exact_in};
use nox_pay::{Action, Payment, asset_word, fee_from_quote, prove};
use nox_relayer::wire::AssetPrice;
use nox_relayer::{Admission, Quote, Reason, Submission, abi, admit};
use nox_wallet::{PoolEvent, PoolView, Seed, memo};
use nox_zk::{Tree, note};
use rand_chacha_03::{ChaCha20Rng, rand_core::SeedableRng};

const CHAIN: u64 = 31337;
const NOW: u64 = 1_800_000_000;

fn quote() -> Quote {
    Quote {
        chain_id: CHAIN,
        executor: Address::repeat_byte(0xe0),
        relayer: Address::repeat_byte(0x7e),
        pool: Address::repeat_byte(0x90),
        block: 1,
        base_fee: U256::from(1_000_000_000u64),
        priority_fee: U256::from(1_000_000_000u64),
        max_fee_per_gas: U256::from(2_250_000_000u64),
        margin_bps: 1_000,
        gas_extra_bps: 2_000,
        prices: vec![AssetPrice { asset: Address::ZERO, per_million_gas: U256::from(2_475_000_000_000_000u64) }],
        payment_gas: 420_000,
    }
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

/// A wallet with two 1-ETH notes, deposited and inserted the way the pool emits the events.
fn wallet(rng: &mut ChaCha20Rng) -> (Seed, PoolView) {
    let seed = Seed::random(rng);
    let to = seed.address().expect("address");
    let mut view = PoolView::new();
    let mut tree = Tree::new();
    let eth = Fr::from(0u64);
    for i in 0..2u64 {
        let amount = 1_000_000_000_000_000_000u128;
        let n = nox_zk::Note::new(amount, eth, to.owner, rng);
        let memo = memo::seal(&to.viewing, &eth, amount, &n.blinding, rng).expect("memo");
        let commitment = note::commitment(amount, eth, n.inner().expect("inner")).expect("commitment");
        let e = PoolEvent::Deposited { queue_index: i, commitment, asset: eth, amount, memo: memo.to_vec() };
        view.apply(&seed, &e).expect("deposit");
        tree.push(commitment).expect("leaf");
    }
    while !tree.len().is_multiple_of(16) {
        tree.push(Fr::from(0u64)).expect("padding");
    }
    let e = PoolEvent::BatchInserted { start_leaf: 0, first_queue: 0, count: 2, new_root: tree.root() };
    view.apply(&seed, &e).expect("insert");
    (seed, view)
}

fn with_bundle(s: &Submission, edit: impl FnOnce(&mut abi::Bundle)) -> Submission {
    let mut call = abi::executeCall::abi_decode(&s.calldata).expect("execute calldata");
    edit(&mut call.bundle);
    Submission::new(s.chain_id, s.executor, s.relayer, call.bundle)
}

#[test]
fn payments_and_a_swap_withdrawal_built_here_pass_the_relayers_admission_and_nothing_else_does() {
    let mut rng = ChaCha20Rng::from_seed([5; 32]);
    let (pk, vk) = nox_zk::groth16::testnet_setup().expect("setup");
    let (seed, view) = wallet(&mut rng);
    let q = quote();
    let a = admission(&q);

    // A plain paid action, at 125 % of the quote.
    let action =
        Action { target: Address::repeat_byte(0x70), data: Bytes::from_static(&[0x18, 0x16, 0x0d, 0xdd]), gas: 50_000 };
    let fee = fee_from_quote(&q, Address::ZERO, 50_000, 125).expect("priced");
    let exact = fee_from_quote(&q, Address::ZERO, 50_000, 100).expect("priced");
    assert_eq!(fee, exact * 5 / 4, "125 % of the quote");
    let payment =
        Payment { quote: &q, asset: Address::ZERO, fee, action: action.clone(), deadline: NOW + 600, avoid: &[] };
    let paid = payment.build(&view, &seed, &pk, &mut rng).expect("bundle");
    assert_eq!(paid.change_value, 1_000_000_000_000_000_000 - fee);
    let ok = admit(&a, &vk, &paid.submission, NOW).expect("admitted");
    assert_eq!((ok.fee, ok.asset, ok.deadline), (U256::from(fee), Address::ZERO, NOW + 600));

    // Every value the proof binds, changed after proving: refused.
    let refusals = [
        with_bundle(&paid.submission, |b| b.action.data = Bytes::from_static(&[0x70, 0xa0, 0x82, 0x31])),
        with_bundle(&paid.submission, |b| b.action.target = Address::repeat_byte(0x71)),
        with_bundle(&paid.submission, |b| b.action.gas -= U256::from(1u64)),
        Submission::new(CHAIN, q.executor, q.relayer, {
            let mut call = abi::executeCall::abi_decode(&paid.submission.calldata).expect("calldata");
            call.bundle.fee -= U256::from(1u64);
            let mut spend =
                <abi::Spend as alloy_sol_types::SolValue>::abi_decode(&call.bundle.paymentData).expect("spend");
            spend.fee = call.bundle.fee;
            call.bundle.paymentData = Bytes::from(alloy_sol_types::SolValue::abi_encode(&spend));
            call.bundle
        }),
    ];
    for s in &refusals {
        assert_eq!(admit(&a, &vk, s, NOW).expect_err("refused").0, Reason::BadProof);
    }
    // Another relayer's admission: the payment names this one.
    let mut other = a.clone();
    other.relayer = Address::repeat_byte(0x7f);
    let elsewhere = Submission::new(CHAIN, q.executor, other.relayer, {
        abi::executeCall::abi_decode(&paid.submission.calldata).expect("calldata").bundle
    });
    assert_eq!(admit(&other, &vk, &elsewhere, NOW).expect_err("refused").0, Reason::BadProof);
    assert_eq!(admit(&a, &vk, &paid.submission, NOW + 600).expect_err("late").0, Reason::Expired);

    // A private swap: a withdrawal to the adaptor bound to the swap, then the payment for the
    // adaptor call from the other note.
    let w = Withdrawal {
        adaptor: Address::repeat_byte(0xad),
        chain_id: CHAIN,
        pool: q.pool,
        asset: Address::ZERO,
        amount: 100_000_000_000_000_000,
        swap: Swap {
            tokenOut: Address::repeat_byte(0x70),
            amountOutMin: U256::from(190u64),
            swapDeadline: U256::from(NOW + 600),
            recipient: Address::repeat_byte(0x5a),
        },
        deadline: NOW + 600,
    };
    let prepared = view.prepare_spend(&seed, &w.spend_request()).expect("withdrawal");
    let proof = prove(&pk, &prepared, &mut rng).expect("proof");
    let swap_action = w.action(&prepared, &proof, 450_000);
    let (spend, swap) = decode_swap_exact_in(&swap_action.data).expect("swapExactIn calldata");
    assert_eq!((spend.asset, spend.fee, swap), (Address::ZERO, U256::from(w.amount), w.swap.clone()));
    assert_eq!(spend.deadline, U256::from(NOW + 600));
    assert!(decode_swap_exact_in(&swap_action.data[..swap_action.data.len() - 1]).is_none());
    let avoid = [prepared.spent_commitment];
    let fee = fee_from_quote(&q, Address::ZERO, 450_000, 125).expect("priced");
    let payment =
        Payment { quote: &q, asset: Address::ZERO, fee, action: swap_action, deadline: NOW + 600, avoid: &avoid };
    let paid = payment.build(&view, &seed, &pk, &mut rng).expect("bundle");
    assert_ne!(paid.spent_commitment, prepared.spent_commitment, "the payment comes from the other note");
    admit(&a, &vk, &paid.submission, NOW).expect("the swap bundle is admitted");
    // Both notes used: a third spend finds nothing left.
    let both = [prepared.spent_commitment, paid.spent_commitment];
    let third = Payment { quote: &q, asset: Address::ZERO, fee, action, deadline: NOW + 600, avoid: &both };
    assert!(matches!(third.prepare(&view, &seed), Err(nox_pay::PayError::Wallet(_))));
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
