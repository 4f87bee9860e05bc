// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {RewardLedger} from "../src/RewardLedger.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {ACTION_GAS, Target, EthPayment} from "./utils/ExecutorMocks.sol";

contract RewardLedgerTest is Test {
    RewardLedger ledger;
    NoxStakeToken usd;
    address crediter = address(0xC0FFEE);
    address relayer = makeAddr("relayer");
    address claimTo = makeAddr("claimTo");

    function setUp() public {
        ledger = new RewardLedger(crediter);
        usd = new NoxStakeToken(address(this), 1e30);
    }

    function test_creditAndClaimErc20() public {
        usd.transfer(address(ledger), 10);
        vm.expectEmit(address(ledger));
        emit RewardLedger.Credited(relayer, address(usd), 10);
        vm.prank(crediter);
        ledger.credit(relayer, address(usd), 10);
        assertEq(ledger.balanceOf(relayer, address(usd)), 10);
        vm.expectEmit(address(ledger));
        emit RewardLedger.Claimed(relayer, address(usd), claimTo, 10);
        vm.prank(relayer);
        assertEq(ledger.claim(address(usd), claimTo), 10);
        assertEq(usd.balanceOf(claimTo), 10);
        assertEq(ledger.balanceOf(relayer, address(usd)), 0);
        assertEq(ledger.liabilities(address(usd)), 0);
        vm.prank(relayer);
        vm.expectRevert(RewardLedger.ZeroAmount.selector);
        ledger.claim(address(usd), claimTo);
    }

    function test_creditAndClaimEth() public {
        vm.deal(address(this), 5 ether);
        (bool ok,) = address(ledger).call{value: 2 ether}("");
        assertTrue(ok);
        vm.prank(crediter);
        ledger.credit(relayer, address(0), 2 ether);
        vm.prank(relayer);
        ledger.claim(address(0), claimTo);
        assertEq(claimTo.balance, 2 ether);
        assertEq(address(ledger).balance, 0);
    }

    function test_ethFeeThroughExecutor() public {
        BatchExecutor executor = new BatchExecutor();
        RewardLedger l = executor.ledger();
        EthPayment p = new EthPayment{value: 1 ether}(payable(address(l)));
        Target t = new Target();
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: p,
            paymentData: abi.encode(uint256(0.1 ether)),
            asset: address(0),
            fee: 0.1 ether,
            action: BatchExecutor.Action({
                target: address(t), value: 0, gas: ACTION_GAS, data: abi.encodeCall(Target.fail, (1))
            })
        });
        vm.prank(relayer);
        assertFalse(executor.execute(b));
        assertEq(l.balanceOf(relayer, address(0)), 0.1 ether);
        vm.prank(relayer);
        l.claim(address(0), relayer);
        assertEq(relayer.balance, 0.1 ether);
    }

    function test_credit_reverts() public {
        vm.expectRevert(RewardLedger.NotCrediter.selector);
        ledger.credit(relayer, address(usd), 1);
        vm.startPrank(crediter);
        vm.expectRevert(RewardLedger.ZeroAddress.selector);
        ledger.credit(address(0), address(usd), 1);
        vm.expectRevert(RewardLedger.ZeroAmount.selector);
        ledger.credit(relayer, address(usd), 0);
        vm.expectRevert(abi.encodeWithSelector(RewardLedger.Unfunded.selector, address(usd), 0, 1));
        ledger.credit(relayer, address(usd), 1);
        vm.stopPrank();
        // funds can back one credit only
        usd.transfer(address(ledger), 5);
        vm.startPrank(crediter);
        ledger.credit(relayer, address(usd), 5);
        vm.expectRevert(abi.encodeWithSelector(RewardLedger.Unfunded.selector, address(usd), 5, 6));
        ledger.credit(claimTo, address(usd), 1);
        vm.stopPrank();
    }

    function test_claim_toZeroRefused() public {
        vm.prank(relayer);
        vm.expectRevert(RewardLedger.ZeroAddress.selector);
        ledger.claim(address(usd), address(0));
    }

    function test_claim_ethToRejectingReceiver() public {
        vm.deal(address(ledger), 1 ether);
        vm.prank(crediter);
        ledger.credit(relayer, address(0), 1 ether);
        address rejecting = address(new Target());
        vm.prank(relayer);
        vm.expectRevert(); // Target has no receive(): the claim reverts and the balance stays
        ledger.claim(address(0), rejecting);
        assertEq(ledger.balanceOf(relayer, address(0)), 1 ether);
    }

    /// @dev Liabilities never exceed holdings, over random credits and claims.
    function testFuzz_solvency(uint96[8] calldata amounts, uint8 claimMask) public {
        address[4] memory rs = [makeAddr("r1"), makeAddr("r2"), makeAddr("r3"), makeAddr("r4")];
        for (uint256 i = 0; i < amounts.length; ++i) {
            if (amounts[i] == 0) continue;
            usd.transfer(address(ledger), amounts[i]);
            vm.prank(crediter);
            ledger.credit(rs[i % 4], address(usd), amounts[i]);
            if (claimMask & (1 << i) != 0) {
                vm.prank(rs[i % 4]);
                ledger.claim(address(usd), rs[i % 4]);
            }
            assertGe(usd.balanceOf(address(ledger)), ledger.liabilities(address(usd)));
            uint256 sum;
            for (uint256 j = 0; j < 4; ++j) {
                sum += ledger.balanceOf(rs[j], address(usd));
            }
            assertEq(sum, ledger.liabilities(address(usd)));
            assertEq(usd.balanceOf(address(ledger)), sum);
        }
    }
}
