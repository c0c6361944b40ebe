//! What a TLS connection costs in memory once established: bytes kept
//! per idle connection (issue #12: at most 4 KiB, no plaintext or record
//! buffers; 3.3 KiB with rustls's record layer, 1.1 KiB with brisk's and
//! rustls's `KernelConnection` for TLS 1.3's KeyUpdates, 0.4 KiB with
//! the two traffic secrets alone),
//! and heap allocations per request once the caller's buffers are warm
//! (none: rustls 0.23 made one per record it decrypted or encrypted). A rustls client talks to
//! `brisk::tls::conn::TlsConn` in memory, under a global allocator that
//! counts; only the server's calls are counted.
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisk::tls::certs::{self, CertificateFiles};
use brisk::tls::conn::TlsConn;
use brisk::tls::context::{server_config, Shared};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::counting::{ALLOCS, LIVE};

fn testdata(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("engine/src/tls/testdata")
        .join(name)
}

fn server() -> Arc<rustls::ServerConfig> {
    let files = CertificateFiles {
        cert: testdata("a.pem"),
        key: testdata("a.key"),
        ocsp: None,
    };
    let cert = certs::load(&files, &|p| std::fs::read(p)).expect("certificate");
    server_config(&[cert], true, &Shared::new(100).expect("ticket key")).expect("server config")
}

fn client() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(testdata("ca.pem")).expect("ca"))
        .expect("root");
    let c = rustls::ClientConfig::builder_with_provider(Arc::new(brisk::tls::provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(c)
}

/// The buffers a worker lends its connections.
#[derive(Default)]
struct Buffers {
    incoming: Vec<u8>,
    plaintext: Vec<u8>,
    out: Vec<u8>,
}

/// Runs the client's bytes through the server and back until quiet.
fn exchange(
    c: &mut rustls::ClientConnection,
    s: &mut TlsConn,
    b: &mut Buffers,
    sink: &mut Vec<u8>,
) {
    for _ in 0..10 {
        while c.wants_write() {
            c.write_tls(&mut b.incoming).expect("client writes");
        }
        if !b.incoming.is_empty() {
            s.receive(&mut b.incoming, &mut b.plaintext, &mut b.out)
                .expect("server reads");
        }
        if b.out.is_empty() {
            return;
        }
        let mut rd = &b.out[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).expect("client reads");
            c.process_new_packets().expect("client accepts");
            let mut buf = [0u8; 1024];
            while let Ok(n) = c.reader().read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.extend_from_slice(&buf[..n]);
            }
        }
        b.out.clear();
    }
}

#[test]
fn an_idle_tls_connection_keeps_its_keys_only_and_a_request_allocates_nothing() {
    let _alone = crate::counting::alone();
    let (sc, cc) = (server(), client());
    let name = ServerName::try_from("a.test").expect("name");
    let mut b = Buffers::default();
    let mut sink = Vec::with_capacity(1 << 16);

    // Idle connections: established, one request answered, clients gone.
    const N: usize = 200;
    let mut idle = Vec::with_capacity(N);
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..N {
        let mut c = rustls::ClientConnection::new(Arc::clone(&cc), name.clone()).expect("client");
        let mut s = TlsConn::new(
            Arc::clone(&sc),
            Instant::now(),
            Duration::from_secs(10),
            None,
        )
        .expect("server");
        exchange(&mut c, &mut s, &mut b, &mut sink);
        c.writer()
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .expect("request");
        exchange(&mut c, &mut s, &mut b, &mut sink);
        s.send(
            b"HTTP/1.1 204 No Content\r\n\r\n",
            &mut b.incoming,
            &mut b.out,
        )
        .expect("answer");
        exchange(&mut c, &mut s, &mut b, &mut sink);
        b.plaintext.clear();
        sink.clear();
        drop(c);
        // What the worker does once a connection has been idle a second.
        s.rest();
        idle.push(s);
    }
    let per_conn = (LIVE.load(Ordering::Relaxed) - before) / N as i64;
    let inline = std::mem::size_of::<TlsConn>() as i64;
    println!("heap bytes per idle TLS connection: {per_conn} (+ {inline} inline)");
    assert!(
        per_conn + inline <= 512,
        "an idle TLS connection keeps {per_conn} heap bytes + {inline} inline"
    );
    drop(idle);

    // Requests on one warm connection: count the server's calls only.
    let mut c = rustls::ClientConnection::new(Arc::clone(&cc), name).expect("client");
    let mut s = TlsConn::new(sc, Instant::now(), Duration::from_secs(10), None).expect("server");
    exchange(&mut c, &mut s, &mut b, &mut sink);
    let answer = vec![b'x'; 1000];
    let mut server_allocs = 0;
    const REQUESTS: u64 = 50;
    for i in 0..REQUESTS + 5 {
        c.writer()
            .write_all(b"GET /a HTTP/1.1\r\nHost: a.test\r\n\r\n")
            .expect("request");
        while c.wants_write() {
            c.write_tls(&mut b.incoming).expect("client writes");
        }
        let start = ALLOCS.load(Ordering::Relaxed);
        s.receive(&mut b.incoming, &mut b.plaintext, &mut b.out)
            .expect("request");
        b.plaintext.clear();
        s.send(&answer, &mut b.incoming, &mut b.out)
            .expect("answer");
        let used = ALLOCS.load(Ordering::Relaxed) - start;
        if i >= 5 {
            server_allocs += used;
        }
        exchange(&mut c, &mut s, &mut b, &mut sink);
        sink.clear();
    }
    let per_request = server_allocs as f64 / REQUESTS as f64;
    println!("server allocations per request (one record each way): {per_request}");
    // Records are opened in the caller's input and sealed in its output
    // (rustls 0.23 made a buffer per record, two per request).
    assert!(per_request == 0.0, "{per_request} allocations per request");
}
