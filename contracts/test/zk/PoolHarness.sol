// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ShieldedPool, INSERT_BATCH_SIZE} from "../../src/zk/ShieldedPool.sol";

/// @dev Test harness for the pool's own checks: a transfer "verifier" that accepts any proof
/// whose 8 public inputs are exactly the ones it was told to expect — what an honest prover
/// would have proved. A replay with any other value the pool feeds the verifier (another fee,
/// relayer, chain, …) is then refused exactly as a real verifier refuses it (real proofs:
/// ShieldedPoolProofs.t.sol). Reverting on a mismatch is not allowed: it must say `false`.
contract ExpectingTransferVerifier {
    uint256[8] internal _expected;

    function expect(uint256[8] calldata x) external {
        _expected = x;
    }

    function verifyProof(uint256[8] calldata, uint256[8] calldata input) external view returns (bool) {
        for (uint256 i = 0; i < 8; ++i) {
            if (input[i] != _expected[i]) return false;
        }
        return true;
    }
}

/// @dev Accepts every insertion (the insertion proof is tested with real proofs elsewhere).
contract AcceptingInsertVerifier {
    function verifyProof(uint256[8] calldata, uint256[3 + INSERT_BATCH_SIZE] calldata) external pure returns (bool) {
        return true;
    }
}

/// The pool's queue as a hash chain, recomputed off the pool (what an inserter or wallet does
/// from the events), and `insertBatch`'s leaves built from commitments or an insertion vector.
library QueueChain {
    /// The chain word after `commitment` is queued behind `chain` (`ShieldedPool._chain`).
    function step(uint256 chain, uint256 commitment) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(chain, commitment))) & ~uint256(0xffffffff);
    }

    /// The chain word after `leaves` are queued behind `chain`.
    function over(uint256 chain, uint256[] memory l) internal pure returns (uint256) {
        for (uint256 i = 0; i < l.length; ++i) {
            chain = step(chain, l[i]);
        }
        return chain;
    }

    /// The first `n` leaves of an insertion statement's public inputs.
    function leaves(uint256[3 + INSERT_BATCH_SIZE] memory inputs, uint256 n)
        internal
        pure
        returns (uint256[] memory l)
    {
        l = new uint256[](n);
        for (uint256 i = 0; i < n; ++i) {
            l[i] = inputs[3 + i];
        }
    }

    function one(uint256 a) internal pure returns (uint256[] memory l) {
        l = new uint256[](1);
        l[0] = a;
    }

    function two(uint256 a, uint256 b) internal pure returns (uint256[] memory l) {
        l = new uint256[](2);
        l[0] = a;
        l[1] = b;
    }

    function three(uint256 a, uint256 b, uint256 c) internal pure returns (uint256[] memory l) {
        l = new uint256[](3);
        l[0] = a;
        l[1] = b;
        l[2] = c;
    }
}

/// The action of the scenarios: `increment()`.
contract Counter {
    uint256 public count;

    function increment() external {
        ++count;
    }
}

/// The same selector, reverting: the relayer must still be paid.
contract RevertingCounter {
    function increment() external pure {
        revert("no");
    }
}

contract PoolTestToken is ERC20 {
    constructor(address to, uint256 supply) ERC20("Pool test token", "PTT") {
        _mint(to, supply);
    }
}

/// Takes a 1-unit fee on every transfer: the pool must refuse it (its notes would be unbacked).
contract FeeOnTransferToken is ERC20 {
    constructor(address to, uint256 supply) ERC20("Fee token", "FEE") {
        _mint(to, supply);
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from != address(0) && to != address(0)) {
            super._update(from, address(0xdead), 1);
            value -= 1;
        }
        super._update(from, to, value);
    }
}

/// @dev An independent recomputation of what the pool feeds the transfer verifier
/// (docs/design/zk-payment.md §9, i30 §1): written from the spec, not by calling the pool.
library TransferInputs {
    uint256 internal constant R = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    function publicAmount(uint256 publicIn, uint256 publicOut, uint256 fee) internal pure returns (uint256) {
        int256 x = int256(publicIn) - int256(publicOut) - int256(fee);
        return x >= 0 ? uint256(x) : R - uint256(-x);
    }

    function context(
        ShieldedPool.Transaction memory t,
        address relayer,
        bytes32 executionHash,
        uint256 chainId,
        address pool
    ) internal pure returns (uint256) {
        bytes32 notesHash = keccak256(abi.encode(keccak256(t.notes[0]), keccak256(t.notes[1])));
        bytes32 h = keccak256(
            abi.encode(
                t.publicIn,
                t.publicOut,
                t.fee,
                relayer,
                executionHash,
                t.recipient,
                chainId,
                pool,
                t.deadline,
                notesHash
            )
        );
        return uint256(h) % R;
    }

    function inputs(ShieldedPool.Transaction memory t, address relayer, bytes32 h, uint256 chainId, address pool)
        internal
        pure
        returns (uint256[8] memory x)
    {
        x[0] = t.root;
        x[1] = t.nullifiers[0];
        x[2] = t.nullifiers[1];
        x[3] = t.commitments[0];
        x[4] = t.commitments[1];
        x[5] = publicAmount(t.publicIn, t.publicOut, t.fee);
        x[6] = uint160(t.asset);
        x[7] = context(t, relayer, h, chainId, pool);
    }
}

/// @dev A plugin that pays a bundle's fee out of its own balance of `token` (permissionless
/// plugins may): used to give a relayer an earlier credit, so that a measured bundle sees the
/// ledger's storage as a relayer in steady operation does.
contract SelfFundedTokenPayment {
    ERC20 public immutable token;
    address public immutable ledger;

    constructor(ERC20 token_, address ledger_) {
        token = token_;
        ledger = ledger_;
    }

    function pay(bytes calldata, address, bytes32) external returns (address, uint256) {
        uint256 fee = token.balanceOf(address(this));
        token.transfer(ledger, fee);
        return (address(token), fee);
    }
}

/// @dev A withdrawal recipient that accepts ETH in the relayer's simulation and refuses it (or
/// burns every unit of gas it is given) once the bundle is on chain: `mode` 0 accepts, 1
/// reverts, 2 burns gas.
contract FickleRecipient {
    uint256 public mode;
    uint256 public received;

    function setMode(uint256 m) external {
        mode = m;
    }

    receive() external payable {
        if (mode == 1) revert("no");
        if (mode == 2) {
            while (true) {}
        }
        received += msg.value;
    }
}

/// @dev A token with a blocklist (as USDC has): transfers to a blocked address revert.
contract BlocklistToken is ERC20 {
    mapping(address => bool) public blocked;

    constructor(address to, uint256 supply) ERC20("Blocklist token", "BLK") {
        _mint(to, supply);
    }

    function setBlocked(address who, bool b) external {
        blocked[who] = b;
    }

    function _update(address from, address to, uint256 value) internal override {
        require(!blocked[to], "blocked");
        super._update(from, to, value);
    }
}
