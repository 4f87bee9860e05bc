// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {FeeOnTransferToken, RegistryFixture} from "./utils/RegistryFixture.sol";

contract NodeRegistryTest is RegistryFixture {
    bytes32 constant ID = bytes32(uint256(0x1d));
    bytes32 constant LINK = bytes32(uint256(0x11));

    // ----------------------------------------------------------- constructor

    function test_constructor_setsParameters() public view {
        assertEq(address(reg.stakeToken()), address(token));
        assertEq(reg.minStake(), MIN_STAKE);
        assertEq(reg.unstakeDelay(), DELAY);
        assertEq(reg.slashReporterBps(), REPORTER_BPS);
        assertEq(reg.version(), 0);
        assertEq(reg.nodeCount(), 0);
    }

    function test_constructor_rejectsBadParameters() public {
        vm.expectRevert(NodeRegistry.ZeroAddress.selector);
        new NodeRegistry(IERC20(address(0)), 1, 1, 0);
        vm.expectRevert(NodeRegistry.InvalidParameter.selector);
        new NodeRegistry(IERC20(address(token)), 0, 1, 0);
        vm.expectRevert(NodeRegistry.InvalidParameter.selector);
        new NodeRegistry(IERC20(address(token)), 1, 0, 0);
        vm.expectRevert(NodeRegistry.InvalidParameter.selector);
        new NodeRegistry(IERC20(address(token)), 1, 1, 5_001);
        new NodeRegistry(IERC20(address(token)), 1, 1, 5_000);
    }

    // -------------------------------------------------------------- register

    function test_register_storesRecordAndPullsStake() public {
        (address op,) = _operator(1);
        _fund(op, MIN_STAKE);
        vm.expectEmit(address(reg));
        emit NodeRegistry.NodeRegistered(op, ID, LINK, "10.0.0.1:9001", 3, MIN_STAKE);
        vm.prank(op, op);
        reg.register(ID, LINK, "10.0.0.1:9001", 3, MIN_STAKE);

        NodeRegistry.Node memory n = reg.nodeOf(op);
        assertEq(n.identityKey, ID);
        assertEq(n.linkKey, LINK);
        assertEq(n.linkAddress, "10.0.0.1:9001");
        assertEq(n.role, 3);
        assertEq(n.stake, MIN_STAKE);
        assertEq(n.unstakeAvailableAt, 0);
        assertEq(uint8(n.status), uint8(NodeRegistry.Status.Active));
        assertEq(
            n.recordHash,
            keccak256(abi.encode(op, ID, LINK, keccak256("10.0.0.1:9001"), uint8(3), MIN_STAKE, uint64(0)))
        );
        assertEq(reg.operatorOfIdentity(ID), op);
        assertEq(reg.nodeCount(), 1);
        assertTrue(reg.isActive(op));
        assertEq(reg.totalStaked(), MIN_STAKE);
        assertEq(token.balanceOf(address(reg)), MIN_STAKE);
        assertEq(token.balanceOf(op), 0);
        assertEq(reg.version(), 1);
    }

    function test_register_rejectsContractOperator() public {
        _fund(address(this), MIN_STAKE);
        token.approve(address(reg), MIN_STAKE);
        vm.expectRevert(NodeRegistry.OperatorNotEOA.selector);
        reg.register(ID, LINK, "a:1", 1, MIN_STAKE);
    }

    function test_register_rejectsTwice() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        _fund(op, MIN_STAKE);
        vm.prank(op, op);
        vm.expectRevert(NodeRegistry.AlreadyRegistered.selector);
        reg.register(bytes32(uint256(2)), LINK, "a:1", 1, MIN_STAKE);
    }

    function test_register_rejectsBadInput() public {
        (address op,) = _operator(1);
        _fund(op, 10 * MIN_STAKE);
        vm.startPrank(op, op);
        vm.expectRevert(NodeRegistry.ZeroKey.selector);
        reg.register(bytes32(0), LINK, "a:1", 1, MIN_STAKE);
        vm.expectRevert(NodeRegistry.ZeroKey.selector);
        reg.register(ID, bytes32(0), "a:1", 1, MIN_STAKE);
        vm.expectRevert(NodeRegistry.BadLinkAddress.selector);
        reg.register(ID, LINK, "", 1, MIN_STAKE);
        vm.expectRevert(NodeRegistry.BadLinkAddress.selector);
        reg.register(ID, LINK, string(new bytes(97)), 1, MIN_STAKE);
        vm.expectRevert(NodeRegistry.BadRole.selector);
        reg.register(ID, LINK, "a:1", 0, MIN_STAKE);
        vm.expectRevert(NodeRegistry.BadRole.selector);
        reg.register(ID, LINK, "a:1", 4, MIN_STAKE);
        vm.expectRevert(NodeRegistry.BadRole.selector);
        reg.register(ID, LINK, "a:1", 0x81, MIN_STAKE);
        vm.expectRevert(NodeRegistry.StakeTooLow.selector);
        reg.register(ID, LINK, "a:1", 1, MIN_STAKE - 1);
        // 96 bytes is the limit, inclusive
        reg.register(ID, LINK, string(new bytes(96)), 2, MIN_STAKE);
        vm.stopPrank();
    }

    function test_register_rejectsTakenIdentity() public {
        (address a,) = _operator(1);
        (address b,) = _operator(2);
        _register(a, ID, MIN_STAKE);
        _fund(b, MIN_STAKE);
        vm.prank(b, b);
        vm.expectRevert(NodeRegistry.IdentityKeyTaken.selector);
        reg.register(ID, LINK, "a:1", 1, MIN_STAKE);
    }

    function test_register_rejectsUnapprovedStake() public {
        (address op,) = _operator(1);
        token.transfer(op, MIN_STAKE);
        vm.prank(op, op);
        vm.expectRevert();
        reg.register(ID, LINK, "a:1", 1, MIN_STAKE);
    }

    function test_register_rejectsFeeOnTransferToken() public {
        FeeOnTransferToken fot = new FeeOnTransferToken(address(this));
        NodeRegistry r = new NodeRegistry(IERC20(address(fot)), 100, 1, 0);
        (address op,) = _operator(1);
        fot.transfer(op, 1e20);
        vm.startPrank(op, op);
        fot.approve(address(r), type(uint256).max);
        vm.expectRevert(NodeRegistry.TransferAmountMismatch.selector);
        r.register(ID, LINK, "a:1", 1, 1e18);
        vm.stopPrank();
    }

    // ------------------------------------------------------- rotate / update

    function test_rotateIdentityKey() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        bytes32 fresh = bytes32(uint256(0xbeef));
        bytes32 fpBefore = reg.fingerprint();
        vm.expectEmit(address(reg));
        emit NodeRegistry.IdentityKeyRotated(op, ID, fresh);
        vm.prank(op);
        reg.rotateIdentityKey(fresh);
        assertEq(reg.nodeOf(op).identityKey, fresh);
        assertEq(reg.operatorOfIdentity(fresh), op);
        assertEq(reg.operatorOfIdentity(ID), address(0));
        assertTrue(reg.fingerprint() != fpBefore);
        assertEq(reg.version(), 2);
        // the old key is free again
        (address other,) = _operator(2);
        _register(other, ID, MIN_STAKE);
    }

    function test_rotateIdentityKey_reverts() public {
        (address a,) = _operator(1);
        (address b,) = _operator(2);
        _register(a, ID, MIN_STAKE);
        _register(b, bytes32(uint256(2)), MIN_STAKE);
        vm.startPrank(a);
        vm.expectRevert(NodeRegistry.SameIdentityKey.selector);
        reg.rotateIdentityKey(ID);
        vm.expectRevert(NodeRegistry.ZeroKey.selector);
        reg.rotateIdentityKey(bytes32(0));
        vm.expectRevert(NodeRegistry.IdentityKeyTaken.selector);
        reg.rotateIdentityKey(bytes32(uint256(2)));
        vm.stopPrank();
        vm.prank(address(0xbad));
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.rotateIdentityKey(bytes32(uint256(3)));
        vm.prank(a);
        reg.requestUnstake();
        vm.prank(a);
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.rotateIdentityKey(bytes32(uint256(3)));
    }

    function test_updateNode() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        bytes32 newLink = bytes32(uint256(0x22));
        vm.expectEmit(address(reg));
        emit NodeRegistry.NodeUpdated(op, newLink, "10.1.1.1:7000", 2);
        vm.prank(op);
        reg.updateNode(newLink, "10.1.1.1:7000", 2);
        NodeRegistry.Node memory n = reg.nodeOf(op);
        assertEq(n.linkKey, newLink);
        assertEq(n.linkAddress, "10.1.1.1:7000");
        assertEq(n.role, 2);
        assertEq(
            n.recordHash,
            keccak256(abi.encode(op, ID, newLink, keccak256("10.1.1.1:7000"), uint8(2), MIN_STAKE, uint64(0)))
        );
    }

    function test_updateNode_reverts() public {
        (address op,) = _operator(1);
        vm.prank(op);
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.updateNode(LINK, "a:1", 1);
        _register(op, ID, MIN_STAKE);
        vm.startPrank(op);
        vm.expectRevert(NodeRegistry.ZeroKey.selector);
        reg.updateNode(bytes32(0), "a:1", 1);
        vm.expectRevert(NodeRegistry.BadLinkAddress.selector);
        reg.updateNode(LINK, "", 1);
        vm.expectRevert(NodeRegistry.BadRole.selector);
        reg.updateNode(LINK, "a:1", 8);
        vm.stopPrank();
    }

    // -------------------------------------------------------------- addStake

    function test_addStake() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        _fund(op, 5e18);
        vm.expectEmit(address(reg));
        emit NodeRegistry.StakeAdded(op, 5e18, MIN_STAKE + 5e18);
        vm.prank(op);
        reg.addStake(5e18);
        assertEq(reg.nodeOf(op).stake, MIN_STAKE + 5e18);
        assertEq(reg.totalStaked(), MIN_STAKE + 5e18);
        assertEq(token.balanceOf(address(reg)), MIN_STAKE + 5e18);
    }

    function test_addStake_reverts() public {
        (address op,) = _operator(1);
        vm.prank(op);
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.addStake(1);
        _register(op, ID, MIN_STAKE);
        vm.prank(op);
        vm.expectRevert(NodeRegistry.ZeroAmount.selector);
        reg.addStake(0);
        vm.prank(op);
        vm.expectRevert(); // no balance / allowance left
        reg.addStake(1);
    }

    // ------------------------------------------------------------- unstaking

    function test_unstake_fullCycle() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        uint64 availableAt = uint64(block.timestamp) + DELAY;
        vm.expectEmit(address(reg));
        emit NodeRegistry.UnstakeRequested(op, availableAt);
        vm.prank(op);
        reg.requestUnstake();
        // leaves the active set at once
        assertEq(reg.nodeCount(), 0);
        assertFalse(reg.isActive(op));
        assertEq(reg.nodeOf(op).unstakeAvailableAt, availableAt);
        assertEq(uint8(reg.nodeOf(op).status), uint8(NodeRegistry.Status.Unstaking));
        // identity key still held while unstaking
        assertEq(reg.operatorOfIdentity(ID), op);

        vm.warp(availableAt - 1);
        vm.prank(op);
        vm.expectRevert(abi.encodeWithSelector(NodeRegistry.UnstakeNotReady.selector, availableAt));
        reg.executeUnstake();

        vm.warp(availableAt);
        vm.expectEmit(address(reg));
        emit NodeRegistry.Unstaked(op, MIN_STAKE);
        vm.prank(op);
        reg.executeUnstake();
        assertEq(token.balanceOf(op), MIN_STAKE);
        assertEq(reg.totalStaked(), 0);
        assertEq(uint8(reg.nodeOf(op).status), uint8(NodeRegistry.Status.None));
        assertEq(reg.operatorOfIdentity(ID), address(0));
        assertEq(reg.version(), 3);
        // may register again afterwards
        _register(op, ID, MIN_STAKE);
    }

    function test_cancelUnstake() public {
        (address op,) = _operator(1);
        _register(op, ID, MIN_STAKE);
        bytes32 fp = reg.fingerprint();
        vm.prank(op);
        reg.requestUnstake();
        vm.expectEmit(address(reg));
        emit NodeRegistry.UnstakeCancelled(op);
        vm.prank(op);
        reg.cancelUnstake();
        assertTrue(reg.isActive(op));
        assertEq(reg.nodeOf(op).unstakeAvailableAt, 0);
        assertEq(reg.fingerprint(), fp); // same record, same list
        assertEq(reg.version(), 3);
    }

    function test_unstake_reverts() public {
        (address op,) = _operator(1);
        vm.startPrank(op);
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.requestUnstake();
        vm.expectRevert(NodeRegistry.NotUnstaking.selector);
        reg.cancelUnstake();
        vm.expectRevert(NodeRegistry.NotUnstaking.selector);
        reg.executeUnstake();
        vm.stopPrank();
        _register(op, ID, MIN_STAKE);
        vm.startPrank(op);
        vm.expectRevert(NodeRegistry.NotUnstaking.selector);
        reg.executeUnstake();
        reg.requestUnstake();
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.requestUnstake();
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.addStake(1);
        vm.expectRevert(NodeRegistry.NotActive.selector);
        reg.updateNode(LINK, "a:1", 1);
        vm.stopPrank();
    }

    // ------------------------------------------------------------ pagination

    function test_nodesPage() public {
        address[] memory ops = _registerN(5);
        NodeRegistry.NodeView[] memory all = reg.nodesPage(0, 100);
        assertEq(all.length, 5);
        for (uint256 i = 0; i < 5; ++i) {
            assertEq(all[i].operator, ops[i]);
            assertEq(all[i].identityKey, keccak256(abi.encode("identity", i)));
            assertEq(all[i].stake, MIN_STAKE + i);
            assertEq(all[i].role, 1);
            assertEq(all[i].linkAddress, "127.0.0.1:9001");
        }
        NodeRegistry.NodeView[] memory mid = reg.nodesPage(2, 2);
        assertEq(mid.length, 2);
        assertEq(mid[0].operator, ops[2]);
        assertEq(mid[1].operator, ops[3]);
        assertEq(reg.nodesPage(4, 10).length, 1);
        assertEq(reg.nodesPage(5, 10).length, 0);
        assertEq(reg.nodesPage(type(uint256).max, type(uint256).max).length, 0);
        assertEq(reg.nodesPage(1, type(uint256).max).length, 4);
        assertEq(reg.nodesPage(0, 0).length, 0);
    }

    function test_registryState() public {
        _registerN(3);
        (uint64 v, uint256 n, bytes32 fp) = reg.registryState();
        assertEq(v, 3);
        assertEq(n, 3);
        assertEq(fp, reg.fingerprint());
    }
}
