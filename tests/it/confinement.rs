//! Confinement of the running server: the refusal to serve as root, the
//! switch to an unprivileged user (threads and CGI children included),
//! chroot, and the kernel sandbox while serving, rotating logs and
//! stopping. Tests that need root say so and pass when not run as root.

use crate::common;

use common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn is_root() -> bool {
    brisk::sys::privileges::euid() == 0
}

/// `(uid, gid)` of the `nobody` account, if there is one.
fn nobody() -> Option<(u32, u32)> {
    brisk::sys::privileges::lookup_user("nobody")
        .ok()
        .flatten()
        .map(|a| (a.uid, a.gid))
}

/// Waits until the server logged that its workers run: the listening
/// line comes before the confinement and the threads.
fn wait_started(s: &Server) {
    s.wait_stderr_line("] started ");
}

/// The value of a `Key:` line of every thread's `/proc/PID/task/TID/status`.
fn thread_status(pid: u32, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .flatten()
    {
        let status = fs::read_to_string(t.path().join("status")).expect("status");
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}:")))
            .unwrap_or_else(|| panic!("no {key} line"));
        out.push(line.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    assert!(out.len() >= 3, "expected main, log and worker threads");
    out
}

fn write_mode(path: &Path, contents: &[u8], mode: u32) {
    write_file(path, contents);
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn refuses_to_serve_as_root_unless_told() {
    if !is_root() {
        skip("needs root");
        return;
    }
    let dir = TempDir::new("root");
    let run = |extra: &[&str]| {
        let out = Command::new(crate::common::brisk_exe())
            .args(["--listen", "127.0.0.1:0", "--access-log", "off", "--root"])
            .arg(&dir.path)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run brisk");
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // With no user configured, root serves as nobody (as nginx does).
    if let Some((uid, _)) = nobody() {
        let mut child = Command::new(crate::common::brisk_exe())
            .args(["--listen", "127.0.0.1:0", "--access-log", "off", "--root"])
            .arg(&dir.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run brisk");
        // The banner is on stderr, after the note about the user.
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
        let mut before = Vec::new();
        for line in lines.by_ref() {
            let line = line.expect("stderr");
            let done = line.contains("listening on");
            before.push(line);
            if done {
                break;
            }
        }
        assert!(
            before.last().is_some_and(|l| l.contains("listening on")),
            "did not start: {before:?}"
        );
        // The switch happens just after the listening lines are printed.
        let uid_line = wait_for("the switch away from root", || {
            let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
            let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
            (!line.contains("\t0\t")).then(|| line.to_string())
        });
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            uid_line
                .split_whitespace()
                .skip(1)
                .all(|u| u == uid.to_string()),
            "{uid_line}"
        );
        assert!(
            before.iter().any(|l| l.contains("serving as \"nobody\"")),
            "{before:?}"
        );
    }
    let (st, err) = run(&["--user", "root"]);
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(err.contains("user = \"root\" is root"), "{err}");
}

#[test]
fn switches_to_nobody_for_every_thread_and_cgi_child() {
    let (Some((uid, gid)), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    b.file("public.txt", b"for everyone");
    write_mode(&b.root().join("secret.txt"), b"root only", 0o600);
    write_mode(
        &b.base().join("cgi-bin/id.cgi"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\nid -g\n",
        0o755,
    );
    b.config("user = \"nobody\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.workers(2);
    let s = b.start();
    wait_started(&s);

    let want_uid = format!("{uid} {uid} {uid} {uid}");
    let want_gid = format!("{gid} {gid} {gid} {gid}");
    for line in thread_status(s.pid(), "Uid") {
        assert_eq!(line, want_uid);
    }
    for line in thread_status(s.pid(), "Gid") {
        assert_eq!(line, want_gid);
    }
    for line in thread_status(s.pid(), "Groups") {
        assert_eq!(line, gid.to_string());
    }
    for line in thread_status(s.pid(), "CapEff") {
        assert_eq!(line, "0000000000000000");
    }

    let r = s.get("/public.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"for everyone"[..]));
    assert_eq!(s.get("/secret.txt").status, 403);
    let r = s.get("/cgi-bin/id.cgi");
    assert_eq!(r.status, 200, "{}", s.stderr());
    assert_eq!(r.text(), format!("{uid}\n{gid}\n"));
    assert!(
        s.stderr().contains("running as user \"nobody\""),
        "{}",
        s.stderr()
    );
}

#[test]
fn chroot_serves_from_the_jail() {
    let (Some((uid, _)), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    b.file("index.html", b"in the jail");
    // The harness's root is base/root: the jail is base, the config's
    // directory.
    b.config("chroot = \".\"\nuser = \"nobody\"\n");
    let jail = b.base().canonicalize().expect("canonical base");
    // Absolute symlinks as the jail sees them (it has no /proc to ask
    // where one leads): one to the root's file is served, one out is not.
    fs::create_dir(b.root().join("sub")).unwrap();
    std::os::unix::fs::symlink("/root/index.html", b.root().join("sub/abs.html")).unwrap();
    std::os::unix::fs::symlink("/brisk.toml", b.root().join("out.toml")).unwrap();
    let s = b.start();
    wait_started(&s);
    let r = s.get("/");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"in the jail"[..]));
    assert_eq!(s.get("/etc/passwd").status, 404);
    assert_eq!(s.get("/sub/abs.html").body, b"in the jail");
    assert_eq!(s.get("/out.toml").status, 403);
    let seen = fs::read_link(format!("/proc/{}/root", s.pid())).expect("root link");
    assert_eq!(seen, jail);
    for line in thread_status(s.pid(), "Uid") {
        assert_eq!(line, format!("{uid} {uid} {uid} {uid}"));
    }
}

/// A `[[webdav]]` tree inside the jail is written there by a worker
/// running as `nobody` (it was once opened by its outside path after the
/// chroot, so the worker never started); a tree that user cannot write
/// is named in the log at start.
#[cfg(feature = "webdav")]
#[test]
fn chroot_serves_a_webdav_tree_in_the_jail_and_names_one_it_cannot_write() {
    let (Some(_), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    for (dir, mode) in [("dav", 0o777), ("closed", 0o755)] {
        fs::create_dir(base.join(dir)).unwrap();
        fs::set_permissions(base.join(dir), fs::Permissions::from_mode(mode)).unwrap();
    }
    b.config(
        "chroot = \".\"\nuser = \"nobody\"\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"dav\"\n\
         [[webdav]]\npath = \"/closed/\"\nroot = \"closed\"\n",
    );
    let s = b.start();
    wait_started(&s);
    let put = s.request(b"PUT /dav/a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(put.status, 201, "{}", s.stderr());
    assert_eq!(fs::read(base.join("dav/a.txt")).unwrap(), b"hello");
    assert_eq!(s.get("/dav/a.txt").body, b"hello");
    let log = s.stderr();
    assert!(
        log.contains("[warn] webdav[2] (path \"/closed/\"): cannot make a file in /closed as the server runs: Permission denied"),
        "{log}"
    );
    assert!(!log.contains("webdav[1] ("), "{log}");
    let closed = s.request(b"PUT /closed/a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx");
    assert_eq!(closed.status, 403);
}

/// Each WebDAV change the filesystem refuses the server (a collection
/// its user may not write in) is explained in the error log, naming the
/// file: a 403 alone left the operator guessing.
#[cfg(feature = "webdav")]
#[test]
fn a_webdav_change_the_filesystem_refuses_is_explained_in_the_log() {
    let (Some(_), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    let base = b.base().canonicalize().unwrap();
    fs::create_dir_all(base.join("dav/closed")).unwrap();
    fs::set_permissions(base.join("dav"), fs::Permissions::from_mode(0o777)).unwrap();
    fs::write(base.join("dav/a.txt"), b"a").unwrap();
    fs::write(base.join("dav/closed/old.txt"), b"old").unwrap();
    b.config("user = \"nobody\"\n[log]\nlevel = \"info\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"dav\"\n");
    let s = b.start();
    wait_started(&s);
    let closed = base.join("dav/closed");
    let why = "cannot be changed: Permission denied (os error 13) (file permissions for the user brisk runs as, a read-only mount, or the sandbox)";
    for (request, file, line) in [
        (
            &b"PUT /dav/closed/new.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"[..],
            "new.txt",
            "[warn] client 127.0.0.1: 403 for \"PUT /dav/closed/new.txt HTTP/1.1\": ",
        ),
        (
            b"MKCOL /dav/closed/c/ HTTP/1.1\r\nHost: x\r\n\r\n",
            "c",
            "[warn] webdav: MKCOL /dav/closed/c/: ",
        ),
        (
            b"DELETE /dav/closed/old.txt HTTP/1.1\r\nHost: x\r\n\r\n",
            "old.txt",
            "[warn] webdav: DELETE /dav/closed/old.txt: ",
        ),
        (
            b"COPY /dav/a.txt HTTP/1.1\r\nHost: x\r\nDestination: /dav/closed/b.txt\r\n\r\n",
            "b.txt",
            "[warn] webdav: COPY /dav/a.txt: ",
        ),
        (
            b"MOVE /dav/a.txt HTTP/1.1\r\nHost: x\r\nDestination: /dav/closed/b.txt\r\n\r\n",
            "b.txt",
            "[warn] webdav: MOVE /dav/a.txt: ",
        ),
    ] {
        let r = s.request(request);
        assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(request));
        let said = format!("{line}\"{}\": {why}", closed.join(file).display());
        s.wait_stderr_line(&said);
    }
    // (Nothing changed: the old file is there, the source too.)
    assert_eq!(fs::read(closed.join("old.txt")).unwrap(), b"old");
    assert_eq!(fs::read(base.join("dav/a.txt")).unwrap(), b"a");
}

/// A unix-socket upstream inside the jail is connected by its path as
/// seen from inside (it was connected by its outside path: 502), and
/// one outside the jail is a configuration error naming the rule.
#[cfg(feature = "upstreams")]
#[test]
fn chroot_reaches_a_unix_socket_upstream_inside_the_jail() {
    use std::io::{Read, Write};
    let (Some(_), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    let base = b.base().canonicalize().unwrap();
    fs::create_dir(base.join("run")).unwrap();
    let sock = base.join("run/app.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o777)).unwrap();
    let app = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf).unwrap();
        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\njailed")
            .unwrap();
    });
    let rule = |path: &Path| {
        format!(
            "chroot = \".\"\nuser = \"nobody\"\n[[reverse_proxy]]\npath = \"/api/\"\nto = [\"unix:{}\"]\n",
            path.display()
        )
    };
    b.config(&rule(&sock));
    let s = b.start();
    wait_started(&s);
    let r = s.request(b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(
        (r.status, r.text()),
        (200, "jailed".into()),
        "{}",
        s.stderr()
    );
    app.join().unwrap();
    // (`temp_dir`, /tmp, is outside the jail: answers are not read ahead
    // of slow clients, said once at start; no error, as before there was
    // `buffer_answer`.)
    let log = s.stderr();
    assert!(
        log.contains("answers of [[reverse_proxy]] rules cannot be read ahead of slow clients"),
        "{log}"
    );

    let dir = TempDir::new("jail");
    fs::create_dir_all(dir.path.join("jail")).expect("jail");
    let cfg = dir.path.join("b.toml");
    let text = rule(Path::new("/run/elsewhere.sock")).replace("\".\"", "\"jail\"");
    fs::write(&cfg, text).expect("config");
    let jail = dir.path.join("jail");
    let (st, _out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--root",
        jail.to_str().expect("utf-8"),
        "--check-config",
    ]);
    assert!(!st.success());
    assert!(
        err.contains(
            "b.toml:3: reverse_proxy[1].to: /run/elsewhere.sock is outside the chroot directory"
        ),
        "{err}"
    );
}

#[test]
fn chroot_must_contain_the_root() {
    let dir = TempDir::new("jail");
    fs::create_dir_all(dir.path.join("jail")).expect("jail");
    let cfg = dir.path.join("b.toml");
    fs::write(&cfg, "chroot = \"jail\"\n").expect("config");
    let (st, _out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--root",
        dir.path.to_str().expect("utf-8"),
        "--check-config",
    ]);
    assert!(!st.success());
    assert!(
        err.contains("--root: ") && err.contains("is outside the chroot directory"),
        "{err}"
    );
}

#[test]
fn sandboxed_server_serves_logs_rotates_and_stops_cleanly() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let big = pattern(3 << 20);
    b.file("big.bin", &big);
    b.dir("d");
    b.file("d/x.txt", b"x");
    b.config("[static]\nautoindex = true\n");
    b.access_log();
    b.workers(2);
    let mut s = b.start();
    wait_started(&s);
    let err = s.stderr();
    let landlock = brisk::sys::sandbox::landlock_abi().is_some();
    if landlock {
        assert!(err.contains("sandbox: Landlock (ABI"), "{err}");
        // The access log sits next to the root: writable, with a warning.
        assert!(err.contains("the log directory"), "{err}");
    }
    assert!(err.contains("sandbox: seccomp on"), "{err}");
    for line in thread_status(s.pid(), "Seccomp") {
        assert_eq!(line, "2", "every thread filtered");
    }
    for line in thread_status(s.pid(), "NoNewPrivs") {
        assert_eq!(line, "1");
    }

    assert_eq!(s.get("/a.txt").body, b"AAAA");
    let r = s.get("/big.bin");
    assert_eq!(r.status, 200);
    assert!(r.body == big, "large body by sendfile");
    assert_eq!(
        s.get_with("/big.bin", "Range: bytes=10-19\r\n").body,
        &big[10..20]
    );
    assert!(s.get("/d/").text().contains("x.txt"));
    assert_eq!(s.get("/nope").status, 404);
    assert_eq!(s.get("/etc/passwd").status, 404);
    s.wait_access_line(|l| find(l, b"/a.txt").is_some());

    s.rotate_access_log();
    assert_eq!(s.get("/a.txt?after").status, 200);
    s.wait_access_line(|l| find(l, b"/a.txt?after").is_some());

    s.signal(libc::SIGTERM);
    let st = s.wait_exit(Duration::from_secs(10)).expect("stops");
    assert!(st.success(), "exit status {st:?}");
    let err = s.stderr();
    assert!(err.contains("[info] stopped"), "{err}");
    assert!(
        !err.contains("ermission denied") && !err.contains("not permitted"),
        "{err}"
    );
}

/// A root named with `..` (a config's `root = "../site"`) reloads under
/// the sandbox: realpath(3) checks the directory a `..` leaves with
/// access(2), which the filter refused, so every SIGHUP was.
#[test]
fn a_root_named_through_dot_dot_reloads_in_the_sandbox() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let conf = b.base().join("conf");
    fs::create_dir_all(&conf).unwrap();
    b.cwd(&conf).arg("--root").arg("../root");
    let s = b.start();
    wait_started(&s);
    assert!(s.stderr().contains("sandbox: seccomp on"), "{}", s.stderr());
    assert_eq!(s.get("/a.txt").body, b"AAAA");
    s.signal(libc::SIGHUP);
    let line = s.wait_stderr_line("SIGHUP");
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(s.get("/a.txt").body, b"AAAA");
}

/// A configuration file that names no root (the default: the directory
/// brisk started in) reloads under the sandbox: the root was `.` on a
/// reload, which realpath(3) resolves with getcwd(2), which the filter
/// refuses, so every SIGHUP was.
#[test]
fn the_default_root_reloads_in_the_sandbox() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.root_by_default().config("server_header = \"one\"\n");
    let s = b.start();
    wait_started(&s);
    assert!(s.stderr().contains("sandbox: seccomp on"), "{}", s.stderr());
    assert_eq!(s.get("/a.txt").header("Server"), Some("one"));
    fs::write(s.base.path.join("brisk.toml"), "server_header = \"two\"\n").unwrap();
    s.signal(libc::SIGHUP);
    let line = s.wait_stderr_line("SIGHUP");
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(s.get("/a.txt").header("Server"), Some("two"));
    assert_eq!(s.get("/a.txt").body, b"AAAA");
}

#[test]
fn no_sandbox_flag_turns_it_off() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    b.arg("--no-sandbox");
    let s = b.start();
    wait_started(&s);
    assert_eq!(s.get("/a.txt").body, b"A");
    for line in thread_status(s.pid(), "Seccomp") {
        assert_eq!(line, "0");
    }
    assert!(!s.stderr().contains("sandbox:"), "{}", s.stderr());
}

#[test]
fn chroot_reopens_logs_by_their_path_inside_the_jail() {
    if !is_root() {
        skip("needs root");
        return;
    }
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    b.config("chroot = \".\"\n");
    b.access_log();
    let s = b.start();
    wait_started(&s);
    assert_eq!(s.get("/a.txt?before").status, 200);
    s.wait_access_line(|l| find(l, b"?before").is_some());
    s.rotate_access_log();
    assert_eq!(s.get("/a.txt?after").status, 200);
    s.wait_access_line(|l| find(l, b"?after").is_some());
}

#[test]
fn sandboxed_auth_reads_its_htpasswd_and_sees_it_replaced() {
    let mut b = Builder::new();
    b.file("private/a.txt", b"secret");
    write_file(&b.base().join("auth/htpasswd"), b"ann:first\n");
    b.config(
        "[limits]\nauth_failures = 0\n[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"auth/htpasswd\"\nallow_plaintext = true\n",
    );
    let s = b.start();
    wait_started(&s);
    // "ann:first" and "ann:second" in base64.
    let first = "Authorization: Basic YW5uOmZpcnN0\r\n";
    let second = "Authorization: Basic YW5uOnNlY29uZA==\r\n";
    assert_eq!(s.get("/private/a.txt").status, 401);
    assert_eq!(s.get_with("/private/a.txt", first).body, b"secret");
    // Replaced the way editors and tools do it: a new file renamed over.
    // (No failure limit: the polling below fails until the reload.)
    let dir = s.base.path.join("auth");
    fs::write(dir.join("htpasswd.new"), b"ann:second\n").expect("write");
    fs::rename(dir.join("htpasswd.new"), dir.join("htpasswd")).expect("rename");
    wait_until("the new htpasswd to be read", || {
        s.get_with("/private/a.txt", second).status == 200
    });
    assert_eq!(s.get_with("/private/a.txt", first).status, 401);
}

/// The children of `pid` named `comm`.
fn children_named(pid: u32, comm: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ..."
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        if name == comm && ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

#[test]
fn with_cgi_the_server_keeps_seccomp_and_programs_start_from_the_launcher() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    write_mode(
        &b.base().join("cgi-bin/sys.cgi"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\ntest -r /etc/hostname && echo system readable\n",
        0o755,
    );
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.workers(2);
    let mut s = b.start();
    wait_started(&s);
    let err = s.stderr();
    assert!(err.contains("sandbox: seccomp on"), "{err}");
    assert!(!err.contains("relaxed for CGI"), "{err}");
    for line in thread_status(s.pid(), "Seccomp") {
        assert_eq!(line, "2", "every server thread filtered");
    }
    let launchers = children_named(s.pid(), "brisk-cgi");
    assert_eq!(launchers.len(), 1, "one launcher");
    let launcher = launchers[0];
    let status = fs::read_to_string(format!("/proc/{launcher}/status")).expect("status");
    assert!(status.contains("\nSeccomp:\t0\n"), "{status}");
    assert!(status.contains("\nNoNewPrivs:\t1\n"), "{status}");

    // Programs run, and see the system directories; static files too.
    for _ in 0..3 {
        let r = s.get("/cgi-bin/sys.cgi");
        assert_eq!(r.status, 200, "{}", s.stderr());
        assert_eq!(r.text(), "system readable\n");
    }
    assert_eq!(s.get("/a.txt").body, b"AAAA");

    // The launcher leaves with the server.
    s.signal(libc::SIGTERM);
    let st = s.wait_exit(Duration::from_secs(10)).expect("stops");
    assert!(st.success(), "exit status {st:?}");
    wait_until("the launcher to exit", || {
        !Path::new(&format!("/proc/{launcher}")).exists()
    });
    let err = s.stderr();
    assert!(!err.contains("not permitted"), "{err}");
}

/// A CGI program runs as the user the server serves as, so without
/// Landlock's signal scope (ABI 6) it could stop, freeze or kill the
/// server with one kill(2); it may still signal the processes it starts.
#[test]
fn cgi_programs_cannot_signal_the_server_but_signal_their_own_children() {
    if brisk::sys::sandbox::landlock_abi().is_none_or(|abi| abi < 6) {
        skip("needs Landlock ABI 6 (Linux 6.12)");
        return;
    }
    let mut b = Builder::new();
    // The server is the nearest ancestor named brisk (the launcher,
    // brisk-cgi, is between).
    write_mode(
        &b.base().join("cgi-bin/kill.cgi"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\n\
p=$PPID\n\
while [ \"$p\" -gt 1 ] && [ \"$(cat /proc/$p/comm)\" != brisk ]; do p=$(cut -d' ' -f4 /proc/$p/stat); done\n\
if kill -0 \"$p\" 2>/dev/null; then echo server signalled; else echo server refused; fi\n\
sleep 30 & c=$!\n\
if kill \"$c\"; then echo child signalled; else echo child refused; fi\n",
        0o755,
    );
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    let s = b.start();
    wait_started(&s);
    let r = s.get("/cgi-bin/kill.cgi");
    assert_eq!(r.status, 200, "{}", s.stderr());
    assert_eq!(r.text(), "server refused\nchild signalled\n");
}

#[test]
fn a_root_the_serving_user_cannot_reach_by_path_is_still_confined() {
    let (Some(_), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    b.file("a.txt", b"served");
    b.config("user = \"nobody\"\n");
    // The root (base/root, 0755) lies in a directory only root may enter,
    // as a root under /root would: nobody cannot open it by its path.
    fs::set_permissions(b.base(), fs::Permissions::from_mode(0o700)).expect("chmod");
    let s = b.start();
    wait_started(&s);
    // Opened before the switch, the root serves by descriptor…
    let r = s.get("/a.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"served"[..]));
    // …and Landlock is on, its rules opened before the switch too.
    let err = s.stderr();
    assert!(!err.contains("unconfined"), "{err}");
    if brisk::sys::sandbox::landlock_abi().is_some() {
        assert!(err.contains("sandbox: Landlock (ABI"), "{err}");
    }
    assert!(err.contains("sandbox: seccomp on"), "{err}");
}

/// Runs `f` on a thread of its own that is confined by as many Landlock
/// layers as the kernel stacks (16, each allowing everything), so that
/// brisk, started from it, cannot add its own.
fn with_landlock_layers_used_up<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use brisk::sys::sandbox::{no_new_privs, Extra, RulePath, Ruleset};
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                no_new_privs().expect("no_new_privs");
                let everything = RulePath::open(Path::new("/")).unwrap().unwrap();
                for _ in 0..16 {
                    let mut rules = Ruleset::new(Extra::default()).unwrap().unwrap();
                    rules.allow(&everything, u64::MAX).unwrap();
                    rules.restrict_self().expect("a Landlock layer");
                }
                f()
            })
            .join()
            .expect("thread")
    })
}

#[test]
fn a_sandbox_that_cannot_be_applied_stops_the_start_up() {
    if brisk::sys::sandbox::landlock_abi().is_none() {
        skip("no Landlock on this kernel");
        return;
    }
    let dir = TempDir::new("layers");
    let root = dir.path.display().to_string();
    let (status, out, err) = with_landlock_layers_used_up(|| {
        run_brisk(&[
            "--listen",
            "127.0.0.1:0",
            "--access-log",
            "off",
            "--root",
            &root,
        ])
    });
    assert_eq!(status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("sandbox: cannot enforce the Landlock rules")
            && err.contains("set sandbox = false (or --no-sandbox)"),
        "{err}"
    );
    // The way out works.
    let (mut child, _) = with_landlock_layers_used_up(|| {
        spawn_brisk(
            &[
                "--listen".to_string(),
                "127.0.0.1:0".to_string(),
                "--access-log".to_string(),
                "off".to_string(),
                "--root".to_string(),
                root.clone(),
                "--no-sandbox".to_string(),
            ],
            &dir.path.join("stderr"),
        )
    });
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn symlinks_outside_the_root_need_the_sandbox_off() {
    let mut b = Builder::new();
    write_file(&b.base().join("outside/o.txt"), b"outside");
    std::os::unix::fs::symlink(b.base().join("outside/o.txt"), b.root().join("o.txt"))
        .expect("symlink");
    let cfg = b.base().join("links.toml");
    fs::write(&cfg, "[static]\nsymlinks_outside_root = true\n").expect("config");
    let root = b.root().display().to_string();
    let cfg = cfg.display().to_string();
    // With the sandbox on, the combination is refused at start…
    let (status, _, err) = run_brisk(&["--config", &cfg, "--root", &root]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "links.toml:2: static.symlinks_outside_root: true cannot work with the sandbox on"
        ) && err.contains("set sandbox = false (or --no-sandbox) to follow them"),
        "{err}"
    );
    // …and without it, the links are followed.
    b.config("[static]\nsymlinks_outside_root = true\n");
    b.arg("--no-sandbox");
    let s = b.start();
    let r = s.get("/o.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"outside"[..]));
}

#[test]
fn numeric_user_and_group_without_entries_are_served_as() {
    if !is_root() {
        skip("needs root");
        return;
    }
    // Ids that the user and group databases do not know, as in a
    // container image without /etc/passwd entries.
    let uid = (54_321..60_000)
        .find(|&id| matches!(brisk::sys::privileges::lookup_uid(id), Ok(None)))
        .expect("a free user id");
    let gid = uid + 1;
    let mut b = Builder::new();
    b.file("public.txt", b"for everyone");
    b.arg("--user").arg(&uid.to_string());
    // Without a group, a user id with no entry has no primary group.
    let dir = TempDir::new("numeric");
    let root = dir.path.to_str().expect("utf-8");
    let (st, _, err) = run_brisk(&["--user", &uid.to_string(), "--root", root, "--check-config"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "brisk: --user: user id {uid} has no entry in the user database, so no primary group; set group = \"GID\" (or --group GID) too\n"
        )
    );
    let (st, out, err) = run_brisk(&[
        "--user",
        &uid.to_string(),
        "--group",
        &gid.to_string(),
        "--root",
        root,
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains(&format!(
            "user: {uid} (uid {uid})\ngroup: {gid} (gid {gid})\n"
        )) || !cfg!(feature = "ops"),
        "{out}"
    );

    b.arg("--group").arg(&gid.to_string());
    let s = b.start();
    wait_started(&s);
    for line in thread_status(s.pid(), "Uid") {
        assert_eq!(line, format!("{uid} {uid} {uid} {uid}"));
    }
    for line in thread_status(s.pid(), "Gid") {
        assert_eq!(line, format!("{gid} {gid} {gid} {gid}"));
    }
    let r = s.get("/public.txt");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"for everyone"[..]));
    assert!(
        s.stderr()
            .contains(&format!("running as user \"{uid}\" (uid {uid}, gid {gid})")),
        "{}",
        s.stderr()
    );
}

#[test]
fn numeric_user_with_an_entry_takes_its_primary_group() {
    let Some((uid, gid)) = nobody() else {
        skip("no nobody user");
        return;
    };
    let dir = TempDir::new("numeric");
    let (st, out, err) = run_brisk(&[
        "--user",
        &uid.to_string(),
        "--root",
        dir.path.to_str().expect("utf-8"),
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains(&format!(
            "user: {uid} (uid {uid})\ngroup: gid {gid} (the user's primary group)\n"
        )) || !cfg!(feature = "ops"),
        "{out}"
    );
    // (uid_t)-1 means "no change" to setuid: never an id.
    let (st, _, err) = run_brisk(&["--user", "4294967295", "--check-config"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("no user named \"4294967295\""), "{err}");
}

/// A `temp_dir` the serving user cannot write stops the start, the
/// error naming the line that set it (it said only `temp_dir:`).
#[test]
fn a_temp_dir_the_serving_user_cannot_write_is_named_by_its_line() {
    let (Some(_), true) = (nobody(), is_root()) else {
        skip("needs root and a nobody user");
        return;
    };
    let dir = TempDir::new("tempdir");
    let closed = dir.path.join("closed");
    fs::create_dir_all(dir.path.join("root")).unwrap();
    fs::create_dir_all(dir.path.join("cgi")).unwrap();
    fs::create_dir(&closed).unwrap();
    fs::set_permissions(&closed, fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.path.join("site.toml");
    fs::write(
        &cfg,
        format!(
            "listen = [\"127.0.0.1:0\"]\nroot = \"root\"\nuser = \"nobody\"\ntemp_dir = \"{}\"\n\
             [[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi\"\n",
            closed.display()
        ),
    )
    .unwrap();
    let (status, _, err) = run_brisk(&["--config", cfg.to_str().unwrap()]);
    assert!(!status.success());
    let want = format!(
        "brisk: {}:4: temp_dir: cannot make temporary files in {} as the server runs (for request bodies held for CGI programs): Permission denied (os error 13)",
        cfg.display(),
        closed.canonicalize().unwrap().display()
    );
    assert!(err.lines().any(|l| l == want), "{err}");
}
