//! How a script's output reaches the client: framing, Status, nph, HEAD,
//! size, and what the server keeps for itself.

use super::bodies::{echo_head, ECHO_PL};
use super::*;

pub(super) fn output_site() -> Builder {
    let mut b = builder(CGI_BIN);
    printf_script(
        &b,
        "len.sh",
        "Content-Type: text/plain\\r\\nContent-Length: 5\\r\\n\\r\\nhello",
    );
    printf_script(&b, "nolen.sh", "Content-Type: text/plain\\n\\nhello");
    printf_script(
        &b,
        "notfound.sh",
        "Status: 404 Not Found\\r\\nContent-Type: text/plain\\r\\n\\r\\nnope\\n",
    );
    printf_script(
        &b,
        "custom.sh",
        "Status: 299 Custom Thing\\r\\nContent-Type: text/plain\\r\\nX-Extra: one\\r\\n\
         Content-Length: 3\\r\\n\\r\\nabc",
    );
    printf_script(
        &b,
        "teapot.sh",
        "Status: 418 I am a teapot\\r\\nContent-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\ntea",
    );
    printf_script(
        &b,
        "bare.sh",
        "Status: 299\\r\\nContent-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\nabc",
    );
    printf_script(&b, "local.sh", "Location: /file.txt\\r\\n\\r\\n");
    printf_script(
        &b,
        "client.sh",
        "Location: http://example.test/\\r\\n\\r\\n",
    );
    printf_script(
        &b,
        "moved.sh",
        "Status: 301 Moved Permanently\\r\\nLocation: http://example.test/new\\r\\n\\r\\n",
    );
    printf_script(
        &b,
        "nph-raw.sh",
        "HTTP/1.1 299 Raw\\r\\nX-Nph: yes\\r\\nContent-Type: text/plain\\r\\n\\r\\nraw body\\n",
    );
    // Its body in three writes with pauses between them (what is tested:
    // output that reaches the server in pieces).
    script(
        &b,
        "cgi-bin/parts.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nabc'\nsleep 0.1\nprintf 'defgh'\n\
         sleep 0.1\nprintf 'ij'\n",
    );
    b.file("file.txt", b"the file\n");
    b
}

#[test]
fn content_length_from_the_script_keeps_the_connection() {
    let server = output_site().start();
    let mut c = server.connect();
    for _ in 0..2 {
        c.send(b"GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\n\r\n");
        let r = c.response();
        assert_eq!(
            r.masked_head(),
            head(
                "200 OK",
                "Content-Type: text/plain\r\nContent-Length: 5\r\n"
            )
        );
        assert_eq!(r.text(), "hello");
        assert!(c.unread().is_empty());
    }
    // HTTP/1.0 with keep-alive and a length: kept alive too.
    c.send(b"GET /cgi-bin/len.sh HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nContent-Length: 5\r\nConnection: keep-alive\r\n"
        )
    );
    c.send(b"GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert_file(&c.response(), b"the file\n", TXT, "", Conn::Close);
    c.expect_closed();
    stop(server);
}

#[test]
fn no_length_is_chunked_on_http11() {
    let server = output_site().start();
    let mut c = server.connect();
    // One write from the script: one chunk, then the last chunk.
    c.send(b"GET /cgi-bin/nolen.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(&r.raw[r.head.len()..], b"5\r\nhello\r\n0\r\n\r\n");

    // Several writes: however the server reads them, the framing is exact.
    c.send(b"GET /cgi-bin/parts.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(dechunk_exact(&r.raw[r.head.len()..]), b"abcdefghij");
    assert!(c.unread().is_empty());

    // Still alive.
    c.send(b"GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert_file(&c.response(), b"the file\n", TXT, "", Conn::Close);
    c.expect_closed();
    stop(server);
}

#[test]
fn no_length_on_http10_is_close_delimited() {
    let server = output_site().start();
    for req in [
        &b"GET /cgi-bin/nolen.sh HTTP/1.0\r\n\r\n"[..],
        b"GET /cgi-bin/nolen.sh HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ] {
        let mut c = server.connect();
        c.send(req);
        let raw = c.read_to_end();
        let text = String::from_utf8(raw).expect("UTF-8");
        let r_head = text.split_once("\r\n\r\n").expect("head").0;
        let date = r_head
            .lines()
            .find_map(|l| l.strip_prefix("Date: "))
            .expect("Date");
        assert_imf_fixdate(date);
        assert_eq!(
            text.replacen(date, DATE, 1),
            head(
                "200 OK",
                "Content-Type: text/plain\r\nConnection: close\r\n"
            ) + "hello"
        );
    }
    stop(server);
}

#[test]
fn status_header() {
    let server = output_site().start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/notfound.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "404 Not Found",
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(r.text(), "nope\n");

    // A code the server does not know keeps the script's reason phrase.
    c.send(b"GET /cgi-bin/custom.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "299 Custom Thing",
            "Content-Type: text/plain\r\nX-Extra: one\r\nContent-Length: 3\r\n"
        )
    );
    assert_eq!(r.text(), "abc");
    // Without one, none (RFC 9112 §4: it may be empty; it said
    // "Unknown", as if the status were not one).
    c.send(b"GET /cgi-bin/bare.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert!(r.head.starts_with("HTTP/1.1 299 \r\n"), "{}", r.head);
    assert_eq!(r.text(), "abc");

    c.send(b"GET /cgi-bin/teapot.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 418, "{}", r.head);
    assert_eq!(r.header("Content-Length"), Some("3"));
    assert_eq!(r.text(), "tea");
    c.expect_closed();
    stop(server);
}

#[test]
fn nph_output_passes_through_unchanged() {
    let server = output_site().start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/nph-raw.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(
        c.read_to_end(),
        b"HTTP/1.1 299 Raw\r\nX-Nph: yes\r\nContent-Type: text/plain\r\n\r\nraw body\n"
    );
    stop(server);
}

#[test]
fn head_sends_headers_only() {
    let server = output_site().start();
    let mut c = server.connect();
    for (name, status, fields) in [
        (
            "len.sh",
            "200 OK",
            "Content-Type: text/plain\r\nContent-Length: 5\r\n",
        ),
        // No body to frame, so no Transfer-Encoding.
        ("nolen.sh", "200 OK", "Content-Type: text/plain\r\n"),
        (
            "notfound.sh",
            "404 Not Found",
            "Content-Type: text/plain\r\n",
        ),
    ] {
        c.send(format!("HEAD /cgi-bin/{name} HTTP/1.1\r\nHost: h\r\n\r\n").as_bytes());
        let r = c.head_response();
        assert_eq!(r.masked_head(), head(status, fields), "{name}");
        // A body would show up in front of the next response.
        c.send(b"GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(c.response().text(), "hello", "{name}: in step after HEAD");
    }
    c.send(b"GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert_file(&c.response(), b"the file\n", TXT, "", Conn::Close);
    c.expect_closed();
    stop(server);
}

#[test]
fn head_request_to_huge_output_stays_in_step() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/huge.sh",
        "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\n\
         head -c 20971520 /dev/zero\n",
    );
    script(
        &b,
        "cgi-bin/len.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 5\\r\\n\\r\\nhello'\n",
    );
    let server = b.start();
    let (mut c, rs) = exchange(
        &server,
        b"HEAD /cgi-bin/huge.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        &[true, false],
    );
    assert_eq!(
        rs[0].masked_head(),
        head("200 OK", "Content-Type: application/octet-stream\r\n")
    );
    assert_eq!(rs[1].text(), "hello");
    c.expect_closed();
    stop(server);
}

#[test]
fn huge_output_arrives_complete() {
    let b = builder(CGI_BIN);
    // 50 MiB: 800 blocks of 64 KiB, each 0, 1, … 250, 0, 1, …
    script(
        &b,
        "cgi-bin/huge.pl",
        "#!/usr/bin/perl\nbinmode STDOUT;\nmy $block = join '', map { chr($_ % 251) } 0 .. 65535;\n\
         print \"Content-Type: application/octet-stream\\r\\n\\r\\n\";\nprint $block for 1 .. 800;\n",
    );
    let server = b.start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/huge.pl HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            "Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(r.body.len(), 800 * 65536);
    let block: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
    for (i, got) in r.body.chunks(65536).enumerate() {
        assert!(got == &block[..], "block {i} differs");
    }
    // And the connection goes on.
    c.send(b"GET /cgi-bin/huge.pl HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.status, 200);
    drop(c);
    stop(server);
}

#[test]
fn server_owns_framing_and_cuts_extra_output() {
    let mut b = builder(CGI_BIN);
    // Framing and connection headers from the script are dropped; bytes
    // beyond its Content-Length never reach the client.
    script(
        &b,
        "cgi-bin/framing.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nTransfer-Encoding: chunked\\r\\n\
         Connection: keep-alive\\r\\nServer: evil\\r\\nDate: yesterday\\r\\n\\r\\nplain'\n",
    );
    script(
        &b,
        "cgi-bin/extra.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\n\
         abcHTTP/1.1 200 OK\\r\\nX-Smuggled: yes\\r\\nContent-Length: 0\\r\\n\\r\\n'\n",
    );
    script(
        &b,
        "cgi-bin/nocontent.sh",
        "#!/bin/sh\nprintf 'Status: 204 No Content\\r\\nX-A: b\\r\\n\\r\\nignored body'\n",
    );
    script(
        &b,
        "cgi-bin/reset.sh",
        "#!/bin/sh\nprintf 'Status: 205 Reset Content\\r\\nContent-Type: text/plain\\r\\n\\r\\nno body'\n",
    );
    script(
        &b,
        "cgi-bin/bigheader.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nX-Big: '\nhead -c 20000 /dev/zero | tr '\\\\0' a\n\
         printf '\\r\\n\\r\\nbody'\n",
    );
    script(
        &b,
        "cgi-bin/injected.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nX-Bad: a\\rb\\r\\n\\r\\nbody'\n",
    );
    b.file("file.txt", b"after\n");
    let server = b.start();
    let (mut c, rs) = exchange(
        &server,
        b"GET /cgi-bin/framing.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/extra.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/nocontent.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/reset.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        &[false; 5],
    );
    assert_eq!(
        rs[0].masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(&rs[0].raw[rs[0].head.len()..], b"5\r\nplain\r\n0\r\n\r\n");
    assert_eq!(
        rs[1].masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nContent-Length: 3\r\n"
        )
    );
    assert_eq!(rs[1].text(), "abc");
    assert_eq!(rs[2].masked_head(), head("204 No Content", "X-A: b\r\n"));
    // A 205 has no content (RFC 9110 §15.3.6): its body used to go on,
    // chunked.
    assert_eq!(
        rs[3].masked_head(),
        head(
            "205 Reset Content",
            "Content-Type: text/plain\r\nContent-Length: 0\r\n"
        )
    );
    assert_file(&rs[4], b"after\n", TXT, "", Conn::Close);
    c.expect_closed();
    for name in ["bigheader.sh", "injected.sh"] {
        let r = server.get(&format!("/cgi-bin/{name}"));
        assert_error(&r, 502, "Bad Gateway", "", Conn::Close);
    }
    stop(server);
}

/// A document whose output is its head alone needs no Content-Type
/// (RFC 3875 §6.3.1 asks one of a body): git-http-backend answers a push
/// it refuses and a repository it does not have so (a Status and cache
/// fields), which were 502s. A body without one still is, also one that
/// comes after a pause.
#[test]
fn a_document_that_is_its_head_alone_needs_no_content_type() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/refused.sh",
        "#!/bin/sh\nprintf 'Status: 403 Forbidden\\r\\nPragma: no-cache\\r\\n\\r\\n'\n",
    );
    script(
        &b,
        "cgi-bin/later.sh",
        "#!/bin/sh\nprintf 'Status: 404\\r\\n\\r\\n'\nsleep 0.2\nprintf 'body'\n",
    );
    let server = b.start();
    let mut c = server.connect();
    for _ in 0..2 {
        // (The connection stays open: a well-framed answer.)
        c.send(b"GET /cgi-bin/refused.sh HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            c.response().masked_head(),
            head("403 Forbidden", "Pragma: no-cache\r\nContent-Length: 0\r\n")
        );
    }
    let r = server.get("/cgi-bin/later.sh");
    assert_error(&r, 502, "Bad Gateway", "", Conn::Close);
    server.wait_stderr_line("invalid response header: CGI document without Content-Type");
    stop(server);
}

#[test]
fn pipelined_cgi_and_static() {
    let b = {
        let mut b = builder(CGI_BIN);
        b.file("file.txt", b"static\n");
        b
    };
    script(
        &b,
        "cgi-bin/len.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\ncgi'\n",
    );
    script(
        &b,
        "cgi-bin/nolen.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nchunked'\n",
    );
    script(&b, "cgi-bin/echo.pl", ECHO_PL);
    let server = b.start();
    let (mut c, rs) = exchange(
        &server,
        b"GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /file.txt HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/nolen.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello\
          GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        &[false; 5],
    );
    assert_eq!(
        rs[0].masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nContent-Length: 3\r\n"
        )
    );
    assert_eq!(rs[0].text(), "cgi");
    assert_file(&rs[1], b"static\n", TXT, "", Conn::None);
    assert_eq!(
        rs[2].masked_head(),
        head(
            "200 OK",
            "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(rs[2].text(), "chunked");
    assert_eq!(rs[3].masked_head(), echo_head("5", 5, Conn::None));
    assert_eq!(rs[3].text(), "hello");
    assert_file(&rs[4], b"static\n", TXT, "", Conn::Close);
    c.expect_closed();
    stop(server);
}

/// A script whose Content-Length is short of its body (the classic
/// mistake: the length of a string, not of its UTF-8 bytes) has its
/// answer end at that length, whole, over HTTP/1.1 and HTTP/2 alike,
/// with a line in the error log, the program left to run to its end
/// (its further output dropped). HTTP/2 (and HTTP/3) reset the stream
/// (INTERNAL_ERROR), which a browser shows as no page at all ("Failed to
/// fetch"), while HTTP/1.1 cut it silently; nothing was logged.
#[cfg(feature = "http2")]
#[test]
fn output_longer_than_its_content_length_ends_there_whole_over_every_protocol() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/long.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 3\\r\\n\\r\\n'\n\
         printf 'abc'\nsleep 0.1\nprintf 'def'\nsleep 0.1\necho ran to its end >&2\n",
    );
    let server = b.start();
    let r = server.get("/cgi-bin/long.sh");
    assert_eq!((r.status, r.text()), (200, "abc".to_string()));
    let mut h2 = common::h2::H2::connect(server.addr(), &[], 1 << 20);
    let id = h2.get("/cgi-bin/long.sh", &[]);
    let a = &h2.answers(&[id])[0];
    assert_eq!(
        (a.status(), a.body.as_slice(), a.reset),
        ("200", &b"abc"[..], None)
    );
    server.wait_stderr_line("cgi-bin/long.sh: body longer than its Content-Length; cut there");
    // (The program is not stopped: what it does after its output is its
    // own business, as it was over HTTP/1.1.)
    server.wait_stderr_line("ran to its end");
    stop(server);
}
