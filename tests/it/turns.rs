//! A worker's turns: a client that takes a large answer as fast as the
//! worker writes it (loopback, a fast LAN) holds the worker for a turn
//! (2 MiB), not for as long as its socket takes bytes: the worker's
//! other clients are served between its turns. Before, one `sendfile`
//! (or one loop of TLS records) went on while the client read, up to
//! 90 MB (50 ms) in one call, and every other client of the worker waited.

use crate::common;

use std::net::SocketAddr;

use common::*;

/// The large answer: many turns, and less than what its client's
/// receive buffer (below) takes without a read.
const LARGE: usize = 8 << 20;

fn site(config: &str) -> Builder {
    let mut b = Builder::new();
    b.file("large.bin", &pattern(LARGE))
        .file("small.txt", b"small\n")
        .access_log()
        .workers(1)
        .config(config);
    b
}

/// Asks for the large file on one connection and the small one on
/// another while the server is stopped, so that its worker finds both
/// requests ready at once, the large one first (epoll's order); checks
/// both answers, and that the small one was finished first (the access
/// log's order: a line is written when its answer's last byte is).
/// `tls`: over TLS (the site's TLS listener is `addrs[1]`).
fn the_small_answer_goes_between_the_large_ones_turns(s: &Server, addr: SocketAddr, tls: bool) {
    // Whole in the client's socket with no read: the worker's writes
    // never wait for it, as with a client that reads as fast as they come.
    let Some(stream) = connect_rcvbuf(addr, 4 * LARGE as i32, true) else {
        skip("needs root, for a receive buffer beyond net.core.rmem_max");
        return;
    };
    let mut large = Client::over(stream);
    let mut small = Client::connect(addr);
    #[cfg(feature = "tls")]
    if tls {
        large.start_tls(tls::client_conn("a.test"));
        small.start_tls(tls::client_conn("a.test"));
    }
    let _ = tls;
    large.wait_until_accepted();
    small.wait_until_accepted();
    s.signal(libc::SIGSTOP);
    wait_until("the server to stop", || stopped(s.pid()));
    large.send(b"GET /large.bin HTTP/1.1\r\nHost: a.test\r\n\r\n");
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    large.wait_until_delivered();
    small.wait_until_delivered();
    s.signal(libc::SIGCONT);
    let r = small.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.body, b"small\n");
    let r = large.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body == pattern(LARGE), "the large file, byte for byte");
    for path in [&b"GET /small.txt"[..], b"GET /large.bin"] {
        s.wait_access_line(|l| find(l, path).is_some());
    }
    let log = std::fs::read(&s.access_path).expect("access log");
    let at = |path: &[u8]| find(&log, path).expect("logged");
    assert!(
        at(b"GET /small.txt") < at(b"GET /large.bin"),
        "the small answer waited for the large one: {}",
        String::from_utf8_lossy(&log)
    );
}

/// Whether every thread of process `pid` is stopped.
fn stopped(pid: u32) -> bool {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/PID/task");
    tasks.flatten().all(|t| {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // The state follows the name's closing parenthesis (proc(5)).
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
    })
}

#[test]
fn a_fast_download_by_sendfile_lets_the_others_go_between_its_turns() {
    let s = site("").start();
    the_small_answer_goes_between_the_large_ones_turns(&s, s.addr(), false);
}

#[test]
fn a_fast_download_copied_lets_the_others_go_between_its_turns() {
    let s = site("[static]\nsendfile = false\n").start();
    the_small_answer_goes_between_the_large_ones_turns(&s, s.addr(), false);
}

#[cfg(feature = "tls")]
#[test]
fn a_fast_download_over_tls_lets_the_others_go_between_its_turns() {
    let mut b = site(&tls::section(&["a"], ""));
    b.listeners(2);
    let s = b.start();
    the_small_answer_goes_between_the_large_ones_turns(&s, s.addrs[1], true);
}
