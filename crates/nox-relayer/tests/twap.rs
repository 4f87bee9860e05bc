//! The default token price (issue 29 item 8) against a real Uniswap v2 pair on Anvil: before
//! a whole window has been watched there is no price (fees refused, not priced at the spot);
//! after it, a large swap that moves the pair for one block moves the spot value of a fee a
//! lot and the relayer's value of it barely, and a fee that would pass at the manipulated spot
//! does not pass.

use std::net::TcpListener;

use alloy::primitives::{Address, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use nox_chain::anvil::{Anvil, AnvilOptions, DEV_KEY};
use nox_chain::defi::{UniswapV2Router02, deploy_defi};
use nox_chain::deploy::{self, RegistryParams};
use nox_chain::pool::deploy_pool;
use nox_relayer::{PriceError, PriceFeed, TokenPair, TwapFeed, UniswapV2Feed};

const WINDOW_S: u64 = 1_800;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

async fn advance(provider: &DynProvider, seconds: u64) {
    let _: serde_json::Value =
        provider.raw_request("evm_increaseTime".into(), (seconds,)).await.expect("evm_increaseTime");
    let _: serde_json::Value = provider.raw_request("evm_mine".into(), ()).await.expect("evm_mine");
}

async fn value(feed: &dyn PriceFeed, provider: &DynProvider, token: Address, amount: U256) -> U256 {
    feed.price(provider, token).await.expect("priced").expect("a known token").value_in_wei(amount)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_block_manipulation_does_not_move_the_fee_value() {
    let port = free_port();
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
    // A thin pair: 10 ETH against 20,000 tokens (2,000 tokens per ETH).
    let defi = deploy_defi(
        anvil.url(),
        &deployer,
        pool.pool,
        deployment.stake_token,
        U256::from(10u64) * e18,
        U256::from(20_000u64) * e18,
    )
    .await
    .expect("DeFi deploys");
    let provider = ProviderBuilder::new().connect_http(anvil.url().parse().expect("url")).erased();
    let pairs = vec![TokenPair { token: defi.token, pair: defi.pair }];
    let twap = TwapFeed::new(pairs.clone(), WINDOW_S);
    let spot = UniswapV2Feed::new(pairs);
    let fee = U256::from(200u64) * e18; // 200 tokens, about 0.1 ETH

    // No price until a whole window has been watched: refused, never the spot instead.
    match twap.price(&provider, defi.token).await {
        Err(PriceError::NotReady(why)) => assert!(why.to_string().contains("not available yet"), "{why}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a price before the window is filled"),
    }
    advance(&provider, WINDOW_S / 2).await;
    assert!(matches!(twap.price(&provider, defi.token).await, Err(PriceError::NotReady(_))));
    advance(&provider, WINDOW_S / 2).await;
    let honest = value(&twap, &provider, defi.token, fee).await;
    let honest_spot = value(&spot, &provider, defi.token, fee).await;
    assert!(honest > U256::ZERO && honest <= honest_spot, "mean {honest}, spot {honest_spot}");
    // Undisturbed, the two agree within the sale's price impact and fee (≈ 1.3 %).
    assert!(honest * U256::from(100u64) >= honest_spot * U256::from(98u64), "mean {honest}, spot {honest_spot}");

    // The attack: buy the token with 60 ETH (the pair held 10), pushing its price up ~49x, and
    // let one block (12 s) pass at that price.
    let wallet = deploy::wallet_provider(anvil.url(), &deployer).expect("wallet");
    let router = UniswapV2Router02::new(defi.router, &wallet);
    let receipt = router
        .swapExactETHForTokens(U256::ZERO, vec![defi.weth, defi.token], deployer.address(), U256::from(u64::MAX))
        .value(U256::from(60u64) * e18)
        .send()
        .await
        .expect("swap sends")
        .get_receipt()
        .await
        .expect("receipt");
    assert!(receipt.status());
    advance(&provider, 12).await;

    let pushed_spot = value(&spot, &provider, defi.token, fee).await;
    let after = value(&twap, &provider, defi.token, fee).await;
    eprintln!("fee of 200 tokens: spot {honest_spot} -> {pushed_spot} wei; relayer's value {honest} -> {after} wei");
    assert!(pushed_spot > honest_spot * U256::from(30u64), "the spot moved {honest_spot} -> {pushed_spot}");
    assert!(after <= pushed_spot);
    // About 13 s of a ~49x price in a ~1,813 s window: about +35 %, against ~+4,500 % at the spot.
    assert!(after < honest * U256::from(3u64) / U256::from(2u64), "the relayer's value moved {honest} -> {after}");

    // A fee the manipulated spot values at 3x what the relayer requires would pass a spot
    // check (value >= required) and does not pass the relayer's.
    let required = pushed_spot / U256::from(3u64);
    assert!(pushed_spot >= required);
    assert!(after < required, "the relayer would accept {after} wei of value for {required} required");
    // The amount it asks for that requirement is worth it at the mean price, not at the spot.
    let asked = twap.price(&provider, defi.token).await.unwrap().unwrap().asset_for_wei(required).expect("priced");
    assert!(asked > fee * U256::from(2u64), "asked {asked} tokens-wei for {required} wei");
    drop(anvil);
}
