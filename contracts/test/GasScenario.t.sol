// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {NodeRegistry} from "../src/NodeRegistry.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {RewardLedger} from "../src/RewardLedger.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";

/// @dev The gas every action of this file is bound to (`Action.gas`).
uint256 constant ACTION_GAS = 100_000;

contract GasTarget {
    uint256 public value;

    function set(uint256 v) external {
        value = v;
    }

    function fail() external pure {
        revert("no");
    }
}

/// @dev Successful, typical calls only, so that `forge test --gas-report --isolate
/// --match-contract GasScenario` reports what a transaction costs (docs/benchmarks/gas.md).
/// Every registry scenario starts from a registry of 9 nodes (the testnet's size).
contract GasScenarioTest is Test {
    NoxStakeToken token;
    NodeRegistry reg;
    BatchExecutor executor;
    RewardLedger ledger;
    Erc20Payment erc20;
    GasTarget target;
    uint256[] keys;
    address[] ops;
    uint256 payerKey = 0xB0B;
    address payer;
    address relayer;

    function setUp() public {
        token = new NoxStakeToken(address(this), 1e40);
        reg = new NodeRegistry(IERC20(address(token)), 1_000e18, 7 days, 1_000);
        for (uint256 i = 0; i < 12; ++i) {
            keys.push(0x1000 + i);
            ops.push(vm.addr(0x1000 + i));
            token.transfer(ops[i], 10_000e18);
            vm.prank(ops[i]);
            token.approve(address(reg), type(uint256).max);
        }
        for (uint256 i = 0; i < 9; ++i) {
            _register(i);
        }
        executor = new BatchExecutor();
        ledger = executor.ledger();
        erc20 = new Erc20Payment(executor);
        target = new GasTarget();
        payer = vm.addr(payerKey);
        relayer = makeAddr("relayer");
        token.transfer(payer, 1_000e18);
        vm.prank(payer);
        token.approve(address(erc20), type(uint256).max);
    }

    function _register(uint256 i) internal {
        vm.prank(ops[i], ops[i]);
        reg.register(bytes32(0x1000 + i), bytes32(0x2000 + i), "203.0.113.10:9001", 1, 1_000e18);
    }

    function _bundle(bytes memory data, uint256 nonce) internal view returns (BatchExecutor.Bundle memory b) {
        uint256 fee = 1e18;
        (bytes32 h,) = executor.executionHash(address(target), data, fee, ACTION_GAS);
        bytes32 digest = erc20.paymentDigest(payer, address(token), fee, relayer, h, nonce, block.timestamp + 600);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(payerKey, digest);
        b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: abi.encode(
                Erc20Payment.PaymentData(
                    payer, address(token), fee, nonce, block.timestamp + 600, abi.encodePacked(r, s, v)
                )
            ),
            asset: address(token),
            fee: fee,
            action: BatchExecutor.Action(address(target), 0, ACTION_GAS, data)
        });
    }

    function test_gas_register10th() public {
        _register(9);
    }

    function test_gas_nodeChanges() public {
        vm.prank(ops[0]);
        reg.rotateIdentityKey(bytes32(uint256(0xabc)));
        vm.prank(ops[1]);
        reg.updateNode(bytes32(uint256(0xdef)), "203.0.113.11:9001", 3);
        vm.prank(ops[2]);
        reg.addStake(500e18);
    }

    function test_gas_unstakeCycle() public {
        vm.prank(ops[3]);
        reg.requestUnstake();
        vm.prank(ops[3]);
        reg.cancelUnstake();
        vm.prank(ops[4]);
        reg.requestUnstake();
        vm.warp(block.timestamp + 7 days);
        vm.prank(ops[4]);
        reg.executeUnstake();
    }

    function test_gas_slash() public {
        address op = ops[5];
        (uint8 v1, bytes32 r1, bytes32 s1) = vm.sign(keys[5], reg.epochKeysDigest(op, 3, bytes32("a")));
        (uint8 v2, bytes32 r2, bytes32 s2) = vm.sign(keys[5], reg.epochKeysDigest(op, 3, bytes32("b")));
        reg.slashEquivocation(
            op, 3, bytes32("a"), abi.encodePacked(r1, s1, v1), bytes32("b"), abi.encodePacked(r2, s2, v2)
        );
    }

    function test_gas_views9() public view {
        reg.fingerprint();
        reg.registryState();
        reg.nodesPage(0, 100);
        reg.nodeCount();
        reg.nodeOf(ops[0]);
    }

    function test_gas_views100() public {
        for (uint256 i = 0; i < 91; ++i) {
            address op = vm.addr(0x9000 + i);
            token.transfer(op, 1_000e18);
            vm.startPrank(op, op);
            token.approve(address(reg), 1_000e18);
            reg.register(bytes32(0x9000 + i), bytes32(uint256(1)), "203.0.113.10:9001", 2, 1_000e18);
            vm.stopPrank();
        }
        reg.fingerprint();
        reg.nodesPage(0, 100);
    }

    function test_gas_executeSuccess() public {
        BatchExecutor.Bundle memory b = _bundle(abi.encodeCall(GasTarget.set, (42)), 1);
        vm.prank(relayer);
        executor.execute(b);
    }

    function test_gas_executeActionReverts() public {
        BatchExecutor.Bundle memory b = _bundle(abi.encodeCall(GasTarget.fail, ()), 1);
        vm.prank(relayer);
        executor.execute(b);
    }

    function test_gas_executeBatch5() public {
        BatchExecutor.Bundle[] memory bs = new BatchExecutor.Bundle[](5);
        for (uint256 i = 0; i < 5; ++i) {
            bs[i] = _bundle(abi.encodeCall(GasTarget.set, (i + 1)), i + 1);
        }
        vm.prank(relayer);
        executor.executeBatch(bs);
    }

    function test_gas_claim() public {
        BatchExecutor.Bundle memory b = _bundle(abi.encodeCall(GasTarget.set, (42)), 1);
        vm.prank(relayer);
        executor.execute(b);
        vm.prank(relayer);
        ledger.claim(address(token), relayer);
    }

    function test_gas_cancelNonce() public {
        vm.prank(payer);
        erc20.cancelNonce(77);
    }
}
