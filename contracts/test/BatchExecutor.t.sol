// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {RewardLedger} from "../src/RewardLedger.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {ACTION_GAS, Target, ReturnBomb, Reenterer, LyingPayment, ReentrantPayment} from "./utils/ExecutorMocks.sol";

contract BatchExecutorTest is Test {
    NoxStakeToken usd;
    BatchExecutor executor;
    RewardLedger ledger;
    Erc20Payment erc20;
    Target target;

    uint256 payerKey = 0xB0B;
    address payer;
    address relayer = address(0x4E1A);
    address otherRelayer = address(0x0BAD);
    uint256 constant FEE = 3e18;

    function setUp() public {
        payer = vm.addr(payerKey);
        usd = new NoxStakeToken(address(this), 1e30);
        executor = new BatchExecutor();
        ledger = executor.ledger();
        erc20 = new Erc20Payment(executor);
        target = new Target();
        usd.transfer(payer, 1_000e18);
        vm.prank(payer);
        usd.approve(address(erc20), type(uint256).max);
        vm.deal(relayer, 100 ether);
    }

    // --------------------------------------------------------------- helpers

    function _action(address to, bytes memory data) internal pure returns (BatchExecutor.Action memory) {
        return BatchExecutor.Action({target: to, value: 0, gas: ACTION_GAS, data: data});
    }

    function _signPayment(
        address asset,
        uint256 fee,
        address forRelayer,
        BatchExecutor.Action memory action,
        uint256 signedFee,
        uint256 nonce,
        uint256 deadline
    ) internal view returns (bytes memory) {
        (bytes32 h,) = executor.executionHash(action.target, action.data, fee, action.gas);
        bytes32 digest = erc20.paymentDigest(payer, asset, signedFee, forRelayer, h, nonce, deadline);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(payerKey, digest);
        return abi.encode(
            Erc20Payment.PaymentData({
                payer: payer,
                asset: asset,
                fee: signedFee,
                nonce: nonce,
                deadline: deadline,
                signature: abi.encodePacked(r, s, v)
            })
        );
    }

    function _bundle(BatchExecutor.Action memory action, uint256 nonce)
        internal
        view
        returns (BatchExecutor.Bundle memory)
    {
        return BatchExecutor.Bundle({
            payment: erc20,
            paymentData: _signPayment(address(usd), FEE, relayer, action, FEE, nonce, block.timestamp + 1 hours),
            asset: address(usd),
            fee: FEE,
            action: action
        });
    }

    // ------------------------------------------------------------- happy path

    function test_execute_paysAndRuns() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        (bytes32 h,) = executor.executionHash(a.target, a.data, FEE, a.gas);
        vm.expectEmit(address(executor));
        emit BatchExecutor.FeePaid(h, relayer, erc20, address(usd), FEE);
        vm.expectEmit(address(executor));
        emit BatchExecutor.ActionExecuted(h, relayer, address(target), true, 32, keccak256(abi.encode(uint256(14))));
        vm.prank(relayer);
        assertTrue(executor.execute(b));
        assertEq(target.value(), 7);
        assertEq(ledger.balanceOf(relayer, address(usd)), FEE);
        assertEq(ledger.liabilities(address(usd)), FEE);
        assertEq(usd.balanceOf(address(ledger)), FEE);
        assertEq(usd.balanceOf(payer), 1_000e18 - FEE);
        assertEq(usd.balanceOf(address(executor)), 0);
        assertTrue(erc20.nonceUsed(payer, 1));
    }

    function test_execute_actionRevertsRelayerStillPaid() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.fail, (99)));
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        (bytes32 h,) = executor.executionHash(a.target, a.data, FEE, a.gas);
        vm.expectEmit(address(executor));
        emit BatchExecutor.ActionExecuted(
            h, relayer, address(target), false, 36, keccak256(abi.encodeWithSelector(Target.Nope.selector, 99))
        );
        vm.prank(relayer);
        assertFalse(executor.execute(b));
        assertEq(ledger.balanceOf(relayer, address(usd)), FEE);
        assertEq(usd.balanceOf(payer), 1_000e18 - FEE);
    }

    function test_execute_withValueFromRelayer() public {
        BatchExecutor.Action memory a = BatchExecutor.Action({
            target: address(target), value: 1 ether, gas: ACTION_GAS, data: abi.encodeCall(Target.deposit, ())
        });
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        vm.prank(relayer);
        executor.execute{value: 1 ether}(b);
        assertEq(target.received(), 1 ether);
        assertEq(address(executor).balance, 0);
        BatchExecutor.Bundle memory unpaid = _bundle(a, 2);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.ValueMismatch.selector, 0, 1 ether));
        executor.execute(unpaid);
    }

    /// The empty action (address(0), no data, no value; any bound gas) is reported exactly as a
    /// call to address(0) would be (success, no return data) without being called: the payment
    /// runs first, the action's gas stays bound in the hash, and an action to address(0) that
    /// carries data or value is still called.
    function test_execute_theEmptyActionIsNotCalled() public {
        vm.expectCall(address(0), bytes(""), 0);
        for (uint256 gas = 0; gas <= ACTION_GAS; gas += ACTION_GAS) {
            BatchExecutor.Action memory a = BatchExecutor.Action({target: address(0), value: 0, gas: gas, data: ""});
            BatchExecutor.Bundle memory b = _bundle(a, 1 + gas);
            (bytes32 h,) = executor.executionHash(address(0), "", FEE, gas);
            vm.expectEmit(address(executor));
            emit BatchExecutor.FeePaid(h, relayer, erc20, address(usd), FEE);
            vm.expectEmit(address(executor));
            emit BatchExecutor.ActionExecuted(h, relayer, address(0), true, 0, keccak256(""));
            vm.prank(relayer);
            assertTrue(executor.execute(b));
        }
        assertEq(ledger.balanceOf(relayer, address(usd)), 2 * FEE);
    }

    /// With data, or with value, address(0) is called as any target.
    function test_execute_anActionToAddressZeroWithDataOrValueIsCalled() public {
        BatchExecutor.Action memory withData =
            BatchExecutor.Action({target: address(0), value: 0, gas: ACTION_GAS, data: hex"01"});
        BatchExecutor.Bundle memory b = _bundle(withData, 7);
        vm.expectCall(address(0), hex"01", 1);
        vm.prank(relayer);
        assertTrue(executor.execute(b));
        BatchExecutor.Action memory withValue =
            BatchExecutor.Action({target: address(0), value: 1, gas: ACTION_GAS, data: ""});
        vm.deal(relayer, 1);
        b = _bundle(withValue, 8);
        vm.expectCall(address(0), 1, bytes(""), 1);
        vm.prank(relayer);
        assertTrue(executor.execute{value: 1}(b));
        assertEq(address(0).balance, 1);
    }

    function test_execute_zeroFee() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (1)));
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: _signPayment(address(usd), 0, relayer, a, 0, 1, block.timestamp),
            asset: address(usd),
            fee: 0,
            action: a
        });
        vm.prank(relayer);
        assertTrue(executor.execute(b));
        assertEq(ledger.balanceOf(relayer, address(usd)), 0);
    }

    // ----------------------------------------------------- binding (refusals)

    function test_refuses_wrongRelayer() public {
        BatchExecutor.Bundle memory b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 1);
        vm.prank(otherRelayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
    }

    function test_refuses_otherAction() public {
        BatchExecutor.Bundle memory b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 1);
        b.action.data = abi.encodeCall(Target.set, (8)); // other calldata
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
        b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 1);
        b.action.target = address(new Target()); // other target
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
    }

    function test_refuses_wrongFee() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        // the bundle claims a higher fee than the payer's action hash committed to
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        b.fee = FEE + 1;
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
        // the payment data names a higher fee than the payer signed
        b = _bundle(a, 1);
        Erc20Payment.PaymentData memory p = abi.decode(b.paymentData, (Erc20Payment.PaymentData));
        p.fee = FEE * 2;
        b.paymentData = abi.encode(p);
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
        // signed fee and action-hash fee disagree: the plugin pays the signed fee, the executor refuses
        b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: _signPayment(address(usd), FEE, relayer, a, FEE - 1, 1, block.timestamp),
            asset: address(usd),
            fee: FEE,
            action: a
        });
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.FeeMismatch.selector, FEE, FEE - 1));
        executor.execute(b);
    }

    function test_refuses_otherAsset() public {
        NoxStakeToken other = new NoxStakeToken(payer, 1e30);
        vm.prank(payer);
        other.approve(address(erc20), type(uint256).max);
        BatchExecutor.Bundle memory b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 1);
        Erc20Payment.PaymentData memory p = abi.decode(b.paymentData, (Erc20Payment.PaymentData));
        p.asset = address(other);
        b.paymentData = abi.encode(p);
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
    }

    function test_refuses_expired() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        uint256 deadline = block.timestamp + 10;
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: _signPayment(address(usd), FEE, relayer, a, FEE, 1, deadline),
            asset: address(usd),
            fee: FEE,
            action: a
        });
        vm.warp(deadline + 1);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(Erc20Payment.Expired.selector, deadline));
        executor.execute(b);
        vm.warp(deadline);
        vm.prank(relayer);
        executor.execute(b); // the deadline itself is still valid
    }

    function test_refuses_reusedNonce() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        BatchExecutor.Bundle memory b = _bundle(a, 5);
        vm.prank(relayer);
        executor.execute(b);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(Erc20Payment.NonceAlreadyUsed.selector, payer, 5));
        executor.execute(b);
    }

    function test_cancelNonce() public {
        BatchExecutor.Bundle memory b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 9);
        vm.expectEmit(address(erc20));
        emit Erc20Payment.NonceUsed(payer, 9);
        vm.prank(payer);
        erc20.cancelNonce(9);
        vm.prank(payer);
        vm.expectRevert(abi.encodeWithSelector(Erc20Payment.NonceAlreadyUsed.selector, payer, 9));
        erc20.cancelNonce(9);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(Erc20Payment.NonceAlreadyUsed.selector, payer, 9));
        executor.execute(b);
    }

    function test_refuses_paymentNotFromExecutor() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        (bytes32 h,) = executor.executionHash(a.target, a.data, FEE, a.gas);
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.NotExecutor.selector);
        erc20.pay(b.paymentData, relayer, h);
    }

    function test_refuses_ethAssetInErc20Payment() public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: _signPayment(address(0), FEE, relayer, a, FEE, 1, block.timestamp),
            asset: address(0),
            fee: FEE,
            action: a
        });
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.ZeroAddress.selector);
        executor.execute(b);
    }

    function test_refuses_insufficientAllowance() public {
        vm.prank(payer);
        usd.approve(address(erc20), FEE - 1);
        BatchExecutor.Bundle memory b = _bundle(_action(address(target), abi.encodeCall(Target.set, (7))), 1);
        vm.prank(relayer);
        vm.expectRevert();
        executor.execute(b);
        assertEq(ledger.balanceOf(relayer, address(usd)), 0);
    }

    function test_refuses_forbiddenTargets() public {
        address[3] memory bad = [address(ledger), address(executor), address(erc20)];
        for (uint256 i = 0; i < bad.length; ++i) {
            BatchExecutor.Bundle memory b = _bundle(_action(bad[i], hex"12345678"), 1);
            vm.prank(relayer);
            vm.expectRevert(abi.encodeWithSelector(BatchExecutor.ForbiddenTarget.selector, bad[i]));
            executor.execute(b);
        }
        // transferFrom on any token: the executor is never a legitimate spender
        BatchExecutor.Bundle memory tf =
            _bundle(_action(address(usd), abi.encodeCall(IERC20.transferFrom, (payer, relayer, 1))), 1);
        vm.prank(relayer);
        vm.expectRevert(BatchExecutor.ForbiddenSelector.selector);
        executor.execute(tf);
    }

    function test_refuses_lyingPlugin() public {
        LyingPayment liar = new LyingPayment(address(usd));
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: liar,
            paymentData: "",
            asset: address(usd),
            fee: 1e18,
            action: _action(address(target), abi.encodeCall(Target.set, (7)))
        });
        vm.prank(relayer);
        // refused by the executor's measurement; the ledger's solvency check would refuse it too
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.FeeNotReceived.selector, 1e18, 0));
        executor.execute(b);
    }

    function test_returnBomb_relayerStillPaid() public {
        ReturnBomb bomb = new ReturnBomb();
        BatchExecutor.Action memory a = _action(address(bomb), hex"01020304");
        a.gas = 2_500_000; // the bomb gets enough to build its 1 MiB
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        (bytes32 h,) = executor.executionHash(a.target, a.data, FEE, a.gas);
        // the bomb's memory: zeros but for Solidity's free-memory pointer (0x80 at 0x40..0x5f)
        bytes memory first4k = new bytes(4096);
        first4k[0x5f] = 0x80;
        vm.expectEmit(address(executor));
        emit BatchExecutor.ActionExecuted(h, relayer, address(bomb), false, 0x100000, keccak256(first4k));
        vm.prank(relayer);
        // the bomb burns ~2.1 M gas building its 1 MiB; copying it back would need as much again,
        // more than the 1/64 + unspent gas left here, so a full copy would revert the bundle
        assertFalse(executor.execute{gas: 3_000_000}(b));
        assertEq(ledger.balanceOf(relayer, address(usd)), FEE);
    }

    // ------------------------------------------------------------ reentrancy

    function test_reentrancyFromAction_failsActionRelayerPaid() public {
        Reenterer r = new Reenterer(executor);
        BatchExecutor.Bundle memory inner = _bundle(_action(address(target), abi.encodeCall(Target.set, (1))), 2);
        BatchExecutor.Action memory a = _action(address(r), abi.encodeCall(Reenterer.attack, (inner)));
        BatchExecutor.Bundle memory outer = _bundle(a, 1);
        vm.prank(relayer);
        assertFalse(executor.execute(outer));
        assertEq(ledger.balanceOf(relayer, address(usd)), FEE); // outer fee only
        assertFalse(erc20.nonceUsed(payer, 2)); // inner payment never happened
        assertEq(target.value(), 0);
    }

    function test_reentrancyFromPlugin_reverts() public {
        ReentrantPayment rp = new ReentrantPayment();
        BatchExecutor.Bundle memory inner = _bundle(_action(address(target), abi.encodeCall(Target.set, (1))), 2);
        BatchExecutor.Bundle memory outer = BatchExecutor.Bundle({
            payment: rp,
            paymentData: abi.encode(inner),
            asset: address(0),
            fee: 0,
            action: _action(address(target), abi.encodeCall(Target.set, (2)))
        });
        vm.prank(relayer);
        vm.expectRevert(ReentrancyGuardTransient.ReentrancyGuardReentrantCall.selector);
        executor.execute(outer);
    }

    // ----------------------------------------------------------------- batch

    function test_executeBatch() public {
        BatchExecutor.Bundle[] memory bs = new BatchExecutor.Bundle[](3);
        bs[0] = _bundle(_action(address(target), abi.encodeCall(Target.set, (1))), 1);
        bs[1] = _bundle(_action(address(target), abi.encodeCall(Target.fail, (2))), 2);
        BatchExecutor.Action memory pay = BatchExecutor.Action({
            target: address(target), value: 2 ether, gas: ACTION_GAS, data: abi.encodeCall(Target.deposit, ())
        });
        bs[2] = _bundle(pay, 3);
        vm.prank(relayer);
        bool[] memory ok = executor.executeBatch{value: 2 ether}(bs);
        assertTrue(ok[0]);
        assertFalse(ok[1]);
        assertTrue(ok[2]);
        assertEq(target.value(), 1);
        assertEq(target.received(), 2 ether);
        assertEq(ledger.balanceOf(relayer, address(usd)), 3 * FEE);
    }

    function test_executeBatch_reverts() public {
        BatchExecutor.Bundle[] memory none = new BatchExecutor.Bundle[](0);
        vm.prank(relayer);
        vm.expectRevert(BatchExecutor.EmptyBatch.selector);
        executor.executeBatch(none);

        BatchExecutor.Bundle[] memory bs = new BatchExecutor.Bundle[](2);
        bs[0] = _bundle(_action(address(target), abi.encodeCall(Target.set, (1))), 1);
        bs[1] = _bundle(_action(address(target), abi.encodeCall(Target.set, (2))), 1); // reused nonce
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(Erc20Payment.NonceAlreadyUsed.selector, payer, 1));
        executor.executeBatch(bs);
        assertEq(target.value(), 0); // the whole batch reverted

        bs[1] = _bundle(_action(address(target), abi.encodeCall(Target.set, (2))), 2);
        vm.prank(relayer);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.ValueMismatch.selector, 1, 0));
        executor.executeBatch{value: 1}(bs);
    }

    // -------------------------------------------------------- execution hash

    function test_executionHash() public view {
        bytes memory data = hex"deadbeef";
        (bytes32 raw, uint256 field) = executor.executionHash(address(target), data, 5, 70_000);
        assertEq(
            raw, keccak256(bytes.concat(bytes20(address(target)), data, bytes32(uint256(5)), bytes32(uint256(70_000))))
        );
        assertEq(field, uint256(raw) % executor.BN254_SCALAR_FIELD());
    }

    function testFuzz_executionHashInField(address to, bytes calldata data, uint256 fee, uint256 gas) public view {
        (bytes32 raw, uint256 field) = executor.executionHash(to, data, fee, gas);
        assertLt(field, executor.BN254_SCALAR_FIELD());
        assertEq(raw, keccak256(abi.encodePacked(to, data, fee, gas)));
    }

    function test_paymentDigest_isEip712() public view {
        bytes32 domain = keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("NOX Erc20Payment"),
                keccak256("1"),
                block.chainid,
                address(erc20)
            )
        );
        assertEq(erc20.domainSeparator(), domain);
        bytes32 structHash = keccak256(
            abi.encode(
                keccak256(
                    "Payment(address payer,address asset,uint256 fee,address relayer,bytes32 actionHash,uint256 nonce,uint256 deadline)"
                ),
                payer,
                address(usd),
                uint256(1),
                relayer,
                bytes32(uint256(2)),
                uint256(3),
                uint256(4)
            )
        );
        assertEq(
            erc20.paymentDigest(payer, address(usd), 1, relayer, bytes32(uint256(2)), 3, 4),
            keccak256(abi.encodePacked(hex"1901", domain, structHash))
        );
    }

    function test_constructors() public {
        assertEq(ledger.crediter(), address(executor));
        assertEq(erc20.executor(), address(executor));
        assertEq(erc20.ledger(), address(ledger));
        vm.expectRevert(Erc20Payment.ZeroAddress.selector);
        new Erc20Payment(BatchExecutor(address(0)));
        vm.expectRevert(RewardLedger.ZeroAddress.selector);
        new RewardLedger(address(0));
    }

    // --------------------------------------------------------- fuzz: binding

    /// @dev Any change of relayer, fee or calldata after signing is refused.
    function testFuzz_bindingHolds(address sub, uint256 fee2, bytes calldata data2) public {
        BatchExecutor.Action memory a = _action(address(target), abi.encodeCall(Target.set, (7)));
        BatchExecutor.Bundle memory b = _bundle(a, 1);
        vm.assume(sub != relayer);
        vm.prank(sub);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
        vm.assume(fee2 != FEE);
        b.fee = fee2;
        vm.prank(relayer);
        vm.expectRevert(); // BadSignature
        executor.execute(b);
        b.fee = FEE;
        vm.assume(keccak256(data2) != keccak256(a.data) && (data2.length < 4 || bytes4(data2[:4]) != 0x23b872dd));
        b.action.data = data2;
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
    }
}
