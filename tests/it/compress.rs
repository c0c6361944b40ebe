//! On-the-fly compression (`[compress]`): static files' variants (made
//! off the event loop, then served from the shared cache), negotiation
//! by `Accept-Encoding` weights, `Vary` and per-coding ETags, ranges,
//! HEAD and 304, and what is never compressed. Every compressed body is
//! decoded and compared with the file.

use crate::common;

use std::io::Read;

use common::*;

const ON: &str = "[compress]\nenable = true\n";

/// 100 KiB of HTML, as the issue's benchmark file.
fn page() -> Vec<u8> {
    let mut out = b"<!DOCTYPE html>\n<html><body><ul>\n".to_vec();
    let mut i = 0u32;
    while out.len() < 100 * 1024 - 20 {
        out.extend_from_slice(
            format!(
                "<li class=\"item\">entry {i} of {}</li>\n",
                i.wrapping_mul(7919) % 1000
            )
            .as_bytes(),
        );
        i += 1;
    }
    out.resize(100 * 1024 - 15, b' ');
    out.extend_from_slice(b"</ul></body>\n\n");
    out.truncate(100 * 1024);
    out
}

fn decode(coding: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => {
            flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .expect("gzip decodes");
        }
        "br" => {
            brotli::Decompressor::new(data, 4096)
                .read_to_end(&mut out)
                .expect("br decodes");
        }
        "zstd" => out = zstd::stream::decode_all(data).expect("zstd decodes"),
        other => panic!("unexpected coding {other}"),
    }
    out
}

fn site(config: &str) -> Server {
    let mut b = Builder::new();
    b.file("page.html", &page());
    b.file("tiny.txt", b"too small to be worth it\n");
    b.file("image.png", &page());
    b.file("app.js", &page());
    b.file("app.js.gz", b"PRECOMPRESSED-GZIP");
    b.file("style.css", &page());
    b.file("style.css.zst", b"PRECOMPRESSED-ZSTD");
    b.config(config);
    b.start()
}

/// How long a test waits for a file's variants, at most: they are made
/// (brotli at quality 11 among them) on a thread, which takes seconds in a
/// debug build on a loaded machine; the wait ends as soon as one is there.
const VARIANT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Asks for `path` with `headers` until the answer is the stored
/// variant (made on a thread; until then the file is compressed as it
/// streams, with a weak ETag and no Content-Length).
fn compressed(s: &Server, path: &str, headers: &str) -> Response {
    wait_for_within(VARIANT_WAIT, "the stored compressed variant", || {
        let r = s.get_with(path, headers);
        let stored = r.header("content-encoding").is_some()
            && r.header("etag").is_some_and(|e| !e.starts_with("W/"));
        stored.then_some(r)
    })
}

/// The weak ETag of a streamed compression of a harness file of `size`
/// bytes.
fn streamed_etag(size: usize) -> String {
    format!("W/{}", etag(size))
}

/// The ETag of a harness file with `size` bytes, for `suffix`'s variant.
fn variant_etag(size: usize, suffix: &str) -> String {
    let e = etag(size);
    format!("{}-{suffix}\"", &e[..e.len() - 1])
}

#[test]
fn static_variants_in_each_coding_byte_exact() {
    let s = site(ON);
    let body = page();
    for (accept, coding, suffix) in [
        ("gzip", "gzip", "gz"),
        ("br", "br", "br"),
        ("zstd", "zstd", "zst"),
    ] {
        let r = compressed(&s, "/page.html", &format!("Accept-Encoding: {accept}\r\n"));
        let want = head(
            "200 OK",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Encoding: {coding}\r\nVary: Accept-Encoding\r\nContent-Length: {}\r\n\
                 Connection: close\r\n",
                variant_etag(body.len(), suffix),
                r.body.len()
            ),
        );
        assert_eq!(r.masked_head(), want, "{coding}");
        assert!(r.body.len() < body.len() / 4, "{coding}: {}", r.body.len());
        assert!(
            decode(coding, &r.body) == body,
            "{coding}: decodes to the file"
        );
    }
}

/// The first answers of a file, before its stored variant is made, are
/// compressed as they stream (issue #24: a first `curl --compressed`
/// got the file as it is, and looked broken); this test once asserted
/// that they were the file as it is.
#[test]
fn the_first_answer_is_compressed_as_it_streams_then_the_stored_variant() {
    let s = site(ON);
    let body = page();
    // No Accept-Encoding: identity, never compressed, with Vary.
    let r = s.get("/page.html");
    assert_file(
        &r,
        &body,
        "text/html; charset=utf-8",
        "Vary: Accept-Encoding\r\n",
        Conn::Close,
    );
    // The very first request for each coding: compressed, with the file's
    // ETag made weak and no Content-Length (the length is not known
    // before the end: chunked on a kept-alive connection).
    for coding in ["gzip", "br", "zstd"] {
        let r = s.get_with("/page.html", &format!("Accept-Encoding: {coding}\r\n"));
        let want = head(
            "200 OK",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Encoding: {coding}\r\nVary: Accept-Encoding\r\nConnection: close\r\n",
                streamed_etag(body.len()),
            ),
        );
        assert_eq!(r.masked_head(), want, "{coding}");
        assert!(r.body.len() < body.len() / 3, "{coding}: {}", r.body.len());
        assert!(
            decode(coding, &r.body) == body,
            "{coding}: decodes to the file"
        );
    }
    // Later requests get the stored best variant, with its own tag and
    // length.
    let r = compressed(&s, "/page.html", "Accept-Encoding: gzip\r\n");
    assert_eq!(
        r.header("etag"),
        Some(variant_etag(body.len(), "gz").as_str())
    );
    assert_eq!(
        r.header("content-length"),
        Some(r.body.len().to_string().as_str())
    );
    assert!(decode("gzip", &r.body) == body);
}

#[test]
fn a_streamed_first_answer_on_a_kept_alive_connection_is_chunked() {
    let s = site(ON);
    let body = page();
    let mut c = s.connect();
    c.send(b"GET /page.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    let r = c.response();
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("content-length"), None);
    assert!(decode("gzip", &r.body) == body);
    // The connection goes on; a conditional request with the weak tag
    // matches (If-None-Match compares weakly, RFC 9110 §13.1.2).
    let tag = streamed_etag(body.len());
    c.send(
        format!(
            "GET /page.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\nIf-None-Match: {tag}\r\n\r\n"
        )
        .as_bytes(),
    );
    let r = c.response();
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(tag.as_str()));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    // A HEAD before any variant of zstd: the head a streamed GET gets.
    c.send(b"HEAD /page.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: zstd\r\n\r\n");
    let h = c.head_response();
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-encoding"), Some("zstd"));
    assert_eq!(h.header("etag"), Some(tag.as_str()));
    assert_eq!(h.header("content-length"), None);
    assert!(h.body.is_empty());
    // If-Match compares strongly: a weak tag never matches it.
    c.send(
        format!(
            "GET /page.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\nIf-Match: {tag}\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(c.response().status, 412);
}

#[test]
fn q_values_star_and_identity_choose_the_coding() {
    let s = site(ON);
    let body = page();
    // Every variant ready first.
    for c in ["gzip", "br", "zstd"] {
        compressed(&s, "/page.html", &format!("Accept-Encoding: {c}\r\n"));
    }
    let coding = |ae: &str| {
        let r = s.get_with("/page.html", &format!("Accept-Encoding: {ae}\r\n"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{ae}");
        let c = r.header("content-encoding").map(str::to_string);
        match &c {
            Some(c) => assert!(decode(c, &r.body) == body),
            None => assert!(r.body == body),
        }
        c
    };
    // Equal weights: brisk's order (br, zstd, gzip).
    assert_eq!(coding("gzip, br").as_deref(), Some("br"));
    assert_eq!(coding("gzip, deflate, br, zstd").as_deref(), Some("br"));
    assert_eq!(coding("gzip, zstd").as_deref(), Some("zstd"));
    // Weights decide first.
    assert_eq!(coding("br;q=0.5, gzip;q=0.8").as_deref(), Some("gzip"));
    assert_eq!(
        coding("br;q=0.5, zstd;q=0.9, gzip;q=0.8").as_deref(),
        Some("zstd")
    );
    // q=0 refuses (RFC 9110 §12.5.3).
    assert_eq!(coding("br;q=0, zstd;q=0, gzip").as_deref(), Some("gzip"));
    assert_eq!(coding("*;q=0, identity").as_deref(), None);
    assert_eq!(coding("*").as_deref(), Some("br"));
    assert_eq!(coding("br;q=0, *").as_deref(), Some("zstd"));
    // identity preferred outright.
    assert_eq!(coding("gzip;q=0.5, identity").as_deref(), None);
    assert_eq!(coding("identity").as_deref(), None);
    assert_eq!(coding("deflate, compress").as_deref(), None);
    assert_eq!(coding("GZIP").as_deref(), Some("gzip"));
}

#[test]
fn configured_encodings_and_order() {
    let s = site("[compress]\nenable = true\nencodings = [\"gzip\", \"br\"]\n");
    let r = compressed(&s, "/page.html", "Accept-Encoding: br, gzip, zstd\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = s.get_with("/page.html", "Accept-Encoding: zstd\r\n");
    assert_eq!(r.header("content-encoding"), None, "zstd is not offered");
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
}

#[test]
fn head_and_304_carry_the_variants_validators() {
    let s = site(ON);
    let body = page();
    let get = compressed(&s, "/page.html", "Accept-Encoding: gzip\r\n");
    let mut c = s.connect();
    c.send(b"HEAD /page.html HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.masked_head(), get.masked_head(), "HEAD answers as GET");
    assert!(r.body.is_empty());
    let tag = variant_etag(body.len(), "gz");
    let r = s.get_with(
        "/page.html",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {tag}\r\n"),
    );
    assert_eq!(
        r.masked_head(),
        head(
            "304 Not Modified",
            &format!(
                "ETag: {tag}\r\nLast-Modified: {MTIME_HTTP}\r\nVary: Accept-Encoding\r\nConnection: close\r\n"
            )
        )
    );
    // The identity's tag does not match the gzip variant (each
    // representation has its own, RFC 9110 §8.8.3)...
    let r = s.get_with(
        "/page.html",
        &format!(
            "Accept-Encoding: gzip\r\nIf-None-Match: {}\r\n",
            etag(body.len())
        ),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    // ...but does match the identity.
    let r = s.get_with(
        "/page.html",
        &format!("If-None-Match: {}\r\n", etag(body.len())),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(etag(body.len()).as_str()));
}

#[test]
fn ranges_are_of_the_file_as_it_is() {
    let s = site(ON);
    let body = page();
    // Before any variant exists too.
    let r = s.get_with(
        "/page.html",
        "Accept-Encoding: br\r\nRange: bytes=10-19\r\n",
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("etag"), Some(etag(body.len()).as_str()));
    assert_eq!(r.body, &body[10..20]);
    compressed(&s, "/page.html", "Accept-Encoding: gzip\r\n");
    // As nginx: a range request gets the identity's bytes.
    let r = s.get_with(
        "/page.html",
        "Accept-Encoding: gzip\r\nRange: bytes=10-19\r\n",
    );
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Accept-Ranges: bytes\r\nVary: Accept-Encoding\r\nContent-Range: bytes 10-19/{}\r\n\
                 Content-Length: 10\r\nConnection: close\r\n",
                etag(body.len()),
                body.len()
            )
        )
    );
    assert_eq!(r.body, &body[10..20]);
}

#[test]
fn never_compressed() {
    let s = site(ON);
    let body = page();
    // Too small, not a compressible type: as if compression were off.
    let r = s.get_with("/tiny.txt", "Accept-Encoding: gzip\r\n");
    assert_file(
        &r,
        b"too small to be worth it\n",
        "text/plain; charset=utf-8",
        "",
        Conn::Close,
    );
    for _ in 0..3 {
        let r = s.get_with("/image.png", "Accept-Encoding: gzip, br, zstd\r\n");
        assert_file(&r, &body, "image/png", "", Conn::Close);
    }
    // A precompressed sidecar wins over compressing (and .zst is one).
    let r = s.get_with("/app.js", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.body, b"PRECOMPRESSED-GZIP");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = s.get_with("/style.css", "Accept-Encoding: zstd, br\r\n");
    assert_eq!(r.body, b"PRECOMPRESSED-ZSTD");
    assert_eq!(r.header("content-encoding"), Some("zstd"));
    // A coding with no sidecar is made on the fly.
    let r = compressed(&s, "/app.js", "Accept-Encoding: br\r\n");
    assert_eq!(r.header("content-encoding"), Some("br"));
    assert!(decode("br", &r.body) == body);
}

/// `[[headers]]` that will join a file's answer rule compressing it
/// out, as they do a program's answer: `Cache-Control: no-transform`
/// (RFC 9110 §7.7), and a `Content-Encoding` of the operator's own (the
/// usual way to serve `.svgz`), which brisk's coding would be stacked on
/// in the wrong order (`br, gzip` for gzip-then-br bytes). Neither the
/// first answer (no weak ETag: nothing is streamed) nor any once the
/// variants are made (one thread, in order: `page.html`'s being ready,
/// the others' would be) is compressed.
#[test]
fn header_rules_that_forbid_compression_are_heeded() {
    let mut b = Builder::new();
    b.file("page.html", &page());
    b.file("app.js", &page());
    b.file("pic.svgz", &page());
    b.file("dir/index.html", &page());
    b.file("index.html", &page());
    b.config(
        "[compress]\nenable = true\nthreads = 1\n\
         [[headers]]\npattern = \"*.js\"\nset = { \"Cache-Control\" = \"public, no-transform\" }\n\
         [[headers]]\npattern = \"*.svgz\"\nset = { \"Content-Encoding\" = \"gzip\" }\n\
         [[headers]]\npath = \"/dir/index.html\"\nset = { \"Cache-Control\" = \"no-transform\" }\n",
    );
    let s = b.start();
    let body = page();
    let check = |s: &Server| {
        let r = s.get_with("/app.js", "Accept-Encoding: gzip, br\r\n");
        assert_file(
            &r,
            &body,
            "text/javascript; charset=utf-8",
            "Cache-Control: public, no-transform\r\n",
            Conn::Close,
        );
        let r = s.get_with("/pic.svgz", "Accept-Encoding: gzip, br\r\n");
        assert_file(
            &r,
            &body,
            "image/svg+xml; charset=utf-8",
            "Content-Encoding: gzip\r\n",
            Conn::Close,
        );
        // A directory's index: the rules of the index's own path.
        let r = s.get_with("/dir/", "Accept-Encoding: gzip, br\r\n");
        assert_file(
            &r,
            &body,
            "text/html; charset=utf-8",
            "Cache-Control: no-transform\r\n",
            Conn::Close,
        );
    };
    check(&s);
    compressed(&s, "/page.html", "Accept-Encoding: gzip, br\r\n");
    check(&s);
    // An index no rule forbids is compressed, by its own type.
    let r = compressed(&s, "/", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(decode("gzip", &r.body) == body);
}

/// With `sniff`, a file without an extension is compressed or not by the
/// type it is served with, not by `default_type`'s: a PNG under
/// `default_type = "text/plain"` is never compressed, a text file under
/// `application/octet-stream` is.
#[test]
fn sniffed_types_decide_compression() {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&page());
    let mut b = Builder::new();
    b.file("logo", &png);
    b.file("page.html", &page());
    b.config(
        "[static]\nsniff = true\ndefault_type = \"text/plain\"\n\
         [compress]\nenable = true\nthreads = 1\n",
    );
    let s = b.start();
    let r = s.get_with("/logo", "Accept-Encoding: gzip\r\n");
    assert_file(&r, &png, "image/png", "", Conn::Close);
    compressed(&s, "/page.html", "Accept-Encoding: gzip\r\n");
    let r = s.get_with("/logo", "Accept-Encoding: gzip\r\n");
    assert_file(&r, &png, "image/png", "", Conn::Close);

    let text = "plain words, line after line\n".repeat(200);
    let mut b = Builder::new();
    b.file("README", text.as_bytes());
    b.config("[static]\nsniff = true\n[compress]\nenable = true\n");
    let s = b.start();
    let r = compressed(&s, "/README", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(decode("gzip", &r.body) == text.as_bytes());
}

/// A variant the cache cannot hold (larger than `cache_size`, or any
/// with `cache_size = 0`) is not kept, and its file is compressed as it
/// streams on every request, not sent as it is from the second one on.
#[test]
fn variants_the_cache_cannot_hold_stream_every_time() {
    let body = page();
    let small = "<p>the same words again</p>\n".repeat(700);
    let mut b = Builder::new();
    b.file("page.html", &body);
    b.file("small.html", small.as_bytes());
    b.config("[compress]\nenable = true\nthreads = 1\ncache_size = 2000\n");
    let s = b.start();
    let streamed = |s: &Server| {
        let r = s.get_with("/page.html", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.header("etag"), Some(streamed_etag(body.len()).as_str()));
        assert!(decode("gzip", &r.body) == body);
    };
    streamed(&s);
    // One thread, in order: once the small file's variant is kept, the
    // page's (about 20 KB) has been made and found too large.
    let r = compressed(&s, "/small.html", "Accept-Encoding: gzip\r\n");
    assert!(decode("gzip", &r.body) == small.as_bytes());
    for _ in 0..3 {
        streamed(&s);
    }

    let mut b = Builder::new();
    b.file("page.html", &body);
    b.config("[compress]\nenable = true\ncache_size = 0\n");
    let s = b.start();
    for _ in 0..3 {
        streamed(&s);
    }
}

/// Icons are in the default types under the name the built-in table
/// gives `.ico` (`image/vnd.microsoft.icon`), not only `image/x-icon`.
#[test]
fn favicons_are_compressed_by_default() {
    let mut b = Builder::new();
    b.file("favicon.ico", &page());
    b.config(ON);
    let s = b.start();
    let r = s.get_with("/favicon.ico", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-type"), Some("image/vnd.microsoft.icon"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(decode("gzip", &r.body) == page());
}

/// `Accept-Encoding` on several lines is one list (RFC 9110 §5.3), in
/// order: `br;q=0` then `gzip` takes gzip, not identity as the first
/// line alone would say; `identity` then `zstd;q=0.5` keeps identity.
#[test]
fn accept_encoding_on_several_lines_is_one_list() {
    let s = site(ON);
    let body = page();
    let r = s.get_with(
        "/page.html",
        "Accept-Encoding: br;q=0\r\nAccept-Encoding: gzip\r\n",
    );
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(decode("gzip", &r.body) == body);
    let r = s.get_with(
        "/page.html",
        "Accept-Encoding: identity\r\nAccept-Encoding: zstd;q=0.5, br;q=0\r\n",
    );
    assert_eq!(r.header("content-encoding"), None, "identity weighs more");
}

#[test]
fn off_by_default() {
    let s = site("");
    let body = page();
    for _ in 0..3 {
        let r = s.get_with("/page.html", "Accept-Encoding: gzip, br, zstd\r\n");
        assert_file(&r, &body, "text/html; charset=utf-8", "", Conn::Close);
    }
}

#[test]
fn a_changed_file_gets_a_new_variant() {
    let mut b = Builder::new();
    b.file("page.html", &page());
    b.config("[compress]\nenable = true\n[static]\nopen_file_cache_valid = \"1ms\"\n");
    let path = b.root().join("page.html");
    let s = b.start();
    compressed(&s, "/page.html", "Accept-Encoding: gzip\r\n");
    let mut changed = page();
    changed.extend_from_slice(b"<!-- changed -->\n");
    write_file(&path, &changed);
    let r = wait_for_within(VARIANT_WAIT, "the new file's variant", || {
        let r = s.get_with("/page.html", "Accept-Encoding: gzip\r\n");
        let stored = r.header("etag").is_some_and(|e| !e.starts_with("W/"));
        (stored && r.header("content-encoding").is_some() && decode("gzip", &r.body) == changed)
            .then_some(r)
    });
    assert_eq!(
        r.header("etag"),
        Some(variant_etag(changed.len(), "gz").as_str())
    );
}

#[cfg(feature = "http2")]
#[test]
fn h2_first_answer_is_compressed_as_it_streams() {
    use common::h2::H2;
    let s = site(ON);
    let body = page();
    let mut c = H2::connect(s.addr(), &[], 1 << 20);
    let id = c.get("/page.html", &[("accept-encoding", "gzip")]);
    let a = c.answers(&[id]).pop().expect("an answer");
    assert_eq!(a.status(), "200");
    assert_eq!(a.field("content-encoding"), Some("gzip"));
    assert_eq!(a.field("etag"), Some(streamed_etag(body.len()).as_str()));
    assert_eq!(a.field("content-length"), None);
    assert_eq!(
        a.field("vary").map(str::to_ascii_lowercase).as_deref(),
        Some("accept-encoding")
    );
    assert!(decode("gzip", &a.body) == body);
}

#[cfg(feature = "http2")]
#[test]
fn h2_static_variant() {
    use common::h2::H2;
    let s = site(ON);
    let body = page();
    let mut c = H2::connect(s.addr(), &[], 1 << 20);
    let a = wait_for_within(VARIANT_WAIT, "the br variant over h2", || {
        let id = c.get("/page.html", &[("accept-encoding", "gzip, br")]);
        let a = c.answers(&[id]).pop()?;
        // (The stored variant: a streamed one has no length.)
        let stored = a.field("content-encoding").is_some() && a.field("content-length").is_some();
        stored.then_some(a)
    });
    assert_eq!(a.status(), "200");
    assert_eq!(a.field("content-encoding"), Some("br"));
    assert_eq!(
        a.field("vary").map(str::to_ascii_lowercase).as_deref(),
        Some("accept-encoding")
    );
    assert_eq!(
        a.field("etag"),
        Some(variant_etag(body.len(), "br").as_str())
    );
    assert_eq!(
        a.field("content-length"),
        Some(a.body.len().to_string().as_str())
    );
    assert!(a.field("accept-ranges").is_none());
    assert!(decode("br", &a.body) == body);
}

/// The body of the CGI script below: 3,000 lines of HTML.
fn cgi_body() -> Vec<u8> {
    (0..3000)
        .flat_map(|i| format!("<li>line {i}</li>\n").into_bytes())
        .collect()
}

/// A site whose `cgi-bin/page` prints `head` then [`cgi_body`], by awk,
/// which writes to the pipe in blocks of a few KiB whatever the machine's
/// load (a shell loop's echo writes each line alone: on a loaded machine
/// every line reached brisk on its own and was sent as one compressed
/// flush, and the ratio checked below depended on the load).
fn cgi_site(head: &str) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let script = b.base().join("cgi-bin/page");
    write_file(
        &script,
        format!(
            "#!/bin/sh\nprintf '{head}\\r\\n'\nexec awk 'BEGIN {{ for (i = 0; i < 3000; i++) print \"<li>line \" i \"</li>\" }}'\n"
        )
        .as_bytes(),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.config("[compress]\nenable = true\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.start()
}

#[test]
fn cgi_output_is_compressed_as_it_streams() {
    let s = cgi_site("Content-Type: text/html\\r\\nETag: \"v1\"\\r\\n");
    let r = s.get_with("/cgi-bin/page", "Accept-Encoding: gzip\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/html\r\nETag: W/\"v1\"\r\nContent-Encoding: gzip\r\n\
             Vary: Accept-Encoding\r\nConnection: close\r\n"
        )
    );
    let body = cgi_body();
    assert!(r.body.len() < body.len() / 4, "{}", r.body.len());
    assert!(decode("gzip", &r.body) == body);
    for coding in ["br", "zstd"] {
        let r = s.get_with("/cgi-bin/page", &format!("Accept-Encoding: {coding}\r\n"));
        assert_eq!(r.header("content-encoding"), Some(coding));
        assert!(decode(coding, &r.body) == body, "{coding}");
    }
    // No coding accepted: as the program wrote it, and it varies.
    let r = s.get("/cgi-bin/page");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/html\r\nETag: \"v1\"\r\nVary: Accept-Encoding\r\n\
             Connection: close\r\n"
        )
    );
    assert!(r.body == body);
    // HEAD: the head a GET gets.
    let mut c = s.connect();
    c.send(b"HEAD /cgi-bin/page HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("etag"), Some("W/\"v1\""));
    assert!(r.body.is_empty());
}

#[test]
fn cgi_output_with_a_length_is_compressed_and_held_to_it() {
    let len = cgi_body().len();
    let s = cgi_site(&format!(
        "Content-Type: text/plain\\r\\nContent-Length: {len}\\r\\n"
    ));
    // Kept alive, the compressed body is chunked (its length is not
    // known until it ends), and the connection serves the next request.
    let mut c = s.connect();
    for _ in 0..2 {
        c.send(b"GET /cgi-bin/page HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n");
        let r = c.response();
        assert_eq!(
            r.masked_head(),
            head(
                "200 OK",
                "Content-Type: text/plain\r\nContent-Encoding: br\r\nVary: Accept-Encoding\r\n\
                 Transfer-Encoding: chunked\r\n"
            )
        );
        assert!(decode("br", &r.body) == cgi_body());
    }
    // A program that writes past its Content-Length is cut there,
    // compressed or not.
    let s = cgi_site("Content-Type: text/plain\\r\\nContent-Length: 1000\\r\\n");
    let r = s.get_with("/cgi-bin/page", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(decode("gzip", &r.body) == cgi_body()[..1000]);
}

#[test]
fn cgi_output_already_encoded_or_incompressible_passes_as_it_is() {
    for head in [
        "Content-Type: text/html\\r\\nContent-Encoding: identity\\r\\n",
        "Content-Type: image/png\\r\\n",
        "Content-Type: text/html\\r\\nCache-Control: no-transform\\r\\n",
        "Status: 206 Partial Content\\r\\nContent-Type: text/html\\r\\n",
    ] {
        let s = cgi_site(head);
        let r = s.get_with("/cgi-bin/page", "Accept-Encoding: gzip, br, zstd\r\n");
        assert!(
            r.header("content-encoding").is_none_or(|c| c == "identity"),
            "{head}"
        );
        assert!(r.header("vary").is_none(), "{head}");
        assert!(r.body == cgi_body(), "{head}");
    }
}

/// A program's 304 carries the ETag and Vary its 200 to the same
/// request would have (RFC 9110 §15.4.5): a client that accepts gzip
/// holds the compressed answer under `W/"v1"`, so the 304 that
/// revalidates it says `W/"v1"` too, not the program's strong `"v1"`,
/// which a cache may not take as the same validator (RFC 9111 §4.3.4)
/// and would not freshen its copy by. A weak tag matches a strong copy
/// as well (a weak comparison), so a 304 without `Content-Type` gets it
/// whenever a coding is chosen. A 304 whose type is not compressible,
/// or that says `no-transform`, stays as written.
#[test]
fn a_program_s_304_carries_the_validators_of_its_compressed_200() {
    let s = cgi_site("Status: 304 Not Modified\\r\\nETag: \"v1\"\\r\\n");
    let r = s.get_with(
        "/cgi-bin/page",
        "Accept-Encoding: gzip\r\nIf-None-Match: W/\"v1\"\r\n",
    );
    assert_eq!(
        r.masked_head(),
        head(
            "304 Not Modified",
            "ETag: W/\"v1\"\r\nVary: Accept-Encoding\r\nConnection: close\r\n"
        )
    );
    // No coding accepted: the tag as written, and it varies.
    let r = s.get_with("/cgi-bin/page", "If-None-Match: \"v1\"\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "304 Not Modified",
            "ETag: \"v1\"\r\nVary: Accept-Encoding\r\nConnection: close\r\n"
        )
    );
    for head in [
        "Status: 304 Not Modified\\r\\nContent-Type: image/png\\r\\nETag: \"v1\"\\r\\n",
        "Status: 304 Not Modified\\r\\nCache-Control: no-transform\\r\\nETag: \"v1\"\\r\\n",
    ] {
        let s = cgi_site(head);
        let r = s.get_with("/cgi-bin/page", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.status, 304, "{head}");
        assert_eq!(r.header("etag"), Some("\"v1\""), "{head}");
        assert!(r.header("vary").is_none(), "{head}");
    }
}

#[cfg(feature = "http2")]
#[test]
fn h2_cgi_output_is_compressed() {
    use common::h2::H2;
    let s = cgi_site("Content-Type: text/html\\r\\n");
    let mut c = H2::connect(s.addr(), &[], 1 << 20);
    let id = c.get("/cgi-bin/page", &[("accept-encoding", "zstd")]);
    let a = c.answers(&[id]).pop().unwrap();
    assert_eq!(a.status(), "200");
    assert_eq!(a.field("content-encoding"), Some("zstd"));
    assert!(a.field("content-length").is_none());
    assert!(decode("zstd", &a.body) == cgi_body());
}

#[cfg(feature = "servlets")]
#[test]
fn servlet_output_is_compressed_whole() {
    let mut b = Builder::new();
    b.file(
        "servlets/list.lua",
        br#"function handle_request(req, res)
  local t = {}
  for i = 1, 2000 do t[#t + 1] = "<li>item " .. i .. "</li>\n" end
  res:write(200, {["Content-Type"] = "text/html"}, table.concat(t))
end
"#,
    );
    b.config("[compress]\nenable = true\n[servlets]\nenable = true\n");
    let s = b.start();
    let want: Vec<u8> = (1..=2000)
        .flat_map(|i| format!("<li>item {i}</li>\n").into_bytes())
        .collect();
    let r = s.get_with("/servlets/list.lua", "Accept-Encoding: gzip\r\n");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!(
                "Content-Type: text/html\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding\r\n\
                 Content-Length: {}\r\nConnection: close\r\n",
                r.body.len()
            )
        )
    );
    assert!(decode("gzip", &r.body) == want);
    let r = s.get("/servlets/list.lua");
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert!(r.body == want);
}

/// A directory listing (`autoindex`) is compressed as a handler's body
/// is, in HTML and in JSON: a listing of `/usr/share/doc` is 100 KB of
/// HTML (nginx's `gzip` and Caddy's `encode` compress theirs).
#[test]
fn listings_are_compressed_whole() {
    let mut b = Builder::new();
    for i in 0..100 {
        b.file(&format!("dir/file-with-a-long-name-{i:03}.txt"), b"x");
    }
    b.config("[compress]\nenable = true\n[static]\nautoindex = true\n");
    let s = b.start();
    let plain = s.get("/dir/");
    assert_eq!(plain.status, 200);
    assert_eq!(
        plain.masked_head(),
        head(
            "200 OK",
            &format!(
                "Content-Type: text/html; charset=utf-8\r\nVary: Accept\r\nVary: Accept-Encoding\r\n\
                 Content-Length: {}\r\nConnection: close\r\n",
                plain.body.len()
            )
        )
    );
    assert!(plain.text().contains("file-with-a-long-name-099.txt"));
    for coding in ["gzip", "br", "zstd"] {
        let r = s.get_with("/dir/", &format!("Accept-Encoding: {coding}\r\n"));
        assert_eq!(
            r.masked_head(),
            head(
                "200 OK",
                &format!(
                    "Content-Type: text/html; charset=utf-8\r\nVary: Accept\r\n\
                     Content-Encoding: {coding}\r\nVary: Accept-Encoding\r\nContent-Length: {}\r\nConnection: close\r\n",
                    r.body.len()
                )
            )
        );
        assert!(
            r.body.len() < plain.body.len() / 4,
            "{coding}: {} bytes",
            r.body.len()
        );
        assert!(
            decode(coding, &r.body) == plain.body,
            "{coding} decodes to the listing"
        );
    }
    let json = s.get("/dir/?format=json");
    let r = s.get_with("/dir/?format=json", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(decode("gzip", &r.body) == json.body);
}

/// An embedded handler's body in pieces, and one given later from
/// another thread: compressed as they stream.
#[test]
fn embedded_streams_are_compressed() {
    use brisk::handlers::app::{Request, Response};
    use brisk::handlers::stream::BodyStream;
    use common::embedded::App;

    struct Lines(u32);
    impl BodyStream for Lines {
        fn fill(&mut self, out: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
            for _ in 0..500 {
                out.extend_from_slice(format!("<p>line {}</p>\n", self.0).as_bytes());
                self.0 += 1;
            }
            Ok(self.0 < 5000)
        }
    }
    let want: Vec<u8> = (0..5000)
        .flat_map(|i| format!("<p>line {i}</p>\n").into_bytes())
        .collect();
    let dir = TempDir::new("compress-embedded");
    let mut cfg = common::embedded::config(&dir);
    cfg.site.compress.enable = true;
    let app = App::start(cfg, dir, |s| {
        s.mount("/s", |_: &Request<'_>, r: &mut Response<'_>| {
            r.header("Content-Type", "text/html").unwrap();
            r.stream(Lines(0), None);
        })
        .unwrap();
        s.mount("/later", |_: &Request<'_>, r: &mut Response<'_>| {
            let Some(mut later) = r.defer() else { return };
            std::thread::spawn(move || {
                later
                    .start(200, &[("Content-Type", "application/json")], None)
                    .unwrap();
                for i in 0..2000 {
                    later.write(format!("{{\"n\":{i}}}\n").as_bytes()).unwrap();
                }
                later.finish().unwrap();
            });
        })
        .unwrap();
    });
    let mut c = app.connect();
    c.send(b"GET /s HTTP/1.1\r\nHost: x\r\nAccept-Encoding: zstd\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/html\r\n\
             Content-Encoding: zstd\r\nVary: Accept-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
    );
    assert!(decode("zstd", &r.body) == want);
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0.5, br\r\n\r\n");
    let r = c.response();
    assert_eq!(r.header("content-encoding"), Some("br"));
    let later: Vec<u8> = (0..2000)
        .flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes())
        .collect();
    assert!(decode("br", &r.body) == later);
}

#[test]
fn compression_threads_run_below_the_event_loops_priority() {
    // A level-11 brotli run takes seconds of a core for a few MiB; a
    // client that makes variants be made again and again must not take
    // the cores from serving: the threads that make them are nicer
    // (by 10) than the rest of the server (its main thread serves here),
    // also those a reload starts.
    let s = site(&format!("{ON}threads = 2\n"));
    // Each thread's name and nice value, the main thread's first.
    let nice = |s: &Server| {
        let mut seen = Vec::new();
        let tasks = format!("/proc/{}/task", s.pid());
        for task in std::fs::read_dir(&tasks).expect("tasks") {
            let dir = task.expect("task").path();
            let main = dir.file_name() == Some(std::ffi::OsStr::new(&s.pid().to_string()));
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            // (Field 19, counted after the name's closing parenthesis.)
            let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            let nice: i32 = after
                .split(' ')
                .nth(16)
                .and_then(|n| n.parse().ok())
                .unwrap_or(i32::MIN);
            seen.push((!main, comm.trim().to_string(), nice));
        }
        seen.sort();
        seen
    };
    for round in ["start", "reload"] {
        if round == "reload" {
            s.signal(libc::SIGHUP);
            s.wait_stderr_line("configuration reloaded");
        }
        assert_eq!(s.get("/tiny.txt").status, 200);
        // (The threads lower their priority as they start; relative to
        // the main thread's: the suite may run under `nice`.)
        wait_until("the compression threads to lower their priority", || {
            let seen = nice(&s);
            let lower = (seen[0].2 + 10).min(19);
            let threads: Vec<_> = seen.iter().filter(|t| t.1 == "brisk-compress").collect();
            threads.len() >= 2 && threads.iter().all(|t| t.2 == lower)
        });
    }
}
