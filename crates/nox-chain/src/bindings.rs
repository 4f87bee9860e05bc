//! Contract bindings, generated at compile time from the committed Foundry artifacts in
//! `contracts/artifacts/` (ABI and bytecode). `contracts/build.sh --check` (run by the test
//! script) fails when the artifacts and the Solidity sources drift apart, so these bindings
//! cannot silently disagree with the contracts.
#![allow(missing_docs, clippy::too_many_arguments)]

use alloy::sol;

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    NodeRegistry,
    "../../contracts/artifacts/NodeRegistry.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    NoxStakeToken,
    "../../contracts/artifacts/NoxStakeToken.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug, PartialEq, Eq)]
    BatchExecutor,
    "../../contracts/artifacts/BatchExecutor.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    RewardLedger,
    "../../contracts/artifacts/RewardLedger.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    Erc20Payment,
    "../../contracts/artifacts/Erc20Payment.json"
);
