//! A document names its geometry: `geometry_for` finds it among the known ones (so a client
//! needs no setting), and verification refuses keys of another scheme.

mod common;

use common::{EPOCH, ISSUED, key32, layers, schedule};
use nox_sphinx::{Blinding, DEFAULT_PACKET_LEN, Geometry, Scheme, SecretKey};
use nox_topology::{
    DocumentBuilder, EpochKey, LinkPublicKey, NodeDescriptor, SignedDescriptor, SigningKey, TopologyDocument,
    TopologyError, VerifyConfig, geometry_for,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn geometry(scheme: Scheme) -> Geometry {
    Geometry::with_scheme(DEFAULT_PACKET_LEN, 3, scheme).unwrap()
}

/// One node per layer, each with keys of `scheme` for EPOCH and EPOCH + 1.
fn nodes(seed: u64, scheme: Scheme) -> Vec<SignedDescriptor> {
    nodes_with(seed, |_, _| scheme)
}

/// One node per layer; the key of layer `l`, epoch `e` is of `scheme_of(l, e)`.
fn nodes_with(seed: u64, scheme_of: impl Fn(usize, u32) -> Scheme) -> Vec<SignedDescriptor> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut by_layer: [Option<SignedDescriptor>; 3] = [None, None, None];
    let mut port = 9000;
    while by_layer.iter().any(Option::is_none) {
        let identity = SigningKey::from_bytes(&key32(&mut rng));
        let layer = layers().assign(&nox_topology::node_id_of(&identity.verifying_key())).index();
        let keys = (EPOCH..=EPOCH + 1)
            .map(|epoch| EpochKey {
                epoch,
                key: SecretKey::generate_for(scheme_of(layer, epoch), &mut rng).public_key(),
            })
            .collect();
        port += 1;
        let address = format!("127.0.0.1:{port}").parse().unwrap();
        let link = LinkPublicKey::from_secret(&key32(&mut rng));
        let descriptor = NodeDescriptor::new(identity.verifying_key(), link, address, layers(), 0, keys);
        by_layer[layer].get_or_insert(descriptor.sign(&identity).unwrap());
    }
    by_layer.into_iter().flatten().collect()
}

fn signed(geometry: Geometry, nodes: Vec<SignedDescriptor>, authority: &SigningKey) -> TopologyDocument {
    let mut document = TopologyDocument {
        version: nox_topology::VERSION,
        geometry: geometry.identifier(),
        schedule: schedule(),
        layers: 3,
        issued_at: ISSUED,
        nodes,
        signature: nox_topology::Signature::from_bytes(&[0; 64]),
    };
    document.sign(authority);
    document
}

#[test]
fn the_document_names_its_geometry_for_every_scheme() {
    let authority = SigningKey::from_bytes(&[1; 32]);
    for (i, scheme) in Scheme::ALL.into_iter().enumerate() {
        let mut builder = DocumentBuilder::new(geometry(scheme), schedule());
        for node in nodes(i as u64, scheme) {
            builder.add_node(node);
        }
        let built = builder.sign(&authority, ISSUED).unwrap();
        assert_eq!(built.geometry(), &geometry(scheme));
        // Through the JSON a client reads: the geometry comes from the document alone.
        let document = TopologyDocument::from_json(built.document().to_json().unwrap().as_bytes()).unwrap();
        let found = geometry_for(&document).unwrap();
        assert_eq!((found, found.scheme()), (geometry(scheme), scheme));
        let verified = document.verify(&VerifyConfig::new(authority.verifying_key(), found), ISSUED).unwrap();
        assert_eq!(verified.geometry().scheme(), scheme);
    }
    // The other blinding rule of the classical scheme is a known geometry too.
    let multiplicative = geometry(Scheme::Ristretto255).with_blinding(Blinding::Multiplicative);
    let document = signed(multiplicative, nodes(9, Scheme::Ristretto255), &authority);
    assert_eq!(geometry_for(&document).unwrap(), multiplicative);
}

#[test]
fn an_unknown_geometry_is_refused_by_name() {
    let authority = SigningKey::from_bytes(&[2; 32]);
    // A supported length other than the default is found (the client reads it from here).
    let supported = Geometry::new(2048, 3).unwrap();
    let document = signed(supported, nodes(10, Scheme::Ristretto255), &authority);
    assert_eq!(geometry_for(&document).unwrap(), supported);
    // A length outside PACKET_LENS: a geometry, but not one a client of this code knows.
    let small = Geometry::new(3072, 3).unwrap();
    let document = signed(small, nodes(10, Scheme::Ristretto255), &authority);
    let error = geometry_for(&document).unwrap_err();
    assert_eq!(error, TopologyError::UnknownGeometry { identifier: small.identifier(), layers: 3 });
    assert!(error.to_string().contains(&hex::encode(small.identifier())), "{error}");
    let mut garbage = document.clone();
    garbage.geometry = [0xAB; 32];
    assert!(
        matches!(geometry_for(&garbage), Err(TopologyError::UnknownGeometry { identifier, .. }) if identifier == [0xAB; 32])
    );
}

#[test]
fn keys_of_another_scheme_are_refused() {
    let authority = SigningKey::from_bytes(&[3; 32]);
    let xwing = geometry(Scheme::XWing);
    // An X-Wing document whose nodes publish ristretto255 keys.
    let document = signed(xwing, nodes(11, Scheme::Ristretto255), &authority);
    let expected = |e: &TopologyError| {
        matches!(e, TopologyError::KeyScheme { found: Scheme::Ristretto255, expected: Scheme::XWing, .. })
    };
    assert!(expected(&geometry_for(&document).unwrap_err()));
    let config = VerifyConfig::new(authority.verifying_key(), xwing);
    assert!(expected(&document.verify(&config, ISSUED).unwrap_err()));

    // A node whose next key is of another scheme than its current one.
    let mixed =
        nodes_with(12, |layer, epoch| if (layer, epoch) == (1, EPOCH + 1) { Scheme::MlKem768 } else { Scheme::XWing });
    let document = signed(xwing, mixed, &authority);
    let error = document.verify(&config, ISSUED).unwrap_err();
    assert!(
        matches!(error, TopologyError::KeyScheme { epoch, found: Scheme::MlKem768, .. } if epoch == EPOCH + 1),
        "{error:?}"
    );

    // A classical document read by a node configured for X-Wing: the existing typed error.
    let classical = signed(geometry(Scheme::Ristretto255), nodes(13, Scheme::Ristretto255), &authority);
    assert_eq!(classical.verify(&config, ISSUED).unwrap_err(), TopologyError::GeometryMismatch);
}
