//! TLS for the harness (cargo feature `tls`): the test certificates of
//! `engine/src/tls/testdata` (signed by its `ca.pem`; `a` is `a.test` and
//! `*.a.test`, `b` is `b.test`, `expired` ended in 2021), and a rustls
//! client that trusts that CA, for [`super::Client::connect_tls`].

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

/// A file of `engine/src/tls/testdata`.
pub fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("engine/src/tls/testdata")
        .join(name)
}

/// `[tls]` for an embedded server: one listener on 127.0.0.1 (port 0),
/// the test certificate `a`.
pub fn config() -> brisk::config::TlsConfig {
    use brisk::tls::certs::{self, CertificateFiles};
    let files = CertificateFiles {
        cert: testdata("a.pem"),
        key: testdata("a.key"),
        ocsp: None,
    };
    let cert = certs::load(&files, &|p| std::fs::read(p)).expect("certificate a");
    brisk::config::TlsConfig {
        listen: vec!["127.0.0.1:0".parse().expect("address")],
        certificates: vec![cert],
        session_tickets: true,
        session_cache: 100,
        handshake_timeout: std::time::Duration::from_secs(10),
        max_handshakes: 16,
        redirect_http: false,
        #[cfg(feature = "ops")]
        ticket_keys: None,
    }
}

/// A `[tls]` section listening on one more address of 127.0.0.1 (port 0)
/// with `extra` keys, and a `[[tls.certificate]]` for each of the test
/// certificates `names` (the first is the default).
pub fn section(names: &[&str], extra: &str) -> String {
    let mut s = format!("[tls]\nlisten = [\"127.0.0.1:0\"]\n{extra}\n");
    for name in names {
        s.push_str(&format!(
            "[[tls.certificate]]\ncert = \"{}\"\nkey = \"{}\"\n",
            testdata(&format!("{name}.pem")).display(),
            testdata(&format!("{name}.key")).display()
        ));
    }
    s
}

/// `--tls-cert`/`--tls-key` with the test certificate `name`.
pub fn cert_args(name: &str) -> [String; 4] {
    [
        "--tls-cert".into(),
        testdata(&format!("{name}.pem")).display().to_string(),
        "--tls-key".into(),
        testdata(&format!("{name}.key")).display().to_string(),
    ]
}

/// A client configuration trusting the test CA, for `versions`, offering
/// `http/1.1` by ALPN.
pub fn client_config(versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(testdata("ca.pem")).expect("ca.pem");
    roots.add(ca).expect("the test CA");
    let mut c =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

/// A TLS 1.3 client connection for `sni`.
pub fn client_conn(sni: &str) -> ClientConnection {
    client_conn_with(client_config(&[&rustls::version::TLS13]), sni)
}

/// A TLS 1.2 client connection for `sni`.
pub fn client_conn_tls12(sni: &str) -> ClientConnection {
    client_conn_with(client_config(&[&rustls::version::TLS12]), sni)
}

/// A client connection with `config` for `sni`.
pub fn client_conn_with(config: Arc<ClientConfig>, sni: &str) -> ClientConnection {
    let name = ServerName::try_from(sni.to_string()).expect("a server name");
    ClientConnection::new(config, name).expect("client connection")
}

/// The subject's common name of the certificate the server sent.
pub fn served_name(conn: &ClientConnection) -> String {
    let leaf = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .expect("a certificate");
    // The test certificates' subjects are one CN (gen.sh): find its
    // value after the commonName OID (2.5.4.3) and its string tag.
    let der = leaf.as_ref();
    let oid = [0x06, 0x03, 0x55, 0x04, 0x03];
    let at = der
        .windows(oid.len())
        .rposition(|w| w == oid)
        .expect("a common name");
    let len = der[at + oid.len() + 1] as usize;
    let start = at + oid.len() + 2;
    String::from_utf8_lossy(&der[start..start + len]).into_owned()
}

/// `openssl s_client` to `port` of 127.0.0.1 (SNI `a.test`, trusting the
/// test CA) sending `GET /index.html` (the request file is made in
/// `dir`), with `args`; `None` (after saying the test skips) without
/// openssl.
pub fn s_client(port: u16, dir: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    use std::process::{Command, Stdio};
    let request = dir.join("request");
    std::fs::write(
        &request,
        "GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    )
    .expect("request");
    let input = Stdio::from(std::fs::File::open(&request).expect("request"));
    let out = super::run_with_input(
        Command::new("openssl")
            .args(["s_client", "-connect"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-servername", "a.test", "-CAfile"])
            .arg(testdata("ca.pem"))
            // Wait for the answer (and the tickets before it), not for
            // stdin's end.
            .arg("-ign_eof")
            .args(args),
        input,
        std::time::Duration::from_secs(20),
    );
    if out.is_none() {
        super::skip("openssl not installed");
    }
    out
}
