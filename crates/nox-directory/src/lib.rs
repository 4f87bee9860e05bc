#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod config;
pub mod http;
mod registry;
mod server;

pub use client::{
    ClientError, Mirrors, NO_DOCUMENT_YET, NetworkParameters, fetch_document, fetch_document_blocking,
    fetch_document_from, fetch_parameters, get_blocking, parse_url, upload_descriptor,
};
pub use config::{ConfigError, DirectoryConfig, Genesis, ScheduleSection, resolve_schedule};
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
    run_with_admission(config, geometry, shutdown, None).await
}

/// Writes each new document the registry issues to `file` (checked every second; a temporary
/// file renamed over it, so a crash leaves the previous one or the new one), for a restart of a
/// directory that started empty.
async fn keep_documents(
    registry: std::sync::Arc<std::sync::Mutex<Registry>>,
    file: std::path::PathBuf,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut kept = None;
    loop {
        let latest = registry.lock().ok().and_then(|r| {
            let current = r.current()?;
            (kept != Some(current.issued_at())).then(|| (current.issued_at(), current.document().to_json()))
        });
        if let Some((issued_at, json)) = latest {
            let temp = file.with_extension("tmp");
            let written = json
                .map_err(|e| e.to_string())
                .and_then(|json| std::fs::write(&temp, json).map_err(|e| e.to_string()))
                .and_then(|()| std::fs::rename(&temp, &file).map_err(|e| e.to_string()));
            match written {
                Ok(()) => kept = Some(issued_at),
                Err(error) => tracing::warn!(%error, path = %file.display(), "cannot keep the last document"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// [`run`], with the admitted identities replaced whenever `admission` changes (the caller
/// feeds it from the node registry; see [`Registry::set_admitted`]).
pub async fn run_with_admission(
    config: DirectoryConfig,
    geometry: nox_sphinx::Geometry,
    shutdown: tokio::sync::watch::Receiver<bool>,
    admission: Option<tokio::sync::watch::Receiver<Vec<[u8; 32]>>>,
) -> Result<(), DirectoryError> {
    if admission.is_none() && !config.admits_without_feed() {
        return Err(ConfigError::Invalid(
            "no initial_document and no `admitted` list: nobody could ever be admitted (list the nodes' identity keys in `admitted`, or run with --chain)".into(),
        )
        .into());
    }
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
    if let Some(file) = config.document_file() {
        tokio::spawn(keep_documents(server.registry(), file, shutdown.clone()));
    }
    if let Some(mut admission) = admission {
        let registry = server.registry();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let admitted = admission.borrow_and_update().clone();
                if let Ok(mut registry) = registry.lock() {
                    let now =
                        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                    match registry.set_admitted(admitted, now) {
                        Ok(true) => tracing::info!("admitted identities updated"),
                        Ok(false) => {}
                        Err(error) => tracing::warn!(%error, "admitted identities updated; document not re-issued"),
                    }
                }
                tokio::select! {
                    changed = admission.changed() => if changed.is_err() { return },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
    }
    server.serve(shutdown).await?;
    Ok(())
}
