//! A worker's turns: a client that takes a large answer as fast as the
//! worker writes it (loopback, a fast LAN), or sends an upload as fast as
//! the worker reads it, holds the worker for a turn (2 MiB), not for as
//! long as its socket moves bytes: the worker's other clients are served
//! between its turns. Before, one `sendfile` (or one loop of TLS
//! records) went on while the client read, up to 90 MB (50 ms) in one
//! call, and an upload was read to its end (seconds), while every other
//! client of the worker waited.

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
/// both answers, and that the small one was finished first.
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
    large.tls_if(tls);
    small.tls_if(tls);
    let request = b"GET /large.bin HTTP/1.1\r\nHost: a.test\r\n\r\n";
    ready_together(s, &mut large, request, &mut small);
    let r = large.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body == pattern(LARGE), "the large file, byte for byte");
    small_finished_first(s, b"GET /large.bin");
}

/// Checks that the small file's answer was finished before `other`'s
/// (the access log's order: a line is written when its answer's last
/// byte is).
fn small_finished_first(s: &Server, other: &[u8]) {
    for request in [&b"GET /small.txt"[..], other] {
        s.wait_access_line(|l| find(l, request).is_some());
    }
    let log = std::fs::read(&s.access_path).expect("access log");
    let at = |request: &[u8]| find(&log, request).expect("logged");
    assert!(
        at(b"GET /small.txt") < at(other),
        "the small answer waited for the other: {}",
        String::from_utf8_lossy(&log)
    );
}

/// Sends `request` on `other` and a GET of the small file on `small`
/// (both accepted first) while the server is stopped, so that its worker
/// finds both ready at once, `other`'s first (epoll's order); lets it go
/// on, and checks the small answer.
fn ready_together(s: &Server, other: &mut Client, request: &[u8], small: &mut Client) {
    other.wait_until_accepted();
    small.wait_until_accepted();
    s.signal(libc::SIGSTOP);
    wait_until("the server to stop", || stopped(s.pid()));
    other.send(request);
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    other.wait_until_delivered();
    small.wait_until_delivered();
    s.signal(libc::SIGCONT);
    the_small_answer(small);
}

/// Reads the small file's answer on `small`, and checks it.
pub(super) fn the_small_answer(small: &mut Client) {
    let r = small.response();
    assert_eq!(
        (r.status, &r.body[..]),
        (200, &b"small\n"[..]),
        "{}",
        r.head
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

/// The upload below: more than a turn, whole in the server's receive
/// buffer (grown by [`grow_listeners_rcvbuf`]) while it is stopped.
#[cfg(feature = "webdav")]
const UPLOAD: usize = 8 << 20;

/// Gives the server's listening sockets at `addr` a receive buffer of
/// `bytes` (beyond `net.core.rmem_max`), which the connections they
/// accept from then on inherit, window scale included: through a copy of
/// each one's descriptor (`pidfd_getfd`, root). False if refused.
#[cfg(feature = "webdav")]
fn grow_listeners_rcvbuf(s: &Server, addr: std::net::SocketAddr, bytes: i32) -> bool {
    let listening: Vec<u64> = tcp_sockets()
        .into_iter()
        .filter(|t| t.local == addr && t.state == TCP_LISTEN)
        .map(|t| t.inode)
        .collect();
    let fds = std::fs::read_dir(format!("/proc/{}/fd", s.pid())).expect("/proc/PID/fd");
    let mut grown = 0;
    // SAFETY: plain system calls on descriptors this function owns (the
    // pidfd and each copy, closed by `OwnedFd`).
    unsafe {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let pidfd = libc::syscall(libc::SYS_pidfd_open, s.pid() as libc::pid_t, 0);
        if pidfd < 0 {
            return false;
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd as i32);
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            let inode = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok());
            if !inode.is_some_and(|i: u64| listening.contains(&i)) {
                continue;
            }
            let number: i32 = fd
                .file_name()
                .to_str()
                .and_then(|n| n.parse().ok())
                .unwrap();
            let copy = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), number, 0);
            if copy < 0 {
                return false;
            }
            let copy = OwnedFd::from_raw_fd(copy as i32);
            let r = libc::setsockopt(
                copy.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &bytes as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as libc::socklen_t,
            );
            if r != 0 {
                return false;
            }
            grown += 1;
        }
    }
    grown > 0
}

/// An upload whose bytes are all there when the worker looks (as from a
/// client faster than the worker): a small GET ready at the same moment
/// is answered between its turns, before the upload is all read.
/// Before, the worker read an upload for as long as its bytes came
/// (seconds) before it looked at anything else. (The upload, chunked, is
/// refused 413 on the event loop once past `max_upload`, half of it:
/// the access log tells which answer was first. A PUT that fits is
/// answered once its file is placed, by a thread, whatever the order.)
#[cfg(feature = "webdav")]
#[test]
fn a_fast_upload_lets_the_others_go_between_its_turns() {
    let (mut b, _dav) =
        crate::webdav::builder(&format!("max_upload = {}\nfsync = false\n", UPLOAD / 2));
    b.file("small.txt", b"small\n").access_log().workers(1);
    let s = b.start();
    if !grow_listeners_rcvbuf(&s, s.addr(), 4 * UPLOAD as i32) {
        skip("needs root, for a receive buffer beyond net.core.rmem_max");
        return;
    }
    let mut up = s.connect();
    let mut small = s.connect();
    let mut request =
        b"PUT /dav/up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..UPLOAD >> 20 {
        request.extend_from_slice(b"100000\r\n");
        request.extend_from_slice(&[b'u'; 1 << 20]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    ready_together(&s, &mut up, &request, &mut small);
    let r = up.response();
    assert_eq!(r.status, 413, "{}", r.head);
    small_finished_first(&s, b"PUT /dav/up");
}
