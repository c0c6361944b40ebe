//! Feeds arbitrary bytes to a TLS server connection (`brisk::tls::conn`),
//! in pieces, as a socket would: before any handshake (ClientHellos,
//! plain HTTP, garbage), and, when the first byte is odd, after a real
//! handshake with an in-memory rustls client (TLS 1.2 when its bit 2 is
//! set), so that the bytes hit brisk's record layer (`brisk::tls::record`):
//! as raw ciphertext (bad MACs, garbage headers), or, when bit 1 is set,
//! as records the client seals with its real keys, each piece's first
//! byte its content type (alerts, handshake messages, KeyUpdates, empty
//! and oversized contents) so that the fuzzer reaches what is behind the
//! MAC. The connection's keys are dropped at rest now and then.
//! Beyond "never panics": no plaintext before a handshake, and nothing
//! is ever called on rustls again after an error.

#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use brisk::config::TlsConfig;
use brisk::tls::certs::{self, CertificateFiles};
use brisk::tls::conn::TlsConn;
use brisk::tls::context::{server_config, Shared};
use brisk::tls::record::Records;
use libfuzzer_sys::fuzz_target;
use rustls::pki_types::ServerName;

const CERT: &[u8] = include_bytes!("../../src/tls/testdata/a.pem");
const KEY: &[u8] = include_bytes!("../../src/tls/testdata/a.key");

fn config() -> Arc<rustls::ServerConfig> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| {
        let files = CertificateFiles {
            cert: "a.pem".into(),
            key: "a.key".into(),
            ocsp: None,
        };
        let read = |p: &std::path::Path| Ok(if p.ends_with("a.pem") { CERT } else { KEY }.to_vec());
        let cert = certs::load(&files, &read, certs::now()).expect("test certificate");
        let tls = TlsConfig {
            listen: Vec::new(),
            certificates: vec![cert],
            session_tickets: true,
            session_cache: 16,
            handshake_timeout: Duration::from_secs(10),
            max_handshakes: 1,
            redirect_http: false,
        };
        server_config(&tls, &Shared::new(16).expect("ticket key")).expect("server config")
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

/// A server connection after a full handshake with a rustls client, and
/// the client's record layer.
fn established(
    tls12: bool,
    incoming: &mut Vec<u8>,
    plaintext: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> (TlsConn, Records) {
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
    let mut client = rustls::ClientConnection::new(Arc::new(client_config), name).expect("client");
    let mut server =
        TlsConn::new(config(), Instant::now(), Duration::from_secs(10), None).expect("server");
    for _ in 0..10 {
        while client.wants_write() {
            client.write_tls(incoming).expect("client writes");
        }
        server.receive(incoming, plaintext, out).expect("handshake");
        let mut rd = &out[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).expect("client reads");
            client.process_new_packets().expect("client accepts");
        }
        out.clear();
        if !server.is_handshaking() && !client.is_handshaking() {
            break;
        }
    }
    let suite = client.negotiated_cipher_suite().expect("suite");
    let secrets = client.dangerous_extract_secrets().expect("client keys");
    let peer = Records::from_secrets(secrets, suite).expect("client records");
    (server, peer)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let (mut incoming, mut plaintext, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let (mut conn, mut peer) = if mode & 1 == 1 {
        let (conn, peer) = established(mode & 4 != 0, &mut incoming, &mut plaintext, &mut out);
        (conn, Some(peer))
    } else {
        let conn =
            TlsConn::new(config(), Instant::now(), Duration::from_secs(10), None).expect("server");
        (conn, None)
    };
    let seal = mode & 2 != 0;
    let handshaking = conn.is_handshaking();
    let mut failed = false;
    // Pieces of 1 to 256 bytes, each length taken from the input.
    while let Some((&len, tail)) = rest.split_first() {
        let n = (usize::from(len) + 1).min(tail.len());
        match (&mut peer, tail[..n].split_first()) {
            (Some(peer), Some((&typ, content))) if seal => {
                // A piece of 255 bytes stands for the largest record and
                // one byte more.
                let content = match len {
                    255 => &[0u8; 16 * 1024 + 1][..],
                    _ => content,
                };
                let _ = peer.seal(typ, content, &mut incoming);
            }
            _ => incoming.extend_from_slice(&tail[..n]),
        }
        rest = &tail[n..];
        if len % 7 == 0 {
            conn.rest();
        }
        match conn.receive(&mut incoming, &mut plaintext, &mut out) {
            Ok(_) => assert!(!failed, "a call after an error succeeded"),
            Err(_) => failed = true,
        }
        if handshaking && conn.is_handshaking() {
            assert!(plaintext.is_empty(), "plaintext before the handshake");
        }
        if conn.send(b"HTTP/1.1 200 OK\r\n\r\n", &mut incoming, &mut out).is_ok() {
            assert!(!failed, "a send after an error succeeded");
        }
    }
    conn.close_notify(&mut incoming, &mut out);
});
