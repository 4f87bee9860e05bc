#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adaptor;
pub mod bounds;
pub mod bundle;
mod error;
pub mod relay;

pub use bounds::{
    Ceiling, ChainReading, QuoteRefusal, check_ceiling, check_quote, check_quote_with_data_fee, data_fee_sample,
};
pub use bundle::{Action, PaidBundle, Payee, Payment, asset_word, fee_from_quote, prove, transaction_struct};
pub use error::PayError;
pub use relay::{DEFAULT_FEE_PERCENT, RelayClient};
