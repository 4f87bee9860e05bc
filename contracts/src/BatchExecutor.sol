// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IPayment} from "./interfaces/IPayment.sol";
import {RewardLedger} from "./RewardLedger.sol";

/// @title BatchExecutor
/// @notice Runs relayer-submitted bundles of [payment, action] (paper §5.3). The payment must
/// succeed or the bundle reverts; the action is a low-level call whose failure does not revert
/// the bundle, so the relayer is paid whether or not the user's action succeeds.
/// @dev The executor deploys its own RewardLedger and is that ledger's only crediter. It holds
/// no funds between bundles, has no owner and no privileges anywhere: an action runs with the
/// executor as msg.sender, which nobody should grant anything to. The target and calldata of
/// each action are exactly those its payer authorised, because the executor recomputes the
/// action hash it hands to the payment plugin from the action it then runs.
contract BatchExecutor is ReentrancyGuardTransient {
    /// @notice The user's action: call `target` with `data`, sending `value` wei.
    /// `value` comes from the relayer's msg.value; it is not part of the action hash (eq. 18).
    struct Action {
        address target;
        uint256 value;
        bytes data;
    }

    /// @notice One bundle: a payment through `payment` (a plugin) of `fee`, and the action it pays for.
    struct Bundle {
        IPayment payment;
        bytes paymentData;
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

    /// @notice Paper eq. (18): `raw = keccak256(target ‖ data ‖ fee)` (abi.encodePacked: 20-byte
    /// address, the calldata bytes, 32-byte big-endian fee) and `field = raw mod r_BN254`.
    /// Payments bind `raw`; the ZK payment (issue 12) binds `field`.
    function executionHash(address target, bytes calldata data, uint256 fee)
        public
        pure
        returns (bytes32 raw, uint256 field)
    {
        raw = keccak256(abi.encodePacked(target, data, fee));
        field = uint256(raw) % BN254_SCALAR_FIELD;
    }

    function _execute(Bundle calldata bundle) private returns (bool success) {
        Action calldata action = bundle.action;
        _checkAction(action, address(bundle.payment));
        (bytes32 actionHash,) = executionHash(action.target, action.data, bundle.fee);

        // Payment: must succeed, and must have moved exactly `fee` into the ledger.
        (address asset, uint256 paid) = bundle.payment.pay(bundle.paymentData, msg.sender, actionHash);
        if (paid != bundle.fee) revert FeeMismatch(bundle.fee, paid);
        if (paid != 0) ledger.credit(msg.sender, asset, paid);
        emit FeePaid(actionHash, msg.sender, bundle.payment, asset, paid);

        // Action: its failure is recorded, not propagated (paper §5.3).
        uint256 returnDataSize;
        bytes32 returnDataHash;
        (success, returnDataSize, returnDataHash) = _call(action);
        emit ActionExecuted(actionHash, msg.sender, action.target, success, returnDataSize, returnDataHash);
    }

    /// @dev The action's call. Its return data is never copied whole: only the first
    /// MAX_RETURN_DATA_HASHED bytes are hashed, so a target that returns (or reverts with) a huge
    /// buffer cannot make the executor run out of gas after the call and revert the relayer's
    /// payment ("return bomb").
    function _call(Action calldata action) private returns (bool success, uint256 size, bytes32 hash) {
        address target = action.target;
        uint256 value = action.value;
        bytes calldata data = action.data;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            calldatacopy(ptr, data.offset, data.length)
            success := call(gas(), target, value, ptr, data.length, 0, 0)
            size := returndatasize()
            let n := size
            if gt(n, MAX_RETURN_DATA_HASHED) { n := MAX_RETURN_DATA_HASHED }
            returndatacopy(ptr, 0, n)
            hash := keccak256(ptr, n)
        }
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
