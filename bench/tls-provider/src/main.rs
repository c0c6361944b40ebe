//! Measures one rustls crypto provider (chosen by cargo feature): server CPU
//! per handshake and handshakes per second for TLS 1.3 with ECDSA P-256 and
//! RSA 2048 certificates, full and resumed (stateless tickets and the
//! stateful session cache), and heap bytes held by an established server
//! connection. Client and server run in one thread and exchange records
//! through memory, so no socket or scheduler noise enters the figures; the
//! time counted as "server" is the time spent inside the server's calls.
//!
//! Usage: tls-provider-bench NAME CERT-DIR SECONDS
//! (CERT-DIR holds ec.pem/ec.key and rsa.pem/rsa.key, see ./run)

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ServerSessionMemoryCache;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, ServerConfig, ServerConnection,
    SignatureScheme,
};

/// Counts live heap bytes, for the bytes-per-connection figure.
struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}
#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
fn ticketer() -> Arc<dyn rustls::server::ProducesTickets> {
    rustls::crypto::ring::Ticketer::new().unwrap()
}
#[cfg(feature = "aws-lc-rs")]
fn provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}
#[cfg(feature = "aws-lc-rs")]
fn ticketer() -> Arc<dyn rustls::server::ProducesTickets> {
    rustls::crypto::aws_lc_rs::Ticketer::new().unwrap()
}

/// The client checks the server's handshake signature (as a real client
/// does) but trusts any certificate: only the server's cost is measured.
#[derive(Debug)]
struct AnyCert(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.0)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn server_config(dir: &Path, kind: &str, tickets: bool) -> Arc<ServerConfig> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join(format!("{kind}.pem")))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{kind}.key"))).unwrap();
    let mut c = ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    c.session_storage = ServerSessionMemoryCache::new(4096);
    if tickets {
        c.ticketer = ticketer();
    }
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

fn client_config(resume: bool) -> Arc<ClientConfig> {
    // Both providers offer X25519 first; pin it so that the key exchange is
    // the same one (aws-lc-rs could also do X25519MLKEM768, ring cannot).
    let mut p = provider();
    p.kx_groups.retain(|g| g.name() == rustls::NamedGroup::X25519);
    let algs = p.signature_verification_algorithms;
    let mut c = ClientConfig::builder_with_provider(Arc::new(p))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(algs)))
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    if !resume {
        c.resumption = Resumption::disabled();
    }
    Arc::new(c)
}

/// Runs one handshake to completion (including the session tickets the
/// server sends after it), returning the time spent in server calls.
fn handshake(client: &mut ClientConnection, server: &mut ServerConnection, buf: &mut Vec<u8>) -> Duration {
    let mut in_server = Duration::ZERO;
    loop {
        buf.clear();
        while client.wants_write() {
            client.write_tls(buf).unwrap();
        }
        let t = Instant::now();
        let mut rd = &buf[..];
        while !rd.is_empty() {
            server.read_tls(&mut rd).unwrap();
            server.process_new_packets().unwrap();
        }
        buf.clear();
        while server.wants_write() {
            server.write_tls(buf).unwrap();
        }
        in_server += t.elapsed();
        let mut rd = &buf[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).unwrap();
            client.process_new_packets().unwrap();
        }
        if !client.is_handshaking() && !server.is_handshaking() && !client.wants_write() && !server.wants_write() {
            return in_server;
        }
    }
}

fn measure(label: &str, sc: &Arc<ServerConfig>, cc: &Arc<ClientConfig>, secs: u64, expect_resumed: bool) {
    let name = ServerName::try_from("localhost").unwrap();
    let mut buf = Vec::with_capacity(16 * 1024);
    // Warm up (and, for resumption, fill the client's session store).
    for _ in 0..20 {
        let mut c = ClientConnection::new(cc.clone(), name.clone()).unwrap();
        let mut s = ServerConnection::new(sc.clone()).unwrap();
        handshake(&mut c, &mut s, &mut buf);
    }
    let start = Instant::now();
    let mut server = Duration::ZERO;
    let mut n = 0u64;
    let mut resumed = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        let mut c = ClientConnection::new(cc.clone(), name.clone()).unwrap();
        let t = Instant::now();
        let mut s = ServerConnection::new(sc.clone()).unwrap();
        server += t.elapsed();
        server += handshake(&mut c, &mut s, &mut buf);
        if c.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
            resumed += 1;
        }
        let t = Instant::now();
        drop(s);
        server += t.elapsed();
        n += 1;
    }
    let wall = start.elapsed();
    assert_eq!(resumed, if expect_resumed { n } else { 0 }, "{label}: resumption not as expected");
    println!(
        "  {label:<28} server {:>7.1} µs/handshake = {:>7.0} handshakes/s of one core   (client+server pair: {:>6.0}/s)",
        server.as_secs_f64() * 1e6 / n as f64,
        n as f64 / server.as_secs_f64(),
        n as f64 / wall.as_secs_f64()
    );
}

/// Heap bytes an established, idle server connection keeps, averaged over
/// many connections (their clients dropped).
fn bytes_per_connection(sc: &Arc<ServerConfig>, cc: &Arc<ClientConfig>) -> f64 {
    let name = ServerName::try_from("localhost").unwrap();
    let mut buf = Vec::with_capacity(16 * 1024);
    const N: usize = 1000;
    let mut servers = Vec::with_capacity(N);
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..N {
        let mut c = ClientConnection::new(cc.clone(), name.clone()).unwrap();
        let mut s = ServerConnection::new(sc.clone()).unwrap();
        handshake(&mut c, &mut s, &mut buf);
        // One small request and answer, so that the record layer has run.
        c.writer().write_all_ok(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        buf.clear();
        c.write_tls(&mut buf).unwrap();
        let mut rd = &buf[..];
        s.read_tls(&mut rd).unwrap();
        s.process_new_packets().unwrap();
        let mut sink = [0u8; 256];
        let _ = std::io::Read::read(&mut s.reader(), &mut sink).unwrap();
        s.writer().write_all_ok(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        buf.clear();
        s.write_tls(&mut buf).unwrap();
        drop(c);
        servers.push(s);
    }
    let after = LIVE.load(Ordering::Relaxed);
    drop(servers);
    (after - before) as f64 / N as f64
}

/// Server CPU to encrypt 1 MiB of response body into records (the work
/// per large file once the handshake is done), in MB/s.
fn bulk(sc: &Arc<ServerConfig>, cc: &Arc<ClientConfig>, secs: u64) -> f64 {
    let name = ServerName::try_from("localhost").unwrap();
    let mut buf = Vec::with_capacity(2 << 20);
    let mut c = ClientConnection::new(cc.clone(), name).unwrap();
    let mut s = ServerConnection::new(sc.clone()).unwrap();
    handshake(&mut c, &mut s, &mut buf);
    let body = vec![b'x'; 1 << 20];
    let mut sink = vec![0u8; 1 << 20];
    let start = Instant::now();
    let mut server = Duration::ZERO;
    let mut bytes = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        buf.clear();
        let t = Instant::now();
        let mut left = &body[..];
        while !left.is_empty() {
            let n = s.writer().write(left).unwrap();
            left = &left[n..];
            while s.wants_write() {
                s.write_tls(&mut buf).unwrap();
            }
        }
        server += t.elapsed();
        let mut rd = &buf[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets().unwrap();
            while let Ok(n) = std::io::Read::read(&mut c.reader(), &mut sink) {
                if n == 0 {
                    break;
                }
            }
        }
        bytes += body.len() as u64;
    }
    println!("  (bulk suite: {:?})", s.negotiated_cipher_suite().map(|c| c.suite()));
    bytes as f64 / server.as_secs_f64() / 1e6
}

trait WriteAllOk {
    fn write_all_ok(&mut self, b: &[u8]);
}
impl<W: std::io::Write> WriteAllOk for W {
    fn write_all_ok(&mut self, b: &[u8]) {
        self.write_all(b).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, dir, secs) = (&args[1], Path::new(&args[2]), args[3].parse::<u64>().unwrap());
    println!("{name}:");
    for kind in ["ec", "rsa"] {
        let label = if kind == "ec" { "ECDSA P-256" } else { "RSA 2048" };
        let tickets = server_config(dir, kind, true);
        let cache = server_config(dir, kind, false);
        measure(&format!("{label} full"), &tickets, &client_config(false), secs, false);
        measure(&format!("{label} resumed (ticket)"), &tickets, &client_config(true), secs, true);
        measure(&format!("{label} resumed (cache)"), &cache, &client_config(true), secs, true);
        println!(
            "  {label:<28} {:.0} heap bytes per established server connection (+ {} inline)",
            bytes_per_connection(&tickets, &client_config(false)),
            std::mem::size_of::<ServerConnection>()
        );
    }
    println!(
        "  {:<28} server {:.0} MB/s encrypting (1 MiB writes into records)",
        "bulk",
        bulk(&server_config(dir, "ec", true), &client_config(false), secs)
    );
}
