// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {ShieldedPool} from "../../src/zk/ShieldedPool.sol";
import {TransferInputs} from "./PoolHarness.sol";
import {ShieldedPoolTransactBase} from "./ShieldedPoolTransactBase.sol";

/// The pool's own checks of a transaction's nullifiers and amounts (see ShieldedPoolTransactBase).
contract ShieldedPoolInputChecksTest is ShieldedPoolTransactBase {
    // ---------------------------------------------------------------------------------------
    // Nullifiers

    /// The same note as both inputs (one nullifier twice): refused even with a "proof" that
    /// would verify (the circuit refuses it too; the pool does not rely on that).
    function test_theSameNullifierTwiceInOneTransactionIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 0, recipient);
        t.nullifiers[1] = t.nullifiers[0];
        _prove(t, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.DuplicateNullifier.selector, t.nullifiers[0]));
        pool.transact(t, bytes32(0));
        assertEq(recipient.balance, 0);
    }

    /// A nullifier spent before, in either position, directly or paid.
    function test_aNullifierSpentBeforeIsRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, pool, address(0), bytes32(0));
        pool.transact(t, bytes32(0));
        uint256 spent = t.nullifiers[1];
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.AlreadySpent.selector, t.nullifiers[0]));
        pool.transact(t, bytes32(0));

        ShieldedPool.Transaction memory u = _tx(address(0), 0, 1 ether, 0, recipient);
        u.nullifiers[0] = spent;
        _prove(u, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.AlreadySpent.selector, spent));
        pool.transact(u, bytes32(0));
        u.nullifiers = [u.nullifiers[1], spent];
        _prove(u, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.AlreadySpent.selector, spent));
        pool.transact(u, bytes32(0));

        ShieldedPool.Transaction memory v = _tx(address(0), 0, 0, 1e15, address(0));
        v.nullifiers[1] = spent;
        BatchExecutor.Bundle memory b = _provenPaymentOnly(v);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.AlreadySpent.selector, spent));
        _execute(b);
        assertEq(recipient.balance, 0);
    }

    /// `n + R` is the same field element as `n`: without the scalar check it would spend the
    /// note `n` a second time. Every input the caller states must be below R.
    function test_inputsAtOrAboveRAreRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 0, address(0));
        _prove(t, pool, address(0), bytes32(0));
        pool.transact(t, bytes32(0));
        ShieldedPool.Transaction memory u = _tx(address(0), 0, 1 ether, 0, recipient);
        u.nullifiers[0] = t.nullifiers[0] + R;
        _prove(u, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotAScalar.selector, u.nullifiers[0]));
        pool.transact(u, bytes32(0));
        u = _tx(address(0), 0, 1 ether, 0, recipient);
        u.nullifiers[1] = t.nullifiers[1] + R;
        _prove(u, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotAScalar.selector, u.nullifiers[1]));
        pool.transact(u, bytes32(0));
        for (uint256 i = 0; i < 2; ++i) {
            u = _tx(address(0), 0, 0, 0, address(0));
            u.commitments[i] += R;
            _prove(u, pool, address(0), bytes32(0));
            vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotAScalar.selector, u.commitments[i]));
            pool.transact(u, bytes32(0));
        }
        // A root ≥ R is never a known root.
        u = _tx(address(0), 0, 0, 0, address(0));
        u.root = ROOT + R;
        _prove(u, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.UnknownRoot.selector, ROOT + R));
        pool.transact(u, bytes32(0));
        assertEq(recipient.balance, 0);
    }

    // ---------------------------------------------------------------------------------------
    // Amounts

    /// Each amount below 2^128 (the circuit's range), and |publicIn − publicOut − fee| too: a
    /// debit of 2^128 would be fed as R − 2^128, a value the circuit's 128-bit magnitude cannot
    /// reach — the pool refuses before asking.
    function test_amountsAtOrAbove2To128AreRefused() public {
        ShieldedPool.Transaction memory t = _tx(address(0), MAX, 0, 0, address(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadAmount.selector, MAX));
        pool.transact(t, bytes32(0));
        t = _tx(address(0), 0, MAX, 0, recipient);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadAmount.selector, MAX));
        pool.transact(t, bytes32(0));
        t = _tx(address(0), 0, 0, MAX, address(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadAmount.selector, MAX));
        _execute(_paymentOnly(pool, t));
        // publicOut + fee = 2^128, each below it: the magnitude is refused (pay).
        t = _tx(address(0), 0, MAX / 2, MAX / 2, recipient);
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        vm.expectRevert(ShieldedPool.PublicAmountTooLarge.selector);
        _execute(b);
        vm.expectRevert(ShieldedPool.PublicAmountTooLarge.selector);
        pool.publicAmount(0, MAX - 1, 1);
        assertEq(pool.publicAmount(0, MAX - 2, 1), R - (MAX - 1));
        assertEq(pool.publicAmount(MAX - 1, 0, 0), MAX - 1);
    }

    /// The pool's public amount equals the spec's (`nox_zk::transfer::public_amount`) for any
    /// amounts it accepts.
    function testFuzz_publicAmountIsTheSignedDifference(uint128 publicIn, uint128 publicOut, uint128 fee) public view {
        uint256 debit = uint256(publicOut) + fee;
        if (debit > publicIn && debit - publicIn >= MAX) return; // refused above
        assertEq(pool.publicAmount(publicIn, publicOut, fee), TransferInputs.publicAmount(publicIn, publicOut, fee));
    }

    /// A direct transaction pays no fee, a paid one pulls nothing.
    function test_feeOnlyWhenPaidAndPublicInOnlyWhenDirect() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 0, 1, address(0));
        _prove(t, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.FeeInDirectTransaction.selector, 1));
        pool.transact(t, bytes32(0));
        t = _tx(address(0), 1 ether, 0, 1e15, address(0));
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.PublicInInPayment.selector, 1 ether));
        _execute(b);
    }

    /// recipient is address(0) exactly when publicOut is 0: no value to nobody, and no
    /// recipient (an address someone could be linked to) on a transaction that pays none.
    function test_recipientAndPublicOutMustAgree() public {
        ShieldedPool.Transaction memory t = _tx(address(0), 0, 1 ether, 0, address(0));
        _prove(t, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadRecipient.selector, address(0), 1 ether));
        pool.transact(t, bytes32(0));
        t = _tx(address(0), 0, 0, 0, recipient);
        _prove(t, pool, address(0), bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadRecipient.selector, recipient, 0));
        pool.transact(t, bytes32(0));
        t = _tx(address(0), 0, 0, 1e15, recipient);
        BatchExecutor.Bundle memory b = _provenPaymentOnly(t);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.BadRecipient.selector, recipient, 0));
        _execute(b);
    }
}
