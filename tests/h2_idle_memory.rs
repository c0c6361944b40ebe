//! What an idle HTTP/2 connection holds: once its answer is out, no
//! buffer (the worker lends them while streams are open); a second
//! later, not even its answers' HPACK table, only the client's.
//! The server runs in this process under an allocator that counts the
//! bytes live on the heap; a few hundred h2c connections each make one
//! request (with a browser's fields, so each HPACK table fills) and stay
//! open, idle.

#![cfg(feature = "http2")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use brisk::config::{Config, Level, LogTarget};
use brisk::h2::frame::{self, flag, kind, Head, HEAD_LEN};
use brisk::h2::PREFACE;
use brisk::log::LogService;
use brisk::server::Server;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: defers to the system allocator; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CONNS: usize = 200;

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
fn one_request(s: &mut TcpStream, block: &[u8]) {
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

#[test]
fn an_idle_h2_connection_keeps_the_clients_table_and_no_buffer() {
    let dir = std::env::temp_dir().join(format!("brisk-h2-idle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), [b'x'; 100]).unwrap();
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
    let logs = LogService::start(&cfg.log).unwrap();
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    let running = server.start(&logs).unwrap();
    let block = block();
    // Warm: one connection first, closed, so lazily made state exists.
    let mut warm = TcpStream::connect(addr).unwrap();
    one_request(&mut warm, &block);
    drop(warm);
    std::thread::sleep(Duration::from_millis(200));
    let before = LIVE.load(Ordering::Relaxed);
    let mut conns = Vec::with_capacity(CONNS);
    for _ in 0..CONNS {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        one_request(&mut s, &block);
        conns.push(s);
    }
    let busy = (LIVE.load(Ordering::Relaxed) - before) / CONNS as i64;
    // Its answer sent, a connection has given the buffers its streams
    // used back to the worker (4.7 KiB each were kept before); within a
    // few of the worker's one-second sweeps, it also forgets its answers'
    // HPACK table and keeps little more than the client's.
    assert!(busy < 2560, "{busy} bytes per connection after its answer");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut idle = busy;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        idle = (LIVE.load(Ordering::Relaxed) - before) / CONNS as i64;
        if idle < 1536 {
            break;
        }
    }
    eprintln!("heap per h2c connection: {busy} bytes after its answer, {idle} bytes idle");
    assert!(idle < 1536, "{busy} -> {idle} bytes per idle connection");
    drop(conns);
    running.stop();
    logs.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
