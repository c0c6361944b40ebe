//! At `level = "debug"` every 403 and 404 a file caused is explained in
//! the error log (the file and what was wrong, with the errno), within a
//! per-worker budget of lines a second; below `debug` only a file that is
//! there but that brisk may not open or run is (at `warn`).

use crate::common;

use std::os::unix::fs::{symlink, PermissionsExt};

use common::*;

/// A site with one file of each kind that cannot be served. Served as
/// `nobody` when the tests run as root, so that a mode 000 file is
/// unreadable to the server.
fn refusing_site(level: &str) -> Server {
    let mut b = Builder::new();
    b.file("ok.txt", b"ok");
    b.file("secret.txt", b"secret");
    b.file("cgi-bin/noexec.sh", b"#!/bin/sh\necho hi\n");
    write_file(&b.base().join("outside/x.txt"), b"out");
    let root = b.root().to_path_buf();
    std::fs::set_permissions(
        root.join("secret.txt"),
        std::fs::Permissions::from_mode(0o000),
    )
    .expect("chmod");
    symlink("../outside/x.txt", root.join("link_out")).expect("symlink");
    let fifo =
        std::ffi::CString::new(root.join("fifo").as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    b.config(&format!(
        "[log]\nlevel = \"{level}\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"root/cgi-bin\"\n"
    ));
    if brisk::sys::privileges::euid() == 0 {
        b.arg("--user").arg("nobody");
    }
    b.start()
}

/// Waits until the error log has a line containing `what`; returns it.
fn wait_line(s: &Server, what: &str) -> String {
    let mut found = String::new();
    wait_until(&format!("an error log line with {what:?}"), || {
        match s.stderr().lines().find(|l| l.contains(what)) {
            Some(l) => {
                found = l.to_string();
                true
            }
            None => false,
        }
    });
    found
}

#[test]
fn each_refusal_is_explained_at_debug() {
    let s = refusing_site("debug");
    let root = s.root.display().to_string();
    let cases = [
        (
            "/secret.txt",
            403,
            format!("\"{root}/secret.txt\": cannot be opened: Permission denied (os error 13)"),
        ),
        (
            "/link_out",
            403,
            format!("\"{root}/link_out\": a symlink on the way leads outside the document root"),
        ),
        (
            "/fifo",
            403,
            format!(
                "\"{root}/fifo\": not a regular file (a FIFO, socket or device is never served)"
            ),
        ),
        (
            "/missing.txt",
            404,
            format!(
                "\"{root}/missing.txt\": cannot be opened: No such file or directory (os error 2)"
            ),
        ),
        (
            "/.env",
            403,
            format!("\"{root}/.env\": a name starting with \".\" (static.dotfiles)"),
        ),
        (
            "/cgi-bin/noexec.sh",
            403,
            format!(
                "\"{root}/cgi-bin/noexec.sh\": a CGI script the user brisk runs as may not run"
            ),
        ),
    ];
    for (path, status, reason) in &cases {
        let r = s.get(path);
        assert_eq!(r.status, *status, "{path}");
        let line = wait_line(&s, &format!("for \"GET {path} HTTP/1.1\""));
        let level = match *path {
            "/secret.txt" | "/cgi-bin/noexec.sh" => "warn",
            _ => "debug",
        };
        assert!(
            line.contains(&format!(
                "[{level}] client 127.0.0.1: {status} for \"GET {path} HTTP/1.1\": {reason}"
            )),
            "{path}: {line}"
        );
    }
    // A file that is served is not mentioned.
    assert_eq!(s.get("/ok.txt").status, 200);
    assert_eq!(s.get("/missing-too").status, 404);
    wait_line(&s, "/missing-too");
    assert!(!s.stderr().contains("ok.txt"), "{}", s.stderr());
}

#[test]
fn below_debug_only_files_brisk_may_not_open_or_run_are_explained() {
    let s = refusing_site("info");
    for path in ["/link_out", "/fifo", "/missing.txt", "/.env"] {
        assert!(matches!(s.get(path).status, 403 | 404), "{path}");
    }
    // A file there that brisk may not read, a script it may not run:
    // most often a mistake, which a user sees at the default level.
    let root = s.root.display().to_string();
    assert_eq!(s.get("/secret.txt").status, 403);
    wait_line(&s, &format!("[warn] client 127.0.0.1: 403 for \"GET /secret.txt HTTP/1.1\": \"{root}/secret.txt\": cannot be opened: Permission denied (os error 13)"));
    assert_eq!(s.get("/cgi-bin/noexec.sh").status, 403);
    wait_line(
        &s,
        "[warn] client 127.0.0.1: 403 for \"GET /cgi-bin/noexec.sh HTTP/1.1\"",
    );
    // A line that info does log, written after the requests above.
    let r = s.request(b"GET /x HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n");
    assert_eq!(r.status, 400);
    wait_line(&s, "[info] client 127.0.0.1: 400");
    let log = s.stderr();
    assert!(!log.contains("[debug]"), "{log}");
    for quiet in ["/link_out", "/fifo", "/missing.txt", "/.env"] {
        assert!(!log.contains(&format!("GET {quiet} ")), "{quiet}: {log}");
    }
}

#[test]
fn a_burst_of_404s_is_explained_within_a_budget() {
    const N: usize = 300;
    let mut b = Builder::new();
    b.file("ok.txt", b"ok");
    b.config("[log]\nlevel = \"debug\"\n");
    let s = b.start();
    let mut c = s.connect();
    let mut burst = Vec::new();
    for i in 0..N {
        burst
            .extend_from_slice(format!("GET /scan/{i}.php HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    }
    c.send(&burst);
    for _ in 0..N {
        assert_eq!(c.response().status, 404);
    }
    // Every 404 is either explained or counted in a summary line, which
    // comes once the second the budget was spent in is over.
    let summary = " more refused requests were not explained (at most 20 a second per worker are)";
    wait_line(&s, summary);
    let mut explained = 0;
    let mut not_explained = 0;
    wait_until("every 404 to be explained or counted", || {
        let log = s.stderr();
        explained = log.lines().filter(|l| l.contains("GET /scan/")).count();
        not_explained = log
            .lines()
            .filter_map(|l| l.split_once("[debug] ").map(|(_, m)| m))
            .filter_map(|m| m.strip_suffix(summary))
            .map(|n| n.parse::<usize>().expect("a count"))
            .sum();
        explained + not_explained == N
    });
    assert!(not_explained > 0 && explained < N, "{explained} explained");
    // At most 20 in any one-second window: at most 40 in a clock second.
    let log = s.stderr();
    let mut per_second = std::collections::HashMap::new();
    for l in log.lines().filter(|l| l.contains("GET /scan/")) {
        *per_second.entry(&l[..19]).or_insert(0) += 1;
    }
    assert!(per_second.values().all(|&n| n <= 40), "{per_second:?}");
}

/// A 501 (a method brisk does not implement, a WebSocket upgrade) is the
/// client's doing, as a 4xx is, not the server's trouble: no `error`
/// line for each, which any client could repeat to flood the log at the
/// default level.
#[test]
fn a_501_writes_no_error_line() {
    let mut b = Builder::new();
    b.file("ok.txt", b"ok");
    b.workers(1);
    b.config("[log]\nlevel = \"debug\"\n");
    let s = b.start();
    for i in 0..3 {
        let r = s.request(
            format!("GARBAGE /ok.txt?{i} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 501);
    }
    let r = s.request(
        b"GET /ok.txt HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    assert_eq!(r.status, 501);
    // The worker's next line comes after any those answers wrote.
    assert_eq!(s.get("/nope").status, 404);
    wait_line(&s, "/nope");
    // (Without the site's paths and the port: their random parts may
    // hold "501".)
    let log = s.stderr().replace(&*s.base.path.to_string_lossy(), "");
    let log = log.replace(&s.addr().to_string(), "");
    assert!(!log.contains("501"), "{}", s.stderr());
}
