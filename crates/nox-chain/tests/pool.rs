//! The shielded pool on a real Anvil, deployed from the committed artifacts: its empty root and
//! a deposit's commitment (computed on chain with the npm Poseidon) equal the Rust ones.

use std::net::TcpListener;

use alloy::primitives::{Address, Bytes, U256};
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::{ShieldedPool, deploy_pool};
use nox_zk::field::{from_be32, to_be32};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_deploys_and_a_deposit_commits_as_in_rust() {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port");
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .expect("spawn task")
        .expect("anvil starts");
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(1u64),
    };
    let deployment = deploy::deploy(anvil.url(), &deployer, params).await.expect("deploys");
    let at = deploy_pool(anvil.url(), &deployer, deployment.executor, 64).await.expect("pool deploys");
    assert_eq!(at.executor, deployment.executor);

    let provider = deploy::wallet_provider(anvil.url(), &deployer).expect("provider");
    let pool = ShieldedPool::new(at.pool, &provider);
    let root = pool.currentRoot().call().await.expect("currentRoot");
    let empty = nox_zk::merkle::zeros()[nox_zk::TREE_DEPTH];
    assert_eq!(root.to_be_bytes::<32>(), to_be32(&empty), "the empty root");
    assert_eq!(pool.ledger().call().await.expect("ledger"), deployment.ledger);

    // The pool's one note length is the wallet's (a memo of any other length is refused).
    let note_len = pool.NOTE_LEN().call().await.expect("NOTE_LEN");
    assert_eq!(note_len, U256::from(nox_wallet::memo::NOTE_LEN), "the pool and the wallet agree on NOTE_LEN");
    let memo = || Bytes::from(vec![1u8; nox_wallet::memo::NOTE_LEN]);

    let inner = nox_zk::poseidon::hash(&[ark_bn254::Fr::from(7u64), ark_bn254::Fr::from(9u64)]).expect("inner");
    let amount = 12_345u128;
    let receipt = pool
        .deposit(Address::ZERO, U256::from(amount), U256::from_be_bytes(to_be32(&inner)), memo())
        .value(U256::from(amount))
        .send()
        .await
        .expect("sends")
        .get_receipt()
        .await
        .expect("receipt");
    assert!(receipt.status());
    let event = receipt
        .inner
        .logs()
        .iter()
        .find_map(|l| l.log_decode::<ShieldedPool::Deposited>().ok())
        .expect("Deposited")
        .inner
        .data;
    assert_eq!(event.queueIndex, U256::ZERO);
    let want = nox_zk::note::commitment(amount, ark_bn254::Fr::from(0u64), inner).expect("commitment");
    assert_eq!(from_be32(&event.commitment.to_be_bytes::<32>()).expect("scalar"), want);

    // A deposit whose value does not match msg.value is refused (nothing queued).
    let refused =
        pool.deposit(Address::ZERO, U256::from(5u64), U256::from(1u64), memo()).value(U256::from(4u64)).send().await;
    assert!(refused.is_err(), "the node's gas estimation reports the revert");
    // So is a memo one byte short of a note (a non-standard wallet's, which nobody could open).
    let short = Bytes::from(vec![1u8; nox_wallet::memo::NOTE_LEN - 1]);
    let refused =
        pool.deposit(Address::ZERO, U256::from(5u64), U256::from(1u64), short).value(U256::from(5u64)).send().await;
    assert!(refused.is_err(), "a memo of another length is refused");
    assert_eq!(pool.nextQueueIndex().call().await.expect("nextQueueIndex"), U256::from(1u64));
}

/// `Transacted` as the pool emits it (ABI-encoded by the generated binding) decodes into the
/// wallet's `PoolEvent::Transacted`, every field in place; a word ≥ r and an amount ≥ 2^128
/// are refused rather than reduced or truncated.
#[test]
fn a_transacted_log_decodes_into_the_wallets_event() {
    use alloy::primitives::{B256, Log as PrimLog};
    use alloy::rpc::types::Log;
    use alloy::sol_types::SolEvent;
    use nox_chain::pool_sync;
    use nox_wallet::PoolEvent;

    let r = U256::from_be_bytes(to_be32(&(ark_bn254::Fr::from(0u64) - ark_bn254::Fr::from(1u64)))) + U256::from(1u64);
    let token = Address::repeat_byte(0x55);
    let event = |nullifier0: U256, fee: U256| ShieldedPool::Transacted {
        firstQueueIndex: U256::from(6u64),
        nullifiers: [nullifier0, U256::from(12u64)],
        commitments: [U256::from(21u64), U256::from(22u64)],
        notes: [Bytes::from(vec![0xa0; 104]), Bytes::from(vec![0xb1; 104])],
        asset: token,
        publicIn: U256::ZERO,
        publicOut: U256::from(500u64),
        fee,
        recipient: Address::repeat_byte(0x44),
        relayer: Address::repeat_byte(0x22),
        actionHash: B256::repeat_byte(0x33),
    };
    let log = |e: &ShieldedPool::Transacted| Log {
        inner: PrimLog { address: Address::repeat_byte(0x10), data: e.encode_log_data() },
        ..Default::default()
    };

    let decoded = pool_sync::decode(&log(&event(U256::from(11u64), U256::from(7u64)))).expect("decodes");
    let fr = |x: u64| ark_bn254::Fr::from(x);
    assert_eq!(
        decoded,
        Some(PoolEvent::Transacted {
            first_queue_index: 6,
            nullifiers: [fr(11), fr(12)],
            commitments: [fr(21), fr(22)],
            notes: [vec![0xa0; 104], vec![0xb1; 104]],
            asset: nox_zk::field::address(&token.0.0),
            public_in: 0,
            public_out: 500,
            fee: 7,
        })
    );
    assert!(pool_sync::decode(&log(&event(r, U256::from(7u64)))).is_err(), "a nullifier ≥ r");
    assert!(pool_sync::decode(&log(&event(U256::from(11u64), U256::from(1u64) << 128))).is_err(), "a fee ≥ 2^128");
}
