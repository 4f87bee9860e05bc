#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod core;
mod error;
mod health;
pub mod http1;
mod paths;
mod proxy;
mod rpc;
mod shell;
pub mod socks;
mod surbs;
mod types;

pub use config::ClientConfig;
pub use core::{ClientCore, ClientStats, Completed, DROP_MAGIC, Now, Outgoing, RequestId};
pub use error::ClientError;
pub use nox_cover::HealthConfig;
pub use proxy::{SocksConfig, serve_socks};
pub use rpc::{RpcConfig, rpc_error, serve_rpc};
pub use shell::{Client, ClientHandle, Requester, ShellConfig};
