//! `[static] spa` and `try_files`: a path that is no file falls back to
//! the application's page with 200 (HEAD, conditionals and ranges work
//! on it), except paths that look like assets, which stay 404.
use crate::common;

use common::*;

const APP: &[u8] = b"<!doctype html><div id=app></div>\n";

fn site(static_extra: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", APP);
    b.file("about.html", b"about\n");
    b.file("app.js", b"run()\n");
    b.dir("docs");
    b.config(&format!("[static]\n{static_extra}\n"));
    b.start()
}

#[test]
fn a_route_of_the_app_is_served_its_page() {
    let s = site("spa = \"index.html\"");
    // (A directory without an index falls back too.)
    for path in ["/users/42", "/deep/er/route", "/docs/", "/x.html"] {
        let r = s.get(path);
        assert_file(&r, APP, "text/html; charset=utf-8", "", Conn::Close);
    }
    // A directory's name without its slash is sent to it first.
    assert_eq!(s.get("/docs").header("location"), Some("/docs/"));
    // Files are themselves.
    assert_eq!(s.get("/app.js").body, b"run()\n");
}

#[test]
fn assets_stay_404() {
    let s = site("spa = \"index.html\"");
    for path in ["/missing.js", "/img/logo.PNG", "/style.css", "/data.json"] {
        assert_error(&s.get(path), 404, "Not Found", "", Conn::Close);
    }
    // The list is configurable.
    let s = site("spa = \"index.html\"\nfallback_exclude = [\"txt\"]");
    assert_error(&s.get("/notes.txt"), 404, "Not Found", "", Conn::Close);
    assert_eq!(s.get("/missing.js").body, APP);
}

#[test]
fn head_conditionals_and_ranges_on_the_fallback() {
    let s = site("spa = \"index.html\"");
    let mut c = s.connect();
    c.send(b"HEAD /route HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!(
                "{}Content-Length: {}\r\n",
                file_headers(APP.len(), "text/html; charset=utf-8"),
                APP.len()
            )
        )
    );
    let r = s.get_with("/route", &format!("If-None-Match: {}\r\n", etag(APP.len())));
    assert_eq!(r.status, 304);
    let r = s.get_with("/route", "Range: bytes=0-8\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &APP[..9]);
    // Other methods are not served a page.
    let r = s.request(
        b"POST /route HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 405);
}

#[test]
fn try_files_tries_in_order() {
    let s = site("try_files = [\"$uri.html\", \"/index.html\"]");
    assert_eq!(s.get("/about").body, b"about\n");
    assert_eq!(
        s.get("/about").header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(s.get("/elsewhere").body, APP);
    // Dotfiles are not reached through it.
    let mut b = Builder::new();
    b.file(".secret.html", b"hidden\n");
    b.config("[static]\ntry_files = [\"/.secret.html\"]\n");
    let s = b.start();
    assert_eq!(s.get("/x").status, 404);
}

/// The guards judge the file a fallback serves, not only the path that
/// named it: pretty URLs (`$uri.html`) must not serve a page behind a
/// login, or one an `[[access]]` rule keeps from the client, to a path
/// no rule names.
#[test]
fn try_files_serves_no_guarded_file_past_its_guard() {
    let mut b = Builder::new();
    b.file("index.html", APP);
    b.file("members/page.html", b"members only\n");
    b.file("report.html", b"report\n");
    b.file("open.html", b"open\n");
    let alice = "alice:$apr1$walvcbED$13blgIE6v21Xa1Ytp4eNw1\n"; // password "pw"
    write_file(&b.base().join("htpasswd"), alice.as_bytes());
    b.config(concat!(
        "[static]\ntry_files = [\"$uri.html\", \"/index.html\"]\n",
        "[[auth]]\npattern = \"/members/*.html\"\nrealm = \"M\"\nhtpasswd = \"htpasswd\"\n",
        "[[access]]\npath = \"/report.html\"\nallow = [\"192.0.2.0/24\"]\n",
    ));
    let s = b.start();
    assert_eq!(s.get("/members/page.html").status, 401);
    assert_eq!(s.get("/report.html").status, 403);
    // Named otherwise, the guarded files are passed over for the next
    // candidate, as if they were not there.
    assert_eq!(s.get("/members/page").body, APP);
    assert_eq!(s.get("/report").body, APP);
    // What no rule guards is served as before.
    assert_eq!(s.get("/open").body, b"open\n");
    // A login the request gave for the same file lets its page through.
    let mut b = Builder::new();
    b.file("members/page.html", b"members only\n");
    write_file(&b.base().join("htpasswd"), alice.as_bytes());
    b.config(concat!(
        "[static]\ntry_files = [\"$uri.html\"]\n",
        "[[auth]]\npath = \"/members/\"\nrealm = \"M\"\nhtpasswd = \"htpasswd\"\n",
    ));
    let s = b.start();
    assert_eq!(s.get("/members/page").status, 401);
    let login = format!("Authorization: {}\r\n", basic_auth("alice", "pw"));
    assert_eq!(s.get_with("/members/page", &login).body, b"members only\n");
}

#[test]
fn without_a_fallback_file_the_404_stays() {
    let mut b = Builder::new();
    b.config("[static]\nspa = \"app.html\"\n");
    let s = b.start();
    assert_error(&s.get("/route"), 404, "Not Found", "", Conn::Close);
}

#[test]
fn check_config_shows_the_fallback() {
    let (ok, out, err) = check_config("root = \"root\"\n[static]\nspa = \"index.html\"\n");
    assert!(ok, "{err}");
    assert!(
        out.contains("try_files: /index.html (200), not for .js .mjs .css"),
        "{out}"
    );
    let (ok, _, err) =
        check_config("root = \"root\"\n[static]\nspa = \"index.html\"\ntry_files = [\"/a\"]\n");
    assert!(!ok);
    assert!(
        err.contains(".toml:4: static.try_files: give either spa or try_files, not both"),
        "{err}"
    );
}

#[cfg(feature = "http2")]
#[test]
fn spa_over_h2c() {
    use common::h2::H2;
    let s = site("spa = \"index.html\"");
    let mut c = H2::connect(s.addr(), &[], 0);
    let ids = [c.get("/a/route", &[]), c.get("/gone.js", &[])];
    let a = c.answers(&ids);
    assert_eq!(a[0].status(), "200");
    assert_eq!(a[0].body, APP);
    assert_eq!(a[1].status(), "404");
}
