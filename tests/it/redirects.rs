//! `[[redirect]]` and `[[rewrite]]` on the wire: byte-exact redirect
//! heads, the query kept, conditions on scheme and host, rewrites seen by
//! `[[auth]]` (a rewrite never gets round a login) and by CGI, the
//! rewrite loop bound, the access log keeping what the client sent, and
//! the same over HTTP/2.
use crate::common;

use common::*;

const VECTORS: &str = include_str!("../../hash/testdata/vectors.htpasswd");

const RULES: &str = r#"
[[redirect]]
from = "^/old/(.*)$"
to = "/new/$1"
status = 301

[[redirect]]
exact = "/moved"
to = "https://example.org$uri"

[[redirect]]
host = "www.example.org"
prefix = "/"
to = "http://example.org$uri"
status = 308

[[redirect]]
scheme = "https"
exact = "/only-https"
to = "/never"

[[rewrite]]
from = "^/post/([0-9]+)$"
to = "/post.txt?id=$1"

[[rewrite]]
prefix = "/open/"
to = "/private/$1"

[[rewrite]]
from = "^/loop/(.*)$"
to = "/loop/x/$1"

[[auth]]
path = "/private/"
realm = "Private"
htpasswd = "htpasswd"
"#;

fn site(extra: &str) -> Server {
    let mut b = Builder::new();
    b.file("post.txt", b"a post\n");
    b.file("new/a/b.txt", b"new b\n");
    b.file("private/secret.txt", b"the secret\n");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(&format!("{RULES}{extra}"));
    b.access_log();
    b.start()
}

fn redirect_head(status: &str, location: &str) -> String {
    let code: u16 = status[..3].parse().unwrap();
    let page = error_page(code, &status[4..]);
    head(
        status,
        &format!(
            "Location: {location}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
            page.len()
        ),
    )
}

#[test]
fn redirects_answer_with_location_and_keep_the_query() {
    let s = site("");
    let r = s.get("/old/a/b.txt?x=1&y=%20");
    assert_eq!(
        r.masked_head(),
        redirect_head("301 Moved Permanently", "/new/a/b.txt?x=1&y=%20")
    );
    assert_eq!(r.text(), error_page(301, "Moved Permanently"));
    // The default status is 302; an absolute target with $uri.
    let r = s.get("/moved?q=1");
    assert_eq!(
        r.masked_head(),
        redirect_head("302 Found", "https://example.org/moved?q=1")
    );
    // Where the redirect leads is served.
    assert_eq!(s.get("/new/a/b.txt").body, b"new b\n");
}

#[test]
fn conditions_on_host_and_scheme() {
    let s = site("");
    let r =
        s.request(b"GET /x/y HTTP/1.1\r\nHost: WWW.example.org:8080\r\nConnection: close\r\n\r\n");
    assert_eq!(
        r.masked_head(),
        redirect_head("308 Permanent Redirect", "http://example.org/x/y")
    );
    // Another host: no redirect.
    let r = s.request(b"GET /x/y HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 404);
    // Plain HTTP: the https-only rule does not apply.
    assert_eq!(s.get("/only-https").status, 404);
}

#[test]
fn a_rewrite_serves_another_file_and_the_log_keeps_the_request() {
    let s = site("");
    let r = s.get("/post/42");
    assert_file(
        &r,
        b"a post\n",
        "text/plain; charset=utf-8",
        "",
        Conn::Close,
    );
    let line = s.wait_access_line(|l| l.windows(9).any(|w| w == b"/post/42 "));
    let line = String::from_utf8(line).unwrap();
    assert!(line.contains("\"GET /post/42 HTTP/1.1\" 200 7"), "{line}");
    // A path the rule does not match is not rewritten.
    assert_eq!(s.get("/post/x").status, 404);
}

#[test]
fn a_rewrite_never_gets_round_auth() {
    let s = site("");
    let r = s.get("/open/secret.txt");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Basic realm=\"Private\", charset=\"UTF-8\"")
    );
    let auth = format!("Authorization: {}\r\n", basic_auth("sha1", "correct horse"));
    // With a login, the rewritten request is served (routed again after
    // the password check, not rewritten twice).
    let r = s.get_with("/open/secret.txt", &auth);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"the secret\n");
}

#[test]
fn a_rewrite_loop_is_cut_with_500_and_a_log_line() {
    let s = site("");
    let r = s.get("/loop/a");
    assert_error(&r, 500, "Internal Server Error", "", Conn::Close);
    let line = s.wait_stderr_line("rewritten 10 times");
    assert!(line.contains("/loop/a"), "{line}");
    assert!(line.contains(".toml:"), "the rule's place: {line}");
}

#[test]
fn cgi_sees_the_rewritten_path_and_the_request_uri_sent() {
    let mut b = Builder::new();
    b.file(
        "cgi-bin/env.cgi",
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\necho \"PATH_INFO=$PATH_INFO\"\necho \"QUERY_STRING=$QUERY_STRING\"\necho \"REQUEST_URI=$REQUEST_URI\"\n",
    );
    std::fs::set_permissions(
        b.root().join("cgi-bin/env.cgi"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    b.config(
        "[[rewrite]]\nfrom = \"^/api/(.*)$\"\nto = \"/cgi-bin/env.cgi/$1?v=2&$query\"\n\n[[cgi]]\npattern = \"*.cgi\"\n",
    );
    let s = b.start();
    let r = s.get("/api/items/7?x=1");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        "PATH_INFO=/items/7\nQUERY_STRING=v=2&x=1\nREQUEST_URI=/api/items/7?x=1\n"
    );
}

#[cfg(feature = "http2")]
#[test]
fn redirects_and_rewrites_over_h2c() {
    use common::h2::H2;
    let s = site("");
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [
        c.get("/old/a/b.txt?x=1", &[]),
        c.get("/post/7", &[]),
        c.get("/open/secret.txt", &[]),
    ];
    let a = c.answers(&ids);
    assert_eq!(a[0].status(), "301");
    assert_eq!(a[0].field("location"), Some("/new/a/b.txt?x=1"));
    assert_eq!(a[1].status(), "200");
    assert_eq!(a[1].body, b"a post\n");
    assert_eq!(a[2].status(), "401");
}

#[test]
fn check_config_lists_the_rules_in_file_order() {
    let rules = &RULES[..RULES.find("[[auth]]").unwrap()];
    let (ok, out, err) = check_config(&format!("root = \"root\"\n{rules}"));
    assert!(ok, "{err}");
    let at = out.find("redirects and rewrites: 7 rules\n").expect(&out);
    let lines: Vec<&str> = out[at..].lines().skip(1).take(7).collect();
    assert_eq!(
        lines,
        [
            "  from ^/old/(.*)$: redirect 301 to /new/$1 (line 3)",
            "  exact /moved: redirect 302 to https://example.org$uri (line 8)",
            "  prefix /: redirect 308 to http://example.org$uri (only host www.example.org) (line 12)",
            "  exact /only-https: redirect 302 to /never (only scheme https) (line 18)",
            "  from ^/post/([0-9]+)$: rewrite to /post.txt?id=$1 (line 23)",
            "  prefix /open/: rewrite to /private/$1 (line 27)",
            "  from ^/loop/(.*)$: rewrite to /loop/x/$1 (line 31)",
        ]
    );
}

#[cfg(feature = "tls")]
#[test]
fn scheme_conditions_over_tls() {
    let mut b = Builder::new();
    b.file("page.txt", b"secure page\n");
    b.config(
        "[[redirect]]\nscheme = \"http\"\nprefix = \"/\"\nto = \"https://$host$uri\"\nstatus = 301\n\n\
         [[redirect]]\nscheme = \"https\"\nexact = \"/here\"\nto = \"$scheme://$host/page.txt\"\n",
    );
    b.tls();
    let s = b.start();
    let mut c = s.connect_tls();
    c.send(b"GET /page.txt HTTP/1.1\r\nHost: a.test\r\n\r\nGET /here?x=1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200, "HTTPS is not sent to HTTPS again");
    assert_eq!(r.body, b"secure page\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        redirect_head("302 Found", "https://a.test/page.txt?x=1")
    );
}

/// `[tls] redirect_http`: every plain-HTTP request is sent to the same
/// host, path and query over HTTPS, on the TLS listener's own port (not
/// 443, which `https://$host$uri` would have meant), with 308 so that a
/// POST stays a POST; HTTPS requests are served.
#[cfg(feature = "tls")]
#[test]
fn redirect_http_sends_plain_requests_to_the_https_port() {
    // The TLS port must be known to the configuration: a free one.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut b = Builder::new();
    b.file("page.txt", b"secure page\n");
    let tls = common::tls::section(&["a"], "redirect_http = true")
        .replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    b.config(&format!("listen = [\"127.0.0.1:0\"]\n{tls}"))
        .listen_from_config()
        .listeners(2);
    let s = b.start();
    let plain = s
        .addrs
        .iter()
        .find(|a| a.port() != port)
        .expect("the plain listener");
    let mut c = Client::connect(*plain);
    c.send(b"POST /a%20b/page.txt?x=1&y HTTP/1.1\r\nHost: A.test:8080\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        redirect_head(
            "308 Permanent Redirect",
            &format!("https://a.test:{port}/a%20b/page.txt?x=1&y")
        )
    );
    // A request that names no host (HTTP/1.0 may send none; HTTP/1.1 an
    // empty one) is sent to the address it came to: not to
    // `https://:PORT/`, which names no host (RFC 9110 §4.2.2).
    for head in [
        &b"GET /page.txt HTTP/1.0\r\n\r\n"[..],
        b"GET /page.txt HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
    ] {
        let mut c = Client::connect(*plain);
        c.send(head);
        let r = c.response();
        assert_eq!(r.status, 308, "{}", r.head);
        assert_eq!(
            r.header("Location"),
            Some(format!("https://127.0.0.1:{port}/page.txt").as_str())
        );
    }
    let mut c = s.connect_tls_to(format!("127.0.0.1:{port}").parse().unwrap());
    c.send(b"GET /page.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"secure page\n");
}
