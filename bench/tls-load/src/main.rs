//! Full TLS 1.3 handshakes as fast as a few threads can make them: each
//! connection connects, shakes hands (no session resumption), sends one
//! `GET` with `Connection: close`, reads the answer to its end and checks
//! its status line. Prints `N connections in S s` (as `openssl s_time`
//! does), the failures, and the client's own CPU time per connection.
//!
//! The server's certificate is not verified (as h2load and wrk do not):
//! the client's work per handshake is then its key share and the record
//! layer, so the server's cost, not the client's, sets the rate. Every
//! answer must still be `HTTP/1.1 200`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};

#[derive(Debug)]
struct Unverified(Vec<SignatureScheme>);

impl ServerCertVerifier for Unverified {
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
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

fn usage() -> ! {
    eprintln!("usage: tls-load [--threads N] [--seconds S] HOST:PORT PATH");
    std::process::exit(2);
}

/// One connection: handshake, GET, the whole answer; whether it was a 200.
fn one(config: &Arc<ClientConfig>, addr: SocketAddr, request: &[u8]) -> std::io::Result<bool> {
    let name = ServerName::try_from("localhost").expect("a valid name");
    let conn = ClientConnection::new(config.clone(), name).map_err(std::io::Error::other)?;
    let sock = TcpStream::connect(addr)?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(request)?;
    let mut answer = Vec::with_capacity(1024);
    match tls.read_to_end(&mut answer) {
        Ok(_) => {}
        // A server that closes without close_notify after a complete
        // `Connection: close` answer: the answer is still judged below.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e),
    }
    Ok(answer.starts_with(b"HTTP/1.1 200"))
}

fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<Rusage>::zeroed();
    // SAFETY: getrusage writes a `struct rusage` into the buffer given.
    unsafe { getrusage(0, usage.as_mut_ptr()) };
    // SAFETY: zero-initialised and filled by the call above.
    let u = unsafe { usage.assume_init() };
    let t = |s: i64, us: i64| s as f64 + us as f64 / 1e6;
    t(u.utime_s, u.utime_us) + t(u.stime_s, u.stime_us)
}

/// The head of Linux's `struct rusage` on 64-bit targets (two timevals;
/// the rest is room for the fields not read here).
#[repr(C)]
struct Rusage {
    utime_s: i64,
    utime_us: i64,
    stime_s: i64,
    stime_us: i64,
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

fn main() {
    let mut threads = 4usize;
    let mut seconds = 5f64;
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => {
                threads = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            _ if a.starts_with('-') => usage(),
            _ => rest.push(a),
        }
    }
    let [addr, path] = &rest[..] else { usage() };
    let addr: SocketAddr = addr.parse().unwrap_or_else(|_| usage());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let schemes = provider
        .signature_verification_algorithms
        .supported_schemes();
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 is supported")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unverified(schemes)))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let config = Arc::new(config);
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (config, request) = (config.clone(), request.clone().into_bytes());
            let (done, failed) = (done.clone(), failed.clone());
            std::thread::spawn(move || {
                while Instant::now() < end {
                    match one(&config, addr, &request) {
                        Ok(true) => done.fetch_add(1, Ordering::Relaxed),
                        _ => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker thread");
    }
    let wall = start.elapsed().as_secs_f64();
    let (done, failed) = (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    println!("{done} connections in {wall:.2}s; {failed} failed");
    println!(
        "client CPU {:.1} us per connection",
        cpu_seconds() / done.max(1) as f64 * 1e6
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
