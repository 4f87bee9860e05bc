// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title IPayment — the payment half of a BatchExecutor bundle
/// @notice A payment plugin moves a bundle's fee into the executor's RewardLedger, after checking
/// that whoever pays authorised exactly this fee, for exactly this relayer and exactly this action.
/// The plain ERC-20 payment (`Erc20Payment`) checks an EIP-712 signature of the payer; the ZK
/// gas payment (issue 12) checks a proof whose public inputs include the same values.
///
/// Contract for implementers:
/// - Only the executor may call `pay` (otherwise a captured authorisation could be spent without
///   the action it pays for).
/// - `relayer` is the account that submitted the bundle and `actionHash` was recomputed by the
///   executor from the action it is about to run (`BatchExecutor.executionHash`): an
///   implementation must bind its authorisation to both, and to the fee.
/// - Before returning, exactly `amount` of `asset` (address(0) = native ETH) must have arrived at
///   the ledger. The ledger refuses to credit more than its unaccounted balance, so a plugin that
///   lies about the amount makes the whole bundle revert.
/// - Revert on any failure: a bundle whose payment fails does not run.
interface IPayment {
    function pay(bytes calldata payment, address relayer, bytes32 actionHash)
        external
        returns (address asset, uint256 amount);
}
