// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {BatchExecutor} from "../src/BatchExecutor.sol";
import {Erc20Payment} from "../src/Erc20Payment.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";
import {ACTION_GAS, Target} from "./utils/ExecutorMocks.sol";

/// @dev A smart-contract wallet that accepts one owner's ECDSA signatures (ERC-1271).
contract Wallet1271 {
    address public immutable owner;

    constructor(address o) {
        owner = o;
    }

    function isValidSignature(bytes32 hash, bytes calldata sig) external view returns (bytes4) {
        (bytes32 r, bytes32 s) = abi.decode(sig[:64], (bytes32, bytes32));
        return ecrecover(hash, uint8(sig[64]), r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }

    function approve(IERC20 token, address spender) external {
        require(msg.sender == owner);
        token.approve(spender, type(uint256).max);
    }
}

contract Erc1271PayerTest is Test {
    function test_contractWalletPays() public {
        uint256 ownerKey = 0xA11;
        address owner = vm.addr(ownerKey);
        BatchExecutor executor = new BatchExecutor();
        Erc20Payment erc20 = new Erc20Payment(executor);
        NoxStakeToken usd = new NoxStakeToken(address(this), 1e30);
        Wallet1271 wallet = new Wallet1271(owner);
        usd.transfer(address(wallet), 10e18);
        vm.prank(owner);
        wallet.approve(usd, address(erc20));
        Target t = new Target();
        address relayer = makeAddr("relayer");

        bytes memory data = abi.encodeCall(Target.set, (5));
        (bytes32 h,) = executor.executionHash(address(t), data, 1e18, ACTION_GAS);
        bytes32 digest = erc20.paymentDigest(address(wallet), address(usd), 1e18, relayer, h, 1, block.timestamp);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(ownerKey, digest);
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: erc20,
            paymentData: abi.encode(
                Erc20Payment.PaymentData(
                    address(wallet), address(usd), 1e18, 1, block.timestamp, abi.encodePacked(r, s, v)
                )
            ),
            asset: address(usd),
            fee: 1e18,
            action: BatchExecutor.Action(address(t), 0, ACTION_GAS, data)
        });
        vm.prank(relayer);
        assertTrue(executor.execute(b));
        assertEq(executor.ledger().balanceOf(relayer, address(usd)), 1e18);
        assertEq(usd.balanceOf(address(wallet)), 9e18);

        // a signature by someone else is refused by the wallet
        (v, r, s) = vm.sign(0xB22, digest);
        b.paymentData = abi.encode(
            Erc20Payment.PaymentData(address(wallet), address(usd), 1e18, 2, block.timestamp, abi.encodePacked(r, s, v))
        );
        vm.prank(relayer);
        vm.expectRevert(Erc20Payment.BadSignature.selector);
        executor.execute(b);
    }
}
