//! The public baselines: the same actions sent on the same chain by an account with no
//! privacy, and the gas each used.

use super::*;

/// The gas a mined transaction used.
pub(super) async fn gas_of(rpc: &str, hash: &str) -> Result<u64, BenchError> {
    use alloy::providers::{Provider, ProviderBuilder};
    let provider = ProviderBuilder::new().connect_http(rpc.parse().map_err(err)?);
    let hash: alloy::primitives::B256 = hash.parse().map_err(err)?;
    let receipt = provider.get_transaction_receipt(hash).await.map_err(err)?.ok_or_else(|| err("no receipt"))?;
    Ok(receipt.gas_used)
}

/// Gas of the public equivalents, sent on the same chain by an account with no privacy.
pub(super) async fn public_baselines(
    rpc: &str,
    defi: &nox_chain::defi::DefiDeployment,
    token: alloy::primitives::Address,
    deposits: &[String],
) -> Result<Value, BenchError> {
    use alloy::network::TransactionBuilder;
    use alloy::primitives::{Address, Bytes, U256};
    use alloy::providers::Provider;
    use alloy::rpc::types::TransactionRequest;
    let key = nox_chain::deploy::signer(PUBLIC_KEY).map_err(err)?;
    let provider = nox_chain::deploy::wallet_provider(rpc, &key).map_err(err)?;
    let fresh = Address::from([0x7a; 20]);
    let tenth = U256::from(ONE_ETH / 10);
    let now = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(err)?
        .ok_or_else(|| err("no latest block"))?
        .header
        .timestamp;
    let transfer = TransactionRequest::default().with_to(fresh).with_value(tenth);
    let call = TransactionRequest::default().with_to(token).with_input(Bytes::from_static(&[0x18, 0x16, 0x0d, 0xdd]));
    let router = nox_chain::defi::UniswapV2Router02::new(defi.router, &provider);
    let swap = router
        .swapExactETHForTokens(U256::ZERO, vec![defi.weth, defi.token], key.address(), U256::from(now + 600))
        .value(tenth)
        .into_transaction_request();
    let mut gas = Vec::new();
    for tx in [transfer, call, swap] {
        let receipt = provider.send_transaction(tx).await.map_err(err)?.get_receipt().await.map_err(err)?;
        if !receipt.status() {
            return Err(err("a public baseline transaction reverted"));
        }
        gas.push(receipt.gas_used);
    }
    let nox = nox_chain::bindings::NoxStakeToken::new(defi.token, &provider);
    let receipt =
        nox.transfer(fresh, U256::from(1_000u64)).send().await.map_err(err)?.get_receipt().await.map_err(err)?;
    let mut deposit_gas = Vec::new();
    for hash in deposits {
        deposit_gas.push(gas_of(rpc, hash).await? as f64);
    }
    deposit_gas.sort_by(f64::total_cmp);
    Ok(json!({ "eth_transfer": gas[0], "call_tx": gas[1], "uniswap_swap": gas[2], "erc20_transfer": receipt.gas_used,
        "deposit_p50": percentile(&deposit_gas, 0.5) }))
}
