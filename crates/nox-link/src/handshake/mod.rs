//! The hybrid Noise handshakes as byte-in/byte-out state machines (no I/O).
//!
//! Initiator → responder: `preamble ‖ noise message 1` (39 + 1,280 bytes for
//! nodes, 39 + 1,264 for clients). Responder → initiator: `noise message 2`
//! (1,136 bytes). Message 1's payload is the initiator's ephemeral
//! ML-KEM-768 encapsulation key (1,184 bytes), followed for clients by the
//! 32-byte reply mailbox (all zero: none); message 2's payload is the ML-KEM
//! ciphertext (1,088 bytes). The transport keys mix the Noise split, the
//! ML-KEM shared secret and the handshake hash ([`crate::kem::combine`]).
//! Then records flow both ways.

mod initiator;
mod responder;
#[cfg(test)]
mod tests;

use snow::HandshakeState;
use snow::params::NoiseParams;
use zeroize::Zeroizing;

use crate::cipher::{FrameOpener, FrameSealer};
use crate::config::CipherSuite;
use crate::error::LinkError;
use crate::kem::{self, CONTEXT_I2R, CONTEXT_R2I, KEYGEN_SEED_LEN};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::Mailbox;
use crate::preamble::Preamble;

pub use initiator::Initiator;
pub use responder::{Hello, Responder};

/// Who is at the other end of an established link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remote {
    /// A node, authenticated by this static key (check it against the topology).
    Node(LinkPublicKey),
    /// An anonymous client (responder side of a `Noise_NK` link).
    Client,
}

/// An established link: the remote and the two directions.
pub struct Session {
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    sealer: FrameSealer,
    opener: FrameOpener,
}

impl Session {
    /// The authenticated remote.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }
    /// The reply mailbox a client registered (responder side of a client
    /// link that named one).
    pub fn mailbox(&self) -> Option<Mailbox> {
        self.mailbox
    }
    /// The cipher in use.
    pub fn cipher(&self) -> CipherSuite {
        self.cipher
    }
    /// The sending and receiving halves, to be driven independently.
    pub fn into_parts(self) -> (FrameSealer, FrameOpener) {
        (self.sealer, self.opener)
    }
}

/// Fixed randomness for one initiator, so that tests and the fuzz target can
/// build reproducible first flights. Never used by a node or client.
#[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
pub(crate) struct FixedRandomness {
    /// The X25519 ephemeral secret.
    pub x25519: [u8; 32],
    /// The ML-KEM-768 key generation seed.
    pub kem: [u8; KEYGEN_SEED_LEN],
}

fn handshake_state(
    preamble: &Preamble,
    prologue: &[u8],
    local: Option<&LinkKeypair>,
    remote: Option<&LinkPublicKey>,
    ephemeral: Option<&[u8; 32]>,
    initiator: bool,
) -> Result<HandshakeState, LinkError> {
    let params: NoiseParams = preamble.kind.protocol_name(preamble.cipher).parse().map_err(LinkError::from_snow)?;
    let mut b = snow::Builder::new(params).prologue(prologue).map_err(LinkError::from_snow)?;
    if let Some(local) = local {
        b = b.local_private_key(local.secret_bytes()).map_err(LinkError::from_snow)?;
    }
    if let Some(remote) = remote {
        b = b.remote_public_key(remote.as_bytes()).map_err(LinkError::from_snow)?;
    }
    if let Some(e) = ephemeral {
        b = b.fixed_ephemeral_key_for_testing_only(e);
    }
    if initiator { b.build_initiator() } else { b.build_responder() }.map_err(LinkError::from_snow)
}

/// What a finished handshake hands to [`into_session`].
struct Finished {
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    packet_len: usize,
}

/// The transport keys of a finished handshake: each direction's Noise split
/// key combined with the ML-KEM shared secret `ss` and the handshake hash.
fn into_session(mut hs: HandshakeState, initiator: bool, ss: &[u8; 32], done: Finished) -> Result<Session, LinkError> {
    if !hs.is_handshake_finished() {
        return Err(LinkError::Noise("handshake not finished".into()));
    }
    let h: [u8; 32] =
        hs.get_handshake_hash().try_into().map_err(|_| LinkError::Noise("handshake hash is not 32 bytes".into()))?;
    let (k1, k2) = hs.dangerously_get_raw_split();
    let (k1, k2) = (Zeroizing::new(k1), Zeroizing::new(k2));
    let i2r = kem::combine(CONTEXT_I2R, &k1, ss, &h);
    let r2i = kem::combine(CONTEXT_R2I, &k2, ss, &h);
    let (send, recv) = if initiator { (i2r, r2i) } else { (r2i, i2r) };
    let Finished { remote, mailbox, cipher, packet_len } = done;
    Ok(Session {
        remote,
        mailbox,
        cipher,
        sealer: FrameSealer::new(cipher, send, packet_len),
        opener: FrameOpener::new(cipher, recv, packet_len),
    })
}
