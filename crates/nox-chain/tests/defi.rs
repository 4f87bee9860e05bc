//! Uniswap v2 and the swap adaptor on a real Anvil, deployed from the committed artifacts (the
//! npm packages' own bytecode): the pool is seeded, quotes and a swap work, and the adaptor's
//! `swapHash` equals [`nox_chain::defi::swap_hash`] (what a wallet binds its withdrawal to).

use std::net::TcpListener;

use alloy::primitives::{Address, U256};
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::bindings::NoxStakeToken;
use nox_chain::defi::{SwapAdaptor, UniswapV2Pair, UniswapV2Router02, deploy_defi, swap_hash};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::deploy_pool;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uniswap_deploys_seeded_and_swaps() {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port");
    let anvil = tokio::task::spawn_blocking(move || Anvil::spawn(&AnvilOptions::on_port(port)))
        .await
        .expect("spawn task")
        .expect("anvil starts");
    let deployer = deploy::signer(DEV_KEY).expect("dev key");
    let e18 = U256::from(10u64).pow(U256::from(18u64));
    let params = RegistryParams {
        min_stake: U256::from(1u64),
        unstake_delay: 1,
        slash_reporter_bps: 1000,
        token_supply: U256::from(1_000_000u64) * e18,
    };
    let deployment = deploy::deploy(anvil.url(), &deployer, params).await.expect("deploys");
    let pool = deploy_pool(anvil.url(), &deployer, deployment.executor, 64).await.expect("pool deploys");
    let seed_eth = U256::from(100u64) * e18;
    let seed_tokens = U256::from(200_000u64) * e18;
    let defi = deploy_defi(anvil.url(), &deployer, pool.pool, deployment.stake_token, seed_eth, seed_tokens)
        .await
        .expect("DeFi deploys");

    let provider = deploy::wallet_provider(anvil.url(), &deployer).expect("provider");
    let pair = UniswapV2Pair::new(defi.pair, &provider);
    let reserves = pair.getReserves().call().await.expect("reserves");
    let (r0, r1) = (U256::from(reserves._reserve0), U256::from(reserves._reserve1));
    assert!((r0, r1) == (seed_eth, seed_tokens) || (r0, r1) == (seed_tokens, seed_eth), "seeded: {r0} {r1}");

    let router = UniswapV2Router02::new(defi.router, &provider);
    let path = vec![defi.weth, defi.token];
    let amounts = router.getAmountsOut(e18, path.clone()).call().await.expect("quote");
    assert!(amounts[1] > U256::from(1900u64) * e18 && amounts[1] < U256::from(2000u64) * e18, "{amounts:?}");
    let to = Address::repeat_byte(0x77);
    let receipt = router
        .swapExactETHForTokens(amounts[1], path, to, U256::from(u64::MAX))
        .value(e18)
        .send()
        .await
        .expect("swap sends")
        .get_receipt()
        .await
        .expect("receipt");
    assert!(receipt.status());
    let token = NoxStakeToken::new(defi.token, &provider);
    assert_eq!(token.balanceOf(to).call().await.expect("balance"), amounts[1]);

    let adaptor = SwapAdaptor::new(defi.adaptor, &provider);
    assert_eq!(adaptor.pool().call().await.expect("pool"), pool.pool);
    let swap = SwapAdaptor::Swap {
        tokenOut: defi.token,
        amountOutMin: U256::from(5u64),
        swapDeadline: U256::from(1_900_000_000u64),
        recipient: to,
    };
    let on_chain = adaptor.swapHash(swap.clone()).call().await.expect("swapHash");
    assert_eq!(swap_hash(defi.adaptor, deployment.chain_id, &swap), on_chain);
}
