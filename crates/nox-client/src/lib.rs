#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod core;
mod core_streams;
mod error;
mod gateways;
mod health;
mod paths;
pub mod profile;
#[cfg(feature = "shell")]
#[allow(clippy::disallowed_methods, reason = "the native shell reads the system clocks for the core")]
mod proxy;
#[cfg(feature = "shell")]
#[allow(clippy::disallowed_methods, reason = "the native shell reads the system clocks for the core")]
mod rpc;
#[cfg(feature = "shell")]
#[allow(clippy::disallowed_methods, reason = "the native shell reads the system clocks for the core")]
mod shell;
#[cfg(feature = "shell")]
#[allow(clippy::disallowed_methods, reason = "the native shell reads the system clocks for the core")]
pub mod socks;
mod streams;
mod surbs;
mod types;

pub use config::{ClientConfig, DAEMON_COVER_RATE};
pub use core::{ClientCore, ClientStats, Completed, DROP_MAGIC, Now, Outgoing, PacketKind, RequestId};
pub use error::ClientError;
pub use gateways::MAX_OLD_GATEWAYS;
pub use nox_cover::{HealthConfig, Instant};
pub use nox_stream::{ResetCode, Target as StreamTarget};
#[cfg(feature = "shell")]
pub use proxy::{SocksConfig, StreamIo, StreamOpener, serve_socks};
#[cfg(feature = "shell")]
pub use rpc::{RpcConfig, rpc_error, serve_rpc};
#[cfg(feature = "shell")]
pub use shell::{Client, ClientHandle, MixStream, ReplyLinkStatus, Requester, SentPacket, ShellConfig};
pub use streams::{StreamConfig, StreamStatus};
