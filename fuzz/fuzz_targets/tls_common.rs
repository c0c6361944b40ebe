//! What the TLS fuzz targets share: the server configuration of the test
//! certificate `a`, and an in-memory rustls client that trusts anything
//! and lets its traffic keys be extracted.

use std::sync::{Arc, OnceLock};

use brisk::tls::certs::{self, CertificateFiles};
use brisk::tls::context::{server_config, Shared};
use rustls::pki_types::ServerName;

const CERT: &[u8] = include_bytes!("../../engine/src/tls/testdata/a.pem");
const KEY: &[u8] = include_bytes!("../../engine/src/tls/testdata/a.key");

pub fn config() -> Arc<rustls::ServerConfig> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let files = CertificateFiles {
            cert: "a.pem".into(),
            key: "a.key".into(),
            ocsp: None,
        };
        let read = |p: &std::path::Path| Ok(if p.ends_with("a.pem") { CERT } else { KEY }.to_vec());
        let cert = certs::load(&files, &read).expect("test certificate");
        server_config(&[cert], true, &Shared::new(16).expect("ticket key")).expect("server config")
    }))
}

/// Any certificate goes: the point is to reach the record layer.
#[derive(Debug)]
struct Trusting(rustls::crypto::WebPkiSupportedAlgorithms);

impl rustls::client::danger::ServerCertVerifier for Trusting {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// A client of `a.test` (TLS 1.2 only if `tls12`, else TLS 1.3 only).
pub fn client(tls12: bool) -> rustls::ClientConnection {
    let provider = brisk::tls::provider();
    let algs = provider.signature_verification_algorithms;
    let version = match tls12 {
        true => &rustls::version::TLS12,
        false => &rustls::version::TLS13,
    };
    let mut client_config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .expect("versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Trusting(algs)))
        .with_no_client_auth();
    client_config.enable_secret_extraction = true;
    let name = ServerName::try_from("a.test").expect("name");
    rustls::ClientConnection::new(Arc::new(client_config), name).expect("client")
}
