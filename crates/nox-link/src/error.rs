//! Errors of the sans-I/O core.

use crate::config::{CipherSuite, LinkKind};

/// Why a handshake or a record was refused. Every variant closes the link;
/// none carries key material or addresses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The geometry's packet does not fit in one Noise message with its tag.
    #[error("packet length {packet_len} exceeds the link maximum {max} (one Noise message per packet)")]
    PacketTooLarge {
        /// The geometry's packet length.
        packet_len: usize,
        /// [`crate::MAX_PACKET_LEN`].
        max: usize,
    },
    /// The stream does not start with `NOX1`.
    #[error("not a NOX link (bad magic)")]
    BadMagic,
    /// A link protocol version this build does not speak.
    #[error("unsupported link protocol version {0}")]
    UnsupportedVersion(u8),
    /// An unknown link kind byte.
    #[error("unknown link kind {0:#04x}")]
    UnknownKind(u8),
    /// A known link kind this listener does not accept (e.g. clients on a mix-only port).
    #[error("link kind {0:?} not accepted here")]
    KindNotAccepted(LinkKind),
    /// An unknown cipher byte.
    #[error("unknown cipher {0:#04x}")]
    UnknownCipher(u8),
    /// A known cipher this listener does not accept.
    #[error("cipher {0:?} not accepted here")]
    CipherNotAccepted(CipherSuite),
    /// The peer built its link for another Sphinx geometry.
    #[error("peer uses another Sphinx geometry")]
    WrongGeometry,
    /// A handshake message failed to decrypt: wrong static key, wrong
    /// prologue, or tampering.
    #[error("handshake message failed to authenticate")]
    HandshakeAuth,
    /// Any other Noise failure (malformed message, bad key length).
    #[error("noise handshake error: {0}")]
    Noise(String),
    /// A handshake message of the wrong length (e.g. the 48-byte answer of
    /// a classical-only version 1 responder).
    #[error("handshake message has {got} bytes, expected {expected}")]
    HandshakeLength {
        /// Length received.
        got: usize,
        /// Length of this protocol version's message.
        expected: usize,
    },
    /// An authenticated handshake message whose payload has the wrong
    /// length for its link kind.
    #[error("handshake payload has {got} bytes, expected {expected}")]
    HandshakePayload {
        /// Length received.
        got: usize,
        /// Length this protocol version requires.
        expected: usize,
    },
    /// The initiator's ML-KEM-768 encapsulation key fails the FIPS 203
    /// modulus check (a coefficient not below q).
    #[error("invalid ML-KEM-768 encapsulation key")]
    KemKey,
    /// The handshake object was used after it finished or failed.
    #[error("handshake already finished or failed")]
    HandshakeSpent,
    /// A packet of the wrong length was given to seal.
    #[error("packet has {got} bytes, the link carries exactly {expected}")]
    WrongLength {
        /// Length given.
        got: usize,
        /// The geometry's packet length.
        expected: usize,
    },
    /// A record failed to authenticate: garbage, tampering or desynchronised
    /// nonces. The link must be closed.
    #[error("record failed to authenticate")]
    Decrypt,
    /// The stream ended inside a record.
    #[error("stream ended {buffered} bytes into a {record_len}-byte record")]
    Truncated {
        /// Bytes of the partial record.
        buffered: usize,
        /// Full record length.
        record_len: usize,
    },
    /// 2^64 − 1 records sent or received on one link (Noise forbids reuse).
    #[error("nonce space exhausted")]
    NonceExhausted,
    /// Client link: the mailbox record (the client's first transport
    /// message, sealed under the hybrid key) failed to authenticate:
    /// tampering, garbage, or a record sent in its place. The link must be
    /// closed.
    #[error("client mailbox record failed to authenticate")]
    MailboxRecordAuth,
    /// Client link not established: its mailbox record was not sent
    /// (initiator) or has not been received (responder) — the stream ended
    /// or the handshake timed out first, or a half of the link was used
    /// before it.
    #[error("client link not established: no mailbox record")]
    MailboxRecordMissing,
    /// A record a node sent down a client link is not a valid downstream
    /// frame (`docs/spec/link.md` §2.4).
    #[error("malformed downstream frame: {0}")]
    MalformedDownstream(&'static str),
}

impl LinkError {
    pub(crate) fn from_snow(e: snow::Error) -> Self {
        match e {
            snow::Error::Decrypt => LinkError::HandshakeAuth,
            other => LinkError::Noise(other.to_string()),
        }
    }
}
