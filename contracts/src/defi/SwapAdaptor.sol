// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {ShieldedPool} from "../zk/ShieldedPool.sol";

/// @notice The Uniswap v2 router calls the adaptor makes (npm `@uniswap/v2-periphery`, deployed
/// from its compiled artifact).
interface IUniswapV2Router02 {
    function swapExactETHForTokens(uint256 amountOutMin, address[] calldata path, address to, uint256 deadline)
        external
        payable
        returns (uint256[] memory amounts);
    function swapExactTokensForETH(
        uint256 amountIn,
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external returns (uint256[] memory amounts);
}

/// @title SwapAdaptor — a private swap: withdraw from the shielded pool and swap atomically
/// @notice A user proves a transaction withdrawing `t.publicOut` of `t.asset` to this adaptor,
/// bound to `swapHash(p)`; the adaptor submits it (`ShieldedPool.transact`), swaps exactly that
/// amount on Uniswap v2 and sends the output to `p.recipient` (a fresh address). Submitted as the
/// action of a BatchExecutor bundle, paid by a separate payment, no account of the user appears
/// on chain. With `p.tokenOut` equal to the withdrawn asset there is
/// no swap: the amount goes to `p.recipient` as it is (a gas-paid withdrawal — the pool itself
/// cannot be a bundle's action, since it is the executor's payment plugin).
/// @dev The withdrawal proof binds the swap's every parameter through `swapHash` (the pool only
/// lets the recipient — this adaptor — submit a withdrawal bound to a nonzero hash), so a copy of
/// the proof taken from the mempool can only perform the swap the user asked for, to the user's
/// recipient, with the user's minimum. The adaptor has no owner and holds nothing between calls.
contract SwapAdaptor is ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice What to swap into and where the output goes. ETH is `address(0)`.
    struct Swap {
        address tokenOut;
        uint256 amountOutMin;
        uint256 swapDeadline;
        address recipient;
    }

    ShieldedPool public immutable pool;
    IUniswapV2Router02 public immutable router;
    address public immutable weth;

    event Swapped(
        bytes32 indexed swapHash,
        address indexed assetIn,
        address indexed assetOut,
        uint256 amountIn,
        uint256 amountOut,
        address recipient
    );

    error ZeroAddress();
    error UnsupportedPair(address assetIn, address assetOut);
    error UnexpectedSender(address sender);
    error BelowMinimum(uint256 amount, uint256 minimum);

    constructor(ShieldedPool pool_, IUniswapV2Router02 router_, address weth_) {
        if (address(pool_) == address(0) || address(router_) == address(0) || weth_ == address(0)) {
            revert ZeroAddress();
        }
        pool = pool_;
        router = router_;
        weth = weth_;
    }

    /// @notice The action hash a withdrawal for swap `p` must be bound to: this adaptor, the
    /// chain and every field of `p`.
    function swapHash(Swap calldata p) public view returns (bytes32) {
        return
            keccak256(abi.encode(address(this), block.chainid, p.tokenOut, p.amountOutMin, p.swapDeadline, p.recipient));
    }

    /// @notice Withdraw `t.publicOut` of `t.asset` from the pool (a transaction whose recipient is
    /// this adaptor, bound to `swapHash(p)`) and swap it for `p.tokenOut`, at least
    /// `p.amountOutMin`, delivered to `p.recipient`. ETH → token and token → ETH, through the
    /// token's pair with WETH; `p.tokenOut == t.asset` sends the amount unswapped (at least
    /// `p.amountOutMin` of it, as for a swap). Any failure reverts the whole call, withdrawal
    /// included: the notes stay unspent.
    function swapExactIn(ShieldedPool.Transaction calldata t, Swap calldata p)
        external
        nonReentrant
        returns (uint256 amountOut)
    {
        if (p.recipient == address(0)) revert ZeroAddress();
        bytes32 h = swapHash(p);
        pool.transact(t, h);
        uint256 amountIn = t.publicOut;
        address asset = t.asset;
        address[] memory path = new address[](2);
        uint256[] memory amounts;
        if (p.tokenOut == asset) {
            if (amountIn < p.amountOutMin) revert BelowMinimum(amountIn, p.amountOutMin);
            if (asset == address(0)) {
                Address.sendValue(payable(p.recipient), amountIn);
            } else {
                IERC20(asset).safeTransfer(p.recipient, amountIn);
            }
            emit Swapped(h, asset, p.tokenOut, amountIn, amountIn, p.recipient);
            return amountIn;
        }
        if (asset == address(0) && p.tokenOut != address(0) && p.tokenOut != weth) {
            path[0] = weth;
            path[1] = p.tokenOut;
            amounts = router.swapExactETHForTokens{value: amountIn}(p.amountOutMin, path, p.recipient, p.swapDeadline);
        } else if (asset != address(0) && asset != weth && p.tokenOut == address(0)) {
            path[0] = asset;
            path[1] = weth;
            IERC20(asset).forceApprove(address(router), amountIn);
            amounts = router.swapExactTokensForETH(amountIn, p.amountOutMin, path, p.recipient, p.swapDeadline);
        } else {
            revert UnsupportedPair(asset, p.tokenOut);
        }
        amountOut = amounts[amounts.length - 1];
        emit Swapped(h, asset, p.tokenOut, amountIn, amountOut, p.recipient);
    }

    /// @dev ETH arrives from the pool (a withdrawal) only; the router sends swap output straight
    /// to the recipient.
    receive() external payable {
        if (msg.sender != address(pool)) revert UnexpectedSender(msg.sender);
    }
}
