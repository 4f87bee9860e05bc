//! The packet geometry: every size in the format derives from one value.

use crate::error::SphinxError;

/// Bytes of the plaintext prefix: geometry tag (4) and key epoch (4).
pub const PREFIX_LEN: usize = 8;
/// Bytes of a compressed ristretto255 point (the ephemeral key α).
pub const ALPHA_LEN: usize = 32;
/// Bytes of one per-hop routing block (see `routing.rs`).
pub const ROUTING_BLOCK_LEN: usize = 64;
/// Bytes of the header MAC γ (BLAKE3 keyed hash, truncated).
pub const MAC_LEN: usize = 16;
/// Bytes of the proof-of-work nonce.
pub const POW_NONCE_LEN: usize = 8;
/// Bytes of zeros prefixed to every body plaintext; checked after the last
/// Lioness layer is removed. Under a strong PRP this is an authenticator.
pub const INTEGRITY_LEN: usize = 16;
/// Largest supported number of hops.
pub const MAX_HOPS: usize = 16;
/// Smallest body the format accepts: Lioness needs more than its 32-byte
/// right half, and the body carries the integrity prefix and padding.
const MIN_BODY_LEN: usize = 64;

/// Default packet size: 32 KiB, as in the NOX paper.
pub const DEFAULT_PACKET_LEN: usize = 32_768;
/// Default number of hops: entry, mix, exit.
pub const DEFAULT_HOPS: usize = 3;

/// How a hop re-randomises the ephemeral key α for the next hop, given the
/// blinding factor `b` it derived from its shared secret.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Blinding {
    /// `α' = b·α` (the NOX paper's eq. 6; Sphinx as published): two
    /// variable-base scalar multiplications per hop.
    Multiplicative,
    /// `α' = α + b·B` with `B` the ristretto255 base point: the second
    /// multiplication becomes a fixed-base one with precomputed tables,
    /// about half the cost. The client's secret for hop i+1 is `a_i + b_i`.
    /// Unlinkability holds for the same reason (see docs/spec/sphinx.md §4).
    #[default]
    Additive,
}

impl Blinding {
    fn label(self) -> &'static [u8] {
        match self {
            Blinding::Multiplicative => b"blind=mul",
            Blinding::Additive => b"blind=add",
        }
    }
}

/// The shape of every packet on a network: its total length and the number of
/// routing blocks in its header. Two nodes interoperate only if their
/// geometries are equal; a packet carries [`Geometry::tag`] so a node refuses
/// a packet of another geometry with [`SphinxError::WrongGeometry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    packet_len: usize,
    hops: usize,
    blinding: Blinding,
    tag: [u8; 4],
}

impl Default for Geometry {
    fn default() -> Self {
        // The default values are valid by construction.
        Self::build(DEFAULT_PACKET_LEN, DEFAULT_HOPS, Blinding::default())
    }
}

impl Geometry {
    /// A geometry of `packet_len` bytes with room for `hops` hops.
    pub fn new(packet_len: usize, hops: usize) -> Result<Self, SphinxError> {
        if hops == 0 || hops > MAX_HOPS {
            return Err(SphinxError::InvalidGeometry("hops must be between 1 and 16"));
        }
        if packet_len > u32::MAX as usize {
            return Err(SphinxError::InvalidGeometry("packet length must fit in 32 bits"));
        }
        let header_len = header_len_for(hops);
        if packet_len < header_len + MIN_BODY_LEN {
            return Err(SphinxError::InvalidGeometry("packet too short for its header"));
        }
        Ok(Self::build(packet_len, hops, Blinding::default()))
    }

    /// The same geometry with another blinding rule (a different network:
    /// the tag changes).
    pub fn with_blinding(self, blinding: Blinding) -> Self {
        Self::build(self.packet_len, self.hops, blinding)
    }

    fn build(packet_len: usize, hops: usize, blinding: Blinding) -> Self {
        let mut tag = [0u8; 4];
        tag.copy_from_slice(&Self::identifier_of(packet_len, hops, blinding)[..4]);
        Self { packet_len, hops, blinding, tag }
    }

    fn identifier_of(packet_len: usize, hops: usize, blinding: Blinding) -> [u8; 32] {
        let mut h = blake3::Hasher::new_derive_key("NOX sphinx v1 geometry");
        h.update(b"ristretto255|blake3|aes128ctr|lioness|");
        h.update(blinding.label());
        h.update(&(packet_len as u32).to_be_bytes());
        h.update(&(hops as u32).to_be_bytes());
        h.update(&(ROUTING_BLOCK_LEN as u32).to_be_bytes());
        h.update(&(MAC_LEN as u32).to_be_bytes());
        *h.finalize().as_bytes()
    }

    /// Total packet length in bytes.
    pub fn packet_len(&self) -> usize {
        self.packet_len
    }

    /// Maximum number of hops (routing blocks in the header).
    pub fn hops(&self) -> usize {
        self.hops
    }

    /// Header length: prefix, α, routing blocks, MAC and PoW nonce.
    pub fn header_len(&self) -> usize {
        header_len_for(self.hops)
    }

    /// Length of the routing field β.
    pub fn routing_len(&self) -> usize {
        self.hops * ROUTING_BLOCK_LEN
    }

    /// Length of the Lioness-encrypted body.
    pub fn body_len(&self) -> usize {
        self.packet_len - self.header_len()
    }

    /// Largest application payload one packet (or one SURB reply) carries:
    /// the body less the integrity prefix and at least one padding byte.
    pub fn payload_capacity(&self) -> usize {
        self.body_len() - INTEGRITY_LEN - 1
    }

    /// Stable 32-byte identifier: BLAKE3 over the primitive suite and every
    /// size parameter. Equal geometries have equal identifiers.
    pub fn identifier(&self) -> [u8; 32] {
        Self::identifier_of(self.packet_len, self.hops, self.blinding)
    }

    /// The blinding rule.
    pub fn blinding(&self) -> Blinding {
        self.blinding
    }

    /// The first four bytes of [`Geometry::identifier`], carried in every header.
    pub fn tag(&self) -> [u8; 4] {
        self.tag
    }

    /// Byte range of α within a packet.
    pub fn alpha_range(&self) -> core::ops::Range<usize> {
        PREFIX_LEN..PREFIX_LEN + ALPHA_LEN
    }
    /// Byte range of the routing field β within a packet.
    pub fn routing_range(&self) -> core::ops::Range<usize> {
        let start = PREFIX_LEN + ALPHA_LEN;
        start..start + self.routing_len()
    }
    /// Byte range of the MAC γ within a packet.
    pub fn mac_range(&self) -> core::ops::Range<usize> {
        let start = self.routing_range().end;
        start..start + MAC_LEN
    }
    /// Byte range of the proof-of-work nonce within a packet.
    pub fn nonce_range(&self) -> core::ops::Range<usize> {
        let start = self.mac_range().end;
        start..start + POW_NONCE_LEN
    }
}

const fn header_len_for(hops: usize) -> usize {
    PREFIX_LEN + ALPHA_LEN + hops * ROUTING_BLOCK_LEN + MAC_LEN + POW_NONCE_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes() {
        let g = Geometry::default();
        assert_eq!(g.packet_len(), 32_768);
        assert_eq!(g.header_len(), 256);
        assert_eq!(g.body_len(), 32_512);
        assert_eq!(Geometry::new(32_768, 5).unwrap().header_len(), 384);
        assert_eq!(g.nonce_range().end, g.header_len());
    }

    #[test]
    fn identifier_separates_parameters() {
        let a = Geometry::new(32_768, 3).unwrap();
        let b = Geometry::new(32_768, 4).unwrap();
        let c = Geometry::new(16_384, 3).unwrap();
        assert_ne!(a.identifier(), b.identifier());
        assert_ne!(a.tag(), c.tag());
        assert_ne!(a.tag(), a.with_blinding(Blinding::Multiplicative).tag());
        assert_eq!(a, Geometry::default());
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Geometry::new(32_768, 0).is_err());
        assert!(Geometry::new(32_768, MAX_HOPS + 1).is_err());
        assert!(Geometry::new(200, 3).is_err());
    }
}
