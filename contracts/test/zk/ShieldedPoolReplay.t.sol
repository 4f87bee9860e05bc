// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {ShieldedPool, ITransferVerifier, IInsertVerifier} from "../../src/zk/ShieldedPool.sol";
import {Counter, QueueChain} from "./PoolHarness.sol";
import {ShieldedPoolTransactBase} from "./ShieldedPoolTransactBase.sol";

/// A proof replayed with anything else, and `pay` outside its payment phase (see
/// ShieldedPoolTransactBase).
contract ShieldedPoolReplayTest is ShieldedPoolTransactBase {
    // ---------------------------------------------------------------------------------------
    // A proof replayed with anything else: each refused by the verifier, because the pool feeds
    // it from its own context

    function test_replayWithAnotherFeeIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(token), 0, 0, 3e15, address(0));
        _provenPaymentOnly(t);
        uint256[2] memory other = [uint256(3e15 + 1), 3e15 - 1];
        for (uint256 i = 0; i < 2; ++i) {
            ShieldedPool.Transaction memory u = _copy(t);
            u.fee = other[i];
            vm.expectRevert(ShieldedPool.InvalidProof.selector);
            _execute(_paymentOnly(pool, u));
        }
        assertTrue(_execute(_paymentOnly(pool, t)));
    }

    /// Another relayer submitting the captured bundle (or one that rebuilds it) is refused: the
    /// relayer in the context is the bundle's submitter, passed by the executor.
    function test_replayByAnotherRelayerIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(token), 0, 0, 3e15, address(0));
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        vm.prank(makeAddr("thief"));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.execute(b);
        assertTrue(_execute(b));
    }

    /// The proof is bound to the action hash: another action, another gas, or a direct
    /// `transact` with its own action hash.
    function test_replayWithAnotherActionIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 1e15, address(0));
        BatchExecutor.Bundle memory b = _bundle(pool, t, address(target), abi.encodeCall(Counter.increment, ()), 50_000);
        _prove(t, pool, relayer, _actionHash(b));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, t));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_bundle(pool, t, address(target), abi.encodeCall(Counter.increment, ()), 50_001));
        address otherTarget = address(new Counter());
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_bundle(pool, t, otherTarget, abi.encodeCall(Counter.increment, ()), 50_000));
        assertTrue(_execute(b));

        // transact: the action hash given is bound; with one, only the recipient submits.
        ShieldedPool.Transaction memory w = _tx(address(0), 0, 1 ether, 0, recipient);
        bytes32 h = keccak256("swap");
        _prove(w, pool, address(0), h);
        vm.prank(recipient);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        pool.transact(w, keccak256("other"));
        vm.prank(recipient);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        pool.transact(w, bytes32(0));
        vm.prank(user);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotRecipient.selector, user, recipient));
        pool.transact(w, h);
        vm.prank(recipient);
        pool.transact(w, h);
        assertEq(recipient.balance, 1 ether);
    }

    /// A paid transaction's proof is not a direct one and back (the relayer differs: the
    /// executor's submitter against address(0)).
    function test_aPaidProofIsNotADirectOneAndBack() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 0, recipient);
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        bytes32 h = _actionHash(b);
        vm.prank(recipient);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        pool.transact(t, h);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        pool.transact(t, bytes32(0));
        _prove(t, pool, address(0), bytes32(0));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(b);
    }

    function test_replayOnAnotherChainIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 1e15, recipient);
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        uint256 chain = block.chainid;
        vm.chainId(chain + 1);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(b);
        vm.chainId(chain);
        assertTrue(_execute(b));
    }

    /// A second pool with the same verifier and the same root refuses the first pool's proof.
    function test_replayOnAnotherPoolIsRefused() public {
        ShieldedPool other = _newPool();
        assertEq(other.currentRoot(), pool.currentRoot());
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 1e15, recipient);
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(other, t));
        ShieldedPool.Transaction memory d = _tx(address(0), 0, 1 ether, 0, recipient);
        _prove(d, pool, address(0), bytes32(0));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        other.transact(d, bytes32(0));
        pool.transact(d, bytes32(0));
        _prove(t, pool, relayer, _actionHash(b));
        assertTrue(_execute(b));
    }

    function test_replayWithAnotherDeadlineIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 1e15, recipient);
        _provenPaymentOnly(t);
        ShieldedPool.Transaction memory u = _copy(t);
        u.deadline = t.deadline + 1;
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        vm.warp(t.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.Expired.selector, t.deadline));
        _execute(_paymentOnly(pool, t));
    }

    /// A relayer that swaps or tampers with a recipient's ciphertext makes the proof fail: the
    /// notes are bound through the context.
    /// Both output notes must have the one standard length (NOTE_LEN = 104): a note of any
    /// other length is refused even under a proof that binds it (its prover chose it), directly
    /// and through a relayer's bundle, before the verifier; nothing is spent or queued.
    function test_aNoteOfAnyOtherLengthIsRefused() public {
        uint256[3] memory lens = [uint256(0), 103, 105];
        uint256 queued = pool.nextQueueIndex();
        for (uint256 i = 0; i < lens.length; i++) {
            for (uint256 k = 0; k < 2; k++) {
                ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
                t.notes[k] = new bytes(lens[i]);
                _prove(t, pool, address(0), bytes32(0));
                vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadNoteLength.selector, lens[i]));
                pool.transact(t, bytes32(0));

                ShieldedPool.Transaction memory p = _tx(address(0), 0, 0, 1e15, address(0));
                p.notes[k] = new bytes(lens[i]);
                BatchExecutor.Bundle memory b = _provenPaymentOnly(p);
                vm.prank(relayer);
                vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadNoteLength.selector, lens[i]));
                executor.execute(b);
                assertFalse(pool.isSpent(p.nullifiers[0]));
            }
        }
        assertEq(pool.nextQueueIndex(), queued);
        assertEq(ledger.balanceOf(relayer, address(0)), 0);
        // The honest twin (both notes NOTE_LEN bytes) goes through.
        ShieldedPool.Transaction memory ok = _tx(address(0), 0, 0, 0, address(0));
        _prove(ok, pool, address(0), bytes32(0));
        pool.transact(ok, bytes32(0));
        assertEq(pool.nextQueueIndex(), queued + 2);
    }

    function test_aTamperedNoteCiphertextIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 1e15, address(0));
        _provenPaymentOnly(t);
        for (uint256 i = 0; i < 2; ++i) {
            ShieldedPool.Transaction memory u = _tx(address(0), 0, 0, 1e15, address(0));
            u.nullifiers = t.nullifiers;
            u.commitments = t.commitments;
            u.deadline = t.deadline;
            u.notes[i][NOTE_LEN - 1] ^= 0x01;
            vm.expectRevert(ShieldedPool.InvalidProof.selector);
            _execute(_paymentOnly(pool, u));
        }
        ShieldedPool.Transaction memory swapped = _copy(t);
        swapped.notes = [t.notes[1], t.notes[0]];
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, swapped));
        ShieldedPool.Transaction memory longer = _copy(t);
        longer.notes = [bytes.concat(t.notes[0], hex"00"), t.notes[1]];
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadNoteLength.selector, NOTE_LEN + 1));
        _execute(_paymentOnly(pool, longer));
        assertTrue(_execute(_paymentOnly(pool, t)));
    }

    function test_replayToAnotherRecipientOrAmountIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 1e15, recipient);
        _provenPaymentOnly(t);
        ShieldedPool.Transaction memory u = _copy(t);
        u.recipient = makeAddr("thief");
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        u = _copy(t);
        u.publicOut = 1 ether + 1;
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        // Moving value between publicOut and fee keeps publicAmount but not the context.
        u = _copy(t);
        u.publicOut = t.publicOut - 1;
        u.fee = t.fee + 1;
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        assertTrue(_execute(_paymentOnly(pool, t)));
    }

    function test_replayWithAnotherAssetCommitmentOrRootIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 1e15, address(0));
        _provenPaymentOnly(t);
        ShieldedPool.Transaction memory u = _copy(t);
        u.asset = address(token);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        u = _copy(t);
        u.commitments[1] = 7;
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        u = _copy(t);
        u.root = pool.EMPTY_ROOT(); // a known root, not the proof's
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        _execute(_paymentOnly(pool, u));
        u = _copy(t);
        u.root = 777;
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.UnknownRoot.selector, 777));
        _execute(_paymentOnly(pool, u));
    }

    /// With a window of one root, a transaction against the previous root is refused once a
    /// batch has moved the root on.
    function test_aRootOlderThanTheWindowIsRefused() public {
        ShieldedPool p = new ShieldedPool(
            ITransferVerifier(address(verifier)), IInsertVerifier(address(inserter)), poseidon, address(executor), 2
        );
        uint256[8] memory none;
        vm.deal(address(this), 3);
        p.deposit{value: 1}(address(0), 1, 1, new bytes(NOTE_LEN));
        p.insertBatch(none, ROOT, QueueChain.one(poseidon.hash([uint256(1), 0, 1])));
        p.deposit{value: 1}(address(0), 1, 2, new bytes(NOTE_LEN));
        p.insertBatch(none, ROOT + 1, QueueChain.one(poseidon.hash([uint256(1), 0, 2])));
        assertTrue(p.isKnownRoot(ROOT));
        assertFalse(p.isKnownRoot(p.EMPTY_ROOT()));
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, p, address(0), bytes32(0));
        p.transact(t, bytes32(0));
        p.deposit{value: 1}(address(0), 1, 3, new bytes(NOTE_LEN));
        p.insertBatch(
            none, ROOT + 2, QueueChain.three(t.commitments[0], t.commitments[1], poseidon.hash([uint256(1), 0, 3]))
        );
        t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, p, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.UnknownRoot.selector, ROOT));
        p.transact(t, bytes32(0));
    }
}

contract ShieldedPoolPayPhaseTest is ShieldedPoolTransactBase {
    // ---------------------------------------------------------------------------------------
    // `pay` only in its payment phase (issue 29)

    function test_payOutsideThePaymentPhaseIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 1e15, address(0));
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        bytes32 h = _actionHash(b);
        vm.prank(relayer);
        vm.expectRevert(ShieldedPool.NotExecutor.selector);
        pool.pay(abi.encode(t), relayer, h);
        vm.prank(address(executor));
        vm.expectRevert(ShieldedPool.NotInPaymentPhase.selector);
        pool.pay(abi.encode(t), relayer, h);
        // As another bundle's action (the executor calls, but in no payment phase of this pool).
        ShieldedPool.Transaction memory f = _tx(address(0), 0, 0, 1e15, address(0));
        BatchExecutor.Bundle memory thief =
            _bundle(pool, f, address(pool), abi.encodeCall(pool.pay, (abi.encode(t), relayer, h)), 500_000);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.ForbiddenTarget.selector, address(pool)));
        executor.execute(thief);
        assertFalse(pool.isSpent(t.nullifiers[0]));
        assertTrue(_execute(b));
    }
}
