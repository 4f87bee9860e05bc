//! `nox testnet up --tls`: the entries' and gateways' WebSocket listeners serve `wss://`.
//!
//! The testnet makes a throwaway certificate authority at `up` ([`TestnetCa`]), issues every
//! WebSocket node a certificate for its loopback address, points the node's
//! `websocket_tls_cert`/`websocket_tls_key` at it, and writes the CA certificate to
//! [`ca_file`] (`<dir>/ca.pem`): native clients trust it with `nox client --ca-file`, Node
//! with `NODE_EXTRA_CA_CERTS`, a browser through its own trust settings. The CA's private key
//! is never written: once `up` returns, nobody can issue more certificates under it.

use std::{
    io,
    net::IpAddr,
    path::{Path, PathBuf},
};

/// Name of the CA certificate file (PEM) in the state directory.
pub const CA_FILE: &str = "ca.pem";

/// Where `nox testnet up --tls` wrote the CA certificate of the testnet in `dir`.
pub fn ca_file(dir: &Path) -> PathBuf {
    dir.join(CA_FILE)
}

/// The CA certificate of the testnet in `dir`, if it was started with `--tls`.
pub fn existing_ca_file(dir: &Path) -> Option<PathBuf> {
    let path = ca_file(dir);
    path.is_file().then_some(path)
}

/// A throwaway CA (ECDSA P-256, rcgen with the ring backend) held in memory only.
pub struct TestnetCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestnetCa {
    /// Generates the CA's key and self-signed certificate.
    pub fn new() -> io::Result<Self> {
        let key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(io::Error::other)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, "NOX testnet throwaway CA");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).map_err(io::Error::other)?;
        Ok(Self { issuer })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// Writes the CA certificate to [`ca_file`] in `dir` and returns its path.
    pub fn write(&self, dir: &Path) -> io::Result<PathBuf> {
        let path = ca_file(dir);
        std::fs::write(&path, self.pem())?;
        Ok(path)
    }

    /// Issues a server certificate for `ip` (its only subject alternative name: a client that
    /// dials the node's endpoint by address checks exactly that) and writes it and its key to
    /// `<node_dir>/tls/cert.pem` and `key.pem` (the key mode 0600). Returns (cert, key) paths.
    pub fn issue_node(&self, node_dir: &Path, ip: IpAddr) -> io::Result<(PathBuf, PathBuf)> {
        let key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let mut params = rcgen::CertificateParams::new(vec![ip.to_string()]).map_err(io::Error::other)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, ip.to_string());
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).map_err(io::Error::other)?;
        let dir = node_dir.join("tls");
        std::fs::create_dir_all(&dir)?;
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, cert.pem())?;
        nox_keystore::write_private_file(&key_path, key.serialize_pem().as_bytes()).map_err(io::Error::other)?;
        Ok((cert_path, key_path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node certificate verifies under the written CA for its own address and for no other.
    #[test]
    fn node_certificates_chain_to_the_written_ca_for_their_address_only() {
        use rustls::client::danger::ServerCertVerifier;
        let dir = std::env::temp_dir().join(format!("nox-testnet-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ca = TestnetCa::new().unwrap();
        let ca_path = ca.write(&dir).unwrap();
        assert_eq!(existing_ca_file(&dir), Some(ca_path.clone()));
        let (cert, key) = ca.issue_node(&dir.join("node-0"), [127, 0, 0, 1].into()).unwrap();
        // The node loads the pair as it would at start (the key matches the certificate).
        nox_link::transport::TlsCertificate::load(&cert, &key).unwrap();

        let leaf = nox_link::transport::TlsCertificate::load(&cert, &key).unwrap().chain()[0].clone();
        let now = rustls::pki_types::UnixTime::now();
        let name = |s: &str| rustls::pki_types::ServerName::try_from(s.to_owned()).unwrap();
        let verifier = |ca_pem: &str| {
            use rustls::pki_types::pem::PemObject;
            let mut roots = rustls::RootCertStore::empty();
            roots.add(rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap()).unwrap();
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), provider).build().unwrap()
        };
        let trusted = verifier(&std::fs::read_to_string(&ca_path).unwrap());
        assert!(trusted.verify_server_cert(&leaf, &[], &name("127.0.0.1"), &[], now).is_ok());
        assert!(trusted.verify_server_cert(&leaf, &[], &name("127.0.0.2"), &[], now).is_err());
        // Another throwaway CA does not vouch for it.
        let other = verifier(&TestnetCa::new().unwrap().pem());
        assert!(other.verify_server_cert(&leaf, &[], &name("127.0.0.1"), &[], now).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
