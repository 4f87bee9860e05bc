//! The client's own reading of the chain that bounds an exit's quote (issue 29 item 3;
//! `nox_pay::bounds` holds the pure rule): the base fee at its latest block and at the quote's
//! block, the suggested priority fee, and a token's price by its own reading of a Uniswap v2
//! pair — all through the caller's provider (the mixnet). Moved unchanged from `nox tx`
//! (issue 34).

use alloy::{
    primitives::{Address, U256},
    providers::{DynProvider, Provider},
    transports::TransportError,
};
use nox_pay::bounds::ChainReading;

/// How many blocks before this client's latest block an exit's quote may have been read at. The
/// client bounds the quote by its own reading of the block the quote names (and of its latest
/// block), so an honest quote stays within bounds while blocks go by between the quote and this
/// reading — on a fast chain the base fee falls 12.5 % per empty block, and a reading of the
/// latest block alone would refuse an honest quote a few seconds old.
pub const MAX_QUOTE_AGE_BLOCKS: u64 = 64;

/// A failed or refused reading.
#[derive(Debug, thiserror::Error)]
pub enum FeeReadError {
    /// Reading the latest block failed.
    #[error("reading the base fee: {0}")]
    Latest(TransportError),
    /// The node has no latest block.
    #[error("reading the base fee: no latest block")]
    NoLatestBlock,
    /// The quote names a block too far back.
    #[error(
        "the exit's quote was read at block {quote_block}, {} blocks before this client's latest block {latest} (at \
         most {max}): ask for a fresh quote; nothing was proved, spent or sent",
        .latest - .quote_block,
        max = MAX_QUOTE_AGE_BLOCKS
    )]
    StaleQuote {
        /// The quote's block.
        quote_block: u64,
        /// This client's latest block.
        latest: u64,
    },
    /// Reading the quote's block failed.
    #[error("reading the base fee at the quote's block {quote_block}: {source}")]
    QuoteBlock {
        /// The quote's block.
        quote_block: u64,
        /// The read's error.
        source: TransportError,
    },
    /// The node does not know the quote's block.
    #[error("reading the base fee at the quote's block {0}: no such block")]
    NoQuoteBlock(u64),
    /// Reading the priority fee failed.
    #[error("reading the priority fee: {0}")]
    Priority(TransportError),
    /// Reading the token's price failed.
    #[error("reading the token's price: {0}")]
    TokenPrice(alloy::contract::Error),
}

/// This client's own reading of the chain's fees (through its own provider, so the mixnet):
/// the higher of the base fees of its latest block and of the block the quote was read at
/// (refused if that block is more than [`MAX_QUOTE_AGE_BLOCKS`] old), and the suggested
/// priority fee. The quote's block is the exit's claim, but its base fee is read here, so a
/// lying exit can only name a recent block whose real base fee then bounds its quote.
pub async fn fee_reading(provider: &DynProvider, quote_block: u64) -> Result<ChainReading, FeeReadError> {
    let block = provider
        .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
        .await
        .map_err(FeeReadError::Latest)?
        .ok_or(FeeReadError::NoLatestBlock)?;
    let latest = block.header.number;
    let mut base_fee = u128::from(block.header.base_fee_per_gas.unwrap_or(0));
    if quote_block < latest {
        if latest - quote_block > MAX_QUOTE_AGE_BLOCKS {
            return Err(FeeReadError::StaleQuote { quote_block, latest });
        }
        let at = provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Number(quote_block))
            .await
            .map_err(|source| FeeReadError::QuoteBlock { quote_block, source })?
            .ok_or(FeeReadError::NoQuoteBlock(quote_block))?;
        base_fee = base_fee.max(u128::from(at.header.base_fee_per_gas.unwrap_or(0)));
    }
    let priority_fee = provider.get_max_priority_fee_per_gas().await.map_err(FeeReadError::Priority)?;
    Ok(ChainReading { base_fee, priority_fee })
}

/// What `amount` of `token` is worth in wei by this client's own reading of the Uniswap v2
/// `router`'s `token`/`weth` pair (`getAmountsOut`, through the caller's provider).
pub async fn token_value_wei(
    provider: &DynProvider,
    router: Address,
    weth: Address,
    token: Address,
    amount: U256,
) -> Result<Option<U256>, FeeReadError> {
    if amount.is_zero() {
        return Ok(Some(U256::ZERO));
    }
    let router = nox_chain::defi::UniswapV2Router02::new(router, provider);
    let amounts = router.getAmountsOut(amount, vec![token, weth]).call().await.map_err(FeeReadError::TokenPrice)?;
    Ok(amounts.last().copied())
}
