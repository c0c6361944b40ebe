//! `[errors]`: the site's own pages for error statuses, from every
//! source (static files, CGI refusals, auth, limits), with the right
//! status and type and `Cache-Control: no-store`; a page that cannot be
//! served leaves the built-in one and is logged once.
use crate::common;

use common::*;

const VECTORS: &str = include_str!("../../hash/testdata/vectors.htpasswd");
const NOT_FOUND: &[u8] = b"<h1>Nothing here</h1>\n";
const DENIED: &[u8] = b"<p>No.</p>\n";
const LOGIN: &[u8] = b"please log in\n";
const TOO_LARGE: &[u8] = b"{\"error\":\"too large\"}\n";

fn site(errors: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"home\n");
    b.file("errors/404.html", NOT_FOUND);
    b.file("errors/403.html", DENIED);
    b.file("errors/401.txt", LOGIN);
    b.file("errors/413.json", TOO_LARGE);
    b.file("private/secret.txt", b"secret\n");
    b.dir("cgi-bin");
    b.dir("empty");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(&format!(
        "[limits]\nmax_body = 16\nmax_header_bytes = 1024\n\n\
         [[auth]]\npath = \"/private/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n\n\
         [[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"root/cgi-bin\"\n\n{errors}"
    ));
    b.start()
}

const ALL: &str = "[errors]\n404 = \"errors/404.html\"\n403 = \"/errors/403.html\"\n401 = \"errors/401.txt\"\n413 = \"errors/413.json\"\n431 = \"errors/404.html\"\n";

fn page_head(status: &str, extra: &str, ctype: &str, len: usize, conn: Conn) -> String {
    head(
        status,
        &format!(
            "{extra}Content-Type: {ctype}\r\nCache-Control: no-store\r\nContent-Length: {len}\r\n{}",
            conn.line()
        ),
    )
}

#[test]
fn a_missing_file_gets_the_sites_404_page() {
    let s = site(ALL);
    let r = s.get("/nope.html");
    assert_eq!(
        r.masked_head(),
        page_head(
            "404 Not Found",
            "",
            "text/html; charset=utf-8",
            NOT_FOUND.len(),
            Conn::Close
        )
    );
    assert_eq!(r.body, NOT_FOUND);
    // HEAD: the same head, no body.
    let mut c = s.connect();
    c.send(b"HEAD /nope.html HTTP/1.1\r\nHost: x\r\n\r\nGET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        page_head(
            "404 Not Found",
            "",
            "text/html; charset=utf-8",
            NOT_FOUND.len(),
            Conn::None
        )
    );
    assert_eq!(c.response().body, b"home\n");
}

#[test]
fn forbidden_from_static_and_from_cgi_refusals() {
    let s = site(ALL);
    // A directory without an index.
    let r = s.get("/empty/");
    assert_eq!(r.status, 403);
    assert_eq!(r.body, DENIED);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    // A CGI directory is never listed.
    let r = s.get("/cgi-bin/");
    assert_eq!(
        r.masked_head(),
        page_head(
            "403 Forbidden",
            "",
            "text/html; charset=utf-8",
            DENIED.len(),
            Conn::Close
        )
    );
    assert_eq!(r.body, DENIED);
}

#[test]
fn auth_keeps_its_challenge() {
    let s = site(ALL);
    let r = s.get("/private/secret.txt");
    assert_eq!(
        r.masked_head(),
        page_head(
            "401 Unauthorized",
            "WWW-Authenticate: Basic realm=\"P\", charset=\"UTF-8\"\r\n",
            "text/plain; charset=utf-8",
            LOGIN.len(),
            Conn::Close
        )
    );
    assert_eq!(r.body, LOGIN);
}

#[test]
fn limits_413_and_431() {
    let s = site(ALL);
    let r =
        s.request(b"POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    assert_eq!(
        r.masked_head(),
        page_head(
            "413 Content Too Large",
            "",
            "application/json; charset=utf-8",
            TOO_LARGE.len(),
            Conn::Close
        )
    );
    assert_eq!(r.body, TOO_LARGE);
    let big = "a".repeat(2000);
    let r = s.request(format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes());
    assert_eq!(r.status, 431);
    assert_eq!(r.body, NOT_FOUND);
    assert_eq!(r.header("cache-control"), Some("no-store"));
}

#[test]
fn a_page_for_a_plain_text_error_has_one_content_type() {
    // The 501 of a WebSocket handshake where no proxy takes it is
    // text/plain: its page's type used to go beside that one, two
    // Content-Type fields (RFC 9110 §5.3: one).
    let s = site("[errors]\n501 = \"errors/404.html\"\n");
    let r = s.request(
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Connection: close\r\n\r\n",
    );
    assert_eq!(
        r.masked_head(),
        page_head(
            "501 Not Implemented",
            "",
            "text/html; charset=utf-8",
            NOT_FOUND.len(),
            Conn::Close
        )
    );
    assert_eq!(r.body, NOT_FOUND);
}

#[test]
fn a_missing_page_falls_back_to_the_built_in_one_and_is_logged_once() {
    let s = site("[errors]\n404 = \"errors/gone.html\"\n");
    for _ in 0..3 {
        assert_error(&s.get("/nope"), 404, "Not Found", "", Conn::Close);
    }
    s.wait_stderr_line("errors.404: \"errors/gone.html\" cannot be served");
    let lines = s.stderr().matches("errors.404:").count();
    assert_eq!(lines, 1, "{}", s.stderr());
}

#[test]
fn a_cgi_program_that_fails_gets_the_502_page() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("errors/502.html", b"<p>upstream trouble</p>\n");
    b.file("bad.cgi", b"#!/bin/sh\nprintf 'no header here\\n\\n'\n");
    std::fs::set_permissions(
        b.root().join("bad.cgi"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    b.config("[[cgi]]\npattern = \"*.cgi\"\n\n[errors]\n502 = \"errors/502.html\"\n");
    let s = b.start();
    let r = s.get("/bad.cgi");
    assert_eq!(
        r.masked_head(),
        page_head(
            "502 Bad Gateway",
            "",
            "text/html; charset=utf-8",
            24,
            Conn::Close
        )
    );
    assert_eq!(r.body, b"<p>upstream trouble</p>\n");
}

#[test]
fn each_site_gets_its_own_pages_even_for_a_failed_program() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("errors/502.html", b"default's 502\n");
    write_file(&b.base().join("app/errors/502.html"), b"app's 502\n");
    let script = b.base().join("app/bad.cgi");
    write_file(&script, b"#!/bin/sh\nprintf 'no header here\\n\\n'\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.config(
        "[errors]\n502 = \"errors/502.html\"\n\
         [[site]]\nhosts = [\"app.test\"]\nroot = \"app\"\n\
         [[site.cgi]]\npattern = \"*.cgi\"\n\
         [site.errors]\n502 = \"errors/502.html\"\n",
    );
    let s = b.start();
    let r = s.request(b"GET /bad.cgi HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.text().as_str()), (502, "app's 502\n"));
}

#[test]
fn statuses_without_a_page_are_untouched() {
    let s = site("[errors]\n500 = \"errors/404.html\"\n");
    assert_error(&s.get("/nope"), 404, "Not Found", "", Conn::Close);
}

#[test]
fn bad_error_page_keys_are_config_errors() {
    let (ok, _, out) = check_config("root = \"root\"\n[errors]\n302 = \"x.html\"\n");
    assert!(!ok);
    assert!(
        out.contains(".toml:3: errors.302: expected a status from 400 to 599 as the key"),
        "{out}"
    );
}

#[cfg(feature = "http2")]
#[test]
fn error_pages_over_h2c() {
    use common::h2::H2;
    let s = site(ALL);
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [c.get("/nope", &[]), c.request("HEAD", "/nope", &[], None)];
    let a = c.answers(&ids);
    assert_eq!(a[0].status(), "404");
    assert_eq!(a[0].body, NOT_FOUND);
    assert_eq!(a[0].field("cache-control"), Some("no-store"));
    assert_eq!(a[0].field("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(a[1].status(), "404");
    assert_eq!(
        a[1].field("content-length"),
        Some(NOT_FOUND.len().to_string().as_str())
    );
    assert!(a[1].body.is_empty());
}
