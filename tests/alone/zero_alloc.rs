//! The engine's promise: once warm, answering static requests allocates
//! nothing (small file, many 1 KiB files, 1 MiB files, 16-deep
//! pipelining; and over h2c: a small file, 1 KiB files, 1 MiB files, ten
//! streams at once). The server runs in this process, embedded through the
//! library API, under a global allocator that counts every allocation on
//! every thread; the client loop itself allocates nothing, so any count
//! is the server's.
//!
//! Over HTTPS (cargo feature `tls`) the same requests on a TLS listener
//! of the same server: nothing either, since brisk's record layer opens
//! and seals records in the worker's buffers (rustls 0.23's made one
//! buffer per record it decrypted or encrypted). The client there is
//! rustls, on the test's thread, which is left out of the count.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use brisk::config::{Config, Level, LogTarget};
#[cfg(feature = "http2")]
use brisk::h2::frame::{self, flag, kind, setting, Head, HEAD_LEN};
#[cfg(feature = "http2")]
use brisk::h2::{hpack, PREFACE};
use brisk::log::LogService;
use brisk::server::Server;

use crate::counting::ALLOCS;

/// Reads until `n` complete responses (Content-Length framed) have arrived;
/// returns the total body bytes. Uses only `buf`, which must be big enough
/// for one batch of heads (bodies are skipped as they stream in).
fn read_responses(s: &mut impl Read, buf: &mut [u8], mut n: usize) -> u64 {
    let mut filled = 0;
    let mut body_left: u64 = 0;
    let mut total = 0;
    while n > 0 {
        if filled == 0 || (body_left == 0 && find_head_end(&buf[..filled]).is_none()) {
            let r = s.read(&mut buf[filled..]).expect("read");
            assert!(r > 0, "server closed early");
            filled += r;
        }
        if body_left > 0 {
            let take = body_left.min(filled as u64) as usize;
            buf.copy_within(take..filled, 0);
            filled -= take;
            body_left -= take as u64;
            total += take as u64;
            if body_left == 0 {
                n -= 1;
            }
            continue;
        }
        let Some(end) = find_head_end(&buf[..filled]) else {
            continue;
        };
        let head = &buf[..end];
        assert!(
            head.starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{}",
            String::from_utf8_lossy(head)
        );
        body_left = content_length(head);
        buf.copy_within(end..filled, 0);
        filled -= end;
        if body_left == 0 {
            n -= 1;
        }
    }
    assert_eq!(filled, 0, "unexpected extra bytes");
    total
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> u64 {
    let key = b"\r\nContent-Length: ";
    let at = head
        .windows(key.len())
        .position(|w| w == key)
        .expect("Content-Length")
        + key.len();
    head[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0, |n, &d| n * 10 + u64::from(d - b'0'))
}

/// An HTTP/2 client that allocates nothing once made (over TCP, or over
/// any other stream: TLS's client allocates on its own).
#[cfg(feature = "http2")]
pub struct H2Client<S = TcpStream> {
    s: S,
    buf: Vec<u8>,
    filled: usize,
    out: Vec<u8>,
    next: u32,
}

#[cfg(feature = "http2")]
impl<S: Read + Write> H2Client<S> {
    /// Sends a GET for each of `paths` (their blocks made in advance),
    /// then reads until every one of them has ended; returns the DATA
    /// bytes received. Window credit goes back as DATA arrives.
    pub fn get(&mut self, blocks: &[&[u8]]) -> u64 {
        self.out.clear();
        let first = self.next;
        for block in blocks {
            frame::write_head(
                &mut self.out,
                block.len(),
                kind::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                self.next,
            );
            self.out.extend_from_slice(block);
            self.next += 2;
        }
        self.s.write_all(&self.out).unwrap();
        let mut open = blocks.len();
        let mut data = 0u64;
        while open > 0 {
            while self.filled < HEAD_LEN || self.filled < HEAD_LEN + frame_len(&self.buf) {
                let r = self.s.read(&mut self.buf[self.filled..]).expect("read");
                assert!(r > 0, "server closed");
                self.filled += r;
            }
            let h = Head::read(self.buf[..HEAD_LEN].try_into().unwrap());
            let end = HEAD_LEN + h.len as usize;
            assert!(
                h.kind != kind::RST_STREAM && h.kind != kind::GOAWAY,
                "{h:?}"
            );
            if h.stream >= first && h.stream < self.next {
                if h.kind == kind::DATA && h.len > 0 {
                    data += h.len as u64;
                    self.out.clear();
                    frame::write_window_update(&mut self.out, 0, h.len);
                    frame::write_window_update(&mut self.out, h.stream, h.len);
                    self.s.write_all(&self.out).unwrap();
                }
                if h.flags & flag::END_STREAM != 0 && matches!(h.kind, kind::DATA | kind::HEADERS) {
                    open -= 1;
                }
            }
            self.buf.copy_within(end..self.filled, 0);
            self.filled -= end;
        }
        data
    }
}

#[cfg(feature = "http2")]
fn frame_len(b: &[u8]) -> usize {
    (u32::from_be_bytes([0, b[0], b[1], b[2]])) as usize
}

/// The header block of a GET of `path` (HPACK, nothing indexed).
#[cfg(feature = "http2")]
pub fn block(path: &str) -> Vec<u8> {
    let mut b = vec![0x82, 0x86]; // GET, http
    hpack::encode_field(b":path", path.as_bytes(), &mut b);
    hpack::encode_field(b":authority", b"x", &mut b);
    b
}

struct Site {
    dir: PathBuf,
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `step` `rounds` times to warm up (caches fill, buffers reach
/// their size), then `rounds` times counting the allocations, which must
/// be at most `allowed`.
fn scenario<S>(
    s: &mut S,
    buf: &mut [u8],
    (name, rounds, allowed): (&str, usize, u64),
    step: &mut dyn FnMut(&mut S, &mut [u8], usize),
) {
    for i in 0..rounds {
        step(s, buf, i);
    }
    let before = ALLOCS.load(Ordering::Relaxed);
    for i in 0..rounds {
        step(s, buf, i);
    }
    let spent = ALLOCS.load(Ordering::Relaxed) - before;
    println!("{name}: {spent} allocations in {rounds} rounds (at most {allowed})");
    assert!(
        spent <= allowed,
        "{name}: {spent} allocations in {rounds} rounds, more than {allowed}"
    );
}

/// The requests of every scenario, and their answers' body sizes.
struct Requests {
    small: Vec<u8>,
    files: Vec<Vec<u8>>,
    bigs: Vec<Vec<u8>>,
    pipelined: Vec<u8>,
    /// Files without an extension, typed by sniffing (`[static] sniff`):
    /// their first bytes are read once, with the cache entry.
    sniffed: Vec<Vec<u8>>,
}

impl Requests {
    fn new() -> Requests {
        let small = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        Requests {
            files: (0..100)
                .map(|i| format!("GET /f{i}.txt HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
                .collect(),
            bigs: (0..4)
                .map(|i| format!("GET /big{i}.bin HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
                .collect(),
            pipelined: small.repeat(16),
            sniffed: ["/notes", "/picture"]
                .map(|p| format!("GET {p} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
                .to_vec(),
            small,
        }
    }

    /// Every scenario over `s`, none allowed an allocation.
    fn run<S: Read + Write>(&self, s: &mut S, over: &str) {
        let mut buf = vec![0u8; 1 << 16];
        let named = |name: &str| format!("{name} over {over}");
        scenario(
            s,
            &mut buf,
            (&named("small file"), 2000, 0),
            &mut |s, buf, _| {
                s.write_all(&self.small).unwrap();
                assert_eq!(read_responses(s, buf, 1), 100);
            },
        );
        scenario(
            s,
            &mut buf,
            (&named("1 KiB files"), 2000, 0),
            &mut |s, buf, i| {
                s.write_all(&self.files[(i * 37) % self.files.len()])
                    .unwrap();
                assert_eq!(read_responses(s, buf, 1), 1024);
            },
        );
        scenario(
            s,
            &mut buf,
            (&named("1 MiB files"), 40, 0),
            &mut |s, buf, i| {
                s.write_all(&self.bigs[i % self.bigs.len()]).unwrap();
                assert_eq!(read_responses(s, buf, 1), 1 << 20);
            },
        );
        scenario(
            s,
            &mut buf,
            (&named("pipelined 16 deep"), 300, 0),
            &mut |s, buf, _| {
                s.write_all(&self.pipelined).unwrap();
                assert_eq!(read_responses(s, buf, 16), 1600);
            },
        );
        scenario(
            s,
            &mut buf,
            (&named("sniffed files"), 40, 0),
            &mut |s, buf, i| {
                s.write_all(&self.sniffed[i % 2]).unwrap();
                let want = [1024, 1 << 20][i % 2];
                assert_eq!(read_responses(s, buf, 1), want);
            },
        );
    }
}

#[test]
fn steady_state_requests_do_not_allocate() {
    let _alone = crate::counting::alone();
    let dir = std::env::temp_dir().join(format!("brisk-zero-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _site = Site { dir: dir.clone() };
    std::fs::write(dir.join("index.html"), [b'x'; 100]).unwrap();
    for i in 0..100 {
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            vec![b'a' + (i % 26) as u8; 1024],
        )
        .unwrap();
    }
    for i in 0..4 {
        std::fs::write(dir.join(format!("big{i}.bin")), vec![i as u8; 1 << 20]).unwrap();
    }
    std::fs::write(dir.join("notes"), [b'n'; 1024]).unwrap();
    let mut picture = vec![0u8; 1 << 20];
    picture[..8].copy_from_slice(b"\x89PNG\r\n\x1a\n");
    std::fs::write(dir.join("picture"), picture).unwrap();
    let mut cfg = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        site: brisk::config::SiteConfig {
            root: dir.clone(),
            ..Config::default().site
        },
        workers: 1,
        ..Config::default()
    };
    cfg.log.access = LogTarget::Off;
    cfg.log.error = LogTarget::Off;
    cfg.log.level = Level::Off;
    cfg.limits.keepalive_requests = u32::MAX;
    cfg.site.static_files.sniff = true;
    // With on-the-fly compression on, a request without Accept-Encoding
    // for a compressible file (the 1 KiB .txt files) takes the identity
    // path all the same: it must allocate nothing either.
    #[cfg(feature = "compress")]
    {
        cfg.site.compress.enable = true;
    }
    #[cfg(feature = "tls")]
    {
        cfg.tls = Some(tls::config());
    }
    let logs = LogService::start(&cfg.log).unwrap();
    let server = Server::bind(cfg).unwrap();
    let addrs = server.local_addrs();
    let running = server.start(&logs).unwrap();
    let requests = Requests::new();

    let mut s = TcpStream::connect(addrs[0]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    requests.run(&mut s, "TCP");
    // Each client stays connected to the end: a connection the server
    // closes while another scenario counts would count its bookkeeping.
    let _tcp = s;

    #[cfg(feature = "tls")]
    let _tls = {
        crate::counting::not_counted(true);
        let mut s = tls::connect(addrs[1]);
        requests.run(&mut s, "TLS");
        crate::counting::not_counted(false);
        s
    };
    #[cfg(feature = "http2")]
    h2_scenarios(addrs[0]);
    running.stop();
    logs.shutdown();
}

/// The TLS listener and its client.
#[cfg(feature = "tls")]
pub mod tls {
    use std::net::{SocketAddr, TcpStream};
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use brisk::config::TlsConfig;
    use brisk::tls::certs::{self, CertificateFiles};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};

    fn testdata(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("engine/src/tls/testdata")
            .join(name)
    }

    /// `[tls]` on 127.0.0.1 with the test certificate `a`.
    pub fn config() -> TlsConfig {
        let files = CertificateFiles {
            cert: testdata("a.pem"),
            key: testdata("a.key"),
            ocsp: None,
        };
        let cert = certs::load(&files, &|p| std::fs::read(p)).unwrap();
        TlsConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            certificates: vec![cert],
            session_tickets: true,
            session_cache: 100,
            handshake_timeout: Duration::from_secs(10),
            max_handshakes: 10,
            redirect_http: false,
            #[cfg(feature = "ops")]
            ticket_keys: None,
        }
    }

    /// The test certificate's files, as a configuration file's
    /// `[[tls.certificate]]` names them.
    #[cfg(feature = "upstreams")]
    pub fn certificate_keys() -> String {
        format!(
            "cert = \"{}\"\nkey = \"{}\"\n",
            testdata("a.pem").display(),
            testdata("a.key").display()
        )
    }

    /// A TLS 1.3 connection to `a.test` at `addr`.
    pub fn connect(addr: SocketAddr) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        connect_offering(addr, &[])
    }

    /// As [`connect`], offering the application protocols `alpn`.
    pub fn connect_offering(
        addr: SocketAddr,
        alpn: &[&[u8]],
    ) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(testdata("ca.pem")).unwrap())
            .unwrap();
        let mut c = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let name = ServerName::try_from("a.test").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(c), name).unwrap();
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // (No Nagle: an h2 request must not wait for the ACK of a
        // WINDOW_UPDATE.)
        s.set_nodelay(true).unwrap();
        rustls::StreamOwned::new(conn, s)
    }
}

/// A client of `addr` over h2c, its connection's preface and
/// settings sent.
#[cfg(feature = "http2")]
pub fn h2_client(addr: std::net::SocketAddr) -> H2Client {
    let s = TcpStream::connect(addr).unwrap();
    // (No Nagle: a request must not wait for the ACK of a WINDOW_UPDATE.)
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    h2_over(s)
}

/// An HTTP/2 client on the connection `s` (h2 agreed, if over TLS), its
/// preface and settings sent.
#[cfg(feature = "http2")]
pub fn h2_over<S: Read + Write>(s: S) -> H2Client<S> {
    let mut c = H2Client {
        s,
        buf: vec![0u8; 1 << 20],
        filled: 0,
        out: Vec::with_capacity(1 << 16),
        next: 1,
    };
    let mut hello = PREFACE.to_vec();
    frame::write_settings(&mut hello, &[(setting::INITIAL_WINDOW_SIZE, 1 << 20)]);
    frame::write_window_update(&mut hello, 0, 1 << 24);
    c.s.write_all(&hello).unwrap();
    c
}

/// The same promise over h2c, on the same server.
#[cfg(feature = "http2")]
fn h2_scenarios(addr: std::net::SocketAddr) {
    let mut c = h2_client(addr);
    let small = block("/index.html");
    let files: Vec<Vec<u8>> = (0..100).map(|i| block(&format!("/f{i}.txt"))).collect();
    let bigs: Vec<Vec<u8>> = (0..4).map(|i| block(&format!("/big{i}.bin"))).collect();
    let ten: Vec<&[u8]> = (0..10).map(|i| &files[i * 7][..]).collect();
    let mut scenario = |name: &str, rounds: usize, step: &mut dyn FnMut(&mut H2Client, usize)| {
        for i in 0..rounds {
            step(&mut c, i);
        }
        let before = ALLOCS.load(Ordering::Relaxed);
        for i in 0..rounds {
            step(&mut c, i);
        }
        let spent = ALLOCS.load(Ordering::Relaxed) - before;
        assert_eq!(
            spent, 0,
            "h2 {name}: {spent} allocations in {rounds} rounds"
        );
    };
    scenario("small file", 2000, &mut |c, _| {
        assert_eq!(c.get(&[&small]), 100)
    });
    scenario("1 KiB files", 2000, &mut |c, i| {
        assert_eq!(c.get(&[&files[(i * 37) % 100]]), 1024)
    });
    scenario("1 MiB files", 20, &mut |c, i| {
        assert_eq!(c.get(&[&bigs[i % 4]]), 1 << 20)
    });
    scenario("ten streams at once", 300, &mut |c, _| {
        assert_eq!(c.get(&ten), 10 * 1024)
    });
}
