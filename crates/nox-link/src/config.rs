//! Link parameters: geometry, cipher, link kinds.

use nox_sphinx::Geometry;

use crate::error::LinkError;
use crate::{NOISE_MAX_MESSAGE, TAG_LEN};

/// Largest packet one link record carries: one Noise message less its tag.
/// Geometries with longer packets are refused by [`LinkConfig::new`].
pub const MAX_PACKET_LEN: usize = NOISE_MAX_MESSAGE - TAG_LEN;

/// The AEAD of the Noise suite. Both are always compiled in; the default was
/// picked by measurement (`docs/benchmarks/link.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CipherSuite {
    /// AES-256-GCM (AES-NI + PCLMULQDQ where the CPU has them).
    #[default]
    AesGcm,
    /// ChaCha20-Poly1305: the better choice on CPUs without AES instructions.
    ChaChaPoly,
}

impl CipherSuite {
    /// Wire byte.
    pub fn to_byte(self) -> u8 {
        match self {
            CipherSuite::AesGcm => 0x01,
            CipherSuite::ChaChaPoly => 0x02,
        }
    }
    /// From the wire byte.
    pub fn from_byte(b: u8) -> Result<Self, LinkError> {
        match b {
            0x01 => Ok(CipherSuite::AesGcm),
            0x02 => Ok(CipherSuite::ChaChaPoly),
            other => Err(LinkError::UnknownCipher(other)),
        }
    }
    /// The Noise name of the cipher.
    pub fn noise_name(self) -> &'static str {
        match self {
            CipherSuite::AesGcm => "AESGCM",
            CipherSuite::ChaChaPoly => "ChaChaPoly",
        }
    }
}

/// Who is dialing, which fixes the Noise pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// Mix node to mix node: `Noise_IK`, both ends authenticated by their
    /// static keys from the topology.
    Node,
    /// Client to entry node: `Noise_NK`, the node is authenticated, the
    /// client stays anonymous (it has no static key).
    Client,
}

impl LinkKind {
    /// Wire byte.
    pub fn to_byte(self) -> u8 {
        match self {
            LinkKind::Node => 0x01,
            LinkKind::Client => 0x02,
        }
    }
    /// From the wire byte.
    pub fn from_byte(b: u8) -> Result<Self, LinkError> {
        match b {
            0x01 => Ok(LinkKind::Node),
            0x02 => Ok(LinkKind::Client),
            other => Err(LinkError::UnknownKind(other)),
        }
    }
    /// The Noise handshake pattern.
    pub fn pattern(self) -> &'static str {
        match self {
            LinkKind::Node => "IK",
            LinkKind::Client => "NK",
        }
    }
    /// Length of the initiator's Noise message (message 1).
    pub fn first_message_len(self) -> usize {
        match self {
            // e(32) ‖ enc(s)(32+16) ‖ enc(ek)(1184+16)
            LinkKind::Node => 32 + 48 + crate::KEM_EK_LEN + 16,
            // e(32) ‖ enc(ek)(1184+16)
            LinkKind::Client => 32 + crate::KEM_EK_LEN + 16,
        }
    }
    /// Length of the initiator's handshake payload: the ephemeral ML-KEM-768
    /// encapsulation key, for both kinds. (A client's mailbox is not in
    /// message 1, which only X25519 protects: it follows message 2 in the
    /// mailbox record, [`crate::MAILBOX_RECORD_LEN`] bytes under the hybrid
    /// keys.)
    pub fn first_payload_len(self) -> usize {
        crate::KEM_EK_LEN
    }
    /// Full Noise protocol name for `cipher`.
    pub fn protocol_name(self, cipher: CipherSuite) -> String {
        format!("Noise_{}_25519_{}_BLAKE2s", self.pattern(), cipher.noise_name())
    }
}

/// Length of the responder's Noise message (message 2) for both patterns:
/// e(32) ‖ enc(ML-KEM-768 ciphertext)(1088+16).
pub const RESPONSE_LEN: usize = 32 + crate::KEM_CT_LEN + 16;

/// What a link carries: packets of one geometry, sealed with one cipher
/// (the cipher this end dials with; see [`Accept`] for what it answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    geometry: Geometry,
    cipher: CipherSuite,
}

impl LinkConfig {
    /// Links for `geometry` with the default cipher. Refuses geometries whose
    /// packet does not fit in one Noise message ([`MAX_PACKET_LEN`]).
    pub fn new(geometry: Geometry) -> Result<Self, LinkError> {
        if geometry.packet_len() > MAX_PACKET_LEN {
            return Err(LinkError::PacketTooLarge { packet_len: geometry.packet_len(), max: MAX_PACKET_LEN });
        }
        Ok(Self { geometry, cipher: CipherSuite::default() })
    }

    /// The same links, dialed with another cipher.
    pub fn with_cipher(self, cipher: CipherSuite) -> Self {
        Self { cipher, ..self }
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    /// The cipher this end dials with.
    pub fn cipher(&self) -> CipherSuite {
        self.cipher
    }
    /// Plaintext bytes per record: one Sphinx packet.
    pub fn packet_len(&self) -> usize {
        self.geometry.packet_len()
    }
    /// Bytes per record on the wire: packet plus tag.
    pub fn record_len(&self) -> usize {
        self.geometry.packet_len() + TAG_LEN
    }
}

/// What a responder accepts from initiators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accept {
    /// Accept anonymous client links (`Noise_NK`): entry nodes only.
    pub clients: bool,
    /// Accept AES-GCM links.
    pub aes_gcm: bool,
    /// Accept ChaCha20-Poly1305 links.
    pub chacha_poly: bool,
}

impl Default for Accept {
    /// Nodes only, both ciphers.
    fn default() -> Self {
        Self { clients: false, aes_gcm: true, chacha_poly: true }
    }
}

impl Accept {
    pub(crate) fn cipher(&self, c: CipherSuite) -> bool {
        match c {
            CipherSuite::AesGcm => self.aes_gcm,
            CipherSuite::ChaChaPoly => self.chacha_poly,
        }
    }
}
