//! TLS for the WebSocket listener (`wss://`, docs/spec/link.md §5.3): a page served over
//! `https://` may only open `wss://` sockets, so an entry or gateway that browsers reach
//! terminates TLS itself (rustls, ring backend) instead of needing a proxy in front.
//!
//! TLS here only satisfies the browser: the link's own Noise handshake still authenticates the
//! node (its key is in the signed topology) and encrypts the records. The certificate is
//! therefore an operational matter, and it changes (ACME renewals every few weeks): a
//! [`TlsCertificate`] is read from PEM files and **reloaded when the files change**, without a
//! restart. A new certificate is used by the connections that arrive after the swap; links
//! already open keep the session they negotiated. A reload that fails (a half-written file, a
//! certificate whose key is not written yet) keeps the certificate in use and is retried when
//! either file changes again.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tracing::{info, warn};

use super::wait_shutdown;

/// Why a certificate or key could not be loaded. At start the node refuses to run with it; on
/// a reload the certificate in use is kept.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The certificate file holds no PEM `CERTIFICATE`, or one that does not parse.
    #[error("{path}: no valid PEM certificate")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no PEM private key (PKCS#8, PKCS#1 or SEC1), or one that does not
    /// parse.
    #[error("{path}: no valid PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is not one rustls can sign with (e.g. an unsupported algorithm or curve).
    #[error("{path}: the private key cannot be used: {source}")]
    UnusableKey {
        /// The file.
        path: PathBuf,
        /// rustls' reason.
        source: rustls::Error,
    },
    /// The key is not the key of the (first) certificate.
    #[error("the certificate in {cert} does not belong to the key in {key}: {source}")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls' reason.
        source: rustls::Error,
    },
    /// The TLS server configuration could not be built.
    #[error("TLS configuration: {0}")]
    Config(rustls::Error),
}

/// The crypto provider: ring (already in the tree; no aws-lc-rs C build).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Reads and checks a certificate chain (leaf first) and its private key from PEM files.
fn load_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(&read(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| TlsError::NoCertificate { path: cert.to_path_buf() })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate { path: cert.to_path_buf() });
    }
    let der = PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|_| TlsError::NoKey { path: key.to_path_buf() })?;
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|source| TlsError::UnusableKey { path: key.to_path_buf(), source })?;
    let pair = CertifiedKey::new(chain, signing);
    // Unlike `CertifiedKey::from_der`, an undecidable comparison is an error too: a node
    // must not serve a certificate it cannot show is its own.
    pair.keys_match().map_err(|source| TlsError::Mismatch {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        source,
    })?;
    Ok(pair)
}

/// A certificate and key read from PEM files, swapped in place when the files change: the
/// listener's [`ResolvesServerCert`]. Each TLS handshake takes the certificate current at its
/// start.
pub struct TlsCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// Modification times of (certificate, key) last read, successfully or not.
    seen: Mutex<(Option<SystemTime>, Option<SystemTime>)>,
}

impl fmt::Debug for TlsCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsCertificate").field("cert", &self.cert_path).field("key", &self.key_path).finish()
    }
}

impl TlsCertificate {
    /// Reads the certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, PKCS#1
    /// or SEC1) and checks that they belong together.
    pub fn load(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Arc<Self>, TlsError> {
        let (cert_path, key_path) = (cert.into(), key.into());
        let provider = provider();
        let seen = (modified(&cert_path), modified(&key_path));
        let pair = load_pair(&cert_path, &key_path, &provider)?;
        Ok(Arc::new(Self {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Arc::new(pair)),
            seen: Mutex::new(seen),
        }))
    }

    /// Reads the files again and, if they load, serves them from the next handshake on.
    /// On an error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let seen = (modified(&self.cert_path), modified(&self.key_path));
        *super::lock(&self.seen) = seen;
        let pair = load_pair(&self.cert_path, &self.key_path, &self.provider)?;
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(pair);
        Ok(())
    }

    /// [`Self::reload`] if either file's modification time changed since it was last read;
    /// `Ok(true)` when a new certificate is in use.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let now = (modified(&self.cert_path), modified(&self.key_path));
        if *super::lock(&self.seen) == now {
            return Ok(false);
        }
        self.reload().map(|()| true)
    }

    /// The certificate chain in use (leaf first).
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).cert.clone()
    }

    /// A TLS server configuration resolving to this certificate (TLS 1.2 and 1.3, ALPN
    /// `http/1.1`, no client certificates).
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// Checks the files every `period` until `shutdown` turns `true`, reloading them when they
    /// change (a failed reload is logged, and the old certificate kept).
    pub fn watch(
        self: Arc<Self>,
        period: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = wait_shutdown(&mut shutdown) => break,
                    _ = tick.tick() => match self.reload_if_changed() {
                        Ok(true) => info!(cert = %self.cert_path.display(), "WebSocket TLS certificate reloaded"),
                        Ok(false) => {}
                        Err(e) => warn!(error = %e, "WebSocket TLS certificate not reloaded; the old one stays in use"),
                    },
                }
            }
        })
    }
}

impl ResolvesServerCert for TlsCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
    }
}

/// A TLS client configuration for dialing `wss://` endpoints that trusts exactly the
/// certificates in the PEM file `ca_file` (a test or private CA), with the ring provider.
pub fn client_config_with_roots(ca_file: &Path) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_slice_iter(&read(ca_file)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| TlsError::NoCertificate { path: ca_file.to_path_buf() })?;
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(TlsError::NoCertificate { path: ca_file.to_path_buf() });
    }
    client_config(roots)
}

/// A TLS client configuration trusting `roots`.
pub fn client_config(roots: rustls::RootCertStore) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
