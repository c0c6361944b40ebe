use crate::handlers::cgi::{parse_head, parse_head_in, CgiHead, CgiReply};

const MAX: usize = 16384;

fn ok(buf: &[u8]) -> CgiHead {
    match parse_head(buf, MAX) {
        Ok(Some(h)) => h,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

fn err(buf: &[u8]) -> &'static str {
    match parse_head(buf, MAX) {
        Err(e) => e,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            String::from_utf8_lossy(buf)
        ),
    }
}

#[test]
fn document_with_lf_lines() {
    let buf = b"Content-Type: text/plain\nX-A:  a b \n\nbody";
    let h = ok(buf);
    assert_eq!(
        h,
        CgiHead {
            head_len: buf.len() - 4,
            status: 200,
            reason: None,
            kind: CgiReply::Document,
            headers: b"Content-Type: text/plain\r\nX-A: a b\r\n".to_vec(),
            content_length: None,
        }
    );
    assert_eq!(&buf[h.head_len..], b"body");
}

#[test]
fn document_with_crlf_lines_and_mixed_endings() {
    let buf = b"Content-Type: text/html\r\nSet-Cookie: a=1\nSet-Cookie: b=2\r\n\r\n<p>";
    let h = ok(buf);
    assert_eq!(&buf[h.head_len..], b"<p>");
    assert_eq!(
        h.headers,
        b"Content-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
    );
}

#[test]
fn status_sets_code_and_reason() {
    let h = ok(b"Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\n");
    assert_eq!(
        (h.status, h.reason.as_deref()),
        (404, Some(&b"Not Found"[..]))
    );
    assert_eq!(h.headers, b"Content-Type: text/plain\r\n");
    let h = ok(b"status:201\nContent-Type: text/plain\n\n");
    assert_eq!((h.status, h.reason), (201, None));
    let h = ok(b"Status: 599 Whatever it is\nContent-Type: a/b\n\n");
    assert_eq!(h.reason.as_deref(), Some(&b"Whatever it is"[..]));
}

#[test]
fn bad_status() {
    for bad in [
        &b"Status: 99\n\n"[..],
        b"Status: 1000\n\n",
        b"Status: 600 Too High\n\n",
        b"Status: 100 Continue\n\n",
        b"Status: abc\n\n",
        b"Status: 20x\n\n",
        b"Status: 200OK\n\n",
        b"Status:\n\n",
    ] {
        assert_eq!(
            err(bad),
            "CGI Status is not a 3-digit code from 200 to 599",
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        err(b"Status: 200\nStatus: 404\nContent-Type: a/b\n\n"),
        "CGI Status header repeated"
    );
}

#[test]
fn local_redirect_is_location_alone() {
    let h = ok(b"Location: /other/page?x=1\n\nignored body");
    assert_eq!(h.kind, CgiReply::LocalRedirect(b"/other/page?x=1".to_vec()));
    assert_eq!(h.status, 200);
    assert!(h.headers.is_empty());
    // Framing headers the server drops do not count as "something else".
    let h = ok(b"Location: /x\r\nConnection: close\r\n\r\n");
    assert_eq!(h.kind, CgiReply::LocalRedirect(b"/x".to_vec()));
}

#[test]
fn local_location_with_more_goes_to_the_client() {
    // With a Status, a local path is a client redirect (RFC 3875 §6.2.4).
    let h = ok(b"Status: 301 Moved\nLocation: /new\n\n");
    assert_eq!(h.kind, CgiReply::ClientRedirect);
    assert_eq!((h.status, h.reason.as_deref()), (301, Some(&b"Moved"[..])));
    assert_eq!(h.headers, b"Location: /new\r\n");
    // With other headers, too; 302 by default.
    let h = ok(b"Location: /new\nContent-Type: text/html\nSet-Cookie: s=1\n\n<a>");
    assert_eq!(h.kind, CgiReply::ClientRedirect);
    assert_eq!(h.status, 302);
    assert_eq!(
        h.headers,
        b"Location: /new\r\nContent-Type: text/html\r\nSet-Cookie: s=1\r\n"
    );
}

#[test]
fn client_redirect() {
    let h = ok(b"Location: https://example.com/a?b\n\n");
    assert_eq!(h.kind, CgiReply::ClientRedirect);
    assert_eq!((h.status, h.reason.as_ref()), (302, None));
    assert_eq!(h.headers, b"Location: https://example.com/a?b\r\n");
    let h = ok(b"Status: 307\r\nLocation: http://x/\r\n\r\n");
    assert_eq!((h.status, h.kind), (307, CgiReply::ClientRedirect));
    // 201 Created with a Location is a document.
    let h = ok(b"Status: 201 Created\nLocation: http://x/item/1\nContent-Type: text/plain\n\n");
    assert_eq!((h.status, h.kind), (201, CgiReply::Document));
    assert_eq!(
        err(b"Status: 201\nLocation: http://x/item/1\n\nbody"),
        "CGI document without Content-Type"
    );
}

#[test]
fn bad_locations() {
    assert_eq!(
        err(b"Location: relative/path\n\n"),
        "CGI Location is neither an absolute URI nor a local path"
    );
    assert_eq!(
        err(b"Location: 1http://x\n\n"),
        "CGI Location is neither an absolute URI nor a local path"
    );
    assert_eq!(err(b"Location:\n\n"), "CGI Location header empty");
    assert_eq!(
        err(b"Location: /a\nLocation: /b\n\n"),
        "CGI Location header repeated"
    );
}

#[test]
fn content_type_required_for_a_document() {
    assert_eq!(err(b"X-A: 1\n\nbody"), "CGI document without Content-Type");
    assert_eq!(err(b"\nbody"), "CGI document without Content-Type");
    // Unless there can be no body: one whose output ends with its head
    // has none (git-http-backend's 403), known once the output ended.
    let bare = b"Status: 403 Forbidden\r\nPragma: no-cache\r\n\r\n";
    assert_eq!(parse_head(bare, MAX), Ok(None));
    let h = parse_head_in(bare, MAX, true, Vec::new).unwrap().unwrap();
    assert_eq!((h.status, h.content_length), (403, Some(0)));
    assert_eq!(h.headers, b"Pragma: no-cache\r\n");
    assert_eq!(
        parse_head_in(b"Status: 403\r\n\r\nx", MAX, true, Vec::new),
        Err("CGI document without Content-Type")
    );
    assert_eq!(ok(b"Status: 204\n\n").status, 204);
    assert_eq!(ok(b"Status: 304 Not Modified\nETag: \"x\"\n\n").status, 304);
    let h = ok(b"Status: 202\nContent-Length: 0\n\n");
    assert_eq!((h.status, h.content_length), (202, Some(0)));
    // A 205 has no content (RFC 9110 §15.3.6), whatever the program says.
    for buf in [
        &b"Status: 205 Reset Content\n\n"[..],
        b"Status: 205\nContent-Type: text/plain\n\nbody",
        b"Status: 205\nContent-Length: 4\n\nbody",
    ] {
        let h = ok(buf);
        assert_eq!((h.status, h.content_length), (205, Some(0)), "{buf:?}");
    }
    assert_eq!(
        err(b"Content-Type: a/b\nContent-Type: c/d\n\n"),
        "CGI Content-Type header repeated"
    );
}

/// A field the program's `Connection` names is the hop's (RFC 9110
/// §7.6.1), dropped with it, before or after it, in any case; one it
/// does not name stays.
#[test]
fn fields_connection_names_are_dropped() {
    let h = ok(b"X-Secret: 1\nContent-Type: text/plain\nConnection: x-secret, X-Other\nx-other: 2\nConnection: close\nX-Kept: yes\n\n");
    assert_eq!(h.headers, b"Content-Type: text/plain\r\nX-Kept: yes\r\n");
}

#[test]
fn server_owned_headers_are_dropped_content_length_parsed() {
    let h = ok(b"Content-Type: text/plain\nContent-Length: 5\nConnection: keep-alive\nTransfer-Encoding: chunked\nKeep-Alive: timeout=5\nDate: Mon, 01 Jan 2024 00:00:00 GMT\nServer: evil\nUpgrade: h2c\nX-Kept: yes\n\nhello");
    assert_eq!(h.headers, b"Content-Type: text/plain\r\nX-Kept: yes\r\n");
    assert_eq!(h.content_length, Some(5));
    assert_eq!(
        ok(b"Content-Type: a/b\nContent-Length: 5\ncontent-length: 5\n\n").content_length,
        Some(5)
    );
    for bad in [
        &b"Content-Type: a/b\nContent-Length: -1\n\n"[..],
        b"Content-Type: a/b\nContent-Length: 1e3\n\n",
        b"Content-Type: a/b\nContent-Length:\n\n",
        b"Content-Type: a/b\nContent-Length: 5, 5\n\n",
        b"Content-Type: a/b\nContent-Length: 99999999999999999999\n\n",
    ] {
        assert_eq!(err(bad), "CGI Content-Length is not a number");
    }
    assert_eq!(
        err(b"Content-Type: a/b\nContent-Length: 5\nContent-Length: 6\n\n"),
        "CGI Content-Length headers disagree"
    );
}

#[test]
fn malformed_lines() {
    assert_eq!(
        err(b"Content-Type: a/b\n  folded\n\n"),
        "CGI header line folded (obs-fold)"
    );
    assert_eq!(
        err(b"Content-Type: a/b\n\tfolded\n\n"),
        "CGI header line folded (obs-fold)"
    );
    assert_eq!(err(b"no colon here\n\n"), "CGI header line without a colon");
    assert_eq!(err(b"Bad Name: x\n\n"), "CGI header name is not a token");
    assert_eq!(err(b": x\n\n"), "CGI header name is not a token");
    assert_eq!(
        err(b"X-A: a\rb\nContent-Type: a/b\n\n"),
        "CGI header value holds a control character"
    );
    assert_eq!(
        err(b"X-A: a\0b\nContent-Type: a/b\n\n"),
        "CGI header value holds a control character"
    );
    // obs-text is fine, as is a tab inside a value.
    let h = ok(b"Content-Type: a/b\nX-A: caf\xc3\xa9\tx\n\n");
    assert_eq!(h.headers, b"Content-Type: a/b\r\nX-A: caf\xc3\xa9\tx\r\n");
}

#[test]
fn split_input_needs_more_until_complete() {
    let full = b"Status: 200 OK\r\nContent-Type: text/plain\r\n\r\nbody";
    let end = full.len() - 4;
    for cut in 0..end {
        assert_eq!(parse_head(&full[..cut], MAX), Ok(None), "cut at {cut}");
    }
    for cut in end..=full.len() {
        let h = parse_head(&full[..cut], MAX).unwrap().unwrap();
        assert_eq!(h.head_len, end);
    }
}

#[test]
fn oversize_block_is_an_error() {
    let mut big = b"Content-Type: text/plain\nX-Pad: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 200));
    // Incomplete and already over the limit.
    assert_eq!(
        parse_head(&big, 100),
        Err("CGI header block larger than limits.cgi_header_bytes")
    );
    // Complete but over the limit.
    big.extend_from_slice(b"\n\n");
    assert_eq!(
        parse_head(&big, 100),
        Err("CGI header block larger than limits.cgi_header_bytes")
    );
    // Exactly at the limit is fine; the body does not count.
    let small = b"Content-Type: a/b\n\nbody bytes beyond the limit";
    assert!(parse_head(small, 19).unwrap().is_some());
    assert_eq!(
        parse_head(small, 18),
        Err("CGI header block larger than limits.cgi_header_bytes")
    );
    // Incomplete and within the limit: wait.
    assert_eq!(parse_head(b"Content-Type: a/b\n", 19), Ok(None));
}
