// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {RegistryFixture} from "./utils/RegistryFixture.sol";

contract SlashingTest is RegistryFixture {
    address op;
    uint256 opKey;
    bytes32 constant ID = bytes32(uint256(0x1d));
    address reporter = address(0x5ee);

    function setUp() public override {
        super.setUp();
        (op, opKey) = _operator(1);
        _register(op, ID, 2 * MIN_STAKE);
    }

    function _evidence(uint32 epoch, bytes32 a, bytes32 b) internal returns (bytes memory sa, bytes memory sb) {
        sa = _sign(opKey, reg.epochKeysDigest(op, epoch, a));
        sb = _sign(opKey, reg.epochKeysDigest(op, epoch, b));
    }

    function test_epochKeysDigest_isEip712() public view {
        bytes32 domain = keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("NOX NodeRegistry"),
                keccak256("1"),
                block.chainid,
                address(reg)
            )
        );
        assertEq(reg.domainSeparator(), domain);
        bytes32 structHash = keccak256(
            abi.encode(
                keccak256("EpochKeys(address operator,uint32 epoch,bytes32 keysHash)"),
                op,
                uint32(7),
                bytes32(uint256(9))
            )
        );
        assertEq(
            reg.epochKeysDigest(op, 7, bytes32(uint256(9))), keccak256(abi.encodePacked(hex"1901", domain, structHash))
        );
    }

    function test_slash_activeNode() public {
        (bytes memory sa, bytes memory sb) = _evidence(42, bytes32("keysA"), bytes32("keysB"));
        uint256 stake = 2 * MIN_STAKE;
        uint256 reward = stake * REPORTER_BPS / 10_000;
        vm.expectEmit(address(reg));
        emit NodeRegistry.Slashed(op, reporter, 42, stake, reward, stake - reward);
        vm.prank(reporter);
        reg.slashEquivocation(op, 42, bytes32("keysA"), sa, bytes32("keysB"), sb);

        assertEq(token.balanceOf(reporter), reward);
        assertEq(token.balanceOf(reg.BURN_ADDRESS()), stake - reward);
        assertEq(token.balanceOf(address(reg)), 0);
        assertEq(reg.totalStaked(), 0);
        assertEq(reg.nodeCount(), 0);
        assertEq(uint8(reg.nodeOf(op).status), uint8(NodeRegistry.Status.None));
        assertTrue(reg.identityKeyBurned(ID));
        assertTrue(reg.operatorSlashed(op));
        assertEq(reg.operatorOfIdentity(ID), address(0));

        // the identity key stays blocked, for everyone
        (address other,) = _operator(2);
        _fund(other, MIN_STAKE);
        vm.prank(other, other);
        vm.expectRevert(NodeRegistry.IdentityKeyIsBurned.selector);
        reg.register(ID, bytes32(uint256(1)), "a:1", 1, MIN_STAKE);
        // and the operator may not come back under a new key
        _fund(op, MIN_STAKE);
        vm.prank(op, op);
        vm.expectRevert(NodeRegistry.OperatorWasSlashed.selector);
        reg.register(bytes32(uint256(77)), bytes32(uint256(1)), "a:1", 1, MIN_STAKE);
        // no second slash of the same evidence
        vm.expectRevert(NodeRegistry.NotRegistered.selector);
        reg.slashEquivocation(op, 42, bytes32("keysA"), sa, bytes32("keysB"), sb);
    }

    function test_slash_unstakingNode() public {
        vm.prank(op);
        reg.requestUnstake();
        vm.warp(block.timestamp + DELAY - 1);
        (bytes memory sa, bytes memory sb) = _evidence(1, bytes32("a"), bytes32("b"));
        vm.prank(reporter);
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("b"), sb);
        assertEq(token.balanceOf(reporter), 2 * MIN_STAKE / 10);
        vm.prank(op);
        vm.expectRevert(NodeRegistry.NotUnstaking.selector);
        reg.executeUnstake();
    }

    function test_slash_rotatedIdentityBurnsCurrentKey() public {
        vm.prank(op);
        reg.rotateIdentityKey(bytes32(uint256(0xabc)));
        (bytes memory sa, bytes memory sb) = _evidence(1, bytes32("a"), bytes32("b"));
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("b"), sb);
        assertTrue(reg.identityKeyBurned(bytes32(uint256(0xabc))));
    }

    function test_slash_rejectsSameKeys() public {
        (bytes memory sa,) = _evidence(1, bytes32("a"), bytes32("b"));
        vm.expectRevert(NodeRegistry.NotEquivocation.selector);
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("a"), sa);
    }

    function test_slash_rejectsDifferentEpochs() public {
        bytes memory sa = _sign(opKey, reg.epochKeysDigest(op, 1, bytes32("a")));
        bytes memory sb = _sign(opKey, reg.epochKeysDigest(op, 2, bytes32("b")));
        vm.expectRevert(NodeRegistry.WrongSigner.selector);
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("b"), sb);
    }

    function test_slash_rejectsOtherSigner() public {
        (, uint256 otherKey) = _operator(9);
        bytes memory sa = _sign(opKey, reg.epochKeysDigest(op, 1, bytes32("a")));
        bytes memory sb = _sign(otherKey, reg.epochKeysDigest(op, 1, bytes32("b")));
        vm.expectRevert(NodeRegistry.WrongSigner.selector);
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("b"), sb);
        vm.expectRevert(NodeRegistry.WrongSigner.selector);
        reg.slashEquivocation(op, 1, bytes32("b"), sb, bytes32("a"), sa);
    }

    function test_slash_rejectsUnregistered() public {
        (address stranger, uint256 key) = _operator(5);
        bytes memory sa = _sign(key, reg.epochKeysDigest(stranger, 1, bytes32("a")));
        bytes memory sb = _sign(key, reg.epochKeysDigest(stranger, 1, bytes32("b")));
        vm.expectRevert(NodeRegistry.NotRegistered.selector);
        reg.slashEquivocation(stranger, 1, bytes32("a"), sa, bytes32("b"), sb);
    }

    function test_slash_rejectsMalleableSignature() public {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(opKey, reg.epochKeysDigest(op, 1, bytes32("a")));
        bytes memory sb = _sign(opKey, reg.epochKeysDigest(op, 1, bytes32("b")));
        // the other valid signature of the same digest: (r, n - s, v ^ 1)
        uint256 n = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;
        bytes memory high = abi.encodePacked(r, bytes32(n - uint256(s)), v == 27 ? uint8(28) : uint8(27));
        vm.expectRevert(abi.encodeWithSelector(ECDSA.ECDSAInvalidSignatureS.selector, bytes32(n - uint256(s))));
        reg.slashEquivocation(op, 1, bytes32("a"), high, bytes32("b"), sb);
        vm.expectRevert(abi.encodeWithSelector(ECDSA.ECDSAInvalidSignatureLength.selector, 3));
        reg.slashEquivocation(op, 1, bytes32("a"), hex"010203", bytes32("b"), sb);
    }

    function test_slash_signatureBoundToRegistry() public {
        // a signature under another registry's domain is not evidence here
        NodeRegistry other = new NodeRegistry(IERC20(address(token)), MIN_STAKE, DELAY, REPORTER_BPS);
        bytes memory sa = _sign(opKey, other.epochKeysDigest(op, 1, bytes32("a")));
        bytes memory sb = _sign(opKey, other.epochKeysDigest(op, 1, bytes32("b")));
        vm.expectRevert(NodeRegistry.WrongSigner.selector);
        reg.slashEquivocation(op, 1, bytes32("a"), sa, bytes32("b"), sb);
    }

    function test_slash_zeroReporterShareBurnsAll() public {
        NodeRegistry r = new NodeRegistry(IERC20(address(token)), MIN_STAKE, DELAY, 0);
        (address o, uint256 k) = _operator(3);
        token.transfer(o, MIN_STAKE);
        vm.startPrank(o, o);
        token.approve(address(r), MIN_STAKE);
        r.register(bytes32(uint256(5)), bytes32(uint256(6)), "a:1", 1, MIN_STAKE);
        vm.stopPrank();
        bytes memory sa = _sign(k, r.epochKeysDigest(o, 1, bytes32("a")));
        bytes memory sb = _sign(k, r.epochKeysDigest(o, 1, bytes32("b")));
        vm.prank(reporter);
        r.slashEquivocation(o, 1, bytes32("a"), sa, bytes32("b"), sb);
        assertEq(token.balanceOf(reporter), 0);
        assertEq(token.balanceOf(r.BURN_ADDRESS()), MIN_STAKE);
    }

    function testFuzz_slash(uint32 epoch, bytes32 a, bytes32 b, uint256 extra) public {
        vm.assume(a != b);
        extra = bound(extra, 0, 1e24);
        if (extra > 0) {
            _fund(op, extra);
            vm.prank(op);
            reg.addStake(extra);
        }
        (bytes memory sa, bytes memory sb) = _evidence(epoch, a, b);
        uint256 stake = 2 * MIN_STAKE + extra;
        vm.prank(reporter);
        reg.slashEquivocation(op, epoch, a, sa, b, sb);
        uint256 reward = token.balanceOf(reporter);
        assertEq(reward, stake * REPORTER_BPS / 10_000);
        assertEq(reward + token.balanceOf(reg.BURN_ADDRESS()), stake);
    }
}
