// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IPayment} from "./interfaces/IPayment.sol";
import {BatchExecutor} from "./BatchExecutor.sol";

/// @title Erc20Payment — the plain (non-private) ERC-20 payment plugin
/// @notice The payer approves this contract for the fee token and signs an EIP-712
/// `Payment(payer, asset, fee, relayer, actionHash, nonce, deadline)`. When the executor runs the
/// bundle, this contract checks the signature against the relayer that submitted it and the
/// action hash the executor recomputed, and moves the fee from the payer to the ledger. A relayer
/// therefore cannot use the payer's allowance for another action, another relayer or another fee.
/// @dev This payment links the payer's address to the action; the private payment is issue 12's
/// ZK payment plugin. Nonces are unordered (any unused uint256), so independent payments sent
/// through the mix network cannot block each other; a payer can cancel one with `cancelNonce`.
/// Smart-contract payers sign through ERC-1271 (OZ SignatureChecker).
contract Erc20Payment is IPayment, EIP712 {
    using SafeERC20 for IERC20;

    bytes32 public constant PAYMENT_TYPEHASH = keccak256(
        "Payment(address payer,address asset,uint256 fee,address relayer,bytes32 actionHash,uint256 nonce,uint256 deadline)"
    );

    /// @notice The only caller of `pay` (and only during its payment phase for this plugin).
    address public immutable executor;
    /// @notice Where fees go: the executor's ledger.
    address public immutable ledger;

    mapping(address payer => mapping(uint256 nonce => bool)) public nonceUsed;

    /// @notice `paymentData` of a bundle that pays through this plugin is
    /// `abi.encode(PaymentData)`.
    struct PaymentData {
        address payer;
        address asset;
        uint256 fee;
        uint256 nonce;
        uint256 deadline;
        bytes signature;
    }

    event NonceUsed(address indexed payer, uint256 indexed nonce);
    event Paid(
        address indexed payer,
        address indexed relayer,
        bytes32 indexed actionHash,
        address asset,
        uint256 fee,
        uint256 nonce
    );

    error NotExecutor();
    error NotInPaymentPhase();
    error ZeroAddress();
    error Expired(uint256 deadline);
    error NonceAlreadyUsed(address payer, uint256 nonce);
    error BadSignature();

    constructor(BatchExecutor executor_) EIP712("NOX Erc20Payment", "1") {
        if (address(executor_) == address(0)) revert ZeroAddress();
        executor = address(executor_);
        ledger = address(executor_.ledger());
    }

    /// @inheritdoc IPayment
    function pay(bytes calldata payment, address relayer, bytes32 actionHash)
        external
        returns (address asset, uint256 amount)
    {
        _checkPaymentPhase(relayer, actionHash);
        PaymentData memory p = abi.decode(payment, (PaymentData));
        if (p.asset == address(0)) revert ZeroAddress();
        if (block.timestamp > p.deadline) revert Expired(p.deadline);
        if (nonceUsed[p.payer][p.nonce]) revert NonceAlreadyUsed(p.payer, p.nonce);
        bytes32 digest = paymentDigest(p.payer, p.asset, p.fee, relayer, actionHash, p.nonce, p.deadline);
        if (!SignatureChecker.isValidSignatureNow(p.payer, digest, p.signature)) revert BadSignature();

        nonceUsed[p.payer][p.nonce] = true;
        emit NonceUsed(p.payer, p.nonce);
        emit Paid(p.payer, relayer, actionHash, p.asset, p.fee, p.nonce);

        IERC20(p.asset).safeTransferFrom(p.payer, ledger, p.fee);
        return (p.asset, p.fee);
    }

    /// @dev Only the executor, and only inside the payment phase of a bundle that pays through
    /// this plugin for this relayer and action hash: never from an action (whose calls also come
    /// from the executor), so a captured authorisation is consumed only by the bundle it is for.
    function _checkPaymentPhase(address relayer, bytes32 actionHash) private view {
        if (msg.sender != executor) revert NotExecutor();
        (address plugin, address r, bytes32 h) = BatchExecutor(executor).paymentInProgress();
        if (plugin != address(this) || r != relayer || h != actionHash) revert NotInPaymentPhase();
    }

    /// @notice Invalidate one of the caller's nonces (withdraws a signed, unspent payment).
    function cancelNonce(uint256 nonce) external {
        if (nonceUsed[msg.sender][nonce]) revert NonceAlreadyUsed(msg.sender, nonce);
        nonceUsed[msg.sender][nonce] = true;
        emit NonceUsed(msg.sender, nonce);
    }

    /// @notice The EIP-712 digest the payer signs.
    function paymentDigest(
        address payer,
        address asset,
        uint256 fee,
        address relayer,
        bytes32 actionHash,
        uint256 nonce,
        uint256 deadline
    ) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(abi.encode(PAYMENT_TYPEHASH, payer, asset, fee, relayer, actionHash, nonce, deadline))
        );
    }

    /// @notice The EIP-712 domain separator (chain id and this address included).
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }
}
