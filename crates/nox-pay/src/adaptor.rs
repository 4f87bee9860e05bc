//! The swap adaptor (`contracts/src/defi/SwapAdaptor.sol`): a withdrawal transaction from the
//! shielded pool to the adaptor (`publicOut` to the adaptor, bound to `swapHash(p)` as its
//! execution hash), which the adaptor submits itself (`ShieldedPool.transact(t, swapHash(p))`,
//! only the recipient may submit a bound withdrawal) and then swaps on Uniswap v2 — or, with
//! `p.tokenOut` equal to the withdrawn asset, delivers as it is. Sent as the action of a paid
//! bundle, the user appears nowhere: the withdrawal is one proof over the pool's notes, the gas is
//! a second transaction paying the relayer (from other notes), the output goes to a fresh address.
//!
//! A plain withdrawal needs no adaptor: one payment-only transaction with `publicOut` to the
//! recipient and the fee to the relayer ([`crate::Payment`] with [`crate::Action::none`]).
//!
//! The ABI is declared here (no chain client needed); `tests/abi.rs` checks it against the
//! bindings generated from the committed artifact.
#![allow(missing_docs)]

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_sol_types::SolValue;
use nox_relayer::abi::Transaction;
use nox_wallet::{PreparedTransaction, TxRequest};

use crate::bundle::{Action, asset_word, transaction_struct};

alloy_sol_types::sol! {
    /// `SwapAdaptor.Swap`: what to receive and where. ETH is `address(0)`.
    #[derive(Debug, PartialEq, Eq)]
    struct Swap {
        address tokenOut;
        uint256 amountOutMin;
        uint256 swapDeadline;
        address recipient;
    }
}

/// The signature of `SwapAdaptor.swapExactIn(ShieldedPool.Transaction t, Swap p)`; its arguments
/// are encoded with the relayer's own `Transaction` ([`nox_relayer::abi::Transaction`]), so the
/// pool's struct is declared once.
pub const SWAP_EXACT_IN: &str = "swapExactIn((uint256[8],uint256,uint256[2],uint256[2],address,uint256,uint256,uint256,address,uint256,bytes[2]),(address,uint256,uint256,address))";

/// The selector of [`SWAP_EXACT_IN`].
pub fn swap_exact_in_selector() -> [u8; 4] {
    let h = keccak256(SWAP_EXACT_IN);
    [h[0], h[1], h[2], h[3]]
}

/// `swapExactIn(t, p)` calldata.
pub fn swap_exact_in(t: &Transaction, p: &Swap) -> Bytes {
    let mut data = swap_exact_in_selector().to_vec();
    data.extend((t.clone(), p.clone()).abi_encode_params());
    Bytes::from(data)
}

/// The arguments of `swapExactIn` calldata, or `None` if it is not exactly that.
pub fn decode_swap_exact_in(data: &[u8]) -> Option<(Transaction, Swap)> {
    let (selector, args) = data.split_at_checked(4)?;
    if selector != swap_exact_in_selector() {
        return None;
    }
    <(Transaction, Swap)>::abi_decode_params_validate(args).ok()
}

/// `SwapAdaptor.swapHash(p)` off chain: `keccak256(abi.encode(adaptor, chainid, tokenOut,
/// amountOutMin, swapDeadline, recipient))`.
pub fn swap_hash(adaptor: Address, chain_id: u64, p: &Swap) -> B256 {
    keccak256((adaptor, U256::from(chain_id), p.tokenOut, p.amountOutMin, p.swapDeadline, p.recipient).abi_encode())
}

/// A withdrawal through adaptor `adaptor` on `chain_id`'s pool `pool`: `amount` of `asset`,
/// delivered as `p` says.
#[derive(Clone, Debug)]
pub struct Withdrawal {
    /// The adaptor's address.
    pub adaptor: Address,
    /// The chain.
    pub chain_id: u64,
    /// The shielded pool.
    pub pool: Address,
    /// The withdrawn asset (ETH: `Address::ZERO`).
    pub asset: Address,
    /// The withdrawn amount.
    pub amount: u128,
    /// Output token, minimum, swap deadline and recipient.
    pub swap: Swap,
    /// Unix second after which the pool refuses the withdrawal.
    pub deadline: u64,
}

impl Withdrawal {
    /// The transaction the wallet must prove: `publicOut = amount` to the adaptor, bound to
    /// `swapHash(p)`, no relayer and no fee (the adaptor submits it directly), the change back to
    /// the sender. Only the adaptor may submit a withdrawal bound to a nonzero hash, and the hash
    /// fixes every field of `p`: a copy taken from the mempool can only do what the user asked.
    pub fn request(&self) -> TxRequest {
        TxRequest {
            asset: asset_word(self.asset),
            outputs: Vec::new(),
            public_in: 0,
            public_out: self.amount,
            fee: 0,
            recipient: self.adaptor.0.0,
            relayer: [0; 20],
            execution_hash: swap_hash(self.adaptor, self.chain_id, &self.swap).0,
            chain_id: self.chain_id,
            pool: self.pool.0.0,
            deadline: self.deadline,
            avoid: Vec::new(),
        }
    }

    /// The bundle's action: `adaptor.swapExactIn(t, p)` with the proven withdrawal, given
    /// exactly `gas` gas (bound into the payment; the withdrawal's proof check and the swap
    /// must fit in it).
    pub fn action(&self, prepared: &PreparedTransaction, proof: &[u8; 256], gas: u64) -> Action {
        let t = transaction_struct(proof, prepared);
        Action { target: self.adaptor, data: swap_exact_in(&t, &self.swap), gas }
    }

    /// The length of [`Self::action`]'s calldata, known before anything is proved or swapped:
    /// the ABI fixes it (every field a word, each note ciphertext [`nox_wallet::memo::NOTE_LEN`]
    /// bytes). The client's own figure of the bundle's L1 data fee is computed on it.
    pub fn action_data_len() -> usize {
        let note = Bytes::from(vec![0u8; nox_wallet::memo::NOTE_LEN]);
        let t = Transaction {
            proof: [U256::ZERO; 8],
            root: U256::ZERO,
            nullifiers: [U256::ZERO; 2],
            commitments: [U256::ZERO; 2],
            asset: Address::ZERO,
            publicIn: U256::ZERO,
            publicOut: U256::ZERO,
            fee: U256::ZERO,
            recipient: Address::ZERO,
            deadline: U256::ZERO,
            notes: [note.clone(), note],
        };
        let swap = Swap {
            tokenOut: Address::ZERO,
            amountOutMin: U256::ZERO,
            swapDeadline: U256::ZERO,
            recipient: Address::ZERO,
        };
        swap_exact_in(&t, &swap).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The length the client prices the data fee on before proving is the length of the action it
    /// sends, whatever the values (all fixed-size ABI words; notes of fixed length).
    #[test]
    fn the_action_length_is_known_before_proving() {
        let note = Bytes::from(vec![0xffu8; nox_wallet::memo::NOTE_LEN]);
        let t = Transaction {
            proof: [U256::MAX; 8],
            root: U256::MAX,
            nullifiers: [U256::MAX; 2],
            commitments: [U256::MAX; 2],
            asset: Address::repeat_byte(0xff),
            publicIn: U256::MAX,
            publicOut: U256::MAX,
            fee: U256::MAX,
            recipient: Address::repeat_byte(0xff),
            deadline: U256::MAX,
            notes: [note.clone(), note],
        };
        let swap = Swap {
            tokenOut: Address::repeat_byte(1),
            amountOutMin: U256::MAX,
            swapDeadline: U256::from(1_800_000_000u64),
            recipient: Address::repeat_byte(2),
        };
        assert_eq!(swap_exact_in(&t, &swap).len(), Withdrawal::action_data_len());
        assert!(Withdrawal::action_data_len() > 4 + 20 * 32, "a whole transaction and a swap");
    }
}
