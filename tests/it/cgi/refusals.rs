//! Scripts that fail, and files that must neither run nor be shown.

use super::*;

#[test]
fn broken_scripts_get_502_and_stderr_is_logged() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/noheader.sh",
        "#!/bin/sh\necho 'noheader: missing settings file' >&2\nexit 3\n",
    );
    script(
        &b,
        "cgi-bin/garbage.sh",
        "#!/bin/sh\nprintf 'this is not a header\\n\\nbody'\n",
    );
    script(&b, "cgi-bin/crash.sh", "#!/bin/sh\nkill -SEGV $$\n");
    script(
        &b,
        "cgi-bin/halfhead.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n'\nkill -SEGV $$\n",
    );
    let server = b.start();
    for name in ["noheader.sh", "garbage.sh", "crash.sh", "halfhead.sh"] {
        let r = server.get(&format!("/cgi-bin/{name}"));
        assert_error(&r, 502, "Bad Gateway", "", Conn::Close);
    }
    server.wait_stderr_line("noheader: missing settings file");
    stop(server);
}

/// A script that answered and then failed: how it ended is logged (a
/// non-zero status as a warning, a signal as an error), whether the
/// sandbox's launcher started it (and reaped it) or the worker itself;
/// one that ended well is not.
fn exit_status_or_signal_is_logged(sandbox: bool) {
    let mut b = builder(CGI_BIN);
    let answer = "printf 'Content-Type: text/plain\\r\\n\\r\\nanswered'";
    script(&b, "cgi-bin/ok.sh", &format!("#!/bin/sh\n{answer}\n"));
    script(
        &b,
        "cgi-bin/three.sh",
        &format!("#!/bin/sh\n{answer}\nexit 3\n"),
    );
    script(
        &b,
        "cgi-bin/segv.sh",
        &format!("#!/bin/sh\n{answer}\nexec 1>&-\nkill -SEGV $$\n"),
    );
    script(&b, "cgi-bin/nohead.sh", "#!/bin/sh\nexit 7\n");
    if !sandbox {
        b.arg("--no-sandbox");
    }
    let server = b.start();
    for name in ["ok.sh", "three.sh", "segv.sh"] {
        let r = server.get(&format!("/cgi-bin/{name}"));
        assert_eq!((r.status, r.text().as_str()), (200, "answered"), "{name}");
    }
    let r = server.get("/cgi-bin/nohead.sh");
    assert_error(&r, 502, "Bad Gateway", "", Conn::Close);
    let line = server.wait_stderr_line("three.sh: exited with status 3");
    assert!(line.contains("warn"), "{line}");
    let line = server.wait_stderr_line("segv.sh: was killed by signal 11 (SIGSEGV)");
    assert!(line.contains("error"), "{line}");
    server.wait_stderr_line("nohead.sh: exited with status 7");
    assert!(!server.stderr().contains("ok.sh:"), "{}", server.stderr());
    stop(server);
}

#[test]
fn exit_status_or_signal_is_logged_from_the_launcher() {
    exit_status_or_signal_is_logged(true);
}

#[test]
fn exit_status_or_signal_is_logged_without_sandbox() {
    exit_status_or_signal_is_logged(false);
}

#[test]
fn a_missing_interpreter_is_named_not_the_script() {
    // A rule's interpreter is checked at load: this one goes away after.
    let b = builder(&format!(
        "{CGI_BIN}[[cgi]]\nurl = \"/py/\"\ndir = \"py\"\ninterpreter = \"interp\"\n"
    ));
    fs::copy("/bin/sh", b.base().join("interp")).expect("copy sh");
    script(&b, "cgi-bin/nine.py", "#!/usr/bin/python9\nprint('hi')\n");
    script(&b, "cgi-bin/crlf.sh", "#!/bin/sh\r\necho hi\r\n");
    script(&b, "py/any.py", "print('hi')\n");
    let interp = b.base().join("interp");
    let server = b.start();
    // Once the sandbox, which opens it, is in place.
    server.wait_stderr_line("started 1 worker");
    fs::remove_file(&interp).expect("remove the interpreter");
    for path in ["/cgi-bin/nine.py", "/cgi-bin/crlf.sh", "/py/any.py"] {
        let r = server.get(path);
        assert_error(&r, 500, "Internal Server Error", "", Conn::Close);
    }
    server.wait_stderr_line(
        "nine.py: the interpreter /usr/bin/python9 named on its first line (#!) does not exist",
    );
    server.wait_stderr_line(
        "crlf.sh: its first line names the interpreter \"/bin/sh\\r\": the file has Windows line endings (CRLF)",
    );
    server.wait_stderr_line(&format!(
        "any.py: its rule's interpreter {} does not exist",
        interp.display()
    ));
    stop(server);
}

#[test]
fn a_websocket_handshake_is_refused_where_nothing_takes_it() {
    let b = builder(CGI_BIN);
    let ran = b.base().join("ran");
    script(
        &b,
        "cgi-bin/ws.sh",
        &format!(
            "#!/bin/sh\ntouch {}\nprintf 'Content-Type: text/plain\\r\\n\\r\\nplain'\n",
            ran.display()
        ),
    );
    write_file(&b.root().join("page.txt"), b"page\n");
    let server = b.start();
    let body = "501 Not Implemented: brisk does not handle WebSocket connections (Upgrade: websocket) at this address\n";
    for path in ["/cgi-bin/ws.sh", "/page.txt"] {
        let r = server.request(
            format!(
                "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(
            r.masked_head(),
            head(
                "501 Not Implemented",
                &format!(
                    "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
                    body.len()
                )
            ),
            "{path}"
        );
        assert_eq!(r.body, body.as_bytes(), "{path}");
    }
    assert!(
        !ran.exists(),
        "the script never runs for a WebSocket handshake"
    );
    // Any other upgrade but h2c (tests/it/h2.rs) is ignored: the request is
    // answered over HTTP/1.1 (RFC 9110 §7.8).
    let r = server.request(b"GET /cgi-bin/ws.sh HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: TLS/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"plain");
    // And an `Upgrade` that no `Connection` names is no handshake: a
    // plain request (RFC 9110 §7.8).
    let r = server.request(b"GET /page.txt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n");
    assert_eq!((r.status, &r.body[..]), (200, &b"page\n"[..]));
    stop(server);
}

#[test]
fn crash_after_the_head_cuts_the_response_short() {
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/short.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nContent-Length: 100\\r\\n\\r\\npartial'\n\
         kill -SEGV $$\n",
    );
    let server = b.start();
    let mut c = server.connect();
    c.send(b"GET /cgi-bin/short.sh HTTP/1.1\r\nHost: h\r\n\r\n");
    let raw = String::from_utf8(c.read_to_end()).expect("UTF-8");
    // The client can tell: fewer bytes than announced, then the close.
    assert!(
        raw.starts_with("HTTP/1.1 200 OK\r\n") && raw.ends_with("\r\n\r\npartial"),
        "{raw:?}"
    );
    assert!(raw.contains("\r\nContent-Length: 100\r\n"), "{raw:?}");
    stop(server);
}

#[test]
fn stderr_flood_does_not_stall_the_script() {
    let b = builder(CGI_BIN);
    // 1 MiB of stderr before the answer: far more than a pipe holds, so
    // the script finishes only if the server keeps reading it.
    script(
        &b,
        "cgi-bin/noisy.sh",
        "#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\\\0' 'e' | fold -w 1000 >&2\n\
         printf 'Content-Type: text/plain\\r\\nContent-Length: 4\\r\\n\\r\\ndone'\n",
    );
    let server = b.start();
    assert_eq!(server.get("/cgi-bin/noisy.sh").text(), "done");
    stop(server);
}

#[test]
fn refusals_under_the_cgi_dir() {
    let b = builder(CGI_BIN);
    write_mode(
        &b,
        "cgi-bin/noexec.sh",
        "#!/bin/sh\necho SECRET-SOURCE\n",
        0o644,
    );
    script(
        &b,
        "cgi-bin/sub/ok.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nsub'\n",
    );
    let server = b.start();
    for path in [
        "/cgi-bin/noexec.sh",
        "/cgi-bin/noexec.sh/more",
        "/cgi-bin/",
        "/cgi-bin/sub/",
    ] {
        assert_error(&server.get(path), 403, "Forbidden", "", Conn::Close);
    }
    for path in [
        "/cgi-bin/missing.sh",
        "/cgi-bin/sub/missing",
        "/cgi-bin/missing/x",
    ] {
        assert_error(&server.get(path), 404, "Not Found", "", Conn::Close);
    }
    assert_eq!(server.get("/cgi-bin/sub/ok.sh").text(), "sub");
    stop(server);
}

/// The source of a script is never served, whatever the path or method.
#[test]
fn script_source_is_never_served() {
    let mut b = Builder::new();
    b.config(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"root/cgi-bin\"\n\
         [[cgi]]\nurl = \"/run/\"\ndir = \"root/scripts\"\n\
         [[cgi]]\npattern = \"*.cgi\"\n\
         [[cgi]]\npattern = \"*.pl\"\ninterpreter = \"/usr/bin/perl\"\n",
    );
    let ran = "#!/bin/sh\n# SECRET-SOURCE\nprintf 'Content-Type: text/plain\\n\\nran %s' \"$PATH_INFO\"\n";
    let shown =
        |r: &Response| r.text().contains("SECRET") || r.raw.windows(6).any(|w| w == b"SECRET");
    script(&b, "root/cgi-bin/x.sh", ran);
    write_mode(&b, "root/cgi-bin/noexec.sh", ran, 0o644);
    script(&b, "root/scripts/y.sh", ran);
    script(&b, "root/app/page.cgi", ran);
    write_mode(&b, "root/app/broken.cgi", ran, 0o644);
    write_mode(
        &b,
        "root/app/report.pl",
        "# SECRET-SOURCE\nprint \"Content-Type: text/plain\\n\\nran perl\";\n",
        0o644,
    );
    b.file("index.html", b"home");
    let server = b.start();

    // Mapped scripts run.
    for (path, want) in [
        ("/cgi-bin/x.sh", "ran "),
        ("/cgi-bin/x.sh/info", "ran /info"),
        ("/cgi-bin//x.sh", "ran "),
        ("/%63gi-bin/x%2esh", "ran "),
        ("/run/y.sh", "ran "),
        ("/app/page.cgi", "ran "),
        ("/app/page.cgi/p", "ran /p"),
        ("/app/report.pl", "ran perl"),
    ] {
        let r = server.get(path);
        assert_eq!((r.status, r.text().as_str()), (200, want), "{path}");
    }
    // Not runnable: refused, never shown.
    for path in [
        "/cgi-bin/noexec.sh",
        "/%63gi-bin/noexec.sh",
        "/app/broken.cgi",
        "/app/broken.cgi/x",
        "/app/../app/broken.cgi",
    ] {
        let r = server.get(path);
        assert_error(&r, 403, "Forbidden", "", Conn::Close);
    }
    // Any request for a script file, by any path or method, must not
    // return its text: not with a range, not by HEAD + GET, not by the
    // directory's own name when it sits under the root with another URL.
    let paths = [
        "/cgi-bin/x.sh",
        "/cgi-bin/noexec.sh",
        "/scripts/y.sh",
        "/app/broken.cgi",
        "/app/page.cgi",
        "/app/report.pl",
        "/APP/broken.cgi",
        "/app/broken.CGI",
    ];
    for path in paths {
        for extra in ["", "Range: bytes=0-\r\n", "If-None-Match: \"x\"\r\n"] {
            let r = server.get_with(path, extra);
            assert!(
                !shown(&r),
                "{path} with {extra:?} shows the source: {:?}",
                r.raw
            );
        }
    }
    stop(server);
}

#[test]
fn symlinks_and_dotfiles_in_the_cgi_dir_are_refused() {
    let b = builder(CGI_BIN);
    let outside = script(
        &b,
        "outside.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nSECRET outside'\n",
    );
    std::os::unix::fs::symlink(&outside, b.base().join("cgi-bin/link.sh")).expect("symlink");
    script(
        &b,
        "cgi-bin/.hidden.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nSECRET hidden'\n",
    );
    let server = b.start();
    for path in ["/cgi-bin/link.sh", "/cgi-bin/.hidden.sh"] {
        let r = server.get(path);
        assert!(
            r.status == 403 || r.status == 404,
            "{path}: {} {:?}",
            r.status,
            r.text()
        );
        assert!(!r.text().contains("SECRET"), "{path} ran");
    }
    stop(server);
}

#[test]
fn fragments_never_reach_a_script() {
    // RFC 9112 §3.2 / RFC 3986 §3.5: a fragment is never sent. It is 400
    // before any routing: the script (which would answer 200 with its
    // query) never runs.
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/echo.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s' \"$QUERY_STRING\"\n",
    );
    let server = b.start();
    for target in [&b"/cgi-bin/echo.sh?a#b"[..], b"/cgi-bin/echo.sh#b"] {
        let mut raw = b"GET ".to_vec();
        raw.extend_from_slice(target);
        raw.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
        let r = server.request(&raw);
        assert_error(&r, 400, "Bad Request", "", Conn::Close);
    }
    // Percent-encoded, the same bytes are a query like any other.
    let r = server.get("/cgi-bin/echo.sh?q=%C3%A9%23");
    assert_eq!((r.status, r.text().as_str()), (200, "q=%C3%A9%23"));
    stop(server);
}

#[test]
fn raw_utf8_in_the_target_reaches_a_script_as_sent() {
    // curl given a literal `é` sends it unencoded; nginx, lighttpd and
    // Caddy accept raw bytes >= 0x80 in the path and the query, and so
    // does brisk: the script gets them as sent. Controls stay refused:
    // C0, DEL, and the C1 controls U+0080–U+009F written in UTF-8.
    let b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/echo.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s|%s' \"$PATH_INFO\" \"$QUERY_STRING\"\n",
    );
    let server = b.start();
    let request = |target: &[u8]| {
        let mut raw = b"GET ".to_vec();
        raw.extend_from_slice(target);
        raw.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
        server.request(&raw)
    };
    for (target, want) in [
        (&b"/cgi-bin/echo.sh?q=\xc3\xa9"[..], &b"|q=\xc3\xa9"[..]),
        (
            b"/cgi-bin/echo.sh/\xc3\xa9t\xc3\xa9?\xff",
            b"/\xc3\xa9t\xc3\xa9|\xff",
        ),
        (b"/cgi-bin/echo.sh?\x80", b"|\x80"),
    ] {
        let r = request(target);
        assert_eq!(r.status, 200, "{target:?}");
        assert_eq!(r.body, want, "{target:?}");
    }
    for target in [
        &b"/cgi-bin/echo.sh?q=a\x01"[..],
        b"/cgi-bin/echo.sh?q=a\x7f",
        b"/cgi-bin/echo.sh?q=\xc2\x9b31m",
        b"/cgi-bin/echo.sh/\xc2\x85",
    ] {
        assert_error(&request(target), 400, "Bad Request", "", Conn::Close);
    }
    stop(server);
}
