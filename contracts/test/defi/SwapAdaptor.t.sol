// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";
import {IPoseidon3} from "../../src/zk/Poseidon.sol";
import {ShieldedPool, ITransferVerifier, IInsertVerifier} from "../../src/zk/ShieldedPool.sol";
import {ExpectingTransferVerifier, AcceptingInsertVerifier, TransferInputs, QueueChain} from "../zk/PoolHarness.sol";
import {SwapAdaptor, IUniswapV2Router02} from "../../src/defi/SwapAdaptor.sol";

/// @dev The gas every action of this file is bound to (`Action.gas`).
uint256 constant ACTION_GAS = 1_000_000;

interface IRouterLiquidity {
    function addLiquidityETH(
        address token,
        uint256 amountTokenDesired,
        uint256 amountTokenMin,
        uint256 amountETHMin,
        address to,
        uint256 deadline
    ) external payable returns (uint256, uint256, uint256);
    function getAmountsOut(uint256 amountIn, address[] calldata path) external view returns (uint256[] memory);
}

contract SwapTestToken is ERC20 {
    constructor(address to, uint256 supply) ERC20("Swap test token", "STT") {
        _mint(to, supply);
    }
}

/// A payment plugin that pays nothing: the bundle's fee is 0 (the ZK payment is tested apart).
contract FreePayment is IPayment {
    function pay(bytes calldata, address, bytes32) external pure returns (address, uint256) {
        return (address(0), 0);
    }
}

/// The adaptor on real Uniswap v2 bytecode (the npm artifacts) and the real ShieldedPool.
contract SwapAdaptorTest is Test {
    uint256 internal constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;
    uint256 internal constant ROOT = 12345;

    address internal user = makeAddr("user");
    address internal fresh = makeAddr("fresh");
    ExpectingTransferVerifier internal verifier;
    BatchExecutor internal executor;
    ShieldedPool internal pool;
    SwapAdaptor internal adaptor;
    ERC20 internal token;
    address internal weth;
    address internal router;

    function setUp() public {
        weth = deployCode("artifacts/WETH9.json");
        address factory = deployCode("artifacts/UniswapV2Factory.json", abi.encode(address(this)));
        router = deployCode("artifacts/UniswapV2Router02.json", abi.encode(factory, weth));
        token = new SwapTestToken(address(this), 1e24);
        token.approve(router, type(uint256).max);
        vm.deal(address(this), 1000 ether);
        IRouterLiquidity(router).addLiquidityETH{value: 100 ether}(
            address(token), 200_000e18, 0, 0, address(this), block.timestamp
        );

        verifier = new ExpectingTransferVerifier();
        executor = new BatchExecutor();
        IPoseidon3 poseidon = IPoseidon3(deployCode("PoseidonT4.sol:PoseidonT4"));
        pool = new ShieldedPool(
            ITransferVerifier(address(verifier)),
            IInsertVerifier(address(new AcceptingInsertVerifier())),
            poseidon,
            address(executor),
            64
        );
        adaptor = new SwapAdaptor(pool, IUniswapV2Router02(router), weth);

        // Notes: 10 ETH and 20,000 tokens, inserted.
        vm.deal(user, 20 ether);
        token.transfer(user, 20_000e18);
        vm.startPrank(user);
        pool.deposit{value: 10 ether}(address(0), 10 ether, 1, new bytes(pool.NOTE_LEN()));
        token.approve(address(pool), type(uint256).max);
        pool.deposit(address(token), 20_000e18, 2, new bytes(pool.NOTE_LEN()));
        vm.stopPrank();
        uint256[8] memory none;
        IPoseidon3 h = pool.poseidon();
        pool.insertBatch(
            none,
            ROOT,
            QueueChain.two(h.hash([uint256(10 ether), 0, 1]), h.hash([uint256(20_000e18), uint160(address(token)), 2]))
        );
    }

    receive() external payable {}

    /// A withdrawal of `amount` of `asset` to the adaptor (both nullifiers derived from `nullifier`).
    function _spend(address asset, uint256 amount, uint256 nullifier)
        internal
        view
        returns (ShieldedPool.Transaction memory t)
    {
        t.root = ROOT;
        t.nullifiers = [nullifier, nullifier + 1_000_000];
        t.commitments = [uint256(7), 8];
        t.asset = asset;
        t.publicOut = amount;
        t.recipient = address(adaptor);
        t.deadline = block.timestamp + 600;
        t.notes = [new bytes(pool.NOTE_LEN()), new bytes(pool.NOTE_LEN())];
        t.notes[0][0] = 0x01;
        t.notes[1][0] = 0x02;
    }

    function _swap(address tokenOut, uint256 min) internal view returns (SwapAdaptor.Swap memory) {
        return SwapAdaptor.Swap({
            tokenOut: tokenOut, amountOutMin: min, swapDeadline: block.timestamp + 600, recipient: fresh
        });
    }

    /// The verifier accepts exactly `t` submitted directly with the action hash of swap `p` (on
    /// this adaptor).
    function _expect(ShieldedPool.Transaction memory t, SwapAdaptor.Swap memory p) internal {
        verifier.expect(TransferInputs.inputs(t, address(0), adaptor.swapHash(p), block.chainid, address(pool)));
    }

    function _quote(address a, address b, uint256 amount) internal view returns (uint256) {
        address[] memory path = new address[](2);
        path[0] = a;
        path[1] = b;
        return IRouterLiquidity(router).getAmountsOut(amount, path)[1];
    }

    function test_ethForTokensToAFreshAddress() public {
        uint256 expected = _quote(weth, address(token), 1 ether);
        SwapAdaptor.Swap memory p = _swap(address(token), expected);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 11);
        _expect(t, p);
        uint256 out = adaptor.swapExactIn(t, p);
        assertEq(out, expected);
        assertEq(token.balanceOf(fresh), expected);
        assertTrue(pool.isSpent(11));
        assertEq(address(adaptor).balance, 0);
        assertEq(token.balanceOf(address(adaptor)), 0);
        assertEq(address(pool).balance, 9 ether);
    }

    function test_tokensForEth() public {
        uint256 expected = _quote(address(token), weth, 1000e18);
        SwapAdaptor.Swap memory p = _swap(address(0), expected);
        ShieldedPool.Transaction memory t = _spend(address(token), 1000e18, 12);
        _expect(t, p);
        adaptor.swapExactIn(t, p);
        assertEq(fresh.balance, expected);
        assertEq(token.allowance(address(adaptor), router), 0);
    }

    function test_minimumNotMetRevertsAndTheNoteStaysUnspent() public {
        SwapAdaptor.Swap memory p = _swap(address(token), _quote(weth, address(token), 1 ether) + 1);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 13);
        _expect(t, p);
        vm.expectRevert(bytes("UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT"));
        adaptor.swapExactIn(t, p);
        assertFalse(pool.isSpent(13));
        assertEq(address(pool).balance, 10 ether);
    }

    function test_theProofBindsEverySwapParameter() public {
        SwapAdaptor.Swap memory p = _swap(address(token), 1);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 14);
        _expect(t, p);
        SwapAdaptor.Swap[4] memory changed =
            [_swap(address(token), 1), _swap(address(token), 1), _swap(address(token), 1), _swap(address(token), 1)];
        changed[0].amountOutMin = 0;
        changed[1].recipient = makeAddr("thief");
        changed[2].swapDeadline = p.swapDeadline + 1;
        changed[3].tokenOut = weth;
        for (uint256 i = 0; i < 3; ++i) {
            vm.expectRevert(ShieldedPool.InvalidProof.selector);
            adaptor.swapExactIn(t, changed[i]);
        }
        // (tokenOut = WETH is refused before the swap; the proof would not match either.)
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        adaptor.swapExactIn(t, changed[3]);
        // Another adaptor (same code, other address) computes another hash, and is not the
        // transaction's recipient.
        SwapAdaptor other = new SwapAdaptor(pool, IUniswapV2Router02(router), weth);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotRecipient.selector, address(other), address(adaptor)));
        other.swapExactIn(t, p);
        ShieldedPool.Transaction memory toOther = abi.decode(abi.encode(t), (ShieldedPool.Transaction));
        toOther.recipient = address(other);
        vm.expectRevert(ShieldedPool.InvalidProof.selector);
        other.swapExactIn(toOther, p);
        assertFalse(pool.isSpent(14));
        adaptor.swapExactIn(t, p);
        assertTrue(pool.isSpent(14));
    }

    function test_onlyTheAdaptorSubmitsItsBoundWithdrawal() public {
        SwapAdaptor.Swap memory p = _swap(address(token), 1);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 15);
        _expect(t, p);
        bytes32 h = adaptor.swapHash(p);
        vm.expectRevert(abi.encodeWithSelector(ShieldedPool.NotRecipient.selector, user, address(adaptor)));
        vm.prank(user);
        pool.transact(t, h);
        assertFalse(pool.isSpent(15));
    }

    function test_sameAssetOutIsAWithdrawalToTheRecipient() public {
        SwapAdaptor.Swap memory p = _swap(address(0), 1 ether);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 18);
        _expect(t, p);
        uint256 out = adaptor.swapExactIn(t, p);
        assertEq(out, 1 ether);
        assertEq(fresh.balance, 1 ether);
        assertTrue(pool.isSpent(18));
        assertEq(address(adaptor).balance, 0);
        SwapAdaptor.Swap memory q = _swap(address(token), 500e18);
        t = _spend(address(token), 500e18, 19);
        _expect(t, q);
        adaptor.swapExactIn(t, q);
        assertEq(token.balanceOf(fresh), 500e18);
        assertEq(token.balanceOf(address(adaptor)), 0);
        // A minimum above the amount reverts, and the note stays unspent.
        SwapAdaptor.Swap memory greedy = _swap(address(0), 1 ether + 1);
        t = _spend(address(0), 1 ether, 20);
        _expect(t, greedy);
        vm.expectRevert(abi.encodeWithSelector(SwapAdaptor.BelowMinimum.selector, 1 ether, 1 ether + 1));
        adaptor.swapExactIn(t, greedy);
        assertFalse(pool.isSpent(20));
        // A recipient that refuses ETH reverts the withdrawal too.
        SwapAdaptor.Swap memory refusing = _swap(address(0), 0);
        refusing.recipient = address(verifier);
        t = _spend(address(0), 1 ether, 21);
        _expect(t, refusing);
        vm.expectRevert();
        adaptor.swapExactIn(t, refusing);
        assertFalse(pool.isSpent(21));
    }

    function test_unsupportedPairsAndStrangersAreRefused() public {
        SwapAdaptor.Swap memory p = _swap(weth, 0);
        ShieldedPool.Transaction memory t = _spend(address(0), 1 ether, 16);
        _expect(t, p);
        vm.expectRevert(abi.encodeWithSelector(SwapAdaptor.UnsupportedPair.selector, address(0), weth));
        adaptor.swapExactIn(t, p);
        SwapAdaptor.Swap memory none = _swap(address(token), 0);
        none.recipient = address(0);
        vm.expectRevert(SwapAdaptor.ZeroAddress.selector);
        adaptor.swapExactIn(t, none);
        vm.expectRevert(abi.encodeWithSelector(SwapAdaptor.UnexpectedSender.selector, user));
        vm.prank(user);
        (bool ok,) = address(adaptor).call{value: 1}("");
        ok;
    }

    function test_asTheActionOfABundle() public {
        uint256 expected = _quote(weth, address(token), 2 ether);
        SwapAdaptor.Swap memory p = _swap(address(token), expected);
        ShieldedPool.Transaction memory t = _spend(address(0), 2 ether, 17);
        _expect(t, p);
        bytes memory data = abi.encodeCall(SwapAdaptor.swapExactIn, (t, p));
        BatchExecutor.Bundle memory b = BatchExecutor.Bundle({
            payment: IPayment(address(new FreePayment())),
            paymentData: "",
            asset: address(0),
            fee: 0,
            action: BatchExecutor.Action({target: address(adaptor), value: 0, gas: ACTION_GAS, data: data})
        });
        vm.prank(makeAddr("relayer"));
        assertTrue(executor.execute(b));
        assertEq(token.balanceOf(fresh), expected);
        // The same bundle again: the action fails (nullifier spent), the bundle does not.
        vm.prank(makeAddr("relayer"));
        assertFalse(executor.execute(b));
    }
}
