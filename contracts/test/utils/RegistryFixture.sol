// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {NodeRegistry} from "../../src/NodeRegistry.sol";
import {NoxStakeToken} from "../../src/NoxStakeToken.sol";

// The shared set-up of the NodeRegistry tests (NodeRegistry.t.sol, NodeRegistryFingerprint.t.sol,
// NodeRegistrySlashing.t.sol).

/// @dev A token that keeps 1% of every transfer: the registry must refuse it.
contract FeeOnTransferToken is ERC20 {
    constructor(address holder) ERC20("Fee", "FEE") {
        _mint(holder, 1e30);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from != address(0) && to != address(0)) {
            uint256 fee = value / 100;
            super._update(from, address(0xFEE), fee);
            value -= fee;
        }
        super._update(from, to, value);
    }
}

/// @dev Operator actions, with msg.sender == tx.origin (operators are EOAs).
contract RegistryFixture is Test {
    uint256 internal constant MIN_STAKE = 1_000e18;
    uint64 internal constant DELAY = 7 days;
    uint16 internal constant REPORTER_BPS = 1_000; // 10 %

    NoxStakeToken internal token;
    NodeRegistry internal reg;

    function setUp() public virtual {
        token = new NoxStakeToken(address(this), 1e30);
        reg = new NodeRegistry(IERC20(address(token)), MIN_STAKE, DELAY, REPORTER_BPS);
    }

    function _operator(uint256 i) internal returns (address op, uint256 key) {
        key = uint256(keccak256(abi.encode("operator", i))) % (type(uint128).max) + 1;
        op = vm.addr(key);
    }

    function _fund(address op, uint256 amount) internal {
        token.transfer(op, amount);
        vm.prank(op, op);
        token.approve(address(reg), type(uint256).max);
    }

    function _register(address op, bytes32 identity, uint256 stake) internal {
        _fund(op, stake);
        vm.prank(op, op);
        reg.register(identity, keccak256(abi.encode("link", identity)), "127.0.0.1:9001", 1, stake);
    }

    function _registerN(uint256 n) internal returns (address[] memory ops) {
        ops = new address[](n);
        for (uint256 i = 0; i < n; ++i) {
            (ops[i],) = _operator(i);
            _register(ops[i], keccak256(abi.encode("identity", i)), MIN_STAKE + i);
        }
    }

    function _sign(uint256 key, bytes32 digest) internal pure returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(r, s, v);
    }
}
