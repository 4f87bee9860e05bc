//! A directory mirror of the test's own, serving a fixed document: an equivocating node's
//! second view, for the watcher tests.

use std::{net::SocketAddr, path::Path, time::Duration};

use alloy::primitives::Address;

/// A directory mirror that serves `json` as its document (`GET /topology`) to every request: the
/// second view an equivocating node shows.
pub fn serve_document(json: String) -> SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", json.len());
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(json.as_bytes()));
        }
    });
    addr
}

/// An equivocating node's second view: fetches the document the directory at `directory`
/// serves, re-signs the node's descriptor (identity keys in `keys`) with another Sphinx key for
/// the same epoch, attaches its operator's statements (`operator` on `chain_id`'s `registry`),
/// checks that the two descriptors are proof of equivocation, and serves the forked document
/// from a mirror of its own (returned). The test never builds the evidence itself: the watcher
/// must find it in the two mirrors.
pub fn equivocating_mirror(
    directory: SocketAddr,
    keys: &Path,
    operator: &alloy::signers::local::PrivateKeySigner,
    chain_id: u64,
    registry: Address,
) -> SocketAddr {
    let identity = nox_keystore::load_identity(keys).expect("identity");
    let id = identity.public().identity_key.to_bytes();
    let document = super::run::runtime()
        .block_on(nox_directory::fetch_document(directory, Duration::from_secs(3)))
        .expect("the directory's document");
    let published = document
        .nodes
        .iter()
        .find(|n| n.descriptor.identity_key.to_bytes() == id)
        .expect("the node's published descriptor")
        .clone();
    assert!(!published.operator_statements.is_empty(), "nodes publish operator statements");
    let mut other = published.descriptor.clone();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(5);
    other.sphinx_keys[0].key = nox_sphinx::SecretKey::generate(&mut rng).public_key();
    let other = nox_chain::slash::attach_statements(
        operator,
        chain_id,
        registry,
        other.sign(identity.signing_key()).expect("signs"),
    )
    .expect("statements");
    assert!(
        nox_chain::slash::evidence_from(alloy::signers::Signer::address(operator), &published, &other).is_some(),
        "the two are proof"
    );
    let mut forked = document.clone();
    for node in &mut forked.nodes {
        if node.descriptor.identity_key.to_bytes() == id {
            *node = other.clone();
        }
    }
    serve_document(forked.to_json().expect("json"))
}
