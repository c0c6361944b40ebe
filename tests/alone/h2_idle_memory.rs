//! What an idle HTTP/2 connection holds: once its answer is out, no
//! buffer (the worker lends them while streams are open); a second
//! later, not even its answers' HPACK encoder and table, only the
//! client's table. The server runs in this process under an allocator
//! that counts the bytes live on the heap (the client's own, made on
//! the test's thread, are not counted); a few hundred h2c, then h2 over
//! TLS, connections each make one request (with a browser's fields, so
//! each HPACK table fills) and stay open, idle.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use brisk::config::{Config, Level, LogTarget};
use brisk::h2::frame::{self, flag, kind, Head, HEAD_LEN};
use brisk::h2::PREFACE;
use brisk::log::LogService;
use brisk::server::Server;

#[cfg(feature = "tls")]
use crate::common::tls;

use crate::counting::{not_counted, LIVE};

const CONNS: usize = 200;

/// A client connection's byte stream.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A browser's request, its literals indexed (so the table fills).
fn block() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x84]; // GET, http, /
    let fields: [(&str, &str); 5] = [
        (":authority", "www.example.org"),
        ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("accept-language", "en-US,en;q=0.9"),
        ("cookie", "session=7f3a9c2e41b04d8e; theme=dark"),
    ];
    for (n, v) in fields {
        b.push(0x40);
        b.push(n.len() as u8);
        b.extend_from_slice(n.as_bytes());
        assert!(v.len() < 127);
        b.push(v.len() as u8);
        b.extend_from_slice(v.as_bytes());
    }
    b
}

/// Sends one request and reads until its answer has ended.
fn one_request(s: &mut impl ReadWrite, block: &[u8]) {
    let mut out = PREFACE.to_vec();
    frame::write_settings(&mut out, &[]);
    frame::write_head(
        &mut out,
        block.len(),
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
    );
    out.extend_from_slice(block);
    s.write_all(&out).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while buf.len() >= at + HEAD_LEN {
            let h = Head::read(buf[at..at + HEAD_LEN].try_into().unwrap());
            let end = at + HEAD_LEN + h.len as usize;
            if buf.len() < end {
                break;
            }
            if h.stream == 1 && h.flags & flag::END_STREAM != 0 {
                return;
            }
            at = end;
        }
    }
}

/// Heap bytes per connection of `CONNS` connections made by `connect`
/// to a server on `tls` (h2 by ALPN) or h2c, each answered once: after
/// its answer, and once idle (a few of the worker's one-second sweeps
/// later, or as soon as it is under `idle_bound`).
fn per_connection(
    tls: bool,
    connect: impl Fn(SocketAddr) -> Box<dyn ReadWrite>,
    idle_bound: i64,
) -> (i64, i64) {
    not_counted(true);
    let dir = std::env::temp_dir().join(format!("brisk-h2-idle-{}-{tls}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), [b'x'; 100]).unwrap();
    let mut cfg = Config {
        listen: match tls {
            true => vec![],
            false => vec!["127.0.0.1:0".parse().unwrap()],
        },
        site: brisk::config::SiteConfig {
            root: dir.clone(),
            ..Config::default().site
        },
        workers: 1,
        ..Config::default()
    };
    #[cfg(feature = "tls")]
    if tls {
        cfg.tls = Some(tls::config());
    }
    cfg.log.access = LogTarget::Off;
    cfg.log.error = LogTarget::Off;
    cfg.log.level = Level::Off;
    let logs = LogService::start(&cfg.log).unwrap();
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    let running = server.start(&logs).unwrap();
    let block = block();
    // Warm: one connection first, closed, so lazily made state exists.
    let mut warm = connect(addr);
    one_request(&mut warm, &block);
    drop(warm);
    std::thread::sleep(Duration::from_millis(200));
    let before = LIVE.load(Ordering::Relaxed);
    let mut conns = Vec::with_capacity(CONNS);
    for _ in 0..CONNS {
        let mut s = connect(addr);
        one_request(&mut s, &block);
        conns.push(s);
    }
    let busy = (LIVE.load(Ordering::Relaxed) - before) / CONNS as i64;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut idle = busy;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        idle = (LIVE.load(Ordering::Relaxed) - before) / CONNS as i64;
        if idle < idle_bound {
            break;
        }
    }
    drop(conns);
    running.stop();
    logs.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    (busy, idle)
}

fn h2c(addr: SocketAddr) -> Box<dyn ReadWrite> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    Box::new(s)
}

#[test]
fn an_idle_h2_connection_keeps_the_clients_table_and_no_buffer() {
    let _alone = crate::counting::alone();
    // Its answer sent, a connection has given the buffers its streams
    // used back to the worker (4.7 KiB each were kept before); within a
    // few of the worker's one-second sweeps, it also drops its answers'
    // HPACK encoder and table, and the limits are the worker's, shared
    // (1,363 bytes were kept before), and keeps little more than the
    // client's table.
    let (busy, idle) = per_connection(false, h2c, 1280);
    eprintln!("heap per h2c connection: {busy} bytes after its answer, {idle} bytes idle");
    assert!(busy < 2560, "{busy} bytes per connection after its answer");
    assert!(idle < 1280, "{busy} -> {idle} bytes per idle connection");
}

/// The same over TLS (ALPN h2): the record layer's keys (brisk's own
/// after the handshake, their expanded forms dropped at rest: 3.2 KiB of
/// rustls's state were kept before) and the h2 session's, nothing more.
#[cfg(feature = "tls")]
#[test]
fn an_idle_h2_connection_over_tls_keeps_rustls_state_and_the_clients_table() {
    let _alone = crate::counting::alone();
    let config = {
        let mut c = (*tls::client_config(&[&rustls::version::TLS13])).clone();
        c.alpn_protocols = vec![b"h2".to_vec()];
        std::sync::Arc::new(c)
    };
    let connect = |addr: SocketAddr| -> Box<dyn ReadWrite> {
        let mut tcp = h2c(addr);
        let mut conn = tls::client_conn_with(config.clone(), "a.test");
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp).expect("TLS handshake");
        }
        assert_eq!(conn.alpn_protocol(), Some(&b"h2"[..]), "ALPN h2");
        Box::new(rustls::StreamOwned::new(conn, tcp))
    };
    // 4,629 bytes were kept before the encoder went at rest and the
    // limits were shared, 3,599 before brisk ran the record layer, 2,091
    // while rustls's KernelConnection stayed for TLS 1.3's KeyUpdates
    // (1,433 now; debug build).
    let (busy, idle) = per_connection(true, connect, 1700);
    eprintln!("heap per h2 connection over TLS: {busy} bytes after its answer, {idle} bytes idle");
    assert!(idle < 1700, "{busy} -> {idle} bytes per idle connection");
}
