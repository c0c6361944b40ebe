//! `[[webdav]] max_upload` above `limits.max_body`: a PUT beneath the
//! rule may be as large as `max_upload`, over HTTP/1.1 (either framing),
//! with `[[auth]]` in front and over HTTP/2; every other body keeps
//! `limits.max_body`.

use crate::common;

use common::*;
use std::fs;

/// A server with `max_body = 1000` and a `[[webdav]]` rule taking PUTs
/// of up to 5000 bytes; a CGI script elsewhere to send other bodies to.
fn start(extra: &str) -> (Server, std::path::PathBuf) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    let script = b.base().join("cgi-bin/cat.sh");
    write_file(
        &script,
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\ncat\n",
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[limits]\nmax_body = 1000\n\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nmax_upload = 5000\n{extra}",
        dav.display()
    ));
    (b.start(), dav)
}

fn put(s: &Server, path: &str, body: &[u8], headers: &str) -> Response {
    let mut raw = format!(
        "PUT {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    s.request(&raw)
}

fn chunked(s: &Server, method: &str, path: &str, body: &[u8]) -> Response {
    let mut c = s.connect();
    c.send(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .as_bytes(),
    );
    // A body over its bound is answered 413 before its end, and the
    // connection closed: the rest may meet a closed socket.
    for piece in chunked_body(body, 700).chunks(1000) {
        if !c.try_send(piece) {
            break;
        }
    }
    c.response()
}

#[test]
fn a_put_may_be_as_large_as_max_upload_and_nothing_else_grows() {
    let (s, dav) = start("");
    let big: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(put(&s, "/dav/a", &big, "").status, 201);
    assert_eq!(fs::read(dav.join("a")).unwrap(), big);
    assert_eq!(chunked(&s, "PUT", "/dav/b", &big).status, 201);
    assert_eq!(fs::read(dav.join("b")).unwrap(), big);
    // Over max_upload: 413, and nothing written.
    assert_eq!(put(&s, "/dav/c", &[b'x'; 5001], "").status, 413);
    assert_eq!(chunked(&s, "PUT", "/dav/c", &[b'x'; 5001]).status, 413);
    assert!(!dav.join("c").exists());
    // Every other body keeps limits.max_body, whatever its framing.
    let r = s.request(
        format!(
            "POST /cgi-bin/cat.sh HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1001\r\n\r\n{}",
            "x".repeat(1001)
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 413);
    assert_eq!(
        chunked(&s, "POST", "/cgi-bin/cat.sh", &[b'x'; 1001]).status,
        413
    );
    let r = s.request(
        b"POST /cgi-bin/cat.sh HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!((r.status, &r.body[..]), (200, &b"abc"[..]));
    // Another of the rule's methods with a body, and a PUT outside it.
    let r = s.request(
        format!(
            "PROPPATCH /dav/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2000\r\n\r\n{}",
            " ".repeat(2000)
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 413);
    // A PUT elsewhere is answered for what it is (static files take no
    // PUT), its body dropped, and the connection goes on.
    let mut c = s.connect();
    let mut raw =
        b"PUT /other HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4000\r\n\r\n".to_vec();
    raw.extend_from_slice(&big);
    raw.extend_from_slice(b"GET /dav/a HTTP/1.1\r\nHost: localhost\r\n\r\n");
    c.send(&raw);
    assert_eq!(c.response().status, 405);
    let r = c.response();
    assert_eq!((r.status, r.body.len()), (200, 4000));
}

#[test]
fn with_auth_in_front_the_bound_is_the_rule_s() {
    let (s, dav) =
        start("\n[[auth]]\npath = \"/dav/\"\nrealm = \"DAV\"\nhtpasswd = \"htpasswd\"\n");
    let big = vec![b'z'; 4000];
    // Refused for its missing login, not for its size.
    assert_eq!(put(&s, "/dav/a", &big, "").status, 401);
    let auth = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    assert_eq!(put(&s, "/dav/a", &big, &auth).status, 201);
    assert_eq!(fs::read(dav.join("a")).unwrap(), big);
    assert_eq!(put(&s, "/dav/b", &[b'z'; 5001], &auth).status, 413);
    assert!(!dav.join("b").exists());
}

#[cfg(feature = "http2")]
#[test]
fn over_http2_alike() {
    use common::h2::H2;
    let (s, dav) = start("");
    let mut c = H2::connect(s.addr(), &[], 0);
    let big: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let len = big.len().to_string();
    let a = c.request(
        "PUT",
        "/dav/a",
        &[("content-length", len.as_str())],
        Some(&big),
    );
    // Without a length, counted as it arrives.
    let b = c.request("PUT", "/dav/b", &[], Some(&big));
    let over = c.request(
        "PUT",
        "/dav/c",
        &[("content-length", "5001")],
        Some(&[b'x'; 5001]),
    );
    let cgi = c.request("POST", "/cgi-bin/cat.sh", &[], Some(&[b'x'; 1001]));
    let answers = c.answers(&[a, b, over, cgi]);
    let statuses: Vec<_> = answers.iter().map(|a| a.status()).collect();
    assert_eq!(statuses, ["201", "201", "413", "413"]);
    assert_eq!(fs::read(dav.join("a")).unwrap(), big);
    assert_eq!(fs::read(dav.join("b")).unwrap(), big);
    assert!(!dav.join("c").exists());
}

/// A PUT whose client leaves before its body is all in (held whole until
/// then) is logged 499 with nothing sent, and nothing is written: over
/// HTTP/1.1 its connection closed, over HTTP/2 its stream reset (the
/// connection going on).
#[test]
fn an_upload_its_client_abandons_is_logged_499() {
    let (mut b, dav) = super::webdav::builder("");
    b.access_log();
    let s = b.start();
    let mut c = s.connect();
    c.send(b"PUT /dav/cut HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4000\r\n\r\nxyz");
    drop(c);
    let line = s.wait_access_line(|l| find(l, b"/dav/cut ").is_some());
    let line = String::from_utf8_lossy(&line);
    assert!(line.contains("\"PUT /dav/cut HTTP/1.1\" 499 0 "), "{line}");
    #[cfg(feature = "http2")]
    {
        use brisk::h2::frame;
        use brisk::h2::ErrorCode;
        let mut c = common::h2::H2::connect(s.addr(), &[], 0);
        let block = common::h2::H2::block("PUT", "/dav/reset", &[("content-length", "4000")]);
        let mut out = Vec::new();
        frame::write_headers(&mut out, 1, &block, false, 16_384);
        out.extend_from_slice(&frame::data_head(1, 3, false));
        out.extend_from_slice(b"xyz");
        frame::write_rst(&mut out, 1, ErrorCode::Cancel);
        c.send(&out);
        c.next = 3;
        let line = s.wait_access_line(|l| find(l, b"/dav/reset ").is_some());
        let line = String::from_utf8_lossy(&line);
        assert!(
            line.contains("\"PUT /dav/reset HTTP/2.0\" 499 0 "),
            "{line}"
        );
        let ok = c.request("PUT", "/dav/whole", &[], Some(b"abc"));
        assert_eq!(c.answers(&[ok])[0].status(), "201");
    }
    assert_eq!(
        super::webdav::names(&dav),
        ["whole"; 1][..usize::from(cfg!(feature = "http2"))]
    );
}
