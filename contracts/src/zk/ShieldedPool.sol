// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IPayment} from "../interfaces/IPayment.sol";
import {BatchExecutor} from "../BatchExecutor.sol";
import {IPoseidon3} from "./Poseidon.sol";

/// @notice The Groth16 verifier of the 2-in/2-out transfer circuit (generated: TransferVerifier.sol).
interface ITransferVerifier {
    function verifyProof(uint256[8] calldata proof, uint256[8] calldata input) external view returns (bool);
}

/// @dev Leaves per inserted batch (an aligned subtree): `ShieldedPool.BATCH_SIZE`, the insertion
/// circuit's `nox_zk::insert::BATCH_SIZE`.
uint256 constant INSERT_BATCH_SIZE = 32;

/// @notice The Groth16 verifier of the batch-insertion circuit (generated: InsertVerifier.sol).
/// Public inputs: old root, new root, start index, then the batch's leaves.
interface IInsertVerifier {
    function verifyProof(uint256[8] calldata proof, uint256[3 + INSERT_BATCH_SIZE] calldata input)
        external
        view
        returns (bool);
}

/// @title ShieldedPool — notes, nullifiers and private transactions (issues 12, 30)
/// @notice A pool of notes in a depth-32 Poseidon Merkle tree (docs/design/zk-payment.md).
/// - `deposit` takes ETH or an ERC-20 and queues the note commitment
///   `Poseidon(amount, asset, inner)`, computed here from what actually arrived.
/// - `insertBatch` (anyone) moves the next ≤ BATCH_SIZE queued commitments into the tree as one
///   aligned subtree, checked by a Groth16 proof, so the chain never hashes a Merkle path.
/// - The queue is a hash chain, not a list: each queued commitment `c` moves the chain word
///   `q ← keccak256(q ‖ c)` (the low 32 bits cleared; `q = 0` for the empty queue), and the
///   chain word is stored only where a batch may end (every BATCH_SIZE commitments:
///   `queueCheckpoint`) and at the queue's head. The commitments themselves are published in the
///   `Deposited` / `Transacted` events, from which an inserter takes them; `insertBatch` receives
///   them in calldata and refuses them unless they extend the chain from the last inserted
///   commitment to exactly the stored word (keccak is second-preimage resistant: only the queued
///   commitments, in their order, do).
/// - Every private operation (transfer, split, join, withdrawal, a deposit into notes, the
///   relayer's fee) is one `Transaction` of the 2-in/2-out statement (§9): two nullifiers, two
///   output commitments (both always queued, zero-value ones too, so every transaction looks
///   alike), a public amount in, a public amount out to `recipient`, and a fee. It enters by
///   `transact` (direct: the caller pays gas, no relayer) or by `pay` (the IPayment plugin, only
///   from the BatchExecutor in its payment phase: the fee goes to the executor's ledger for the
///   relayer that submitted the bundle).
/// @dev No owner, no admin, no upgrade. A root is accepted while fewer than `rootWindow` newer
/// roots exist (O(1): a sequence number per root). Every public input of the proof is fed to the
/// verifier by this contract from its own context or checked against its own state, never taken
/// on trust from the caller: `publicAmount` is computed from the three amounts, `context` hashes
/// the amounts, the relayer, the action hash, the recipient, the chain, this pool, the deadline
/// and the two note ciphertexts. Groth16 proofs are malleable, so nothing keys on proof bytes:
/// the nullifiers are the replay guard.
contract ShieldedPool is IPayment, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice One private transaction: the proof and the public values the caller states (each
    /// checked or bound through `context`).
    struct Transaction {
        uint256[8] proof;
        uint256 root;
        uint256[2] nullifiers;
        uint256[2] commitments;
        /// One asset per transaction, address(0) = ETH.
        address asset;
        /// < 2^128; direct `transact` only (pulled from msg.sender / msg.value).
        uint256 publicIn;
        /// < 2^128; sent to `recipient`.
        uint256 publicOut;
        /// < 2^128; `pay` only (to the ledger); 0 in a direct `transact`.
        uint256 fee;
        /// Receiver of `publicOut`; address(0) iff `publicOut == 0`.
        address recipient;
        /// The proof is refused after this timestamp.
        uint256 deadline;
        /// The output notes' ciphertexts (docs/spec/notes.md), each exactly NOTE_LEN bytes.
        bytes[2] notes;
    }

    /// @notice Order of the BN254 scalar field: every tree value and public input is below it.
    uint256 public constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;
    /// @notice Depth of the note tree.
    uint256 public constant TREE_DEPTH = 32;
    /// @notice Leaves per inserted batch (an aligned subtree).
    uint256 public constant BATCH_SIZE = INSERT_BATCH_SIZE;
    /// @notice Values are below 2^128 (the circuit's range checks).
    uint256 public constant MAX_VALUE = 1 << 128;
    /// @notice Length of every note ciphertext the pool publishes — a deposit's memo and both
    /// outputs of a transaction (`nox_wallet::memo::NOTE_LEN`, docs/spec/notes.md). One length
    /// only: a note of another length would mark a non-standard wallet (an anonymity-set split)
    /// and no wallet could open it, so it is refused.
    uint256 public constant NOTE_LEN = 104;
    /// @notice Gas a paid withdrawal's ETH recipient is given (`pay`): enough for a smart
    /// account's `receive`, too little to make the relayer's transaction expensive.
    uint256 public constant PAYOUT_GAS = 50_000;
    /// @notice Root of the empty depth-32 tree (`nox_zk::merkle::zeros()[32]`).
    uint256 public constant EMPTY_ROOT = 0x2f68a1c58e257e42a17a6c61dff5551ed560b9922ab119d5ac8e184c9734ead9;
    /// @dev The queue index's bits in `_queueHead` / `_insertedHead` (the rest is the chain word).
    uint256 private constant INDEX_MASK = 0xffffffff;

    ITransferVerifier public immutable transferVerifier;
    IInsertVerifier public immutable insertVerifier;
    /// @notice Poseidon with three inputs (npm poseidon-solidity's PoseidonT4, deployed apart).
    IPoseidon3 public immutable poseidon;
    /// @notice The only caller of `pay`.
    address public immutable executor;
    /// @notice Where fees go: the executor's reward ledger.
    address public immutable ledger;
    /// @notice How many roots are accepted: the current one and `rootWindow - 1` before it.
    uint256 public immutable rootWindow;

    /// @notice The tree's current root.
    uint256 public currentRoot;
    /// @notice Number of roots the tree has had (the empty root is number 1). Every batch adds
    /// one root and BATCH_SIZE leaf slots, so the tree has `(rootCount − 1) · BATCH_SIZE` slots
    /// (`nextLeafIndex`, not stored).
    uint256 public rootCount;
    /// @notice Sequence number of each root the tree has had (0: never).
    mapping(uint256 root => uint256) public rootSeq;
    /// @dev The queue's head: the chain word over every queued commitment (high 224 bits) and
    /// their number, `nextQueueIndex` (low 32 bits). One slot, so a transaction's two
    /// commitments cost one warm write.
    uint256 private _queueHead;
    /// @dev The same for the inserted prefix of the queue: the chain word over the commitments
    /// already in the tree and their number, `firstUninsertedQueueIndex`.
    uint256 private _insertedHead;
    /// @notice The chain word over the first `queueIndex` queued commitments, for every multiple
    /// `queueIndex` of BATCH_SIZE that the queue has reached and no insertion has passed yet (0
    /// otherwise): where a batch that is not the whole remaining queue ends.
    mapping(uint256 queueIndex => uint256) public queueCheckpoint;
    mapping(uint256 nullifier => bool) private _spent;
    /// @notice Paid withdrawals whose recipient refused them (`pay`), claimable by the recipient.
    mapping(address asset => mapping(address recipient => uint256)) public owed;

    event Deposited(uint256 indexed queueIndex, uint256 commitment, address indexed asset, uint256 amount, bytes memo);
    /// @notice A private transaction: its two commitments were queued at `firstQueueIndex` and
    /// `firstQueueIndex + 1`. `relayer` is address(0) for a direct `transact`.
    event Transacted(
        uint256 firstQueueIndex,
        uint256[2] nullifiers,
        uint256[2] commitments,
        bytes[2] notes,
        address indexed asset,
        uint256 publicIn,
        uint256 publicOut,
        uint256 fee,
        address recipient,
        address indexed relayer,
        bytes32 actionHash
    );
    /// @notice A paid withdrawal's recipient refused the payout (or the token did): it is kept
    /// for the recipient to claim (`claimOwed`) instead of reverting the relayer's bundle.
    event PayoutDeferred(address indexed asset, address indexed recipient, uint256 amount);
    event OwedClaimed(address indexed asset, address indexed recipient, uint256 amount);
    event BatchInserted(uint256 indexed startLeafIndex, uint256 firstQueueIndex, uint256 count, uint256 newRoot);

    error ZeroAddress();
    error BadRootWindow();
    error NotExecutor();
    error NotInPaymentPhase();
    /// @notice `insertBatch` was given `given` leaves but the batch at the queue's start holds
    /// `count` (the queue moved since the proof was made, or the caller miscounted).
    error CountMismatch(uint256 given, uint256 count);
    /// @notice `insertBatch`'s leaves are not the queued commitments (in order).
    error QueueMismatch();
    /// @notice The queue holds 2^32 − 1 commitments (more than the tree can ever hold).
    error QueueFull();
    error BadAmount(uint256 amount);
    error ValueMismatch(uint256 sent, uint256 expected);
    error NotAScalar(uint256 value);
    error BadNoteLength(uint256 length);
    error TransferShortfall(uint256 received, uint256 expected);
    error NothingQueued();
    error TreeFull();
    error InvalidProof();
    error UnknownRoot(uint256 root);
    error Expired(uint256 deadline);
    error AlreadySpent(uint256 nullifier);
    error DuplicateNullifier(uint256 nullifier);
    error NotRecipient(address caller, address recipient);
    /// @notice `recipient` must be address(0) exactly when `publicOut` is 0.
    error BadRecipient(address recipient, uint256 publicOut);
    /// @notice A direct `transact` pays no fee (there is no relayer to receive it).
    error FeeInDirectTransaction(uint256 fee);
    /// @notice A paid transaction (`pay`) cannot pull public value in (the executor sends none).
    error PublicInInPayment(uint256 publicIn);
    /// @notice `|publicIn − publicOut − fee|` must be below 2^128.
    error PublicAmountTooLarge();
    error NothingOwed();

    constructor(
        ITransferVerifier transferVerifier_,
        IInsertVerifier insertVerifier_,
        IPoseidon3 poseidon_,
        address executor_,
        uint256 rootWindow_
    ) {
        if (
            address(transferVerifier_) == address(0) || address(insertVerifier_) == address(0)
                || address(poseidon_) == address(0) || executor_ == address(0)
        ) revert ZeroAddress();
        if (rootWindow_ == 0) revert BadRootWindow();
        transferVerifier = transferVerifier_;
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
    /// note's ciphertext for the owner's viewing key (docs/spec/notes.md), published; only its
    /// length (NOTE_LEN) is checked.
    function deposit(address asset, uint256 amount, uint256 inner, bytes calldata memo)
        external
        payable
        nonReentrant
        returns (uint256 queueIndex)
    {
        if (amount == 0 || amount >= MAX_VALUE) revert BadAmount(amount);
        if (inner >= R) revert NotAScalar(inner);
        if (memo.length != NOTE_LEN) revert BadNoteLength(memo.length);
        _pull(asset, amount);
        uint256 commitment = poseidon.hash([amount, uint256(uint160(asset)), inner]);
        uint256 head = _queueHead;
        queueIndex = head & INDEX_MASK;
        _queueHead = _enqueue(head, commitment);
        emit Deposited(queueIndex, commitment, asset, amount, memo);
    }

    /// @notice Insert the batch at the queue's start — the queued commitments up to the next
    /// multiple of BATCH_SIZE of the queue index or the queue's end, whichever comes first — then
    /// zeros, as the aligned subtree at `nextLeafIndex`, moving the root to `newRoot`. `leaves`
    /// are those commitments in queue order (from the `Deposited` / `Transacted` events); `proof`
    /// shows that `newRoot` is exactly the current tree with them in those slots. Anyone may call
    /// it. A wrong number of leaves (the queue moved since the proof was made) is refused with
    /// `CountMismatch`, leaves that are not the queued ones with `QueueMismatch`, both before the
    /// proof is verified (a few thousand gas instead of ~300 k).
    function insertBatch(uint256[8] calldata proof, uint256 newRoot, uint256[] calldata leaves) external nonReentrant {
        uint256 inserted = _insertedHead;
        uint256 head = _queueHead;
        uint256 first = inserted & INDEX_MASK;
        uint256 next = head & INDEX_MASK;
        if (next == first) revert NothingQueued();
        uint256 end = first - first % BATCH_SIZE + BATCH_SIZE;
        if (end > next) end = next;
        if (leaves.length != end - first) revert CountMismatch(leaves.length, end - first);
        uint256 start = _nextLeafIndex();
        if (start + BATCH_SIZE > 1 << TREE_DEPTH) revert TreeFull();
        if (newRoot >= R) revert NotAScalar(newRoot);

        uint256[3 + BATCH_SIZE] memory input;
        input[0] = currentRoot;
        input[1] = newRoot;
        input[2] = start;
        uint256 chain = inserted & ~INDEX_MASK;
        for (uint256 i = 0; i < leaves.length; ++i) {
            uint256 leaf = leaves[i];
            input[3 + i] = leaf;
            chain = _chain(chain, leaf);
        }
        uint256 expected = end == next ? head & ~INDEX_MASK : queueCheckpoint[end];
        if (chain != expected) revert QueueMismatch();
        if (end % BATCH_SIZE == 0) delete queueCheckpoint[end];
        if (!insertVerifier.verifyProof(proof, input)) revert InvalidProof();

        _insertedHead = chain | end;
        _setRoot(newRoot);
        emit BatchInserted(start, first, leaves.length, newRoot);
    }

    // ---------------------------------------------------------------------------------------
    // Private transactions

    /// @notice A private transaction submitted directly (no relayer: the context's relayer is
    /// address(0), and the fee must be 0). `publicIn` of `t.asset` is pulled from the caller
    /// (msg.value for ETH, exactly; a token must arrive in full). `publicOut` goes to
    /// `t.recipient`. `actionHash` is bound through the context; when it is nonzero only
    /// `t.recipient` may submit (an adaptor withdraws and acts in one call, and a copy of its
    /// proof taken from the mempool is useless to anyone else).
    function transact(Transaction calldata t, bytes32 actionHash) external payable nonReentrant {
        if (t.fee != 0) revert FeeInDirectTransaction(t.fee);
        if (actionHash != bytes32(0) && msg.sender != t.recipient) revert NotRecipient(msg.sender, t.recipient);
        _transact(t, address(0), actionHash);
        _pull(t.asset, t.publicIn);
        _send(t.asset, t.recipient, t.publicOut);
    }

    /// @inheritdoc IPayment
    /// @dev Only the executor, and only inside the payment phase of a bundle paying through this
    /// pool for this relayer and action hash (`BatchExecutor.paymentInProgress`): an action, whose
    /// calls also come from the executor, cannot spend a captured proof. `payment` is
    /// `abi.encode(Transaction)`. The context's relayer is `relayer` (the bundle's submitter,
    /// passed by the executor) and its execution hash is `actionHash` (recomputed by the executor
    /// from the action it runs). `publicIn` must be 0; the fee goes to the ledger, `publicOut`
    /// to `recipient` (a withdrawal paid through a relayer). A recipient that refuses the payout
    /// on chain (reverts, burns its PAYOUT_GAS, is blocked by the token) cannot revert the
    /// bundle after the relayer simulated it: the amount is kept for it (`owed`, `claimOwed`).
    function pay(bytes calldata payment, address relayer, bytes32 actionHash)
        external
        nonReentrant
        returns (address asset, uint256 amount)
    {
        if (msg.sender != executor) revert NotExecutor();
        (address plugin, address r, bytes32 h) = BatchExecutor(executor).paymentInProgress();
        if (plugin != address(this) || r != relayer || h != actionHash) revert NotInPaymentPhase();
        Transaction memory t = abi.decode(payment, (Transaction));
        if (t.publicIn != 0) revert PublicInInPayment(t.publicIn);
        _transact(t, relayer, actionHash);
        _send(t.asset, ledger, t.fee);
        _payOut(t.asset, t.recipient, t.publicOut);
        return (t.asset, t.fee);
    }

    /// @notice Take what paid withdrawals to the caller left owed (`PayoutDeferred`), all gas
    /// forwarded.
    function claimOwed(address asset) external nonReentrant {
        uint256 amount = owed[asset][msg.sender];
        if (amount == 0) revert NothingOwed();
        delete owed[asset][msg.sender];
        emit OwedClaimed(asset, msg.sender, amount);
        _send(asset, msg.sender, amount);
    }

    // ---------------------------------------------------------------------------------------
    // Views

    /// @notice Whether `nullifier` has been spent.
    function isSpent(uint256 nullifier) external view returns (bool) {
        return _spent[nullifier];
    }

    /// @notice Whether a transaction may use `root` now.
    function isKnownRoot(uint256 root) public view returns (bool) {
        uint256 seq = rootSeq[root];
        return seq != 0 && rootCount - seq < rootWindow;
    }

    /// @notice Leaf slots in the tree (a multiple of BATCH_SIZE): where the next batch goes.
    function nextLeafIndex() external view returns (uint256) {
        return _nextLeafIndex();
    }

    /// @notice Queue index the next queued commitment gets (the number ever queued).
    function nextQueueIndex() external view returns (uint256) {
        return _queueHead & INDEX_MASK;
    }

    /// @notice Queue index of the first commitment not yet in the tree.
    function firstUninsertedQueueIndex() external view returns (uint256) {
        return _insertedHead & INDEX_MASK;
    }

    /// @notice The chain word over every queued commitment (see the contract's notice).
    function queueHash() external view returns (uint256) {
        return _queueHead & ~INDEX_MASK;
    }

    /// @notice The chain word over the commitments already in the tree (where the next batch's
    /// leaves start from).
    function insertedQueueHash() external view returns (uint256) {
        return _insertedHead & ~INDEX_MASK;
    }

    /// @notice The proof's `context` input for `t` submitted by `relayer` (address(0) for a
    /// direct `transact`) bound to `actionHash`, on this chain and pool (docs/design/zk-payment.md
    /// §9; `nox_zk::transfer::TransferContext::hash` computes the same).
    function context(Transaction calldata t, address relayer, bytes32 actionHash) external view returns (uint256) {
        return _context(t, relayer, actionHash);
    }

    /// @notice The proof's `publicAmount` input: `publicIn − publicOut − fee` as `x`, or `R − |x|`
    /// when negative (`nox_zk::transfer::public_amount`). Reverts unless each amount and `|x|`
    /// are below 2^128.
    function publicAmount(uint256 publicIn, uint256 publicOut, uint256 fee) external pure returns (uint256) {
        return _publicAmount(publicIn, publicOut, fee);
    }

    // ---------------------------------------------------------------------------------------
    // Internals

    /// @dev Every check, the proof, the nullifiers, the queue and the event; the caller moves
    /// the value. Checks are ordered cheapest first and all come before the verifier.
    function _transact(Transaction memory t, address relayer, bytes32 actionHash) private {
        if (block.timestamp > t.deadline) revert Expired(t.deadline);
        if (!isKnownRoot(t.root)) revert UnknownRoot(t.root);
        uint256 n0 = t.nullifiers[0];
        uint256 n1 = t.nullifiers[1];
        if (n0 >= R) revert NotAScalar(n0);
        if (n1 >= R) revert NotAScalar(n1);
        if (t.commitments[0] >= R) revert NotAScalar(t.commitments[0]);
        if (t.commitments[1] >= R) revert NotAScalar(t.commitments[1]);
        if (n0 == n1) revert DuplicateNullifier(n0);
        if (_spent[n0]) revert AlreadySpent(n0);
        if (_spent[n1]) revert AlreadySpent(n1);
        if ((t.recipient == address(0)) != (t.publicOut == 0)) revert BadRecipient(t.recipient, t.publicOut);
        if (t.notes[0].length != NOTE_LEN) revert BadNoteLength(t.notes[0].length);
        if (t.notes[1].length != NOTE_LEN) revert BadNoteLength(t.notes[1].length);

        uint256[8] memory input;
        input[0] = t.root;
        input[1] = n0;
        input[2] = n1;
        input[3] = t.commitments[0];
        input[4] = t.commitments[1];
        input[5] = _publicAmount(t.publicIn, t.publicOut, t.fee);
        input[6] = uint160(t.asset);
        input[7] = _context(t, relayer, actionHash);
        if (!transferVerifier.verifyProof(t.proof, input)) revert InvalidProof();

        _spent[n0] = true;
        _spent[n1] = true;
        uint256 head = _queueHead;
        uint256 first = head & INDEX_MASK;
        _queueHead = _enqueue(_enqueue(head, t.commitments[0]), t.commitments[1]);
        _emitTransacted(first, t, relayer, actionHash);
    }

    function _emitTransacted(uint256 first, Transaction memory t, address relayer, bytes32 actionHash) private {
        emit Transacted(
            first,
            t.nullifiers,
            t.commitments,
            t.notes,
            t.asset,
            t.publicIn,
            t.publicOut,
            t.fee,
            t.recipient,
            relayer,
            actionHash
        );
    }

    function _publicAmount(uint256 publicIn, uint256 publicOut, uint256 fee) private pure returns (uint256) {
        if (publicIn >= MAX_VALUE) revert BadAmount(publicIn);
        if (publicOut >= MAX_VALUE) revert BadAmount(publicOut);
        if (fee >= MAX_VALUE) revert BadAmount(fee);
        uint256 debit = publicOut + fee; // < 2^129: no overflow
        if (publicIn >= debit) return publicIn - debit; // < 2^128
        uint256 m = debit - publicIn;
        if (m >= MAX_VALUE) revert PublicAmountTooLarge();
        return R - m;
    }

    /// @dev `keccak256(abi.encode(publicIn, publicOut, fee, relayer, executionHash, recipient,
    /// chainId, pool, deadline, notesHash)) mod R`, with `notesHash = keccak256(abi.encode(
    /// keccak256(notes[0]), keccak256(notes[1])))` (docs/design/zk-payment.md §9).
    function _context(Transaction memory t, address relayer, bytes32 actionHash) private view returns (uint256) {
        bytes32 notesHash = keccak256(abi.encode(keccak256(t.notes[0]), keccak256(t.notes[1])));
        bytes memory encoded = abi.encode(
            t.publicIn,
            t.publicOut,
            t.fee,
            relayer,
            actionHash,
            t.recipient,
            block.chainid,
            address(this),
            t.deadline,
            notesHash
        );
        return uint256(keccak256(encoded)) % R;
    }

    /// @dev The queue head `head` (chain word | count) with `commitment` appended; stores the
    /// chain word as a checkpoint when the count reaches a multiple of BATCH_SIZE.
    function _enqueue(uint256 head, uint256 commitment) private returns (uint256) {
        uint256 index = head & INDEX_MASK;
        if (index == INDEX_MASK) revert QueueFull();
        uint256 chain = _chain(head & ~INDEX_MASK, commitment);
        ++index;
        if (index % BATCH_SIZE == 0) queueCheckpoint[index] = chain;
        return chain | index;
    }

    /// @dev One step of the queue's chain: `keccak256(chain ‖ commitment)` with the low 32 bits
    /// cleared (224 bits: a collision costs ~2^112 hashes, more than the curve's security).
    function _chain(uint256 chain, uint256 commitment) private pure returns (uint256 next) {
        assembly ("memory-safe") {
            mstore(0x00, chain)
            mstore(0x20, commitment)
            next := and(keccak256(0x00, 0x40), not(INDEX_MASK))
        }
    }

    function _nextLeafIndex() private view returns (uint256) {
        return (rootCount - 1) * BATCH_SIZE;
    }

    /// @dev The only place a root is added (one per batch: `_nextLeafIndex` counts on it).
    function _setRoot(uint256 root) private {
        currentRoot = root;
        uint256 seq = ++rootCount;
        rootSeq[root] = seq;
    }

    /// @dev Take exactly `amount` of `asset` from msg.sender: msg.value for ETH (and no ETH with
    /// a token); a token must arrive in full (a fee-on-transfer token would leave notes unbacked).
    function _pull(address asset, uint256 amount) private {
        if (asset == address(0)) {
            if (msg.value != amount) revert ValueMismatch(msg.value, amount);
            return;
        }
        if (msg.value != 0) revert ValueMismatch(msg.value, 0);
        if (amount == 0) return;
        IERC20 token = IERC20(asset);
        uint256 before = token.balanceOf(address(this));
        token.safeTransferFrom(msg.sender, address(this), amount);
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert TransferShortfall(received, amount);
    }

    /// @dev A payout inside the relayer's bundle: ETH with PAYOUT_GAS and no return data copied,
    /// a token through `trySafeTransfer`; on failure the amount is owed to `to` instead.
    function _payOut(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        bool ok;
        if (asset == address(0)) {
            assembly ("memory-safe") {
                ok := call(PAYOUT_GAS, to, amount, 0, 0, 0, 0)
            }
        } else {
            ok = IERC20(asset).trySafeTransfer(to, amount);
        }
        if (!ok) {
            owed[asset][to] += amount;
            emit PayoutDeferred(asset, to, amount);
        }
    }

    function _send(address asset, address to, uint256 amount) private {
        if (amount == 0) return;
        if (asset == address(0)) Address.sendValue(payable(to), amount);
        else IERC20(asset).safeTransfer(to, amount);
    }
}
