//! The clear-text preamble that opens every link, and the Noise prologue.

use crate::config::{CipherSuite, LinkKind};
use crate::error::LinkError;

/// `NOX1`: the first four bytes of every link.
pub const MAGIC: [u8; 4] = *b"NOX1";
/// The link protocol version this crate speaks. Version 3 is the hybrid
/// post-quantum handshake (`docs/spec/link.md` §1.3) with a client's
/// mailbox sent after message 2 under the hybrid keys (its mailbox record)
/// instead of in message 1. Version 2 (mailbox in message 1) and version 1
/// (classical X25519 only) are refused with
/// [`LinkError::UnsupportedVersion`]: there is nothing to downgrade to.
pub const VERSION: u8 = 3;
/// Preamble length: magic(4) ‖ version(1) ‖ kind(1) ‖ cipher(1) ‖ geometry id(32).
pub const PREAMBLE_LEN: usize = 4 + 1 + 1 + 1 + 32;

/// The initiator's clear-text preamble. It names the Noise pattern (through
/// the kind), the cipher and the Sphinx geometry, so a responder can refuse a
/// mismatch with a typed error before any public-key work. The exact bytes are
/// also the Noise prologue, so a preamble altered in flight fails the
/// handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preamble {
    /// Node (IK) or client (NK).
    pub kind: LinkKind,
    /// The AEAD of the Noise suite.
    pub cipher: CipherSuite,
    /// `Geometry::identifier()` of the initiator's network.
    pub geometry_id: [u8; 32],
}

impl Preamble {
    /// The wire bytes.
    pub fn encode(&self) -> [u8; PREAMBLE_LEN] {
        let mut out = [0u8; PREAMBLE_LEN];
        out[..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.kind.to_byte();
        out[6] = self.cipher.to_byte();
        out[7..].copy_from_slice(&self.geometry_id);
        out
    }

    /// Parses the wire bytes (structure only: no policy).
    pub fn decode(bytes: &[u8; PREAMBLE_LEN]) -> Result<Self, LinkError> {
        if bytes[..4] != MAGIC {
            return Err(LinkError::BadMagic);
        }
        if bytes[4] != VERSION {
            return Err(LinkError::UnsupportedVersion(bytes[4]));
        }
        let kind = LinkKind::from_byte(bytes[5])?;
        let cipher = CipherSuite::from_byte(bytes[6])?;
        let mut geometry_id = [0u8; 32];
        geometry_id.copy_from_slice(&bytes[7..]);
        Ok(Self { kind, cipher, geometry_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let p = Preamble { kind: LinkKind::Client, cipher: CipherSuite::ChaChaPoly, geometry_id: [7; 32] };
        let bytes = p.encode();
        assert_eq!(&bytes[..7], b"NOX1\x03\x02\x02");
        assert_eq!(Preamble::decode(&bytes), Ok(p));
        let mut b = bytes;
        b[0] = b'X';
        assert_eq!(Preamble::decode(&b), Err(LinkError::BadMagic));
        for old in [1, 2] {
            let mut b = bytes;
            b[4] = old;
            assert_eq!(Preamble::decode(&b), Err(LinkError::UnsupportedVersion(old)));
        }
        let mut b = bytes;
        b[5] = 9;
        assert_eq!(Preamble::decode(&b), Err(LinkError::UnknownKind(9)));
        let mut b = bytes;
        b[6] = 0;
        assert_eq!(Preamble::decode(&b), Err(LinkError::UnknownCipher(0)));
    }
}
