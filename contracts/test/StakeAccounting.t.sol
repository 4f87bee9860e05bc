// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";

/// @dev Drives the registry with random operations of a fixed pool of operators. Every call is
/// made valid where it can be (bounded amounts, right state), so most runs change state.
contract RegistryHandler is Test {
    NodeRegistry public immutable reg;
    NoxStakeToken public immutable token;
    uint256 public constant OPERATORS = 6;
    address[OPERATORS] public ops;
    uint256[OPERATORS] public keys;
    address public constant REPORTER = address(0x5ee);
    uint256 public nextIdentity = 1;
    /// @dev Tokens that left the registry (unstaked, rewarded, burned).
    uint256 public paidOut;
    uint256 public paidIn;
    uint64 public lastVersion;
    bool public versionMonotone = true;

    constructor(NodeRegistry reg_, NoxStakeToken token_) {
        reg = reg_;
        token = token_;
        for (uint256 i = 0; i < OPERATORS; ++i) {
            keys[i] = 0xA11CE + i;
            ops[i] = vm.addr(keys[i]);
        }
    }

    function _track() private {
        uint64 v = reg.version();
        if (v <= lastVersion) versionMonotone = false;
        lastVersion = v;
    }

    function _fund(address op, uint256 amount) private {
        token.transfer(op, amount);
        vm.prank(op, op);
        token.approve(address(reg), amount);
    }

    function register(uint256 who, uint256 stake, uint8 role) external {
        address op = ops[who % OPERATORS];
        if (reg.operatorSlashed(op) || reg.nodeOf(op).status != NodeRegistry.Status.None) return;
        stake = bound(stake, reg.minStake(), 1e24);
        _fund(op, stake);
        vm.prank(op, op);
        reg.register(bytes32(nextIdentity++), bytes32(uint256(0x11)), "127.0.0.1:1", uint8(bound(role, 1, 3)), stake);
        paidIn += stake;
        _track();
    }

    function addStake(uint256 who, uint256 amount) external {
        address op = ops[who % OPERATORS];
        if (!reg.isActive(op)) return;
        amount = bound(amount, 1, 1e24);
        _fund(op, amount);
        vm.prank(op);
        reg.addStake(amount);
        paidIn += amount;
        _track();
    }

    function requestUnstake(uint256 who) external {
        address op = ops[who % OPERATORS];
        if (!reg.isActive(op)) return;
        vm.prank(op);
        reg.requestUnstake();
        _track();
    }

    function cancelUnstake(uint256 who) external {
        address op = ops[who % OPERATORS];
        if (reg.nodeOf(op).status != NodeRegistry.Status.Unstaking) return;
        vm.prank(op);
        reg.cancelUnstake();
        _track();
    }

    function executeUnstake(uint256 who) external {
        address op = ops[who % OPERATORS];
        NodeRegistry.Node memory n = reg.nodeOf(op);
        if (n.status != NodeRegistry.Status.Unstaking) return;
        if (block.timestamp < n.unstakeAvailableAt) vm.warp(n.unstakeAvailableAt);
        vm.prank(op);
        reg.executeUnstake();
        paidOut += n.stake;
        _track();
    }

    function slash(uint256 who, uint32 epoch) external {
        uint256 i = who % OPERATORS;
        address op = ops[i];
        NodeRegistry.Node memory n = reg.nodeOf(op);
        if (n.status == NodeRegistry.Status.None) return;
        (uint8 v1, bytes32 r1, bytes32 s1) = vm.sign(keys[i], reg.epochKeysDigest(op, epoch, bytes32("a")));
        (uint8 v2, bytes32 r2, bytes32 s2) = vm.sign(keys[i], reg.epochKeysDigest(op, epoch, bytes32("b")));
        vm.prank(REPORTER);
        reg.slashEquivocation(
            op, epoch, bytes32("a"), abi.encodePacked(r1, s1, v1), bytes32("b"), abi.encodePacked(r2, s2, v2)
        );
        paidOut += n.stake;
        _track();
    }

    function warp(uint32 secs) external {
        vm.warp(block.timestamp + secs);
    }

    function sumOfRecordStakes() external view returns (uint256 sum) {
        for (uint256 i = 0; i < OPERATORS; ++i) {
            sum += reg.nodeOf(ops[i]).stake;
        }
    }

    function activeStatusCount() external view returns (uint256 count) {
        for (uint256 i = 0; i < OPERATORS; ++i) {
            if (reg.nodeOf(ops[i]).status == NodeRegistry.Status.Active) ++count;
        }
    }
}

/// @dev Invariant tests over random operation sequences (forge's invariant fuzzer).
contract StakeAccountingInvariantTest is Test {
    NoxStakeToken token;
    NodeRegistry reg;
    RegistryHandler handler;

    function setUp() public {
        token = new NoxStakeToken(address(this), 1e40);
        reg = new NodeRegistry(IERC20(address(token)), 1_000e18, 3 days, 2_500);
        handler = new RegistryHandler(reg, token);
        token.transfer(address(handler), 1e39);
        targetContract(address(handler));
    }

    function invariant_totalStakedIsBalance() public view {
        assertEq(reg.totalStaked(), token.balanceOf(address(reg)));
    }

    function invariant_totalStakedIsSumOfRecords() public view {
        assertEq(reg.totalStaked(), handler.sumOfRecordStakes());
    }

    function invariant_conservation() public view {
        assertEq(handler.paidIn(), reg.totalStaked() + handler.paidOut());
    }

    function invariant_activeListMatchesStatus() public view {
        assertEq(reg.nodeCount(), handler.activeStatusCount());
        NodeRegistry.NodeView[] memory page = reg.nodesPage(0, type(uint256).max);
        for (uint256 i = 0; i < page.length; ++i) {
            assertEq(uint8(reg.nodeOf(page[i].operator).status), uint8(NodeRegistry.Status.Active));
            assertEq(reg.operatorOfIdentity(page[i].identityKey), page[i].operator);
            assertGe(page[i].stake, reg.minStake());
        }
    }

    function invariant_versionStrictlyIncreases() public view {
        assertTrue(handler.versionMonotone());
    }
}

/// @dev The same accounting property as a plain fuzz test over an encoded operation sequence,
/// so it also runs under `forge test --match-test testFuzz`.
contract StakeAccountingFuzzTest is Test {
    function testFuzz_randomSequence(uint8[24] calldata opsSeq, uint256[24] calldata args) public {
        NoxStakeToken token = new NoxStakeToken(address(this), 1e40);
        NodeRegistry reg = new NodeRegistry(IERC20(address(token)), 1_000e18, 3 days, 1_000);
        RegistryHandler h = new RegistryHandler(reg, token);
        token.transfer(address(h), 1e39);
        for (uint256 i = 0; i < opsSeq.length; ++i) {
            uint256 a = args[i];
            uint8 k = opsSeq[i] % 7;
            if (k == 0) h.register(a, a >> 8, uint8(a >> 16));
            else if (k == 1) h.addStake(a, a >> 8);
            else if (k == 2) h.requestUnstake(a);
            else if (k == 3) h.cancelUnstake(a);
            else if (k == 4) h.executeUnstake(a);
            else if (k == 5) h.slash(a, uint32(a >> 8));
            else h.warp(uint32(a));
            assertEq(reg.totalStaked(), token.balanceOf(address(reg)));
            assertEq(reg.totalStaked(), h.sumOfRecordStakes());
            assertEq(h.paidIn(), reg.totalStaked() + h.paidOut());
            assertEq(reg.nodeCount(), h.activeStatusCount());
        }
    }
}
