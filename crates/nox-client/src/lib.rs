#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod core;
mod core_streams;
mod error;
mod health;
mod paths;
mod proxy;
mod rpc;
mod shell;
pub mod socks;
mod streams;
mod surbs;
mod types;

pub use config::ClientConfig;
pub use core::{ClientCore, ClientStats, Completed, DROP_MAGIC, Now, Outgoing, RequestId};
pub use error::ClientError;
pub use nox_cover::HealthConfig;
pub use nox_stream::{ResetCode, Target as StreamTarget};
pub use proxy::{SocksConfig, StreamIo, StreamOpener, serve_socks};
pub use rpc::{RpcConfig, rpc_error, serve_rpc};
pub use shell::{Client, ClientHandle, MixStream, Requester, ShellConfig};
pub use streams::{StreamConfig, StreamStatus};
