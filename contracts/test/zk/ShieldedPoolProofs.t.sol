// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {RewardLedger} from "../../src/RewardLedger.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";
import {InsertVerifier} from "../../src/zk/InsertVerifier.sol";
import {TransferVerifier} from "../../src/zk/TransferVerifier.sol";
import {ShieldedPool} from "../../src/zk/ShieldedPool.sol";
import {TransferVectors as V} from "./TransferVectors.sol";
import {QueueChain} from "./PoolHarness.sol";

/// @dev The vectors' scenario on a real pool (shared by the proof tests and the gas scenarios):
/// deployment at V.POOL, the four deposits, INSERT1, and each transaction as the pool takes it.
abstract contract TransferScenario is Test {
    address internal user = makeAddr("user");
    BatchExecutor internal executor;
    RewardLedger internal ledger;
    ShieldedPool internal pool;
    ERC20 internal token;

    function _deploy() internal {
        executor = new BatchExecutor();
        ledger = executor.ledger();
        deployCodeTo("PoolHarness.sol:PoolTestToken", abi.encode(user, 100e18), V.TOKEN);
        token = ERC20(V.TOKEN);
        deployCodeTo(
            "ShieldedPool.sol:ShieldedPool",
            abi.encode(
                new TransferVerifier(),
                new InsertVerifier(),
                deployCode("PoseidonT4.sol:PoseidonT4"),
                address(executor),
                uint256(64)
            ),
            V.POOL
        );
        pool = ShieldedPool(payable(V.POOL));
        vm.deal(user, 100 ether);
        vm.startPrank(user);
        token.approve(V.POOL, type(uint256).max);
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER0, new bytes(V.NOTE_LEN));
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER1, new bytes(V.NOTE_LEN));
        pool.deposit(V.TOKEN, V.DEPOSIT, V.INNER2, new bytes(V.NOTE_LEN));
        pool.deposit{value: V.DEPOSIT}(address(0), V.DEPOSIT, V.INNER3, new bytes(V.NOTE_LEN));
        vm.stopPrank();
    }

    function _insert1() internal {
        pool.insertBatch(V.insert1Proof(), V.INSERT1_ROOT, QueueChain.leaves(V.insert1Inputs(), 4));
    }

    function _tx(
        uint256[8] memory proof,
        uint256[8] memory x,
        address asset,
        uint256 publicIn,
        uint256 publicOut,
        uint256 fee,
        address recipient,
        bytes[2] memory notes
    ) internal pure returns (ShieldedPool.Transaction memory t) {
        t.proof = proof;
        t.root = x[0];
        t.nullifiers = [x[1], x[2]];
        t.commitments = [x[3], x[4]];
        t.asset = asset;
        t.publicIn = publicIn;
        t.publicOut = publicOut;
        t.fee = fee;
        t.recipient = recipient;
        t.deadline = V.DEADLINE;
        t.notes = notes;
    }

    function _split() internal pure returns (ShieldedPool.Transaction memory) {
        return _tx(
            V.splitProof(),
            V.splitInputs(),
            V.SPLIT_ASSET,
            V.SPLIT_PUBLIC_IN,
            V.SPLIT_PUBLIC_OUT,
            V.SPLIT_FEE,
            V.SPLIT_RECIPIENT,
            V.splitNotes()
        );
    }

    function _transfer() internal pure returns (ShieldedPool.Transaction memory) {
        return _tx(
            V.transferProof(),
            V.transferInputs(),
            V.TRANSFER_ASSET,
            V.TRANSFER_PUBLIC_IN,
            V.TRANSFER_PUBLIC_OUT,
            V.TRANSFER_FEE,
            V.TRANSFER_RECIPIENT,
            V.transferNotes()
        );
    }

    function _withdraw() internal pure returns (ShieldedPool.Transaction memory) {
        return _tx(
            V.withdrawProof(),
            V.withdrawInputs(),
            V.WITHDRAW_ASSET,
            V.WITHDRAW_PUBLIC_IN,
            V.WITHDRAW_PUBLIC_OUT,
            V.WITHDRAW_FEE,
            V.WITHDRAW_RECIPIENT,
            V.withdrawNotes()
        );
    }

    function _depositIn() internal pure returns (ShieldedPool.Transaction memory) {
        return _tx(
            V.depositInProof(),
            V.depositInInputs(),
            V.DEPOSIT_IN_ASSET,
            V.DEPOSIT_IN_PUBLIC_IN,
            V.DEPOSIT_IN_PUBLIC_OUT,
            V.DEPOSIT_IN_FEE,
            V.DEPOSIT_IN_RECIPIENT,
            V.depositInNotes()
        );
    }

    function _received() internal pure returns (ShieldedPool.Transaction memory) {
        return _tx(
            V.receivedProof(),
            V.receivedInputs(),
            V.RECEIVED_ASSET,
            V.RECEIVED_PUBLIC_IN,
            V.RECEIVED_PUBLIC_OUT,
            V.RECEIVED_FEE,
            V.RECEIVED_RECIPIENT,
            V.receivedNotes()
        );
    }

    /// A payment-only bundle (action {target 0, value 0, gas 0, data ""}) paying `t.fee`.
    function _paymentOnly(ShieldedPool.Transaction memory t) internal pure returns (BatchExecutor.Bundle[] memory bs) {
        bs = new BatchExecutor.Bundle[](1);
        bs[0] = BatchExecutor.Bundle({
            payment: IPayment(V.POOL),
            paymentData: abi.encode(t),
            asset: t.asset,
            fee: t.fee,
            action: BatchExecutor.Action({target: address(0), value: 0, gas: 0, data: ""})
        });
    }

    function _copy(ShieldedPool.Transaction memory t) internal pure returns (ShieldedPool.Transaction memory) {
        return abi.decode(abi.encode(t), (ShieldedPool.Transaction));
    }
}

/// The pool with **real proofs** from the Rust prover (TransferVectors, generated by
/// `cargo test -p nox-zk --test zk transfer_vectors`): the whole scenario — split, a transfer
/// paid through a relayer, a paid withdrawal, a deposit into notes, the recipient spending what
/// it received — and the bindings refused with a real verifier.
contract ShieldedPoolProofsTest is TransferScenario {
    uint256 internal constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    function setUp() public {
        assertEq(block.chainid, V.CHAIN_ID);
        _deploy();
        _insert1();
    }

    /// The pool computes the Rust context (`TransferContext::hash`) for every vector.
    function test_thePoolsContextIsTheRustContext() public view {
        assertEq(pool.context(_split(), address(0), bytes32(0)), V.SPLIT_CONTEXT);
        assertEq(pool.context(_transfer(), V.RELAYER, V.PAY_ACTION_HASH), V.TRANSFER_CONTEXT);
        assertEq(pool.context(_withdraw(), V.RELAYER, V.PAY_ACTION_HASH), V.WITHDRAW_CONTEXT);
        assertEq(pool.context(_depositIn(), address(0), bytes32(0)), V.DEPOSIT_IN_CONTEXT);
        assertEq(pool.context(_received(), address(0), bytes32(0)), V.RECEIVED_CONTEXT);
        assertEq(pool.publicAmount(0, 0, V.TRANSFER_FEE), V.transferInputs()[5]);
        assertEq(pool.publicAmount(0, V.WITHDRAW_PUBLIC_OUT, V.WITHDRAW_FEE), V.withdrawInputs()[5]);
        assertEq(pool.publicAmount(V.DEPOSIT_IN_PUBLIC_IN, 0, 0), V.depositInInputs()[5]);
    }

    /// The whole scenario, balances exact at every step.
    function test_theWholeScenarioWithRealProofs() public {
        // SPLIT: direct, nothing public.
        vm.prank(user);
        pool.transact(_split(), bytes32(0));
        assertEq(pool.nextQueueIndex(), 6);
        // TRANSFER: paid through RELAYER in a payment-only bundle.
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_transfer()));
        assertEq(ledger.balanceOf(V.RELAYER, V.TOKEN), V.PAY_FEE);
        assertEq(token.balanceOf(V.POOL), 3 * V.DEPOSIT - V.PAY_FEE);
        // WITHDRAW: paid, ETH to RECIPIENT.
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(_withdraw()));
        assertEq(V.RECIPIENT.balance, V.WITHDRAW_PUBLIC_OUT);
        assertEq(ledger.balanceOf(V.RELAYER, address(0)), V.PAY_FEE);
        assertEq(V.POOL.balance, V.DEPOSIT - V.WITHDRAW_PUBLIC_OUT - V.PAY_FEE);
        // DEPOSIT_IN: msg.value exactly.
        vm.prank(user);
        pool.transact{value: V.DEPOSIT}(_depositIn(), bytes32(0));
        assertEq(V.POOL.balance, 2 * V.DEPOSIT - V.WITHDRAW_PUBLIC_OUT - V.PAY_FEE);
        assertEq(pool.nextQueueIndex(), 12);
        // INSERT2 (the eight outputs), then RECEIVED spends two of them.
        pool.insertBatch(V.insert2Proof(), V.INSERT2_ROOT, QueueChain.leaves(V.insert2Inputs(), 8));
        vm.prank(makeAddr("anyone"));
        pool.transact(_received(), bytes32(0));
        assertEq(token.balanceOf(V.RECIPIENT), V.RECEIVED_PUBLIC_OUT);
        assertEq(token.balanceOf(V.POOL), 3 * V.DEPOSIT - V.PAY_FEE - V.RECEIVED_PUBLIC_OUT);
        for (uint256 i = 0; i < 2; ++i) {
            assertTrue(pool.isSpent(_received().nullifiers[i]));
        }
    }

    /// A real proof replayed with any bound value changed is refused by the real verifier.
    function test_aRealProofIsBoundToEverything() public {
        ShieldedPool.Transaction memory t = _transfer();
        ShieldedPool.Transaction[6] memory bad;
        for (uint256 i = 0; i < 6; ++i) {
            bad[i] = _copy(t);
        }
        bad[0].fee = t.fee - 1;
        bad[1].notes[1][5] ^= 0x01; // a tampered ciphertext byte
        bad[2].notes = [t.notes[1], t.notes[0]]; // re-targeted ciphertexts
        bad[3].deadline = t.deadline - 1;
        bad[4].commitments[0] = t.commitments[1];
        bad[5].asset = address(0);
        for (uint256 i = 0; i < 6; ++i) {
            BatchExecutor.Bundle[] memory bs = _paymentOnly(bad[i]);
            bs[0].fee = t.fee; // what the relayer would be credited
            bs[0].asset = t.asset;
            vm.prank(V.RELAYER);
            vm.expectRevert(ShieldedPool.InvalidProof.selector);
            executor.executeBatch(bs);
        }
        // Another relayer, another chain.
        vm.prank(makeAddr("thief"));
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.executeBatch(_paymentOnly(t));
        vm.chainId(1);
        vm.prank(V.RELAYER);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.executeBatch(_paymentOnly(t));
        vm.chainId(V.CHAIN_ID);
        // Submitted directly instead of paid (relayer 0, its own action hash).
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.FeeInDirectTransaction.selector, t.fee));
        pool.transact(t, V.PAY_ACTION_HASH);
        // The honest bundle still goes through, once.
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(t));
        vm.prank(V.RELAYER);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.AlreadySpent.selector, t.nullifiers[0]));
        executor.executeBatch(_paymentOnly(t));
    }

    /// The withdrawal to another recipient, another amount, or on another pool.
    function test_aRealWithdrawalIsBoundToItsRecipientAndPool() public {
        ShieldedPool.Transaction memory w = _withdraw();
        ShieldedPool.Transaction memory u = _copy(w);
        u.recipient = makeAddr("thief");
        vm.prank(V.RELAYER);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.executeBatch(_paymentOnly(u));
        u = _copy(w);
        u.publicOut = w.publicOut + 1;
        vm.prank(V.RELAYER);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.executeBatch(_paymentOnly(u));
        // A second pool with the same notes, so the same root.
        address second = address(0x20001);
        ShieldedPool other = ShieldedPool(payable(second));
        deployCodeTo(
            "ShieldedPool.sol:ShieldedPool",
            abi.encode(pool.transferVerifier(), pool.insertVerifier(), pool.poseidon(), address(executor), uint256(64)),
            second
        );
        vm.startPrank(user);
        token.approve(second, type(uint256).max);
        other.deposit(V.TOKEN, V.DEPOSIT, V.INNER0, new bytes(V.NOTE_LEN));
        other.deposit(V.TOKEN, V.DEPOSIT, V.INNER1, new bytes(V.NOTE_LEN));
        other.deposit(V.TOKEN, V.DEPOSIT, V.INNER2, new bytes(V.NOTE_LEN));
        other.deposit{value: V.DEPOSIT}(address(0), V.DEPOSIT, V.INNER3, new bytes(V.NOTE_LEN));
        vm.stopPrank();
        other.insertBatch(V.insert1Proof(), V.INSERT1_ROOT, QueueChain.leaves(V.insert1Inputs(), 4));
        BatchExecutor.Bundle[] memory bs = _paymentOnly(w);
        bs[0].payment = IPayment(second);
        vm.prank(V.RELAYER);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        executor.executeBatch(bs);
        vm.prank(V.RELAYER);
        executor.executeBatch(_paymentOnly(w));
        assertEq(V.RECIPIENT.balance, w.publicOut);
    }

    /// A deposit into notes must bring exactly its publicIn.
    function test_aRealDepositInNeedsItsValue() public {
        vm.prank(user);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.ValueMismatch.selector, 0, V.DEPOSIT));
        pool.transact(_depositIn(), bytes32(0));
        ShieldedPool.Transaction memory t = _depositIn();
        t.publicIn = V.DEPOSIT - 1;
        vm.prank(user);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        pool.transact{value: V.DEPOSIT - 1}(t, bytes32(0));
    }
}
