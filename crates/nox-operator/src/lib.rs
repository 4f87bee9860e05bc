#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod deploy;
mod error;
pub mod init;
pub mod keystore;
pub mod ops;
pub mod preset;
pub mod session;

pub use deploy::{DeployPlan, DeploymentRecord};
pub use error::OperatorError;
pub use preset::Preset;
pub use session::Session;
