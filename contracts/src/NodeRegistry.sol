// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";

/// @title NodeRegistry
/// @notice Who is in the NOX mix network: staked nodes with their long-term keys and link
/// addresses, an on-chain list of the active ones, and a fingerprint over that list that every
/// client and node recomputes from the list itself (docs/spec/registry.md).
/// @dev No owner, no admin, no upgrade path. Stake leaves the contract only to its operator
/// (after the unstake delay) or, on proven equivocation, to the reporter and the burn address.
contract NodeRegistry is EIP712, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using EnumerableSet for EnumerableSet.AddressSet;

    // ------------------------------------------------------------------ types

    enum Status {
        None, // no record (never registered, unstaked, or slashed)
        Active, // in the active list: routed to
        Unstaking // left the active list, stake still held (and slashable) until the delay ends
    }

    /// @notice A node's stored record, keyed by its operator address.
    struct Node {
        bytes32 identityKey; // Ed25519 identity public key (opaque to the chain)
        bytes32 linkKey; // X25519 link public key (opaque to the chain)
        string linkAddress; // e.g. "127.0.0.1:9001", 1..MAX_LINK_ADDRESS_LENGTH bytes
        uint256 stake;
        bytes32 recordHash; // see _recordHash; commits to every field above and the operator
        uint64 unstakeAvailableAt; // 0 unless unstaking
        uint8 role; // ROLE_RELAY | ROLE_EXIT, non-zero
        Status status;
    }

    /// @notice One entry of the active list, as returned by `nodesPage`.
    struct NodeView {
        address operator;
        bytes32 identityKey;
        bytes32 linkKey;
        string linkAddress;
        uint8 role;
        uint256 stake;
    }

    // -------------------------------------------------------------- constants

    uint8 public constant ROLE_RELAY = 1;
    uint8 public constant ROLE_EXIT = 2;
    uint8 public constant ROLE_MASK = ROLE_RELAY | ROLE_EXIT;
    uint256 public constant MAX_LINK_ADDRESS_LENGTH = 96;
    uint16 public constant BPS = 10_000;
    /// @notice Upper bound of `slashReporterBps` (50 %), see the constructor.
    uint16 public constant MAX_SLASH_REPORTER_BPS = 5_000;
    /// @notice Where the non-reporter share of a slashed stake goes. Nobody holds its key.
    address public constant BURN_ADDRESS = address(0xdEaD);
    bytes32 public constant EPOCH_KEYS_TYPEHASH =
        keccak256("EpochKeys(address operator,uint32 epoch,bytes32 keysHash)");

    // ------------------------------------------------------------- parameters

    IERC20 public immutable stakeToken;
    uint256 public immutable minStake;
    uint64 public immutable unstakeDelay;
    uint16 public immutable slashReporterBps;

    // ------------------------------------------------------------------ state

    mapping(address operator => Node) private _nodes;
    EnumerableSet.AddressSet private _active;
    /// @notice Operator of the live (active or unstaking) node holding an identity key.
    mapping(bytes32 identityKey => address operator) public operatorOfIdentity;
    /// @notice Identity keys of slashed nodes: never usable again.
    mapping(bytes32 identityKey => bool) public identityKeyBurned;
    /// @notice Operators that were slashed: may not register again (their old signed statements
    /// would otherwise be evidence against the new registration, and they proved dishonest).
    mapping(address operator => bool) public operatorSlashed;
    /// @notice Sum of every record's stake; equals this contract's stake-token balance unless
    /// someone sends tokens directly (then it is less).
    uint256 public totalStaked;
    /// @notice Incremented on every state change of the registry.
    uint64 public version;

    // ----------------------------------------------------------------- events

    event NodeRegistered(
        address indexed operator,
        bytes32 indexed identityKey,
        bytes32 linkKey,
        string linkAddress,
        uint8 role,
        uint256 stake
    );
    event IdentityKeyRotated(address indexed operator, bytes32 indexed oldKey, bytes32 indexed newKey);
    event NodeUpdated(address indexed operator, bytes32 linkKey, string linkAddress, uint8 role);
    event StakeAdded(address indexed operator, uint256 amount, uint256 newStake);
    event UnstakeRequested(address indexed operator, uint64 availableAt);
    event UnstakeCancelled(address indexed operator);
    event Unstaked(address indexed operator, uint256 amount);
    event Slashed(
        address indexed operator,
        address indexed reporter,
        uint32 indexed epoch,
        uint256 stake,
        uint256 reward,
        uint256 burned
    );
    /// @notice Emitted after every state change with the new version.
    event RegistryChanged(uint64 version);

    // ----------------------------------------------------------------- errors

    error ZeroAddress();
    error InvalidParameter();
    error OperatorNotEOA();
    error OperatorWasSlashed();
    error AlreadyRegistered();
    error NotActive();
    error NotUnstaking();
    error NotRegistered();
    error ZeroKey();
    error IdentityKeyTaken();
    error IdentityKeyIsBurned();
    error SameIdentityKey();
    error BadLinkAddress();
    error BadRole();
    error StakeTooLow();
    error ZeroAmount();
    error UnstakeNotReady(uint64 availableAt);
    error TransferAmountMismatch();
    error NotEquivocation();
    error WrongSigner();

    // ------------------------------------------------------------ constructor

    constructor(IERC20 stakeToken_, uint256 minStake_, uint64 unstakeDelay_, uint16 slashReporterBps_)
        EIP712("NOX NodeRegistry", "1")
    {
        if (address(stakeToken_) == address(0)) revert ZeroAddress();
        // An operator can report its own equivocation and collect the reporter's share, so
        // equivocating costs it (1 - share) of its stake: the share is capped at one half.
        if (minStake_ == 0 || unstakeDelay_ == 0 || slashReporterBps_ > MAX_SLASH_REPORTER_BPS) {
            revert InvalidParameter();
        }
        stakeToken = stakeToken_;
        minStake = minStake_;
        unstakeDelay = unstakeDelay_;
        slashReporterBps = slashReporterBps_;
    }

    // ------------------------------------------------------------- lifecycle

    /// @notice Register `msg.sender` as a node operator with `stake` tokens (pre-approved).
    /// @dev The operator must be an externally owned account: its secp256k1 key signs the
    /// epoch statements that make equivocation slashable, and a contract has no such key.
    function register(bytes32 identityKey, bytes32 linkKey, string calldata linkAddress, uint8 role, uint256 stake)
        external
        nonReentrant
    {
        address operator = msg.sender;
        if (operator != tx.origin) revert OperatorNotEOA();
        if (operatorSlashed[operator]) revert OperatorWasSlashed();
        if (_nodes[operator].status != Status.None) revert AlreadyRegistered();
        _checkFreshIdentityKey(identityKey);
        _checkLink(linkKey, linkAddress, role);
        if (stake < minStake) revert StakeTooLow();

        Node storage n = _nodes[operator];
        n.identityKey = identityKey;
        n.linkKey = linkKey;
        n.linkAddress = linkAddress;
        n.role = role;
        n.stake = stake;
        n.status = Status.Active;
        operatorOfIdentity[identityKey] = operator;
        _active.add(operator);
        totalStaked += stake;
        emit NodeRegistered(operator, identityKey, linkKey, linkAddress, role, stake);
        _changed(operator);

        _pullStake(operator, stake);
    }

    /// @notice Replace the node's identity key. The old key becomes free.
    function rotateIdentityKey(bytes32 newIdentityKey) external {
        Node storage n = _activeNode(msg.sender);
        bytes32 old = n.identityKey;
        if (newIdentityKey == old) revert SameIdentityKey();
        _checkFreshIdentityKey(newIdentityKey);
        delete operatorOfIdentity[old];
        operatorOfIdentity[newIdentityKey] = msg.sender;
        n.identityKey = newIdentityKey;
        emit IdentityKeyRotated(msg.sender, old, newIdentityKey);
        _changed(msg.sender);
    }

    /// @notice Replace the node's link key, link address and role.
    function updateNode(bytes32 linkKey, string calldata linkAddress, uint8 role) external {
        Node storage n = _activeNode(msg.sender);
        _checkLink(linkKey, linkAddress, role);
        n.linkKey = linkKey;
        n.linkAddress = linkAddress;
        n.role = role;
        emit NodeUpdated(msg.sender, linkKey, linkAddress, role);
        _changed(msg.sender);
    }

    /// @notice Add `amount` (pre-approved) to the node's stake.
    function addStake(uint256 amount) external nonReentrant {
        Node storage n = _activeNode(msg.sender);
        if (amount == 0) revert ZeroAmount();
        uint256 newStake = n.stake + amount;
        n.stake = newStake;
        totalStaked += amount;
        emit StakeAdded(msg.sender, amount, newStake);
        _changed(msg.sender);

        _pullStake(msg.sender, amount);
    }

    /// @notice Leave: the node drops out of the active list at once (it must not be routed to
    /// any more); its stake stays slashable until `executeUnstake` after `unstakeDelay`.
    function requestUnstake() external {
        Node storage n = _activeNode(msg.sender);
        uint64 availableAt = uint64(block.timestamp) + unstakeDelay;
        n.status = Status.Unstaking;
        n.unstakeAvailableAt = availableAt;
        _active.remove(msg.sender);
        emit UnstakeRequested(msg.sender, availableAt);
        _changed(msg.sender);
    }

    /// @notice Return to the active list before the unstake has been executed.
    function cancelUnstake() external {
        Node storage n = _nodes[msg.sender];
        if (n.status != Status.Unstaking) revert NotUnstaking();
        n.status = Status.Active;
        n.unstakeAvailableAt = 0;
        _active.add(msg.sender);
        emit UnstakeCancelled(msg.sender);
        _changed(msg.sender);
    }

    /// @notice After the delay: delete the record, free the identity key, return the stake.
    function executeUnstake() external nonReentrant {
        Node storage n = _nodes[msg.sender];
        if (n.status != Status.Unstaking) revert NotUnstaking();
        if (block.timestamp < n.unstakeAvailableAt) revert UnstakeNotReady(n.unstakeAvailableAt);
        uint256 amount = n.stake;
        delete operatorOfIdentity[n.identityKey];
        delete _nodes[msg.sender];
        totalStaked -= amount;
        emit Unstaked(msg.sender, amount);
        _bumpVersion();

        stakeToken.safeTransfer(msg.sender, amount);
    }

    // --------------------------------------------------------------- slashing

    /// @notice EIP-712 digest of `EpochKeys(operator, epoch, keysHash)` under this registry's domain.
    function epochKeysDigest(address operator, uint32 epoch, bytes32 keysHash) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(EPOCH_KEYS_TYPEHASH, operator, epoch, keysHash)));
    }

    /// @notice Anyone may submit two statements signed by `operator` that name different keys for
    /// the same epoch. The node (active or unstaking) loses its whole stake: `slashReporterBps`
    /// of it to the caller, the rest to `BURN_ADDRESS`. Its identity key stays blocked and the
    /// operator may not register again.
    function slashEquivocation(
        address operator,
        uint32 epoch,
        bytes32 keysHashA,
        bytes calldata sigA,
        bytes32 keysHashB,
        bytes calldata sigB
    ) external nonReentrant {
        Node storage n = _nodes[operator];
        if (n.status == Status.None) revert NotRegistered();
        if (keysHashA == keysHashB) revert NotEquivocation();
        // ECDSA.recover refuses malformed signatures and high-s (malleable) ones.
        if (ECDSA.recoverCalldata(epochKeysDigest(operator, epoch, keysHashA), sigA) != operator) revert WrongSigner();
        if (ECDSA.recoverCalldata(epochKeysDigest(operator, epoch, keysHashB), sigB) != operator) revert WrongSigner();

        uint256 amount = n.stake;
        uint256 reward = amount * slashReporterBps / BPS;
        uint256 burned = amount - reward;
        bytes32 identityKey = n.identityKey;
        if (n.status == Status.Active) _active.remove(operator);
        delete operatorOfIdentity[identityKey];
        identityKeyBurned[identityKey] = true;
        operatorSlashed[operator] = true;
        delete _nodes[operator];
        totalStaked -= amount;
        emit Slashed(operator, msg.sender, epoch, amount, reward, burned);
        _bumpVersion();

        if (reward != 0) stakeToken.safeTransfer(msg.sender, reward);
        if (burned != 0) stakeToken.safeTransfer(BURN_ADDRESS, burned);
    }

    // ------------------------------------------------------------------ views

    /// @notice Number of active nodes.
    function nodeCount() external view returns (uint256) {
        return _active.length();
    }

    /// @notice Active nodes `start .. start+count` in list order (shorter at the end of the list).
    function nodesPage(uint256 start, uint256 count) external view returns (NodeView[] memory page) {
        uint256 total = _active.length();
        if (start >= total) return new NodeView[](0);
        uint256 end = total - start < count ? total : start + count;
        page = new NodeView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            address operator = _active.at(i);
            Node storage n = _nodes[operator];
            page[i - start] = NodeView(operator, n.identityKey, n.linkKey, n.linkAddress, n.role, n.stake);
        }
    }

    /// @notice The stored record of `operator` (status None if there is none).
    function nodeOf(address operator) external view returns (Node memory) {
        return _nodes[operator];
    }

    /// @notice Whether `operator` is in the active list.
    function isActive(address operator) external view returns (bool) {
        return _active.contains(operator);
    }

    /// @notice keccak256(abi.encode(block.chainid, address(this), recordHash_0, ..., recordHash_{n-1}))
    /// over the active list in list order. O(n): meant for eth_call.
    function fingerprint() public view returns (bytes32) {
        uint256 total = _active.length();
        bytes32[] memory hashes = new bytes32[](total);
        for (uint256 i = 0; i < total; ++i) {
            hashes[i] = _nodes[_active.at(i)].recordHash;
        }
        // encodePacked of a bytes32[] is its elements back to back, so this is exactly the
        // abi.encode of the (static) tuple in the doc comment.
        return keccak256(abi.encodePacked(block.chainid, uint256(uint160(address(this))), hashes));
    }

    /// @notice Version, active count and fingerprint in one call (read them at one block).
    function registryState() external view returns (uint64, uint256, bytes32) {
        return (version, _active.length(), fingerprint());
    }

    /// @notice The EIP-712 domain separator (chain id and this address included).
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // ---------------------------------------------------------------- internal

    function _activeNode(address operator) private view returns (Node storage n) {
        n = _nodes[operator];
        if (n.status != Status.Active) revert NotActive();
    }

    function _checkFreshIdentityKey(bytes32 identityKey) private view {
        if (identityKey == bytes32(0)) revert ZeroKey();
        if (identityKeyBurned[identityKey]) revert IdentityKeyIsBurned();
        if (operatorOfIdentity[identityKey] != address(0)) revert IdentityKeyTaken();
    }

    function _checkLink(bytes32 linkKey, string calldata linkAddress, uint8 role) private pure {
        if (linkKey == bytes32(0)) revert ZeroKey();
        uint256 len = bytes(linkAddress).length;
        if (len == 0 || len > MAX_LINK_ADDRESS_LENGTH) revert BadLinkAddress();
        if (role == 0 || role & ~ROLE_MASK != 0) revert BadRole();
    }

    /// @dev keccak256(abi.encode(operator, identityKey, linkKey, keccak256(bytes(linkAddress)),
    /// role, stake, unstakeAvailableAt)) — every field a client relies on.
    function _recordHash(address operator, Node storage n) private view returns (bytes32) {
        return keccak256(
            abi.encode(
                operator,
                n.identityKey,
                n.linkKey,
                keccak256(bytes(n.linkAddress)),
                n.role,
                n.stake,
                n.unstakeAvailableAt
            )
        );
    }

    function _changed(address operator) private {
        Node storage n = _nodes[operator];
        n.recordHash = _recordHash(operator, n);
        _bumpVersion();
    }

    function _bumpVersion() private {
        uint64 v = version + 1;
        version = v;
        emit RegistryChanged(v);
    }

    /// @dev Pull `amount` from `from` and refuse tokens that deliver anything else (fee on
    /// transfer), which would break `totalStaked == balance`.
    function _pullStake(address from, uint256 amount) private {
        uint256 before = stakeToken.balanceOf(address(this));
        stakeToken.safeTransferFrom(from, address(this), amount);
        if (stakeToken.balanceOf(address(this)) - before != amount) revert TransferAmountMismatch();
    }
}
