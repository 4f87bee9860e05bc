// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";

/// @dev The known-answer vectors of docs/spec/registry.md §7, checked against the contracts.
/// The expected values were computed independently with `cast` (keccak, abi-encode, wallet
/// sign), not with Solidity. The registry sits at Anvil's first deployment address on chain
/// 31337, as in the testnet.
contract VectorsTest is Test {
    address constant REG = 0x5FbDB2315678afecb367f032d93F642f64180aa3;
    address constant OP1 = 0x70997970C51812dc3A010C7d01b50e0d17dc79C8; // Anvil account 1
    uint256 constant OP1_KEY = 0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d;
    address constant OP2 = 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC; // Anvil account 2

    NoxStakeToken token;
    NodeRegistry reg;

    function setUp() public {
        vm.chainId(31337);
        token = new NoxStakeToken(address(this), 1e30);
        NodeRegistry built = new NodeRegistry(IERC20(address(token)), 1_000e18, 1 days, 1_000);
        vm.etch(REG, address(built).code); // runtime code carries the immutables
        reg = NodeRegistry(REG);
        token.transfer(OP1, 1_000e18);
        token.transfer(OP2, 2_500e18);
        vm.prank(OP1);
        token.approve(REG, type(uint256).max);
        vm.prank(OP2);
        token.approve(REG, type(uint256).max);
    }

    function test_vector_fingerprint() public {
        assertEq(reg.fingerprint(), 0x4eff3c5b1f35f65d2bda0ccda908c188864ba7e5ec40a4fd1eb5969fe8758cae);
        vm.prank(OP1, OP1);
        reg.register(
            0x1111111111111111111111111111111111111111111111111111111111111111,
            0x2222222222222222222222222222222222222222222222222222222222222222,
            "127.0.0.1:9001",
            3,
            1_000e18
        );
        vm.prank(OP2, OP2);
        reg.register(
            0x3333333333333333333333333333333333333333333333333333333333333333,
            0x4444444444444444444444444444444444444444444444444444444444444444,
            "127.0.0.1:9002",
            1,
            2_500e18
        );
        assertEq(reg.nodeOf(OP1).recordHash, 0x83a5ddd13397c742b72e6cfad40f27ad24004b76a4c8a97723aef70bab9125c7);
        assertEq(reg.nodeOf(OP2).recordHash, 0xa9c3a6bb42dc07275ebda6456a6da0e2a35eeca5d7bb0ab6b70975e17269871e);
        assertEq(reg.fingerprint(), 0xe239b7fdf13448fa01ab6b781ccad363327aa504e6d11833593339e1e7bc8ba0);
    }

    function test_vector_epochKeys() public view {
        assertEq(reg.domainSeparator(), 0x7cd034f74f2dfaa8877275373b70d084bd037090803072a980c10b299373a5fa);
        assertEq(reg.EPOCH_KEYS_TYPEHASH(), 0xd4a3239f73974f642b21467ba399ce17f61dbfbd228eceddeb0ed4f898a20661);
        bytes32 digest = reg.epochKeysDigest(OP1, 7, 0x5555555555555555555555555555555555555555555555555555555555555555);
        assertEq(digest, 0x5e0fb4a40095786d17c290f8a2821974c7a0cf6fe1dc56f7b1357542f823ad00);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(OP1_KEY, digest);
        assertEq(
            abi.encodePacked(r, s, v),
            hex"d74db635243f1b31b9e401643885e1bb1044c04a89a9187157f1b061e1a8a4b966fcba1a94749ba2fa7138c883cf26c3b005298399e703d244799b0a20be466c1b"
        );
    }

    function test_vector_executionHash() public {
        BatchExecutor executor = new BatchExecutor();
        (bytes32 raw, uint256 field) =
            executor.executionHash(0x1234567890123456789012345678901234567890, hex"deadbeef", 1e18, 100_000);
        assertEq(raw, 0xbaed3e77b325db5685930e8153868ebf1703c7dccda986dcd162219109977e87);
        assertEq(field, 0x29c0531f0f90fad95ca23d5dcf0285a79e680f03607d352905bc40d539977e84);
        assertEq(
            new Erc20Payment(executor).PAYMENT_TYPEHASH(),
            0x19645dea3eb810eb7cecb657cc347c797531d2cce05ace4dcd8fc9aebfc9b46a
        );
    }
}
