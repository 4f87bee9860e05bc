//! The fee a paid transaction offers an exit's relayer, checked before anything is proved
//! (issue 34: moved out of `nox tx`): the quote against this client's own reading of the chain
//! (`fees::fee_reading`, and on a rollup its own figure of the L1 data fee, `l2fee`), a token fee
//! valued in wei by its own reading of a Uniswap v2 pair, the fee (the quote's price times a
//! percentage, or a fixed one) against the user's ceiling. `nox_pay::bounds` has the pure rule;
//! the command prints the reading and asks for the confirmation.

use alloy::primitives::{Address, U256};
use alloy::providers::DynProvider;
use nox_pay::PayError;
use nox_pay::bounds::{Ceiling, ChainReading, QuoteRefusal};
use nox_relayer::Quote;
use thiserror::Error;

use crate::{DataFeeError, FeeReadError};

/// Why a fee was refused (nothing was proved, spent or sent). The messages are the command's.
#[derive(Debug, Error)]
pub enum FeeCheckError {
    /// This client's own reading of the chain's fees, or a token's value, failed.
    #[error(transparent)]
    Reading(#[from] FeeReadError),
    /// This client's own figure of the L1 data fee could not be read.
    #[error("{0}; nothing was proved, spent or sent")]
    DataFee(#[from] DataFeeError),
    /// The quote is out of this client's bounds, a token fee cannot be valued, or the fee is
    /// above the ceiling.
    #[error("{}; nothing was proved, spent or sent", PayError::from(.0.clone()))]
    Refused(QuoteRefusal),
    /// The quote does not price the asset, or the fee does not fit.
    #[error(transparent)]
    Price(PayError),
}

impl From<QuoteRefusal> for FeeCheckError {
    fn from(e: QuoteRefusal) -> Self {
        FeeCheckError::Refused(e)
    }
}

/// Whether the exit's relayer (its `quote`) serves the wallet's pool `pool` on chain `chain_id`:
/// a relayer of another pool or chain is refused before anything is checked or proved.
pub fn same_pool(quote: &Quote, chain_id: u64, pool: Address) -> Result<(), PayError> {
    if quote.chain_id != chain_id || quote.pool != pool {
        return Err(PayError::OtherPool {
            relayer_pool: quote.pool,
            relayer_chain: quote.chain_id,
            pool,
            chain: chain_id,
        });
    }
    Ok(())
}

/// A Uniswap v2 pair this client reads a token's value in wei from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenPair {
    /// The router (`getAmountsOut`).
    pub router: Address,
    /// The wrapped ETH the token is valued in.
    pub weth: Address,
    /// The token the pair values.
    pub token: Address,
}

/// What the fee is for, and the user's choices about it.
#[derive(Clone, Copy, Debug)]
pub struct FeeRequest {
    /// The fee's asset (`Address::ZERO`: ETH).
    pub asset: Address,
    /// Gas the action needs (0: a payment only).
    pub action_gas: u64,
    /// The action's calldata length (the L1 data fee is figured on the bundle that carries it).
    pub action_data_len: usize,
    /// A fixed fee (`--fee`) instead of the quote's price.
    pub fixed: Option<u128>,
    /// The quote's price times this percentage (`--fee-percent`).
    pub fee_percent: u32,
    /// The user's ceiling in the fee's asset (`--max-fee`); without it the default, in wei.
    pub max_fee: Option<U256>,
}

/// A fee that passed every check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckedFee {
    /// The fee, in the asset's base unit.
    pub fee: u128,
    /// What it is worth in wei (the fee itself for ETH).
    pub value_wei: U256,
    /// This client's own reading the quote was checked against.
    pub reading: ChainReading,
    /// This client's own figure of the L1 data fee (0 on an L1).
    pub own_data_fee: U256,
    /// The ceiling the fee is under.
    pub ceiling: Ceiling,
}

/// What `amount` of `token` is worth in wei by this client's reading of `pair`; `None` when the
/// client has no pair for `token` (a token fee is then refused).
pub async fn token_value_wei(
    provider: &DynProvider,
    pair: Option<TokenPair>,
    token: Address,
    amount: U256,
) -> Result<Option<U256>, FeeReadError> {
    match pair {
        Some(p) if p.token == token => crate::fees::token_value_wei(provider, p.router, p.weth, token, amount).await,
        _ => Ok(None),
    }
}

/// Checks `quote` and the fee of `req` for the pool `pool` on chain `chain_id`, reading through
/// `provider` (the mixnet): the quote within this client's bounds, the fee (fixed, or the
/// quote's price times the percentage) under the ceiling.
pub async fn check_fee(
    quote: &Quote,
    provider: &DynProvider,
    (chain_id, pool): (u64, Address),
    pair: Option<TokenPair>,
    req: &FeeRequest,
) -> Result<CheckedFee, FeeCheckError> {
    let reading = crate::fees::fee_reading(provider, quote.block).await?;
    // On an L2 the quote's data fee is bounded by this client's own figure (0 on an L1: then any
    // claimed data fee is refused).
    let own_data_fee = crate::l2fee::own_data_fee_wei(provider, chain_id, pool, req.action_data_len).await?;
    let price = quote.prices.iter().find(|p| p.asset == req.asset).map(|p| p.per_million_gas);
    let token_value = match (req.asset.is_zero(), price) {
        (false, Some(price)) => token_value_wei(provider, pair, req.asset, price).await?,
        _ => None,
    };
    nox_pay::check_quote_with_data_fee(quote, &reading, req.asset, token_value, own_data_fee)?;
    let fee = match req.fixed {
        Some(fee) => fee,
        None => {
            nox_pay::fee_from_quote(quote, req.asset, req.action_gas, req.fee_percent).map_err(FeeCheckError::Price)?
        }
    };
    let value_wei = if req.asset.is_zero() {
        U256::from(fee)
    } else {
        token_value_wei(provider, pair, req.asset, U256::from(fee))
            .await?
            .ok_or(QuoteRefusal::UnreadToken(req.asset))?
    };
    let ceiling = match req.max_fee {
        Some(max) => Ceiling::Explicit(max),
        None => Ceiling::Default { wei: reading.default_ceiling_with_data_fee_wei(req.action_gas, own_data_fee) },
    };
    nox_pay::check_ceiling(U256::from(fee), value_wei, ceiling)?;
    Ok(CheckedFee { fee, value_wei, reading, own_data_fee, ceiling })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_nothing_was_spent_in_the_commands_words() {
        let e = FeeCheckError::from(QuoteRefusal::UnreadToken(Address::repeat_byte(0x44)));
        let expected = format!(
            "{}; nothing was proved, spent or sent",
            PayError::from(QuoteRefusal::UnreadToken(Address::repeat_byte(0x44)))
        );
        assert_eq!(e.to_string(), expected);
        assert!(e.to_string().ends_with("; nothing was proved, spent or sent"));
    }

    #[test]
    fn a_relayer_of_another_pool_or_chain_is_refused() {
        let quote = Quote {
            chain_id: 31337,
            executor: Address::repeat_byte(1),
            relayer: Address::repeat_byte(2),
            pool: Address::repeat_byte(3),
            block: 10,
            base_fee: U256::from(1u64),
            priority_fee: U256::from(1u64),
            max_fee_per_gas: U256::from(2u64),
            margin_bps: 1_000,
            gas_extra_bps: 2_000,
            prices: Vec::new(),
            payment_gas: 420_000,
            insertion_gas: 0,
            l1_data_gas: 0,
        };
        assert!(same_pool(&quote, 31337, Address::repeat_byte(3)).is_ok());
        let other_pool = same_pool(&quote, 31337, Address::repeat_byte(4)).unwrap_err();
        assert!(matches!(other_pool, PayError::OtherPool { chain: 31337, .. }), "{other_pool}");
        let other_chain = same_pool(&quote, 1, Address::repeat_byte(3)).unwrap_err();
        assert!(matches!(other_chain, PayError::OtherPool { relayer_chain: 31337, chain: 1, .. }), "{other_chain}");
    }

    #[tokio::test]
    async fn a_token_without_a_pair_has_no_value_and_no_read_is_made() {
        // An endpoint nothing listens on: a read would fail, so `Ok(None)` shows none was made.
        let url = "http://127.0.0.1:9".parse().unwrap();
        let provider = alloy::providers::Provider::erased(alloy::providers::ProviderBuilder::new().connect_http(url));
        let token = Address::repeat_byte(0x55);
        let other = TokenPair { router: Address::repeat_byte(1), weth: Address::repeat_byte(2), token: Address::ZERO };
        assert_eq!(token_value_wei(&provider, None, token, U256::from(5)).await.unwrap(), None);
        assert_eq!(token_value_wei(&provider, Some(other), token, U256::from(5)).await.unwrap(), None);
        let mine = TokenPair { token, ..other };
        assert!(token_value_wei(&provider, Some(mine), token, U256::from(5)).await.is_err(), "the pair is read");
    }
}
