//! `[[cors]]` on the wire: the preflight answered 204 by the rule
//! (before `[[auth]]`), the headers on every answer of the rule, errors
//! included, `Vary: Origin` when the origin is echoed, and HTTP/2.
use crate::common;

use common::*;

const VECTORS: &str = include_str!("../../hash/testdata/vectors.htpasswd");

fn site() -> Server {
    let mut b = Builder::new();
    b.file("api/items.json", b"[1,2]\n");
    b.file("pub/data.json", b"{}\n");
    b.file("other.txt", b"no cors\n");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(
        r#"
[[cors]]
path = "/api/"
origins = ["https://app.example", "http://localhost:3000"]
methods = ["GET", "PUT", "DELETE"]
headers = ["Content-Type", "Authorization"]
credentials = true
max_age = 600
expose_headers = ["ETag"]

[[cors]]
pattern = "*.json"
origins = ["*"]

[[auth]]
path = "/api/"
realm = "API"
htpasswd = "htpasswd"
"#,
    );
    b.start()
}

const ECHOED: &str = "Vary: Origin\r\nAccess-Control-Allow-Origin: https://app.example\r\nAccess-Control-Allow-Credentials: true\r\n";

#[test]
fn the_preflight_is_answered_by_the_rule_before_auth() {
    let s = site();
    let r = s.request(
        b"OPTIONS /api/items.json HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: PUT\r\nAccess-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        r.masked_head(),
        head(
            "204 No Content",
            &format!("{ECHOED}Access-Control-Allow-Methods: GET, PUT, DELETE\r\nAccess-Control-Allow-Headers: Content-Type, Authorization\r\nAccess-Control-Max-Age: 600\r\nConnection: close\r\n")
        )
    );
    assert!(r.body.is_empty());
    // An origin not on the list: no permission, the browser refuses.
    let r = s.request(
        b"OPTIONS /api/items.json HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\nAccess-Control-Request-Method: PUT\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        r.masked_head(),
        head("204 No Content", "Vary: Origin\r\nConnection: close\r\n")
    );
}

#[test]
fn answers_and_errors_of_the_rule_carry_the_headers() {
    let s = site();
    let origin = "Origin: https://app.example\r\n";
    // The 401 of auth.
    let r = s.get_with("/api/items.json", origin);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.masked_head(),
        error_head(
            401,
            "Unauthorized",
            "WWW-Authenticate: Basic realm=\"API\", charset=\"UTF-8\"\r\n",
            Conn::Close
        )
        .replace(
            "Content-Length",
            &format!("{ECHOED}Access-Control-Expose-Headers: ETag\r\nContent-Length")
        )
    );
    // A file, with a login.
    let auth = format!(
        "{origin}Authorization: {}\r\n",
        basic_auth("sha1", "correct horse")
    );
    let r = s.get_with("/api/items.json", &auth);
    assert_file(
        &r,
        b"[1,2]\n",
        "application/json; charset=utf-8",
        &format!("{ECHOED}Access-Control-Expose-Headers: ETag\r\n"),
        Conn::Close,
    );
    // A 404 under the rule.
    let r = s.get_with("/api/missing", &auth);
    assert_eq!(r.status, 404);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    // Without an Origin, only the Vary.
    let r = s.get_with("/api/items.json", &auth[origin.len()..]);
    assert_file(
        &r,
        b"[1,2]\n",
        "application/json; charset=utf-8",
        "Vary: Origin\r\n",
        Conn::Close,
    );
}

#[test]
fn any_origin_is_answered_with_a_star() {
    let s = site();
    let r = s.get_with("/pub/data.json", "Origin: https://whoever.example\r\n");
    assert_file(
        &r,
        b"{}\n",
        "application/json; charset=utf-8",
        "Access-Control-Allow-Origin: *\r\n",
        Conn::Close,
    );
    // Outside every rule: nothing.
    let r = s.get_with("/other.txt", "Origin: https://whoever.example\r\n");
    assert_file(
        &r,
        b"no cors\n",
        "text/plain; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn credentials_with_a_star_is_a_config_error() {
    let (ok, _, err) = check_config(
        "root = \"root\"\n[[cors]]\npath = \"/\"\norigins = [\"*\"]\ncredentials = true\n",
    );
    assert!(!ok);
    assert!(
        err.contains(".toml:5: cors[1].credentials: credentials = true needs a list of origins"),
        "{err}"
    );
    let (ok, out, err) = check_config(
        "root = \"root\"\n[[cors]]\npath = \"/api/\"\norigins = [\"https://a.example\"]\nmax_age = 60\n",
    );
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "cors: 1 rule\n  path /api/: https://a.example; methods GET, HEAD, POST; max-age 60s\n"
        ),
        "{out}"
    );
}

#[cfg(feature = "http2")]
#[test]
fn cors_over_h2c() {
    use common::h2::H2;
    let s = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [
        c.request(
            "OPTIONS",
            "/api/items.json",
            &[
                ("origin", "http://localhost:3000"),
                ("access-control-request-method", "DELETE"),
            ],
            None,
        ),
        c.get("/pub/data.json", &[("origin", "https://x.example")]),
    ];
    let a = c.answers(&ids);
    assert_eq!(a[0].status(), "204");
    assert_eq!(
        a[0].field("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    assert_eq!(
        a[0].field("access-control-allow-methods"),
        Some("GET, PUT, DELETE")
    );
    assert_eq!(a[1].status(), "200");
    assert_eq!(a[1].field("access-control-allow-origin"), Some("*"));
}

#[test]
fn cgi_answers_get_the_headers_unless_they_set_their_own() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    for (name, extra) in [
        ("plain.cgi", ""),
        (
            "own.cgi",
            "Access-Control-Allow-Origin: https://own.example\\r\\n",
        ),
    ] {
        let script =
            format!("#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n{extra}\\r\\nok\\n'\n");
        b.file(&format!("api/{name}"), script.as_bytes());
        std::fs::set_permissions(
            b.root().join(format!("api/{name}")),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    b.config("[[cors]]\npath = \"/api/\"\norigins = [\"https://app.example\"]\n\n[[cgi]]\npattern = \"*.cgi\"\n");
    let s = b.start();
    let r = s.get_with("/api/plain.cgi", "Origin: https://app.example\r\n");
    assert_eq!(r.body, b"ok\n");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nVary: Origin\r\nAccess-Control-Allow-Origin: https://app.example\r\nConnection: close\r\n"
        )
    );
    let r = s.get_with("/api/own.cgi", "Origin: https://app.example\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nAccess-Control-Allow-Origin: https://own.example\r\nConnection: close\r\n"
        )
    );
    #[cfg(feature = "http2")]
    {
        use common::h2::H2;
        let mut c = H2::connect(s.addr(), &[], 0);
        let ids = [c.get("/api/plain.cgi", &[("origin", "https://app.example")])];
        let a = c.answers(&ids);
        assert_eq!(a[0].status(), "200");
        assert_eq!(
            a[0].field("access-control-allow-origin"),
            Some("https://app.example")
        );
        assert_eq!(a[0].field("vary"), Some("Origin"));
    }
}

#[test]
fn each_site_has_its_own_rules_and_pages() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("x.cgi", b"default's source\n");
    write_file(&b.base().join("app/errors/404.html"), b"app's 404\n");
    write_file(&b.base().join("app/index.html"), b"app\n");
    let script = b.base().join("app/api/x.cgi");
    write_file(
        &script,
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\ncgi\\n'\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.config(
        "[[site]]\nhosts = [\"app.test\"]\nroot = \"app\"\n\
         [[site.cors]]\npath = \"/api/\"\norigins = [\"*\"]\n\
         [[site.cgi]]\npattern = \"*.cgi\"\n\
         [site.errors]\n404 = \"errors/404.html\"\n\
         [site.static]\nspa = \"index.html\"\n",
    );
    let s = b.start();
    let get = |path: &str, host: &str| {
        s.request(
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: https://o.example\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    // app.test: its CORS rule on its CGI program's answer and its 404 page.
    let r = get("/api/x.cgi", "app.test");
    assert_eq!((r.status, r.text().as_str()), (200, "cgi\n"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let r = get("/api/missing.js", "app.test");
    assert_eq!((r.status, r.text().as_str()), (404, "app's 404\n"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(get("/route", "app.test").text(), "app\n");
    // The default site has none of them.
    let r = get("/api/x.cgi", "localhost");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.text(), error_page(404, "Not Found"));
}
