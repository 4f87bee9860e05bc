// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Vm} from "forge-std/Vm.sol";
import {ShieldedPool} from "../../src/zk/ShieldedPool.sol";
import {QueueChain} from "./PoolHarness.sol";
import {ShieldedPoolTransactBase} from "./ShieldedPoolTransactBase.sol";

/// The queue as a hash chain (see ShieldedPoolTransactBase).
contract ShieldedPoolQueueTest is ShieldedPoolTransactBase {
    // ---------------------------------------------------------------------------------------
    // The queue as a hash chain (issue 30): `insertBatch` takes the leaves in calldata and
    // refuses any that are not the queued commitments, in order. The insertion verifier here
    // accepts every proof, so these refusals are the chain check's alone.

    /// Queues `n` 1-wei ETH deposits (inner = base, base + 1, …) and returns their commitments.
    function _queue(uint256 n, uint256 base) internal returns (uint256[] memory c) {
        c = new uint256[](n);
        vm.deal(address(this), address(this).balance + n);
        for (uint256 i = 0; i < n; ++i) {
            pool.deposit{value: 1}(address(0), 1, base + i, new bytes(NOTE_LEN));
            c[i] = poseidon.hash([uint256(1), 0, base + i]);
        }
    }

    function _slice(uint256[] memory a, uint256 from, uint256 to) internal pure returns (uint256[] memory b) {
        b = new uint256[](to - from);
        for (uint256 i = from; i < to; ++i) {
            b[i - from] = a[i];
        }
    }

    /// `leaves` are refused with `err` and nothing changes (root, leaf slots, inserted prefix).
    function _insertRefused(uint256[] memory leaves, bytes memory err) internal {
        uint256 root = pool.currentRoot();
        uint256 slots = pool.nextLeafIndex();
        uint256 first = pool.firstUninsertedQueueIndex();
        uint256 inserted = pool.insertedQueueHash();
        uint256[8] memory none;
        vm.expectRevert(err);
        pool.insertBatch(none, ROOT + 100, leaves);
        assertEq(pool.currentRoot(), root);
        assertEq(pool.nextLeafIndex(), slots);
        assertEq(pool.firstUninsertedQueueIndex(), first);
        assertEq(pool.insertedQueueHash(), inserted);
    }

    function _insert(uint256[] memory leaves, uint256 newRoot) internal {
        uint256[8] memory none;
        pool.insertBatch(none, newRoot, leaves);
        assertEq(pool.currentRoot(), newRoot);
    }

    function test_insertBatchRefusesLeavesThatAreNotTheQueuedOnes() public {
        uint256[] memory c = _queue(4, 50);
        bytes memory mismatch = abi.encodeWithSelector(ShieldedPool.QueueMismatch.selector);
        uint256[] memory l = _slice(c, 0, 4);
        l[2] = (l[2] + 1) % R; // one leaf changed
        _insertRefused(l, mismatch);
        l = _slice(c, 0, 4);
        (l[1], l[2]) = (l[2], l[1]); // two swapped
        _insertRefused(l, mismatch);
        l = _slice(c, 0, 4);
        l[0] = c[0] + R; // the same leaf + R (an alias in the field), ≥ R
        _insertRefused(l, mismatch);
        _insertRefused(new uint256[](4), mismatch); // zeros
        _insertRefused(_slice(c, 0, 3), abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 3, 4)); // one missing
        _insertRefused(_slice(c, 1, 4), abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 3, 4));
        uint256[] memory extra = new uint256[](5);
        for (uint256 i = 0; i < 4; ++i) {
            extra[i] = c[i];
        }
        extra[4] = 1;
        _insertRefused(extra, abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 5, 4)); // one extra
        // The queued ones, in order, go through; then nothing is left to insert.
        uint256 slots = pool.nextLeafIndex();
        vm.expectEmit(address(pool));
        emit ShieldedPool.BatchInserted(slots, 2, 4, ROOT + 1);
        _insert(c, ROOT + 1);
        assertEq(pool.insertedQueueHash(), pool.queueHash());
        _insertRefused(c, abi.encodeWithSelector(ShieldedPool.NothingQueued.selector));
    }

    /// A batch ends at the next multiple of BATCH_SIZE of the queue index (a checkpoint) or at
    /// the queue's end: a later batch's leaves, or the right number of wrong leaves, are refused;
    /// each checkpoint is deleted once a batch has ended there.
    function test_insertBatchRefusesTheLeavesOfALaterBatch() public {
        uint256 b = pool.BATCH_SIZE();
        uint256 first = pool.firstUninsertedQueueIndex(); // 2 (setUp's deposits)
        uint256[] memory a = _queue(b - first, 100); // up to the first checkpoint
        uint256[] memory next = _queue(b, 200); // a whole batch
        uint256[] memory tail = _queue(3, 300); // the queue's end
        bytes memory mismatch = abi.encodeWithSelector(ShieldedPool.QueueMismatch.selector);
        assertEq(pool.queueCheckpoint(b), QueueChain.over(pool.insertedQueueHash(), a));
        assertEq(pool.queueCheckpoint(2 * b), QueueChain.over(pool.queueCheckpoint(b), next));
        _insertRefused(next, abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, b, b - first));
        _insertRefused(tail, abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 3, b - first));
        _insertRefused(_slice(next, 0, b - first), mismatch);
        _insertRefused(_slice(next, first, b), mismatch);
        _insert(a, ROOT + 1);
        assertEq(pool.queueCheckpoint(b), 0);
        _insertRefused(a, abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, a.length, b));
        _insertRefused(tail, abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 3, b));
        uint256[] memory wrong = _slice(next, 0, b);
        wrong[b - 1] = tail[0];
        _insertRefused(wrong, mismatch);
        _insert(next, ROOT + 2);
        assertEq(pool.queueCheckpoint(2 * b), 0);
        _insertRefused(_slice(tail, 0, 2), abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 2, 3));
        _insert(tail, ROOT + 3);
        assertEq(pool.firstUninsertedQueueIndex(), 2 * b + 3);
        assertEq(pool.insertedQueueHash(), pool.queueHash());
        assertEq(pool.nextLeafIndex(), 4 * b);
    }

    /// An inserter read three queued leaves and proved them; a transaction queues its two outputs
    /// before the insertion is mined: refused cheaply (the count), and the five, re-read from
    /// the events, go through.
    function test_anInsertionRacingAnEnqueueIsRefused() public {
        uint256[] memory c = _queue(3, 400);
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, pool, address(0), bytes32(0));
        pool.transact(t, bytes32(0));
        uint256[8] memory none;
        uint256 g = gasleft();
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 3, 5));
        pool.insertBatch(none, ROOT + 1, c);
        assertLt(g - gasleft(), 15_000);
        uint256[] memory five = new uint256[](5);
        (five[0], five[1], five[2], five[3], five[4]) = (c[0], c[1], c[2], t.commitments[0], t.commitments[1]);
        _insert(five, ROOT + 1);
    }

    /// The queue is what the events say: the leaves read back from `Deposited` and
    /// `Transacted` (direct and paid), placed by the queue indexes the events carry, extend the
    /// inserted chain to `queueHash()` and are accepted by `insertBatch`.
    function test_theQueueIsWhatTheEventsSay() public {
        vm.recordLogs();
        vm.deal(address(this), 1);
        pool.deposit{value: 1}(address(0), 1, 500, new bytes(NOTE_LEN));
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, pool, address(0), bytes32(0));
        pool.transact(t, bytes32(0));
        assertTrue(_execute(_provenPaymentOnly(_tx(address(token), 0, 0, 1e15, address(0)))));
        vm.prank(user);
        token.transfer(address(this), 1);
        pool.deposit(address(token), 1, 501, new bytes(NOTE_LEN));
        Vm.Log[] memory logs = vm.getRecordedLogs();

        uint256 first = pool.firstUninsertedQueueIndex();
        uint256[] memory leaves = new uint256[](pool.nextQueueIndex() - first);
        uint256 found;
        for (uint256 i = 0; i < logs.length; ++i) {
            if (logs[i].emitter != address(pool)) continue;
            if (logs[i].topics[0] == ShieldedPool.Deposited.selector) {
                (uint256 commitment,,) = abi.decode(logs[i].data, (uint256, uint256, bytes));
                leaves[uint256(logs[i].topics[1]) - first] = commitment;
                found += 1;
            } else if (logs[i].topics[0] == ShieldedPool.Transacted.selector) {
                (uint256 q,, uint256[2] memory cms) = abi.decode(logs[i].data, (uint256, uint256[2], uint256[2]));
                leaves[q - first] = cms[0];
                leaves[q + 1 - first] = cms[1];
                found += 2;
            }
        }
        assertEq(found, 6);
        assertEq(QueueChain.over(pool.insertedQueueHash(), leaves), pool.queueHash());
        _insert(leaves, ROOT + 1);
    }
}
