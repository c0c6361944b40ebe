//! The record layer against a real rustls client, in memory: handshakes
//! (TLS 1.3 and 1.2), data both ways, SNI, ALPN, resumption by tickets
//! across two server configurations that share the ticket key, plain HTTP
//! and garbage, the handshake cap and deadline.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use super::*;
use crate::tls::context::server_config;
use crate::tls::testing::{certificates, client, shared, testdata};

fn tls13() -> Arc<ClientConfig> {
    client(&[&rustls::version::TLS13], &[b"http/1.1"])
}

/// A client and a server connection with the buffers a worker would lend.
struct Pair {
    client: ClientConnection,
    server: TlsConn,
    incoming: Vec<u8>,
    plaintext: Vec<u8>,
    out: Vec<u8>,
    /// What the client has read so far.
    got: Vec<u8>,
    /// The client read a clean end (close_notify).
    eof: bool,
}

impl Pair {
    fn new(cc: Arc<ClientConfig>, sni: &str, sc: Arc<rustls::ServerConfig>) -> Pair {
        let name = ServerName::try_from(sni.to_string()).expect("server name");
        Pair {
            client: ClientConnection::new(cc, name).expect("client"),
            server: TlsConn::new(sc, Instant::now(), Duration::from_secs(10), None)
                .expect("server"),
            incoming: Vec::new(),
            plaintext: Vec::new(),
            out: Vec::new(),
            got: Vec::new(),
            eof: false,
        }
    }

    fn send(&mut self, data: &[u8]) -> Result<bool, TlsError> {
        self.server.send(data, &mut self.incoming, &mut self.out)
    }

    /// Moves bytes both ways until neither side has anything to say.
    fn pump(&mut self) -> Result<(), TlsError> {
        for _ in 0..20 {
            let mut moved = false;
            while self.client.wants_write() {
                self.client
                    .write_tls(&mut self.incoming)
                    .expect("client writes");
                moved = true;
            }
            if !self.incoming.is_empty() {
                self.server
                    .receive(&mut self.incoming, &mut self.plaintext, &mut self.out)?;
            }
            if !self.out.is_empty() {
                let out = std::mem::take(&mut self.out);
                let mut rd = &out[..];
                while !rd.is_empty() {
                    self.client.read_tls(&mut rd).expect("client reads");
                    self.client.process_new_packets().expect("client accepts");
                    self.client_reads();
                }
                moved = true;
            }
            if !moved {
                return Ok(());
            }
        }
        panic!("the pair never went quiet");
    }

    /// The client sends a request, which the server reads.
    fn request_arrives(&mut self) {
        const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
        self.client.writer().write_all(GET).expect("client writes");
        self.pump().expect("request");
        assert_eq!(self.plaintext, GET);
    }

    fn client_reads(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.client.reader().read(&mut buf) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("client read: {e}"),
            }
        }
    }
}

#[test]
fn handshake_and_data_both_ways_tls13() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut p = Pair::new(tls13(), "a.test", sc);
    assert!(p.server.is_handshaking());
    assert!(p.server.handshake_deadline().is_some());
    p.pump().expect("handshake");
    assert!(!p.client.is_handshaking());
    assert!(!p.server.is_handshaking());
    assert_eq!(p.server.handshake_deadline(), None);
    assert_eq!(p.server.protocol(), Some("TLSv1.3"));
    assert_eq!(p.server.cipher(), Some("TLS_AES_128_GCM_SHA256"));

    p.request_arrives();

    let body = vec![b'x'; 40_000];
    assert_eq!(p.send(&body), Ok(true));
    p.pump().expect("response");
    assert_eq!(p.got, body);
    assert!(!p.eof);

    p.server.close_notify(&mut p.incoming, &mut p.out);
    p.pump().expect("close");
    assert!(p.eof, "close_notify is a clean end");
}

#[test]
fn tls12_handshake_and_data() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let cc = client(&[&rustls::version::TLS12], &[b"http/1.1"]);
    let mut p = Pair::new(cc, "a.test", sc);
    p.pump().expect("handshake");
    assert_eq!(p.server.protocol(), Some("TLSv1.2"));
    assert_eq!(p.server.cipher(), Some("ECDHE-ECDSA-AES128-GCM-SHA256"));
    p.client.writer().write_all(b"ping").expect("write");
    p.pump().expect("data");
    assert_eq!(p.plaintext, b"ping");
    assert_eq!(p.send(b"pong"), Ok(true));
    p.pump().expect("data");
    assert_eq!(p.got, b"pong");
}

#[test]
fn a_body_in_one_byte_pieces_is_reassembled() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut p = Pair::new(tls13(), "a.test", sc);
    p.pump().expect("handshake");
    p.client
        .writer()
        .write_all(b"hello over tls")
        .expect("write");
    let mut records = Vec::new();
    p.client.write_tls(&mut records).expect("records");
    for b in records {
        p.incoming.push(b);
        p.server
            .receive(&mut p.incoming, &mut p.plaintext, &mut p.out)
            .expect("partial record is fine");
    }
    assert_eq!(p.plaintext, b"hello over tls");
    assert!(p.incoming.is_empty());
}

fn leaf_of(p: &Pair) -> Vec<u8> {
    p.client.peer_certificates().expect("server certificate")[0].to_vec()
}

fn leaf_file(name: &str) -> Vec<u8> {
    CertificateDer::from_pem_file(testdata(&format!("{name}.pem")))
        .expect("pem")
        .to_vec()
}

#[test]
fn sni_chooses_the_certificate_by_its_names() {
    let sc = server_config(&certificates(&["a", "b", "c"]), true, &shared()).expect("config");
    // Every client trusts the CA, so any certificate would verify for its
    // own names only: the handshake succeeding is half the proof.
    for (sni, expect) in [
        ("b.test", "b"),
        ("c.test", "c"),
        ("www.a.test", "a"),
        ("a.test", "a"),
    ] {
        let mut p = Pair::new(tls13(), sni, Arc::clone(&sc));
        p.pump().expect(sni);
        assert_eq!(leaf_of(&p), leaf_file(expect), "SNI {sni}");
    }
}

/// Takes any certificate and remembers it: a client of an IP address
/// sends no SNI, and no test certificate is for 127.0.0.1.
#[derive(Debug)]
struct Remember(
    std::sync::Mutex<Vec<u8>>,
    rustls::crypto::WebPkiSupportedAlgorithms,
);

impl rustls::client::danger::ServerCertVerifier for Remember {
    fn verify_server_cert(
        &self,
        leaf: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.0.lock().expect("lock") = leaf.to_vec();
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.1)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.1)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.1.supported_schemes()
    }
}

#[test]
fn without_sni_the_first_certificate_is_served() {
    let sc = server_config(&certificates(&["b", "a"]), true, &shared()).expect("config");
    let provider = crate::tls::provider();
    let seen = Arc::new(Remember(
        Default::default(),
        provider.signature_verification_algorithms,
    ));
    let cc = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("versions")
        .dangerous()
        .with_custom_certificate_verifier(seen.clone())
        .with_no_client_auth();
    let mut p = Pair::new(Arc::new(cc), "127.0.0.1", sc);
    p.pump().expect("handshake");
    assert_eq!(*seen.0.lock().expect("lock"), leaf_file("b"));
}

#[test]
fn alpn_agrees_on_http11() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let cc = client(&[&rustls::version::TLS13], &[b"h2", b"http/1.1"]);
    let mut p = Pair::new(cc, "a.test", sc);
    p.pump().expect("handshake");
    assert_eq!(p.server.alpn(), Some(&b"http/1.1"[..]));
    assert_eq!(p.client.alpn_protocol(), Some(&b"http/1.1"[..]));
}

#[test]
fn alpn_without_http11_is_refused() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let cc = client(&[&rustls::version::TLS13], &[b"h2"]);
    let mut p = Pair::new(cc, "a.test", sc);
    assert!(matches!(p.pump(), Err(TlsError::Protocol(_))));
}

#[test]
fn tickets_resume_on_another_worker_of_the_same_server() {
    let certs = certificates(&["a"]);
    let keys = shared();
    // Two generations (or two workers' configurations) with one key.
    let first = server_config(&certs, true, &keys).expect("config");
    let second = server_config(&certs, true, &keys).expect("config");
    let cc = tls13();
    let mut p = Pair::new(Arc::clone(&cc), "a.test", first);
    p.pump().expect("full handshake");
    assert!(!p.server.resumed());
    let mut q = Pair::new(Arc::clone(&cc), "a.test", second);
    q.pump().expect("resumed handshake");
    assert!(
        q.server.resumed(),
        "a ticket from one configuration resumes on the other"
    );

    // A server with another ticket key (another process) cannot.
    let other = server_config(&certs, true, &shared()).expect("config");
    let mut r = Pair::new(cc, "a.test", other);
    r.pump().expect("handshake");
    assert!(!r.server.resumed());
}

#[test]
fn tls12_resumes_from_the_session_cache_without_tickets() {
    let certs = certificates(&["a"]);
    let keys = shared();
    let cc = client(&[&rustls::version::TLS12], &[b"http/1.1"]);
    let mut p = Pair::new(
        Arc::clone(&cc),
        "a.test",
        server_config(&certs, false, &keys).expect("config"),
    );
    p.pump().expect("full");
    let mut q = Pair::new(
        cc,
        "a.test",
        server_config(&certs, false, &keys).expect("config"),
    );
    q.pump().expect("resumed");
    assert!(q.server.resumed());
}

#[test]
fn plain_http_gets_a_readable_400() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut conn = TlsConn::new(sc, Instant::now(), Duration::from_secs(10), None).expect("conn");
    let (mut plaintext, mut out) = (Vec::new(), Vec::new());
    // A method cut short is not judged yet.
    let mut incoming = b"GE".to_vec();
    assert_eq!(
        conn.receive(&mut incoming, &mut plaintext, &mut out),
        Ok(Received::default())
    );
    assert!(out.is_empty());
    incoming.extend_from_slice(b"T / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(
        conn.receive(&mut incoming, &mut plaintext, &mut out),
        Err(TlsError::PlainHttp)
    );
    assert_eq!(out, PLAIN_HTTP_ANSWER);
    assert!(plaintext.is_empty());
    let text = std::str::from_utf8(PLAIN_HTTP_ANSWER).expect("ascii");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    assert!(head.contains(&format!("Content-Length: {}", body.len())));
}

#[test]
fn garbage_closes_with_an_error() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    for garbage in [
        &b"\x16\x03\x01\x00\x05hello"[..],
        &b"\x17\x03\x03\x00\x10abcdefghijklmnop"[..],
        &b"\x80\x2e\x01\x03\x01"[..],
        &b"\x00\x00\x00\x00\x00\x00\x00\x00"[..],
        &b"\x16\x03\x01\xff\xff"[..],
    ] {
        let mut conn = fresh(&sc);
        let (mut plaintext, mut out) = (Vec::new(), Vec::new());
        let mut incoming = garbage.to_vec();
        let got = conn.receive(&mut incoming, &mut plaintext, &mut out);
        // A record header that promises more just waits for it (the
        // handshake deadline ends a client that never sends it).
        if garbage == b"\x16\x03\x01\xff\xff" {
            assert!(got.is_err() || incoming.len() == 5, "{garbage:?}: {got:?}");
            continue;
        }
        let err = got.expect_err("garbage is an error");
        assert!(matches!(err, TlsError::Protocol(_)), "{garbage:?}");
        assert!(!err.log_line().is_empty());
        assert!(plaintext.is_empty());
        assert!(!conn.is_handshaking());
    }
}

#[test]
fn the_handshake_cap_counts_handshakes_in_progress_only() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let cap = Handshakes::new(2);
    let first = cap.try_begin().expect("one");
    let second = cap.try_begin().expect("two");
    assert!(cap.try_begin().is_none(), "the third waits");
    assert_eq!(cap.active(), 2);
    drop(first);
    assert_eq!(cap.active(), 1);
    let mut p = Pair::new(tls13(), "a.test", Arc::clone(&sc));
    p.server =
        TlsConn::new(sc, Instant::now(), Duration::from_secs(10), cap.try_begin()).expect("server");
    assert_eq!(cap.active(), 2);
    p.pump().expect("handshake");
    assert_eq!(cap.active(), 1, "a finished handshake gives its place back");
    drop(second);
    assert_eq!(cap.active(), 0);
}

#[test]
fn sending_before_the_handshake_takes_nothing() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut conn = TlsConn::new(sc, Instant::now(), Duration::from_secs(10), None).expect("conn");
    let (mut incoming, mut out) = (Vec::new(), Vec::new());
    assert_eq!(conn.send(b"early", &mut incoming, &mut out), Ok(false));
    assert!(out.is_empty());
}

#[test]
fn the_handshake_deadline_is_the_start_plus_the_timeout() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let now = Instant::now();
    let conn = TlsConn::new(sc, now, Duration::from_secs(7), None).expect("conn");
    assert_eq!(
        conn.handshake_deadline(),
        Some(now + Duration::from_secs(7))
    );
}

/// Found by fuzz/fuzz_targets/tls_records.rs: after a garbage byte on an
/// established connection, a send called rustls again, which asserts (in
/// debug builds) that it sends at most one fatal alert.
#[test]
fn nothing_reaches_rustls_after_an_error() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut p = Pair::new(tls13(), "a.test", sc);
    p.pump().expect("handshake");
    p.incoming.push(0x12);
    let got = p
        .server
        .receive(&mut p.incoming, &mut p.plaintext, &mut p.out);
    assert!(matches!(got, Err(TlsError::Protocol(_))), "{got:?}");
    assert!(!p.out.is_empty(), "the fatal alert goes out");
    assert!(p.send(b"late").is_err());
    p.server.close_notify(&mut p.incoming, &mut p.out);
    let again = p
        .server
        .receive(&mut p.incoming, &mut p.plaintext, &mut p.out);
    assert!(again.is_err());
}

/// The server picks the cipher suite by its own order (testssl.sh rates
/// a server that follows the client's order HIGH).
#[test]
fn the_server_order_of_cipher_suites_wins() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let mut provider = crate::tls::provider();
    provider.cipher_suites.sort_by_key(|s| {
        !matches!(
            s.suite(),
            rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
        )
    });
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(testdata("ca.pem")).expect("ca"))
        .expect("root");
    let cc = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut p = Pair::new(Arc::new(cc), "a.test", sc);
    p.pump().expect("handshake");
    assert_eq!(p.server.cipher(), Some("TLS_AES_128_GCM_SHA256"));
}

/// A client offering only `suite`, of its version.
fn client_with_suite(suite: rustls::CipherSuite) -> Arc<ClientConfig> {
    let mut provider = crate::tls::provider();
    provider.cipher_suites.retain(|s| s.suite() == suite);
    assert_eq!(provider.cipher_suites.len(), 1, "{suite:?}");
    let version = provider.cipher_suites[0].version();
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(testdata("ca.pem")).expect("ca"))
        .expect("root");
    let cc = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(cc)
}

/// Every suite brisk offers, by its OpenSSL name.
const SUITES: &[(rustls::CipherSuite, &str, &str)] = &[
    (
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
        "TLSv1.3",
        "TLS_AES_128_GCM_SHA256",
    ),
    (
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
        "TLSv1.3",
        "TLS_AES_256_GCM_SHA384",
    ),
    (
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        "TLSv1.3",
        "TLS_CHACHA20_POLY1305_SHA256",
    ),
    (
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "TLSv1.2",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ),
    (
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "TLSv1.2",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "TLSv1.2",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ),
];

/// brisk's own record layer against rustls's, for every suite: a
/// request sent with the client's Finished, data of several records each
/// way, the keys dropped at rest and built again, close_notify both ways.
#[test]
fn every_suite_carries_data_both_ways_through_brisks_record_layer() {
    for &(suite, version, name) in SUITES {
        let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
        let mut p = Pair::new(client_with_suite(suite), "a.test", sc);
        // Written before the handshake ends: it leaves with the Finished.
        p.client
            .writer()
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .expect("w");
        p.pump().expect("handshake");
        assert_eq!(p.plaintext, b"GET / HTTP/1.1\r\n\r\n", "{name}");
        assert_eq!(p.server.protocol(), Some(version));
        assert_eq!(p.server.cipher(), Some(name));
        let big: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for round in 0..3 {
            p.plaintext.clear();
            p.got.clear();
            p.client.writer().write_all(&big).expect("client data");
            p.pump().expect("client data");
            assert_eq!(p.plaintext, big, "{name} round {round}");
            assert_eq!(p.send(&big), Ok(true));
            assert_eq!(p.send(b""), Ok(true));
            p.pump().expect("server data");
            assert_eq!(p.got, big, "{name} round {round}");
            p.server.rest();
        }
        p.client.send_close_notify();
        let got = p.pump();
        assert!(got.is_ok() && p.server.peer_closed(), "{name}: {got:?}");
        p.server.close_notify(&mut p.incoming, &mut p.out);
        p.pump().expect("close");
        assert!(p.eof, "{name}: the client read close_notify");
    }
}

/// RFC 8446 §4.6.3: a client's KeyUpdate (rustls asks for ours too)
/// changes the keys of both directions; data flows on, several times.
#[test]
fn a_key_update_changes_the_keys_both_ways() {
    for &(suite, _, name) in &SUITES[..3] {
        let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
        let mut p = Pair::new(client_with_suite(suite), "a.test", sc);
        p.pump().expect("handshake");
        for i in 0..3 {
            p.client.refresh_traffic_keys().expect("key update");
            p.client.writer().write_all(b"after").expect("w");
            p.pump().expect("key update");
            assert_eq!(p.plaintext, b"after", "{name} {i}");
            p.plaintext.clear();
            p.got.clear();
            assert_eq!(p.send(b"answer"), Ok(true));
            p.pump().expect("answer");
            assert_eq!(p.got, b"answer", "{name} {i}");
        }
    }
}

/// A record that does not authenticate ends the connection with a
/// bad_record_mac alert the client can read.
#[test]
fn a_bad_mac_is_answered_bad_record_mac() {
    for &(suite, _, name) in SUITES {
        let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
        let mut p = Pair::new(client_with_suite(suite), "a.test", sc);
        p.pump().expect("handshake");
        p.client
            .writer()
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .expect("w");
        p.client.write_tls(&mut p.incoming).expect("client writes");
        let last = p.incoming.len() - 1;
        p.incoming[last] ^= 1;
        let got = p
            .server
            .receive(&mut p.incoming, &mut p.plaintext, &mut p.out);
        assert!(
            matches!(got, Err(TlsError::Protocol(rustls::Error::DecryptError))),
            "{name}: {got:?}"
        );
        assert!(p.plaintext.is_empty());
        let mut rd = &p.out[..];
        p.client.read_tls(&mut rd).expect("client reads");
        assert_eq!(
            p.client.process_new_packets().err(),
            Some(rustls::Error::AlertReceived(
                rustls::AlertDescription::BadRecordMac
            )),
            "{name}"
        );
        assert!(p.send(b"late").is_err());
    }
}

/// The client's Finished and a KeyUpdate(update_requested) in one read:
/// the KeyUpdate goes to brisk's record layer, whose answer (its own
/// KeyUpdate) reaches the client before data under the new keys, so the
/// client reads that data. rustls handled it once, and its queued answer
/// was lost in the hand-over: the client then failed on "Invalid tag".
#[test]
fn finished_and_a_key_update_in_one_read_are_both_answered() {
    for &(suite, _, name) in &SUITES[..3] {
        let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
        let mut p = Pair::new(client_with_suite(suite), "a.test", sc);
        p.client.write_tls(&mut p.incoming).expect("hello");
        p.server
            .receive(&mut p.incoming, &mut p.plaintext, &mut p.out)
            .expect("hello");
        let flight = std::mem::take(&mut p.out);
        p.client.read_tls(&mut &flight[..]).expect("client reads");
        p.client.process_new_packets().expect("server flight");
        assert!(!p.client.is_handshaking());
        // Finished, then the KeyUpdate and a request under the new keys:
        // one buffer.
        p.client.refresh_traffic_keys().expect("key update");
        p.client.writer().write_all(b"ping").expect("w");
        while p.client.wants_write() {
            p.client.write_tls(&mut p.incoming).expect("w");
        }
        let got = p
            .server
            .receive(&mut p.incoming, &mut p.plaintext, &mut p.out)
            .expect("one read");
        assert!(got.handshake_done, "{name}");
        assert_eq!(p.plaintext, b"ping", "{name}");
        assert_eq!(p.send(b"pong"), Ok(true));
        p.pump().expect("the client reads the answer");
        assert_eq!(p.got, b"pong", "{name}");
    }
}

/// RFC 8446 §5.1: nothing may come between the records of a split
/// handshake message. rustls refuses a record inside a split ClientHello
/// without an alert; brisk sends unexpected_message (tlsfuzzer's
/// "zero-length app data interleaved in handshake").
#[test]
fn a_record_inside_a_split_client_hello_is_answered_unexpected_message() {
    let mut client = crate::tls::testing::client_conn();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).expect("hello");
    let body = &hello[5..];
    let half = 2;
    let mut wire = vec![22, 3, 1];
    wire.extend_from_slice(&(half as u16).to_be_bytes());
    wire.extend_from_slice(&body[..half]);
    // An application data record (empty, or of padding), then the rest
    // of the hello.
    // In one read, or in two.
    for (len, apart) in [(0u8, false), (30, false), (0, true), (30, true)] {
        let mut server = crate::tls::testing::server_conn();
        let (mut plaintext, mut out) = (Vec::new(), Vec::new());
        let mut wire = wire.clone();
        if apart {
            let got = server.receive(&mut wire, &mut plaintext, &mut out);
            assert!(got.is_ok() && out.is_empty(), "{got:?}");
        }
        wire.extend_from_slice(&[23, 3, 3, 0, len]);
        wire.extend(std::iter::repeat_n(0, len.into()));
        let got = server.receive(&mut wire, &mut plaintext, &mut out);
        assert!(got.is_err(), "{got:?}");
        assert_eq!(out, [21, 3, 3, 0, 2, 2, 10], "{len} {apart}: {got:?}");
    }
}

/// A ClientHello whose length says more than a handshake message may be
/// (64 KiB, rustls's limit), in two records: rustls refuses it as it
/// joins them and queues no alert; the answer is a decode_error (RFC
/// 8446 §6.2), not a bare close.
#[test]
fn a_hello_longer_than_a_handshake_message_may_be_is_answered_decode_error() {
    for split in [false, true] {
        // ClientHello (1), 0x010000 bytes long, of which 100 come.
        let mut body = vec![1, 1, 0, 0];
        body.extend_from_slice(&[3, 3]);
        body.resize(104, 7);
        let mut wire = Vec::new();
        let parts: Vec<&[u8]> = match split {
            true => vec![&body[..2], &body[2..]],
            false => vec![&body[..]],
        };
        for part in parts {
            wire.extend_from_slice(&[22, 3, 1]);
            wire.extend_from_slice(&(part.len() as u16).to_be_bytes());
            wire.extend_from_slice(part);
        }
        let out = refusal(wire, split);
        assert_eq!(out, [21, 3, 3, 0, 2, 2, 50], "{split}");
    }
}

/// A handshake message in records of two bytes, each in a read of its
/// own, and then a record of another type: rustls keeps the pieces it
/// read in the input without discarding them, and must be shown all of
/// them again at every call (shown fewer, it panicked: a slice out of
/// range). The answer is an unexpected_message.
#[test]
fn handshake_pieces_in_reads_of_their_own_are_shown_to_rustls_again() {
    let mut client = crate::tls::testing::client_conn();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).expect("hello");
    let mut server = crate::tls::testing::server_conn();
    let (mut incoming, mut plaintext, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for piece in hello[5..9].chunks(2) {
        incoming.extend_from_slice(&[22, 3, 1, 0, 2]);
        incoming.extend_from_slice(piece);
        let got = server.receive(&mut incoming, &mut plaintext, &mut out);
        assert!(got.is_ok() && out.is_empty(), "{got:?}");
    }
    incoming.extend_from_slice(&[23, 3, 3, 0, 0]);
    let got = server.receive(&mut incoming, &mut plaintext, &mut out);
    assert!(got.is_err(), "{got:?}");
    assert_eq!(out, [21, 3, 3, 0, 2, 2, 10]);
    // The whole hello, two bytes a record and a read: the handshake goes on.
    let mut server = crate::tls::testing::server_conn();
    let (mut incoming, mut out) = (Vec::new(), Vec::new());
    for piece in hello[5..].chunks(2) {
        incoming.extend_from_slice(&[22, 3, 1, 0, piece.len() as u8]);
        incoming.extend_from_slice(piece);
        let got = server.receive(&mut incoming, &mut plaintext, &mut out);
        assert!(got.is_ok(), "{got:?}");
    }
    assert!(!out.is_empty(), "the server's flight");
}

/// A ClientHello in records of 10 bytes: rustls joins the pieces in
/// place, over the headers of the records that carried them, so the
/// next record starts where the whole records shown end, not where
/// headers read from the front would say: here the random's bytes 4-8,
/// now where the second record's header was, read as a handshake record
/// 65,535 bytes long (which was refused as a record_overflow, and then a
/// panic inside rustls, shown nothing of the 30 bytes it kept). The
/// handshake goes on, whether the pieces come in one read or one a
/// read; a hello rustls refuses at its last piece (no cipher suite in
/// common) is answered handshake_failure; a real header over 2^14 bytes
/// after kept pieces, record_overflow.
#[test]
fn the_next_record_starts_where_the_whole_records_shown_end() {
    let mut client = crate::tls::testing::client_conn();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).expect("hello");
    let mut message = hello[5..].to_vec();
    // Type (1), length (3), version (2), then the random (32).
    message[6 + 4..6 + 9].copy_from_slice(&[22, 3, 3, 0xff, 0xff]);
    let records = |message: &[u8]| {
        let mut wire = Vec::new();
        for piece in message.chunks(10) {
            wire.extend_from_slice(&[22, 3, 1, 0, piece.len() as u8]);
            wire.extend_from_slice(piece);
        }
        wire
    };
    let wire = records(&message);
    for one_read in [true, false] {
        let mut server = crate::tls::testing::server_conn();
        let (mut incoming, mut plaintext, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for record in wire.chunks(15) {
            incoming.extend_from_slice(record);
            if one_read && incoming.len() < wire.len() {
                continue;
            }
            let got = server.receive(&mut incoming, &mut plaintext, &mut out);
            assert!(got.is_ok(), "{one_read}: {got:?}");
        }
        assert_eq!(out.first(), Some(&22), "{one_read}: the server's flight");
    }
    // No cipher suite in common: each suite the client offers becomes a
    // GREASE value (RFC 8701), which no server takes.
    let id = usize::from(message[38]);
    let suites = 38 + 1 + id;
    let n = usize::from(u16::from_be_bytes([message[suites], message[suites + 1]]));
    for at in (suites + 2..suites + 2 + n).step_by(2) {
        message[at..at + 2].copy_from_slice(&[0x0a, 0x0a]);
    }
    let out = refusal(records(&message), "no suite in common");
    assert_eq!(out, [21, 3, 3, 0, 2, 2, 40]);
    // Three pieces, then a header saying 2^14 + 1 bytes.
    let mut incoming = wire[..45].to_vec();
    incoming.extend_from_slice(&[22, 3, 1, 0x40, 1]);
    let out = refusal(incoming, "over 2^14");
    assert_eq!(out, [21, 3, 3, 0, 2, 2, 22], "record_overflow alone");
}

/// What a fresh server answers to `incoming`, which it must refuse
/// (`what` says which case, when it does not).
fn refusal(mut incoming: Vec<u8>, what: impl std::fmt::Debug) -> Vec<u8> {
    let mut server = crate::tls::testing::server_conn();
    let (mut plaintext, mut out) = (Vec::new(), Vec::new());
    let got = server.receive(&mut incoming, &mut plaintext, &mut out);
    assert!(got.is_err(), "{what:?}: {got:?}");
    out
}

/// A client whose records carry 27 bytes at most (rustls's
/// `max_fragment_size` of 32, its least): every handshake message of its
/// flights comes in pieces, the ClientHello in plaintext, TLS 1.3's
/// Finished under the handshake keys, TLS 1.2's ClientKeyExchange, and
/// the socket gives them 1, 5 or 37 bytes a read, or all at once. The
/// handshake ends and a request goes through (tlsfuzzer's split flights
/// pass too, by hand: 1, 2, 7 and 33-byte records, after a
/// HelloRetryRequest as well).
#[test]
fn flights_in_small_records_and_small_reads_complete_the_handshake() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    let versions: [&'static rustls::SupportedProtocolVersion; 2] =
        [&rustls::version::TLS13, &rustls::version::TLS12];
    for version in versions {
        for read in [1, 5, 37, usize::MAX] {
            let mut cc = (*client(&[version], &[b"http/1.1"])).clone();
            cc.max_fragment_size = Some(32);
            let name = ServerName::try_from("a.test").expect("name");
            let mut client = ClientConnection::new(Arc::new(cc), name).expect("client");
            let mut server = fresh(&sc);
            let (mut incoming, mut plaintext, mut out) = (Vec::new(), Vec::new(), Vec::new());
            const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
            client.writer().write_all(GET).expect("request");
            for _ in 0..10 {
                let mut wire = Vec::new();
                while client.wants_write() {
                    client.write_tls(&mut wire).expect("client writes");
                }
                for piece in wire.chunks(read.min(wire.len().max(1))) {
                    incoming.extend_from_slice(piece);
                    let got = server.receive(&mut incoming, &mut plaintext, &mut out);
                    assert!(got.is_ok(), "{version:?} {read}: {got:?}");
                }
                let mut rd = &out[..];
                while !rd.is_empty() {
                    client.read_tls(&mut rd).expect("client reads");
                    client.process_new_packets().expect("client accepts");
                }
                out.clear();
            }
            assert!(!server.is_handshaking(), "{version:?} {read}");
            assert_eq!(plaintext, GET, "{version:?} {read}");
        }
    }
}

/// RFC 8446 §4.1.2: a client's first message is a ClientHello. Any other
/// handshake type in its place is answered unexpected_message (§6), in
/// plaintext, whole or with only its type in, types whose bodies rustls
/// reads first (compressed_certificate 25, message_hash 254) too
/// (tlsfuzzer's "Client Hello type fuzz").
#[test]
fn a_first_handshake_message_other_than_a_client_hello_is_unexpected() {
    let mut client = crate::tls::testing::client_conn();
    let mut hello = Vec::new();
    client.write_tls(&mut hello).expect("hello");
    for typ in [0u8, 2, 11, 25, 254, 255] {
        let mut wire = hello.clone();
        wire[5] = typ;
        for whole in [true, false] {
            let incoming = match whole {
                true => wire.clone(),
                false => wire[..6].to_vec(),
            };
            let out = refusal(incoming, typ);
            assert_eq!(out, [21, 3, 3, 0, 2, 2, 10], "{typ} {whole}");
        }
    }
}

/// RFC 8446 §5.1: a ClientHello in one record over 2^14 bytes (which
/// rustls would take) ends the connection with record_overflow, in
/// plaintext, and nothing else (tlsfuzzer's "too big ClientHello msg");
/// one of exactly 2^14 bytes is read on.
#[test]
fn a_plaintext_record_over_2_14_bytes_is_a_record_overflow() {
    let sc = server_config(&certificates(&["a"]), true, &shared()).expect("config");
    for (len, refused) in [(1 << 14, false), ((1 << 14) + 1, true)] {
        let mut conn = fresh(&sc);
        let mut incoming = vec![0x16, 3, 1, (len >> 8) as u8, len as u8];
        // A ClientHello's start (the rest does not matter: it is refused,
        // or still arriving).
        incoming.extend_from_slice(&[1, 0, ((len - 4) >> 8) as u8, (len - 4) as u8]);
        incoming.resize(5 + len - 1, 0);
        let (mut plaintext, mut out) = (Vec::new(), Vec::new());
        let got = conn.receive(&mut incoming, &mut plaintext, &mut out);
        if refused {
            assert!(matches!(got, Err(TlsError::Protocol(_))), "{got:?}");
            assert_eq!(out, [21, 3, 3, 0, 2, 2, 22], "record_overflow alone");
        } else {
            assert!(got.is_ok(), "{got:?}");
            assert!(out.is_empty());
        }
    }
}

/// A server connection that has read nothing yet.
fn fresh(sc: &Arc<rustls::ServerConfig>) -> TlsConn {
    TlsConn::new(
        Arc::clone(sc),
        Instant::now(),
        Duration::from_secs(10),
        None,
    )
    .expect("conn")
}

#[cfg(feature = "acme")]
#[test]
fn a_tls_alpn_01_validation_sees_the_challenge_certificate_then_the_end() {
    use crate::tls::sni::ACME_TLS_ALPN;
    let keys = shared();
    let sc = server_config(&certificates(&["a"]), true, &keys).expect("config");
    // Without a challenge for the name: no certificate, a failed
    // handshake (the CA says so), not the default certificate.
    let cc = client(&[&rustls::version::TLS13], &[ACME_TLS_ALPN]);
    let mut p = Pair::new(Arc::clone(&cc), "c.test", Arc::clone(&sc));
    assert!(p.pump().is_err());
    // With one: the CA gets it (here the test certificate `c`),
    // ALPN acme-tls/1, and then the server ends the connection.
    let c = certificates(&["c"]).remove(0);
    keys.live.challenge("c.test", Some(Arc::clone(&c.key)));
    let mut p = Pair::new(cc, "c.test", sc);
    let ended = p.pump();
    assert_eq!(p.client.alpn_protocol(), Some(ACME_TLS_ALPN));
    let seen = p.client.peer_certificates().expect("a certificate")[0].clone();
    assert_eq!(seen, c.key.cert[0]);
    assert!(ended.is_err(), "nothing is served after a validation");
}

#[test]
fn rejected_early_data_is_skipped_each_record_once() {
    // brisk's server cannot read the client's early data: it must skip
    // it (RFC 8446 §4.2.10), within what rustls skips (16 KiB), each
    // record counted once: 7,000 bytes in ten records, and one record
    // of 12,000 bytes that comes with the ClientHello, while rustls
    // still writes its flight.
    skips_early_data(&[700; 10]);
    skips_early_data(&[12_000]);
}

/// A client that sends early data in records of `sizes` to a server that
/// cannot read it (it rejects the ticket) still gets its handshake done.
fn skips_early_data(sizes: &[usize]) {
    // A ticket that allows 0-RTT, from a server that took it (brisk never
    // does: a stale ticket from another server, as in a fleet's change;
    // rustls allows 0-RTT with its session cache only, not tickets).
    let certs = certificates(&["a"]);
    let mut allowing = (*server_config(&certs, false, &shared()).expect("config")).clone();
    allowing.max_early_data_size = 16_384;
    let mut cc = (*tls13()).clone();
    cc.enable_early_data = true;
    let cc = Arc::new(cc);
    let mut p = Pair::new(Arc::clone(&cc), "a.test", Arc::new(allowing));
    p.pump().expect("full handshake");
    let sc = server_config(&certs, true, &shared()).expect("config");
    let mut q = Pair::new(cc, "a.test", sc);
    let mut early = q.client.early_data().expect("0-RTT offered");
    for &size in sizes {
        early.write_all(&vec![b'e'; size]).expect("early data");
    }
    q.pump()
        .expect("the early data is skipped, the handshake ends");
    assert!(!q.client.is_handshaking());
    assert!(!q.client.is_early_data_accepted());
    assert!(!q.server.is_handshaking());
    q.request_arrives();
}
