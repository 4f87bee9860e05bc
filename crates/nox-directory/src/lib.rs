#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod config;
pub mod http;
mod registry;
mod server;

pub use client::{
    ClientError, Mirrors, fetch_document, fetch_document_blocking, get_blocking, parse_url, upload_descriptor,
};
pub use config::{ConfigError, DirectoryConfig};
pub use registry::{Accepted, Refusal, Registry};
pub use server::{Counters, DirectoryServer, Limits};

/// Why `nox directory` stopped.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The configuration, key or initial document was refused.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// Sockets or the address file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs the directory described by `config` until `shutdown` turns true.
pub async fn run(
    config: DirectoryConfig,
    geometry: nox_sphinx::Geometry,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), DirectoryError> {
    let registry = config.registry(geometry)?;
    let limits = config.limits();
    let server = DirectoryServer::bind(config.listen, registry, limits).await?;
    let addr = server.local_addr()?;
    if let Some(file) = &config.addr_file {
        let temp = file.with_extension("tmp");
        std::fs::write(&temp, addr.to_string())?;
        std::fs::rename(&temp, file)?;
    }
    tracing::info!(%addr, "directory serving");
    server.serve(shutdown).await?;
    Ok(())
}
