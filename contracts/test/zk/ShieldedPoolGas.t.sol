// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ShieldedPool} from "../../src/zk/ShieldedPool.sol";
import {PoolVectors as P} from "./PoolVectors.sol";
import {TransferVectors as V} from "./TransferVectors.sol";
import {TransferScenario} from "./ShieldedPoolProofs.t.sol";

/// @dev Successful, typical calls of the shielded pool with real proofs (TransferVectors),
/// measured by `contracts/gas.sh` (`--isolate`: each top-level call is a transaction, intrinsic
/// gas and calldata included) and gated by gas-snapshot.txt (docs/benchmarks/gas.md). Each test
/// makes exactly the one call it is named after; the state it needs is built in setUp.
contract ShieldedPoolGasScenarioTest is TransferScenario {
    function setUp() public {
        _deploy();
    }

    /// A deposit of an ERC-20 with a note-sized memo (the wallet's size).
    function test_gas_depositToken() public {
        vm.prank(user);
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER2, new bytes(V.NOTE_LEN));
    }

    function test_gas_depositEth() public {
        vm.prank(user);
        pool.deposit{value: 1}(address(0), 1, V.INNER2, new bytes(V.NOTE_LEN));
    }

    /// A batch of the 4 queued deposits.
    function test_gas_insertBatch4() public {
        pool.insertBatch(V.insert1Proof(), V.INSERT1_ROOT, 4);
    }

    /// A full batch of 16 notes into a fresh pool (the figure a note's insertion is amortised on).
    function test_gas_insertBatch16() public {
        // A second deployment whose queue is empty (deployed with `new`, so that the gas
        // report lists its functions): the full batch's 16 deposits of 1 wei (PoolVectors.FULL).
        ShieldedPool p =
            new ShieldedPool(pool.transferVerifier(), pool.insertVerifier(), pool.poseidon(), address(executor), 64);
        for (uint256 i = 1; i <= 16; ++i) {
            vm.prank(user);
            p.deposit{value: 1}(address(0), 1, i, "");
        }
        p.insertBatch(P.fullProof(), P.FULL_ROOT, 16);
        assertEq(p.nextLeafIndex(), 16);
    }
}

/// @dev The private transactions, each as its own transaction after INSERT1.
contract ShieldedPoolTransactGasScenarioTest is TransferScenario {
    function setUp() public {
        _deploy();
        _insert1();
    }

    /// A split (1 → 2), direct: `transact`, nothing public.
    function test_gas_transactSplit() public {
        vm.prank(user);
        pool.transact(_split(), bytes32(0));
    }

    /// A private transfer (2 → 2) paid through a relayer: the whole `executeBatch` of a
    /// payment-only bundle (verify, 2 nullifiers, 2 outputs queued, the event, the fee to the
    /// ledger, the relayer's credit). Its first credit: the ledger's slots go from zero.
    function test_gas_paidTransfer() public {
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_transfer()));
    }

    /// A withdrawal (ETH) paid through a relayer: publicOut to the recipient, the fee credited.
    function test_gas_paidWithdrawal() public {
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_withdraw()));
    }

    /// A deposit into notes through `transact` (0 → 1 + a zero note), ETH.
    function test_gas_transactDepositIn() public {
        vm.prank(user);
        pool.transact{value: V.DEPOSIT}(_depositIn(), bytes32(0));
    }
}

/// @dev After every transaction of the vectors and INSERT2: the recipient's 2 → 2 withdrawal.
contract ShieldedPoolReceivedGasScenarioTest is TransferScenario {
    function setUp() public {
        _deploy();
        _insert1();
        vm.prank(user);
        pool.transact(_split(), bytes32(0));
        vm.startPrank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_transfer()));
        executor.executeBatch(_paymentOnly(_withdraw()));
        vm.stopPrank();
        vm.prank(user);
        pool.transact{value: V.DEPOSIT}(_depositIn(), bytes32(0));
        pool.insertBatch(V.insert2Proof(), V.INSERT2_ROOT, 8);
    }

    /// The recipient spends the two notes it received (2 → 2) and withdraws tokens directly.
    function test_gas_transactWithdraw2In() public {
        vm.prank(user);
        pool.transact(_received(), bytes32(0));
    }
}
