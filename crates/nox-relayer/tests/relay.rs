//! The relayer against a real Anvil with the real contracts and real Groth16 proofs of the
//! 2-in/2-out transfer statement (testnet key): a payment-only private transfer (action target
//! 0) is priced with its outputs' insertion share, submitted and credited; every refusal of the
//! relay issue and of issue 30 is shown (publicIn, a bad proof, a payment made for another
//! relayer, the same note's budget reached again by swapping the inputs, a spent second
//! nullifier, a call with calldata to an address with no code); a relayer killed mid-flight is
//! replaced by a new one that resumes from the journal, bumps the stuck transaction's fee,
//! tracks it to its receipt and never reuses its nonce.
//!
//! The notes are made here with `nox_zk` directly (deposits, then one insertion batch proven
//! with the testnet insertion key), so the test depends on the pool and the statement only.

use std::sync::Arc;

use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::Provider;
use alloy::sol_types::SolCall;
use nox_chain::bindings::{NoxStakeToken, RewardLedger};
use nox_chain::deploy;
use nox_chain::pool::ShieldedPool;
use nox_relayer::abi::Action;
use nox_relayer::{Outcome, Policy, Reason, RelayRequest, Relayer, Submission};

// The world the test runs in lives beside this file; one test binary.
#[path = "relay/world.rs"]
mod world;

use world::{
    ACTION_GAS, ETH, FixedFeed, NOTE_VALUE, NOTES, OTHER_KEY, Spec, config, refused, submit, transaction,
    with_transaction, world,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_transactions_are_relayed_and_every_refusal_holds() {
    let mut w = world().await;
    let vk_hex = w.vk_hex.clone();
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::default();
    let relayer = Relayer::start(config(&w, dir.path(), &vk_hex, policy.clone())).await.expect("relayer starts");
    let me = relayer.account();
    let other = deploy::signer(OTHER_KEY).unwrap().address();
    let pool = ShieldedPool::new(w.pool.pool, w.provider.clone());

    // The quote, through the byte interface: a payment-only bundle (action gas 0) is priced
    // for its gas limit and the insertion share of its two outputs.
    let quote: nox_relayer::Quote =
        serde_json::from_slice(&relayer.handle(&RelayRequest::Quote.encode()).await.unwrap()).unwrap();
    assert_eq!((quote.relayer, quote.executor, quote.pool), (me, w.deployment.executor, w.pool.pool));
    assert_eq!(quote.insertion_gas, policy.insertion_gas());
    assert_eq!(quote.insertion_gas, 34_250, "2 × 548,000 / 32");
    let limit = nox_relayer::price::gas_limit(quote.payment_gas, 0, quote.gas_extra_bps);
    let quoted = quote.fee_for_action(ETH, 0).expect("ETH is priced");
    assert_eq!(Some(quoted), quote.fee_for(ETH, limit + quote.insertion_gas));
    assert!(quoted > quote.fee_for(ETH, limit).unwrap(), "the insertion share is charged");
    // Another price source plugs in: a relayer started with a feed quotes the feed's token at
    // the feed's price (and nothing else besides ETH).
    let feed_dir = tempfile::tempdir().unwrap();
    let priced = Address::repeat_byte(0x70);
    let fed =
        Relayer::start_with_feed(config(&w, feed_dir.path(), &vk_hex, Policy::default()), Arc::new(FixedFeed(priced)))
            .await
            .expect("a relayer with a price feed starts");
    let q: nox_relayer::Quote =
        serde_json::from_slice(&fed.handle(&RelayRequest::Quote.encode()).await.unwrap()).unwrap();
    let per_million = |asset: Address| q.prices.iter().find(|p| p.asset == asset).map(|p| p.per_million_gas);
    assert_eq!(per_million(priced), Some(per_million(ETH).expect("ETH is priced") * U256::from(2_000u64)));
    assert_eq!(q.prices.len(), 2);
    drop(fed);
    let fee = u128::try_from(quote.fee_for_action(ETH, ACTION_GAS).unwrap()).unwrap() * 3 / 2;

    // A payment-only private transfer: note 0 → a note to someone else + change, fee to us.
    let spec = w.payment_only(me, fee, vec![0]);
    let good = w.bundle(&spec).await;
    let good_tx = transaction(&good);

    // Cheap refusals, before any chain call.
    let mut wrong_exec = good.clone();
    wrong_exec.executor = Address::repeat_byte(9);
    assert_eq!(refused(&submit(&relayer, &wrong_exec).await), Reason::WrongExecutor);
    let mut wrong_chain = good.clone();
    wrong_chain.chain_id = 1;
    assert_eq!(refused(&submit(&relayer, &wrong_chain).await), Reason::WrongChain);
    // publicIn: a paid transaction cannot bring value in (the pool refuses it in `pay`).
    let mut t = good_tx.clone();
    t.publicIn = U256::from(1u64);
    let Outcome::Refused { reason: Reason::Malformed, detail, .. } =
        submit(&relayer, &with_transaction(&good, &t)).await
    else {
        panic!("publicIn must be refused")
    };
    assert!(detail.contains("publicIn"), "{detail}");
    // The same note twice (two equal nullifiers): refused before the proof.
    let mut t = good_tx.clone();
    t.nullifiers[1] = t.nullifiers[0];
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::Malformed);
    // A bad proof: one word changed.
    let mut t = good_tx.clone();
    t.proof[7] ^= U256::from(1u64);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // A tampered ciphertext (the notes are bound through the context): the proof fails.
    let mut t = good_tx.clone();
    let mut n0 = t.notes[0].to_vec();
    n0[0] ^= 1;
    t.notes[0] = Bytes::from(n0);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // Swapping the outputs' ciphertexts, or the nullifiers' order: the proof fails.
    let mut t = good_tx.clone();
    t.notes.swap(0, 1);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    let mut t = good_tx.clone();
    t.nullifiers.swap(0, 1);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::BadProof);
    // A payment to another relayer: named as such, or passed off as ours (the context the
    // relayer computes names itself, so the proof fails).
    let theirs = w.bundle(&w.payment_only(other, fee, vec![1])).await;
    assert_eq!(refused(&submit(&relayer, &theirs).await), Reason::WrongRelayer);
    let mut passed_off = theirs.clone();
    passed_off.relayer = me;
    assert_eq!(refused(&submit(&relayer, &passed_off).await), Reason::BadProof);
    // The proof binds the action: a call put under the payment-only payment fails.
    let mut swapped = good.clone();
    swapped.bundle.action = Action {
        target: w.deployment.stake_token,
        value: U256::ZERO,
        gas: U256::from(ACTION_GAS),
        data: Bytes::from(NoxStakeToken::balanceOfCall { account: other }.abi_encode()),
    };
    let swapped = Submission::new(swapped.chain_id, swapped.executor, swapped.relayer, swapped.bundle);
    assert_eq!(refused(&submit(&relayer, &swapped).await), Reason::BadProof);
    // Too close to its deadline (checked before the proof: the deadline is changed here).
    let mut t = good_tx.clone();
    t.deadline -= U256::from(600 - 20);
    assert_eq!(refused(&submit(&relayer, &with_transaction(&good, &t)).await), Reason::Expired);
    assert_eq!(
        refused(&serde_json::from_slice(&relayer.handle(&[0x02, 0x00]).await.unwrap()).unwrap()),
        Reason::Malformed
    );

    // Unprofitable: a fee of 1000 wei, with the fee that would do in the answer — at least the
    // gas limit and the insertion share at the quoted price.
    let cheap = w.bundle(&w.payment_only(me, 1000, vec![1])).await;
    match submit(&relayer, &cheap).await {
        Outcome::Refused { reason: Reason::Unprofitable, required_fee: Some(required), detail } => {
            assert!(required > U256::from(1000u64) && required <= U256::from(fee), "{required}");
            assert!(detail.contains("insertion share 34250 gas"), "{detail}");
        }
        other => panic!("expected unprofitable, got {other:?}"),
    }

    // The payment-only bundle, sent twice at once: one is included, the other refused as in
    // flight (or, if the first already landed, as spent).
    let ledger = RewardLedger::new(w.deployment.ledger, w.provider.clone());
    let (a, b) = tokio::join!(submit(&relayer, &good), submit(&relayer, &good));
    let (included, other_outcome) = if matches!(a, Outcome::Included { .. }) { (a, b) } else { (b, a) };
    let Outcome::Included { action_success: true, fee: paid, gas_used, .. } = included else {
        panic!("expected inclusion, got {included:?}")
    };
    assert!(matches!(refused(&other_outcome), Reason::Replayed | Reason::Spent), "second copy: {other_outcome:?}");
    assert_eq!(paid, U256::from(fee));
    eprintln!("payment-only private transfer relayed: {gas_used} gas (executor, pool, verifier, relayer credit)");
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(fee), "the relayer is credited");
    for n in good_tx.nullifiers {
        assert!(pool.isSpent(n).call().await.unwrap(), "both nullifiers spent on chain");
    }
    assert_eq!(pool.nextQueueIndex().call().await.unwrap(), U256::from(NOTES + 2), "both outputs queued");
    // Replayed after inclusion: its nullifiers are spent.
    assert_eq!(refused(&submit(&relayer, &good).await), Reason::Spent);

    // A spent SECOND nullifier: note 2 first, the spent note 0 second. Refused from the
    // relayer's memory of its own inclusion, and by a relayer that never saw it, from the pool.
    let second_spent = w.bundle(&w.payment_only(me, fee, vec![2, 0])).await;
    assert_eq!(transaction(&second_spent).nullifiers[1], good_tx.nullifiers[0]);
    assert_eq!(refused(&submit(&relayer, &second_spent).await), Reason::Spent);
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Relayer::start(config(&w, fresh_dir.path(), &vk_hex, Policy::default())).await.unwrap();
    let Outcome::Refused { reason: Reason::Spent, detail, .. } = submit(&fresh, &second_spent).await else {
        panic!("a spent second nullifier must be refused")
    };
    assert!(!detail.contains("refused recently"), "checked on the pool, not remembered: {detail}");
    assert_eq!(fresh.stats().verifications, 1);
    drop(fresh);

    // The same notes' budget is not bought again by swapping the inputs: with two simulation
    // rounds per nullifier, (3, 4) simulated twice leaves no round for (4, 3).
    let budget_dir = tempfile::tempdir().unwrap();
    let budgeted = Relayer::start(config(
        &w,
        budget_dir.path(),
        &vk_hex,
        Policy { per_nullifier_simulations: 2, ..Policy::default() },
    ))
    .await
    .unwrap();
    let mut forward = w.bundle(&w.payment_only(me, fee, vec![3, 4])).await;
    let mut backward = w.bundle(&w.payment_only(me, fee, vec![4, 3])).await;
    forward.simulate_only = true;
    backward.simulate_only = true;
    let (f, b) = (transaction(&forward).nullifiers, transaction(&backward).nullifiers);
    assert_eq!((f[0], f[1]), (b[1], b[0]), "the same two nullifiers, swapped");
    for _ in 0..2 {
        assert!(matches!(submit(&budgeted, &forward).await, Outcome::Simulated { .. }));
    }
    let Outcome::Refused { reason: Reason::Throttled, detail, .. } = submit(&budgeted, &backward).await else {
        panic!("the swapped payment must hit the same budget")
    };
    assert!(detail.contains("simulated 2 times"), "{detail}");
    assert_eq!(budgeted.stats().guard.nullifier_throttled, 1);
    drop(budgeted);

    // A call with calldata to an address with no code (a typo'd target) "succeeds" doing
    // nothing: refused, the fee not taken (issue 35).
    let typo = Address::repeat_byte(0xab);
    let data = NoxStakeToken::balanceOfCall { account: me }.abi_encode();
    let nowhere = w.bundle(&w.calling(me, fee, vec![3], typo, data.clone())).await;
    assert_eq!(refused(&submit(&relayer, &nowhere).await), Reason::NoCode);

    // A paid withdrawal: note 3 → publicOut to a fresh address, the fee to us, change kept.
    let fresh_address = Address::repeat_byte(0xfe);
    let out = NOTE_VALUE / 2;
    let withdrawal =
        w.bundle(&Spec { public_out: out, recipient: fresh_address, ..w.payment_only(me, fee, vec![3]) }).await;
    let Outcome::Included { action_success: true, gas_used, gas_limit, .. } = submit(&relayer, &withdrawal).await
    else {
        panic!("the paid withdrawal must be included")
    };
    eprintln!("paid withdrawal relayed: {gas_used} gas (limit {gas_limit})");
    assert_eq!(w.provider.get_balance(fresh_address).await.unwrap(), U256::from(out));
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(2 * fee));

    // An action that succeeds (a view call on the stake token), and one that reverts: refused,
    // unless the client pays anyway.
    let token = w.deployment.stake_token;
    let bad_call = NoxStakeToken::transferCall { to: other, value: U256::from(1u64) }.abi_encode();
    let mut reverting = w.bundle(&w.calling(me, fee, vec![4], token, bad_call)).await;
    assert_eq!(refused(&submit(&relayer, &reverting).await), Reason::ActionReverts);
    reverting.pay_on_revert = true;
    assert!(matches!(submit(&relayer, &reverting).await, Outcome::Included { action_success: false, .. }));
    assert_eq!(relayer.next_nonce().await, 3);
    assert!(relayer.pending().await.is_empty());

    // Killed mid-flight. Blocks stop being mined; a relayer in its own runtime sends a bundle
    // and dies with the runtime (its tasks with it) while the transaction is unmined.
    let stuck = w.bundle(&w.calling(me, fee, vec![5], token, data.clone())).await;
    w.provider.raw_request::<_, ()>("evm_setAutomine".into(), (false,)).await.unwrap();
    let cfg = config(&w, dir.path(), &vk_hex, Policy { wait_ms: 1_500, ..Policy::default() });
    let first = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            let r = Relayer::start(cfg).await.unwrap();
            let outcome = submit(&r, &stuck).await;
            (outcome, r.pending().await)
        })
    })
    .join()
    .unwrap();
    let (Outcome::Pending { tx_hash, .. }, journaled) = first else { panic!("expected pending, got {:?}", first.0) };
    assert_eq!(journaled.len(), 1);
    assert_eq!(journaled[0].nonce, 3);
    assert_eq!(journaled[0].hashes, vec![tx_hash]);

    // The new relayer resumes: rebroadcast, a fee bump while it stays unmined, then the receipt.
    let policy = Policy { bump_after_ms: 400, poll_ms: 100, ..Policy::default() };
    let resumed = Relayer::start(config(&w, dir.path(), &vk_hex, policy)).await.expect("restarts");
    assert_eq!(resumed.next_nonce().await, 4);
    let mut bumped = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if resumed.pending().await.first().is_some_and(|p| p.bumps >= 1) {
            bumped = true;
            break;
        }
    }
    assert!(bumped, "the stuck transaction's fee was bumped");
    w.provider.raw_request::<_, ()>("evm_setAutomine".into(), (true,)).await.unwrap();
    w.provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await.unwrap();
    for _ in 0..100 {
        if resumed.pending().await.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(resumed.pending().await.is_empty(), "tracked to its receipt");
    assert_eq!(ledger.balanceOf(me, ETH).call().await.unwrap(), U256::from(4 * fee));
    // The next bundle takes the next nonce: none reused, none skipped.
    let next = w.bundle(&w.payment_only(me, fee, vec![6])).await;
    let Outcome::Included { tx_hash, .. } = submit(&resumed, &next).await else { panic!("expected inclusion") };
    let tx = w.provider.get_transaction_by_hash(tx_hash).await.unwrap().unwrap();
    use alloy::consensus::Transaction as _;
    assert_eq!(tx.nonce(), 4);
    assert_eq!(w.provider.get_transaction_count(me).await.unwrap(), 5);

    // The chain node gone: the refusal and the failed quote say so without naming the node.
    // (The cheap bundle's proof still verifies; this relayer never refused it.)
    let late = cheap;
    let host = w.url.trim_start_matches("http://").to_owned();
    drop(w);
    let outcome = submit(&resumed, &late).await;
    let Outcome::Refused { reason: Reason::Chain, detail, .. } = &outcome else {
        panic!("expected a chain refusal, got {outcome:?}")
    };
    assert!(!detail.contains(&host), "{detail}");
    let quote = resumed.handle(&RelayRequest::Quote.encode()).await.expect_err("no quote without a node");
    assert!(!quote.contains(&host), "{quote}");
}
