// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {NoxStakeToken} from "../src/NoxStakeToken.sol";

contract NoxStakeTokenTest is Test {
    function test_mintsWholeSupplyToHolder() public {
        address holder = makeAddr("holder");
        NoxStakeToken t = new NoxStakeToken(holder, 123e18);
        assertEq(t.totalSupply(), 123e18);
        assertEq(t.balanceOf(holder), 123e18);
        assertEq(t.name(), "NOX Testnet Stake");
        assertEq(t.symbol(), "tNOX");
        assertEq(t.decimals(), 18);
    }
}
