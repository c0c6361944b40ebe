//! More of the reverse proxy on the wire (issue #27, S7): whose `Server`
//! and `Date` an answer carries, `strip_prefix` on a prefix the client
//! wrote percent-encoded, proxied HTTP/2 streams in the per-connection
//! limit of programs, and `https://` upstreams. The upstreams are
//! reverse_proxy.rs's scripted threads (or, for https, brisk itself).

use crate::common;
use crate::reverse_proxy::{brisk, Say, Upstream};

use common::*;

/// An upstream's own `Date`, far from brisk's clock.
const UP_DATE: &str = "Mon, 01 Jan 2024 00:00:00 GMT";

/// An answer with the upstream's own `Server` and `Date`.
const WITH_BOTH: &[u8] = b"HTTP/1.1 200 OK\r\nServer: app/1.0\r\nX-App: a\r\n\
      Date: Mon, 01 Jan 2024 00:00:00 GMT\r\nContent-Length: 2\r\n\r\nok";

#[test]
fn the_upstreams_server_and_date_pass_unless_server_is_brisk() {
    let with_both = Upstream::start(vec![Say::Bytes(WITH_BOTH)]);
    let to = format!("http://{}", with_both.addr);
    let get = b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    // `server = "upstream"` (the default): both are the upstream's, in
    // the place it wrote them, and brisk adds neither.
    let s = brisk(&to, "");
    let r = s.request(get);
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: app/1.0\r\nX-App: a\r\nDate: {UP_DATE}\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(String::from_utf8_lossy(&r.raw), format!("{head}ok"));
    // `server = "brisk"`: brisk's `server_header` in its place.
    let s = brisk(&to, "server = \"brisk\"");
    let r = s.request(get);
    let head = format!(
        "HTTP/1.1 200 OK\r\nServer: brisk\r\nX-App: a\r\nDate: {UP_DATE}\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(String::from_utf8_lossy(&r.raw), format!("{head}ok"));
    // An upstream that sends neither: no Server (the answer is its),
    // and brisk's Date (every answer has one, RFC 9110 §6.6.1).
    let bare = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let s = brisk(&format!("http://{}", bare.addr), "");
    let r = s.request(get);
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        )
    );
    let s = brisk(&format!("http://{}", bare.addr), "server = \"brisk\"");
    let r = s.request(get);
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Length: 2\r\n\
             Connection: close\r\n\r\n"
        )
    );
}

#[cfg(feature = "http2")]
#[test]
fn over_h2c_too() {
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(WITH_BOTH)]);
    let to = format!("http://{}", up.addr);
    let fields = |server: &str| {
        [
            (":status", "200"),
            ("server", server),
            ("x-app", "a"),
            ("date", UP_DATE),
            ("content-length", "2"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    };
    for (extra, server) in [("", "app/1.0"), ("server = \"brisk\"", "brisk")] {
        let s = brisk(&to, extra);
        let mut c = H2::connect(s.addr(), &[], 0);
        // (Twice: the second answer's head is the encoder's repeat.)
        for _ in 0..2 {
            let get = c.get("/api/x", &[]);
            let a = c.answers(&[get]);
            assert_eq!(a[0].fields, fields(server), "{extra}");
            assert_eq!(a[0].body, b"ok");
        }
    }
}

#[test]
fn strip_prefix_takes_off_a_prefix_written_percent_encoded() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let to = format!("http://{}", up.addr);
    let s = brisk(&to, "strip_prefix = true\nkeepalive = 0");
    let get = |target: &str| {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.request(raw.as_bytes())
    };
    // Sent as: the rest of the path as the client wrote it.
    let sent = [
        ("/%61pi/users", "/users"),
        ("/%61%70%69%2Fusers?q=%2F", "/users?q=%2F"),
        ("/api%2Fusers", "/users"),
        ("/%61pi/a%2Fb/%63", "/a%2Fb/%63"),
    ];
    for (target, _) in sent {
        let r = get(target);
        assert_eq!((r.status, r.text()), (200, "ok".into()), "{target}");
    }
    let fwd = crate::reverse_proxy::FORWARDED;
    let want: Vec<String> = sent
        .iter()
        .map(|(_, to)| format!("GET {to} HTTP/1.1\r\nHost: x\r\n{fwd}\r\n"))
        .collect();
    assert_eq!(up.requests(), want);
    // A rest that would climb out of the prefix, a prefix reached through
    // dot segments or doubled slashes, any dot segment at all (an upstream
    // might not resolve it): refused, nothing sent.
    for target in [
        "/api/../api/x",
        "/%61pi/%2e%2e/api/x",
        "/api/..%2Fapi/x",
        "/x/../api/y",
        "/%61pi/x/../y",
        "//api/y",
    ] {
        assert_eq!(get(target).status, 400, "{target}");
    }
    assert_eq!(up.requests().len(), sent.len());
    s.wait_stderr_line("\"/x/../api/y\": an upstream could read its path as another");
    s.wait_stderr_line("cannot strip_prefix from \"//api/y\"");
}

/// An upstream that holds every request (each connection on a thread of
/// its own) until released, then answers `ok` and the request's body:
/// how many it held, and the most it held at once.
#[cfg(feature = "http2")]
struct Held {
    addr: std::net::SocketAddr,
    held: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    release: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[cfg(feature = "http2")]
impl Held {
    fn start() -> Held {
        use std::io::Write as _;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let now = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(AtomicBool::new(false));
        let (count, top, go) = (Arc::clone(&held), Arc::clone(&most), Arc::clone(&release));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let (count, top, now) = (Arc::clone(&count), Arc::clone(&top), Arc::clone(&now));
                let go = Arc::clone(&go);
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
                    let request = crate::reverse_proxy::read_request(&mut conn);
                    let body = match request.windows(4).position(|w| w == b"\r\n\r\n") {
                        Some(end) => request[end + 4..].to_vec(),
                        None => Vec::new(),
                    };
                    top.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    count.fetch_add(1, Ordering::SeqCst);
                    poll(IO_TIMEOUT, || go.load(Ordering::SeqCst).then_some(()));
                    // (No longer held once the answer is on its way.)
                    now.fetch_sub(1, Ordering::SeqCst);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\nok",
                        2 + body.len()
                    );
                    let _ = conn.write_all(&[head.as_bytes(), &body].concat());
                });
            }
        });
        Held {
            addr,
            held,
            most,
            release,
        }
    }
}

#[cfg(feature = "http2")]
#[test]
fn proxied_h2_streams_count_against_the_connections_programs() {
    use common::h2::H2;
    use std::sync::atomic::Ordering;
    let up = Held::start();
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    // 20 at once on one connection: 16 go upstream (and wait there), the
    // 4 beyond wait for their turn in brisk (they were answered 503, so
    // that h2load -m 100 saw 86 % of its requests fail).
    let ids: Vec<u32> = (0..20).map(|i| c.get(&format!("/api/{i}"), &[])).collect();
    wait_until("16 requests upstream", || {
        up.held.load(Ordering::SeqCst) == 16
    });
    // One with a body waits too, its body held (it was refused,
    // REFUSED_STREAM, which Chromium sends again at once and fails when
    // that is refused too: a page's POSTs to an API beyond the sixteen
    // failed as network errors). And one without a length that ends
    // with trailers: they go upstream too once its turn comes.
    let post = c.request("POST", "/api/p", &[("content-length", "5")], Some(b"hello"));
    let put = c.next;
    c.next += 2;
    let mut out = Vec::new();
    let fields = [("te", "trailers"), ("trailer", "x-sum")];
    let block = H2::block("PUT", "/api/t", &fields);
    brisk::h2::frame::write_headers(&mut out, put, &block, false, 16_384);
    out.extend_from_slice(&brisk::h2::frame::data_head(put, 3, false));
    out.extend_from_slice(b"abc");
    let mut block = Vec::new();
    brisk::h2::hpack::encode_field(b"x-sum", b"3", &mut block);
    brisk::h2::frame::write_headers(&mut out, put, &block, true, 16_384);
    c.send(&out);
    // One waiting that the client cancels is forgotten. (The PING's
    // answer says brisk read the RST_STREAM before any turn came, and
    // neither answered nor refused the POST.)
    let mut out = Vec::new();
    brisk::h2::frame::write_rst(&mut out, ids[19], brisk::h2::ErrorCode::Cancel);
    brisk::h2::frame::write_ping(&mut out, b"turn-rst");
    c.send(&out);
    loop {
        let f = c.frame().expect("the PING's answer");
        assert_ne!(f.kind, brisk::h2::frame::kind::RST_STREAM, "{f:?}");
        assert_ne!(f.kind, brisk::h2::frame::kind::HEADERS, "{f:?}");
        if f.kind == brisk::h2::frame::kind::PING {
            break;
        }
    }
    assert_eq!(up.held.load(Ordering::SeqCst), 16, "the POST waits");
    up.release.store(true, Ordering::SeqCst);
    let mut all = ids[..19].to_vec();
    all.extend([post, put]);
    let answers = c.answers(&all);
    for a in &answers[..19] {
        assert_eq!((a.status(), &a.body[..]), ("200", &b"ok"[..]));
    }
    let a = &answers[19];
    let what = "its body went upstream whole";
    assert_eq!(
        (a.status(), &a.body[..]),
        ("200", &b"okhello"[..]),
        "{what}"
    );
    let a = &answers[20];
    let chunked = &b"ok3\r\nabc\r\n0\r\nx-sum: 3\r\n\r\n"[..];
    assert_eq!(
        (a.status(), &a.body[..]),
        ("200", chunked),
        "with its trailers"
    );
    assert_eq!(
        up.held.load(Ordering::SeqCst),
        21,
        "each went upstream but one"
    );
    assert_eq!(up.most.load(Ordering::SeqCst), 16, "16 at most at once");
    // Once they ended, there is room again, for a body too.
    let again = c.request("POST", "/api/p", &[("content-length", "2")], Some(b"hi"));
    assert_eq!(c.answers(&[again])[0].status(), "200");
}

/// brisk serving `api/x` over HTTPS (the test certificate `a`, `a.test`,
/// or the `cert`/`key` files given): an https upstream.
#[cfg(feature = "tls")]
fn https_upstream(cert: Option<(&std::path::Path, &std::path::Path)>) -> Server {
    let mut b = Builder::new();
    b.file("api/x", b"over tls\n");
    b.access_log();
    match cert {
        None => {
            b.tls();
        }
        Some((cert, key)) => {
            b.arg("--tls-cert").arg(&cert.display().to_string());
            b.arg("--tls-key").arg(&key.display().to_string());
        }
    }
    b.start()
}

/// A TCP relay on 127.0.0.1 to `to`: its address, and how many
/// connections it took.
#[cfg(feature = "tls")]
fn counting_relay(
    to: std::net::SocketAddr,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(down) = conn else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let Ok(up) = TcpStream::connect(to) else {
                return;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Write);
                })
            };
            pipe(down.try_clone().unwrap(), up.try_clone().unwrap());
            pipe(up, down);
        }
    });
    (addr, count)
}

/// An https upstream's active check speaks TLS, as its requests do (it
/// went in plaintext: the check failed, and every request got 503).
#[cfg(feature = "tls")]
#[test]
fn an_https_upstreams_health_check_speaks_tls() {
    let up = https_upstream(None);
    let to = format!("https://127.0.0.1:{}", up.addr().port());
    let health = "tls_verify = false\nhealth = { path = \"/api/x\", interval = \"1s\" }";
    let s = brisk(&to, health);
    let line = up.wait_access_line(|l| String::from_utf8_lossy(l).contains("brisk health check"));
    let line = String::from_utf8_lossy(&line).into_owned();
    assert!(line.contains("\"GET /api/x HTTP/1.1\" 200 "), "{line}");
    // Up after the check: requests are still answered.
    let r = s.request(b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.text()), (200, "over tls\n".into()));
}

/// An answer that ends at its upstream's close, over TLS closed without
/// close_notify, is not known to be whole (RFC 9112 §9.8: someone on
/// the way may have closed it): the client sees it cut, never complete.
#[cfg(feature = "tls")]
#[test]
fn an_https_answer_ended_by_a_close_without_close_notify_is_cut() {
    use std::io::{BufRead, Read, Write};
    // (Python's TLS, told to close the socket under it: no close_notify.)
    let script = format!(
        "import socket, ssl\n\
         ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
         ctx.load_cert_chain({cert:?}, {key:?})\n\
         s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(4)\n\
         print(s.getsockname()[1], flush=True)\n\
         while True:\n    \
             raw, _ = s.accept(); c = ctx.wrap_socket(raw, server_side=True); f = c.makefile('rb')\n    \
             while f.readline() not in (b'\\r\\n', b''): pass\n    \
             c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\npart')\n    \
             c._sslobj = None; socket.socket.shutdown(c, socket.SHUT_RDWR); socket.socket.close(c)\n",
        cert = common::tls::testdata("a.pem").display().to_string(),
        key = common::tls::testdata("a.key").display().to_string(),
    );
    let Ok(mut up) = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        skip("python3 not available for a TLS upstream");
        return;
    };
    let mut port = String::new();
    std::io::BufReader::new(up.stdout.as_mut().unwrap())
        .read_line(&mut port)
        .unwrap();
    let s = brisk(
        &format!("https://127.0.0.1:{}", port.trim()),
        "tls_verify = false",
    );
    // Chunked to an HTTP/1.1 client: "part", then the connection closes
    // with no last chunk.
    let mut c = std::net::TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    c.write_all(b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    let read = c.read_to_end(&mut raw);
    let _ = up.kill();
    read.unwrap();
    assert!(raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(
        raw.ends_with(b"\r\n\r\n4\r\npart\r\n"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    s.wait_stderr_line("without TLS close_notify");
}

#[cfg(feature = "tls")]
#[test]
fn an_https_upstream_is_verified_or_refused_with_the_reason() {
    let up = https_upstream(None);
    let to = format!("https://127.0.0.1:{}", up.addr().port());
    let label = format!("proxy {to}");
    let get = b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    // tls_verify = false: its self-made certificate is taken; requests
    // after the first go on the kept connection, its session kept (a
    // relay in between counts the connections).
    let (relay, connections) = counting_relay(up.addr());
    let s = brisk(&format!("https://{relay}"), "tls_verify = false");
    let mut c = s.connect();
    for _ in 0..3 {
        c.send(b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n");
        let r = c.response();
        assert_eq!(
            (r.status, r.text()),
            (200, "over tls\n".into()),
            "{}",
            r.head
        );
    }
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Verified against the system's roots alone: the test CA is none of
    // them (502, and the log says which upstream and why).
    let s = brisk(&to, "");
    assert_eq!(s.request(get).status, 502);
    let line = s.wait_stderr_line(&label);
    assert!(line.contains("UnknownIssuer"), "{line}");
    // With the test CA as `ca`, the certificate is trusted but names
    // a.test, not 127.0.0.1: refused too.
    let ca = common::tls::testdata("ca.pem");
    let s = brisk(&to, &format!("ca = \"{}\"", ca.display()));
    assert_eq!(s.request(get).status, 502);
    let line = s.wait_stderr_line(&label);
    assert!(line.contains("not valid for name"), "{line}");
}

#[cfg(feature = "tls")]
#[test]
fn an_https_upstream_with_a_certificate_for_its_address_is_trusted_by_ca() {
    use std::process::Command;
    let dir = TempDir::new("proxy_ca");
    let p = |name: &str| dir.path.join(name);
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .current_dir(&dir.path)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let made = openssl(
        &[
            &["req", "-x509"],
            &ec[..],
            &["-days", "2", "-subj", "/CN=proxy test CA"],
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat(),
    )
    .and_then(|_| {
        openssl(
            &[
                &["req", "-new"],
                &ec[..],
                &["-subj", "/CN=127.0.0.1"],
                &[
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                    "-keyout",
                    "up.key",
                    "-out",
                    "up.csr",
                ],
            ]
            .concat(),
        )
    })
    .and_then(|_| {
        openssl(&[
            "x509",
            "-req",
            "-in",
            "up.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-copy_extensions",
            "copy",
            "-out",
            "up.pem",
        ])
    });
    if made.is_none() {
        skip("openssl not installed (or cannot make certificates)");
        return;
    }
    let up = https_upstream(Some((&p("up.pem"), &p("up.key"))));
    let to = format!("https://127.0.0.1:{}", up.addr().port());
    let s = brisk(&to, &format!("ca = \"{}\"", p("ca.pem").display()));
    let r = s.request(b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(
        (r.status, r.text()),
        (200, "over tls\n".into()),
        "{}",
        r.head
    );
}

#[cfg(feature = "tls")]
#[test]
fn a_tls_handshake_that_never_ends_is_bounded_by_connect_timeout() {
    // (A TCP upstream that takes the connection and never answers the
    // ClientHello: the handshake, not the answer, is what waits.)
    let up = Upstream::start(vec![Say::Silence(std::time::Duration::from_secs(4))]);
    let to = format!("https://127.0.0.1:{}", up.addr.port());
    let s = brisk(
        &to,
        "tls_verify = false\nconnect_timeout = \"300ms\"\nread_timeout = \"60s\"",
    );
    // (Not reached: a 502, as for a connection refused.)
    let r = s.get("/api/x");
    assert_eq!(r.status, 502, "{}", r.head);
    s.wait_stderr_line("no connection to the upstream within connect_timeout");
}
