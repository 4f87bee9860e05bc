// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {RewardLedger} from "../src/RewardLedger.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";

/// @dev The gas every action of this file is bound to (`Action.gas`).
uint256 constant ACTION_GAS = 100_000;

contract Flaky {
    uint256 public calls;

    function run(bool ok) external {
        ++calls;
        require(ok, "flaky");
    }
}

/// @dev Random bundles (actions that succeed or revert, correct or tampered submissions) and
/// claims by three relayers, paid by three payers.
contract PaymentHandler is Test {
    BatchExecutor public immutable executor;
    RewardLedger public immutable ledger;
    Erc20Payment public immutable erc20;
    NoxStakeToken public immutable usd;
    Flaky public immutable flaky;
    uint256[3] public payerKeys = [uint256(0xA1), 0xA2, 0xA3];
    address[3] public relayers;
    uint256 public nextNonce = 1;
    uint256 public paidByPayers;
    uint256 public claimed;
    /// @dev Set on a property violation inside a call (the invariant fuzzer ignores reverts).
    string public violation;

    constructor(BatchExecutor e, Erc20Payment p, NoxStakeToken t) {
        executor = e;
        ledger = e.ledger();
        erc20 = p;
        usd = t;
        flaky = new Flaky();
        for (uint256 i = 0; i < 3; ++i) {
            relayers[i] = makeAddr(string.concat("relayer", vm.toString(i)));
            address payer = vm.addr(payerKeys[i]);
            vm.prank(payer);
            t.approve(address(p), type(uint256).max);
        }
    }

    function bundle(uint256 who, uint256 rel, uint256 fee, bool actionOk, uint8 tamper) external {
        address relayer = relayers[rel % 3];
        bytes memory data = abi.encodeCall(Flaky.run, (actionOk));
        BatchExecutor.Bundle memory b = _signed(payerKeys[who % 3], relayer, fee, data);
        fee = b.fee;
        uint8 t = tamper % 4;
        if (t == 1) b.fee = fee + 1; // another fee
        if (t == 2) b.action.data = abi.encodeCall(Flaky.run, (!actionOk)); // another action
        address submitter = t == 3 ? relayers[(rel % 3 + 1) % 3] : relayer; // another relayer
        uint256 before = ledger.balanceOf(submitter, address(usd));
        vm.prank(submitter);
        try executor.execute(b) {
            if (t != 0) violation = "a tampered bundle was accepted";
            paidByPayers += fee;
            if (ledger.balanceOf(submitter, address(usd)) != before + fee) violation = "relayer not credited";
        } catch {
            if (t == 0) violation = "an honest bundle was refused";
        }
    }

    function _signed(uint256 key, address relayer, uint256 fee, bytes memory data)
        private
        returns (BatchExecutor.Bundle memory)
    {
        address payer = vm.addr(key);
        fee = bound(fee, 0, usd.balanceOf(payer));
        (bytes32 h,) = executor.executionHash(address(flaky), data, fee, ACTION_GAS);
        uint256 nonce = nextNonce++;
        bytes32 digest = erc20.paymentDigest(payer, address(usd), fee, relayer, h, nonce, block.timestamp);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        bytes memory sig = abi.encodePacked(r, s, v);
        return BatchExecutor.Bundle({
            payment: erc20,
            paymentData: abi.encode(Erc20Payment.PaymentData(payer, address(usd), fee, nonce, block.timestamp, sig)),
            asset: address(usd),
            fee: fee,
            action: BatchExecutor.Action(address(flaky), 0, ACTION_GAS, data)
        });
    }

    function claim(uint256 rel) external {
        address relayer = relayers[rel % 3];
        uint256 owed = ledger.balanceOf(relayer, address(usd));
        if (owed == 0) return;
        vm.prank(relayer);
        ledger.claim(address(usd), relayer);
        claimed += owed;
    }

    function owedTotal() external view returns (uint256 sum) {
        for (uint256 i = 0; i < 3; ++i) {
            sum += ledger.balanceOf(relayers[i], address(usd));
        }
    }
}

contract PaymentInvariantTest is Test {
    BatchExecutor executor;
    NoxStakeToken usd;
    PaymentHandler handler;

    function setUp() public {
        executor = new BatchExecutor();
        Erc20Payment erc20 = new Erc20Payment(executor);
        usd = new NoxStakeToken(address(this), 1e30);
        handler = new PaymentHandler(executor, erc20, usd);
        for (uint256 i = 0; i < 3; ++i) {
            usd.transfer(vm.addr(handler.payerKeys(i)), 1e24);
        }
        targetContract(address(handler));
    }

    function invariant_ledgerHoldsExactlyWhatItOwes() public view {
        RewardLedger ledger = executor.ledger();
        assertEq(usd.balanceOf(address(ledger)), ledger.liabilities(address(usd)));
        assertEq(ledger.liabilities(address(usd)), handler.owedTotal());
    }

    function invariant_everyTokenAccountedFor() public view {
        assertEq(handler.paidByPayers(), handler.claimed() + usd.balanceOf(address(executor.ledger())));
    }

    function invariant_bindingAndPayment() public view {
        assertEq(handler.violation(), "");
    }

    function invariant_executorHoldsNothing() public view {
        assertEq(usd.balanceOf(address(executor)), 0);
        assertEq(address(executor).balance, 0);
    }
}
