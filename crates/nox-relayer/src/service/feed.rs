//! Where fee-token prices come from: the [`PriceFeed`] trait and its Uniswap v2 feeds (time-weighted
//! by default, spot for a pair too deep to move).

use super::*;

sol! {
    /// The Uniswap v2 pair calls a token price needs.
    #[sol(rpc)]
    interface IUniswapV2Pair {
        function getReserves() external view returns (uint112 reserve0, uint112 reserve1, uint32 blockTimestampLast);
        function token0() external view returns (address);
        function price0CumulativeLast() external view returns (uint256);
        function price1CumulativeLast() external view returns (uint256);
    }
}

/// Where fee-token prices come from. The relayer asks at every pricing (quote, admission, fee
/// bump), so a price is never older than the request it prices. [`UniswapV2Feed`] — the
/// config's `tokens`, used by [`Relayer::start`] — reads a token/WETH pair's reserves; another
/// source (a Chainlink feed, a TWAP) implements this trait and is passed to
/// [`Relayer::start_with_feed`].
pub trait PriceFeed: Send + Sync + 'static {
    /// The tokens it prices; fees in any other token are refused (`unsupported_asset`).
    fn tokens(&self) -> Vec<Address>;
    /// `token`'s price now, read through `provider`; `None` if it is not priced.
    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a>;
}

/// What [`PriceFeed::price`] returns.
pub type PriceFuture<'a> = Pin<Box<dyn Future<Output = Result<Option<Box<dyn TokenPrice>>, PriceError>> + Send + 'a>>;

/// Why a token has no price now.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The source has no trustworthy price yet (a time-weighted mean whose window is not
    /// filled): fees in the token are refused (`price_unavailable`) and left out of quotes.
    #[error(transparent)]
    NotReady(#[from] TwapError),
    /// Reading the source failed (the relayer's node).
    #[error("price source: {0}")]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

impl PriceError {
    fn source(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Source(Box::new(e))
    }
}

/// Token prices from Uniswap v2 token/WETH pairs, **the default feed**: a fee is worth the
/// lower of its value at the pair's time-weighted mean price over `window_s` and what
/// selling it into the pair now would yield ([`Conservative`]), so moving the pair for a block
/// cannot make the relayer accept less than the fee is worth. The mean comes from the pair's
/// cumulative prices, read at the latest block each time a price is asked for and by a
/// sampler task ([`Policy::price_sample_s`]) as blocks go by: the relayer's node needs no
/// history (no archive, no old state), but after a start fees in a token are refused
/// (`price_unavailable`) until the relayer has watched its pair for a whole window.
pub struct TwapFeed {
    pairs: Vec<TokenPair>,
    window_s: u64,
    oracles: StdMutex<HashMap<Address, TwapOracle>>,
}

impl TwapFeed {
    /// A feed for these tokens and pairs, averaging over `window_s` seconds.
    pub fn new(pairs: Vec<TokenPair>, window_s: u64) -> Self {
        Self { pairs, window_s, oracles: StdMutex::new(HashMap::new()) }
    }

    /// The spot reserves and the mean price, or why there is none.
    async fn read(&self, provider: &DynProvider, pair: Address, token: Address) -> Result<Conservative, PriceError> {
        let block = provider
            .get_block_by_number(BlockNumberOrTag::Latest)
            .await
            .map_err(PriceError::source)?
            .ok_or_else(|| PriceError::Source("the node has no latest block".into()))?;
        let (number, timestamp) = (block.header.inner.number, block.header.inner.timestamp);
        // Every read at the same block: the reserves, cumulatives and timestamp agree.
        let at = BlockId::number(number);
        let contract = IUniswapV2Pair::new(pair, provider);
        let token0 = contract.token0().block(at).call().await.map_err(PriceError::source)?;
        let r = contract.getReserves().block(at).call().await.map_err(PriceError::source)?;
        let c0 = contract.price0CumulativeLast().block(at).call().await.map_err(PriceError::source)?;
        let c1 = contract.price1CumulativeLast().block(at).call().await.map_err(PriceError::source)?;
        let state = PairState {
            reserve0: U256::from(r.reserve0),
            reserve1: U256::from(r.reserve1),
            block_timestamp_last: r.blockTimestampLast,
            price0_cumulative_last: c0,
            price1_cumulative_last: c1,
        };
        // The pair counts time in uint32 seconds (it wraps in 2106).
        let (cum0, cum1) = state.cumulative_at(timestamp as u32);
        let (spot, cumulative) = if token0 == token {
            (Reserves { asset: state.reserve0, weth: state.reserve1 }, cum0)
        } else {
            (Reserves { asset: state.reserve1, weth: state.reserve0 }, cum1)
        };
        let now = Observation { timestamp, cumulative };
        let mut oracles = self.oracles.lock().map_err(|_| PriceError::Source("price oracle lock poisoned".into()))?;
        let oracle = oracles.entry(token).or_insert_with(|| TwapOracle::new(self.window_s));
        let mean = oracle.mean(&now);
        oracle.record(now);
        Ok(Conservative { mean: mean?, spot })
    }
}

impl PriceFeed for TwapFeed {
    fn tokens(&self) -> Vec<Address> {
        self.pairs.iter().map(|t| t.token).collect()
    }

    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a> {
        Box::pin(async move {
            let Some(pair) = self.pairs.iter().find(|t| t.token == token) else { return Ok(None) };
            let price = self.read(provider, pair.pair, token).await?;
            Ok(Some(Box::new(price) as Box<dyn TokenPrice>))
        })
    }
}

/// Token prices from Uniswap v2 token/WETH pairs at the spot: what selling the fee into its
/// pair would yield now (`getAmountOut`), so price impact counts — but one block's reserves can
/// be moved by whoever trades in that block: use only for a pair too deep to move, and prefer
/// [`TwapFeed`] (the default).
pub struct UniswapV2Feed {
    pairs: Vec<TokenPair>,
}

impl UniswapV2Feed {
    /// A feed for these tokens and their pairs.
    pub fn new(pairs: Vec<TokenPair>) -> Self {
        Self { pairs }
    }
}

impl PriceFeed for UniswapV2Feed {
    fn tokens(&self) -> Vec<Address> {
        self.pairs.iter().map(|t| t.token).collect()
    }

    fn price<'a>(&'a self, provider: &'a DynProvider, token: Address) -> PriceFuture<'a> {
        Box::pin(async move {
            let Some(pair) = self.pairs.iter().find(|t| t.token == token) else { return Ok(None) };
            let pair = IUniswapV2Pair::new(pair.pair, provider);
            let token0 = pair.token0().call().await.map_err(PriceError::source)?;
            let r = pair.getReserves().call().await.map_err(PriceError::source)?;
            let (r0, r1) = (U256::from(r.reserve0), U256::from(r.reserve1));
            let reserves =
                if token0 == token { Reserves { asset: r0, weth: r1 } } else { Reserves { asset: r1, weth: r0 } };
            Ok(Some(Box::new(reserves) as Box<dyn TokenPrice>))
        })
    }
}
