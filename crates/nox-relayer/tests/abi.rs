//! The ABI declared in `nox_relayer::abi` is the contracts' ABI: same selector, same encodings
//! as the bindings generated from the committed artifacts (contracts/artifacts/).

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::{SolCall, SolValue};
use nox_chain::bindings::BatchExecutor;
use nox_chain::pool::ShieldedPool;
use nox_relayer::abi;

#[test]
fn execute_and_transaction_match_the_artifacts() {
    assert_eq!(abi::executeCall::SELECTOR, BatchExecutor::executeCall::SELECTOR);
    let ours = abi::Bundle {
        payment: Address::repeat_byte(1),
        paymentData: Bytes::from(vec![9; 70]),
        asset: Address::repeat_byte(6),
        fee: U256::from(12345u64),
        action: abi::Action {
            target: Address::repeat_byte(2),
            value: U256::from(3u64),
            gas: U256::from(77_000u64),
            data: Bytes::from(vec![4, 5]),
        },
    };
    let theirs = BatchExecutor::Bundle {
        payment: ours.payment,
        paymentData: ours.paymentData.clone(),
        asset: ours.asset,
        fee: ours.fee,
        action: BatchExecutor::Action {
            target: ours.action.target,
            value: ours.action.value,
            gas: ours.action.gas,
            data: ours.action.data.clone(),
        },
    };
    assert_eq!(
        abi::executeCall { bundle: ours }.abi_encode(),
        BatchExecutor::executeCall { bundle: theirs }.abi_encode()
    );
    let words: [U256; 8] = std::array::from_fn(|i| U256::from(i as u64 + 1));
    let t = abi::Transaction {
        proof: words,
        root: U256::from(10u64),
        nullifiers: [U256::from(11u64), U256::from(12u64)],
        commitments: [U256::from(13u64), U256::from(14u64)],
        asset: Address::repeat_byte(3),
        publicIn: U256::from(15u64),
        publicOut: U256::from(16u64),
        fee: U256::from(17u64),
        recipient: Address::repeat_byte(4),
        deadline: U256::from(18u64),
        notes: [Bytes::from(vec![1u8; 33]), Bytes::from(vec![2u8; 120])],
    };
    let pool_t = ShieldedPool::Transaction {
        proof: words,
        root: t.root,
        nullifiers: t.nullifiers,
        commitments: t.commitments,
        asset: t.asset,
        publicIn: t.publicIn,
        publicOut: t.publicOut,
        fee: t.fee,
        recipient: t.recipient,
        deadline: t.deadline,
        notes: t.notes.clone(),
    };
    // `abi.encode(Transaction)` as the pool's `pay` decodes it, and the struct inside `transact`.
    assert_eq!(t.abi_encode(), pool_t.abi_encode());
    assert_eq!(abi::Transaction::abi_decode(&pool_t.abi_encode()).unwrap(), t);
    assert!(abi::executeCall::abi_decode_returns(&true.abi_encode()).unwrap());
}
