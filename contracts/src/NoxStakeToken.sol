// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title NoxStakeToken — TESTNET ARTIFACT
/// @notice A plain ERC-20 used as the stake token of `NodeRegistry` on the NOX testnet and in
/// tests. The whole supply is minted once, in the constructor, to `holder`; there is no owner,
/// no further minting and no burning. A real deployment stakes an existing token instead: the
/// registry takes any ERC-20 that transfers exactly the amount asked (no fee-on-transfer,
/// no rebasing).
contract NoxStakeToken is ERC20 {
    constructor(address holder, uint256 supply) ERC20("NOX Testnet Stake", "tNOX") {
        _mint(holder, supply);
    }
}
