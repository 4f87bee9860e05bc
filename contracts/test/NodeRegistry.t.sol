// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";

/// @dev A token that keeps 1% of every transfer: the registry must refuse it.
contract FeeOnTransferToken is ERC20 {
    constructor(address holder) ERC20("Fee", "FEE") {
        _mint(holder, 1e30);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from != address(0) && to != address(0)) {
            uint256 fee = value / 100;
            super._update(from, address(0xFEE), fee);
            value -= fee;
        }
        super._update(from, to, value);
    }
}

/// @dev Operator actions, with msg.sender == tx.origin (operators are EOAs).
contract RegistryFixture is Test {
    uint256 internal constant MIN_STAKE = 1_000e18;
    uint64 internal constant DELAY = 7 days;
    uint16 internal constant REPORTER_BPS = 1_000; // 10 %

    NoxStakeToken internal token;
    NodeRegistry internal reg;

    function setUp() public virtual {
        token = new NoxStakeToken(address(this), 1e30);
        reg = new NodeRegistry(IERC20(address(token)), MIN_STAKE, DELAY, REPORTER_BPS);
    }

    function _operator(uint256 i) internal returns (address op, uint256 key) {
        key = uint256(keccak256(abi.encode("operator", i))) % (type(uint128).max) + 1;
        op = vm.addr(key);
    }

    function _fund(address op, uint256 amount) internal {
        token.transfer(op, amount);
        vm.prank(op, op);
        token.approve(address(reg), type(uint256).max);
    }

    function _register(address op, bytes32 identity, uint256 stake) internal {
        _fund(op, stake);
        vm.prank(op, op);
        reg.register(identity, keccak256(abi.encode("link", identity)), "127.0.0.1:9001", 1, stake);
    }

    function _registerN(uint256 n) internal returns (address[] memory ops) {
        ops = new address[](n);
        for (uint256 i = 0; i < n; ++i) {
            (ops[i],) = _operator(i);
            _register(ops[i], keccak256(abi.encode("identity", i)), MIN_STAKE + i);
        }
    }

    function _sign(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }
}

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

contract FingerprintTest is RegistryFixture {
    /// @dev The fingerprint recomputed from nodesPage alone, as the Rust side does it.
    function _offchainFingerprint() internal view returns (bytes32) {
        NodeRegistry.NodeView[] memory page = reg.nodesPage(0, type(uint256).max);
        bytes memory buf = abi.encode(block.chainid, address(reg));
        for (uint256 i = 0; i < page.length; ++i) {
            NodeRegistry.NodeView memory v = page[i];
            bytes32 h = keccak256(
                abi.encode(
                    v.operator, v.identityKey, v.linkKey, keccak256(bytes(v.linkAddress)), v.role, v.stake, uint64(0)
                )
            );
            buf = bytes.concat(buf, h);
        }
        return keccak256(buf);
    }

    function test_emptyRegistry() public view {
        assertEq(reg.fingerprint(), keccak256(abi.encode(block.chainid, address(reg))));
    }

    function test_matchesOffchainRecomputation() public {
        _registerN(7);
        assertEq(reg.fingerprint(), _offchainFingerprint());
        (address op,) = _operator(3);
        vm.prank(op);
        reg.requestUnstake(); // swap-and-pop reorders the list; the recomputation follows it
        assertEq(reg.fingerprint(), _offchainFingerprint());
    }

    function test_bindsChainId() public {
        _registerN(2);
        bytes32 fp = reg.fingerprint();
        vm.chainId(999);
        assertTrue(reg.fingerprint() != fp);
    }

    function test_everyFieldChangesIt() public {
        address[] memory ops = _registerN(3);
        address op = ops[1];
        bytes32[] memory seen = new bytes32[](8);
        uint256 k;
        seen[k++] = reg.fingerprint();

        vm.prank(op);
        reg.rotateIdentityKey(bytes32(uint256(0x1234))); // identity
        seen[k++] = reg.fingerprint();
        vm.prank(op);
        reg.updateNode(bytes32(uint256(0x5678)), "127.0.0.1:9001", 1); // link key only
        seen[k++] = reg.fingerprint();
        vm.prank(op);
        reg.updateNode(bytes32(uint256(0x5678)), "127.0.0.1:9002", 1); // address only
        seen[k++] = reg.fingerprint();
        vm.prank(op);
        reg.updateNode(bytes32(uint256(0x5678)), "127.0.0.1:9002", 3); // role only
        seen[k++] = reg.fingerprint();
        _fund(op, 1);
        vm.prank(op);
        reg.addStake(1); // stake only
        seen[k++] = reg.fingerprint();
        vm.prank(op);
        reg.requestUnstake(); // status (leaves the list)
        seen[k++] = reg.fingerprint();
        (address newcomer,) = _operator(100);
        _register(newcomer, bytes32(uint256(0xfeed)), MIN_STAKE); // membership
        seen[k++] = reg.fingerprint();

        for (uint256 i = 0; i < k; ++i) {
            for (uint256 j = i + 1; j < k; ++j) {
                assertTrue(seen[i] != seen[j], "fingerprint repeated");
            }
        }
    }

    /// @dev Two nodes swapping their link addresses: an XOR over addresses (or over records)
    /// would not notice when the swap keeps the multiset; the record hashes bind each address
    /// to its operator.
    function test_swapBetweenNodesChangesIt() public {
        address[] memory ops = _registerN(2);
        vm.prank(ops[0]);
        reg.updateNode(keccak256(abi.encode("link", keccak256(abi.encode("identity", 0)))), "10.0.0.1:1", 1);
        vm.prank(ops[1]);
        reg.updateNode(keccak256(abi.encode("link", keccak256(abi.encode("identity", 1)))), "10.0.0.2:2", 1);
        bytes32 before = reg.fingerprint();
        vm.prank(ops[0]);
        reg.updateNode(keccak256(abi.encode("link", keccak256(abi.encode("identity", 0)))), "10.0.0.2:2", 1);
        vm.prank(ops[1]);
        reg.updateNode(keccak256(abi.encode("link", keccak256(abi.encode("identity", 1)))), "10.0.0.1:1", 1);
        assertTrue(reg.fingerprint() != before);
    }

    /// @dev XOR-of-records cancels when two records are equal or when a change is undone in
    /// another record; the ordered hash chain does not. Shown on the record hashes themselves.
    function test_noCancellationUnlikeXor() public {
        address[] memory ops = _registerN(2);
        bytes32 h0 = reg.nodeOf(ops[0]).recordHash;
        bytes32 h1 = reg.nodeOf(ops[1]).recordHash;
        bytes32 h;
        // An XOR fingerprint of {h0, h1, h1} equals that of {h0}: duplicates cancel.
        assertEq(h0 ^ h1 ^ h1, h0);
        // Ours: a list with an extra pair differs from the list without it.
        h = keccak256(abi.encode(block.chainid, address(reg), h0, h1, h1));
        assertTrue(h != keccak256(abi.encode(block.chainid, address(reg), h0)));
        // And the live fingerprint differs from the one-node list.
        assertTrue(reg.fingerprint() != keccak256(abi.encode(block.chainid, address(reg), h0)));
        assertEq(reg.fingerprint(), keccak256(abi.encode(block.chainid, address(reg), h0, h1)));
    }

    /// @dev Fuzz: any single-field change of one node changes the fingerprint.
    function testFuzz_singleFieldChange(uint8 which, bytes32 value, uint8 roleSeed, uint16 port) public {
        address[] memory ops = _registerN(3);
        address op = ops[uint256(which) % 3];
        bytes32 before = reg.fingerprint();
        NodeRegistry.Node memory n = reg.nodeOf(op);
        uint256 field = uint256(which) % 4;
        vm.startPrank(op);
        if (field == 0) {
            vm.assume(value != bytes32(0) && reg.operatorOfIdentity(value) == address(0));
            reg.rotateIdentityKey(value);
        } else if (field == 1) {
            vm.assume(value != bytes32(0) && value != n.linkKey);
            reg.updateNode(value, n.linkAddress, n.role);
        } else if (field == 2) {
            string memory addr = string.concat("127.0.0.1:", vm.toString(uint256(port)));
            vm.assume(keccak256(bytes(addr)) != keccak256(bytes(n.linkAddress)));
            reg.updateNode(n.linkKey, addr, n.role);
        } else {
            uint8 role = uint8(bound(roleSeed, 1, 3));
            vm.assume(role != n.role);
            reg.updateNode(n.linkKey, n.linkAddress, role);
        }
        vm.stopPrank();
        assertTrue(reg.fingerprint() != before);
        assertEq(reg.fingerprint(), _offchainFingerprint());
    }
}

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
