//! Static files on the wire: heads byte for byte, content types,
//! directories, methods, configured headers (sidecars: precompressed.rs).

use crate::common;

use common::*;

#[test]
fn get_file_is_byte_exact() {
    let mut b = Builder::new();
    b.file("hello.txt", b"hello, world\n");
    let s = b.start();
    let r = s.get("/hello.txt");
    let want = format!(
        "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\n\
         ETag: \"{:x}-d\"\r\nLast-Modified: Tue, 02 Jan 2024 03:04:05 GMT\r\n\
         Content-Type: text/plain; charset=utf-8\r\nAccept-Ranges: bytes\r\n\
         Content-Length: 13\r\nConnection: close\r\n\r\nhello, world\n",
        MTIME
    );
    let masked = r.masked_head() + &r.text();
    assert_eq!(masked, want);
    assert_eq!(r.raw.len(), r.head.len() + 13);
}

#[test]
fn head_has_the_get_head_and_no_body() {
    let mut b = Builder::new();
    b.file("hello.txt", b"hello, world\n");
    let s = b.start();
    let mut c = s.connect();
    c.send(b"HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    let h = c.head_response();
    c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    let g = c.response();
    assert_eq!(h.masked_head(), g.masked_head());
    assert!(h.raw.len() == h.head.len());
    assert_file(
        &g,
        b"hello, world\n",
        "text/plain; charset=utf-8",
        "",
        Conn::None,
    );
    // Nothing else arrived: the HEAD response carried no body bytes.
    assert!(c.unread().is_empty(), "{:?}", c.unread());
}

#[test]
fn head_of_an_error_has_its_length_and_no_body() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    let s = b.start();
    let (_c, rs) = exchange(
        &s,
        b"HEAD /missing HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        &[true, false],
    );
    assert_eq!(
        rs[0].masked_head(),
        error_head(404, "Not Found", "", Conn::None)
    );
    assert_file(&rs[1], b"A", "text/plain; charset=utf-8", "", Conn::Close);
}

#[test]
fn not_found_is_byte_exact() {
    let s = Builder::new().start();
    let r = s.get("/nope.html");
    assert_error(&r, 404, "Not Found", "", Conn::Close);
}

#[test]
fn content_types() {
    let cases: &[(&str, &str)] = &[
        ("index.html", "text/html; charset=utf-8"),
        ("UPPER.HTML", "text/html; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("data.json", "application/json; charset=utf-8"),
        ("pic.svg", "image/svg+xml; charset=utf-8"),
        ("notes.txt", "text/plain; charset=utf-8"),
        ("pic.png", "image/png"),
        ("mod.wasm", "application/wasm"),
        ("font.woff2", "font/woff2"),
        ("pic.avif", "image/avif"),
        ("pic.webp", "image/webp"),
        ("movie.mp4", "video/mp4"),
        ("blob.qqqunknown", "application/octet-stream"),
        ("noextension", "application/octet-stream"),
    ];
    let mut b = Builder::new();
    for (name, _) in cases {
        b.file(name, name.as_bytes());
    }
    let s = b.start();
    let mut c = s.connect();
    for (name, ctype) in cases {
        c.send(format!("GET /{name} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!(r.header("content-type"), Some(*ctype), "{name}");
        assert_file(&r, name.as_bytes(), ctype, "", Conn::None);
    }
}

#[test]
fn empty_and_large_files() {
    let big = pattern(3 * 1024 * 1024 + 17);
    let mid = pattern(16 * 1024 + 1);
    let mut b = Builder::new();
    b.file("empty.bin", b"");
    b.file("big.bin", &big);
    b.file("mid.bin", &mid);
    let s = b.start();
    let mut c = s.connect();
    c.send(b"GET /empty.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_file(
        &c.response(),
        b"",
        "application/octet-stream",
        "",
        Conn::None,
    );
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_file(
        &c.response(),
        &big,
        "application/octet-stream",
        "",
        Conn::None,
    );
    // The connection is still usable after a sendfile body.
    c.send(b"GET /mid.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_file(
        &c.response(),
        &mid,
        "application/octet-stream",
        "",
        Conn::Close,
    );
    c.expect_closed();
}

#[test]
fn directory_without_slash_redirects() {
    let mut b = Builder::new();
    b.file("docs/index.html", b"<p>docs</p>");
    b.dir("empty dir");
    let s = b.start();
    let r = s.get("/docs");
    assert_error(
        &r,
        301,
        "Moved Permanently",
        "Location: /docs/\r\n",
        Conn::Close,
    );
    let r = s.get("/docs?x=1&y=%20");
    assert_error(
        &r,
        301,
        "Moved Permanently",
        "Location: /docs/?x=1&y=%20\r\n",
        Conn::Close,
    );
    // The path comes back as it was sent, still percent-encoded.
    let r = s.get("/empty%20dir");
    assert_error(
        &r,
        301,
        "Moved Permanently",
        "Location: /empty%20dir/\r\n",
        Conn::Close,
    );
    let r = s.get("/d%6fcs");
    assert_error(
        &r,
        301,
        "Moved Permanently",
        "Location: /d%6fcs/\r\n",
        Conn::Close,
    );
}

#[test]
fn a_directory_redirect_never_names_another_host() {
    // `//evil.example` would come back as `Location: //evil.example/`,
    // which a browser follows to that host (an open redirect).
    let mut b = Builder::new();
    b.dir("evil.example");
    b.dir("\\evil.example");
    let s = b.start();
    for (target, location) in [
        ("//evil.example", "/evil.example/"),
        ("///evil.example?x=1", "/evil.example/?x=1"),
        ("/%2Fevil.example", "/%2Fevil.example/"),
        ("/\\evil.example", "/%5Cevil.example/"),
        ("//\\evil.example", "/%5Cevil.example/"),
    ] {
        let r = s.get(target);
        assert_error(
            &r,
            301,
            "Moved Permanently",
            &format!("Location: {location}\r\n"),
            Conn::Close,
        );
    }
}

#[test]
fn directory_with_slash_serves_index_or_403() {
    let mut b = Builder::new();
    b.file("index.html", b"<h1>home</h1>");
    b.file("docs/index.html", b"<p>docs</p>");
    b.file("noindex/file.txt", b"x");
    let s = b.start();
    assert_file(
        &s.get("/"),
        b"<h1>home</h1>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/docs/"),
        b"<p>docs</p>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_error(&s.get("/noindex/"), 403, "Forbidden", "", Conn::Close);
}

#[test]
fn configured_index_list_is_tried_in_order() {
    let mut b = Builder::new();
    b.file("a/home.htm", b"home.htm");
    b.file("a/index.html", b"index.html in a");
    b.file("b/index.html", b"index.html in b");
    b.file("c/other.html", b"other");
    b.config("[static]\nindex = [\"home.htm\", \"index.html\"]\n");
    let s = b.start();
    assert_file(
        &s.get("/a/"),
        b"home.htm",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/b/"),
        b"index.html in b",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_error(&s.get("/c/"), 403, "Forbidden", "", Conn::Close);
}

#[test]
fn autoindex_lists_a_directory() {
    let mut b = Builder::new();
    b.file("list/a.txt", b"aaa");
    b.file("list/x y&z.txt", b"weird");
    b.file("list/.hidden", b"h");
    b.file("list/<b>\"q\".txt", b"html");
    b.file("list/sub/inner.txt", b"i");
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    let r = s.get("/list/");
    let body = r.text();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!(
                "Content-Type: text/html; charset=utf-8\r\nVary: Accept\r\nContent-Length: {}\r\nConnection: close\r\n",
                r.body.len()
            )
        )
    );
    assert!(body.contains("href=\"a.txt\""), "{body}");
    assert!(body.contains("href=\"sub/\""), "{body}");
    assert!(
        body.contains("x%20y%26z.txt"),
        "link not percent-encoded: {body}"
    );
    assert!(
        body.contains("x y&amp;z.txt"),
        "text not HTML-escaped: {body}"
    );
    assert!(!body.contains("x y&z.txt"), "raw & in HTML: {body}");
    assert!(!body.contains(".hidden"), "dotfile listed: {body}");
    assert!(body.contains("&lt;b&gt;"), "name not HTML-escaped: {body}");
    assert!(!body.contains("<b>"), "raw markup from a file name: {body}");
    assert!(
        body.contains("%3Cb%3E") || body.contains("%3cb%3e"),
        "{body}"
    );
    assert!(
        !body.contains("inner.txt"),
        "listing is not recursive: {body}"
    );
    // Directories are listed before files.
    let sub = body.find("href=\"sub/\"").unwrap_or(usize::MAX);
    let a = body.find("href=\"a.txt\"").unwrap_or(0);
    assert!(sub < a, "directories first: {body}");
    // An index file still wins over the listing.
    let mut b = Builder::new();
    b.file("d/index.html", b"idx");
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    assert_file(
        &s.get("/d/"),
        b"idx",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn options_answers_allow() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    let s = b.start();
    let mut c = s.connect();
    c.send(b"OPTIONS /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Allow: GET, HEAD, OPTIONS\r\nContent-Length: 0\r\n"
        )
    );
    assert!(r.body.is_empty());
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_file(
        &c.response(),
        b"A",
        "text/plain; charset=utf-8",
        "",
        Conn::Close,
    );
    c.expect_closed();
}

#[test]
fn other_methods_get_405_and_keep_alive_continues() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    let s = b.start();
    let mut c = s.connect();
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        c.send(
            format!("{m} /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello").as_bytes(),
        );
        let r = c.response();
        assert_error(
            &r,
            405,
            "Method Not Allowed",
            "Allow: GET, HEAD, OPTIONS\r\n",
            Conn::None,
        );
        // The body was read and discarded, not taken for a request.
        c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_file(
            &c.response(),
            b"A",
            "text/plain; charset=utf-8",
            "",
            Conn::None,
        );
    }
    c.send(b"TRACE /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_error(
        &c.response(),
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::None,
    );
    c.send(b"DELETE /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_error(
        &c.response(),
        405,
        "Method Not Allowed",
        "Allow: GET, HEAD, OPTIONS\r\n",
        Conn::Close,
    );
    c.expect_closed();
}

#[test]
fn unknown_method_gets_501() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    let s = b.start();
    let r = s.request(b"FOO /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_error(&r, 501, "Not Implemented", "", Conn::Close);
    let r = s.request(b"BREW /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_error(&r, 501, "Not Implemented", "", Conn::Close);
}

#[test]
fn absolute_form_target_is_served_like_the_path() {
    let mut b = Builder::new();
    b.file("file", b"the file");
    let s = b.start();
    let r = s.request(
        b"GET http://localhost/file HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_file(&r, b"the file", "application/octet-stream", "", Conn::Close);
}

/// `http://host?query`: an empty path with a query (RFC 3986 §3.3
/// path-abempty) is the path `/` (RFC 9110 §4.2.3), as nginx reads it;
/// it was a 400. `OPTIONS http://host` (no query) still means `*`.
#[test]
fn absolute_form_target_with_an_empty_path_and_a_query_is_the_root() {
    let mut b = Builder::new();
    b.file("index.html", b"<p>home</p>");
    b.access_log();
    let s = b.start();
    let want = s.request(b"GET /?q=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_file(
        &want,
        b"<p>home</p>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    let r = s.request(
        b"GET http://localhost?q=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.masked_head(), want.masked_head());
    assert_eq!(r.body, want.body);
    let r = s.request(
        b"GET https://localhost:8080?q=2&r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let line = s.wait_access_line(|l| l.windows(6).any(|w| w == b"?q=2&r"));
    let line = String::from_utf8_lossy(&line).into_owned();
    assert!(line.contains("\"GET /?q=2&r HTTP/1.1\" 200 "), "{line}");
    let opt = |target: &str| {
        let r = s.request(
            format!("OPTIONS {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        (r.status, r.header("allow").map(str::to_owned))
    };
    assert_eq!(opt("http://localhost"), opt("*"));
    assert_eq!(opt("http://localhost?x"), opt("/?x"));
}

#[test]
fn configured_headers_by_prefix_and_pattern() {
    let mut b = Builder::new();
    b.file("assets/app.css", b"a{}");
    b.file("assets/x.txt", b"x");
    b.file("style.css", b"s{}");
    b.file("other.txt", b"o");
    b.config(
        "[[headers]]\npath = \"/assets/\"\nset = { \"Cache-Control\" = \"max-age=60\" }\n\n\
         [[headers]]\npattern = \"*.css\"\nset = { \"X-Css\" = \"yes\", \"X-Second\" = \"2\" }\n",
    );
    let s = b.start();
    assert_file(
        &s.get("/assets/app.css"),
        b"a{}",
        "text/css; charset=utf-8",
        "Cache-Control: max-age=60\r\nX-Css: yes\r\nX-Second: 2\r\n",
        Conn::Close,
    );
    assert_file(
        &s.get("/assets/x.txt"),
        b"x",
        "text/plain; charset=utf-8",
        "Cache-Control: max-age=60\r\n",
        Conn::Close,
    );
    assert_file(
        &s.get("/style.css"),
        b"s{}",
        "text/css; charset=utf-8",
        "X-Css: yes\r\nX-Second: 2\r\n",
        Conn::Close,
    );
    assert_file(
        &s.get("/other.txt"),
        b"o",
        "text/plain; charset=utf-8",
        "",
        Conn::Close,
    );
    // 304 carries the configured headers too.
    let r = s.get_with(
        "/assets/app.css",
        &format!("If-None-Match: {}\r\n", etag(3)),
    );
    assert_eq!(
        r.masked_head(),
        head(
            "304 Not Modified",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nCache-Control: max-age=60\r\nX-Css: yes\r\nX-Second: 2\r\nConnection: close\r\n",
                etag(3)
            )
        )
    );
}

/// A `[[headers]]` field replaces the one brisk makes and an earlier
/// rule's, so each is sent once: two `Content-Disposition` fields make
/// Chromium refuse the download
/// (`ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_DISPOSITION`), and a second
/// `Content-Type`, `ETag` or `Cache-Control` is read one way by one
/// client and another way by the next. `Vary` is added to: brisk's
/// `Vary: Accept-Encoding` stays. A servlet's own fields are kept.
// (A servlet's answer is among those checked: the feature `servlets`.)
#[cfg(feature = "servlets")]
#[test]
fn configured_headers_replace_fields_of_the_same_name() {
    let mut b = Builder::new();
    b.file("dl/report.pdf", b"%PDF");
    b.file("dl/notes.txt", b"n");
    b.file("dl/notes.txt.gz", b"gz");
    b.file("dl/sub/index.html", b"i");
    b.file(
        "servlets/s.lua",
        b"function handle_request(req, res) res:set_status(200) res:header('Content-Type', 'text/plain') \
          res:header('Cache-Control', 'no-store') res:write('x') end",
    );
    b.config(
        "[servlets]\nenable = true\npaths = [\"/servlets/\"]\n\n\
         [[headers]]\npath = \"/\"\nset = { \"Cache-Control\" = \"no-cache\", \"X-Frame-Options\" = \"DENY\" }\n\n\
         [[headers]]\npath = \"/dl/\"\nset = { \"Content-Disposition\" = \"attachment\" }\n\n\
         [[headers]]\npattern = \"*.pdf\"\nset = { \"Content-Disposition\" = \"attachment; filename=report.pdf\", \"content-type\" = \"application/x-pdf\" }\n\n\
         [[headers]]\npattern = \"*.txt\"\nset = { \"Cache-Control\" = \"max-age=60\", \"Vary\" = \"Origin\" }\n\n\
         [[headers]]\npath = \"/dl/sub\"\nset = { \"Content-Type\" = \"application/x-sub\" }\n",
    );
    let s = b.start();
    let r = s.get("/dl/report.pdf");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nAccept-Ranges: bytes\r\n\
                 Cache-Control: no-cache\r\nX-Frame-Options: DENY\r\n\
                 Content-Disposition: attachment; filename=report.pdf\r\ncontent-type: application/x-pdf\r\n\
                 Content-Length: 4\r\nConnection: close\r\n",
                etag(4)
            )
        )
    );
    let r = s.get("/dl/notes.txt");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!(
                "{}Vary: Accept-Encoding\r\nX-Frame-Options: DENY\r\n\
                 Content-Disposition: attachment\r\nCache-Control: max-age=60\r\nVary: Origin\r\n\
                 Content-Length: 1\r\nConnection: close\r\n",
                file_headers(1, "text/plain; charset=utf-8")
            )
        )
    );
    // A range of several parts is of type multipart/byteranges whatever
    // a rule says (each part carries the file's type).
    let r = s.get_with("/dl/report.pdf", "Range: bytes=0-0,2-2\r\n");
    let head_text = r.masked_head();
    assert_eq!(
        head_text.matches("ontent-Type: ").count() + head_text.matches("ontent-type: ").count(),
        1,
        "{head_text}"
    );
    assert!(
        head_text.contains("Content-Type: multipart/byteranges; boundary="),
        "{head_text}"
    );
    // A directory's redirect is brisk's page, of brisk's type.
    let r = s.get("/dl/sub?q=1");
    assert_eq!(
        r.masked_head(),
        head(
            "301 Moved Permanently",
            &format!(
                "Location: /dl/sub/?q=1\r\nCache-Control: no-cache\r\nX-Frame-Options: DENY\r\n\
                 Content-Disposition: attachment\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n",
                error_page(301, "Moved Permanently").len()
            )
        )
    );
    // A servlet's own fields win over the rules'.
    let r = s.get("/servlets/s.lua");
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nCache-Control: no-store\r\nX-Frame-Options: DENY\r\n\
             Content-Length: 1\r\nConnection: close\r\n"
        )
    );
}

#[test]
fn mime_overrides() {
    let mut b = Builder::new();
    b.file("readme.md", b"# hi");
    b.file("thing.xyz", b"xyz");
    b.file("pic.png", b"png");
    b.file("page.html", b"<p>");
    b.config(
        "[mime]\nmd = \"text/x-markdown\"\nxyz = \"application/x-xyz\"\npng = \"image/x-png\"\n",
    );
    let s = b.start();
    assert_file(
        &s.get("/readme.md"),
        b"# hi",
        "text/x-markdown; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/thing.xyz"),
        b"xyz",
        "application/x-xyz",
        "",
        Conn::Close,
    );
    assert_file(&s.get("/pic.png"), b"png", "image/x-png", "", Conn::Close);
    // Types without an override keep the built-in table.
    assert_file(
        &s.get("/page.html"),
        b"<p>",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn default_type_and_a_mime_types_file() {
    let mut b = Builder::new();
    b.file("README", b"read me");
    b.file("doc/copyright", b"(c)");
    b.file("x.foo", b"foo");
    b.file("x.csh", b"csh");
    b.file("x.md", b"md");
    b.file("x.css", b"css");
    b.file("x.unknown", b"?");
    // Relative to the config file's directory, and in the format of
    // /etc/mime.types: the later of two lines for one extension wins.
    write_file(
        &b.base().join("etc/mime.types"),
        b"# types\napplication/x-foo\tfoo\napplication/x-csh csh\ntext/x-csh csh\n\
          text/x-md md\nimage/x-none\n",
    );
    b.config(
        "[static]\ndefault_type = \"text/plain\"\nmime_types = \"etc/mime.types\"\n\
         [mime]\nmd = \"text/markdown\"\n",
    );
    let s = b.start();
    let text = "text/plain; charset=utf-8";
    assert_file(&s.get("/README"), b"read me", text, "", Conn::Close);
    assert_file(&s.get("/doc/copyright"), b"(c)", text, "", Conn::Close);
    assert_file(&s.get("/x.unknown"), b"?", text, "", Conn::Close);
    assert_file(
        &s.get("/x.foo"),
        b"foo",
        "application/x-foo",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/x.csh"),
        b"csh",
        "text/x-csh; charset=utf-8",
        "",
        Conn::Close,
    );
    // [mime] beats the file; the built-in table fills in what it lacks.
    assert_file(
        &s.get("/x.md"),
        b"md",
        "text/markdown; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/x.css"),
        b"css",
        "text/css; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn the_default_type_stays_octet_stream() {
    let mut b = Builder::new();
    b.file("README", b"read me");
    let s = b.start();
    let r = s.get("/README");
    assert_file(&r, b"read me", "application/octet-stream", "", Conn::Close);
}

/// Under `query_in_filename`, the query is the end of a file name and
/// may hold a `/` (wget saves `list?p=a/b.html` in a directory
/// `list?p=a`), but a `..` in it no longer leads out of the prefix (to a
/// file the `[[access]]` rules, judged on the path alone, never saw),
/// and a dotfile in it is refused as one in the path.
#[test]
fn query_in_filename_cannot_climb_out_or_reach_dotfiles() {
    let mut b = Builder::new();
    b.file("mirror/list?p=a/b.html", b"mirrored b");
    b.file("mirror/list?p=a/.env", b"dotfile");
    b.file("admin/secret.txt", b"admin only");
    b.file(".git/config", b"git secret");
    b.config(
        "[static]\nquery_in_filename = [\"/mirror/\"]\n\
         [[access]]\npath = \"/admin/\"\ndeny = [\"all\"]\n",
    );
    let s = b.start();
    let r = s.get("/mirror/list?p=a/b.html");
    assert_eq!((r.status, r.text().as_str()), (200, "mirrored b"));
    assert_eq!(s.get("/admin/secret.txt").status, 403);
    for target in [
        "/mirror/list?p=a/../../admin/secret.txt",
        "/mirror/list?p=a/../../.git/config",
        "/mirror/list?p=a/./b.html",
        "/mirror/list?p=a/..",
    ] {
        let r = s.get(target);
        assert_eq!(r.status, 404, "{target}: {}", r.text());
        assert!(!r.text().contains("secret"), "{target}");
    }
    let r = s.get("/mirror/list?p=a/.env");
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn query_in_filename_under_configured_prefix_only() {
    let mut b = Builder::new();
    b.file("mirror/page.html?x=1", b"mirrored x=1");
    b.file("mirror/page.html", b"mirror plain");
    b.file("other/page.html?x=1", b"must not be served");
    b.file("other/page.html", b"other plain");
    b.config("[static]\nquery_in_filename = [\"/mirror/\"]\n");
    let s = b.start();
    assert_file(
        &s.get("/mirror/page.html?x=1"),
        b"mirrored x=1",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/mirror/page.html"),
        b"mirror plain",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
    assert_error(
        &s.get("/mirror/page.html?y=2"),
        404,
        "Not Found",
        "",
        Conn::Close,
    );
    assert_file(
        &s.get("/other/page.html?x=1"),
        b"other plain",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn query_is_ignored_by_default() {
    let mut b = Builder::new();
    b.file("page.html", b"plain");
    b.file("page.html?x=1", b"must not be served");
    let s = b.start();
    assert_file(
        &s.get("/page.html?x=1"),
        b"plain",
        "text/html; charset=utf-8",
        "",
        Conn::Close,
    );
}

#[test]
fn percent_encoded_names_are_decoded_once() {
    let mut b = Builder::new();
    b.file("with space.txt", b"space");
    b.file("caf\u{e9}.txt", b"utf8");
    b.file("100%.txt", b"percent");
    let s = b.start();
    assert_eq!(s.get("/with%20space.txt").body, b"space");
    assert_eq!(s.get("/caf%C3%A9.txt").body, b"utf8");
    assert_eq!(s.get("/100%25.txt").body, b"percent");
    assert_eq!(s.get("/100%2525.txt").status, 404);
}
