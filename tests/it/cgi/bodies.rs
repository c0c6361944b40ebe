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

    // Chunked, with an extension and a trailer: decoded and held until
    // complete, so the child is told its length (RFC 3875 §4.1.2).
    c.send(
        b"POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(r.masked_head(), echo_head("12", 12, Conn::None));
    assert_eq!(r.text(), "hello world!");

    // Chunked and larger than the pipe, the server's stdin buffer and
    // what it holds in memory (so held in a temporary file), sent in
    // pieces.
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
    assert_eq!(
        r.masked_head(),
        echo_head(&data.len().to_string(), data.len(), Conn::None)
    );
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

/// Reads exactly CONTENT_LENGTH bytes of stdin, as CGI.pm, php-cgi and
/// Python's cgi module do, and prints that length and their SHA-256.
const SUM_SH: &str = "#!/bin/sh\n\
     sum=$(head -c \"${CONTENT_LENGTH:-0}\" | sha256sum | cut -d' ' -f1)\n\
     printf 'Content-Type: text/plain\\r\\n\\r\\n%s %s\\n' \"${CONTENT_LENGTH-unset}\" \"$sum\"\n";

fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The names in `dir` (a `temp_dir` must never hold a named file).
fn names_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("read temp_dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn chunked_bodies_reach_the_script_with_their_length() {
    // RFC 3875 §4.1.2: CONTENT_LENGTH whenever there is a body. A chunked
    // body is held (in memory up to 64 KiB, then in an unnamed file in
    // temp_dir) until complete; the script then starts with its length.
    // With the sandbox on (the default), as a user runs it.
    let b = builder(&format!(
        "temp_dir = \"spool\"\n{CGI_BIN}[limits]\nmax_body = \"8MiB\"\n"
    ));
    let spool = b.base().join("spool");
    fs::create_dir(&spool).expect("spool dir");
    script(&b, "cgi-bin/sum.sh", SUM_SH);
    let server = b.start();
    let mut c = server.connect();
    for (len, piece) in [
        (0, 1),
        (1, 1),
        (100, 7),
        (64 * 1024, 10_000),
        (64 * 1024 + 1, 64 * 1024),
        (3 * MIB, 100_003),
    ] {
        let data = pattern(len);
        let mut req =
            b"POST /cgi-bin/sum.sh HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        req.extend_from_slice(&chunked_body(&data, piece));
        c.send(&req);
        let r = c.response();
        assert_eq!(r.status, 200, "{len}: {}", r.head);
        assert_eq!(r.text(), format!("{len} {}\n", sha256_hex(&data)), "{len}");
    }
    // A Content-Length body still streams as it arrives, with its length.
    let data = pattern(200_000);
    let mut req = format!(
        "POST /cgi-bin/sum.sh HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n",
        data.len()
    )
    .into_bytes();
    req.extend_from_slice(&data);
    c.send(&req);
    assert_eq!(
        c.response().text(),
        format!("200000 {}\n", sha256_hex(&data))
    );
    assert!(names_in(&spool).is_empty(), "{:?}", names_in(&spool));
    stop(server);
}

#[test]
fn a_large_chunked_body_waits_in_an_unnamed_file() {
    // While the script has not read it yet, a body over 64 KiB lies in
    // an O_TMPFILE file in temp_dir (open in the server, named nowhere);
    // a small one stays in memory.
    let b = builder(&format!("temp_dir = \"spool\"\n{CGI_BIN}"));
    let spool = fs::canonicalize(b.base()).expect("base").join("spool");
    fs::create_dir(&spool).expect("spool dir");
    let gates = b.base().join("cgi-bin");
    // Waits (10 s at most) for the gate file named by its query, in its
    // own directory (which the sandbox lets it read), then sums stdin.
    script(
        &b,
        "cgi-bin/gated.sh",
        &format!(
            "#!/bin/sh\ni=0\n\
             while [ ! -e \"gate.$QUERY_STRING\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n{}",
            SUM_SH.trim_start_matches("#!/bin/sh\n")
        ),
    );
    let server = b.start();
    let pid = server.pid();
    let held_files = || -> Vec<String> {
        fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("server fds")
            .flatten()
            .filter_map(|e| fs::read_link(e.path()).ok())
            .map(|p| p.display().to_string())
            .filter(|p| p.starts_with(&spool.display().to_string()))
            .collect()
    };
    for (tag, len, spilled) in [("small", 60_000, false), ("large", 1_000_000, true)] {
        let data = pattern(len);
        let mut req = format!(
            "POST /cgi-bin/gated.sh?{tag} HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .into_bytes();
        req.extend_from_slice(&chunked_body(&data, 32 * 1024));
        let mut c = server.connect();
        c.send(&req);
        // The script runs (so the body is complete) and waits at its gate.
        wait_until("the script to start", || {
            !processes_running("cgi-bin/gated.sh").is_empty()
        });
        if spilled {
            wait_until("the held body's file", || held_files().len() == 1);
            let f = &held_files()[0];
            assert!(f.ends_with(" (deleted)"), "a named file: {f}");
        } else {
            assert!(held_files().is_empty(), "{:?}", held_files());
        }
        assert!(names_in(&spool).is_empty(), "{:?}", names_in(&spool));
        write_file(&gates.join(format!("gate.{tag}")), b"");
        let r = c.response();
        assert_eq!(r.text(), format!("{len} {}\n", sha256_hex(&data)), "{tag}");
        wait_until("the script to end", || {
            processes_running("cgi-bin/gated.sh").is_empty()
        });
        wait_until("the file to be closed", || held_files().is_empty());
    }
    stop(server);
}

#[test]
fn bad_or_oversized_chunked_bodies_get_400_or_413() {
    // As on static routes: the framing error is answered (400, 413 over
    // limits.max_body, 431 for an endless trailer section) with
    // Connection: close, the script never runs, and nothing after the bad
    // body is answered. git then says why instead of "unexpected
    // disconnect". One process slot: none may leak.
    let b = builder(&format!(
        "{CGI_BIN}[limits]\nmax_body = \"100KiB\"\ncgi_processes = 1\n"
    ));
    script(&b, "cgi-bin/sum.sh", SUM_SH);
    let server = b.start();
    let over = chunked_body(&pattern(100 * 1024 + 1), 30_000);
    let mut endless = b"0\r\n".to_vec();
    for i in 0..2_000 {
        endless.extend_from_slice(format!("X-T{i}: {}\r\n", "v".repeat(20)).as_bytes());
    }
    endless.extend_from_slice(b"\r\n");
    let mut cases: Vec<(&[u8], u16, &str)> = Vec::new();
    for body in BAD_CHUNK_FRAMING.iter().chain(BAD_TRAILERS) {
        // Two chunk sizes are over max_body before their digits end.
        if body.starts_with(b"10000000000000000") || body.starts_with(b"fffffffffffffffff") {
            cases.push((body, 413, "Content Too Large"));
        } else {
            cases.push((body, 400, "Bad Request"));
        }
    }
    cases.push((&over, 413, "Content Too Large"));
    cases.push((
        b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n",
        413,
        "Content Too Large",
    ));
    cases.push((&endless, 431, "Request Header Fields Too Large"));
    for (body, code, reason) in cases {
        let mut c = server.connect();
        let mut raw =
            b"POST /cgi-bin/sum.sh HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        raw.extend_from_slice(body);
        raw.extend_from_slice(b"GET /cgi-bin/sum.sh?smuggled HTTP/1.1\r\nHost: h\r\n\r\n");
        c.send(&raw);
        let r = c.response();
        let case = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
        assert_eq!(
            r.masked_head(),
            error_head(code, reason, "", Conn::Close),
            "case {case:?}"
        );
        assert_eq!(r.text(), error_page(code, reason), "case {case:?}");
        let rest = c.read_to_end();
        assert!(rest.is_empty(), "case {case:?}: answered after: {rest:?}");
    }
    // The one slot is free, and the script runs for a good body.
    let data = b"fine".to_vec();
    let mut raw =
        b"POST /cgi-bin/sum.sh HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(&chunked_body(&data, 2));
    let r = server.request(&raw);
    assert_eq!(r.text(), format!("4 {}\n", sha256_hex(&data)));
    stop(server);
}

#[test]
fn curl_sends_a_chunked_file_to_a_python_script() {
    // A real client: curl's chunked upload of a file, to a Python script
    // that reads CONTENT_LENGTH bytes as the standard library's CGI
    // support does.
    let b = builder(&format!("{CGI_BIN}[limits]\nmax_body = \"4MiB\"\n"));
    script(
        &b,
        "cgi-bin/sum.py",
        "#!/usr/bin/env python3\nimport hashlib, os, sys\n\
         n = int(os.environ.get('CONTENT_LENGTH') or 0)\n\
         body = sys.stdin.buffer.read(n)\n\
         sys.stdout.write('Content-Type: text/plain\\r\\n\\r\\n%d %s\\n' % (len(body), hashlib.sha256(body).hexdigest()))\n",
    );
    let data = pattern(2 * MIB + 17);
    let file = b.base().join("upload.bin");
    fs::write(&file, &data).expect("write upload");
    let server = b.start();
    let out = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "20"])
        .args(["-H", "Transfer-Encoding: chunked", "-H", "Expect:"])
        .arg("--data-binary")
        .arg(format!("@{}", file.display()))
        .arg(format!("http://127.0.0.1:{}/cgi-bin/sum.py", server.port))
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            skip("curl is not installed (scripts/test installs it)");
            return;
        }
        Err(e) => panic!("curl: {e}"),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{} {}\n", data.len(), sha256_hex(&data))
    );
    stop(server);
}
