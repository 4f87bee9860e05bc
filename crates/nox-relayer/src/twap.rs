//! Time-weighted token prices from Uniswap v2's cumulative prices (docs/design/relayer.md,
//! "token prices"). Pure: the service reads the pair and the block, this module does the
//! arithmetic and keeps the observations.
//!
//! A Uniswap v2 pair accumulates, at the first transaction of each block, `price × seconds`
//! since its last update: `price0CumulativeLast += (reserve1 / reserve0) × elapsed` as an
//! unsigned Q112.112 fixed-point number, in a `uint256` that is **meant to overflow** (the
//! differences stay right modulo 2^256), with `blockTimestampLast` a `uint32` that wraps in
//! 2106. The cumulative at any later moment is the stored one plus the current reserves' price
//! × the seconds since (`UniswapV2OracleLibrary.currentCumulativePrices`, the "counterfactual"
//! cumulative). Two such readings `window` seconds apart give the mean price over the window;
//! moving it costs holding the pair off balance for the whole window, not for one block.
//!
//! A fee is valued conservatively ([`Conservative`]): the lower of the mean price and what
//! selling the fee into the pair now would yield, so neither a pushed-up spot nor a stale mean
//! makes the relayer accept less than the fee is worth.

use std::collections::VecDeque;

use alloy_primitives::{U256, U512};

use crate::price::{Reserves, TokenPrice};

/// Bits of the fraction in Uniswap's UQ112x112.
pub const RESOLUTION: usize = 112;

/// A pair's cumulative prices as stored (`price0CumulativeLast`, `price1CumulativeLast`) with
/// its reserves and `blockTimestampLast` (`getReserves`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairState {
    /// `reserve0`.
    pub reserve0: U256,
    /// `reserve1`.
    pub reserve1: U256,
    /// `blockTimestampLast` (uint32).
    pub block_timestamp_last: u32,
    /// `price0CumulativeLast` (token1 per token0, UQ112x112 × seconds, modulo 2^256).
    pub price0_cumulative_last: U256,
    /// `price1CumulativeLast` (token0 per token1).
    pub price1_cumulative_last: U256,
}

fn widen(x: U256) -> U512 {
    let mut limbs = [0u64; 8];
    limbs[..4].copy_from_slice(x.as_limbs());
    U512::from_limbs(limbs)
}

fn narrow(x: U512) -> Option<U256> {
    let l = x.as_limbs();
    if l[4..].iter().any(|&w| w != 0) { None } else { Some(U256::from_limbs([l[0], l[1], l[2], l[3]])) }
}

/// `UQ112x112.encode(numerator).uqdiv(denominator)`: `numerator × 2^112 / denominator` (both
/// reserves are uint112 on chain, so this fits 224 bits).
fn uq_ratio(numerator: U256, denominator: U256) -> U256 {
    if denominator.is_zero() { U256::ZERO } else { (numerator << RESOLUTION) / denominator }
}

impl PairState {
    /// The cumulative prices at block time `now` (any uint32 block timestamp at or after
    /// `blockTimestampLast`, wrapping): `UniswapV2OracleLibrary.currentCumulativePrices`.
    /// Additions and products wrap modulo 2^256 as on chain.
    pub fn cumulative_at(&self, now: u32) -> (U256, U256) {
        let elapsed = U256::from(now.wrapping_sub(self.block_timestamp_last));
        let mut c0 = self.price0_cumulative_last;
        let mut c1 = self.price1_cumulative_last;
        if !elapsed.is_zero() {
            c0 = c0.wrapping_add(uq_ratio(self.reserve1, self.reserve0).wrapping_mul(elapsed));
            c1 = c1.wrapping_add(uq_ratio(self.reserve0, self.reserve1).wrapping_mul(elapsed));
        }
        (c0, c1)
    }
}

/// One reading of a pair's cumulative price of the fee asset in WETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The block's timestamp (unix seconds).
    pub timestamp: u64,
    /// The cumulative price of the asset in WETH at that time (the pair's `price0` cumulative
    /// if the asset is token0, else `price1`), modulo 2^256.
    pub cumulative: U256,
}

/// A mean price: wei per base unit of the asset, UQ112x112.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeanPrice {
    /// Wei per unit × 2^112.
    pub uq112: U256,
}

impl MeanPrice {
    /// The mean price between two observations (`newer` later than `older`): the difference
    /// of the cumulatives (modulo 2^256: an overflow between them is harmless) over the seconds
    /// between them (modulo 2^32, as the pair counts them). `None` if no time passed.
    pub fn between(older: &Observation, newer: &Observation) -> Option<Self> {
        // The pair measures time in uint32 seconds; so does this difference.
        let elapsed = (newer.timestamp as u32).wrapping_sub(older.timestamp as u32);
        if elapsed == 0 {
            return None;
        }
        Some(Self { uq112: newer.cumulative.wrapping_sub(older.cumulative) / U256::from(elapsed) })
    }

    /// Wei that `amount` of the asset is worth at this price, rounded down.
    pub fn value_in_wei(&self, amount: U256) -> U256 {
        let product = widen(amount) * widen(self.uq112);
        narrow(product >> RESOLUTION).unwrap_or(U256::MAX)
    }

    /// The least amount of the asset worth at least `wei` at this price (`None` at a zero
    /// price or beyond 2^256).
    pub fn asset_for_wei(&self, wei: U256) -> Option<U256> {
        if wei.is_zero() {
            return Some(U256::ZERO);
        }
        if self.uq112.is_zero() {
            return None;
        }
        let num = widen(wei) << RESOLUTION;
        narrow(num.div_ceil(widen(self.uq112)))
    }
}

/// Why no mean price is available yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TwapError {
    /// The relayer has not watched the pair for a whole window yet (after a start, or after a
    /// gap longer than the longest accepted window).
    #[error("the {window_s}-second mean price is not available yet: observed for {observed_s} s")]
    WindowNotFilled {
        /// The window.
        window_s: u64,
        /// Seconds covered by the usable observations.
        observed_s: u64,
    },
}

/// The observations of one pair, kept by the relayer as blocks go by: enough to find, at any
/// moment, one at least `window` and at most `2 × window` seconds old. Bounded: at most
/// [`TwapOracle::MAX_OBSERVATIONS`], spaced at least `window / 32` seconds apart.
#[derive(Clone, Debug)]
pub struct TwapOracle {
    window_s: u64,
    observations: VecDeque<Observation>,
}

impl TwapOracle {
    /// Most observations kept.
    pub const MAX_OBSERVATIONS: usize = 96;

    /// An oracle averaging over `window_s` seconds (at least 1).
    pub fn new(window_s: u64) -> Self {
        Self { window_s: window_s.max(1), observations: VecDeque::new() }
    }

    /// The window, seconds.
    pub fn window_s(&self) -> u64 {
        self.window_s
    }

    /// Observations held.
    pub fn len(&self) -> usize {
        self.observations.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    fn spacing(&self) -> u64 {
        (self.window_s / 32).max(1)
    }

    /// Records `o` (ignored if not later than the last one by the spacing) and forgets what is
    /// too old to be needed: beyond `2 × window`, or beyond the bound.
    pub fn record(&mut self, o: Observation) {
        if let Some(last) = self.observations.back()
            && o.timestamp < last.timestamp.saturating_add(self.spacing())
        {
            return;
        }
        self.observations.push_back(o);
        let horizon = o.timestamp.saturating_sub(2 * self.window_s);
        while self.observations.front().is_some_and(|f| f.timestamp < horizon) {
            self.observations.pop_front();
        }
        while self.observations.len() > Self::MAX_OBSERVATIONS {
            self.observations.pop_front();
        }
    }

    /// The mean price from the newest observation at least a window older than `now` (the
    /// current reading, not necessarily recorded) to `now`.
    pub fn mean(&self, now: &Observation) -> Result<MeanPrice, TwapError> {
        let start = self
            .observations
            .iter()
            .rev()
            .find(|o| o.timestamp.saturating_add(self.window_s) <= now.timestamp && o.timestamp < now.timestamp);
        let observed_s = self.observations.front().map_or(0, |f| now.timestamp.saturating_sub(f.timestamp));
        let not_filled = TwapError::WindowNotFilled { window_s: self.window_s, observed_s };
        match start {
            Some(o) if now.timestamp - o.timestamp <= 2 * self.window_s => MeanPrice::between(o, now).ok_or(not_filled),
            _ => Err(not_filled),
        }
    }
}

/// A fee token valued at the lower of its mean price and its spot sale value (and, for the
/// amount asked for some wei, the larger of the two amounts).
#[derive(Clone, Copy, Debug)]
pub struct Conservative {
    /// The time-weighted mean price.
    pub mean: MeanPrice,
    /// The pair's reserves now.
    pub spot: Reserves,
}

impl TokenPrice for Conservative {
    fn value_in_wei(&self, amount: U256) -> U256 {
        self.mean.value_in_wei(amount).min(self.spot.value_in_wei(amount))
    }

    fn asset_for_wei(&self, wei: U256) -> Option<U256> {
        Some(self.mean.asset_for_wei(wei)?.max(self.spot.asset_for_wei(wei)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn q112() -> U256 {
        U256::from(1u64) << RESOLUTION
    }

    #[test]
    fn counterfactual_cumulative_adds_the_current_price() {
        let s = PairState {
            reserve0: U256::from(1_000u64),
            reserve1: U256::from(3_000u64),
            block_timestamp_last: 100,
            price0_cumulative_last: U256::from(5u64),
            price1_cumulative_last: U256::ZERO,
        };
        let (c0, c1) = s.cumulative_at(110);
        assert_eq!(c0, U256::from(5u64) + q112() * U256::from(3u64) * U256::from(10u64));
        assert_eq!(c1, q112() / U256::from(3u64) * U256::from(10u64));
        // Same block: nothing added.
        assert_eq!(s.cumulative_at(100), (s.price0_cumulative_last, s.price1_cumulative_last));
    }

    #[test]
    fn timestamps_wrap_at_2_pow_32() {
        // Last update 6 s before the uint32 wraps, read 4 s after it: 10 s elapsed.
        let s = PairState {
            reserve0: U256::from(2u64),
            reserve1: U256::from(4u64),
            block_timestamp_last: u32::MAX - 5,
            price0_cumulative_last: U256::ZERO,
            price1_cumulative_last: U256::ZERO,
        };
        let (c0, _) = s.cumulative_at(4);
        assert_eq!(c0, q112() * U256::from(2u64) * U256::from(10u64));
        // The mean across the wrap, with full timestamps that the pair sees modulo 2^32.
        let t0 = (1u64 << 32) - 6;
        let older = Observation { timestamp: t0, cumulative: U256::ZERO };
        let newer = Observation { timestamp: t0 + 10, cumulative: c0 };
        assert_eq!(MeanPrice::between(&older, &newer).unwrap().uq112, q112() * U256::from(2u64));
    }

    #[test]
    fn overflowing_cumulatives_still_give_the_mean() {
        // The cumulative wraps past 2^256 between the two readings, as it does on chain.
        let start = U256::MAX - U256::from(1_000u64);
        let s = PairState {
            reserve0: U256::from(1u64),
            reserve1: U256::from(7u64),
            block_timestamp_last: 50,
            price0_cumulative_last: start,
            price1_cumulative_last: U256::ZERO,
        };
        let (c0, _) = s.cumulative_at(80);
        assert!(c0 < start, "the cumulative wrapped");
        let older = Observation { timestamp: 50, cumulative: start };
        let newer = Observation { timestamp: 80, cumulative: c0 };
        let mean = MeanPrice::between(&older, &newer).unwrap();
        assert_eq!(mean.uq112, q112() * U256::from(7u64));
        assert_eq!(mean.value_in_wei(U256::from(3u64)), U256::from(21u64));
        assert_eq!(mean.asset_for_wei(U256::from(21u64)), Some(U256::from(3u64)));
        assert_eq!(mean.asset_for_wei(U256::from(22u64)), Some(U256::from(4u64)));
    }

    #[test]
    fn a_one_block_spike_barely_moves_a_30_minute_mean() {
        let window = 1_800u64;
        let mut oracle = TwapOracle::new(window);
        // Price 1.0 for 30 minutes, then 100.0 for 12 s (one block).
        let c = |secs_at_1: u64, secs_at_100: u64| {
            q112() * U256::from(secs_at_1) + q112() * U256::from(100u64) * U256::from(secs_at_100)
        };
        oracle.record(Observation { timestamp: 1_000, cumulative: U256::ZERO });
        let now = Observation { timestamp: 1_000 + window + 12, cumulative: c(window, 12) };
        let mean = oracle.mean(&now).unwrap();
        let value = mean.value_in_wei(U256::from(1_000_000u64));
        assert!(value < U256::from(1_700_000u64), "mean moved from 1.0 to {value} per million");
    }

    #[test]
    fn no_mean_before_a_window_nor_from_a_stale_observation() {
        let mut oracle = TwapOracle::new(600);
        let now = |t| Observation { timestamp: t, cumulative: q112() * U256::from(t) };
        assert_eq!(oracle.mean(&now(1_000)), Err(TwapError::WindowNotFilled { window_s: 600, observed_s: 0 }));
        oracle.record(now(1_000));
        assert_eq!(oracle.mean(&now(1_599)), Err(TwapError::WindowNotFilled { window_s: 600, observed_s: 599 }));
        assert_eq!(oracle.mean(&now(1_600)).unwrap().uq112, q112());
        // Only an observation older than two windows: refused, not averaged over hours.
        assert!(oracle.mean(&now(2_201)).is_err());
        // Close spacing is thinned and the store stays bounded.
        for t in 0..10_000u64 {
            oracle.record(now(3_000 + t));
        }
        assert!(oracle.len() <= TwapOracle::MAX_OBSERVATIONS);
        assert!(oracle.mean(&now(13_000)).is_ok());
    }

    #[test]
    fn conservative_takes_the_lower_value() {
        // Spot pushed up 10x (the pair holds 10x the WETH per token), mean at 1.0.
        let spot = Reserves { asset: U256::from(1_000_000_000u64), weth: U256::from(10_000_000_000u64) };
        let c = Conservative { mean: MeanPrice { uq112: q112() }, spot };
        assert_eq!(c.value_in_wei(U256::from(1_000u64)), U256::from(1_000u64));
        assert!(spot.value_in_wei(U256::from(1_000u64)) > U256::from(9_000u64));
        assert_eq!(c.asset_for_wei(U256::from(1_000u64)), Some(U256::from(1_000u64)));
    }

    proptest! {
        #[test]
        fn conservative_amount_is_worth_the_wei(
            asset in 1_000u64..u64::MAX, weth in 1_000u64..u64::MAX, wei in 1u64..u64::MAX / 4,
            num in 1u64..1_000_000, den in 1u64..1_000_000,
        ) {
            let c = Conservative {
                mean: MeanPrice { uq112: (U256::from(num) << RESOLUTION) / U256::from(den) },
                spot: Reserves { asset: U256::from(asset), weth: U256::from(weth) },
            };
            if let Some(amount) = c.asset_for_wei(U256::from(wei)) {
                prop_assert!(c.value_in_wei(amount) >= U256::from(wei));
            }
            let amount = U256::from(wei);
            prop_assert!(c.value_in_wei(amount) <= c.spot.value_in_wei(amount));
            prop_assert!(c.value_in_wei(amount) <= c.mean.value_in_wei(amount));
        }
    }
}
