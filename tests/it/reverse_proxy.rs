//! The reverse proxy on the wire (`[[reverse_proxy]]`): an upstream
//! written here (a thread on 127.0.0.1 that records the bytes it
//! receives and answers scripted bytes) behind the real binary, reached
//! over HTTP/1.1 and h2c. What the upstream receives is checked byte for
//! byte: one re-framed request, with who the client is.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;

/// One step of an upstream's answer.
pub(crate) enum Say {
    /// These bytes.
    Bytes(&'static [u8]),
    /// Wait until the test says go on.
    Wait,
    /// Hold the connection without a word for this long, then close.
    Silence(Duration),
}

/// An upstream: what it received on each connection, in order.
pub(crate) struct Upstream {
    pub(crate) addr: SocketAddr,
    got: Arc<Mutex<Vec<Vec<u8>>>>,
    pub(crate) go: mpsc::Sender<()>,
}

impl Upstream {
    /// Answers every connection with `script`, after reading one whole
    /// request (by its Content-Length, or to the last chunk).
    pub(crate) fn start(script: Vec<Say>) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let (go, wait) = mpsc::channel::<()>();
        let seen = Arc::clone(&got);
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                let request = read_request(&mut conn);
                seen.lock().unwrap().push(request);
                for step in &script {
                    match step {
                        Say::Bytes(b) => {
                            if conn.write_all(b).is_err() {
                                break;
                            }
                        }
                        Say::Wait => {
                            let _ = wait.recv_timeout(IO_TIMEOUT);
                        }
                        Say::Silence(d) => thread::sleep(*d),
                    }
                }
            }
        });
        Upstream { addr, got, go }
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        let got = self.got.lock().unwrap();
        got.iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    }
}

/// Reads one request: its head, then its body by `Content-Length` or to
/// the end of a chunked body (what is read is all recorded).
pub(crate) fn read_request(conn: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    let complete = |buf: &[u8]| {
        let Some(end) = find(buf, b"\r\n\r\n") else {
            return false;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        if head.contains("\r\ntransfer-encoding: chunked") {
            // The last chunk, then its trailer section's empty line.
            let at = buf.windows(5).position(|w| w == b"\r\n0\r\n");
            return at.is_some_and(|at| buf[at + 3..].windows(4).any(|w| w == b"\r\n\r\n"));
        }
        let len = head
            .split("\r\n")
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |n| n.parse::<usize>().unwrap());
        buf.len() >= end + 4 + len
    };
    while !complete(&buf) {
        match conn.read(&mut piece) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&piece[..n]),
        }
    }
    buf
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decodes a chunked body (the test's own, simple reading).
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line = find(body, b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line]).unwrap(), 16).unwrap();
        body = &body[line + 2..];
        if size == 0 {
            assert_eq!(body, b"\r\n", "no trailers");
            return out;
        }
        out.extend_from_slice(&body[..size]);
        assert_eq!(&body[size..size + 2], b"\r\n");
        body = &body[size + 2..];
    }
}

/// brisk with `/api/` forwarded to `to`, and `extra` keys on the rule.
pub(crate) fn brisk(to: &str, extra: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"static\n");
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"{to}\"\n{extra}\n"
    ));
    b.start()
}

/// Who brisk says the client is (the test's client, on 127.0.0.1).
pub(crate) const FORWARDED: &str = "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\
     X-Forwarded-Host: x\r\nForwarded: for=127.0.0.1;proto=http;host=\"x\"\r\n";

/// A request that names no host (HTTP/1.0 may send no `Host`) goes
/// upstream for the address it came to: `Host`, `X-Forwarded-Host` and
/// `Forwarded`'s `host=` say brisk's address. (They said the upstream's
/// own address, as if the client had asked for it.)
#[test]
fn a_request_that_names_no_host_is_forwarded_for_the_address_it_came_to() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let r = s.request(b"GET /api/a HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.text()), (200, "ok".into()), "{}", r.head);
    assert_eq!(up.requests(), [for_the_address("/api/a", &s)]);
}

/// Behind a proxy `[proxy] trusted` names, its chain is kept and the
/// hop brisk got the request from is appended: that proxy's address
/// (RFC 7239 §5.2), not again the client it names (the upstream got
/// `X-Forwarded-For: 198.51.100.1, 203.0.113.9, 203.0.113.9`).
#[cfg(feature = "ops")]
#[test]
fn behind_a_trusted_proxy_its_address_is_the_hop_appended() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let mut b = Builder::new();
    b.config(&format!(
        "[proxy]\ntrusted = [\"127.0.0.1\"]\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    let s = b.start();
    let r = s.request(
        b"GET /api/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
          X-Forwarded-For: 198.51.100.1, 203.0.113.9\r\nX-Forwarded-Proto: https\r\n\
          Forwarded: for=203.0.113.9;proto=https\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(
        up.requests(),
        ["GET /api/a HTTP/1.1\r\nHost: x\r\n\
          X-Forwarded-For: 198.51.100.1, 203.0.113.9, 127.0.0.1\r\n\
          X-Forwarded-Proto: https\r\nX-Forwarded-Host: x\r\n\
          Forwarded: for=203.0.113.9;proto=https, for=127.0.0.1;proto=https;host=\"x\"\r\n\r\n"]
    );
}

/// The same over HTTP/2 without `:authority` (they said nothing: an
/// empty `Host`), as over HTTP/1.0.
#[cfg(feature = "http2")]
#[test]
fn an_h2_request_without_authority_is_forwarded_for_the_address_it_came_to() {
    use brisk::h2::{frame, hpack};
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    let mut block = Vec::new();
    hpack::encode_field(b":method", b"GET", &mut block);
    hpack::encode_field(b":scheme", b"http", &mut block);
    hpack::encode_field(b":path", b"/api/b", &mut block);
    let mut out = Vec::new();
    frame::write_headers(&mut out, 1, &block, true, 16_384);
    c.send(&out);
    let a = c.answers(&[1]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"ok"[..]));
    assert_eq!(up.requests(), [for_the_address("/api/b", &s)]);
}

/// The request for `path` the upstream gets from brisk `s` when the
/// client named no host: for brisk's own address.
fn for_the_address(path: &str, s: &Server) -> String {
    let host = s.addr().to_string();
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-For: 127.0.0.1\r\n\
         X-Forwarded-Proto: http\r\nX-Forwarded-Host: {host}\r\n\
         Forwarded: for=127.0.0.1;proto=http;host=\"{host}\"\r\n\r\n"
    )
}

#[test]
fn get_and_post_go_upstream_reframed_with_who_asked() {
    // (`close`: this upstream answers one request a connection, and the
    // POST below, not idempotent, is not retried on a pooled connection
    // whose close brisk has not seen yet: a 502 on a loaded machine.)
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close, X-Hop\r\n\
          X-Hop: 1\r\nX-App: a\r\n\r\nhello",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let r = s.request(
        b"GET /api/x?y=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTE: trailers\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.body, b"hello");
    assert_eq!(r.header("x-app"), Some("a"));
    assert_eq!(
        r.header("x-hop"),
        None,
        "a field Connection names stays behind"
    );
    let r = s.request(
        b"POST /api/form HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 7\r\n\r\na=1&b=2",
    );
    assert_eq!((r.status, r.text()), (200, "hello".into()));
    // Not forwarded: the static files still answer the rest.
    assert_eq!(s.get("/index.html").body, b"static\n");
    // (The client's TE and Connection stay on its hop; brisk, which
    // takes trailers as the client does, says so for its own.)
    assert_eq!(
        up.requests(),
        [
            format!(
                "GET /api/x?y=1 HTTP/1.1\r\nHost: x\r\n{FORWARDED}TE: trailers\r\nConnection: TE\r\n\r\n"
            ),
            format!(
                "POST /api/form HTTP/1.1\r\nHost: x\r\n{FORWARDED}Content-Length: 7\r\n\r\na=1&b=2"
            ),
        ]
    );
}

/// "Breaking Parser Logic" (Orange Tsai, Black Hat 2018): Tomcat, Jetty
/// and Spring drop a segment's `;` parameters before they resolve its
/// dots, and Windows servers take `\` for `/`, so `/api/..;/admin`
/// would reach `/admin` behind a rule for `/api/` only; and a router
/// that does not resolve dot segments reads `/secret/../api/x` under
/// `/secret/`. Such a path is refused 400, never forwarded; the upstream
/// sees only the good ones.
#[test]
fn a_path_an_upstream_would_read_as_another_is_refused() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    for target in [
        "/api/..;/admin",
        "/api/..;x=1/admin",
        "/api/%2e%2e;/admin",
        "/api/;/admin",
        "/api/..%5cadmin",
        "/api/..\\admin",
        "/api/.;/x",
        // Dot segments brisk resolved, which an upstream routing on the
        // path as sent would not (under `/secret/` to Express).
        "/secret/../api/x",
        "/api/x/./y",
        "/api/x/%2E%2e/y",
    ] {
        let r = s.request(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, 400, "{target}: {}", r.head);
    }
    for target in ["/api/a;jsessionid=1/b", "/api/x;v=1", "/api/a...;/b"] {
        let r = s.request(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!((r.status, r.text()), (200, "ok".into()), "{target}");
    }
    let got: Vec<String> = (up.requests().iter())
        .map(|r| r.lines().next().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        got,
        [
            "GET /api/a;jsessionid=1/b HTTP/1.1",
            "GET /api/x;v=1 HTTP/1.1",
            "GET /api/a...;/b HTTP/1.1"
        ]
    );
}

/// A path whose `;` parameters, dropped as Tomcat, Jetty and Spring drop
/// them, would put it under an `[[access]]` or `[[auth]]` rule that does
/// not cover it as brisk reads it: `/admin;x/secret` passed `path =
/// "/admin/"` (brisk's path is `/admin;x/secret`) to an application
/// that serves `/admin/secret`. Refused 400; parameters that change no
/// rule's verdict go on.
#[test]
fn a_path_whose_parameters_would_pass_a_guard_is_refused() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let mut b = Builder::new();
    write_file(
        &b.base().join("htpasswd"),
        b"alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n",
    );
    b.config(&format!(
        "[[access]]\npath = \"/admin/\"\ndeny = [\"all\"]\n\
         [[auth]]\npath = \"/private/\"\nrealm = \"p\"\nhtpasswd = \"htpasswd\"\n\
         [[reverse_proxy]]\npath = \"/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    let s = b.start();
    let get = |target: &str| {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.request(raw.as_bytes())
    };
    assert_eq!(get("/admin/secret").status, 403);
    assert_eq!(get("/private/x").status, 401);
    for target in [
        "/admin;x/secret",
        "/admin%3bx/secret",
        "/private;/x",
        "/private;p=1/x",
    ] {
        assert_eq!(get(target).status, 400, "{target}");
    }
    for target in ["/shop/cart;jsessionid=1", "/a;v=2/b"] {
        let r = get(target);
        assert_eq!((r.status, r.text()), (200, "ok".into()), "{target}");
    }
    assert_eq!(up.requests().len(), 2);
    s.wait_stderr_line(
        "\"/admin;x/secret\": an upstream could read its path as another (';' parameters",
    );
}

/// TRACE (and Microsoft's TRACK) would have the upstream echo the
/// request as it got it, the rule's `headers.set` with it: refused, as
/// nginx refuses it, and never forwarded.
#[test]
fn trace_is_never_forwarded() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let s = brisk(
        &format!("http://{}", up.addr),
        "headers = { set = { \"X-Token\" = \"secret\" } }",
    );
    for method in ["TRACE", "TRACK"] {
        let r = s.request(
            format!("{method} /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, 501, "{method}: {}", r.head);
        assert!(!r.text().contains("secret"), "{method}");
    }
    assert_eq!(s.get("/api/x").text(), "ok");
    assert_eq!(up.requests().len(), 1, "only the GET went");
}

/// An application that names itself in its redirects (it was sent its
/// own address as `Host`) has them made paths of brisk's, under the
/// rule's prefix where it was stripped (nginx's `proxy_redirect
/// default`); other redirects pass as they are.
#[test]
fn a_redirect_to_the_upstreams_own_address_is_made_brisks() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let request = String::from_utf8(read_request(&mut conn)).unwrap();
            let to = if request.starts_with("GET /elsewhere ") {
                "https://example.org/x".to_owned()
            } else {
                format!("http://{addr}/login?next=/")
            };
            let answer = format!(
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    let s = brisk(
        &format!("http://{addr}"),
        "host = \"upstream\"\nstrip_prefix = true",
    );
    let r = s.get("/api/account");
    assert_eq!(r.status, 302, "{}", r.head);
    assert_eq!(r.header("location"), Some("/api/login?next=/"));
    let r = s.get("/api/elsewhere");
    assert_eq!(r.header("location"), Some("https://example.org/x"));

    // Sent again to it after a first upstream refused the connection:
    // the one that answered is the one its redirect names. (The first
    // one tried was compared, and the redirect passed as it was.)
    let dead = common::free_port();
    let mut b = Builder::new();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = [\"http://127.0.0.1:{dead}\", \"http://{addr}\"]\n\
         balance = \"first\"\nmax_fails = 0\nhost = \"upstream\"\nstrip_prefix = true\n"
    ));
    let s = b.start();
    for _ in 0..2 {
        let r = s.get("/api/account");
        assert_eq!(r.status, 302, "{}", r.head);
        assert_eq!(r.header("location"), Some("/api/login?next=/"));
    }
    s.wait_stderr_line("sent again to");
}

#[test]
fn a_chunked_upload_arrives_whole_and_well_framed() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = s.connect();
    c.send(b"PUT /api/f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    thread::sleep(Duration::from_millis(50));
    c.send(b"6;ext=1\r\n world\r\n0\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 201, "{}", r.head);
    let got = up.got.lock().unwrap()[0].clone();
    let end = find(&got, b"\r\n\r\n").unwrap() + 4;
    assert_eq!(
        String::from_utf8_lossy(&got[..end]),
        format!("PUT /api/f HTTP/1.1\r\nHost: x\r\n{FORWARDED}Transfer-Encoding: chunked\r\n\r\n")
    );
    assert_eq!(dechunk(&got[end..]), b"hello world");
}

#[test]
fn an_answer_streams_to_the_client_piece_by_piece() {
    let up = Upstream::start(vec![
        Say::Bytes(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: one\n\n"),
        Say::Wait,
        Say::Bytes(b"data: two\n\n"),
    ]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = s.connect();
    c.send(b"GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n");
    // The first event reaches the client while the upstream still holds
    // the second (it sends it only once the client has the first).
    let mut seen = Vec::new();
    let mut piece = [0u8; 4096];
    while find(&seen, b"data: one\n\n").is_none() {
        let n = c.stream.read(&mut piece).unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&piece[..n]);
    }
    assert!(find(&seen, b"two").is_none());
    let head = String::from_utf8_lossy(&seen).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\nTransfer-Encoding: chunked\r\n"),
        "{head}"
    );
    up.go.send(()).unwrap();
    // Then the upstream closes: that ends the answer (to the close).
    loop {
        let n = c.stream.read(&mut piece).unwrap();
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&piece[..n]);
        if seen.ends_with(b"\r\n0\r\n\r\n") {
            break;
        }
    }
    let end = find(&seen, b"\r\n\r\n").unwrap() + 4;
    assert_eq!(dechunk(&seen[end..]), b"data: one\n\ndata: two\n\n");
}

#[test]
fn an_upstream_that_refuses_connections_is_a_502() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let s = brisk(&format!("http://{addr}"), "");
    let r = s.get("/api/x");
    assert_eq!(r.status, 502, "{}", r.head);
    // And one on a unix socket that is not there.
    let s = brisk("unix:/nonexistent/brisk-test.sock", "");
    assert_eq!(s.get("/api/x").status, 502);
    // One named by a host name is named so in the log, with its port
    // (it was named by the address it resolved to).
    let s = brisk(&format!("http://localhost:{}", addr.port()), "");
    assert_eq!(s.get("/api/x").status, 502);
    let line = s.wait_stderr_line("cannot reach the upstream");
    let want = format!("proxy http://localhost:{} (\"GET /api/x\"): ", addr.port());
    assert!(line.contains(&want), "{line}");
}

#[test]
fn a_malformed_answer_is_a_502_never_passed_on() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let r = s.get("/api/x");
    assert_eq!(r.status, 502, "{}", r.head);
    assert!(
        s.wait_stderr_line("malformed answer")
            .contains("proxy http://"),
        "the error log names the upstream"
    );
    // A head over the limits: the line names them and their keys (it
    // said "upstream head too large" alone).
    let big = format!(
        "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n",
        "b".repeat(100_000)
    );
    let up = Upstream::start(vec![Say::Bytes(Box::leak(
        big.into_bytes().into_boxed_slice(),
    ))]);
    let s = brisk(&format!("http://{}", up.addr), "");
    assert_eq!(s.get("/api/x").status, 502);
    let line = s.wait_stderr_line("upstream head too large");
    assert!(line.contains("(over limits.max_request_line, "), "{line}");
    assert!(
        line.contains(" bytes, or limits.max_header_bytes, "),
        "{line}"
    );
}

/// `path = "/api/"` and a request for `/api`: sent on to `/api/` with its
/// query (301 as nginx does for GET and HEAD; 308 for other methods,
/// which keeps them), not a 404 from the files; nothing goes upstream.
#[test]
fn the_rules_path_without_its_slash_is_redirected_to_it() {
    let up = Upstream::start(vec![Say::Bytes(b"HTTP/1.1 204 No Content\r\n\r\n")]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let r = s.get("/api?x=1");
    assert_eq!(r.status, 301, "{}", r.head);
    assert_eq!(r.header("location"), Some("/api/?x=1"));
    let r = s.request(
        b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 308, "{}", r.head);
    assert_eq!(r.header("location"), Some("/api/"));
    // (As sent, percent-encoded; never `//host`.)
    let r = s.get("//%61pi");
    assert_eq!((r.status, r.header("location")), (301, Some("/%61pi/")));
    // Other paths are left as they were: a 404 from the files.
    assert_eq!(s.get("/apix").status, 404);
    assert_eq!(s.get("/ap").status, 404);
    assert!(up.requests().is_empty(), "{:?}", up.requests());
}

#[test]
fn an_upstream_that_never_answers_is_a_504() {
    let up = Upstream::start(vec![Say::Silence(Duration::from_secs(4))]);
    let s = brisk(&format!("http://{}", up.addr), "read_timeout = \"300ms\"");
    let r = s.get("/api/slow");
    assert_eq!(r.status, 504, "{}", r.head);
    assert_eq!(up.requests().len(), 1);
}

#[test]
fn a_unix_socket_upstream_gets_the_request_with_its_prefix_stripped() {
    let dir = TempDir::new("rp-unix");
    let path = dir.path.join("app.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let got = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut buf = Vec::new();
        let mut piece = [0u8; 4096];
        while find(&buf, b"\r\n\r\n").is_none() {
            let n = conn.read(&mut piece).unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&piece[..n]);
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nunix")
            .unwrap();
        String::from_utf8(buf).unwrap()
    });
    let s = brisk(
        &format!("unix:{}", path.display()),
        "strip_prefix = true\nhost = \"upstream\"",
    );
    let r = s.request(b"GET /api/v1/items HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.text()), (200, "unix".into()), "{}", r.head);
    assert_eq!(
        got.join().unwrap(),
        format!("GET /v1/items HTTP/1.1\r\nHost: localhost\r\n{FORWARDED}\r\n")
    );
}

#[cfg(feature = "http2")]
#[test]
fn h2c_requests_go_upstream_as_http1() {
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-App: a\r\n\r\nok",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    let get = c.get("/api/g", &[]);
    let a = c.answers(&[get]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"ok"[..]));
    assert_eq!(a[0].field("x-app"), Some("a"));
    let sized = c.request("POST", "/api/p", &[("content-length", "5")], Some(b"hello"));
    let a = c.answers(&[sized]);
    assert_eq!(a[0].status(), "200");
    let unsized_ = c.request("POST", "/api/q", &[], Some(b"hello"));
    let a = c.answers(&[unsized_]);
    assert_eq!(a[0].status(), "200");
    let fwd = "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\
         X-Forwarded-Host: localhost\r\nForwarded: for=127.0.0.1;proto=http;host=\"localhost\"\r\n";
    let got = up.requests();
    assert_eq!(
        got[0],
        format!("GET /api/g HTTP/1.1\r\nHost: localhost\r\n{fwd}\r\n")
    );
    assert_eq!(
        got[1],
        format!("POST /api/p HTTP/1.1\r\nHost: localhost\r\n{fwd}Content-Length: 5\r\n\r\nhello")
    );
    let head = format!(
        "POST /api/q HTTP/1.1\r\nHost: localhost\r\n{fwd}Transfer-Encoding: chunked\r\n\r\n"
    );
    assert!(got[2].starts_with(&head), "{}", got[2]);
    assert_eq!(dechunk(&got[2].as_bytes()[head.len()..]), b"hello");
}

/// "Response queue poisoning": an application that answers a HEAD with
/// a body, late (after brisk kept the connection), must not have those
/// bytes taken for the next request's answer. The idle connection the
/// upstream spoke on is closed, and the next request goes on a new one.
#[test]
fn bytes_an_idle_upstream_connection_gets_never_answer_the_next_request() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let (told, sent) = mpsc::channel::<()>();
    let conns = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&conns);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            *seen.lock().unwrap() += 1;
            conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            loop {
                let request = read_request(&mut conn);
                if request.is_empty() {
                    break;
                }
                let poison: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nPOISONED";
                if request.starts_with(b"HEAD ") {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                        poison.len()
                    );
                    conn.write_all(head.as_bytes()).unwrap();
                    // Its body, once brisk has kept the connection.
                    wait.recv_timeout(IO_TIMEOUT).unwrap();
                    conn.write_all(poison).unwrap();
                    told.send(()).unwrap();
                } else {
                    let good = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood";
                    if conn.write_all(good).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let s = brisk(&format!("http://{addr}"), "");
    let mut c = s.connect();
    c.send(b"HEAD /api/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.status, 200, "{}", r.head);
    // (The length the upstream said: the poison's.)
    assert_eq!(r.header("Content-Length"), Some("46"), "{}", r.head);
    go.send(()).unwrap();
    sent.recv_timeout(IO_TIMEOUT).unwrap();
    // (One answer more: the worker's loop has seen the late bytes come.)
    assert_eq!(s.get("/index.html").body, b"static\n");
    for path in ["/api/b", "/api/c"] {
        assert_eq!(s.get(path).text(), "good", "{path}");
    }
    assert_eq!(
        *conns.lock().unwrap(),
        2,
        "the spoilt connection was closed"
    );
}

#[test]
fn requests_share_a_kept_upstream_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let conns = Arc::new(Mutex::new(Vec::<usize>::new()));
    let seen = Arc::clone(&conns);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = Arc::clone(&seen);
            thread::spawn(move || {
                conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                let i = {
                    let mut c = seen.lock().unwrap();
                    c.push(0);
                    c.len() - 1
                };
                loop {
                    let request = read_request(&mut conn);
                    if request.is_empty() {
                        return;
                    }
                    seen.lock().unwrap()[i] += 1;
                    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                    if conn.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let s = brisk(&format!("http://{addr}"), "");
    let mut c = s.connect();
    for i in 0..5 {
        c.send(format!("GET /api/{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!((r.status, r.text()), (200, "ok".into()), "{}", r.head);
    }
    // (And from another client connection, the same upstream one.)
    assert_eq!(s.get("/api/again").text(), "ok");
    assert_eq!(*conns.lock().unwrap(), [6], "one upstream connection");
    // With keepalive = 0, one connection per request.
    let s = brisk(&format!("http://{addr}"), "keepalive = 0");
    for _ in 0..2 {
        assert_eq!(s.get("/api/x").text(), "ok");
    }
    wait_until("two more upstream connections", || {
        *conns.lock().unwrap() == [6, 1, 1]
    });
}
