//! Who decides membership: a directory authority's key (`[topology] authority_key`), or the
//! on-chain node registry (`[chain]`, docs/spec/registry.md). With the registry, the directory
//! is an untrusted cache of self-signed descriptors: every refresh re-reads the registry at a
//! named block, checks its fingerprint, and verifies the document against that membership. An
//! RPC endpoint that is down or lies leaves the last verified membership in force. A node keeps
//! that snapshot on disk ([`REGISTRY_LAST_VERIFIED`]), so a restart while no endpoint answers
//! starts on it instead of waiting for the chain.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use nox_chain::{ChainConfig, RegistrySnapshot, RegistryView};
use nox_sphinx::Geometry;
use nox_topology::{TopologyDocument, VerifiedTopology, VerifyConfig, VerifyingKey};

use crate::runtime::NodeError;

/// What the chain view last saw (for metrics and status).
#[derive(Clone, Debug, Default)]
pub struct ChainStatus {
    /// Block of the last verified snapshot.
    pub block: u64,
    /// Its fingerprint.
    pub fingerprint: [u8; 32],
    /// Active registered nodes.
    pub registered: u64,
    /// Refreshes that failed (no endpoint gave a verified snapshot).
    pub errors: u64,
}

/// The registry view of a node, directory or client.
#[derive(Debug)]
pub struct ChainMembership {
    view: tokio::sync::Mutex<RegistryView>,
    status: Mutex<ChainStatus>,
    /// Where each newly verified snapshot is kept (nodes), if anywhere.
    keep: Option<PathBuf>,
    /// When the last read failed: for [`RETRY_AFTER_FAILURE`] after it, refreshes answer with
    /// the last verified snapshot at once instead of waiting on the endpoints again.
    failed_at: Mutex<Option<Instant>>,
}

/// After a failed registry read, how long refreshes use the last verified snapshot without
/// asking the endpoints again: during an RPC outage a reader waits on the endpoints at most once
/// per period, not once per topology fetch (a directory fetches every 2 s).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// The file, in a node's key directory, holding the last registry snapshot it verified.
pub const REGISTRY_LAST_VERIFIED: &str = "registry.last.json";

impl ChainMembership {
    /// Reads the first snapshot (a few tries: the chain may still be starting).
    pub async fn start(config: ChainConfig) -> Result<Arc<Self>, NodeError> {
        Self::start_keeping(config, None).await
    }

    /// [`ChainMembership::start`], keeping every newly verified snapshot in `keep`; when no
    /// endpoint answers at the first try and `keep` holds a snapshot whose node list matches its
    /// fingerprint, starts on that one (refreshes then continue as usual).
    pub async fn start_keeping(config: ChainConfig, keep: Option<PathBuf>) -> Result<Arc<Self>, NodeError> {
        let (chain_id, registry) = (config.chain_id, config.registry);
        let mut view = RegistryView::new(config).map_err(|e| NodeError::Chain(e.to_string()))?;
        let mut last = String::new();
        for attempt in 0..10 {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            match view.refresh().await {
                Ok(snapshot) => {
                    let this = Arc::new(Self {
                        view: tokio::sync::Mutex::new(view),
                        status: Mutex::default(),
                        keep,
                        failed_at: Mutex::new(None),
                    });
                    this.record(&snapshot);
                    return Ok(this);
                }
                Err(e) => last = e.to_string(),
            }
            let kept = keep.as_deref().filter(|p| p.exists()).map(|path| {
                std::fs::read(path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| RegistrySnapshot::from_json(&b, chain_id, registry).map_err(|e| e.to_string()))
            });
            match kept {
                Some(Ok(snapshot)) => {
                    tracing::warn!(error = %last, block = snapshot.block, "no registry endpoint answers; starting on the last verified membership");
                    let status = ChainStatus {
                        block: snapshot.block,
                        fingerprint: snapshot.fingerprint.0,
                        registered: snapshot.nodes.len() as u64,
                        errors: 1,
                    };
                    view.seed(snapshot);
                    return Ok(Arc::new(Self {
                        view: tokio::sync::Mutex::new(view),
                        status: Mutex::new(status),
                        keep,
                        failed_at: Mutex::new(Some(Instant::now())),
                    }));
                }
                Some(Err(error)) => tracing::warn!(%error, "the kept registry snapshot is unusable"),
                None => {}
            }
        }
        Err(NodeError::Chain(last))
    }

    fn record(&self, snapshot: &RegistrySnapshot) {
        let newer =
            self.status.lock().is_ok_and(|s| s.block != snapshot.block || s.fingerprint != snapshot.fingerprint.0);
        if let Some(path) = self.keep.as_deref().filter(|_| newer) {
            crate::directory_client::keep(path, snapshot.to_json().as_bytes(), "the verified registry snapshot");
        }
        if let Ok(mut status) = self.status.lock() {
            status.block = snapshot.block;
            status.fingerprint = snapshot.fingerprint.0;
            status.registered = snapshot.nodes.len() as u64;
        }
    }

    /// Refreshes the snapshot; on failure keeps (and returns) the last verified one.
    pub async fn refresh(&self) -> Arc<RegistrySnapshot> {
        let mut view = self.view.lock().await;
        let failed_recently =
            self.failed_at.lock().is_ok_and(|at| at.is_some_and(|at| at.elapsed() < RETRY_AFTER_FAILURE));
        if failed_recently && let Some(last) = view.last() {
            return last;
        }
        match view.refresh().await {
            Ok(snapshot) => {
                if let Ok(mut at) = self.failed_at.lock() {
                    *at = None;
                }
                self.record(&snapshot);
                snapshot
            }
            Err(error) => {
                tracing::warn!(%error, "registry refresh failed; keeping the last verified membership");
                if let Ok(mut at) = self.failed_at.lock() {
                    *at = Some(Instant::now());
                }
                if let Ok(mut status) = self.status.lock() {
                    status.errors += 1;
                }
                // `start` guarantees a first snapshot.
                view.last().unwrap_or_default()
            }
        }
    }

    /// The last snapshot, without refreshing.
    pub async fn last(&self) -> Arc<RegistrySnapshot> {
        self.view.lock().await.last().unwrap_or_default()
    }

    /// What the view last saw.
    pub fn status(&self) -> ChainStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The membership source of a node or client.
#[derive(Clone, Debug)]
pub enum Trust {
    /// A directory authority's Ed25519 key.
    Authority(VerifyingKey),
    /// The on-chain registry.
    Chain(Arc<ChainMembership>),
}

impl Trust {
    /// From `[topology] authority_key` and `[chain]`: the registry when `[chain]` is present
    /// (the authority key, if also given, is then not relied upon).
    /// With `keep`, the registry snapshot is kept there ([`ChainMembership::start_keeping`]).
    pub async fn from_config(
        authority_key: Option<&str>,
        chain: Option<&ChainConfig>,
        keep: Option<PathBuf>,
    ) -> Result<Self, NodeError> {
        match (chain, authority_key) {
            (Some(chain), _) => Ok(Self::Chain(ChainMembership::start_keeping(chain.clone(), keep).await?)),
            (None, Some(key)) => {
                let bytes: [u8; 32] = hex::decode(key.trim())
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| NodeError::Topology("authority_key must be 32 bytes of hex".into()))?;
                let key =
                    VerifyingKey::from_bytes(&bytes).map_err(|e| NodeError::Topology(format!("authority_key: {e}")))?;
                Ok(Self::Authority(key))
            }
            (None, None) => Err(NodeError::Topology("set [topology] authority_key or a [chain] section".into())),
        }
    }

    /// The verification rules now: for the registry, after a refresh (or the last verified
    /// membership if the refresh failed).
    pub async fn verify_config(&self, geometry: &Geometry) -> VerifyConfig {
        match self {
            Self::Authority(key) => VerifyConfig::new(*key, *geometry),
            Self::Chain(chain) => {
                let snapshot = chain.refresh().await;
                VerifyConfig::registry(Arc::new(snapshot.membership().0), *geometry)
            }
        }
    }

    /// Verifies `document` now, logging the nodes the registry does not vouch for.
    pub async fn verify(
        &self,
        document: &TopologyDocument,
        geometry: &Geometry,
        now_unix: u64,
    ) -> Result<VerifiedTopology, String> {
        let config = self.verify_config(geometry).await;
        let verified = document.verify(&config, now_unix).map_err(|e| e.to_string())?;
        for (node, reason) in verified.rejected() {
            tracing::warn!(node = %hex::encode(&node.0[..4]), %reason, "descriptor refused");
        }
        Ok(verified)
    }

    /// The chain view, if membership comes from the registry.
    pub fn chain(&self) -> Option<&Arc<ChainMembership>> {
        match self {
            Self::Chain(chain) => Some(chain),
            Self::Authority(_) => None,
        }
    }
}

/// Signs the node's epoch-key statements with its operator key (`[chain] operator_key_file`).
pub struct OperatorSigner {
    signer: nox_chain::PrivateKeySigner,
    chain_id: u64,
    registry: nox_chain::Address,
}

impl std::fmt::Debug for OperatorSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorSigner").field("operator", &self.signer.address()).finish_non_exhaustive()
    }
}

impl OperatorSigner {
    /// Loads the operator key: unlocked from the `[operator]` keystore when there is one, else
    /// read from `config.operator_key_file` (one of the two must be set).
    pub fn load(config: &ChainConfig, operator: Option<&crate::OperatorSection>) -> Result<Self, NodeError> {
        let signer = match operator {
            Some(section) => Self::unlock(section, |name| std::env::var(name).ok())?,
            None => {
                let path = config.operator_key_file.as_ref().ok_or_else(|| {
                    NodeError::Chain(
                        "no operator key: a node signs its epoch-key statements with its operator key; name its \
                         keystore in [operator] (keystore, password_file) or set [chain] operator_key_file"
                            .into(),
                    )
                })?;
                let text = zeroize::Zeroizing::new(
                    std::fs::read_to_string(path).map_err(|e| NodeError::Chain(format!("{}: {e}", path.display())))?,
                );
                nox_chain::deploy::signer(&text).map_err(|e| NodeError::Chain(format!("{}: {e}", path.display())))?
            }
        };
        Ok(Self { signer, chain_id: config.chain_id, registry: config.registry })
    }

    /// Unlocks the `[operator]` keystore with the passphrase from its file (first line) or from
    /// the environment variable it names (`env`).
    pub fn unlock(
        section: &crate::OperatorSection,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<nox_chain::PrivateKeySigner, NodeError> {
        let passphrase = match (&section.password_file, &section.password_env) {
            (Some(file), None) => {
                let text = zeroize::Zeroizing::new(
                    std::fs::read_to_string(file)
                        .map_err(|e| NodeError::Chain(format!("operator passphrase {}: {e}", file.display())))?,
                );
                zeroize::Zeroizing::new(text.lines().next().unwrap_or("").to_owned())
            }
            (None, Some(name)) => zeroize::Zeroizing::new(
                env(name).ok_or_else(|| NodeError::Chain(format!("operator passphrase: {name} is not set")))?,
            ),
            _ => return Err(NodeError::Chain("[operator]: give exactly one of password_file and password_env".into())),
        };
        if passphrase.is_empty() {
            return Err(NodeError::Chain("operator passphrase: empty".into()));
        }
        nox_chain::deploy::keystore_signer(&section.keystore, &passphrase).map_err(|e| NodeError::Chain(e.to_string()))
    }

    /// The operator address.
    pub fn address(&self) -> nox_chain::Address {
        self.signer.address()
    }

    /// `descriptor` with a statement for each of its keys.
    pub fn attach(&self, descriptor: nox_topology::SignedDescriptor) -> Result<nox_topology::SignedDescriptor, String> {
        nox_chain::slash::attach_statements(&self.signer, self.chain_id, self.registry, descriptor)
            .map_err(|e| e.to_string())
    }
}
