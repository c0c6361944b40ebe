//! Allocations per servlet request once warm (cargo feature `servlets`),
//! told apart by who makes them: the Lua interpreter allocates through
//! mlua's allocator, whose every block has Lua's alignment (16 bytes on
//! 64-bit targets, `mlua::ffi::SYS_MIN_ALIGN`); brisk (and mlua's Rust
//! side) allocate with their types' alignment, which is at most 8 for
//! everything they allocate on this path. The server runs in this process
//! under a counting global allocator, as in tests/alone/zero_alloc.rs; the
//! client loop allocates nothing.
//!
//! A servlet's request table, its strings and the answer's string are
//! the interpreter's to make (they are Lua values); what brisk adds per
//! request must stay zero, and the interpreter's blocks come mostly from
//! the ones it freed (brisk's allocation function for Lua keeps them).
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use brisk::config::{Config, Level, LogTarget};
use brisk::log::LogService;
use brisk::server::Server;

use crate::counting::{LUA, RUST};

/// Sends `req` and reads one Content-Length answer into `buf`; returns
/// the body's length.
fn exchange(s: &mut TcpStream, req: &[u8], buf: &mut [u8]) -> usize {
    s.write_all(req).unwrap();
    let mut filled = 0;
    loop {
        let n = s.read(&mut buf[filled..]).unwrap();
        assert!(n > 0, "server closed early");
        filled += n;
        let Some(end) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = &buf[..end];
        assert!(
            head.starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{}",
            String::from_utf8_lossy(head)
        );
        let key = b"\r\nContent-Length: ";
        let at = head
            .windows(key.len())
            .position(|w| w == key)
            .expect("Content-Length")
            + key.len();
        let len: usize = head[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .fold(0, |n, &d| n * 10 + usize::from(d - b'0'));
        while filled < end + 4 + len {
            let n = s.read(&mut buf[filled..]).unwrap();
            assert!(n > 0, "server closed early");
            filled += n;
        }
        assert_eq!(filled, end + 4 + len, "one answer at a time");
        return len;
    }
}

/// Warms up with `warm` requests, then counts `rounds` more: (Lua,
/// Rust) allocations.
fn measure(s: &mut TcpStream, req: &[u8], warm: u64, rounds: u64, buf: &mut [u8]) -> (u64, u64) {
    for _ in 0..warm {
        exchange(s, req, buf);
    }
    let (lua, rust) = (LUA.load(Ordering::Relaxed), RUST.load(Ordering::Relaxed));
    for _ in 0..rounds {
        exchange(s, req, buf);
    }
    (
        LUA.load(Ordering::Relaxed) - lua,
        RUST.load(Ordering::Relaxed) - rust,
    )
}

#[test]
fn servlet_requests_allocate_only_in_the_interpreter() {
    let _alone = crate::counting::alone();
    let dir = std::env::temp_dir().join(format!("brisk-servlet-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("servlets")).unwrap();
    std::fs::write(
        dir.join("servlets/hello.lua"),
        "local state = 'not initialized'\n\
         function handler_init(cfg) state = 'initialized' end\n\
         function handle_request(req, res)\n\
           res:write(200, {['Content-Type'] = 'text/plain'}, 'hello! I am a servlet and my state is ' .. state .. '\\n')\n\
         end\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("servlets/json.lua"),
        "function handle_request(req, res)\n\
           local n = tonumber(req.args.n) or 100\n\
           local items = {}\n\
           for i = 1, n do\n\
             items[i] = { id = i, name = 'item ' .. i, price = i * 3 + 0.25, tags = { 'a', 'b' } }\n\
           end\n\
           res:write(200, {['Content-Type'] = 'application/json'}, brisk.json.encode(items))\n\
         end\n",
    )
    .unwrap();
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
    cfg.site.servlets.enable = true;
    let logs = LogService::start(&cfg.log).unwrap();
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    let running = server.start(&logs).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0u8; 1 << 16];

    let rounds = 500;
    let hello = b"GET /servlets/hello.lua HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(exchange(&mut s, hello, &mut buf), 50);
    // (Warm: a collection has run, whose freed blocks the next requests
    // take. A hello request leaves about 170 bytes of garbage, so the
    // first cycle comes after more than 1,000 requests.)
    let (lua, rust) = measure(&mut s, hello, 4 * rounds, rounds, &mut buf);
    println!("hello servlet: {lua} interpreter and {rust} other allocations in {rounds} requests");
    let json = b"GET /servlets/json.lua?n=100 HTTP/1.1\r\nHost: x\r\n\r\n";
    let (jlua, jrust) = measure(&mut s, json, rounds / 5, rounds / 5, &mut buf);
    println!(
        "JSON of 100 items: {jlua} interpreter and {jrust} other allocations in {} requests",
        rounds / 5
    );
    drop(s);
    running.stop();
    logs.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rust, 0, "brisk allocated for the hello servlet");
    assert_eq!(jrust, 0, "brisk allocated for the JSON servlet");
    // The interpreter's freed blocks are kept for its next ones
    // (engine/src/handlers/servlets/ffi/heap.rs): a hello request's table and strings, and
    // nearly all of a JSON one's 100 tables and strings, come from them
    // once warm (without it: about 9 and 600 a request).
    assert!(
        lua <= 2 * rounds,
        "{lua} interpreter allocations in {rounds} hello requests"
    );
    assert!(
        jlua <= 20 * (rounds / 5),
        "{jlua} interpreter allocations in {} JSON requests",
        rounds / 5
    );
}
