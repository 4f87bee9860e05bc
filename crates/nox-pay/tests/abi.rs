//! The adaptor ABI declared in `nox_pay::adaptor` is the contract's: same selector and encoding
//! as the bindings generated from the committed artifact, and the same `swapHash`.

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::{SolCall, SolValue};
use nox_chain::defi::{ShieldedPool, SwapAdaptor};
use nox_pay::adaptor;

#[test]
fn swap_exact_in_and_swap_hash_match_the_artifact() {
    assert_eq!(adaptor::swap_exact_in_selector(), SwapAdaptor::swapExactInCall::SELECTOR);
    let words: [U256; 8] = std::array::from_fn(|i| U256::from(i as u64 + 1));
    let p = adaptor::Swap {
        tokenOut: Address::repeat_byte(1),
        amountOutMin: U256::from(2u64),
        swapDeadline: U256::from(3u64),
        recipient: Address::repeat_byte(4),
    };
    let theirs_p = SwapAdaptor::Swap {
        tokenOut: p.tokenOut,
        amountOutMin: p.amountOutMin,
        swapDeadline: p.swapDeadline,
        recipient: p.recipient,
    };
    let t = nox_relayer::abi::Transaction {
        proof: words,
        root: U256::from(10u64),
        nullifiers: [U256::from(11u64), U256::from(12u64)],
        commitments: [U256::from(13u64), U256::from(14u64)],
        asset: Address::ZERO,
        publicIn: U256::ZERO,
        publicOut: U256::from(15u64),
        fee: U256::ZERO,
        recipient: Address::repeat_byte(0xad),
        deadline: U256::from(16u64),
        notes: [Bytes::from(vec![1u8; 140]), Bytes::from(vec![2u8; 140])],
    };
    // The pool binding's Transaction, decoded from ours (same ABI).
    let theirs_t = ShieldedPool::Transaction::abi_decode(&t.abi_encode()).expect("same encoding");
    let ours = adaptor::swap_exact_in(&t, &p);
    assert_eq!(ours.to_vec(), SwapAdaptor::swapExactInCall { t: theirs_t, p: theirs_p.clone() }.abi_encode());
    assert_eq!(adaptor::decode_swap_exact_in(&ours), Some((t, p.clone())));
    let at = Address::repeat_byte(0xad);
    assert_eq!(adaptor::swap_hash(at, 31337, &p), nox_chain::defi::swap_hash(at, 31337, &theirs_p));
    assert_ne!(adaptor::swap_hash(at, 1, &p), adaptor::swap_hash(at, 31337, &p));
}
