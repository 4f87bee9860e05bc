// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {BatchExecutor} from "../../src/BatchExecutor.sol";
import {IPayment} from "../../src/interfaces/IPayment.sol";

// The targets and payment plugins of the executor tests (BatchExecutor.t.sol, RewardLedger.t.sol,
// Erc1271Payer.t.sol).

/// @dev The gas every action of the executor tests is bound to (`Action.gas`).
uint256 constant ACTION_GAS = 100_000;

/// @dev A user's action target.
contract Target {
    uint256 public value;
    uint256 public received;

    error Nope(uint256 code);

    function set(uint256 v) external returns (uint256) {
        value = v;
        return v * 2;
    }

    function fail(uint256 code) external pure {
        revert Nope(code);
    }

    function deposit() external payable {
        received += msg.value;
    }
}

/// @dev Reverts with a 1 MiB buffer (a "return bomb").
contract ReturnBomb {
    fallback() external {
        assembly {
            revert(0, 0x100000)
        }
    }
}

/// @dev An action target that tries to re-enter the executor with a bundle of its own.
contract Reenterer {
    BatchExecutor public immutable executor;
    bytes public lastError;

    constructor(BatchExecutor e) {
        executor = e;
    }

    function attack(BatchExecutor.Bundle calldata inner) external {
        try executor.execute(inner) {}
        catch (bytes memory err) {
            lastError = err;
            assembly {
                revert(add(err, 32), mload(err))
            }
        }
    }
}

/// @dev A payment plugin that claims a fee without moving any funds.
contract LyingPayment is IPayment {
    address public immutable asset;

    constructor(address a) {
        asset = a;
    }

    function pay(bytes calldata, address, bytes32) external view returns (address, uint256) {
        return (asset, 1e18);
    }
}

/// @dev A payment plugin that re-enters the executor from inside `pay`.
contract ReentrantPayment is IPayment {
    function pay(bytes calldata payment, address, bytes32) external returns (address, uint256) {
        BatchExecutor.Bundle memory b = abi.decode(payment, (BatchExecutor.Bundle));
        BatchExecutor(msg.sender).execute(b);
        return (address(0), 0);
    }
}

/// @dev A payment plugin paying in native ETH out of its own balance (stands in for issue 12's
/// pool, which pays ETH fees out of shielded notes).
contract EthPayment is IPayment {
    address payable public immutable ledger;

    constructor(address payable l) payable {
        ledger = l;
    }

    function pay(bytes calldata payment, address, bytes32) external returns (address, uint256 fee) {
        fee = abi.decode(payment, (uint256));
        (bool ok,) = ledger.call{value: fee}("");
        require(ok);
        return (address(0), fee);
    }
}
