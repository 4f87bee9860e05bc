// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IPayment} from "./interfaces/IPayment.sol";
import {RewardLedger} from "./RewardLedger.sol";

/// @title BatchExecutor
/// @notice Runs relayer-submitted bundles of [payment, action] (paper §5.3). The payment must
/// succeed or the bundle reverts; the action is a low-level call whose failure does not revert
/// the bundle, so the relayer is paid whether or not the user's action succeeds — provided the
/// action was given the gas its payer bound (`Action.gas`), or the whole bundle reverts.
/// @dev The executor deploys its own RewardLedger and is that ledger's only crediter. It holds
/// no funds between bundles, has no owner and no privileges anywhere: an action runs with the
/// executor as msg.sender, which nobody should grant anything to. The target, calldata and gas
/// of each action are exactly those its payer authorised, because the executor recomputes the
/// action hash it hands to the payment plugin from the action it then runs.
///
/// Payment plugins are permissionless (contracts/README.md, "Payment plugins"): anyone may name
/// any contract as a bundle's plugin. Two rules keep that safe:
/// - **Payment phase.** While (and only while) a plugin's `pay` runs, the executor records in
///   transient storage which plugin it is paying through, for which relayer and action hash
///   (`paymentInProgress`). The shipped plugins accept a call only from the executor *and* only
///   when that record names them, the relayer and the action hash they were handed; the record
///   is cleared before the action runs, so an action (or any other plugin) that calls a shipped
///   plugin with a captured authorisation is refused.
/// - **Measured credit.** The ledger credits what the executor measured arriving at the ledger
///   during the plugin's `pay`, in the asset the bundle states, and that must equal the bundle's
///   fee and the plugin's answer. A plugin can therefore credit only funds it delivered itself,
///   never a donation or anything else the ledger holds uncredited.
contract BatchExecutor is ReentrancyGuardTransient {
    /// @notice The user's action: call `target` with `data`, sending `value` wei and exactly `gas`
    /// gas. `value` comes from the relayer's msg.value; it is not part of the action hash (eq. 18).
    /// `gas` is: the bundle reverts unless the call could be given all of it (63/64 rule).
    struct Action {
        address target;
        uint256 value;
        uint256 gas;
        bytes data;
    }

    /// @notice One bundle: a payment through `payment` (a plugin) of `fee` in `asset`
    /// (address(0) = native ETH), and the action it pays for.
    struct Bundle {
        IPayment payment;
        bytes paymentData;
        address asset;
        uint256 fee;
        Action action;
    }

    /// @notice Order of the BN254 scalar field, the field of the ZK circuits' public inputs.
    uint256 public constant BN254_SCALAR_FIELD =
        21888242871839275222246405745257275088548364400416034343698204186575808495617;
    /// @notice Return data beyond this many bytes is not hashed (see _call).
    uint256 public constant MAX_RETURN_DATA_HASHED = 4096;
    /// @dev `transferFrom(address,address,uint256)`: never a valid action (see _checkAction).
    bytes4 private constant TRANSFER_FROM_SELECTOR = 0x23b872dd;
    /// @dev Transient slots of the payment in progress: keccak256("nox.BatchExecutor.payment.plugin")
    /// and the next two words (relayer, action hash).
    uint256 private constant PAYMENT_SLOT = 0x76259a790c836dbb6be257129389308d9e5f16dbf48be1526acfc15b6d0c10f7;

    /// @notice The ledger that every fee is credited to.
    RewardLedger public immutable ledger;

    event FeePaid(
        bytes32 indexed actionHash, address indexed relayer, IPayment indexed payment, address asset, uint256 fee
    );
    /// @notice `returnDataHash` = keccak256 of the first min(returnDataSize, MAX_RETURN_DATA_HASHED)
    /// bytes of the action's return (or revert) data.
    event ActionExecuted(
        bytes32 indexed actionHash,
        address indexed relayer,
        address indexed target,
        bool success,
        uint256 returnDataSize,
        bytes32 returnDataHash
    );

    error ForbiddenTarget(address target);
    error ForbiddenSelector();
    error ValueMismatch(uint256 sent, uint256 needed);
    error FeeMismatch(uint256 expected, uint256 paid);
    error AssetMismatch(address expected, address paid);
    error FeeNotReceived(uint256 expected, uint256 received);
    error ActionGasNotGiven(uint256 gas);
    error EmptyBatch();

    constructor() {
        ledger = new RewardLedger(address(this));
    }

    /// @notice Run one bundle; msg.value must equal the action's value. Returns whether the
    /// action succeeded (the fee is credited either way).
    function execute(Bundle calldata bundle) external payable nonReentrant returns (bool success) {
        if (msg.value != bundle.action.value) revert ValueMismatch(msg.value, bundle.action.value);
        return _execute(bundle);
    }

    /// @notice Run several bundles in order; msg.value must equal the sum of their action
    /// values. Any failing payment reverts the whole batch; failing actions do not.
    function executeBatch(Bundle[] calldata bundles) external payable nonReentrant returns (bool[] memory success) {
        uint256 n = bundles.length;
        if (n == 0) revert EmptyBatch();
        uint256 needed;
        for (uint256 i = 0; i < n; ++i) {
            needed += bundles[i].action.value;
        }
        if (msg.value != needed) revert ValueMismatch(msg.value, needed);
        success = new bool[](n);
        for (uint256 i = 0; i < n; ++i) {
            success[i] = _execute(bundles[i]);
        }
    }

    /// @notice Paper eq. (18) with the action's gas: `raw = keccak256(target ‖ data ‖ fee ‖ gas)`
    /// (abi.encodePacked: 20-byte address, the calldata bytes, 32-byte big-endian fee, 32-byte
    /// big-endian gas) and `field = raw mod r_BN254`. Payments bind `raw`; the ZK payment
    /// (issue 12) binds `field`.
    function executionHash(address target, bytes calldata data, uint256 fee, uint256 gas)
        public
        pure
        returns (bytes32 raw, uint256 field)
    {
        raw = keccak256(abi.encodePacked(target, data, fee, gas));
        field = uint256(raw) % BN254_SCALAR_FIELD;
    }

    /// @notice The payment in progress: the plugin whose `pay` the executor is running, the
    /// relayer and the action hash it handed to it; all zero outside a plugin's `pay` (so during
    /// every action). A plugin accepts a call only when this names it and what it was handed.
    function paymentInProgress() external view returns (address plugin, address relayer, bytes32 actionHash) {
        assembly ("memory-safe") {
            plugin := tload(PAYMENT_SLOT)
            relayer := tload(add(PAYMENT_SLOT, 1))
            actionHash := tload(add(PAYMENT_SLOT, 2))
        }
    }

    function _execute(Bundle calldata bundle) private returns (bool success) {
        Action calldata action = bundle.action;
        IPayment payment = bundle.payment;
        _checkAction(action, address(payment));
        (bytes32 actionHash,) = executionHash(action.target, action.data, bundle.fee, action.gas);

        // Payment: must succeed, must say it paid exactly (asset, fee), and exactly `fee` of
        // `asset` must have arrived at the ledger during it. Only that measured amount is credited.
        address asset = bundle.asset;
        uint256 before = _ledgerHolds(asset);
        _setPayment(address(payment), msg.sender, actionHash);
        (address paidAsset, uint256 paid) = payment.pay(bundle.paymentData, msg.sender, actionHash);
        _setPayment(address(0), address(0), bytes32(0));
        if (paidAsset != asset) revert AssetMismatch(asset, paidAsset);
        if (paid != bundle.fee) revert FeeMismatch(bundle.fee, paid);
        uint256 afterPay = _ledgerHolds(asset);
        uint256 received = afterPay > before ? afterPay - before : 0;
        if (received != paid) revert FeeNotReceived(paid, received);
        if (received != 0) ledger.credit(msg.sender, asset, received);
        emit FeePaid(actionHash, msg.sender, payment, asset, received);

        // Action: its failure is recorded, not propagated (paper §5.3).
        uint256 returnDataSize;
        bytes32 returnDataHash;
        (success, returnDataSize, returnDataHash) = _call(action);
        emit ActionExecuted(actionHash, msg.sender, action.target, success, returnDataSize, returnDataHash);
    }

    /// @dev The action's call, given exactly `action.gas`. If less than `action.gas / 63` gas is
    /// left after it, the call may have been given less than `action.gas` (EIP-150 caps a call
    /// at 63/64 of what is left), so the relayer's gas limit starved it: the whole bundle
    /// reverts and nothing is credited (OpenZeppelin ERC2771Forwarder._checkForwardedGas).
    /// Its return data is never copied whole: only the first MAX_RETURN_DATA_HASHED bytes are
    /// hashed, so a target that returns (or reverts with) a huge buffer cannot make the executor
    /// run out of gas after the call and revert the relayer's payment ("return bomb").
    /// The empty action (target address(0), no data, no value: a payment-only bundle, e.g. a
    /// private transfer paid through a relayer) is not called: a call to address(0) with nothing
    /// runs no code and returns success with no data, which is exactly what is reported, so only
    /// the cold account access and the call are saved. Its `gas` is still bound in the action
    /// hash; nothing runs that could be starved of it.
    function _call(Action calldata action) private returns (bool success, uint256 size, bytes32 hash) {
        address target = action.target;
        uint256 value = action.value;
        uint256 forwarded = action.gas;
        bytes calldata data = action.data;
        if (target == address(0) && data.length == 0 && value == 0) return (true, 0, keccak256(""));
        uint256 left;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            calldatacopy(ptr, data.offset, data.length)
            success := call(forwarded, target, value, ptr, data.length, 0, 0)
            left := gas()
            size := returndatasize()
            let n := size
            if gt(n, MAX_RETURN_DATA_HASHED) { n := MAX_RETURN_DATA_HASHED }
            returndatacopy(ptr, 0, n)
            hash := keccak256(ptr, n)
        }
        if (left < forwarded / 63) revert ActionGasNotGiven(forwarded);
    }

    function _setPayment(address plugin, address relayer, bytes32 actionHash) private {
        assembly ("memory-safe") {
            tstore(PAYMENT_SLOT, plugin)
            tstore(add(PAYMENT_SLOT, 1), relayer)
            tstore(add(PAYMENT_SLOT, 2), actionHash)
        }
    }

    /// @dev What the ledger holds of `asset` (address(0): ETH).
    function _ledgerHolds(address asset) private view returns (uint256) {
        return asset == address(0) ? address(ledger).balance : IERC20(asset).balanceOf(address(ledger));
    }

    /// @dev Targets that could turn the executor's position against someone are refused:
    /// the ledger (only the executor may credit it), the executor itself, the payment plugin
    /// (which trusts calls from the executor), and any `transferFrom` call (the executor is
    /// never a legitimate spender; this protects anyone who approved it by mistake).
    function _checkAction(Action calldata action, address payment) private view {
        address target = action.target;
        if (target == address(ledger) || target == address(this) || target == payment) {
            revert ForbiddenTarget(target);
        }
        if (action.data.length >= 4 && bytes4(action.data[:4]) == TRANSFER_FROM_SELECTOR) revert ForbiddenSelector();
    }
}
