//! The ABI declared in `nox_relayer::abi` is the contracts' ABI: same selector, same encodings
//! as the bindings generated from the committed artifacts (contracts/artifacts/).

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::{SolCall, SolValue};
use nox_chain::bindings::BatchExecutor;
use nox_chain::pool::ShieldedPool;
use nox_relayer::abi;

#[test]
fn execute_and_spend_match_the_artifacts() {
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
    let spend = abi::Spend {
        proof: words,
        root: U256::from(10u64),
        nullifier: U256::from(11u64),
        changeCommitment: U256::from(12u64),
        asset: Address::repeat_byte(3),
        fee: U256::from(13u64),
        deadline: U256::from(14u64),
    };
    let pool_spend = ShieldedPool::Spend {
        proof: words,
        root: spend.root,
        nullifier: spend.nullifier,
        changeCommitment: spend.changeCommitment,
        asset: spend.asset,
        fee: spend.fee,
        deadline: spend.deadline,
    };
    assert_eq!(spend.abi_encode(), pool_spend.abi_encode());
    assert!(abi::executeCall::abi_decode_returns(&true.abi_encode()).unwrap());
}
