// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ShieldedPool} from "../../src/zk/ShieldedPool.sol";
import {PoolVectors as P} from "./PoolVectors.sol";
import {TransferVectors as V} from "./TransferVectors.sol";
import {TransferScenario} from "./ShieldedPoolProofs.t.sol";
import {SelfFundedTokenPayment, QueueChain} from "./PoolHarness.sol";
import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";

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
        pool.insertBatch(V.insert1Proof(), V.INSERT1_ROOT, QueueChain.leaves(V.insert1Inputs(), 4));
    }
}

/// @dev A full batch: 32 queued notes (PoolVectors.FULL: 32 deposits of 1 wei of ETH with
/// inner = 1..32) into an empty tree, alone in its transaction — the figure each output's
/// insertion share is amortised on (1/32 of it per output, 1/16 per transaction).
contract ShieldedPoolFullBatchGasScenarioTest is TransferScenario {
    ShieldedPool internal fresh;

    function setUp() public {
        _deploy();
        // A second deployment (with `new`, so that the gas report lists its functions).
        fresh = new ShieldedPool(pool.transferVerifier(), pool.insertVerifier(), pool.poseidon(), address(executor), 64);
        for (uint256 i = 1; i <= 32; ++i) {
            vm.prank(user);
            fresh.deposit{value: 1}(address(0), 1, i, new bytes(V.NOTE_LEN));
        }
    }

    function test_gas_insertBatch32() public {
        fresh.insertBatch(P.fullProof(), P.FULL_ROOT, QueueChain.leaves(P.fullInputs(), 32));
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

/// @dev A relayer in steady operation: it has been credited in the token before, so the ledger's
/// balance, the relayer's balance and the liabilities are nonzero (no zero-to-nonzero writes).
contract ShieldedPoolWarmRelayerGasScenarioTest is TransferScenario {
    function setUp() public {
        _deploy();
        _insert1();
        SelfFundedTokenPayment earlier = new SelfFundedTokenPayment(token, address(ledger));
        vm.prank(user);
        token.transfer(address(earlier), 1e15);
        BatchExecutor.Bundle[] memory bs = new BatchExecutor.Bundle[](1);
        bs[0] = BatchExecutor.Bundle({
            payment: IPayment(address(earlier)),
            paymentData: "",
            asset: V.TOKEN,
            fee: 1e15,
            action: BatchExecutor.Action({target: address(0), value: 0, gas: 0, data: ""})
        });
        vm.prank(V.RELAYER);
        executor.executeBatch(bs);
        assertEq(ledger.balanceOf(V.RELAYER, V.TOKEN), 1e15);
    }

    /// The paid private transfer (2 → 2), everything but the insertion share.
    function test_gas_paidTransferWarmRelayer() public {
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_transfer()));
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
        pool.insertBatch(V.insert2Proof(), V.INSERT2_ROOT, QueueChain.leaves(V.insert2Inputs(), 8));
    }

    /// The recipient spends the two notes it received (2 → 2) and withdraws tokens directly.
    function test_gas_transactWithdraw2In() public {
        vm.prank(user);
        pool.transact(_received(), bytes32(0));
    }
}
