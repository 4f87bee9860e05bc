// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";
import {InsertVerifier} from "../../src/zk/InsertVerifier.sol";
import {IPoseidon3} from "../../src/zk/Poseidon.sol";
import {ShieldedPool, ITransferVerifier, IInsertVerifier} from "../../src/zk/ShieldedPool.sol";
import {PoolVectors as V} from "./PoolVectors.sol";
import {ExpectingTransferVerifier} from "./PoolHarness.sol";

/// @dev The gas every action of this file is bound to (`Action.gas`).
uint256 constant ACTION_GAS = V.ACTION_GAS;

/// @dev Successful, typical calls of the shielded pool with real proofs, measured by
/// `contracts/gas.sh` (`--isolate`: each top-level call is a transaction, intrinsic gas and
/// calldata included) and gated by gas-snapshot.txt (docs/benchmarks/gas.md).
contract ShieldedPoolGasScenarioTest is Test {
    address internal user = makeAddr("user");
    BatchExecutor internal executor;
    ShieldedPool internal pool;
    ERC20 internal token;

    function setUp() public {
        ITransferVerifier sv = ITransferVerifier(address(new ExpectingTransferVerifier()));
        IInsertVerifier iv = IInsertVerifier(address(new InsertVerifier()));
        IPoseidon3 poseidon = IPoseidon3(deployCode("PoseidonT4.sol:PoseidonT4"));
        executor = new BatchExecutor();
        deployCodeTo("PoolHarness.sol:PoolTestToken", abi.encode(user, 100e18), V.TOKEN);
        token = ERC20(V.TOKEN);
        deployCodeTo("PoolHarness.sol:Counter", V.TARGET);
        deployCodeTo("ShieldedPool.sol:ShieldedPool", abi.encode(sv, iv, poseidon, address(executor), 64), V.POOL);
        pool = ShieldedPool(payable(V.POOL));
        vm.deal(user, 100 ether);
        vm.startPrank(user);
        token.approve(V.POOL, type(uint256).max);
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER0, new bytes(96));
        pool.deposit{value: V.DEPOSIT}(address(0), V.DEPOSIT, V.INNER1, new bytes(96));
        vm.stopPrank();
    }

    /// A deposit of an ERC-20 with a 96-byte memo (the wallet's size).
    function test_gas_depositToken() public {
        vm.prank(user);
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER2, new bytes(96));
    }

    function test_gas_depositEth() public {
        vm.prank(user);
        pool.deposit{value: 1}(address(0), 1, V.INNER2, new bytes(96));
    }

    /// A batch of the 2 queued notes.
    function test_gas_insertBatch2() public {
        pool.insertBatch(V.insert1Proof(), V.INSERT1_ROOT, 2);
    }

    /// A full batch of 16 notes into a fresh pool (the figure a note's insertion is amortised on).
    function test_gas_insertBatch16() public {
        // A second deployment whose queue is empty (deployed with `new`, so that the gas
        // report lists its functions): the full batch's 16 deposits of 1 wei.
        ShieldedPool p =
            new ShieldedPool(pool.transferVerifier(), pool.insertVerifier(), pool.poseidon(), address(executor), 64);
        for (uint256 i = 1; i <= 16; ++i) {
            vm.prank(user);
            p.deposit{value: 1}(address(0), 1, i, "");
        }
        p.insertBatch(V.fullProof(), V.FULL_ROOT, 16);
        assertEq(p.nextLeafIndex(), 16);
    }
}
