// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title IPayment — the payment half of a BatchExecutor bundle
/// @notice A payment plugin moves a bundle's fee into the executor's RewardLedger, after checking
/// that whoever pays authorised exactly this fee, for exactly this relayer and exactly this action.
/// The plain ERC-20 payment (`Erc20Payment`) checks an EIP-712 signature of the payer; the ZK
/// gas payment (issue 12) checks a proof whose public inputs include the same values.
///
/// Contract for implementers (plugins are permissionless: anyone may deploy one and name it in a
/// bundle; contracts/README.md, "Payment plugins"):
/// - Only the executor may call `pay`, and only during the payment phase it opened for this
///   plugin: `BatchExecutor.paymentInProgress()` must return (this plugin, `relayer`,
///   `actionHash`). Actions also run with the executor as msg.sender; without this check an
///   action (anyone's bundle) could spend a captured authorisation for relayer R and action H
///   outside R's bundle for H (issue 29, item 1).
/// - `relayer` is the account that submitted the bundle and `actionHash` was recomputed by the
///   executor from the action it is about to run (`BatchExecutor.executionHash`: target,
///   calldata, fee and the action's gas): an implementation must bind its authorisation to
///   both, and to the fee and asset.
/// - Before returning, exactly `amount` of `asset` (address(0) = native ETH) must have arrived at
///   the ledger, and (`asset`, `amount`) must be the bundle's (asset, fee). The executor measures
///   the ledger's balance of the bundle's asset around `pay` and credits only what arrived, so a
///   plugin that lies about the amount makes the whole bundle revert (`FeeNotReceived`); the
///   ledger's solvency check stays as a second line.
/// - Revert on any failure: a bundle whose payment fails does not run.
interface IPayment {
    function pay(bytes calldata payment, address relayer, bytes32 actionHash)
        external
        returns (address asset, uint256 amount);
}
