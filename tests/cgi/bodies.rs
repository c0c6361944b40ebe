//! Request bodies on the way to a script's stdin.

use super::*;

/// Echoes stdin with its length and whether CONTENT_LENGTH was set.
pub(super) const ECHO_PL: &str = r#"#!/usr/bin/perl
binmode STDIN;
binmode STDOUT;
my $in = do { local $/; <STDIN> };
$in = '' unless defined $in;
my $cl = defined $ENV{CONTENT_LENGTH} ? $ENV{CONTENT_LENGTH} : 'unset';
print "Content-Type: application/octet-stream\r\nX-Env-Content-Length: $cl\r\n",
    "Content-Length: ", length($in), "\r\n\r\n", $in;
"#;

pub(super) fn echo_head(env_cl: &str, len: usize, conn: Conn) -> String {
    head(
        "200 OK",
        &format!(
            "Content-Type: application/octet-stream\r\nX-Env-Content-Length: {env_cl}\r\n\
             Content-Length: {len}\r\n{}",
            conn.line()
        ),
    )
}

#[test]
fn post_bodies() {
    let b = builder(CGI_BIN);
    script(&b, "cgi-bin/echo.pl", ECHO_PL);
    let server = b.start();
    let mut c = server.connect();

    // 0 bytes.
    c.send(b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    let r = c.response();
    assert_eq!(r.masked_head(), echo_head("0", 0, Conn::None));
    assert!(r.body.is_empty());

    // 1 MiB (the default max_body), echoed byte for byte.
    let big = pattern(MIB);
    let mut req =
        format!("POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nContent-Length: {MIB}\r\n\r\n")
            .into_bytes();
    req.extend_from_slice(&big);
    c.send(&req);
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        echo_head(&MIB.to_string(), MIB, Conn::None)
    );
    assert!(r.body == big, "1 MiB body differs");

    // Chunked, with an extension and a trailer: decoded before the child
    // sees it, and no CONTENT_LENGTH.
    c.send(
        b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(r.masked_head(), echo_head("unset", 12, Conn::None));
    assert_eq!(r.text(), "hello world!");

    // Chunked and larger than the pipe and the server's stdin buffer,
    // sent in pieces.
    let data = pattern(300 * 1024);
    c.send(b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
    for piece in data.chunks(100_000) {
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(piece);
        chunk.extend_from_slice(b"\r\n");
        c.send(&chunk);
    }
    c.send(b"0\r\n\r\n");
    let r = c.response();
    assert_eq!(r.masked_head(), echo_head("unset", data.len(), Conn::None));
    assert!(r.body == data, "chunked body differs");

    // The connection is still good for a plain request.
    c.send(b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nend");
    let r = c.response();
    assert_eq!(r.masked_head(), echo_head("3", 3, Conn::Close));
    assert_eq!(r.text(), "end");
    c.expect_closed();
    stop(server);
}

#[test]
fn script_that_never_reads_stdin() {
    let mut b = builder(CGI_BIN);
    // One answers at once and exits; one answers after a while without
    // ever reading, so the client's body fills the pipe first.
    script(
        &b,
        "cgi-bin/quick.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 2\\r\\n\\r\\nok'\n",
    );
    script(
        &b,
        "cgi-bin/late.sh",
        "#!/bin/sh\nsleep 0.3\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 2\\r\\n\\r\\nok'\n",
    );
    b.file("file.txt", b"after\n");
    let server = b.start();
    for (name, chunked) in [("quick.sh", false), ("late.sh", false), ("late.sh", true)] {
        let mut c = server.connect();
        let framing = if chunked {
            "Transfer-Encoding: chunked".to_string()
        } else {
            format!("Content-Length: {MIB}")
        };
        c.send(format!("POST /cgi-bin/{name} HTTP/1.1\r\nHost: h\r\n{framing}\r\n\r\n").as_bytes());
        let mut w = c.stream.try_clone().expect("clone");
        let writer = std::thread::spawn(move || {
            let mut body = pattern(MIB);
            if chunked {
                let mut framed = Vec::new();
                for piece in body.chunks(64 * 1024) {
                    framed.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    framed.extend_from_slice(piece);
                    framed.extend_from_slice(b"\r\n");
                }
                framed.extend_from_slice(b"0\r\n\r\n");
                body = framed;
            }
            // The server may close instead of reading the rest; either is
            // fine, as long as it says so.
            w.write_all(&body).is_ok()
        });
        let r = c.response();
        assert_eq!(r.status, 200, "{name}: {}", r.head);
        assert_eq!(r.text(), "ok", "{name}");
        let sent_all = writer.join().expect("writer");
        if r.header("connection") == Some("close") {
            // Whatever the client still sends is read and dropped until
            // it is done; then the connection closes.
            assert_eq!(c.read_to_end(), b"", "{name}: nothing after the response");
        } else {
            assert!(
                sent_all,
                "{name}: a keep-alive connection must take the whole body"
            );
            c.send(b"GET /file.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
            assert_file(&c.response(), b"after\n", TXT, "", Conn::Close);
            c.expect_closed();
        }
    }
    // The server is fine afterwards.
    assert_file(&server.get("/file.txt"), b"after\n", TXT, "", Conn::Close);
    stop(server);
}

#[test]
fn expect_100_continue_reaches_the_script() {
    let b = builder(CGI_BIN);
    script(&b, "cgi-bin/echo.pl", ECHO_PL);
    let server = b.start();
    let mut c = server.connect();
    c.send(
        b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\
          Expect: 100-continue\r\n\r\n",
    );
    // The script needs the body, so the server asks for it (RFC 9110
    // §10.1.1) rather than leaving the client to guess.
    c.stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut tmp = [0u8; 256];
    while find(&got, b"\r\n\r\n").is_none() {
        match c.stream.read(&mut tmp) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&tmp[..n]),
            Err(_) => break,
        }
    }
    assert_eq!(
        String::from_utf8_lossy(&got),
        "HTTP/1.1 100 Continue\r\n\r\n",
        "no 100 Continue for a CGI request with Expect: 100-continue"
    );
    c.stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("timeout");
    c.send(b"hello");
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), "hello");
    stop(server);
}
