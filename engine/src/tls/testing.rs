//! What the TLS unit tests share: the test certificates
//! (`engine/src/tls/testdata`, made by its `gen.sh`), a server configuration of
//! some of them, and a rustls client that trusts their CA.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use crate::tls::certs::{self, CertificateFiles};
use crate::tls::conn::TlsConn;
use crate::tls::context::{server_config, Shared};

/// A file of `engine/src/tls/testdata`.
pub fn testdata(name: &str) -> PathBuf {
    crate::source_dir()
        .join("engine/src/tls/testdata")
        .join(name)
}

/// The test certificate `name` (`a`: a.test, `b`, `c`: see gen.sh).
pub fn certificate(name: &str) -> crate::tls::Certificate {
    let files = CertificateFiles {
        cert: testdata(&format!("{name}.pem")),
        key: testdata(&format!("{name}.key")),
        ocsp: None,
    };
    certs::load(&files, &|p| std::fs::read(p)).expect("test certificate loads")
}

/// The test certificates `names`, the first the default.
pub fn certificates(names: &[&str]) -> Vec<crate::tls::Certificate> {
    names.iter().map(|n| certificate(n)).collect()
}

/// A fresh ticket key and session cache.
pub fn shared() -> Shared {
    Shared::new(100).expect("ticket key")
}

/// A server configuration with certificate `a`.
pub fn server() -> Arc<rustls::ServerConfig> {
    server_config(&certificates(&["a"]), true, &shared()).expect("server config")
}

/// A server connection with certificate `a`.
pub fn server_conn() -> TlsConn {
    TlsConn::new(server(), Instant::now(), Duration::from_secs(10), None).expect("conn")
}

/// A client configuration trusting the test CA, for `versions`,
/// offering `alpn`.
pub fn client(
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(testdata("ca.pem")).expect("ca.pem");
    roots.add(ca).expect("CA certificate");
    let mut c = ClientConfig::builder_with_provider(Arc::new(crate::tls::provider()))
        .with_protocol_versions(versions)
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(c)
}

/// A TLS 1.3 client connection to `a.test`, offering `http/1.1`.
pub fn client_conn() -> ClientConnection {
    let c = client(&[&rustls::version::TLS13], &[b"http/1.1"]);
    ClientConnection::new(c, ServerName::try_from("a.test").expect("name")).expect("client")
}
