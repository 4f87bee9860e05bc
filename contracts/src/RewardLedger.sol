// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";

/// @title RewardLedger
/// @notice Relayer fees, per relayer and per asset, credited by one contract (the BatchExecutor
/// that deploys this ledger) and claimed by the relayer itself (pull payment).
/// @dev Invariant, checked on every credit: for every asset, this contract's balance is at least
/// `liabilities[asset]`, the sum of all unclaimed balances. A credit therefore needs funds that
/// arrived before it and that no earlier credit accounted for. There is no admin and no other way
/// for funds to leave than `claim` by the relayer they were credited to.
contract RewardLedger is ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice The only account that may credit (set once, in the constructor).
    address public immutable crediter;

    mapping(address relayer => mapping(address asset => uint256)) private _balances;
    /// @notice Sum of unclaimed balances of each asset (address(0) = native ETH).
    mapping(address asset => uint256) public liabilities;

    event Credited(address indexed relayer, address indexed asset, uint256 amount);
    event Claimed(address indexed relayer, address indexed asset, address to, uint256 amount);

    error NotCrediter();
    error ZeroAddress();
    error ZeroAmount();
    error Unfunded(address asset, uint256 held, uint256 owed);

    constructor(address crediter_) {
        if (crediter_ == address(0)) revert ZeroAddress();
        crediter = crediter_;
    }

    /// @notice Native ETH for fees paid in ETH (a payment plugin sends it before crediting).
    receive() external payable {}

    /// @notice Credit `amount` of `asset` to `relayer`; the funds must already be here.
    function credit(address relayer, address asset, uint256 amount) external {
        if (msg.sender != crediter) revert NotCrediter();
        if (relayer == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        uint256 owed = liabilities[asset] + amount;
        uint256 held = _held(asset);
        if (held < owed) revert Unfunded(asset, held, owed);
        liabilities[asset] = owed;
        _balances[relayer][asset] += amount;
        emit Credited(relayer, asset, amount);
    }

    /// @notice Send the caller's whole balance of `asset` to `to`.
    function claim(address asset, address to) external nonReentrant returns (uint256 amount) {
        if (to == address(0)) revert ZeroAddress();
        amount = _balances[msg.sender][asset];
        if (amount == 0) revert ZeroAmount();
        _balances[msg.sender][asset] = 0;
        liabilities[asset] -= amount;
        emit Claimed(msg.sender, asset, to, amount);

        if (asset == address(0)) Address.sendValue(payable(to), amount);
        else IERC20(asset).safeTransfer(to, amount);
    }

    /// @notice Unclaimed balance of `relayer` in `asset`.
    function balanceOf(address relayer, address asset) external view returns (uint256) {
        return _balances[relayer][asset];
    }

    function _held(address asset) private view returns (uint256) {
        return asset == address(0) ? address(this).balance : IERC20(asset).balanceOf(address(this));
    }
}
