#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod admission;
pub mod chain_preset;
pub mod chaos;
mod config;
mod cover;
mod directory_client;
mod durability;
mod egress;
mod exit;
mod gate;
mod ingress;
mod metrics;
pub mod observe;
mod pipeline;
mod replay_store;
mod runtime;
mod trust;
pub mod watch;
pub mod watcher;

pub use admission::{
    AdaptivePow, AdmissionError, DIFFICULTY_UPDATE_PERIOD, IngestAdmission, difficulty_greeting, run_adaptive_pow,
};
pub use chaos::ChaosSection;
pub use config::{
    ConfigError, DEFAULT_MEAN_DELAY_MS, MixingSection, NodeConfig, NodeSection, OperatorSection, PipelineSection,
    ReplaySection, TopologySection,
};
pub use cover::{CoverSection, DROP_MAGIC, LOOP_MAGIC};
pub use directory_client::{LAST_VERIFIED, Publisher, SharedTopology, initial_topology};
pub use durability::{GroupCommitConfig, NotDurable, SyncThread, TagJournal};
pub use egress::{ForwardRefused, forward_link};
pub use exit::{
    EchoOnly, ExitFront, ExitHandler, ExitMetrics, LinkKeyLookup, ReplyPolicy, ReplySender, deliver_to_mailbox,
};
pub use gate::{AdmissionGate, AdmissionSection};
pub use ingress::from_link;
pub use metrics::NodeMetrics;
pub use observe::{ObserveSection, Observer};
pub use pipeline::{Egress, Inbound, Origin, Pipeline, PipelineConfig, PipelineHandles};
pub use replay_store::{DirStorage, MemStorage, PendingTag, ReplayStateError, ReplayStorage, ReplayStore};
pub use runtime::{NodeError, load_topology, load_topology_with, run, run_with};
pub use trust::{ChainMembership, ChainStatus, OperatorSigner, REGISTRY_LAST_VERIFIED, Trust};
