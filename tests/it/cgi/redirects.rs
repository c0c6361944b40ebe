//! Local and client redirects (RFC 3875 §6.2.2, §6.2.3).

use super::output::output_site;
use super::*;

#[test]
fn local_redirect_serves_the_file() {
    let server = output_site().start();
    assert_file(
        &server.get("/cgi-bin/local.sh"),
        b"the file\n",
        TXT,
        "",
        Conn::Close,
    );
    // On a keep-alive connection, followed by another request.
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/local.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), "the file\n");
    if r.header("connection") == Some("close") {
        c.expect_closed();
    } else {
        c.send(b"GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        assert_eq!(c.response().text(), "hello");
        c.expect_closed();
    }
    stop(server);
}

#[test]
fn a_head_request_redirected_locally_gets_no_body() {
    // A HEAD to a script that answers `Location: /file.txt`: the file's
    // head alone. The redirect used to be followed as a GET, and the
    // file's bytes went after the HEAD answer's head, where the client
    // reads the next answer (here: "the file\nHTTP/1.1 200 OK" taken
    // for a status line).
    let server = output_site().start();
    let mut c = server.connect();
    c.send(
        b"HEAD /cgi-bin/local.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/len.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    );
    let r = c.head_response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("content-length"), Some("9"), "{}", r.head);
    if r.header("connection") == Some("close") {
        assert!(c.read_to_end().is_empty(), "a body after a HEAD answer");
    } else {
        let next = c.response();
        assert_eq!(
            (next.status, next.text().as_str()),
            (200, "hello"),
            "{}",
            next.head
        );
        c.expect_closed();
    }
    stop(server);
}

#[test]
fn client_redirect_is_a_302() {
    let server = output_site().start();
    let mut c = server.connect();
    c.send(
        b"GET /cgi-bin/client.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          HEAD /cgi-bin/client.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/moved.sh HTTP/1.1\r\nHost: h\r\n\r\n\
          GET /cgi-bin/client.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "302 Found",
            "Location: http://example.test/\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(&r.raw[r.head.len()..], b"0\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        head("302 Found", "Location: http://example.test/\r\n")
    );
    // An explicit 3xx status is kept.
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "301 Moved Permanently",
            "Location: http://example.test/new\r\nTransfer-Encoding: chunked\r\n"
        )
    );
    assert_eq!(&r.raw[r.head.len()..], b"0\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        head(
            "302 Found",
            "Location: http://example.test/\r\nConnection: close\r\n"
        )
    );
    assert!(r.body.is_empty());
    c.expect_closed();
    stop(server);
}

#[test]
fn local_redirects_of_every_kind() {
    let mut b = builder(CGI_BIN);
    printf_script(
        &b,
        "to-script.sh",
        "Location: /cgi-bin/query.sh?from=redirect\\r\\n\\r\\n",
    );
    script(
        &b,
        "cgi-bin/query.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s %s' \"$REQUEST_METHOD\" \"$QUERY_STRING\"\n",
    );
    printf_script(&b, "loop.sh", "Location: /cgi-bin/loop.sh\\r\\n\\r\\n");
    printf_script(&b, "hop1.sh", "Location: /cgi-bin/hop2.sh\\r\\n\\r\\n");
    printf_script(&b, "hop2.sh", "Location: /file.txt\\r\\n\\r\\n");
    printf_script(&b, "to-file.sh", "Location: /file.txt\\r\\n\\r\\n");
    printf_script(&b, "to-missing.sh", "Location: /missing.txt\\r\\n\\r\\n");
    b.file("file.txt", b"the file\n");
    let server = b.start();
    // To another script: it runs with GET and the new query.
    assert_eq!(
        server.get("/cgi-bin/to-script.sh").text(),
        "GET from=redirect"
    );
    // To a missing file: that file's 404.
    assert_error(
        &server.get("/cgi-bin/to-missing.sh"),
        404,
        "Not Found",
        "",
        Conn::Close,
    );
    // From a POST whose body the script never read, pipelined with the
    // next request: the body is not taken for a request.
    let (mut c, rs) = exchange(
        &server,
        b"POST /cgi-bin/to-file.sh HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello\
          GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        &[false],
    );
    assert_eq!(rs[0].status, 200, "{}", rs[0].head);
    assert_eq!(rs[0].text(), "the file\n");
    if rs[0].header("connection") == Some("close") {
        c.expect_closed();
    } else {
        assert_file(&c.response(), b"the file\n", TXT, "", Conn::Close);
        c.expect_closed();
    }
    // Two hops: script → script → file.
    assert_file(
        &server.get("/cgi-bin/hop1.sh"),
        b"the file\n",
        TXT,
        "",
        Conn::Close,
    );
    // A loop ends with a 500 instead of running forever.
    assert_error(
        &server.get("/cgi-bin/loop.sh"),
        500,
        "Internal Server Error",
        "",
        Conn::Close,
    );
    // The log says where the loop went (it named nothing: which of the
    // site's scripts looped was left to guess).
    let line = server.wait_stderr_line("too many local redirects");
    assert!(line.contains("to /cgi-bin/loop.sh"), "{line}");
    stop(server);
}

#[test]
fn scripts_still_run_after_a_redirect_chain() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/hop1.sh",
        "#!/bin/sh\nprintf 'Location: /cgi-bin/hop2.sh\\r\\n\\r\\n'\n",
    );
    script(
        &b,
        "cgi-bin/hop2.sh",
        "#!/bin/sh\nprintf 'Location: /cgi-bin/ok.sh\\r\\n\\r\\n'\n",
    );
    script(
        &b,
        "cgi-bin/ok.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n",
    );
    let server = b.start();
    // Whatever becomes of the chain itself (see local_redirects_of_every_kind),
    // the worker must go on running scripts.
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/hop1.sh HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    let _ = c.read_to_end();
    for _ in 0..2 {
        let r = server.get("/cgi-bin/ok.sh");
        assert_eq!((r.status, r.text().as_str()), (200, "ok"), "{}", r.head);
    }
    stop(server);
}
