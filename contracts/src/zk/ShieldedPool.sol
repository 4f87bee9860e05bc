// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IPayment} from "../interfaces/IPayment.sol";
import {BatchExecutor} from "../BatchExecutor.sol";
import {IPoseidon3} from "./Poseidon.sol";

/// @notice The Groth16 verifier of the gas-payment circuit (generated: GasPaymentVerifier.sol).
interface ISpendVerifier {
    function verifyProof(uint256[8] calldata proof, uint256[10] calldata input) external view returns (bool);
}

/// @notice The Groth16 verifier of the batch-insertion circuit (generated: InsertVerifier.sol).
interface IInsertVerifier {
    function verifyProof(uint256[8] calldata proof, uint256[19] calldata input) external view returns (bool);
}

/// @title ShieldedPool — notes, nullifiers and the anonymous gas payment (issue 12)
/// @notice A pool of notes in a depth-32 Poseidon Merkle tree (docs/design/zk-payment.md).
/// - `deposit` takes ETH or an ERC-20 and queues the note commitment
///   `Poseidon(amount, asset, inner)`, computed here from what actually arrived.
/// - `insertBatch` (anyone) moves the next ≤ 16 queued commitments into the tree as one aligned
///   subtree, checked by a Groth16 proof, so the chain never hashes a Merkle path.
/// - `pay` (the IPayment plugin, only from the BatchExecutor) spends a note with a gas-payment
///   proof bound to the relayer that submitted the bundle, the action hash the executor
///   recomputed, the fee, the asset, this chain, this pool and a deadline; the fee goes to the
///   executor's ledger; the change note is queued.
/// - `withdraw` spends a note to any address, bound to an action hash (nonzero: only the
///   recipient itself may submit it, so an adaptor can withdraw-and-act atomically).
/// @dev No owner, no admin, no upgrade. A root is accepted while fewer than `rootWindow` newer
/// roots exist (O(1): a sequence number per root). Every value the proof speaks about is fed to
/// the verifier by this contract from its own context or checked against its own state, never
/// taken on trust from the caller; Groth16 proofs are malleable, so nothing keys on proof bytes:
/// the nullifier is the replay guard.
contract ShieldedPool is IPayment, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice A spend: the proof and the public values the caller states (each checked).
    /// `fee` is the fee of a payment or the amount of a withdrawal.
    struct Spend {
        uint256[8] proof;
        uint256 root;
        uint256 nullifier;
        uint256 changeCommitment;
        address asset;
        uint256 fee;
        uint256 deadline;
    }

    /// @notice Order of the BN254 scalar field: every tree value and public input is below it.
    uint256 public constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;
    /// @notice Depth of the note tree.
    uint256 public constant TREE_DEPTH = 32;
    /// @notice Leaves per inserted batch (an aligned subtree of height 4).
    uint256 public constant BATCH_SIZE = 16;
    /// @notice Values are below 2^128 (the circuit's range checks).
    uint256 public constant MAX_VALUE = 1 << 128;
    /// @notice A withdrawal's recipient input is `WITHDRAW_DOMAIN + uint160(recipient)`: never a
    /// payment's relayer input (`< 2^160`), so neither proof can be used as the other.
    uint256 public constant WITHDRAW_DOMAIN = 1 << 160;
    /// @notice Longest memo (the note ciphertext for the owner's viewing key) a deposit publishes.
    uint256 public constant MAX_MEMO = 256;
    /// @notice Root of the empty depth-32 tree (`nox_zk::merkle::zeros()[32]`).
    uint256 public constant EMPTY_ROOT = 0x2f68a1c58e257e42a17a6c61dff5551ed560b9922ab119d5ac8e184c9734ead9;

    ISpendVerifier public immutable spendVerifier;
    IInsertVerifier public immutable insertVerifier;
    /// @notice Poseidon with three inputs (npm poseidon-solidity's PoseidonT4, deployed apart).
    IPoseidon3 public immutable poseidon;
    /// @notice The only caller of `pay`.
    address public immutable executor;
    /// @notice Where payments go: the executor's reward ledger.
    address public immutable ledger;
    /// @notice How many roots are accepted: the current one and `rootWindow - 1` before it.
    uint256 public immutable rootWindow;

    /// @notice The tree's current root.
    uint256 public currentRoot;
    /// @notice Number of roots the tree has had (the empty root is number 1).
    uint256 public rootCount;
    /// @notice Sequence number of each root the tree has had (0: never).
    mapping(uint256 root => uint256) public rootSeq;
    /// @notice Leaf slots in the tree (a multiple of 16).
    uint256 public nextLeafIndex;
    /// @notice Queue index the next queued commitment gets.
    uint256 public nextQueueIndex;
    /// @notice Queue index of the first commitment not yet in the tree.
    uint256 public firstUninsertedQueueIndex;
    mapping(uint256 queueIndex => uint256) private _queue;
    mapping(uint256 nullifier => bool) private _spent;

    event Deposited(uint256 indexed queueIndex, uint256 commitment, address indexed asset, uint256 amount, bytes memo);
    event Spent(
        uint256 indexed nullifier,
        uint256 indexed queueIndex,
        uint256 changeCommitment,
        address asset,
        uint256 fee,
        address recipient,
        bytes32 actionHash
    );
    event BatchInserted(uint256 indexed startLeafIndex, uint256 firstQueueIndex, uint256 count, uint256 newRoot);

    error ZeroAddress();
    error BadRootWindow();
    error NotExecutor();
    error NotInPaymentPhase();
    error CountMismatch(uint256 expected, uint256 count);
    error BadAmount(uint256 amount);
    error ValueMismatch(uint256 sent, uint256 expected);
    error NotAScalar(uint256 value);
    error MemoTooLong(uint256 length);
    error TransferShortfall(uint256 received, uint256 expected);
    error NothingQueued();
    error TreeFull();
    error InvalidProof();
    error UnknownRoot(uint256 root);
    error Expired(uint256 deadline);
    error AlreadySpent(uint256 nullifier);
    error NotRecipient(address caller, address recipient);

    constructor(
        ISpendVerifier spendVerifier_,
        IInsertVerifier insertVerifier_,
        IPoseidon3 poseidon_,
        address executor_,
        uint256 rootWindow_
    ) {
        if (
            address(spendVerifier_) == address(0) || address(insertVerifier_) == address(0)
                || address(poseidon_) == address(0) || executor_ == address(0)
        ) revert ZeroAddress();
        if (rootWindow_ == 0) revert BadRootWindow();
        spendVerifier = spendVerifier_;
        insertVerifier = insertVerifier_;
        poseidon = poseidon_;
        executor = executor_;
        ledger = address(BatchExecutor(executor_).ledger());
        rootWindow = rootWindow_;
        currentRoot = EMPTY_ROOT;
        rootCount = 1;
        rootSeq[EMPTY_ROOT] = 1;
    }

    // ---------------------------------------------------------------------------------------
    // Deposits and insertion

    /// @notice Deposit `amount` of `asset` (address(0): ETH, sent as msg.value) as a note
    /// `Poseidon(amount, asset, inner)` where `inner = Poseidon(owner, blinding)`; `memo` is the
    /// note's ciphertext for the owner's viewing key (docs/spec/notes.md), published, not checked.
    function deposit(address asset, uint256 amount, uint256 inner, bytes calldata memo)
        external
        payable
        nonReentrant
        returns (uint256 queueIndex)
    {
        if (amount == 0 || amount >= MAX_VALUE) revert BadAmount(amount);
        if (inner >= R) revert NotAScalar(inner);
        if (memo.length > MAX_MEMO) revert MemoTooLong(memo.length);
        if (asset == address(0)) {
            if (msg.value != amount) revert ValueMismatch(msg.value, amount);
        } else {
            if (msg.value != 0) revert ValueMismatch(msg.value, 0);
            IERC20 token = IERC20(asset);
            uint256 before = token.balanceOf(address(this));
            token.safeTransferFrom(msg.sender, address(this), amount);
            uint256 received = token.balanceOf(address(this)) - before;
            if (received != amount) revert TransferShortfall(received, amount);
        }
        uint256 commitment = poseidon.hash([amount, uint256(uint160(asset)), inner]);
        queueIndex = _enqueue(commitment);
        emit Deposited(queueIndex, commitment, asset, amount, memo);
    }

    /// @notice Insert the next min(queued, 16) commitments, then zeros, as the aligned subtree at
    /// `nextLeafIndex`, moving the root to `newRoot`; `proof` shows that `newRoot` is exactly the
    /// current tree with those 16 leaves in those slots. Anyone may call it. `expectedCount` is
    /// the number of commitments the proof covers: if another deposit has been queued since the
    /// proof was made (so this call would insert a different number), the call is refused
    /// before the proof is verified, for a few thousand gas instead of ~300 k.
    function insertBatch(uint256[8] calldata proof, uint256 newRoot, uint256 expectedCount) external nonReentrant {
        uint256 first = firstUninsertedQueueIndex;
        uint256 count = nextQueueIndex - first;
        if (count == 0) revert NothingQueued();
        if (count > BATCH_SIZE) count = BATCH_SIZE;
        if (count != expectedCount) revert CountMismatch(expectedCount, count);
        uint256 start = nextLeafIndex;
        if (start + BATCH_SIZE > 1 << TREE_DEPTH) revert TreeFull();
        if (newRoot >= R) revert NotAScalar(newRoot);

        uint256[19] memory input;
        input[0] = currentRoot;
        input[1] = newRoot;
        input[2] = start;
        for (uint256 i = 0; i < count; ++i) {
            input[3 + i] = _queue[first + i];
            delete _queue[first + i];
        }
        if (!insertVerifier.verifyProof(proof, input)) revert InvalidProof();

        firstUninsertedQueueIndex = first + count;
        nextLeafIndex = start + BATCH_SIZE;
        _setRoot(newRoot);
        emit BatchInserted(start, first, count, newRoot);
    }

    // ---------------------------------------------------------------------------------------
    // Spends

    /// @inheritdoc IPayment
    /// @dev Only the executor, and only inside the payment phase of a bundle paying through this
    /// pool for this relayer and action hash (`BatchExecutor.paymentInProgress`): an action, whose
    /// calls also come from the executor, cannot spend a captured proof. `payment` is `abi.encode(Spend)`. The proof's relayer input is `relayer` (the
    /// bundle's submitter, passed by the executor) and its execution-hash input is
    /// `actionHash mod r` (recomputed by the executor from the action it runs).
    function pay(bytes calldata payment, address relayer, bytes32 actionHash)
        external
        nonReentrant
        returns (address asset, uint256 amount)
    {
        if (msg.sender != executor) revert NotExecutor();
        (address plugin, address r, bytes32 h) = BatchExecutor(executor).paymentInProgress();
        if (plugin != address(this) || r != relayer || h != actionHash) revert NotInPaymentPhase();
        Spend memory s = abi.decode(payment, (Spend));
        _spend(s, uint256(uint160(relayer)), relayer, actionHash);
        _send(s.asset, ledger, s.fee);
        return (s.asset, s.fee);
    }

    /// @notice Withdraw `s.fee` of `s.asset` to `recipient`, bound to `actionHash` (zero for a
    /// plain withdrawal, which anyone may submit; otherwise only `recipient` may).
    function withdraw(Spend calldata s, address recipient, bytes32 actionHash) external nonReentrant {
        if (recipient == address(0)) revert ZeroAddress();
        if (actionHash != bytes32(0) && msg.sender != recipient) revert NotRecipient(msg.sender, recipient);
        _spend(s, WITHDRAW_DOMAIN + uint160(recipient), recipient, actionHash);
        _send(s.asset, recipient, s.fee);
    }

    // ---------------------------------------------------------------------------------------
    // Views

    /// @notice Whether `nullifier` has been spent.
    function isSpent(uint256 nullifier) external view returns (bool) {
        return _spent[nullifier];
    }

    /// @notice Whether a spend may use `root` now.
    function isKnownRoot(uint256 root) public view returns (bool) {
        uint256 seq = rootSeq[root];
        return seq != 0 && rootCount - seq < rootWindow;
    }

    /// @notice The commitment at `queueIndex` while it waits for insertion (0 otherwise).
    function queuedCommitment(uint256 queueIndex) external view returns (uint256) {
        return _queue[queueIndex];
    }

    // ---------------------------------------------------------------------------------------
    // Internals

    function _spend(Spend memory s, uint256 recipientInput, address recipient, bytes32 actionHash) private {
        if (block.timestamp > s.deadline) revert Expired(s.deadline);
        if (!isKnownRoot(s.root)) revert UnknownRoot(s.root);
        if (s.nullifier >= R) revert NotAScalar(s.nullifier);
        if (s.changeCommitment >= R) revert NotAScalar(s.changeCommitment);
        if (s.fee >= MAX_VALUE) revert BadAmount(s.fee);
        if (_spent[s.nullifier]) revert AlreadySpent(s.nullifier);

        uint256[10] memory input;
        input[0] = s.root;
        input[1] = s.nullifier;
        input[2] = s.changeCommitment;
        input[3] = s.fee;
        input[4] = uint160(s.asset);
        input[5] = recipientInput;
        input[6] = uint256(actionHash) % R;
        input[7] = block.chainid;
        input[8] = uint160(address(this));
        input[9] = s.deadline;
        if (!spendVerifier.verifyProof(s.proof, input)) revert InvalidProof();

        _spent[s.nullifier] = true;
        uint256 queueIndex = _enqueue(s.changeCommitment);
        emit Spent(s.nullifier, queueIndex, s.changeCommitment, s.asset, s.fee, recipient, actionHash);
    }

    function _enqueue(uint256 commitment) private returns (uint256 queueIndex) {
        queueIndex = nextQueueIndex++;
        _queue[queueIndex] = commitment;
    }

    function _setRoot(uint256 root) private {
        currentRoot = root;
        uint256 seq = ++rootCount;
        rootSeq[root] = seq;
    }

    function _send(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) Address.sendValue(payable(to), amount);
        else IERC20(asset).safeTransfer(to, amount);
    }
}
