#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod builder;
mod descriptor;
mod document;
mod encoding;
mod error;
mod geometry;
mod json;
mod layer;
mod membership;
mod schedule;
mod verified;

pub use builder::DocumentBuilder;
pub use descriptor::{
    EpochKey, LinkPublicKey, MAX_EPOCH_KEYS, NodeDescriptor, OperatorStatement, SignedDescriptor, check_address,
};
pub use document::{MAX_DOCUMENT_BYTES, MAX_NODES, TopologyDocument, Trust, VERSION, VerifyConfig};
pub use encoding::{DESCRIPTOR_CONTEXT, DOCUMENT_CONTEXT, FINGERPRINT_CONTEXT, WEBSOCKET_TAG, WEBSOCKET_TLS_TAG};
pub use error::{PathError, ScheduleError, TopologyError};
pub use geometry::{
    PACKET_LENS, PacketLen, UnknownScheme, UnsupportedPacketLen, geometry_for, known_geometries, network_geometry,
    network_geometry_with_len, parse_scheme,
};
pub use json::MAX_DESCRIPTOR_BYTES;
pub use layer::{LAYER_CONTEXT, Layer, LayerCount, MAX_LAYERS, NODE_ID_CONTEXT, node_id_of};
pub use membership::{Member, Membership, StatementCheck, Unvouched};
pub use schedule::{
    DEFAULT_EPOCH_LENGTH, DEFAULT_OVERLAP, DEFAULT_PUBLISH_AHEAD, EpochSchedule, MAX_PUBLISH_AHEAD, unix_seconds,
};
pub use verified::{Fingerprint, Sender, TopologyNode, VerifiedTopology};

/// The Ed25519 types used for identity and authority keys (re-exported so callers need not
/// depend on a matching `ed25519-dalek` version).
pub use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
