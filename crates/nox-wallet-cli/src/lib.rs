#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod advice;
pub mod error;
pub mod files;
pub mod flows;
pub mod outcome;
pub mod pool;
pub mod prompt;
pub mod prove;
pub mod session;
pub mod tx;
pub mod wallet;

pub use error::{CliError, CommandError, RunError};
pub use outcome::{Landed, NOT_CONFIRMED, Plan, Stop};
pub use session::PoolAt;
