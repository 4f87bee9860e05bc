//! The throwaway certificate authority behind the HTTPS test server, made at run time.

use super::*;

/// The names the server certificate is valid for.
pub const SERVER_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A throwaway certificate authority made at run time and a server certificate signed by it,
/// valid for `localhost`, `127.0.0.1` and `::1` (ECDSA P-256, rcgen with the ring backend).
/// Trust it with `curl --cacert` ([`TestCa::write_ca_pem`]) or [`TestCa::client_config`].
pub struct TestCa {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
}

impl TestCa {
    /// Generates the CA's key and self-signed certificate, then the server's key and
    /// certificate (subject alternative names [`SERVER_NAMES`], server-auth usage).
    pub fn new() -> io::Result<Self> {
        let ca_key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(io::Error::other)?;
        ca_params.distinguished_name = rcgen::DistinguishedName::new();
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "NOX throwaway test CA");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(io::Error::other)?;

        let server_key = rcgen::KeyPair::generate().map_err(io::Error::other)?;
        let names: Vec<String> = SERVER_NAMES.iter().map(|n| (*n).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).map_err(io::Error::other)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let server_cert = params.signed_by(&server_key, &ca).map_err(io::Error::other)?;
        Ok(Self {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            server_cert: server_cert.der().clone(),
            server_key: server_key.serialize_der(),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// Writes the CA certificate (PEM) to `path`, for `curl --cacert <path>`.
    pub fn write_ca_pem(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, &self.ca_pem)
    }

    /// A rustls server configuration (ring provider, TLS 1.2 and 1.3, ALPN `http/1.1`) that
    /// presents the server certificate.
    pub fn server_config(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.server_key.clone()));
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(io::Error::other)?
                .with_no_client_auth()
                .with_single_cert(vec![self.server_cert.clone()], key)
                .map_err(io::Error::other)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// A rustls client configuration (ring provider) that trusts this CA and nothing else.
    pub fn client_config(&self) -> io::Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca_der.clone()).map_err(io::Error::other)?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}
