#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cipher;
mod config;
mod error;
mod frame;
mod handshake;
mod kem;
mod keys;
mod mailbox;
mod preamble;
mod rng;
#[cfg(feature = "transport")]
pub mod transport;

pub use cipher::{FrameOpener, FrameSealer};
pub use config::{Accept, CipherSuite, LinkConfig, LinkKind, MAX_PACKET_LEN, RESPONSE_LEN};
pub use error::LinkError;
pub use frame::FrameDecoder;
pub use handshake::{Hello, Initiator, Remote, Responder, Session};
pub use kem::{KEM_CT_LEN, KEM_EK_LEN};
pub use keys::{LinkKeypair, LinkPublicKey};
pub use mailbox::{
    Downstream, MAILBOX_LEN, MAILBOX_RECORD_LEN, Mailbox, SURB_ID_LEN, encode_difficulty, encode_reply_in_place,
    parse_downstream,
};
pub use preamble::{PREAMBLE_LEN, Preamble};

/// Bytes of the AEAD tag that every record adds to its packet.
pub const TAG_LEN: usize = 16;
/// Largest Noise message (Noise spec §3): one record must fit in one message.
pub const NOISE_MAX_MESSAGE: usize = 65_535;
