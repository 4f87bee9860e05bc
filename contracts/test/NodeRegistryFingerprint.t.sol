// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {NodeRegistry} from "../src/NodeRegistry.sol";
import {RegistryFixture} from "./utils/RegistryFixture.sol";

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
