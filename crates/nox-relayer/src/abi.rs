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

    /// `ShieldedPool.Spend`: a proof and the public values it states.
    #[derive(Debug, PartialEq, Eq)]
    struct Spend {
        uint256[8] proof;
        uint256 root;
        uint256 nullifier;
        uint256 changeCommitment;
        address asset;
        uint256 fee;
        uint256 deadline;
    }

    /// `BatchExecutor.execute`: the only call a relayer sends.
    function execute(Bundle bundle) external payable returns (bool success);
}
