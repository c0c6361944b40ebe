//! The reverse proxy with several upstreams: `balance` (each policy's
//! choices, from one worker), failures (a refused or silent upstream,
//! one marked down, every one down), retries (an idempotent request to
//! the next upstream; a kept connection the upstream had closed) and the
//! active health checks. The upstreams are small HTTP/1.1 servers
//! written here, threads on 127.0.0.1 that say who they are.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;

/// How an upstream behaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Answers every request, keeping the connection.
    Answer,
    /// Reads requests and never answers.
    Silent,
    /// Answers the first request of each connection, then reads the
    /// second and closes without a word (a kept connection it dropped
    /// just as brisk reused it).
    CloseSecond,
    /// Answers a request, then closes the connection (one it keeps no
    /// longer while brisk has it idle).
    CloseIdle,
}

/// An upstream named `name`: what it was asked (`METHOD PATH`, in
/// order), and the status its `/healthz` answers.
struct App {
    name: &'static str,
    addr: SocketAddr,
    got: Arc<Mutex<Vec<String>>>,
    conns: Arc<Mutex<usize>>,
    /// Connections it served and closed.
    ended: Arc<AtomicUsize>,
    health: Arc<AtomicU16>,
    stop: Arc<AtomicBool>,
    /// Requests to `/api/hold` wait for a word here.
    release: mpsc::Sender<()>,
    accept: Option<thread::JoinHandle<()>>,
}

impl App {
    fn start(name: &'static str, mode: Mode) -> App {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(Mutex::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let ended2 = Arc::clone(&ended);
        let health = Arc::new(AtomicU16::new(200));
        let stop = Arc::new(AtomicBool::new(false));
        let (release, hold) = mpsc::channel::<()>();
        let hold = Arc::new(Mutex::new(hold));
        let (got2, conns2, health2, stop2) = (
            Arc::clone(&got),
            Arc::clone(&conns),
            Arc::clone(&health),
            Arc::clone(&stop),
        );
        let accept = thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                let conn = match listener.accept() {
                    Ok((conn, _)) => conn,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                *conns2.lock().unwrap() += 1;
                let (got, health, hold) =
                    (Arc::clone(&got2), Arc::clone(&health2), Arc::clone(&hold));
                let ended = Arc::clone(&ended2);
                thread::spawn(move || {
                    serve(conn, name, mode, &got, &health, &hold);
                    ended.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        App {
            name,
            addr,
            got,
            conns,
            ended,
            health,
            stop,
            release,
            accept: Some(accept),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it was asked, health checks left out.
    fn asked(&self) -> Vec<String> {
        let got = self.got.lock().unwrap();
        got.iter()
            .filter(|r| !r.contains("/healthz"))
            .cloned()
            .collect()
    }

    fn checks(&self) -> usize {
        let got = self.got.lock().unwrap();
        got.iter().filter(|r| r.contains("/healthz")).count()
    }

    /// Stops listening: its port refuses connections from now on.
    fn close(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.close();
    }
}

/// Serves one connection of an upstream.
fn serve(
    mut conn: TcpStream,
    name: &str,
    mode: Mode,
    got: &Mutex<Vec<String>>,
    health: &AtomicU16,
    hold: &Mutex<mpsc::Receiver<()>>,
) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut buf = Vec::new();
    for n in 1.. {
        let Some(line) = read_request(&mut conn, &mut buf) else {
            return;
        };
        got.lock().unwrap().push(line.clone());
        if mode == Mode::Silent || (mode == Mode::CloseSecond && n == 2) {
            if mode == Mode::Silent {
                thread::sleep(IO_TIMEOUT);
            }
            return;
        }
        if line.ends_with("/api/hold") {
            let _ = hold.lock().unwrap().recv_timeout(IO_TIMEOUT);
        }
        let status = match line.ends_with("/healthz") {
            true => health.load(Ordering::SeqCst),
            false => 200,
        };
        let answer = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{name}",
            name.len()
        );
        if conn.write_all(answer.as_bytes()).is_err() || mode == Mode::CloseIdle {
            return;
        }
    }
}

/// Reads one request (its head, and a body by its Content-Length) from
/// `conn`, `buf` holding what came after the last: its `METHOD PATH`.
fn read_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let mut piece = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .split("\r\n")
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |n| n.parse::<usize>().unwrap());
            if buf.len() >= end + 4 + len {
                let line = String::from_utf8_lossy(&buf[..end]);
                let first = line.split("\r\n").next().unwrap_or("");
                let what = first.rsplit_once(' ').map_or(first, |(w, _)| w).to_string();
                buf.drain(..end + 4 + len);
                return Some(what);
            }
        }
        match conn.read(&mut piece) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&piece[..n]),
        }
    }
}

/// brisk with `rules` (TOML) and one worker.
fn brisk(rules: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"static\n");
    b.config(rules);
    b.start()
}

/// A `[[reverse_proxy]]` rule for `/api/` to `apps` with `extra` keys.
fn rule(apps: &[&App], extra: &str) -> String {
    let to: Vec<String> = apps.iter().map(|a| format!("\"{}\"", a.url())).collect();
    format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = [{}]\n{extra}\n",
        to.join(", ")
    )
}

/// An address nothing listens on (connections to it are refused).
fn refusing() -> String {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    format!("http://{addr}")
}

/// Who answered `GET path` (the body), with its status.
fn who(s: &Server, path: &str) -> (u16, String) {
    let r = s.get(path);
    (r.status, r.text())
}

#[test]
fn round_robin_takes_each_upstream_in_turn_and_each_rule_has_its_turn() {
    let apps = [
        App::start("a", Mode::Answer),
        App::start("b", Mode::Answer),
        App::start("c", Mode::Answer),
    ];
    let to: Vec<String> = apps.iter().map(|a| format!("\"{}\"", a.url())).collect();
    let to = to.join(", ");
    let s = brisk(&format!(
        "[[reverse_proxy]]\npath = \"/one/\"\nto = [{to}]\n\
         [[reverse_proxy]]\npath = \"/two/\"\nto = [{to}]\n"
    ));
    let mut seen = Vec::new();
    for _ in 0..4 {
        for path in ["/one/x", "/two/x"] {
            let (status, name) = who(&s, path);
            assert_eq!(status, 200);
            seen.push(name);
        }
    }
    assert_eq!(seen, ["a", "a", "b", "b", "c", "c", "a", "a"]);
    assert_eq!(apps[0].checks(), 0, "no health checks without `health`");
}

#[test]
fn least_conn_avoids_the_upstream_busy_with_a_request() {
    let a = App::start("a", Mode::Answer);
    let b = App::start("b", Mode::Answer);
    let s = brisk(&rule(&[&a, &b], "balance = \"least_conn\""));
    let mut held = s.connect();
    held.send(b"GET /api/hold HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_until("the held request upstream", || {
        a.asked().len() + b.asked().len() == 1
    });
    let busy = if a.asked().len() == 1 { &a } else { &b };
    let free = if a.asked().len() == 1 { &b } else { &a };
    for _ in 0..4 {
        assert_eq!(who(&s, "/api/x"), (200, free.name.to_string()));
    }
    busy.release.send(()).unwrap();
    let r = held.response();
    assert_eq!((r.status, r.text()), (200, busy.name.to_string()));
    // Both idle again: taken in turn.
    let names: Vec<String> = (0..2).map(|_| who(&s, "/api/y").1).collect();
    assert!(names.contains(&"a".into()) && names.contains(&"b".into()));
}

#[cfg(feature = "ops")]
#[test]
fn ip_hash_sends_a_client_to_the_same_upstream() {
    let apps = [
        App::start("a", Mode::Answer),
        App::start("b", Mode::Answer),
        App::start("c", Mode::Answer),
    ];
    let refs: Vec<&App> = apps.iter().collect();
    let s = brisk(&format!(
        "[proxy]\ntrusted = [\"127.0.0.1\"]\n{}",
        rule(&refs, "balance = \"ip_hash\"")
    ));
    let mut homes = std::collections::BTreeSet::new();
    for client in 1..=12 {
        let from = format!("X-Forwarded-For: 192.0.2.{client}\r\n");
        let names: Vec<String> = (0..4).map(|_| s.get_with("/api/x", &from).text()).collect();
        assert!(names.iter().all(|n| *n == names[0]), "{from}: {names:?}");
        homes.insert(names[0].clone());
    }
    assert!(homes.len() > 1, "the clients spread: {homes:?}");
}

#[test]
fn first_takes_the_first_up_and_a_get_to_a_refusing_one_goes_to_the_next() {
    let mut a = App::start("a", Mode::Answer);
    let b = App::start("b", Mode::Answer);
    // (No kept connections: a's would outlive its listener.)
    let s = brisk(&rule(&[&a, &b], "balance = \"first\"\nkeepalive = 0"));
    for _ in 0..3 {
        assert_eq!(who(&s, "/api/x"), (200, "a".into()));
    }
    a.close();
    // Refused: sent again to the next one, then skipped for fail_timeout.
    for _ in 0..3 {
        assert_eq!(who(&s, "/api/x"), (200, "b".into()));
    }
    assert_eq!(b.asked(), ["GET /api/x"; 3]);
}

/// brisk with a rule whose first upstream refuses connections (never
/// marked down) and whose second, `b`, answers.
fn refused_then_b() -> (App, Server) {
    let b = App::start("b", Mode::Answer);
    let refused = refusing();
    let s = brisk(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = [\"{refused}\", \"{}\"]\n\
         balance = \"first\"\nmax_fails = 0\n",
        b.url()
    ));
    (b, s)
}

#[test]
fn only_idempotent_requests_go_to_the_next_upstream() {
    let (b, s) = refused_then_b();
    for _ in 0..2 {
        assert_eq!(who(&s, "/api/get"), (200, "b".into()));
    }
    let post = s.request(
        b"POST /api/post HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
    );
    assert_eq!(post.status, 502, "{}", post.head);
    let put = s.request(
        b"PUT /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
    );
    assert_eq!((put.status, put.text()), (200, "b".into()), "{}", put.head);
    assert_eq!(b.asked(), ["GET /api/get", "GET /api/get", "PUT /api/put"]);
}

/// The error log's `[error]` lines once one holds `last`, from their
/// level on (the time left out), and how long an upstream stays down
/// written `down Ns more`.
fn error_lines(s: &Server, last: &str) -> Vec<String> {
    s.wait_stderr_line(last);
    let err = s.stderr();
    let lines = err
        .lines()
        .filter_map(|l| l.find("[error]").map(|at| &l[at..]));
    lines
        .map(|l| {
            let mut parts = l.split("down ");
            let first = parts.next().unwrap_or_default().to_string();
            parts.fold(first, |mut l, part| {
                let digits =
                    part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                l.push_str("down ");
                if digits > 0 {
                    l.push('N');
                }
                l.push_str(&part[digits..]);
                l
            })
        })
        .collect()
}

#[test]
fn none_reachable_is_a_502_then_every_one_down_a_503() {
    let (one, two) = (refusing(), refusing());
    let s = brisk(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = [\"{one}\", \"{two}\"]\n"
    ));
    let r = s.get("/api/x");
    assert_eq!(r.status, 502, "{}", r.head);
    let r = s.get("/api/x?y");
    assert_eq!(r.status, 503, "{}", r.head);
    // (Other paths are served as ever.)
    assert_eq!(s.get("/").text(), "static\n");
    // One line a failure, in the order they came, each naming the
    // upstream (or for the 503, the rule) and why; no second, bare
    // "503 answering /api/x" line (there was one, and the 503's line did
    // not say which rule nor why each upstream was down; the 502's
    // first try was logged after the second).
    let refused = "Connection refused (os error 111)";
    let (a, b) = (&one["http://".len()..], &two["http://".len()..]);
    assert_eq!(
        error_lines(&s, "; 503"),
        [
            format!("[error] proxy {one} (\"GET /api/x\"): cannot reach the upstream: {refused}; sent again to proxy {two}"),
            format!("[error] proxy {two} (\"GET /api/x\"): cannot reach the upstream: {refused}"),
            format!(
                "[error] reverse proxy path /api/: GET /api/x?y: no live upstreams \
                 ({a} down Ns more after 1 failure, {b} down Ns more after 1 failure); 503"
            ),
        ]
    );
}

#[test]
fn every_fastcgi_server_down_is_a_503_told_in_one_line() {
    let (one, two) = (refusing(), refusing());
    let (a, b) = (&one["http://".len()..], &two["http://".len()..]);
    let mut builder = Builder::new();
    builder.file("x.php", b"<?php\n");
    builder.config(&format!(
        "[[fastcgi]]\npattern = \"*.php\"\nto = [\"{a}\", \"{b}\"]\n"
    ));
    let s = builder.start();
    assert_eq!(s.get("/x.php").status, 502);
    assert_eq!(s.get("/x.php").status, 503);
    let refused = "Connection refused (os error 111)";
    let lines = error_lines(&s, "; 503");
    // (How the first two say it, connected or not, is FastCGI's own.)
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[0].ends_with(&format!(": {a}: cannot connect: {refused}; sent to {b}")),
        "{lines:#?}"
    );
    assert!(
        lines[1].ends_with(&format!(": {b}: cannot connect: {refused}")),
        "{lines:#?}"
    );
    assert_eq!(
        lines[2],
        format!(
            "[error] fastcgi pattern *.php: GET /x.php: no live upstreams \
             ({a} down Ns more after 1 failure, {b} down Ns more after 1 failure); 503"
        )
    );
}

#[cfg(feature = "http2")]
#[test]
fn an_h2_streams_502_and_504_are_told_once() {
    // Over HTTP/2 the failure's line had a second, "504 answering /api/x".
    // Each names the request (the upstream alone did not say which).
    use common::h2::H2;
    let quiet = App::start("quiet", Mode::Silent);
    let s = brisk(&format!(
        "{}[[reverse_proxy]]\npath = \"/gone/\"\nto = \"{}\"\n",
        rule(&[&quiet], "read_timeout = \"200ms\""),
        refusing()
    ));
    let mut c = H2::connect(s.addr(), &[], 0);
    let slow = c.get("/api/x", &[]);
    assert_eq!(c.answers(&[slow])[0].status(), "504");
    let gone = c.get("/gone/x", &[]);
    assert_eq!(c.answers(&[gone])[0].status(), "502");
    let lines = error_lines(&s, "cannot reach the upstream");
    assert_eq!(
        lines,
        [
            format!(
                "[error] proxy {} (\"GET /api/x\"): the upstream was silent for read_timeout; given up",
                quiet.url()
            ),
            format!(
                "[error] proxy {} (\"GET /gone/x\"): cannot reach the upstream: Connection refused (os error 111)",
                lines[1].split(' ').nth(2).unwrap()
            ),
        ]
    );
}

#[test]
fn a_silent_upstream_is_a_504_and_is_then_skipped() {
    let quiet = App::start("quiet", Mode::Silent);
    let b = App::start("b", Mode::Answer);
    let s = brisk(&rule(
        &[&quiet, &b],
        "balance = \"first\"\nread_timeout = \"200ms\"",
    ));
    let r = s.get("/api/x");
    assert_eq!(r.status, 504, "{}", r.head);
    assert_eq!(quiet.asked(), ["GET /api/x"], "not sent twice");
    assert_eq!(who(&s, "/api/y"), (200, "b".into()));
}

#[test]
fn a_kept_connection_the_upstream_closed_is_replaced_for_a_get_only() {
    let a = App::start("a", Mode::CloseSecond);
    let s = brisk(&rule(&[&a], ""));
    let mut c = s.connect();
    for i in 0..2 {
        c.send(format!("GET /api/{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!((r.status, r.text()), (200, "a".into()), "{}", r.head);
    }
    assert_eq!(a.asked(), ["GET /api/0", "GET /api/1", "GET /api/1"]);
    assert_eq!(*a.conns.lock().unwrap(), 2);
    // A warning, as FastCGI's: it is how keep-alive ends, and the client
    // got its answer (an error, and "cannot reach", before).
    let line = s.wait_stderr_line("sent again to");
    let to = format!("proxy http://{}", a.addr);
    let want = format!(
        " [warn] {to} (\"GET /api/1\"): a kept connection was closed by the upstream; sent again to {to}"
    );
    assert!(line.ends_with(&want), "{line}");
    // A POST on the kept connection it then drops is not sent again.
    c.send(b"POST /api/p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
    let r = c.response();
    assert_eq!(r.status, 502, "{}", r.head);
    assert_eq!(a.asked().len(), 4);
}

/// A kept connection the upstream closed while brisk held it idle (its
/// keep-alive timeout) fails no request: a GET sent on it goes again on
/// a new one (brisk does not look before it sends one that may go
/// again), a POST is sent on a new one (it looks first).
#[test]
fn a_kept_connection_the_upstream_dropped_while_idle_fails_no_request() {
    let a = App::start("a", Mode::CloseIdle);
    let s = brisk(&rule(&[&a], ""));
    let mut c = s.connect();
    let requests = ["GET /api/0", "POST /api/1", "GET /api/2", "POST /api/3"];
    for (i, request) in requests.iter().enumerate() {
        let body = match request.starts_with("POST") {
            true => "Content-Length: 2\r\n\r\nhi",
            false => "\r\n",
        };
        c.send(format!("{request} HTTP/1.1\r\nHost: x\r\n{body}").as_bytes());
        let r = c.response();
        assert_eq!(
            (r.status, r.text()),
            (200, "a".into()),
            "{request}: {}",
            r.head
        );
        // (Until the upstream has closed the connection it answered on,
        // and its FIN has reached brisk's end, which the kernel may
        // deliver after close returns when the machine is busy: until
        // then brisk has nothing to see, and a POST sent into that
        // close is lost as it would be with any proxy.)
        wait_until("the upstream's FIN at brisk's end", || {
            a.ended.load(Ordering::SeqCst) > i
                && tcp_sockets()
                    .iter()
                    .all(|t| t.remote != a.addr || t.state != TCP_ESTABLISHED)
        });
    }
    let sent_once: Vec<String> = requests.iter().map(|r| r.to_string()).collect();
    assert_eq!(a.asked(), sent_once, "each reached it once");
    assert_eq!(*a.conns.lock().unwrap(), 4, "one new connection each");
}

#[test]
fn health_checks_mark_an_upstream_down_and_up_again() {
    let a = App::start("a", Mode::Answer);
    let b = App::start("b", Mode::Answer);
    let s = brisk(&rule(
        &[&a, &b],
        "balance = \"first\"\nhealth = { path = \"/healthz\", interval = \"200ms\" }",
    ));
    assert_eq!(who(&s, "/api/x"), (200, "a".into()));
    wait_until("a health check", || a.checks() > 0 && b.checks() > 0);
    a.health.store(500, Ordering::SeqCst);
    // (Checks move on once a second: a verdict takes a few.)
    let limit = Duration::from_secs(30);
    wait_until_within(limit, "a marked down", || who(&s, "/api/x").1 == "b");
    a.health.store(204, Ordering::SeqCst);
    wait_until_within(limit, "a up again", || who(&s, "/api/x").1 == "a");
}

#[test]
fn an_upstream_that_takes_nothing_for_send_timeout_is_a_504() {
    // It accepts, and never reads: the request body fills the buffers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (done, finish) = mpsc::channel::<()>();
    let up = thread::spawn(move || {
        let conn = listener.accept();
        let _ = finish.recv_timeout(IO_TIMEOUT * 2);
        drop(conn);
    });
    let len = 64 << 20;
    let s = brisk(&format!(
        "[limits]\nmax_body = {len}\n[[reverse_proxy]]\npath = \"/api/\"\n\
         to = \"http://{addr}\"\nsend_timeout = \"200ms\"\n"
    ));
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let head = format!("PUT /api/big HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n");
    let mut w = c.try_clone().unwrap();
    w.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let writer = thread::spawn(move || {
        let _ = w.write_all(head.as_bytes());
        let piece = vec![b'x'; 1 << 16];
        for _ in 0..len / piece.len() {
            if w.write_all(&piece).is_err() {
                return;
            }
        }
    });
    let mut got = Vec::new();
    let mut piece = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut piece) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&piece[..n]),
        }
    }
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 504 "), "{got}");
    drop(c);
    writer.join().unwrap();
    done.send(()).unwrap();
    up.join().unwrap();
}

#[cfg(feature = "http2")]
#[test]
fn an_h2_stream_goes_to_the_next_upstream_too() {
    use common::h2::H2;
    let (b, s) = refused_then_b();
    let mut c = H2::connect(s.addr(), &[], 0);
    for _ in 0..2 {
        let get = c.get("/api/h2", &[]);
        let a = c.answers(&[get]);
        assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"b"[..]));
    }
    let post = c.request("POST", "/api/p", &[("content-length", "2")], Some(b"hi"));
    let a = c.answers(&[post]);
    assert_eq!(a[0].status(), "502");
    assert_eq!(b.asked(), ["GET /api/h2", "GET /api/h2"]);
}
