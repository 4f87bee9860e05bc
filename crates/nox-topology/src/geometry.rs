//! Which Sphinx geometry a document was built for: a client needs no setting of its own, it
//! finds the geometry whose identifier the document names.

use nox_sphinx::{Blinding, DEFAULT_PACKET_LEN, Geometry, Scheme};

use crate::descriptor::SignedDescriptor;
use crate::document::TopologyDocument;
use crate::error::TopologyError;

/// A scheme name that is not one of [`Scheme::ALL`]'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown Sphinx scheme {0:?}: expected ristretto255 (or classical), x25519-kem, mlkem768 or xwing")]
pub struct UnknownScheme(pub String);

/// Parses a scheme name as configured or typed ([`Scheme::from_name`]), with an error that
/// lists the known names.
pub fn parse_scheme(name: &str) -> Result<Scheme, UnknownScheme> {
    Scheme::from_name(name.trim()).ok_or_else(|| UnknownScheme(name.to_owned()))
}

/// The packet lengths a network may run at, in bytes: the powers of two from 2 KiB to 32 KiB
/// (docs/spec/sphinx.md §2.1, docs/benchmarks/packet-size.md). A client finds the length in the
/// document's geometry identifier, so it must be one of these.
pub const PACKET_LENS: [usize; 5] = [2048, 4096, 8192, 16_384, 32_768];

/// A packet length that is not one of [`PACKET_LENS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported packet length {0} B: expected 2048, 4096, 8192, 16384 or 32768")]
pub struct UnsupportedPacketLen(pub usize);

/// A packet length a network may run at: one of [`PACKET_LENS`] (checked when made).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PacketLen(usize);

impl PacketLen {
    /// The shipped length, [`DEFAULT_PACKET_LEN`].
    pub const DEFAULT: PacketLen = PacketLen(DEFAULT_PACKET_LEN);

    /// `bytes`, if it is one of [`PACKET_LENS`].
    pub fn new(bytes: usize) -> Result<Self, UnsupportedPacketLen> {
        if PACKET_LENS.contains(&bytes) { Ok(Self(bytes)) } else { Err(UnsupportedPacketLen(bytes)) }
    }

    /// The length in bytes.
    pub fn bytes(self) -> usize {
        self.0
    }
}

impl Default for PacketLen {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl core::fmt::Display for PacketLen {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl core::str::FromStr for PacketLen {
    type Err = UnsupportedPacketLen;

    /// A decimal byte count (`4096`) or KiB (`4KiB`, `4k`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let (digits, scale) = match lower.strip_suffix("kib").or_else(|| lower.strip_suffix('k')) {
            Some(d) => (d.trim().to_owned(), 1024),
            None => (lower.clone(), 1),
        };
        let bytes = digits.parse::<usize>().ok().and_then(|n| n.checked_mul(scale)).unwrap_or(0);
        Self::new(bytes)
    }
}

impl serde::Serialize for PacketLen {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0 as u64)
    }
}

impl<'de> serde::Deserialize<'de> for PacketLen {
    /// A byte count; one not in [`PACKET_LENS`] is refused with [`UnsupportedPacketLen`]'s text.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = u64::deserialize(deserializer)?;
        Self::new(usize::try_from(bytes).unwrap_or(usize::MAX)).map_err(serde::de::Error::custom)
    }
}

/// The geometry of a network of `scheme`: [`DEFAULT_PACKET_LEN`]-byte packets and `hops` hops
/// (the topology's layer count).
pub fn network_geometry(scheme: Scheme, hops: usize) -> Result<Geometry, nox_sphinx::SphinxError> {
    network_geometry_with_len(scheme, hops, PacketLen::DEFAULT)
}

/// The geometry of a network of `scheme` whose packets are `packet_len` bytes, with `hops` hops.
/// Errors as [`Geometry::with_scheme`]: below the scheme's floor ([`Geometry::min_packet_len`],
/// docs/spec/sphinx.md §2.2, e.g. X-Wing's 3,648 bytes at 3 hops against 2 KiB) with
/// `GeometryError::PacketTooShort`, whose text names the floor.
pub fn network_geometry_with_len(
    scheme: Scheme,
    hops: usize,
    packet_len: PacketLen,
) -> Result<Geometry, nox_sphinx::SphinxError> {
    Geometry::with_scheme(packet_len.bytes(), hops, scheme)
}

/// The geometries a document with `layers` layers may name: every [`Scheme`] (each blinding
/// rule for ristretto255) at each of [`PACKET_LENS`] with `layers` hops, where the header fits.
/// Empty for a layer count no geometry supports.
pub fn known_geometries(layers: u8) -> impl Iterator<Item = Geometry> {
    PACKET_LENS.into_iter().flat_map(move |len| {
        Scheme::ALL.into_iter().flat_map(move |scheme| {
            let base = network_geometry_with_len(scheme, usize::from(layers), PacketLen(len)).ok();
            let blindings: &[Blinding] =
                if scheme.is_kem() { &[Blinding::Additive] } else { &[Blinding::Additive, Blinding::Multiplicative] };
            blindings.iter().filter_map(move |b| base.map(|g| g.with_blinding(*b)))
        })
    })
}

/// The geometry `document` was built for: the one of [`known_geometries`] whose identifier is
/// the document's `geometry` field, provided every node's keys are of its scheme.
///
/// This reads the untrusted document: verify it under this geometry
/// ([`TopologyDocument::verify`]) before using it. The authority's signature covers the
/// `geometry` field, so a document altered to name another geometry fails verification.
///
/// Errors: [`TopologyError::UnknownGeometry`] (naming the identifier) or
/// [`TopologyError::KeyScheme`] for the first key of another scheme.
pub fn geometry_for(document: &TopologyDocument) -> Result<Geometry, TopologyError> {
    let geometry = known_geometries(document.layers)
        .find(|g| g.identifier() == document.geometry)
        .ok_or(TopologyError::UnknownGeometry { identifier: document.geometry, layers: document.layers })?;
    for node in &document.nodes {
        check_key_schemes(node, geometry.scheme())?;
    }
    Ok(geometry)
}

/// Refuses the first of `node`'s keys that is not of `expected`.
pub(crate) fn check_key_schemes(node: &SignedDescriptor, expected: Scheme) -> Result<(), TopologyError> {
    match node.descriptor.sphinx_keys.iter().find(|k| k.key.scheme() != expected) {
        Some(k) => {
            Err(TopologyError::KeyScheme { node: node.node_id(), epoch: k.epoch, found: k.key.scheme(), expected })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_blinding_and_length_is_known_once() {
        let all: Vec<Geometry> = known_geometries(3).collect();
        // Five lengths × five (scheme, blinding) pairs, less the post-quantum headers that do not
        // fit a 2 KiB packet (ML-KEM-768 and X-Wing: 3.5 KiB of header at 3 hops).
        assert_eq!(all.len(), PACKET_LENS.len() * (Scheme::ALL.len() + 1) - 2);
        assert!(all.contains(&Geometry::default()));
        for len in PACKET_LENS {
            assert!(all.iter().any(|g| g.packet_len() == len && g.scheme() == Scheme::Ristretto255), "{len}");
        }
        let ids: std::collections::HashSet<_> = all.iter().map(Geometry::identifier).collect();
        assert_eq!(ids.len(), all.len());
        assert_eq!(known_geometries(0).count(), 0);
        assert_eq!(known_geometries(17).count(), 0);
    }

    #[test]
    fn scheme_names_parse_with_a_clear_error() {
        for scheme in Scheme::ALL {
            assert_eq!(parse_scheme(scheme.name()), Ok(scheme));
        }
        assert_eq!(parse_scheme("classical"), Ok(Scheme::Ristretto255));
        let error = parse_scheme("kyber").unwrap_err().to_string();
        assert!(error.contains("\"kyber\"") && error.contains("xwing"), "{error}");
    }

    #[test]
    fn packet_lengths_parse_with_a_clear_error() {
        assert_eq!("4096".parse::<PacketLen>().map(PacketLen::bytes), Ok(4096));
        assert_eq!("4KiB".parse::<PacketLen>().map(PacketLen::bytes), Ok(4096));
        assert_eq!(" 2k".parse::<PacketLen>().map(PacketLen::bytes), Ok(2048));
        assert_eq!(PacketLen::default().bytes(), DEFAULT_PACKET_LEN);
        for bad in ["4000", "0", "65536", "1024", "four", ""] {
            let error = bad.parse::<PacketLen>().unwrap_err().to_string();
            assert!(error.contains("unsupported packet length") && error.contains("32768"), "{bad}: {error}");
        }
        let four: PacketLen = serde_json::from_str("4096").unwrap();
        assert_eq!(serde_json::to_string(&four).unwrap(), "4096");
        let error = serde_json::from_str::<PacketLen>("5000").unwrap_err().to_string();
        assert!(error.contains("unsupported packet length 5000"), "{error}");
    }

    #[test]
    fn a_length_is_part_of_the_identifier_a_document_names() {
        // 2 KiB, not the 4 KiB default (issue 32): another length than network_geometry's.
        let small = network_geometry_with_len(Scheme::Ristretto255, 3, PacketLen::new(2048).unwrap()).unwrap();
        assert_eq!(small.packet_len(), 2048);
        assert_ne!(small.identifier(), network_geometry(Scheme::Ristretto255, 3).unwrap().identifier());
        assert_eq!(known_geometries(3).filter(|g| g.identifier() == small.identifier()).count(), 1);
        // Below the scheme's floor (header + 64, docs/spec/sphinx.md §2.2) is the geometry's
        // typed error naming the floor, not a silent truncation or a later failure.
        for (scheme, layers, floor) in [(Scheme::XWing, 3, 3648), (Scheme::MlKem768, 3, 3552), (Scheme::XWing, 5, 6016)]
        {
            for len in [2048, 4096].into_iter().filter(|&l| l < floor) {
                let error = network_geometry_with_len(scheme, layers, PacketLen::new(len).unwrap()).unwrap_err();
                let nox_sphinx::SphinxError::InvalidGeometry(nox_sphinx::GeometryError::PacketTooShort { min, .. }) =
                    error
                else {
                    panic!("{error}")
                };
                assert_eq!(min, floor);
                assert!(error.to_string().contains(&format!("{floor}-byte floor")), "{error}");
            }
        }
        // Every scheme at 4 KiB and 3 layers is at or above its floor.
        for scheme in Scheme::ALL {
            assert!(network_geometry_with_len(scheme, 3, PacketLen::DEFAULT).is_ok(), "{scheme}");
        }
    }
}
