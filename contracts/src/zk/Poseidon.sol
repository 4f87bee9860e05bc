// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

// Compiled so that build.sh writes its artifact: the pool calls a deployed PoseidonT4.
import {PoseidonT4} from "poseidon-solidity/PoseidonT4.sol";

/// @notice Poseidon over BN254 with three inputs, circom parameters (npm poseidon-solidity's
/// `PoseidonT4`, a library with a public pure `hash`, deployed on its own and called through
/// this interface: a library's pure functions may be called directly).
/// @dev poseidon-solidity reduces nothing and checks nothing: callers pass inputs below r.
interface IPoseidon3 {
    function hash(uint256[3] memory input) external pure returns (uint256);
}
