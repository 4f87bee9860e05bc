//! The hybrid Noise handshakes as byte-in/byte-out state machines (no I/O).
//!
//! Initiator → responder: `preamble ‖ noise message 1` (39 + 1,280 bytes for
//! nodes, 39 + 1,232 for clients). Responder → initiator: `noise message 2`
//! (1,136 bytes). Message 1's payload is the initiator's ephemeral
//! ML-KEM-768 encapsulation key (1,184 bytes); message 2's payload is the
//! ML-KEM ciphertext (1,088 bytes). The transport keys mix the Noise split,
//! the ML-KEM shared secret and the handshake hash ([`crate::kem::combine`]).
//!
//! On a client link the initiator then sends its **mailbox record**: the
//! 32-byte reply mailbox (all zero: none) sealed under the hybrid
//! initiator → responder key at nonce 0 (48 bytes), before any record. The
//! mailbox is thus protected by X25519 *and* ML-KEM-768, like the records,
//! and not by message 1's X25519-only keys. The responder's [`Session`] is
//! established (its halves work) only once that record has authenticated.
//! Then records flow both ways.

mod initiator;
mod responder;
// The handshake tests answer with the OS RNG (`Responder::new`, `accept`)
// next to the injected one.
#[cfg(all(test, feature = "os-rng"))]
mod tests;

use rand_core::CryptoRng;
use snow::HandshakeState;
use snow::params::NoiseParams;
use zeroize::Zeroizing;

use crate::cipher::{FrameOpener, FrameSealer};
use crate::config::CipherSuite;
use crate::error::LinkError;
use crate::kem::{self, CONTEXT_I2R, CONTEXT_R2I, KEYGEN_SEED_LEN};
use crate::keys::{LinkKeypair, LinkPublicKey};
use crate::mailbox::{MAILBOX_LEN, MAILBOX_RECORD_LEN, Mailbox};
use crate::preamble::Preamble;
use crate::rng::SeededResolver;

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

/// What a session still has to do before it is established: only client
/// links have anything, the mailbox record.
enum Tail {
    /// Established: records may flow.
    Done,
    /// Initiator of a client link: the mailbox (all zero: none) to seal and
    /// send before any record.
    Send(Zeroizing<[u8; MAILBOX_LEN]>),
    /// Responder of a client link: the mailbox record, being read.
    Receive { buf: Zeroizing<[u8; MAILBOX_RECORD_LEN]>, filled: usize },
    /// The mailbox record failed to authenticate: close the link.
    Failed(LinkError),
}

/// A link after the Noise handshake: the remote and the two directions.
///
/// A node link is established at once. A client link is established once
/// its mailbox record has gone through: the initiator appends it with
/// [`Session::write_mailbox_record`] and sends it right after reading
/// message 2; the responder reads exactly [`Session::mailbox_wanted`] bytes
/// into [`Session::feed_mailbox_record`] (with a time bound: the listener's
/// handshake timeout) before anything else. Until then the halves from
/// [`Session::into_parts`] refuse everything with
/// [`LinkError::MailboxRecordMissing`] (or the record's error): no packet is
/// accepted, nor sealed, on a link that is not established.
pub struct Session {
    remote: Remote,
    mailbox: Option<Mailbox>,
    cipher: CipherSuite,
    sealer: FrameSealer,
    opener: FrameOpener,
    tail: Tail,
}

impl Session {
    /// The authenticated remote.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }
    /// The reply mailbox a client registered: responder side of a client
    /// link whose mailbox record named one (`None` before that record).
    pub fn mailbox(&self) -> Option<Mailbox> {
        self.mailbox
    }
    /// The cipher in use.
    pub fn cipher(&self) -> CipherSuite {
        self.cipher
    }

    /// Whether records may flow: always for node links; for a client link,
    /// once its mailbox record was written (initiator) or received and
    /// authenticated (responder).
    pub fn is_established(&self) -> bool {
        matches!(self.tail, Tail::Done)
    }

    /// `Ok` once established; otherwise why not: the mailbox record's
    /// failure, or [`LinkError::MailboxRecordMissing`] while it is still
    /// awaited (what a responder reports when the stream ends or the time
    /// allowed runs out first).
    pub fn check_established(&self) -> Result<(), LinkError> {
        match &self.tail {
            Tail::Done => Ok(()),
            Tail::Failed(e) => Err(e.clone()),
            Tail::Send(_) | Tail::Receive { .. } => Err(LinkError::MailboxRecordMissing),
        }
    }

    /// Initiator of a client link: appends the mailbox record
    /// ([`crate::MAILBOX_RECORD_LEN`] bytes: the mailbox sealed under the
    /// hybrid initiator → responder key at nonce 0) to `out`, to be sent
    /// right after message 2 and before any record. Returns the bytes
    /// appended: the record's length the first time on a client initiator,
    /// 0 afterwards and on any other session.
    pub fn write_mailbox_record(&mut self, out: &mut Vec<u8>) -> Result<usize, LinkError> {
        let Tail::Send(mailbox) = &self.tail else { return self.check_established().map(|()| 0) };
        self.sealer.seal_message(&mailbox[..], out)?;
        self.tail = Tail::Done;
        Ok(MAILBOX_RECORD_LEN)
    }

    /// Responder of a client link: bytes of the mailbox record still to
    /// read (0 once established, on any other session, or after a failure).
    /// Reading at most this many never reads into the records that follow.
    pub fn mailbox_wanted(&self) -> usize {
        match &self.tail {
            Tail::Receive { filled, .. } => MAILBOX_RECORD_LEN - filled,
            Tail::Done | Tail::Send(_) | Tail::Failed(_) => 0,
        }
    }

    /// Responder of a client link: consumes at most
    /// [`Self::mailbox_wanted`] bytes of `input` and returns how many. When
    /// the record is complete it is opened (nonce 0; packet records follow
    /// from nonce 1): on success the link is established and
    /// [`Self::mailbox`] names the client's mailbox (`None` for all zero);
    /// otherwise [`LinkError::MailboxRecordAuth`], and the session stays
    /// failed. Consumes nothing on any other session.
    pub fn feed_mailbox_record(&mut self, input: &[u8]) -> Result<usize, LinkError> {
        let Tail::Receive { buf, filled } = &mut self.tail else { return self.check_established().map(|()| 0) };
        let n = (MAILBOX_RECORD_LEN - *filled).min(input.len());
        buf[*filled..*filled + n].copy_from_slice(&input[..n]);
        *filled += n;
        if *filled < MAILBOX_RECORD_LEN {
            return Ok(n);
        }
        let mut record = Zeroizing::new(**buf);
        let opened = self.opener.open_message(&mut record[..]);
        let mailbox = opened.ok().and_then(|len| <[u8; MAILBOX_LEN]>::try_from(record.get(..len)?).ok());
        match mailbox {
            Some(id) => {
                self.mailbox = Some(Mailbox(id)).filter(|m| !m.is_none());
                self.tail = Tail::Done;
                Ok(n)
            }
            None => {
                self.tail = Tail::Failed(LinkError::MailboxRecordAuth);
                Err(LinkError::MailboxRecordAuth)
            }
        }
    }

    /// The sending and receiving halves, to be driven independently. On a
    /// session that is not established (see [`Self::check_established`])
    /// both halves refuse everything with that error.
    pub fn into_parts(self) -> (FrameSealer, FrameOpener) {
        match self.check_established() {
            Ok(()) => (self.sealer, self.opener),
            Err(e) => (self.sealer.refusing(e.clone()), self.opener.refusing(e)),
        }
    }
}

/// Where one initiator's randomness comes from.
pub(crate) enum Randomness<'a> {
    /// The operating system (getrandom, through snow's default resolver).
    #[cfg(feature = "os-rng")]
    Os,
    /// The caller's RNG ([`crate::rng`]): hosts without an OS RNG (wasm32).
    Injected(&'a mut dyn CryptoRng),
    /// Fixed values: tests and the fuzz target only.
    #[cfg_attr(not(any(all(test, feature = "os-rng"), feature = "fuzzing")), allow(dead_code))]
    Fixed(&'a FixedRandomness),
}

/// Fixed randomness for one initiator, so that tests and the fuzz target can
/// build reproducible first flights. Never used by a node or client.
#[cfg_attr(not(any(all(test, feature = "os-rng"), feature = "fuzzing")), allow(dead_code))]
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
    resolver: Option<SeededResolver>,
) -> Result<HandshakeState, LinkError> {
    let params: NoiseParams = preamble.kind.protocol_name(preamble.cipher).parse().map_err(LinkError::from_snow)?;
    // Without an injected RNG, snow's default resolver: getrandom with the
    // `os-rng` feature; without it, no RNG, and the build fails (an error,
    // never a panic).
    let b = match resolver {
        Some(r) => snow::Builder::with_resolver(params, Box::new(r)),
        None => snow::Builder::new(params),
    };
    let mut b = b.prologue(prologue).map_err(LinkError::from_snow)?;
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
    cipher: CipherSuite,
    packet_len: usize,
    /// What the session must do before it is established.
    tail: Tail,
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
    let Finished { remote, cipher, packet_len, tail } = done;
    Ok(Session {
        remote,
        mailbox: None,
        cipher,
        sealer: FrameSealer::new(cipher, send, packet_len),
        opener: FrameOpener::new(cipher, recv, packet_len),
        tail,
    })
}
