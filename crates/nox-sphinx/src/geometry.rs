//! The packet geometry: every size in the format derives from one value.

use crate::crypto::{CTX_GEOMETRY, kdf};
use crate::error::SphinxError;

/// Bytes of the plaintext prefix: geometry tag (4) and key epoch (4).
pub const PREFIX_LEN: usize = 8;
/// Bytes of a compressed ristretto255 point (the ephemeral key α of the
/// [`Scheme::Ristretto255`] geometries).
pub const ALPHA_LEN: usize = 32;
/// Bytes of one per-hop routing block (see `routing.rs`).
pub const ROUTING_BLOCK_LEN: usize = 64;
/// Bytes of the header MAC γ (BLAKE3 keyed hash, truncated).
pub const MAC_LEN: usize = 16;
/// Bytes of the proof-of-work nonce.
pub const POW_NONCE_LEN: usize = 8;
/// Bytes of zeros prefixed to every body plaintext; checked after the last
/// body layer is removed. Under a strong PRP this is an authenticator.
pub const INTEGRITY_LEN: usize = 16;
/// Largest supported number of hops.
pub const MAX_HOPS: usize = 16;
/// Smallest body the format accepts: HCTR2 needs at least 16 bytes, and the
/// body carries the integrity prefix and padding (docs/spec/sphinx.md §2).
pub const MIN_BODY_LEN: usize = 64;

/// Default packet size: 4 KiB (docs/spec/sphinx.md §2.1; the NOX paper's 32 KiB until
/// issue 32's testnet measurements, docs/benchmarks/packet-size.md).
pub const DEFAULT_PACKET_LEN: usize = 4096;
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

/// How a hop obtains its shared secret: the key-exchange scheme of a
/// geometry (docs/spec/sphinx.md §2, §4 and §13).
///
/// [`Scheme::Ristretto255`] is NOX's classical Sphinx: one ephemeral group
/// element in the header, re-blinded by every hop. The other three are KEM
/// Sphinx (as Katzenpost's): a KEM ciphertext cannot be re-blinded, so the
/// header carries one ciphertext per hop — the first in the ε field, the
/// others inside the encrypted routing field, each next to the routing block
/// of the hop before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// ristretto255 with per-hop blinding (see [`Blinding`]). 32-byte α.
    #[default]
    Ristretto255,
    /// X25519 used as a KEM (classical KEM Sphinx baseline): 32-byte
    /// ciphertexts and public keys.
    X25519Kem,
    /// ML-KEM-768 (FIPS 203): 1,088-byte ciphertexts, 1,184-byte public keys.
    MlKem768,
    /// X-Wing (draft-connolly-cfrg-xwing-kem-06): ML-KEM-768 + X25519 hybrid,
    /// 1,120-byte ciphertexts, 1,216-byte public keys.
    XWing,
}

impl Scheme {
    /// Every scheme, classical first.
    pub const ALL: [Scheme; 4] = [Scheme::Ristretto255, Scheme::X25519Kem, Scheme::MlKem768, Scheme::XWing];

    /// Bytes of the per-hop ephemeral field ε: α or a KEM ciphertext.
    pub const fn ephemeral_len(self) -> usize {
        match self {
            Scheme::Ristretto255 | Scheme::X25519Kem => 32,
            Scheme::MlKem768 => crate::kem::MLKEM768_CIPHERTEXT_LEN,
            Scheme::XWing => crate::kem::XWING_CIPHERTEXT_LEN,
        }
    }

    /// Bytes of a node's public key.
    pub const fn public_key_len(self) -> usize {
        match self {
            Scheme::Ristretto255 | Scheme::X25519Kem => 32,
            Scheme::MlKem768 => crate::kem::MLKEM768_PUBLIC_KEY_LEN,
            Scheme::XWing => crate::kem::XWING_PUBLIC_KEY_LEN,
        }
    }

    /// Whether the header carries one ciphertext per hop (KEM Sphinx).
    pub const fn is_kem(self) -> bool {
        !matches!(self, Scheme::Ristretto255)
    }

    /// Bytes a hop's routing block is followed by in β: the next hop's
    /// ciphertext for KEM schemes, nothing for the blinded scheme.
    pub const fn next_key_len(self) -> usize {
        if self.is_kem() { self.ephemeral_len() } else { 0 }
    }

    /// A stable one-byte code (in canonical encodings that carry keys of a
    /// KEM scheme, e.g. the topology's signed descriptors).
    pub const fn code(self) -> u8 {
        match self {
            Scheme::Ristretto255 => 0,
            Scheme::X25519Kem => 1,
            Scheme::MlKem768 => 2,
            Scheme::XWing => 3,
        }
    }

    /// The name used in configuration and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Scheme::Ristretto255 => "ristretto255",
            Scheme::X25519Kem => "x25519-kem",
            Scheme::MlKem768 => "mlkem768",
            Scheme::XWing => "xwing",
        }
    }

    /// Parses [`Scheme::name`] (also `classical` for the default scheme).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ristretto255" | "classical" => Some(Scheme::Ristretto255),
            _ => Self::ALL.into_iter().find(|s| s.name() == name),
        }
    }

    fn label(self) -> &'static [u8] {
        match self {
            Scheme::Ristretto255 => b"ristretto255|",
            Scheme::X25519Kem => b"kem=x25519|",
            Scheme::MlKem768 => b"kem=mlkem768|",
            Scheme::XWing => b"kem=xwing-06|",
        }
    }
}

impl core::fmt::Display for Scheme {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
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
    scheme: Scheme,
    blinding: Blinding,
    tag: [u8; 4],
}

impl Default for Geometry {
    fn default() -> Self {
        // The default values are valid by construction.
        Self::build(DEFAULT_PACKET_LEN, DEFAULT_HOPS, Scheme::default(), Blinding::default())
    }
}

/// Why [`Geometry::with_scheme`] refused its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// The hop count is 0 or above [`MAX_HOPS`].
    #[error("hops must be between 1 and {MAX_HOPS}, got {0}")]
    Hops(usize),
    /// The packet length does not fit the 32 bits the geometry identifier hashes.
    #[error("packet length must fit in 32 bits")]
    PacketLenOverflow,
    /// The packet is shorter than the scheme's floor ([`Geometry::min_packet_len`]): its header
    /// and the smallest body, the length of a SURB (docs/spec/sphinx.md §2.2).
    #[error(
        "packet_len {packet_len} is below the {min}-byte floor of scheme {scheme} with {hops} hops \
         ({header}-byte header + {MIN_BODY_LEN}-byte minimum body, the length of a SURB; docs/spec/sphinx.md §2.2)"
    )]
    PacketTooShort {
        /// The scheme.
        scheme: Scheme,
        /// The hop count.
        hops: usize,
        /// The refused packet length.
        packet_len: usize,
        /// The scheme's header length at `hops` hops.
        header: usize,
        /// The floor: the shortest packet length accepted.
        min: usize,
    },
}

impl Geometry {
    /// The shortest packet a geometry of `hops` hops and `scheme` accepts: its header and
    /// [`MIN_BODY_LEN`] (= the length of a SURB, [`crate::Surb::encoded_len`]). Any request with
    /// one SURB travels in packets of this length (split into FEC fragments, docs/spec/sphinx.md
    /// §2.2); [`Geometry::single_packet_request_len`] is the length from which it fits in one.
    /// `None` for a hop count out of range.
    pub const fn min_packet_len(hops: usize, scheme: Scheme) -> Option<usize> {
        if hops == 0 || hops > MAX_HOPS {
            return None;
        }
        Some(header_len_for(hops, scheme) + MIN_BODY_LEN)
    }

    /// The shortest packet in which a request carrying one SURB and an empty body fits in a single
    /// packet: header ‖ body (integrity prefix 16, padding ≥ 1, FEC fragment header 24, shard
    /// bytes rounded down to even, request header 3, the SURB). Below it such a request is split
    /// over several packets, and a stream message (one packet, its SURBs inside) carries none.
    /// `None` for a hop count out of range.
    pub const fn single_packet_request_len(hops: usize, scheme: Scheme) -> Option<usize> {
        if hops == 0 || hops > MAX_HOPS {
            return None;
        }
        let header = header_len_for(hops, scheme);
        let surb = 64 + header;
        // nox-message's request header (version, kind, SURB count) and nox-fec's fragment
        // header and shard alignment (checked against those crates in their tests).
        let message = 3 + surb;
        let shard = message + message % 2;
        Some(header + INTEGRITY_LEN + 1 + 24 + shard)
    }

    /// A geometry of `packet_len` bytes with room for `hops` hops.
    pub fn new(packet_len: usize, hops: usize) -> Result<Self, SphinxError> {
        Self::with_scheme(packet_len, hops, Scheme::default())
    }

    /// A geometry of `packet_len` bytes with room for `hops` hops, using
    /// `scheme` for the per-hop key exchange.
    pub fn with_scheme(packet_len: usize, hops: usize, scheme: Scheme) -> Result<Self, SphinxError> {
        let Some(min) = Self::min_packet_len(hops, scheme) else {
            return Err(SphinxError::InvalidGeometry(GeometryError::Hops(hops)));
        };
        if packet_len > u32::MAX as usize {
            return Err(SphinxError::InvalidGeometry(GeometryError::PacketLenOverflow));
        }
        if packet_len < min {
            let header = header_len_for(hops, scheme);
            return Err(SphinxError::InvalidGeometry(GeometryError::PacketTooShort {
                scheme,
                hops,
                packet_len,
                header,
                min,
            }));
        }
        Ok(Self::build(packet_len, hops, scheme, Blinding::default()))
    }

    /// The same geometry with another blinding rule (a different network:
    /// the tag changes). Blinding only applies to [`Scheme::Ristretto255`];
    /// KEM geometries ignore it and keep the default.
    pub fn with_blinding(self, blinding: Blinding) -> Self {
        let blinding = if self.scheme.is_kem() { Blinding::default() } else { blinding };
        Self::build(self.packet_len, self.hops, self.scheme, blinding)
    }

    fn build(packet_len: usize, hops: usize, scheme: Scheme, blinding: Blinding) -> Self {
        let mut tag = [0u8; 4];
        tag.copy_from_slice(&Self::identifier_of(packet_len, hops, scheme, blinding)[..4]);
        Self { packet_len, hops, scheme, blinding, tag }
    }

    fn identifier_of(packet_len: usize, hops: usize, scheme: Scheme, blinding: Blinding) -> [u8; 32] {
        let (packet_len, hops) = ((packet_len as u32).to_be_bytes(), (hops as u32).to_be_bytes());
        let (routing, mac) = ((ROUTING_BLOCK_LEN as u32).to_be_bytes(), (MAC_LEN as u32).to_be_bytes());
        // The body cipher is part of the suite: the change from Lioness to
        // HCTR2 (2026-11-26) gave every geometry a new identifier and tag.
        let suite: &[u8] = b"blake3|aes128ctr|hctr2|";
        // KEM schemes have no blinding: their identifier hashes no label for it.
        let blinding: &[u8] = if scheme.is_kem() { b"" } else { blinding.label() };
        let mut id = [0u8; 32];
        kdf(CTX_GEOMETRY, &[scheme.label(), suite, blinding, &packet_len, &hops, &routing, &mac], &mut id);
        id
    }

    /// Total packet length in bytes.
    pub fn packet_len(&self) -> usize {
        self.packet_len
    }

    /// Maximum number of hops (routing blocks in the header).
    pub fn hops(&self) -> usize {
        self.hops
    }

    /// Header length: prefix, ε, routing field, MAC and PoW nonce.
    pub fn header_len(&self) -> usize {
        header_len_for(self.hops, self.scheme)
    }

    /// Length of the routing field β: one routing block per hop and, for
    /// KEM schemes, the ciphertexts of hops 2..H.
    pub fn routing_len(&self) -> usize {
        routing_len_for(self.hops, self.scheme)
    }

    /// The key-exchange scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Bytes each hop shifts β by: its routing block and, for KEM schemes,
    /// the next hop's ciphertext.
    pub fn hop_shift(&self) -> usize {
        ROUTING_BLOCK_LEN + self.scheme.next_key_len()
    }

    /// Length of the HCTR2-enciphered body.
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
        Self::identifier_of(self.packet_len, self.hops, self.scheme, self.blinding)
    }

    /// The blinding rule.
    pub fn blinding(&self) -> Blinding {
        self.blinding
    }

    /// The first four bytes of [`Geometry::identifier`], carried in every header.
    pub fn tag(&self) -> [u8; 4] {
        self.tag
    }

    /// Byte range of the ephemeral field ε (α, or this hop's KEM
    /// ciphertext) within a packet.
    pub fn alpha_range(&self) -> core::ops::Range<usize> {
        PREFIX_LEN..PREFIX_LEN + self.scheme.ephemeral_len()
    }
    /// Byte range of the routing field β within a packet.
    pub fn routing_range(&self) -> core::ops::Range<usize> {
        let start = self.alpha_range().end;
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

const fn routing_len_for(hops: usize, scheme: Scheme) -> usize {
    hops * ROUTING_BLOCK_LEN + (hops - 1) * scheme.next_key_len()
}

const fn header_len_for(hops: usize, scheme: Scheme) -> usize {
    PREFIX_LEN + scheme.ephemeral_len() + routing_len_for(hops, scheme) + MAC_LEN + POW_NONCE_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes() {
        let g = Geometry::default();
        assert_eq!(g.packet_len(), 4096);
        assert_eq!(g.header_len(), 256);
        assert_eq!(g.body_len(), 3840);
        assert_eq!(Geometry::new(32_768, 3).unwrap().body_len(), 32_512);
        assert_eq!(Geometry::new(32_768, 5).unwrap().header_len(), 384);
        assert_eq!(g.nonce_range().end, g.header_len());
    }

    #[test]
    fn identifier_separates_parameters() {
        let a = Geometry::new(4096, 3).unwrap();
        let b = Geometry::new(4096, 4).unwrap();
        let c = Geometry::new(32_768, 3).unwrap();
        assert_ne!(a.identifier(), b.identifier());
        assert_ne!(a.tag(), c.tag());
        assert_ne!(a.tag(), a.with_blinding(Blinding::Multiplicative).tag());
        assert_eq!(a, Geometry::default());
    }

    #[test]
    fn kem_header_sizes() {
        // ε + 3 routing blocks + 2 further ciphertexts + prefix, MAC, nonce.
        let len = |scheme| Geometry::with_scheme(32_768, 3, scheme).unwrap().header_len();
        assert_eq!(len(Scheme::Ristretto255), 256);
        assert_eq!(len(Scheme::X25519Kem), 8 + 32 + 192 + 64 + 24);
        assert_eq!(len(Scheme::MlKem768), 8 + 1088 + 192 + 2 * 1088 + 24);
        assert_eq!(len(Scheme::XWing), 8 + 1120 + 192 + 2 * 1120 + 24);
        let tags: std::collections::HashSet<_> =
            Scheme::ALL.iter().map(|s| Geometry::with_scheme(32_768, 3, *s).unwrap().tag()).collect();
        assert_eq!(tags.len(), 4);
        // The default is classical, 3 hops, at DEFAULT_PACKET_LEN (4 KiB since issue 32).
        assert_eq!(Geometry::with_scheme(4096, 3, Scheme::Ristretto255).unwrap(), Geometry::default());
        for scheme in Scheme::ALL {
            assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
        }
        assert_eq!(Scheme::from_name("kyber"), None);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Geometry::new(32_768, 0).is_err());
        assert!(Geometry::new(32_768, MAX_HOPS + 1).is_err());
        assert!(Geometry::new(200, 3).is_err());
    }
}
