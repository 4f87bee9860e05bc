//! The client's defence against a lying exit (issue 29 item 3): every figure of a relayer's
//! [`Quote`] is bounded by the client's *own* reading of the chain — taken through its own
//! provider over the mixnet, never from the exit that quotes — and the fee about to be proved is
//! bounded by a user ceiling. Pure: the reading, the token valuation and the ceiling are values
//! the caller brings; nothing here does I/O.
//!
//! The bounds, with `b` the client's latest block base fee and `t` its tip reading:
//!
//! | figure | bound |
//! | --- | --- |
//! | `base_fee` (the quote's next base fee) | `b × 1.125²`: the next block's, one block of drift |
//! | `priority_fee` | `2 × max(t, 1 gwei)` |
//! | `max_fee_per_gas` | `2 × (base_fee bound × 1.25 + max(t, 1 gwei))` |
//! | `margin_bps`, `gas_extra_bps` | [`MAX_MARGIN_BPS`], [`MAX_GAS_EXTRA_BPS`] (50 %) |
//! | `payment_gas` | [`MAX_PAYMENT_GAS`] = 600,000 (a whole ZK payment is < 500,000 gas, docs/benchmarks/gas.md) |
//! | `insertion_gas` | [`MAX_INSERTION_GAS`] = 225,000 (the outputs' share of an `insertBatch` of at least 6 notes; a full batch of 32 charges ≈ 34,000) |
//! | `l1_data_gas` (an L2's data fee) | worth at most 2 × the client's own figure of the data fee at the quote's max fee ([`check_quote_with_data_fee`]); 0 under [`check_quote`] (an L1) |
//! | ETH price per million gas | `⌈10⁶ × max_fee_per_gas × (1 + margin)⌉` of the quote's own (bounded) figures |
//! | token price per million gas | worth (by the client's own reading of the pair) at most the ETH bound + 10 % |
//!
//! The fee proved must then be at most the user's ceiling (`--max-fee`), by default
//! [`DEFAULT_CEILING_FACTOR`] × ([`MAX_PAYMENT_GAS`] + action gas) × the client's own max fee
//! per gas ([`ChainReading::max_fee_per_gas`]), valued in wei.

use alloy_primitives::{Address, U256};
use nox_relayer::Quote;

/// Largest margin over cost a quote may carry, basis points (50 %).
pub const MAX_MARGIN_BPS: u32 = 5_000;
/// Largest extra gas above simulation a quote may carry, basis points (50 %).
pub const MAX_GAS_EXTRA_BPS: u32 = 5_000;
/// Largest `payment_gas` a quote may claim: the executor plus a ZK gas payment measure under
/// 500,000 gas (docs/benchmarks/gas.md), so 600,000 leaves 20 % headroom.
pub const MAX_PAYMENT_GAS: u64 = 600_000;
/// Largest `insertion_gas` (the two outputs' share of an insertion batch) a quote may claim:
/// `insertBatch` (batches of up to `nox_zk::insert::BATCH_SIZE` = 32 notes) costs under 600,000 gas
/// whatever its size (547,832 measured for a full batch, 520,268 for 4 notes), so two notes of a
/// batch of at least six cost at most ⌈600,000 × 2 / 6⌉ = 200,000; an exit charging more would be
/// paid for inserting one to five notes per batch (a full batch of 32 charges ≈ 34,000).
pub const MAX_INSERTION_GAS: u64 = 225_000;
/// The tip the client assumes at least, wei per gas: a chain whose `eth_maxPriorityFeePerGas`
/// says 0 still lets a relayer bid up to twice this.
pub const MIN_TIP_WEI: u128 = 1_000_000_000;
/// How much the base fee can rise per block (EIP-1559), basis points.
pub const BASE_FEE_RISE_BPS: u32 = 1_250;
/// Headroom of a max fee over the next base fee, basis points (as the relayer's default).
pub const MAX_FEE_HEADROOM_BPS: u32 = 2_500;
/// Factor between the client's own figures and what a quoted fee figure may reach.
pub const QUOTE_TOLERANCE: u128 = 2;
/// How much more a token fee may be worth than the ETH bound (the relayer's price feed may lag
/// the client's reading), basis points.
pub const TOKEN_PRICE_TOLERANCE_BPS: u32 = 1_000;
/// The default ceiling is this many times the client's own estimate of the most gas it pays for.
pub const DEFAULT_CEILING_FACTOR: u128 = 3;

const BPS: u32 = 10_000;

/// A figure of a quote that is bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// `base_fee`, wei per gas.
    BaseFee,
    /// `priority_fee`, wei per gas.
    PriorityFee,
    /// `max_fee_per_gas`, wei per gas.
    MaxFeePerGas,
    /// `margin_bps`.
    MarginBps,
    /// `gas_extra_bps`.
    GasExtraBps,
    /// `payment_gas`.
    PaymentGas,
    /// `insertion_gas`.
    InsertionGas,
    /// `l1_data_gas` (an L2's data fee as gas): at most what the client's own figure of the
    /// data fee allows, 0 where it has none (an L1, or a caller that did not read it).
    L1DataGas,
    /// The price per million gas of an asset (for a token: its value in wei by the client's
    /// own reading).
    Price(Address),
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BaseFee => f.write_str("base_fee (wei/gas)"),
            Self::PriorityFee => f.write_str("priority_fee (wei/gas)"),
            Self::MaxFeePerGas => f.write_str("max_fee_per_gas (wei/gas)"),
            Self::MarginBps => f.write_str("margin_bps"),
            Self::GasExtraBps => f.write_str("gas_extra_bps"),
            Self::PaymentGas => f.write_str("payment_gas"),
            Self::InsertionGas => f.write_str("insertion_gas"),
            Self::L1DataGas => f.write_str("l1_data_gas"),
            Self::Price(a) if a.is_zero() => f.write_str("ETH price per million gas (wei)"),
            Self::Price(a) => write!(f, "price per million gas of token {a} (valued in wei)"),
        }
    }
}

/// Why a quote or a fee is refused before anything is proved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuoteRefusal {
    /// A quoted figure is above what the client's own reading allows.
    #[error(
        "the exit's quote is refused: its {figure} is {quoted}, above the bound {bound} from this client's own reading of the chain"
    )]
    Exceeds {
        /// The figure.
        figure: Figure,
        /// The quoted value.
        quoted: U256,
        /// The bound it broke.
        bound: U256,
    },
    /// The quote has no price for the fee's asset.
    #[error("the exit's quote has no price for {0}")]
    Unpriced(Address),
    /// A token fee with no reading of the token's price by the client itself.
    #[error("a fee in token {0} needs this client's own reading of its price (no pair to read it from): pay in ETH")]
    UnreadToken(Address),
    /// The fee is above the user's ceiling.
    #[error("the fee {fee} is above the ceiling {ceiling} ({what}); raise --max-fee to pay it")]
    AboveCeiling {
        /// The fee (in the asset, or its value in wei for a token under the default ceiling).
        fee: U256,
        /// The ceiling.
        ceiling: U256,
        /// Where the ceiling comes from.
        what: &'static str,
    },
}

/// The client's own reading of the chain's fees, through its own provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainReading {
    /// The latest block's base fee, wei per gas.
    pub base_fee: u128,
    /// The priority fee the chain suggests (`eth_maxPriorityFeePerGas`), wei per gas.
    pub priority_fee: u128,
}

fn scale_up(x: u128, bps: u32) -> u128 {
    let v = (U256::from(x) * U256::from(BPS + bps)).div_ceil(U256::from(BPS));
    u128::try_from(v).unwrap_or(u128::MAX)
}

impl ChainReading {
    /// The most the next block's base fee can be (× 1.125).
    pub fn next_base_fee(&self) -> u128 {
        scale_up(self.base_fee, BASE_FEE_RISE_BPS)
    }

    /// The tip assumed: the chain's suggestion, at least [`MIN_TIP_WEI`].
    pub fn tip(&self) -> u128 {
        self.priority_fee.max(MIN_TIP_WEI)
    }

    /// The client's own max fee per gas: next base fee × 1.25 + tip.
    pub fn max_fee_per_gas(&self) -> u128 {
        scale_up(self.next_base_fee(), MAX_FEE_HEADROOM_BPS).saturating_add(self.tip())
    }

    /// The bounds on a quote's fee figures.
    pub fn bounds(&self) -> FeeBounds {
        let base_fee = scale_up(self.next_base_fee(), BASE_FEE_RISE_BPS);
        let tip = self.tip();
        FeeBounds {
            base_fee,
            priority_fee: tip.saturating_mul(QUOTE_TOLERANCE),
            max_fee_per_gas: scale_up(base_fee, MAX_FEE_HEADROOM_BPS)
                .saturating_add(tip)
                .saturating_mul(QUOTE_TOLERANCE),
        }
    }

    /// The default ceiling, wei: [`DEFAULT_CEILING_FACTOR`] × ([`MAX_PAYMENT_GAS`] +
    /// `action_gas`) × [`ChainReading::max_fee_per_gas`].
    pub fn default_ceiling_wei(&self, action_gas: u64) -> U256 {
        self.default_ceiling_with_data_fee_wei(action_gas, U256::ZERO)
    }

    /// The default ceiling on an L2, wei: [`Self::default_ceiling_wei`] plus
    /// [`DEFAULT_CEILING_FACTOR`] × the client's own figure of the bundle's L1 data fee (a quote
    /// may charge up to [`QUOTE_TOLERANCE`] × that figure, plus the relayer's margin).
    pub fn default_ceiling_with_data_fee_wei(&self, action_gas: u64, own_data_fee_wei: U256) -> U256 {
        let gas = U256::from(DEFAULT_CEILING_FACTOR)
            * U256::from(MAX_PAYMENT_GAS.saturating_add(action_gas))
            * U256::from(self.max_fee_per_gas());
        gas.saturating_add(own_data_fee_wei.saturating_mul(U256::from(DEFAULT_CEILING_FACTOR)))
    }
}

/// The client's own data-fee sample (defined with the relayer's reference bundle, whose shape it
/// shares; the browser module computes it from the same function).
pub use nox_relayer::price::{SIGNED_ENVELOPE_BYTES, data_fee_sample};

/// The most a quote's fee figures may be, wei per gas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeBounds {
    /// Bound on `base_fee`.
    pub base_fee: u128,
    /// Bound on `priority_fee`.
    pub priority_fee: u128,
    /// Bound on `max_fee_per_gas`.
    pub max_fee_per_gas: u128,
}

fn at_most(figure: Figure, quoted: U256, bound: U256) -> Result<(), QuoteRefusal> {
    if quoted > bound { Err(QuoteRefusal::Exceeds { figure, quoted, bound }) } else { Ok(()) }
}

/// The most the quote's ETH price per million gas may be: the relayer's own formula
/// (docs/spec/relay.md §3) at its quoted — already bounded — max fee and margin.
pub fn eth_price_bound(quote: &Quote) -> U256 {
    let cost = U256::from(1_000_000u64).saturating_mul(quote.max_fee_per_gas);
    cost.saturating_mul(U256::from(BPS + quote.margin_bps.min(MAX_MARGIN_BPS))).div_ceil(U256::from(BPS))
}

/// Checks every figure of `quote` against the client's own `reading`, and the price of the fee
/// asset `asset`. For a token, `token_value_wei` is what the client's own reading of the
/// token's pair says `per_million_gas` of it is worth in wei; `None` refuses a token fee.
pub fn check_quote(
    quote: &Quote,
    reading: &ChainReading,
    asset: Address,
    token_value_wei: Option<U256>,
) -> Result<(), QuoteRefusal> {
    check_quote_with_data_fee(quote, reading, asset, token_value_wei, U256::ZERO)
}

/// [`check_quote`] on a chain that charges an L1 data fee (docs/design/l2-fees.md):
/// `own_data_fee_wei` is the client's own figure of the data fee of the bundle it will send
/// (`nox_chain::l2fee` on the prices read through its own provider; 0 on an L1). The quote's
/// `l1_data_gas` may be worth at most [`QUOTE_TOLERANCE`] × that at the quote's max fee per gas
/// (rounded up to whole gas): a lying exit cannot charge a data fee on an L1, nor more than
/// twice the real one on an L2.
pub fn check_quote_with_data_fee(
    quote: &Quote,
    reading: &ChainReading,
    asset: Address,
    token_value_wei: Option<U256>,
    own_data_fee_wei: U256,
) -> Result<(), QuoteRefusal> {
    let b = reading.bounds();
    at_most(Figure::BaseFee, quote.base_fee, U256::from(b.base_fee))?;
    at_most(Figure::PriorityFee, quote.priority_fee, U256::from(b.priority_fee))?;
    at_most(Figure::MaxFeePerGas, quote.max_fee_per_gas, U256::from(b.max_fee_per_gas))?;
    at_most(Figure::MarginBps, U256::from(quote.margin_bps), U256::from(MAX_MARGIN_BPS))?;
    at_most(Figure::GasExtraBps, U256::from(quote.gas_extra_bps), U256::from(MAX_GAS_EXTRA_BPS))?;
    at_most(Figure::PaymentGas, U256::from(quote.payment_gas), U256::from(MAX_PAYMENT_GAS))?;
    at_most(Figure::InsertionGas, U256::from(quote.insertion_gas), U256::from(MAX_INSERTION_GAS))?;
    let data_fee_bound = own_data_fee_wei.saturating_mul(U256::from(QUOTE_TOLERANCE));
    let data_gas_bound =
        if quote.max_fee_per_gas.is_zero() { U256::ZERO } else { data_fee_bound.div_ceil(quote.max_fee_per_gas) };
    at_most(Figure::L1DataGas, U256::from(quote.l1_data_gas), data_gas_bound)?;
    let price = quote.prices.iter().find(|p| p.asset == asset).ok_or(QuoteRefusal::Unpriced(asset))?;
    let eth_bound = eth_price_bound(quote);
    if asset.is_zero() {
        at_most(Figure::Price(asset), price.per_million_gas, eth_bound)
    } else {
        let value = token_value_wei.ok_or(QuoteRefusal::UnreadToken(asset))?;
        let bound = eth_bound.saturating_mul(U256::from(BPS + TOKEN_PRICE_TOLERANCE_BPS)).div_ceil(U256::from(BPS));
        at_most(Figure::Price(asset), value, bound)
    }
}

/// The user's ceiling on the fee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// `--max-fee`: at most this much of the fee's asset.
    Explicit(U256),
    /// The default: at most [`ChainReading::default_ceiling_wei`] worth of wei.
    Default {
        /// The ceiling, wei.
        wei: U256,
    },
}

/// Checks the fee about to be proved against the ceiling. `fee_value_wei` is the fee's value in
/// wei (the fee itself for ETH; the client's own valuation for a token).
pub fn check_ceiling(fee: U256, fee_value_wei: U256, ceiling: Ceiling) -> Result<(), QuoteRefusal> {
    match ceiling {
        Ceiling::Explicit(max) if fee > max => Err(QuoteRefusal::AboveCeiling { fee, ceiling: max, what: "--max-fee" }),
        Ceiling::Default { wei } if fee_value_wei > wei => Err(QuoteRefusal::AboveCeiling {
            fee: fee_value_wei,
            ceiling: wei,
            what: "the default: 3 × (600,000 + action gas) × this client's own max fee per gas, in wei",
        }),
        _ => Ok(()),
    }
}

/// Why an amount given on the command line does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Not a number with an optional `eth`, `gwei` or `wei` unit.
    #[error("{0:?} is not an amount (a number of base units, or a decimal followed by eth, gwei or wei)")]
    Malformed(String),
    /// More decimals than the unit has, or above 2^256.
    #[error("{0:?} is not a whole number of wei or is too large")]
    NotWhole(String),
}

/// Parses an amount: base units (`123`), or a decimal with a unit (`0.01eth`, `2.5 gwei`,
/// `7wei`; case-insensitive).
pub fn parse_amount(text: &str) -> Result<U256, AmountError> {
    let t = text.trim().to_ascii_lowercase();
    let (number, decimals) = if let Some(n) = t.strip_suffix("gwei") {
        (n, 9)
    } else if let Some(n) = t.strip_suffix("wei") {
        (n, 0)
    } else if let Some(n) = t.strip_suffix("eth") {
        (n, 18)
    } else {
        (t.as_str(), 0)
    };
    let number = number.trim();
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) {
        return Err(AmountError::Malformed(text.to_owned()));
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > decimals {
        return Err(AmountError::NotWhole(text.to_owned()));
    }
    let padded = format!("{whole}{frac}{}", "0".repeat(decimals - frac.len()));
    let padded = if padded.is_empty() { "0" } else { padded.as_str() };
    U256::from_str_radix(padded, 10).map_err(|_| AmountError::NotWhole(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nox_relayer::price::{FeePlan, required_wei};
    use nox_relayer::wire::AssetPrice;

    const GWEI: u128 = 1_000_000_000;
    const TOKEN: Address = Address::repeat_byte(7);

    /// The relayer's own quote at the default policy (margin 10 %, headroom 25 %, tip 1 gwei,
    /// extra 20 %, payment gas 420,000) for a chain whose next base fee is `next`.
    fn honest(next: u128) -> Quote {
        let plan = FeePlan::new(next, GWEI, 2_500);
        Quote {
            chain_id: 31337,
            executor: Address::repeat_byte(1),
            relayer: Address::repeat_byte(2),
            pool: Address::repeat_byte(3),
            block: 10,
            base_fee: U256::from(plan.base_fee),
            priority_fee: U256::from(plan.priority_fee),
            max_fee_per_gas: U256::from(plan.max_fee_per_gas),
            margin_bps: 1_000,
            gas_extra_bps: 2_000,
            prices: vec![
                AssetPrice {
                    asset: Address::ZERO,
                    per_million_gas: required_wei(1_000_000, plan.max_fee_per_gas, 1_000),
                },
                AssetPrice { asset: TOKEN, per_million_gas: U256::from(5u64) },
            ],
            payment_gas: 420_000,
            insertion_gas: 0,
            l1_data_gas: 0,
        }
    }

    /// Issue 33: a quote's `l1_data_gas` is added to the fee (`Quote::fee_for_action`), so an
    /// exit on an L1 that claims a data fee would be paid for nothing; on an L2 it may claim
    /// at most twice the client's own figure.
    #[test]
    fn a_data_fee_is_bounded_by_the_clients_own_figure() {
        let mut q = honest(20 * GWEI);
        let r = reading(20 * GWEI);
        assert!(check_quote(&q, &r, Address::ZERO, None).is_ok());
        // The attack: an L1 quote inflated by a made-up data fee of 1,000,000 gas.
        q.l1_data_gas = 1_000_000;
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::L1DataGas);
        // On an L2 whose data fee the client reads as 1 M gas' worth: accepted, and up to twice.
        let max_fee = U256::from(q.max_fee_per_gas);
        let own = max_fee * U256::from(1_000_000u64);
        assert!(check_quote_with_data_fee(&q, &r, Address::ZERO, None, own).is_ok());
        q.l1_data_gas = 2_000_000;
        assert!(check_quote_with_data_fee(&q, &r, Address::ZERO, None, own).is_ok());
        q.l1_data_gas = 2_000_001;
        assert_eq!(refused_figure(check_quote_with_data_fee(&q, &r, Address::ZERO, None, own)), Figure::L1DataGas);
    }

    fn reading(base: u128) -> ChainReading {
        ChainReading { base_fee: base, priority_fee: GWEI }
    }

    fn refused_figure(r: Result<(), QuoteRefusal>) -> Figure {
        match r {
            Err(QuoteRefusal::Exceeds { figure, quoted, bound }) => {
                assert!(quoted > bound);
                figure
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_honest_quote_passes_even_a_block_or_two_later() {
        for base in [7, GWEI, 30 * GWEI, 500 * GWEI] {
            let r = reading(base);
            // The relayer read the same block, or the next one after a full block (+12.5 %).
            for next in [r.next_base_fee(), scale_up(r.next_base_fee(), BASE_FEE_RISE_BPS)] {
                assert_eq!(check_quote(&honest(next), &r, Address::ZERO, None), Ok(()), "base {base}, next {next}");
            }
        }
    }

    #[test]
    fn a_quote_a_hundred_times_the_chain_is_refused() {
        let r = reading(GWEI);
        let mut q = honest(r.next_base_fee());
        q.base_fee *= U256::from(100u64);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::BaseFee);
        // A liar that keeps base_fee honest but multiplies the max fee and the price.
        let mut q = honest(r.next_base_fee());
        q.max_fee_per_gas *= U256::from(100u64);
        q.prices[0].per_million_gas *= U256::from(100u64);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::MaxFeePerGas);
        // And one that only inflates the price, keeping every fee figure honest.
        let mut q = honest(r.next_base_fee());
        q.prices[0].per_million_gas *= U256::from(100u64);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::Price(Address::ZERO));
    }

    #[test]
    fn every_fee_figure_is_bounded_just_above_its_limit() {
        let r = reading(20 * GWEI);
        let b = r.bounds();
        let next = r.next_base_fee();
        let mut q = honest(next);
        q.base_fee = U256::from(b.base_fee);
        assert_eq!(check_quote(&q, &r, Address::ZERO, None), Ok(()));
        q.base_fee += U256::from(1u64);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::BaseFee);
        let mut q = honest(next);
        q.priority_fee = U256::from(b.priority_fee + 1);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::PriorityFee);
        let mut q = honest(next);
        q.max_fee_per_gas = U256::from(b.max_fee_per_gas + 1);
        assert_eq!(refused_figure(check_quote(&q, &r, Address::ZERO, None)), Figure::MaxFeePerGas);
        // A zero tip reading still allows the relayer's 1 gwei default bid, not more than 2 gwei.
        let zero_tip = ChainReading { base_fee: 20 * GWEI, priority_fee: 0 };
        assert_eq!(zero_tip.bounds().priority_fee, 2 * GWEI);
        assert_eq!(check_quote(&honest(next), &zero_tip, Address::ZERO, None), Ok(()));
    }

    #[test]
    fn margins_payment_and_insertion_gas_are_capped() {
        let r = reading(GWEI);
        let next = r.next_base_fee();
        let mut q = honest(next);
        q.margin_bps = MAX_MARGIN_BPS;
        q.gas_extra_bps = MAX_GAS_EXTRA_BPS;
        q.payment_gas = MAX_PAYMENT_GAS;
        q.insertion_gas = MAX_INSERTION_GAS;
        assert_eq!(check_quote(&q, &r, Address::ZERO, None), Ok(()));
        // An exit that prices each payment as if it inserted the two notes alone.
        let mut i = q.clone();
        i.insertion_gas = 433_000 * 2;
        assert_eq!(refused_figure(check_quote(&i, &r, Address::ZERO, None)), Figure::InsertionGas);
        let mut m = q.clone();
        m.margin_bps += 1;
        assert_eq!(refused_figure(check_quote(&m, &r, Address::ZERO, None)), Figure::MarginBps);
        let mut g = q.clone();
        g.gas_extra_bps += 1;
        assert_eq!(refused_figure(check_quote(&g, &r, Address::ZERO, None)), Figure::GasExtraBps);
        let mut p = q.clone();
        p.payment_gas = 100 * 420_000;
        assert_eq!(refused_figure(check_quote(&p, &r, Address::ZERO, None)), Figure::PaymentGas);
    }

    #[test]
    fn token_prices_need_and_obey_the_clients_own_reading() {
        let r = reading(GWEI);
        let q = honest(r.next_base_fee());
        let eth = eth_price_bound(&q);
        assert_eq!(check_quote(&q, &r, TOKEN, None), Err(QuoteRefusal::UnreadToken(TOKEN)));
        assert_eq!(check_quote(&q, &r, TOKEN, Some(eth)), Ok(()));
        let tolerated = eth * U256::from(11u64) / U256::from(10u64);
        assert_eq!(check_quote(&q, &r, TOKEN, Some(tolerated)), Ok(()));
        let lie = eth * U256::from(100u64);
        assert_eq!(refused_figure(check_quote(&q, &r, TOKEN, Some(lie))), Figure::Price(TOKEN));
        let other = Address::repeat_byte(9);
        assert_eq!(check_quote(&q, &r, other, Some(eth)), Err(QuoteRefusal::Unpriced(other)));
    }

    #[test]
    fn the_default_ceiling_admits_an_honest_fee_and_refuses_an_inflated_one() {
        let r = reading(GWEI);
        let q = honest(r.next_base_fee());
        let action_gas = 100_000;
        let honest_fee = crate::fee_from_quote(&q, Address::ZERO, action_gas, crate::DEFAULT_FEE_PERCENT).unwrap();
        let ceiling = Ceiling::Default { wei: r.default_ceiling_wei(action_gas) };
        let fee = U256::from(honest_fee);
        assert_eq!(check_ceiling(fee, fee, ceiling), Ok(()));
        // The largest quote every bound admits still passes them, but not the ceiling.
        let mut worst = q.clone();
        let b = r.bounds();
        worst.max_fee_per_gas = U256::from(b.max_fee_per_gas);
        worst.margin_bps = MAX_MARGIN_BPS;
        worst.gas_extra_bps = MAX_GAS_EXTRA_BPS;
        worst.payment_gas = MAX_PAYMENT_GAS;
        worst.prices[0].per_million_gas = eth_price_bound(&worst);
        assert_eq!(check_quote(&worst, &r, Address::ZERO, None), Ok(()));
        let worst_fee = U256::from(crate::fee_from_quote(&worst, Address::ZERO, action_gas, 125).unwrap());
        assert!(matches!(check_ceiling(worst_fee, worst_fee, ceiling), Err(QuoteRefusal::AboveCeiling { .. })));
        // An explicit ceiling is in the asset and is the user's word.
        assert_eq!(check_ceiling(worst_fee, worst_fee, Ceiling::Explicit(worst_fee)), Ok(()));
        let e = check_ceiling(fee, fee, Ceiling::Explicit(fee - U256::from(1u64))).unwrap_err();
        assert!(e.to_string().contains("--max-fee"), "{e}");
    }

    #[test]
    fn refusals_name_the_figure_the_value_and_the_bound() {
        let r = reading(GWEI);
        let mut q = honest(r.next_base_fee());
        q.payment_gas = 42_000_000;
        let e = check_quote(&q, &r, Address::ZERO, None).unwrap_err().to_string();
        assert!(e.contains("payment_gas") && e.contains("42000000") && e.contains("600000"), "{e}");
    }

    #[test]
    fn amounts_parse_with_units() {
        let eth = U256::from(10u64).pow(U256::from(18u64));
        assert_eq!(parse_amount("123"), Ok(U256::from(123u64)));
        assert_eq!(parse_amount("0.01eth"), Ok(eth / U256::from(100u64)));
        assert_eq!(parse_amount("1 ETH"), Ok(eth));
        assert_eq!(parse_amount("2.5gwei"), Ok(U256::from(2_500_000_000u64)));
        assert_eq!(parse_amount("7wei"), Ok(U256::from(7u64)));
        assert_eq!(parse_amount(".5eth"), Ok(eth / U256::from(2u64)));
        assert!(matches!(parse_amount("1.5"), Err(AmountError::NotWhole(_))));
        assert!(matches!(parse_amount("0.0000000001gwei"), Err(AmountError::NotWhole(_))));
        for bad in ["", "eth", "1e18", "-1", "0x10", "1..2eth", "."] {
            assert!(matches!(parse_amount(bad), Err(AmountError::Malformed(_))), "{bad}");
        }
    }
}
