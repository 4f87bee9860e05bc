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

/// The geometry of a network of `scheme`: [`DEFAULT_PACKET_LEN`]-byte packets and `hops` hops
/// (the topology's layer count).
pub fn network_geometry(scheme: Scheme, hops: usize) -> Result<Geometry, nox_sphinx::SphinxError> {
    Geometry::with_scheme(DEFAULT_PACKET_LEN, hops, scheme)
}

/// The geometries a document with `layers` layers may name: every [`Scheme`] (each blinding
/// rule for ristretto255) at [`DEFAULT_PACKET_LEN`] bytes with `layers` hops. Empty for a layer
/// count no geometry supports.
pub fn known_geometries(layers: u8) -> impl Iterator<Item = Geometry> {
    Scheme::ALL.into_iter().flat_map(move |scheme| {
        let base = network_geometry(scheme, usize::from(layers)).ok();
        let blindings: &[Blinding] =
            if scheme.is_kem() { &[Blinding::Additive] } else { &[Blinding::Additive, Blinding::Multiplicative] };
        blindings.iter().filter_map(move |b| base.map(|g| g.with_blinding(*b)))
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
    fn every_scheme_and_blinding_is_known_once() {
        let all: Vec<Geometry> = known_geometries(3).collect();
        assert_eq!(all.len(), Scheme::ALL.len() + 1);
        assert!(all.contains(&Geometry::default()));
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
}
