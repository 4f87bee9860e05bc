//! Real DeFi on a testnet chain (issue 13): WETH9 and Uniswap v2 deployed from the npm packages'
//! own compiled artifacts (copied to `contracts/artifacts/` by `contracts/build.sh`, which checks
//! the pair's init-code hash against the router's), a seeded token/WETH pool, and the
//! [`SwapAdaptor`] that withdraws from the shielded pool and swaps atomically.

#![allow(missing_docs, clippy::too_many_arguments)]

use alloy::primitives::{Address, B256, U256, keccak256};
use alloy::providers::Provider;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use alloy::sol_types::SolValue;
use serde::{Deserialize, Serialize};

use crate::bindings::NoxStakeToken;
use crate::deploy::{confirm, wallet_provider};
use crate::error::ChainError;

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    WETH9,
    "../../contracts/artifacts/WETH9.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    UniswapV2Factory,
    "../../contracts/artifacts/UniswapV2Factory.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    UniswapV2Router02,
    "../../contracts/artifacts/UniswapV2Router02.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    UniswapV2Pair,
    "../../contracts/artifacts/UniswapV2Pair.json"
);

sol!(
    #[sol(rpc)]
    #[derive(Debug, PartialEq, Eq)]
    SwapAdaptor,
    "../../contracts/artifacts/SwapAdaptor.json"
);

/// Where the testnet's DeFi contracts live (recorded in `chain.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefiDeployment {
    /// WETH9.
    pub weth: Address,
    /// The Uniswap v2 factory.
    pub factory: Address,
    /// The Uniswap v2 router (02).
    pub router: Address,
    /// The traded token (the testnet's NOX token).
    pub token: Address,
    /// The token/WETH pair.
    pub pair: Address,
    /// The shielded pool's swap adaptor.
    pub adaptor: Address,
    /// Block of the deployment.
    pub block: u64,
}

/// Deploys WETH9, the Uniswap v2 factory and router, a `token`/WETH pool seeded from the
/// deployer with `seed_eth` wei and `seed_tokens` tokens, and a swap adaptor for `pool`.
pub async fn deploy_defi(
    rpc_url: &str,
    deployer: &PrivateKeySigner,
    pool: Address,
    token: Address,
    seed_eth: U256,
    seed_tokens: U256,
) -> Result<DefiDeployment, ChainError> {
    let provider = wallet_provider(rpc_url, deployer)?;
    let weth = WETH9::deploy(&provider).await.map_err(ChainError::contract)?;
    let factory = UniswapV2Factory::deploy(&provider, deployer.address()).await.map_err(ChainError::contract)?;
    let router = UniswapV2Router02::deploy(&provider, *factory.address(), *weth.address())
        .await
        .map_err(ChainError::contract)?;
    let erc20 = NoxStakeToken::new(token, &provider);
    confirm(erc20.approve(*router.address(), seed_tokens).send().await, "approving the router").await?;
    let deadline = U256::from(u64::MAX);
    confirm(
        router
            .addLiquidityETH(token, seed_tokens, seed_tokens, seed_eth, deployer.address(), deadline)
            .value(seed_eth)
            .send()
            .await,
        "seeding the token/WETH pool",
    )
    .await?;
    let pair = factory.getPair(token, *weth.address()).call().await.map_err(ChainError::contract)?;
    if pair == Address::ZERO {
        return Err(ChainError::Contract("the factory has no token/WETH pair after seeding".into()));
    }
    let adaptor =
        SwapAdaptor::deploy(&provider, pool, *router.address(), *weth.address()).await.map_err(ChainError::contract)?;
    let block = provider.get_block_number().await.map_err(ChainError::rpc)?;
    Ok(DefiDeployment {
        weth: *weth.address(),
        factory: *factory.address(),
        router: *router.address(),
        token,
        pair,
        adaptor: *adaptor.address(),
        block,
    })
}

/// `SwapAdaptor.swapHash(p)` computed off chain: `keccak256(abi.encode(adaptor, chainid,
/// tokenOut, amountOutMin, swapDeadline, recipient))`, the action hash a wallet binds the
/// swap's withdrawal proof to.
pub fn swap_hash(adaptor: Address, chain_id: u64, p: &SwapAdaptor::Swap) -> B256 {
    keccak256((adaptor, U256::from(chain_id), p.tokenOut, p.amountOutMin, p.swapDeadline, p.recipient).abi_encode())
}
