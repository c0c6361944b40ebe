//! Allocations per warm FastCGI request (issue #27's scenario 4, hello.php
//! through php-fpm): a keep-alive client, brisk in this process, and a
//! stand-in application on a unix socket on a thread of its own (not
//! counted) that answers as php-fpm does, with the connection kept
//! (`keepalive`). None now. 3 before 2026-12-06 16:00 UTC: the
//! script's URL path and file name are written in buffers the scripts
//! before gave back to the site's `Scripts` (`Scripts::give_back`), the
//! log's label in a spare buffer of the upstream pool, given back with
//! the producer's (-3). 7
//! before 2026-12-06 15:00 UTC: the plan's and the producer's boxes are
//! those of the answers before, kept emptied by the worker's upstream
//! pool (`sys::boxes`, `Produce::recycle`), and the PARAMS records and
//! the answer's fields are written in spare buffers given back to it
//! (-4, as the proxy's: `proxy_alloc.rs`). 8
//! before 2026-12-05 14:15 UTC: the answer's CGI head is parsed walking
//! its lines in place, not from a list of them (-1). 12 before
//! 2026-12-05 14:00 UTC: the CGI variables are written straight
//! into the PARAMS records (`cgi::env::VarSink`), not into a buffer and
//! an index first, nor from a list of the request's fields, and a
//! field's `HTTP_` name is made on the stack (-4). 13 before 2026-12-05: the 64 KiB buffer the application's records are
//! read into is the one the answer before gave back to the worker's
//! upstream pool (`Pool::read_buffer`: one kept, freed when the worker
//! rests) (-1). 17 before 2026-12-02: the run goes to its exchange by value, not in
//! a box, and the HTTP/1.1 sink's state reuses the last one's box (-2,
//! as the proxy's); the request's records and the answer's head
//! are written in spare buffers the answers before gave back to the
//! worker's upstream pool (-1, as the proxy's: `Pool::buffer`), and the
//! body read with the head is copied into the buffer the run lends
//! rather than swapped with it, which took the run's buffer along to be
//! dropped (-1). 32 before 2026-11-29 09:30 UTC: the unix socket's path shared by the
//! rule, the balancer, the pool and the log rather than copied by each
//! (-5), the request's records (BEGIN_REQUEST, PARAMS, the end of STDIN)
//! written in one buffer (-3), the answer's CGI head fields sized once
//! (-3), the body read with the head kept in the head's buffer (-1), the
//! script's file name and the log's label made in one go each (-2), a
//! field's `HTTP_` name in a buffer sized once (-1).
//!
//! (`BRISK_ALLOC_TRACE=1 cargo test --test alone -- fastcgi
//! --nocapture` prints the backtrace of each one, should one come back.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

use brisk::handlers::fastcgi::{peer, record};

use crate::counting::{allocs_per, not_counted};
use crate::embedded::Embedded;

/// At most this many allocations a FastCGI request, warm.
const RATCHET: u64 = 0;

/// What php-fpm answers for `<?php echo "Hello, world\n";`.
const HEAD: &[u8] = b"X-Powered-By: PHP/8.2\r\nContent-type: text/html; charset=UTF-8\r\n\r\n";
const HELLO: &[u8] = b"Hello, world\n";

/// Serves one kept connection: each request (up to its empty STDIN
/// record) gets php-fpm's answer, in one write.
fn serve(mut conn: UnixStream) {
    not_counted(true);
    let mut buf = Vec::with_capacity(1 << 16);
    let mut chunk = [0u8; 8192];
    loop {
        while let Some(rec) = peer::read_record(&buf) {
            let (kind, id, end, size) = (rec.kind, rec.id, rec.content.is_empty(), rec.size());
            buf.drain(..size);
            if kind == record::STDIN && end {
                let mut out = Vec::new();
                peer::stdout(&mut out, id, &[HEAD, HELLO].concat());
                peer::stdout_end(&mut out, id);
                peer::end_request(&mut out, id, 0, record::REQUEST_COMPLETE);
                if conn.write_all(&out).is_err() {
                    return;
                }
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads one answer, to the end of its body (chunked: its last chunk).
fn answer(s: &mut TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(5).position(|w| w == b"0\r\n\r\n") {
            assert!(buf.starts_with(b"HTTP/1.1 200 "), "{buf:?}");
            buf.drain(..end + 5);
            return;
        }
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            if let Some(n) = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map(|n| n.trim().parse::<usize>().unwrap())
            {
                if buf.len() >= end + 4 + n {
                    assert!(buf.starts_with(b"HTTP/1.1 200 "), "{buf:?}");
                    buf.drain(..end + 4 + n);
                    return;
                }
            }
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn a_warm_fastcgi_request_allocates_at_most_the_ratchet() {
    let _alone = crate::counting::alone();
    not_counted(true);
    let dir = std::env::temp_dir().join(format!("brisk-fcgi-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hello.php"), "<?php\necho \"Hello, world\\n\";\n").unwrap();
    let sock = dir.join("app.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || {
        not_counted(true);
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || serve(conn));
        }
    });
    let server = Embedded::start(
        "fcgi-alloc",
        &format!(
            "[limits]\nkeepalive_requests = 1000000\n\
             [[fastcgi]]\npattern = \"*.php\"\nto = \"unix:{}\"\nroot = \"{}\"\nkeepalive = 4\n",
            sock.display(),
            Path::new(&dir).display()
        ),
    );
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = b"GET /hello.php HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: wrk\r\n\r\n";
    let mut buf = Vec::with_capacity(1 << 16);
    not_counted(false);
    let per = allocs_per(500, || {
        s.write_all(request).unwrap();
        answer(&mut s, &mut buf);
    });
    println!("a warm FastCGI request: {per:.2} allocations");
    not_counted(true);
    drop(s);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        per <= RATCHET as f64,
        "{per:.2} allocations a FastCGI request, more than {RATCHET}"
    );
}
