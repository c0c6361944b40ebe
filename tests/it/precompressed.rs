//! Precompressed sidecars (`file.br`, `file.gz`): negotiation, `Vary`
//! on every answer that depended on `Accept-Encoding`, and resources that
//! exist only precompressed (nginx's `gzip_static`).

use crate::common;

use common::*;

fn precompressed_site() -> Server {
    let mut b = Builder::new();
    b.file("a.js", b"console.log('identity');\n");
    b.file("a.js.gz", b"GZIP-BYTES");
    b.file("a.js.br", b"BROTLI");
    b.file("only-gz.css", b"body{}");
    b.file("only-gz.css.gz", b"GZ-CSS");
    b.file("plain.js", b"plain");
    b.start()
}

#[test]
fn precompressed_br_is_preferred() {
    let s = precompressed_site();
    let r = s.get_with("/a.js", "Accept-Encoding: gzip, br\r\n");
    assert_file(
        &r,
        b"BROTLI",
        "text/javascript; charset=utf-8",
        "Content-Encoding: br\r\nVary: Accept-Encoding\r\n",
        Conn::Close,
    );
    let r = s.get_with("/a.js", "Accept-Encoding: br\r\n");
    assert_eq!(r.body, b"BROTLI");
}

#[test]
fn precompressed_gzip_when_br_is_not_accepted() {
    let s = precompressed_site();
    let r = s.get_with("/a.js", "Accept-Encoding: gzip\r\n");
    assert_file(
        &r,
        b"GZIP-BYTES",
        "text/javascript; charset=utf-8",
        "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n",
        Conn::Close,
    );
    // q=0 means "not acceptable" (RFC 9110 §12.5.3).
    let r = s.get_with("/a.js", "Accept-Encoding: br;q=0, gzip\r\n");
    assert_eq!(r.body, b"GZIP-BYTES");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    // Only a .gz sidecar exists.
    let r = s.get_with("/only-gz.css", "Accept-Encoding: gzip, br\r\n");
    assert_file(
        &r,
        b"GZ-CSS",
        "text/css; charset=utf-8",
        "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n",
        Conn::Close,
    );
}

#[test]
fn precompressed_identity_without_accept_encoding() {
    let s = precompressed_site();
    let body = b"console.log('identity');\n";
    // No Accept-Encoding: identity, but the choice depended on the header
    // (RFC 9110 §12.5.5), so a cache must not give this to a br client.
    let r = s.get("/a.js");
    assert_file(
        &r,
        body,
        "text/javascript; charset=utf-8",
        "Vary: Accept-Encoding\r\n",
        Conn::Close,
    );
    // Accept-Encoding without a usable coding: identity, and it varies.
    let r = s.get_with("/a.js", "Accept-Encoding: identity\r\n");
    assert_file(
        &r,
        body,
        "text/javascript; charset=utf-8",
        "Vary: Accept-Encoding\r\n",
        Conn::Close,
    );
    // No sidecar at all: no Vary.
    let r = s.get_with("/plain.js", "Accept-Encoding: gzip, br\r\n");
    assert_file(
        &r,
        b"plain",
        "text/javascript; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn precompressed_head_matches_get() {
    let s = precompressed_site();
    let mut c = s.connect();
    c.send(b"HEAD /a.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n");
    let h = c.head_response();
    c.send(b"GET /a.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n");
    let g = c.response();
    assert_eq!(h.masked_head(), g.masked_head());
    assert_eq!(g.header("content-encoding"), Some("br"));
}

#[test]
fn not_modified_with_a_sidecar_varies() {
    let mut b = Builder::new();
    b.file("a.js", b"let a;");
    b.file("a.js.br", b"BR");
    let s = b.start();
    let r = s.get_with(
        "/a.js",
        &format!("Accept-Encoding: br\r\nIf-None-Match: {}\r\n", etag(2)),
    );
    assert_eq!(
        r.masked_head(),
        head(
            "304 Not Modified",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nVary: Accept-Encoding\r\nConnection: close\r\n",
                etag(2)
            )
        )
    );
}

/// The head of a 304 for a file of `size` bytes, with `extra` lines.
fn not_modified(size: usize, extra: &str) -> String {
    head(
        "304 Not Modified",
        &format!(
            "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\n{extra}Connection: close\r\n",
            etag(size)
        ),
    )
}

#[test]
fn every_answer_about_a_resource_with_sidecars_varies() {
    let s = precompressed_site();
    let body = b"console.log('identity');\n";
    let js = "text/javascript; charset=utf-8";
    let vary = "Vary: Accept-Encoding\r\n";
    // HEAD without Accept-Encoding: the GET's head.
    let mut c = s.connect();
    c.send(b"HEAD /a.js HTTP/1.1\r\nHost: x\r\n\r\n");
    let h = c.head_response();
    c.send(b"GET /a.js HTTP/1.1\r\nHost: x\r\n\r\n");
    let g = c.response();
    assert_eq!(h.masked_head(), g.masked_head());
    assert_eq!(g.header("vary"), Some("Accept-Encoding"));
    // 304 for the identity file, asked without Accept-Encoding.
    let inm = format!("If-None-Match: {}\r\n", etag(body.len()));
    let r = s.get_with("/a.js", &inm);
    assert_eq!(r.masked_head(), not_modified(body.len(), vary));
    // A range of the identity file.
    let r = s.get_with("/a.js", "Range: bytes=0-6\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "{}{vary}Content-Range: bytes 0-6/{}\r\nContent-Length: 7\r\nConnection: close\r\n",
                file_headers(body.len(), js),
                body.len()
            )
        )
    );
    assert_eq!(r.body, b"console");
    // 412 and 416 were decided against the chosen file too.
    let r = s.get_with("/a.js", "If-Match: \"nope\"\r\n");
    assert_error(&r, 412, "Precondition Failed", vary, Conn::Close);
    let r = s.get_with("/a.js", "Range: bytes=900-\r\n");
    assert_error(
        &r,
        416,
        "Range Not Satisfiable",
        &format!("Content-Range: bytes */{}\r\n{vary}", body.len()),
        Conn::Close,
    );
    // Without any sidecar nothing varies: no Vary on any of them.
    let r = s.get("/plain.js");
    assert_file(&r, b"plain", js, "", Conn::Close);
    let r = s.get_with("/plain.js", &format!("If-None-Match: {}\r\n", etag(5)));
    assert_eq!(r.masked_head(), not_modified(5, ""));
}

/// `CHANGES` exists only as `CHANGES.gz` (and `NEWS` only as `NEWS.br`).
fn sidecar_only_site(config: Option<&str>) -> Server {
    let mut b = Builder::new();
    b.file("doc/CHANGES.gz", b"GZ-OF-CHANGES");
    b.file("doc/NEWS.br", b"BR-OF-NEWS");
    b.file("doc/NEWS.gz", b"GZ-OF-NEWS");
    b.file("gz/index.html.gz", b"GZ-INDEX");
    b.file("plain/index.html", b"<p>plain</p>");
    b.file("plain/index.html.gz", b"GZ-PLAIN");
    if let Some(c) = config {
        b.config(c);
    }
    b.start()
}

#[test]
fn a_file_that_exists_only_precompressed_is_served_to_clients_that_accept_it() {
    let s = sidecar_only_site(None);
    let vary = "Vary: Accept-Encoding\r\n";
    let ctype = "application/octet-stream";
    let r = s.get_with("/doc/CHANGES", "Accept-Encoding: gzip, deflate\r\n");
    assert_file(
        &r,
        b"GZ-OF-CHANGES",
        ctype,
        &format!("Content-Encoding: gzip\r\n{vary}"),
        Conn::Close,
    );
    // br is preferred where both exist; the type is that of `NEWS`.
    let r = s.get_with("/doc/NEWS", "Accept-Encoding: gzip, br\r\n");
    assert_file(
        &r,
        b"BR-OF-NEWS",
        ctype,
        &format!("Content-Encoding: br\r\n{vary}"),
        Conn::Close,
    );
    // A client that takes no coding on offer: 404, as nginx's
    // `gzip_static on` without `gunzip` (and it varies).
    for ae in [
        "",
        "Accept-Encoding: identity\r\n",
        "Accept-Encoding: br\r\n",
        "Accept-Encoding: gzip;q=0\r\n",
    ] {
        let r = s.get_with("/doc/CHANGES", ae);
        assert_error(&r, 404, "Not Found", vary, Conn::Close);
    }
    // The sidecar is also a file of its own, served as itself.
    let r = s.get("/doc/CHANGES.gz");
    assert_file(&r, b"GZ-OF-CHANGES", "application/gzip", "", Conn::Close);
    // A name with no sidecar either is a plain 404 with no Vary.
    let r = s.get_with("/doc/MISSING", "Accept-Encoding: gzip\r\n");
    assert_error(&r, 404, "Not Found", "", Conn::Close);
    // Turned off, sidecars are never looked at.
    let s = sidecar_only_site(Some("[static]\nprecompressed = false\n"));
    let r = s.get_with("/doc/CHANGES", "Accept-Encoding: gzip\r\n");
    assert_error(&r, 404, "Not Found", "", Conn::Close);
}

#[test]
fn ranges_and_conditionals_apply_to_a_file_that_exists_only_precompressed() {
    let s = sidecar_only_site(None);
    let gz = "Accept-Encoding: gzip\r\n";
    let vary = "Vary: Accept-Encoding\r\n";
    let r = s.get_with("/doc/CHANGES", &format!("{gz}Range: bytes=3-4\r\n"));
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "{}Content-Encoding: gzip\r\n{vary}Content-Range: bytes 3-4/13\r\n\
                 Content-Length: 2\r\nConnection: close\r\n",
                file_headers(13, "application/octet-stream")
            )
        )
    );
    assert_eq!(r.body, b"OF");
    let r = s.get_with(
        "/doc/CHANGES",
        &format!("{gz}If-None-Match: {}\r\n", etag(13)),
    );
    assert_eq!(r.masked_head(), not_modified(13, vary));
    // HEAD has the GET's head.
    let mut c = s.connect();
    c.send(b"HEAD /doc/CHANGES HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    let h = c.head_response();
    c.send(b"GET /doc/CHANGES HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    let g = c.response();
    assert_eq!(h.masked_head(), g.masked_head());
    assert_eq!(g.body, b"GZ-OF-CHANGES");
}

#[test]
fn an_index_that_exists_only_precompressed_is_the_index() {
    let s = sidecar_only_site(None);
    let vary = "Vary: Accept-Encoding\r\n";
    let r = s.get_with("/gz/", "Accept-Encoding: gzip\r\n");
    assert_file(
        &r,
        b"GZ-INDEX",
        "text/html; charset=utf-8",
        &format!("Content-Encoding: gzip\r\n{vary}"),
        Conn::Close,
    );
    let r = s.get("/gz/");
    assert_error(&r, 404, "Not Found", vary, Conn::Close);
    // With the identity index present, a client without gzip gets it.
    let r = s.get("/plain/");
    assert_file(
        &r,
        b"<p>plain</p>",
        "text/html; charset=utf-8",
        vary,
        Conn::Close,
    );
}

#[test]
fn listings_show_sidecars_as_the_files_they_are() {
    let s = sidecar_only_site(Some("[static]\nautoindex = true\n"));
    let r = s.get_with("/doc/", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.status, 200);
    let html = r.text();
    for name in ["CHANGES.gz", "NEWS.br", "NEWS.gz"] {
        assert!(
            html.contains(&format!("<a href=\"{name}\">{name}</a>")),
            "{name}: {html}"
        );
    }
    assert!(!html.contains("href=\"CHANGES\""), "{html}");
}

#[test]
fn a_sidecar_added_later_is_seen_within_the_cache_validity() {
    let mut b = Builder::new();
    b.file("late.txt", b"late");
    b.config("[static]\nopen_file_cache_valid = \"0s\"\n");
    let root = b.root().to_path_buf();
    let s = b.start();
    let r = s.get("/late.txt");
    assert_file(&r, b"late", "text/plain; charset=utf-8", "", Conn::Close);
    write_file(&root.join("late.txt.gz"), b"GZ");
    let r = s.get("/late.txt");
    assert_file(
        &r,
        b"late",
        "text/plain; charset=utf-8",
        "Vary: Accept-Encoding\r\n",
        Conn::Close,
    );
    std::fs::remove_file(root.join("late.txt.gz")).expect("remove");
    let r = s.get("/late.txt");
    assert_file(&r, b"late", "text/plain; charset=utf-8", "", Conn::Close);
}

/// A `.svgz` is SVG gzipped: it is sent as `image/svg+xml` with
/// `Content-Encoding: gzip` (what nginx and Apache users configure;
/// without it a browser shows the gzip bytes), to every client (the
/// bytes have no other form: no `Vary`), never compressed again by
/// `[compress]`, and its ranges and validators are the file's bytes'.
#[test]
fn an_svgz_is_served_as_gzipped_svg() {
    let body: Vec<u8> = b"\x1f\x8b\x08\x00"
        .iter()
        .chain(b"<svg/>".repeat(200).iter())
        .copied()
        .collect();
    let mut b = Builder::new();
    b.file("pic.svgz", &body);
    b.file("UPPER.SVGZ", &body);
    if cfg!(feature = "compress") {
        b.config("[compress]\nenable = true\nthreads = 1\n");
    }
    let s = b.start();
    let svg = "image/svg+xml; charset=utf-8";
    let gz = "Content-Encoding: gzip\r\n";
    for accept in [
        "",
        "Accept-Encoding: gzip, br\r\n",
        "Accept-Encoding: br\r\n",
    ] {
        for path in ["/pic.svgz", "/UPPER.SVGZ"] {
            let r = s.get_with(path, accept);
            assert_file(&r, &body, svg, gz, Conn::Close);
        }
    }
    let r = s.get_with("/pic.svgz", "Accept-Encoding: gzip\r\nRange: bytes=1-2\r\n");
    let len = body.len();
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "{}{gz}Content-Range: bytes 1-2/{len}\r\n\
                 Content-Length: 2\r\nConnection: close\r\n",
                file_headers(len, svg)
            )
        )
    );
    assert_eq!(r.body, b"\x8b\x08");
    let r = s.get_with("/pic.svgz", &format!("If-None-Match: {}\r\n", etag(len)));
    assert_eq!(r.masked_head(), not_modified(len, ""));
}
