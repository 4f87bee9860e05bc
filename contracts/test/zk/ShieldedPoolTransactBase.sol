// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Test} from "forge-std/Test.sol";
import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {RewardLedger} from "../../src/RewardLedger.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";
import {IPoseidon3} from "../../src/zk/Poseidon.sol";
import {ShieldedPool, ITransferVerifier, IInsertVerifier} from "../../src/zk/ShieldedPool.sol";
import {
    ExpectingTransferVerifier,
    AcceptingInsertVerifier,
    Counter,
    PoolTestToken,
    TransferInputs,
    QueueChain
} from "./PoolHarness.sol";

/// The set-up and helpers of the pool's `transact` and `pay` tests (ShieldedPool.t.sol,
/// ShieldedPoolInputChecks.t.sol, ShieldedPoolReplay.t.sol, ShieldedPoolQueue.t.sol): a verifier that
/// accepts exactly the inputs an honest prover proved (PoolHarness), a pool holding 10 ETH and 100
/// tokens of notes under ROOT, and fresh transactions, proofs and bundles.
abstract contract ShieldedPoolTransactBase is Test {
    uint256 internal constant R = TransferInputs.R;
    uint256 internal constant ROOT = 12345;
    uint256 internal constant NOTE_LEN = 104;
    uint256 internal constant MAX = 1 << 128;

    address internal user = makeAddr("user");
    address internal relayer = makeAddr("relayer");
    address internal recipient = makeAddr("recipient");
    ExpectingTransferVerifier internal verifier;
    AcceptingInsertVerifier internal inserter;
    IPoseidon3 internal poseidon;
    BatchExecutor internal executor;
    RewardLedger internal ledger;
    ShieldedPool internal pool;
    PoolTestToken internal token;
    Counter internal target;
    uint256 internal nextNullifier = 1000;

    function setUp() public {
        verifier = new ExpectingTransferVerifier();
        inserter = new AcceptingInsertVerifier();
        poseidon = IPoseidon3(deployCode("PoseidonT4.sol:PoseidonT4"));
        executor = new BatchExecutor();
        ledger = executor.ledger();
        token = new PoolTestToken(user, 1000e18);
        target = new Counter();
        pool = _newPool();
        vm.deal(user, 100 ether);
    }

    /// A pool holding 10 ETH and 100 tokens of notes, inserted under ROOT.
    function _newPool() internal returns (ShieldedPool p) {
        p = new ShieldedPool(
            ITransferVerifier(address(verifier)), IInsertVerifier(address(inserter)), poseidon, address(executor), 64
        );
        vm.deal(address(this), 10 ether);
        p.deposit{value: 10 ether}(address(0), 10 ether, 1, new bytes(NOTE_LEN));
        vm.prank(user);
        token.transfer(address(this), 100e18);
        token.approve(address(p), type(uint256).max);
        p.deposit(address(token), 100e18, 2, new bytes(NOTE_LEN));
        uint256[8] memory none;
        p.insertBatch(
            none,
            ROOT,
            QueueChain.two(
                poseidon.hash([uint256(10 ether), 0, 1]), poseidon.hash([uint256(100e18), uint160(address(token)), 2])
            )
        );
    }

    receive() external payable {}

    // ---------------------------------------------------------------------------------------
    // Helpers

    function _notes() internal pure returns (bytes[2] memory n) {
        n[0] = new bytes(NOTE_LEN);
        n[1] = new bytes(NOTE_LEN);
        n[0][0] = 0xa0;
        n[1][0] = 0xb1;
    }

    /// A fresh transaction: two new nullifiers, two commitments, the amounts and recipient given.
    function _tx(address asset, uint256 publicIn, uint256 publicOut, uint256 fee, address to)
        internal
        returns (ShieldedPool.Transaction memory t)
    {
        t.root = ROOT;
        t.nullifiers = [nextNullifier, nextNullifier + 1];
        nextNullifier += 2;
        t.commitments = [
            uint256(keccak256(abi.encode(nextNullifier, 0))) % R, uint256(keccak256(abi.encode(nextNullifier, 1))) % R
        ];
        t.asset = asset;
        t.publicIn = publicIn;
        t.publicOut = publicOut;
        t.fee = fee;
        t.recipient = to;
        t.deadline = block.timestamp + 600;
        t.notes = _notes();
    }

    /// The honest prover proves `t` for `who` as relayer and action hash `h` on this pool.
    function _prove(ShieldedPool.Transaction memory t, ShieldedPool p, address who, bytes32 h) internal {
        verifier.expect(TransferInputs.inputs(t, who, h, block.chainid, address(p)));
    }

    function _bundle(ShieldedPool p, ShieldedPool.Transaction memory t, address to, bytes memory data, uint256 gas)
        internal
        pure
        returns (BatchExecutor.Bundle memory)
    {
        return BatchExecutor.Bundle({
            payment: IPayment(address(p)),
            paymentData: abi.encode(t),
            asset: t.asset,
            fee: t.fee,
            action: BatchExecutor.Action({target: to, value: 0, gas: gas, data: data})
        });
    }

    /// A payment-only bundle (i30 §2): action {target 0, value 0, gas 0, data ""}.
    function _paymentOnly(ShieldedPool p, ShieldedPool.Transaction memory t)
        internal
        pure
        returns (BatchExecutor.Bundle memory)
    {
        return _bundle(p, t, address(0), "", 0);
    }

    function _actionHash(BatchExecutor.Bundle memory b) internal view returns (bytes32 h) {
        (h,) = executor.executionHash(b.action.target, b.action.data, b.fee, b.action.gas);
    }

    /// Proves `t` for a payment-only bundle submitted by `relayer`, and returns the bundle.
    function _provenPaymentOnly(ShieldedPool.Transaction memory t) internal returns (BatchExecutor.Bundle memory b) {
        b = _paymentOnly(pool, t);
        _prove(t, pool, relayer, _actionHash(b));
    }

    function _execute(BatchExecutor.Bundle memory b) internal returns (bool) {
        vm.prank(relayer);
        return executor.execute(b);
    }

    /// A deep copy (a memory struct assigned to another variable is the same struct).
    function _copy(ShieldedPool.Transaction memory t) internal pure returns (ShieldedPool.Transaction memory) {
        return abi.decode(abi.encode(t), (ShieldedPool.Transaction));
    }

    function _one(BatchExecutor.Bundle memory b) internal pure returns (BatchExecutor.Bundle[] memory bs) {
        bs = new BatchExecutor.Bundle[](1);
        bs[0] = b;
    }
}
