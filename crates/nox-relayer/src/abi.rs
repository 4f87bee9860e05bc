//! The contract ABI that relay requests carry, declared here so the wire format, admission and
//! pricing build without a chain client (the fuzz target links them alone). It mirrors
//! `contracts/src/BatchExecutor.sol` and `contracts/src/zk/ShieldedPool.sol`;
//! `tests/abi.rs` checks selectors and encodings against the bindings generated from the
//! committed artifacts, so the two cannot drift apart.
#![allow(missing_docs)]

alloy_sol_types::sol! {
    /// `BatchExecutor.Action`: call `target` with `data`, sending `value` wei and exactly
    /// `gas` gas (bound into the execution hash; the bundle reverts if the call could get less).
    #[derive(Debug, PartialEq, Eq)]
    struct Action {
        address target;
        uint256 value;
        uint256 gas;
        bytes data;
    }

    /// `BatchExecutor.Bundle`: a payment through the plugin `payment` of `fee` in `asset`
    /// (zero: ETH), and its action.
    #[derive(Debug, PartialEq, Eq)]
    struct Bundle {
        address payment;
        bytes paymentData;
        address asset;
        uint256 fee;
        Action action;
    }

    /// `ShieldedPool.Transaction` (docs/design/zk-payment.md §9): one 2-in/2-out private
    /// transaction — a proof and the public values the pool checks or recomputes before
    /// verifying it. A relayer's payment data is `abi.encode(Transaction)` with `publicIn = 0`;
    /// the wallet and the CLI encode it with this same struct.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Transaction {
        /// The Groth16 proof, EVM words (`a`, `b`, `c`).
        uint256[8] proof;
        /// A root in the pool's window.
        uint256 root;
        /// The two inputs' nullifiers (distinct, unspent).
        uint256[2] nullifiers;
        /// The two output commitments (both queued for insertion).
        uint256[2] commitments;
        /// One asset per transaction (0: ETH).
        address asset;
        /// Value pulled into the pool (a direct `transact` only; 0 in a payment).
        uint256 publicIn;
        /// Value sent to `recipient`.
        uint256 publicOut;
        /// The relayer's fee (0 in a direct `transact`).
        uint256 fee;
        /// Receiver of `publicOut`; zero iff `publicOut` is zero.
        address recipient;
        /// Unix second after which the pool refuses it.
        uint256 deadline;
        /// The two output-note ciphertexts (docs/spec/notes.md).
        bytes[2] notes;
    }

    /// `BatchExecutor.execute`: the only call a relayer sends.
    function execute(Bundle bundle) external payable returns (bool success);
}
