// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {RewardLedger} from "../src/RewardLedger.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";
import {IPayment} from "../src/interfaces/IPayment.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {InsertVerifier} from "../src/zk/InsertVerifier.sol";
import {ShieldedPool} from "../src/zk/ShieldedPool.sol";
import {PoolVectors as V} from "./zk/PoolVectors.sol";
import {TransferVerifier} from "../src/zk/TransferVerifier.sol";
import {TransferVectors as T} from "./zk/TransferVectors.sol";
import {QueueChain} from "./zk/PoolHarness.sol";

/// The victims' action: `increment()` at V.TARGET.
contract Counting {
    uint256 public count;

    function increment() external {
        ++count;
    }
}

/// Pays nothing and says so.
contract FreePayment is IPayment {
    function pay(bytes calldata, address, bytes32) external pure returns (address, uint256) {
        return (address(0), 0);
    }
}

/// Says it paid `abi.decode(payment, (address, uint256))` and moves nothing.
contract ClaimingPayment is IPayment {
    function pay(bytes calldata p, address, bytes32) external pure returns (address, uint256) {
        return abi.decode(p, (address, uint256));
    }
}

/// A plugin that, inside its own `pay`, spends a captured Erc20Payment authorisation.
contract RelayingPayment is IPayment {
    function pay(bytes calldata p, address, bytes32) external returns (address, uint256) {
        (Erc20Payment plugin, bytes memory data, address relayer, bytes32 h) =
            abi.decode(p, (Erc20Payment, bytes, address, bytes32));
        return plugin.pay(data, relayer, h);
    }
}

/// A new, permissionless plugin that pays fees out of its own token balance: allowed, since it
/// delivers what it is credited for.
contract SelfFundedPayment is IPayment {
    NoxStakeToken public immutable token;
    address public immutable ledger;

    constructor(NoxStakeToken t, address l) {
        token = t;
        ledger = l;
    }

    function pay(bytes calldata p, address, bytes32) external returns (address, uint256 fee) {
        fee = abi.decode(p, (uint256));
        token.transfer(ledger, fee);
        return (address(token), fee);
    }
}

/// A relayer that is also a plugin: inside its own `pay` it claims its earlier credit from the
/// ledger and sends it straight back, hoping the executor counts the returning funds as a fee.
contract ClaimAndReturn is IPayment {
    BatchExecutor public immutable executor;
    NoxStakeToken public immutable token;

    constructor(BatchExecutor e, NoxStakeToken t) {
        executor = e;
        token = t;
    }

    function submit(BatchExecutor.Bundle calldata b) external returns (bool) {
        return executor.execute(b);
    }

    function pay(bytes calldata, address, bytes32) external returns (address, uint256 amount) {
        RewardLedger ledger = executor.ledger();
        amount = ledger.claim(address(token), address(this));
        token.transfer(address(ledger), amount);
        return (address(token), amount);
    }
}

/// Burns `n` gas (to within a loop iteration) and records that it finished.
contract Burner {
    uint256 public done;

    function burn(uint256 n) external {
        uint256 start = gasleft();
        while (start - gasleft() < n) {}
        done += 1;
    }
}

/// Issue 29 items 1, 2 and 6, performed as an attacker would. Each test is the attack that
/// succeeded on the code before the fix (commit message of the fix: its output there) and now
/// asserts that it fails and that the victim's own bundle still goes through afterwards.
contract AttacksTest is Test {
    BatchExecutor executor;
    RewardLedger ledger;
    Erc20Payment erc20;
    ShieldedPool pool;
    ShieldedPool.Transaction victimTx;
    NoxStakeToken usd;
    NoxStakeToken token;
    uint256 payerKey = 0xB0B;
    address payer;
    address attacker = makeAddr("attacker");
    uint256 constant FEE = 3e18;
    uint256 constant DEADLINE = 4102444800;

    function setUp() public {
        payer = vm.addr(payerKey);
        executor = new BatchExecutor();
        ledger = executor.ledger();
        erc20 = new Erc20Payment(executor);
        usd = new NoxStakeToken(address(this), 1e30);
        usd.transfer(payer, 100e18);
        vm.prank(payer);
        usd.approve(address(erc20), type(uint256).max);
        deployCodeTo("NoxStakeToken.sol:NoxStakeToken", abi.encode(address(this), 100e18), V.TOKEN);
        token = NoxStakeToken(V.TOKEN);
        deployCodeTo("Attacks.t.sol:Counting", V.TARGET);
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
        token.approve(V.POOL, type(uint256).max);
        pool.deposit(V.TOKEN, T.DEPOSIT, T.INNER0, new bytes(T.NOTE_LEN));
        pool.deposit(V.TOKEN, T.DEPOSIT, T.INNER1, new bytes(T.NOTE_LEN));
        pool.deposit(V.TOKEN, T.DEPOSIT, T.INNER2, new bytes(T.NOTE_LEN));
        vm.deal(address(this), 10 ether);
        pool.deposit{value: T.DEPOSIT}(address(0), T.DEPOSIT, T.INNER3, new bytes(T.NOTE_LEN));

        // The victim's private transfer paying PAY_FEE of TOKEN to V.RELAYER in a payment-only
        // bundle (real proof: TransferVectors' TRANSFER, against INSERT1_ROOT).
        uint256[8] memory x = T.transferInputs();
        victimTx.proof = T.transferProof();
        victimTx.root = x[0];
        victimTx.nullifiers = [x[1], x[2]];
        victimTx.commitments = [x[3], x[4]];
        victimTx.asset = T.TRANSFER_ASSET;
        victimTx.fee = T.TRANSFER_FEE;
        victimTx.deadline = T.DEADLINE;
        victimTx.notes = T.transferNotes();
    }

    // ---------------------------------------------------------------------------------------
    // Helpers

    /// The victim's signed Erc20Payment for relayer V.RELAYER and action hash `h`.
    function _victimErc20(bytes32 h, uint256 nonce) internal view returns (bytes memory) {
        bytes32 digest = erc20.paymentDigest(payer, address(usd), FEE, V.RELAYER, h, nonce, DEADLINE);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(payerKey, digest);
        return
            abi.encode(Erc20Payment.PaymentData(payer, address(usd), FEE, nonce, DEADLINE, abi.encodePacked(r, s, v)));
    }

    /// The victim's private transaction: PAY_FEE of TOKEN to V.RELAYER (payment-only bundle).
    function _victimSpend() internal view returns (bytes memory) {
        return abi.encode(victimTx);
    }

    function _b(IPayment pay, bytes memory data, address asset, uint256 fee, address target, bytes memory call)
        internal
        pure
        returns (BatchExecutor.Bundle memory)
    {
        return BatchExecutor.Bundle(pay, data, asset, fee, BatchExecutor.Action(target, 0, V.ACTION_GAS, call));
    }

    function _victimErc20Bundle() internal view returns (BatchExecutor.Bundle memory) {
        (bytes32 h,) = executor.executionHash(V.TARGET, V.ACTION_DATA, FEE, V.ACTION_GAS);
        return _b(erc20, _victimErc20(h, 1), address(usd), FEE, V.TARGET, V.ACTION_DATA);
    }

    function _victimPoolBundle() internal view returns (BatchExecutor.Bundle memory) {
        return BatchExecutor.Bundle(
            IPayment(V.POOL), _victimSpend(), V.TOKEN, T.PAY_FEE, BatchExecutor.Action(address(0), 0, 0, "")
        );
    }

    // ---------------------------------------------------------------------------------------
    // Item 1: fee theft by replaying a payment as an action

    /// The whole attack in one executeBatch: two bundles whose actions spend the victims'
    /// Erc20Payment signature and ShieldedPool proof (bound to V.RELAYER and their action
    /// hashes), two whose lying plugins claim those fees. Before the fix the attacker claimed
    /// 3e18 usd and 1e15 token and both victims' transactions reverted.
    function test_feeTheftThroughBothPluginsInOneBatchFails() public {
        pool.insertBatch(T.insert1Proof(), T.INSERT1_ROOT, QueueChain.leaves(T.insert1Inputs(), 4));
        (bytes32 h1,) = executor.executionHash(V.TARGET, V.ACTION_DATA, FEE, V.ACTION_GAS);
        IPayment free = new FreePayment();
        IPayment liar = new ClaimingPayment();
        bytes memory steal1 = abi.encodeCall(erc20.pay, (_victimErc20(h1, 1), V.RELAYER, h1));
        bytes memory steal2 = abi.encodeCall(pool.pay, (_victimSpend(), V.RELAYER, T.PAY_ACTION_HASH));

        BatchExecutor.Bundle[] memory bs = new BatchExecutor.Bundle[](4);
        bs[0] = _b(free, "", address(0), 0, address(erc20), steal1);
        bs[1] = _b(free, "", address(0), 0, address(pool), steal2);
        bs[2] = _b(liar, abi.encode(address(usd), FEE), address(usd), FEE, V.TARGET, V.ACTION_DATA);
        bs[3] = _b(liar, abi.encode(V.TOKEN, V.PAY_FEE), V.TOKEN, V.PAY_FEE, V.TARGET, V.ACTION_DATA);
        vm.prank(attacker);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.FeeNotReceived.selector, FEE, 0));
        executor.executeBatch(bs);

        // Without the lying half the replays themselves are refused inside the actions.
        BatchExecutor.Bundle[] memory replays = new BatchExecutor.Bundle[](2);
        replays[0] = bs[0];
        replays[1] = bs[1];
        vm.expectEmit(address(executor));
        emit BatchExecutor.ActionExecuted(
            _hash(bs[0]),
            attacker,
            address(erc20),
            false,
            4,
            keccak256(abi.encodeWithSelector(Erc20Payment.NotInPaymentPhase.selector))
        );
        vm.prank(attacker);
        bool[] memory ok = executor.executeBatch(replays);
        assertFalse(ok[0]);
        assertFalse(ok[1]);
        assertEq(usd.balanceOf(address(ledger)), 0);
        assertEq(token.balanceOf(address(ledger)), 0);
        assertFalse(erc20.nonceUsed(payer, 1));
        assertFalse(pool.isSpent(victimTx.nullifiers[0]));

        // The relayer's pending transactions then go through: it is paid, the actions run.
        vm.startPrank(V.RELAYER);
        assertTrue(executor.execute(_victimErc20Bundle()));
        assertTrue(executor.execute(_victimPoolBundle()));
        vm.stopPrank();
        assertEq(ledger.balanceOf(V.RELAYER, address(usd)), FEE);
        assertEq(ledger.balanceOf(V.RELAYER, V.TOKEN), V.PAY_FEE);
        assertEq(ledger.balanceOf(attacker, address(usd)), 0);
        assertEq(Counting(V.TARGET).count(), 1);
        assertTrue(pool.isSpent(victimTx.nullifiers[0]));
    }

    function _hash(BatchExecutor.Bundle memory b) internal view returns (bytes32 h) {
        (h,) = executor.executionHash(b.action.target, b.action.data, b.fee, b.action.gas);
    }

    /// Shipped plugins accept `pay` only in their own payment phase, for the relayer and action
    /// hash the executor handed them: not as the executor outside it (an action), not from
    /// another plugin's `pay`, not from anyone else.
    function test_shippedPluginsRefuseEveryCallOutsideTheirPaymentPhase() public {
        pool.insertBatch(T.insert1Proof(), T.INSERT1_ROOT, QueueChain.leaves(T.insert1Inputs(), 4));
        (bytes32 h1,) = executor.executionHash(V.TARGET, V.ACTION_DATA, FEE, V.ACTION_GAS);
        (address plugin, address relayer, bytes32 h) = executor.paymentInProgress();
        assertEq(plugin, address(0));
        assertEq(relayer, address(0));
        assertEq(h, bytes32(0));

        bytes memory sig = _victimErc20(h1, 1);
        vm.startPrank(address(executor));
        vm.expectRevert(Erc20Payment.NotInPaymentPhase.selector);
        erc20.pay(sig, V.RELAYER, h1);
        vm.expectRevert(ShieldedPool.NotInPaymentPhase.selector);
        pool.pay(_victimSpend(), V.RELAYER, T.PAY_ACTION_HASH);
        vm.stopPrank();
        vm.expectRevert(Erc20Payment.NotExecutor.selector);
        erc20.pay(sig, V.RELAYER, h1);

        // From inside another plugin's payment phase (the attacker's own bundle).
        RelayingPayment relay = new RelayingPayment();
        BatchExecutor.Bundle memory b =
            _b(relay, abi.encode(erc20, sig, V.RELAYER, h1), address(usd), FEE, V.TARGET, V.ACTION_DATA);
        vm.prank(attacker);
        vm.expectRevert(Erc20Payment.NotExecutor.selector);
        executor.execute(b);
        // Even submitted by the victim's relayer itself, the plugin is not the one in progress.
        vm.prank(V.RELAYER);
        vm.expectRevert(Erc20Payment.NotExecutor.selector);
        executor.execute(b);
    }

    /// A lying plugin cannot credit itself from someone else's surplus: 3e18 usd sent to the
    /// ledger by mistake (or left uncredited by anything) stays there; before the fix the liar
    /// was credited it and claimed it.
    function test_aLyingPluginCannotCreditADonation() public {
        usd.transfer(address(ledger), FEE);
        IPayment liar = new ClaimingPayment();
        vm.prank(attacker);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.FeeNotReceived.selector, FEE, 0));
        executor.execute(_b(liar, abi.encode(address(usd), FEE), address(usd), FEE, V.TARGET, V.ACTION_DATA));
        // Nor by naming another asset than the bundle's.
        vm.prank(attacker);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.AssetMismatch.selector, V.TOKEN, address(usd)));
        executor.execute(_b(liar, abi.encode(address(usd), FEE), V.TOKEN, FEE, V.TARGET, V.ACTION_DATA));
        assertEq(ledger.liabilities(address(usd)), 0);
        assertEq(usd.balanceOf(address(ledger)), FEE);
    }

    /// Plugins stay permissionless: a new plugin that delivers its fee itself is credited exactly
    /// what arrived, and only that.
    function test_aNewSelfFundedPluginIsCreditedWhatItDelivers() public {
        SelfFundedPayment p = new SelfFundedPayment(usd, address(ledger));
        usd.transfer(address(p), FEE);
        usd.transfer(address(ledger), 7); // someone else's surplus, never credited
        vm.prank(attacker);
        assertTrue(executor.execute(_b(p, abi.encode(FEE), address(usd), FEE, V.TARGET, V.ACTION_DATA)));
        assertEq(ledger.balanceOf(attacker, address(usd)), FEE);
        assertEq(ledger.liabilities(address(usd)), FEE);
        assertEq(usd.balanceOf(address(ledger)), FEE + 7);
        // Claiming a fee it did not fully deliver (it has nothing left) fails.
        vm.prank(attacker);
        vm.expectRevert();
        executor.execute(_b(p, abi.encode(uint256(7)), address(usd), 7, V.TARGET, V.ACTION_DATA));
    }

    /// Review of RewardLedger.claim as an attacker would use it: a plugin that moves ledger funds
    /// out and back during its own `pay` is measured as delivering nothing and refused; its
    /// earlier credit stays exactly as it was.
    function test_ledgerFundsMovedDuringPayAreNotAFee() public {
        ClaimAndReturn sneaky = new ClaimAndReturn(executor, usd);
        SelfFundedPayment p = new SelfFundedPayment(usd, address(ledger));
        usd.transfer(address(p), FEE);
        assertTrue(sneaky.submit(_b(p, abi.encode(FEE), address(usd), FEE, V.TARGET, V.ACTION_DATA)));
        assertEq(ledger.balanceOf(address(sneaky), address(usd)), FEE);

        BatchExecutor.Bundle memory b = _b(sneaky, "", address(usd), FEE, V.TARGET, V.ACTION_DATA);
        vm.expectRevert(abi.encodeWithSelector(BatchExecutor.FeeNotReceived.selector, FEE, 0));
        sneaky.submit(b);
        assertEq(ledger.balanceOf(address(sneaky), address(usd)), FEE);
        assertEq(ledger.liabilities(address(usd)), FEE);
        assertEq(usd.balanceOf(address(ledger)), FEE);
    }

    // ---------------------------------------------------------------------------------------
    // Item 2: action starvation

    function _burnBundle(Burner b, uint256 burn, uint256 gas, uint256 nonce)
        internal
        view
        returns (BatchExecutor.Bundle memory)
    {
        bytes memory data = abi.encodeCall(Burner.burn, (burn));
        (bytes32 h,) = executor.executionHash(address(b), data, FEE, gas);
        return BatchExecutor.Bundle(
            erc20, _victimErc20(h, nonce), address(usd), FEE, BatchExecutor.Action(address(b), 0, gas, data)
        );
    }

    /// The relayer tries every gas limit from 60 k up: before the fix the smallest limit that
    /// paid (346 k for a 200 k action) paid with the action starved. Now every limit either
    /// reverts the bundle (nothing credited) or runs the action with its bound gas.
    function test_aStarvedActionIsNeverPaid() public {
        Burner b = new Burner();
        BatchExecutor.Bundle memory bundle = _burnBundle(b, 200_000, 230_000, 2);
        bool sawGasCheck;
        uint256 g = 60_000;
        for (; g < 600_000; g += 4_000) {
            vm.prank(V.RELAYER);
            try executor.execute{gas: g}(bundle) returns (bool ok) {
                assertTrue(ok, "paid, so the action must have had its gas");
                break;
            } catch (bytes memory err) {
                if (err.length >= 4 && bytes4(err) == BatchExecutor.ActionGasNotGiven.selector) sawGasCheck = true;
                assertEq(ledger.balanceOf(V.RELAYER, address(usd)), 0);
            }
        }
        assertTrue(sawGasCheck, "some limit ran the payment and was refused by the 63/64 check");
        assertEq(b.done(), 1);
        assertEq(ledger.balanceOf(V.RELAYER, address(usd)), FEE);
        emit log_named_uint("smallest paying gas limit", g);
    }

    /// Enough gas: paid and the action ran. An action that needs more than the gas its payer
    /// bound fails on its own, and the relayer (which gave it all of it) is still paid.
    function test_theBoundGasIsForwardedExactly() public {
        Burner b = new Burner();
        BatchExecutor.Bundle memory enough = _burnBundle(b, 200_000, 230_000, 3);
        BatchExecutor.Bundle memory tooLittle = _burnBundle(b, 200_000, 150_000, 4);
        vm.prank(V.RELAYER);
        assertTrue(executor.execute{gas: 1_000_000}(enough));
        assertEq(b.done(), 1);
        vm.prank(V.RELAYER);
        assertFalse(executor.execute{gas: 1_000_000}(tooLittle));
        assertEq(b.done(), 1);
        assertEq(ledger.balanceOf(V.RELAYER, address(usd)), 2 * FEE);
    }

    // ---------------------------------------------------------------------------------------
    // Item 6: insertion race

    /// The inserter proved the 4 queued commitments; a 1-wei deposit lands first. Before the fix
    /// the insertion reverted only after verifying the proof (337 k gas in the test); now it is
    /// refused before verifying, and the count it names is the one it proved.
    function test_anInsertionRaceIsRefusedCheaply() public {
        pool.deposit{value: 1}(address(0), 1, 7, new bytes(T.NOTE_LEN));
        uint256 g = gasleft();
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.CountMismatch.selector, 4, 5));
        pool.insertBatch(T.insert1Proof(), T.INSERT1_ROOT, QueueChain.leaves(T.insert1Inputs(), 4));
        uint256 used = g - gasleft();
        emit log_named_uint("gas of the refused insertion", used);
        assertLt(used, 15_000);
        assertEq(pool.firstUninsertedQueueIndex(), 0);
        assertEq(pool.currentRoot(), V.EMPTY_ROOT);
    }
}
