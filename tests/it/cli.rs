//! The command line: --version, --help, --check-config, flags over the file.

use crate::common;

use common::*;
use std::fs;

#[test]
fn version() {
    let (st, out, err) = run_brisk(&["--version"]);
    assert!(st.success(), "{st:?} {err}");
    assert_eq!(out, "brisk 0.1.0\n");
}

#[test]
fn help() {
    let (st, out, err) = run_brisk(&["--help"]);
    assert!(st.success(), "{st:?} {err}");
    for flag in [
        "--config",
        "--listen",
        "--root",
        "--workers",
        "--check-config",
        "--access-log",
        "--error-log",
        "--port",
        "--autoindex",
    ] {
        assert!(out.contains(flag), "--help does not mention {flag}:\n{out}");
    }
    // Every option is indented as the others: a flag at the start of a line
    // is one whose indentation a string continuation ate.
    let options = out.split("Options:\n").nth(1).expect("an Options section");
    for line in options.lines().take_while(|l| !l.is_empty()) {
        assert!(
            line.starts_with("  --") || line.starts_with(&" ".repeat(23)),
            "a misaligned line in --help: {line:?}\n{out}"
        );
    }
}

#[test]
fn unknown_option_fails() {
    let (st, out, err) = run_brisk(&["--bogus"]);
    assert!(!st.success(), "{st:?}");
    assert!(err.contains("--bogus"), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn check_config_reports_file_line_and_key() {
    let dir = TempDir::new("cfg");
    let root = dir.path.join("root");
    fs::create_dir(&root).expect("root");
    let cfg = dir.path.join("bad-brisk.toml");
    fs::write(
        &cfg,
        "# a comment\nworkers = 1\n\n[static]\ndotfiles = \"maybe\"\n",
    )
    .expect("write");
    let (st, _out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--root",
        root.to_str().expect("utf-8"),
        "--check-config",
    ]);
    assert!(!st.success(), "{st:?}");
    assert!(err.contains("bad-brisk.toml"), "no file name: {err}");
    assert!(err.contains("static.dotfiles"), "no key: {err}");
    assert!(
        err.contains(":5:") || err.contains("line 5"),
        "no line number: {err}"
    );
    assert!(err.contains("maybe"), "does not say what it got: {err}");
}

#[test]
fn check_config_accepts_a_good_file() {
    let dir = TempDir::new("cfg");
    let root = dir.path.join("root");
    fs::create_dir(&root).expect("root");
    let cfg = dir.path.join("brisk.toml");
    fs::write(
        &cfg,
        "listen = [\"127.0.0.1:0\"]\nroot = \"root\"\nworkers = 1\n\n\
         [static]\ndotfiles = \"ignore\"\nindex = [\"home.htm\"]\n\n\
         [limits]\nmax_body = \"1MiB\"\n\n[timeouts]\nheader = \"5s\"\n\n\
         [[headers]]\npattern = \"*.css\"\nset = { \"X-A\" = \"b\" }\n",
    )
    .expect("write");
    let (st, _out, err) = run_brisk(&["--config", cfg.to_str().expect("utf-8"), "--check-config"]);
    assert!(st.success(), "{st:?} {err}");
}

#[test]
fn bad_config_refuses_to_start() {
    let dir = TempDir::new("cfg");
    let cfg = dir.path.join("brisk.toml");
    fs::write(&cfg, "[timeouts]\nheader = \"soon\"\n").expect("write");
    let (st, _out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(!st.success(), "{st:?}");
    assert!(err.contains("timeouts.header"), "{err}");
    assert!(err.contains("brisk.toml"), "{err}");
}

#[test]
fn flags_override_the_file() {
    // A port that is free now; the config names it, the flag another.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
    let file_port = probe.local_addr().expect("addr").port();
    drop(probe);
    let mut b = Builder::new();
    b.file("which.txt", b"flag root");
    write_file(&b.base().join("fileroot/which.txt"), b"file root");
    b.config(&format!(
        "listen = [\"127.0.0.1:{file_port}\"]\nroot = \"fileroot\"\n"
    ));
    let s = b.start();
    assert_eq!(s.addrs.len(), 1, "{:?}", s.addrs);
    assert_ne!(s.port, file_port);
    assert_eq!(s.get("/which.txt").body, b"flag root");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", file_port)).is_err(),
        "the config's listen address is served despite --listen"
    );
}

#[test]
fn config_file_values_apply_without_flags() {
    let dir = TempDir::new("cfg");
    let root = dir.path.join("public");
    write_file(&root.join("x.txt"), b"from config root");
    let cfg = dir.path.join("brisk.toml");
    fs::write(
        &cfg,
        "listen = \"127.0.0.1:0\"\nroot = \"public\"\nworkers = 1\n[log]\naccess = \"off\"\n",
    )
    .expect("write");
    let (child, addrs) = spawn_brisk(
        &["--config".to_string(), cfg.display().to_string()],
        &dir.path.join("stderr"),
    );
    let _guard = KillOnDrop(child);
    let mut c = Client::connect(addrs[0]);
    c.send(b"GET /x.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.body, b"from config root");
}

#[test]
fn missing_root_is_an_error() {
    let dir = TempDir::new("cfg");
    let missing = dir.path.join("nope");
    let (st, _out, err) = run_brisk(&[
        "--root",
        missing.to_str().expect("utf-8"),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(!st.success());
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn port_in_use_is_an_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let dir = TempDir::new("cfg");
    let addr = format!("127.0.0.1:{port}");
    let (st, _out, err) = run_brisk(&[
        "--root",
        dir.path.to_str().expect("utf-8"),
        "--listen",
        &addr,
        "--access-log",
        "off",
    ]);
    assert!(!st.success(), "started on a port in use");
    assert!(err.contains(&port.to_string()), "{err}");
    drop(taken);
}

/// A listen address that cannot be bound is named with where it was
/// configured, as configuration errors are: the file, line and key (the
/// item's own line in a list), or the flag.
#[test]
fn a_port_in_use_names_where_it_was_configured() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let dir = TempDir::new("cfg");
    let cfg = dir.path.join("site.toml");
    std::fs::write(
        &cfg,
        format!(
            "root = \"{}\"\n# (the first address is free)\nlisten = [\n  \"127.0.0.1:0\",\n  \"127.0.0.1:{port}\",\n]\n[log]\naccess = \"off\"\n",
            dir.path.display()
        ),
    )
    .expect("write");
    let cfg = cfg.to_str().expect("utf-8");
    let (st, _out, err) = run_brisk(&["--config", cfg]);
    assert!(!st.success(), "started on a port in use");
    let line = format!("{cfg}:5: listen: cannot listen on 127.0.0.1:{port}: ");
    assert!(err.contains(&line), "{err}");
    let addr = format!("127.0.0.1:{port}");
    let (st, _out, err) = run_brisk(&["--config", cfg, "--listen", &addr]);
    assert!(!st.success(), "started on a port in use");
    let line = format!("--listen: cannot listen on {addr}: ");
    assert!(err.contains(&line), "{err}");
    drop(taken);
}

#[test]
fn daemon_detaches_writes_its_pid_and_stops_on_sigterm() {
    let dir = TempDir::new("daemon");
    let root = dir.path.join("root");
    write_file(&root.join("hello.txt"), b"from the daemon");
    let pid_file = dir.path.join("brisk.pid");
    let error_log = dir.path.join("logs/error.log");
    fs::create_dir(dir.path.join("logs")).expect("logs");
    let out = std::process::Command::new(crate::common::brisk_exe())
        .args(common::root_args())
        .args(["--daemon", "--listen", "127.0.0.1:0", "--access-log", "off"])
        .args(["--workers", "1", "--error-log"])
        .arg(&error_log)
        .arg("--root")
        .arg(&root)
        .arg("--pid-file")
        .arg(&pid_file)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run brisk --daemon");
    // The foreground process returns once the daemon serves, its pid
    // file written (as systemd's Type=forking expects).
    assert!(out.status.success(), "{out:?}");
    let written = std::fs::read_to_string(&pid_file).expect("the pid file, at once");
    assert!(written.trim().parse::<i32>().is_ok(), "{written:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let addr: std::net::SocketAddr = stderr
        .lines()
        .find_map(|l| l.strip_prefix("brisk: listening on http://"))
        .and_then(|a| a.strip_suffix('/'))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no listening line in {stderr:?}"));
    let pid: i32 = wait_for("the daemon's pid file", || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    });
    // A daemon is in a session of its own, not the test's.
    let session = |stat: &str| -> String {
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        fields.get(3).map(|s| s.to_string()).unwrap_or_default()
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("daemon runs");
    let ours = std::fs::read_to_string("/proc/self/stat").expect("own stat");
    assert_ne!(
        session(&stat),
        session(&ours),
        "daemon left the session: {stat}"
    );
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    use std::io::{Read, Write};
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = Vec::new();
    c.read_to_end(&mut resp).unwrap();
    assert!(
        resp.ends_with(b"\r\n\r\nfrom the daemon"),
        "{}",
        String::from_utf8_lossy(&resp)
    );
    let st = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success());
    wait_until("the daemon to stop", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    assert!(!pid_file.exists(), "pid file removed on exit");
    let log = fs::read_to_string(&error_log).unwrap_or_default();
    assert!(log.contains("] started 1 worker\n"), "{log}");
    assert!(log.contains("] stopped\n"), "{log}");
}

/// Runs `brisk --daemon` on a site in `dir` with `args`, expecting the
/// daemon to fail after it detached: `brisk --daemon` exits 1 rather
/// than 0 with nothing serving; returns what it printed.
fn failed_daemon(dir: &TempDir, args: &[&std::ffi::OsStr]) -> String {
    let root = dir.path.join("root");
    write_file(&root.join("hello.txt"), b"x");
    let out = std::process::Command::new(crate::common::brisk_exe())
        .args(common::root_args())
        .args(["--daemon", "--listen", "127.0.0.1:0", "--root"])
        .arg(&root)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run brisk --daemon");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A daemon that fails after it detached (here: its pid file cannot be
/// written, in /proc) makes `brisk --daemon` fail too, and says why.
#[test]
fn a_daemon_that_fails_to_start_makes_its_starter_fail() {
    let dir = TempDir::new("daemon-fails");
    let args = ["--access-log", "off", "--error-log", "off", "--pid-file"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    args.push("/proc/brisk-test.pid".as_ref());
    let stderr = failed_daemon(&dir, &args);
    // The daemon's reason, handed back to the process that started it.
    assert!(
        stderr.contains("brisk: cannot write pid file /proc/brisk-test.pid: "),
        "{stderr}"
    );
}

/// A daemon that fails after it wrote its pid file (here: the access log
/// cannot be created, in /proc) hands its reason back to `brisk
/// --daemon`, which prints it (the daemon's stderr is /dev/null, and its
/// error log may not be open yet), and removes its pid file.
#[test]
fn a_daemon_that_fails_after_its_pid_file_says_why_and_leaves_none() {
    let dir = TempDir::new("daemon-says-why");
    let pid_file = dir.path.join("brisk.pid");
    let error_log = dir.path.join("error.log");
    let stderr = failed_daemon(
        &dir,
        &[
            "--access-log".as_ref(),
            "/proc/brisk-test-access.log".as_ref(),
            "--error-log".as_ref(),
            error_log.as_os_str(),
            "--pid-file".as_ref(),
            pid_file.as_os_str(),
        ],
    );
    let why = "brisk: --access-log: cannot open the access log /proc/brisk-test-access.log: ";
    assert!(stderr.contains(why), "{stderr}");
    assert!(
        !stderr.contains("the daemon stopped before it served"),
        "{stderr}"
    );
    assert!(!pid_file.exists(), "the failed daemon's pid file is left");
}

#[test]
fn a_daemon_refuses_logs_that_would_go_to_dev_null() {
    let dir = TempDir::new("daemon-logs");
    let root = dir.path.to_str().expect("utf-8");
    let base = ["--daemon", "--listen", "127.0.0.1:0", "--root", root];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        run_brisk(&args)
    };
    let (st, out, err) = run(&[]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "brisk: --daemon: log.access (default \"-\") sends the access log to standard output, \
         which a daemon points at /dev/null: every line would be lost; set [log] access to a \
         file or \"off\" (or --access-log PATH|off)\n"
    );
    let (st, _, err) = run(&["--access-log", "off", "--check-config"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("log.error (default \"-\") sends the error log to standard error")
            && err.contains("(or --error-log PATH|off)"),
        "{err}"
    );
    let (st, _, err) = run(&["--access-log", "off", "--error-log", "-", "--check-config"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(err.contains("brisk: --daemon: --error-log sends"), "{err}");
    // An error log with nothing to write is no loss.
    let (st, out, err) = run(&[
        "--access-log",
        "off",
        "--log-level",
        "off",
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    // (The report is the feature `ops`'s.)
    assert!(
        out.contains("daemon: yes") || !cfg!(feature = "ops"),
        "{out}"
    );
    // From a file: both places are named.
    let cfg = dir.path.join("site.toml");
    fs::write(
        &cfg,
        "daemon = true\n\n[log]\naccess = \"off\"\nerror = \"stderr\"\n",
    )
    .expect("write");
    let (st, _, err) = run_brisk(&["--config", cfg.to_str().expect("utf-8"), "--check-config"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains("site.toml:1: daemon: ") && err.contains("site.toml:5: log.error sends"),
        "{err}"
    );
}

#[test]
fn error_log_flag_sends_the_error_log_to_a_file_or_nowhere() {
    let mut b = Builder::new();
    let log = b.base().join("error.log");
    b.arg("--error-log").arg(log.to_str().expect("utf-8"));
    let s = b.start();
    wait_until("the error log file", || {
        fs::read_to_string(&log).is_ok_and(|l| l.contains("] started 1 worker\n"))
    });
    let err = s.stderr();
    assert!(
        err.lines().all(|l| l.starts_with("brisk: ")),
        "only the banner on stderr: {err}"
    );
    drop(s);

    let mut b = Builder::new();
    b.arg("--error-log=off").arg("--workers").arg("1");
    let s = b.start();
    s.get("/");
    assert!(
        s.stderr().lines().all(|l| l.starts_with("brisk: ")),
        "{}",
        s.stderr()
    );
}

#[test]
fn banner_goes_to_stderr_so_a_json_access_log_on_stdout_is_only_json() {
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    b.access_log_from_config()
        .config("[log]\naccess = \"-\"\nformat = \"json\"\n");
    let s = b.start();
    for path in ["/a.txt", "/missing"] {
        s.get(path);
    }
    wait_until("two access log lines on stdout", || {
        s.stdout().lines().count() >= 2
    });
    let out = s.stdout();
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line {line:?} is not JSON ({e}); stdout: {out:?}"));
        assert!(v.get("status").is_some(), "{line}");
    }
    let err = s.stderr();
    let banner: Vec<&str> = err.lines().filter(|l| l.starts_with("brisk: ")).collect();
    assert_eq!(
        banner,
        [
            format!(
                "brisk: serving {}",
                s.root.canonicalize().unwrap().display()
            ),
            format!("brisk: listening on http://{}/", s.addr()),
        ],
        "{err}"
    );
    wait_until("the started line", || s.stderr().contains("] started "));
    assert!(
        s.stderr()
            .lines()
            .any(|l| l.ends_with("] started 1 worker")),
        "{}",
        s.stderr()
    );
}

/// Runs brisk with `args` and its stdout a pipe whose reader has already
/// gone, as in `brisk --help | true`; returns (status, stderr).
fn run_into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let dir = TempDir::new("epipe");
    let err_path = dir.path.join("err");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = std::process::Command::new(crate::common::brisk_exe())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(fs::File::create(&err_path).expect("err"))
        .spawn()
        .expect("spawn brisk");
    let status = wait_exit(&mut child, WAIT_LIMIT)
        .unwrap_or_else(|| panic!("brisk {args:?} did not exit within {WAIT_LIMIT:?}"));
    (status, fs::read_to_string(&err_path).unwrap_or_default())
}

#[test]
fn help_version_and_check_config_survive_a_reader_that_left() {
    let dir = TempDir::new("epipe-root");
    let root = dir.path.to_str().expect("utf-8");
    for args in [
        &["--help"][..],
        &["--version"],
        &["--check-config", "--root", root],
    ] {
        let (st, err) = run_into_closed_pipe(args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(st.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

#[test]
fn help_to_a_full_disk_is_an_error() {
    if !std::path::Path::new("/dev/full").exists() {
        skip("no /dev/full");
        return;
    }
    let dir = TempDir::new("full");
    let err_path = dir.path.join("err");
    let st = std::process::Command::new(crate::common::brisk_exe())
        .arg("--help")
        .stdout(
            fs::File::options()
                .write(true)
                .open("/dev/full")
                .expect("full"),
        )
        .stderr(fs::File::create(&err_path).expect("err"))
        .status()
        .expect("run");
    let err = fs::read_to_string(&err_path).unwrap_or_default();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.starts_with("brisk: cannot write to standard output: ") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_stdout_access_log_whose_reader_left_does_not_stop_the_server() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut b = Builder::new();
    b.file("a.txt", b"still here");
    b.access_log_from_config()
        .config("[log]\naccess = \"-\"\n")
        .stdout(writer.into());
    let s = b.start();
    for _ in 0..3 {
        assert_eq!(s.get("/a.txt").body, b"still here");
    }
    wait_until("the log's note", || s.stderr().contains("went away"));
    let err = s.stderr();
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("[error] the reader of the access log (standard output) went away"),
        "{err}"
    );
    assert_eq!(s.get("/a.txt").body, b"still here");
}

#[test]
fn license_file_matches_cargo_toml() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest.lines().any(|l| l == "license = \"MIT\""),
        "{manifest}"
    );
    let license = fs::read_to_string(dir.join("LICENSE")).expect("a LICENSE file");
    assert!(license.starts_with("MIT License\n\nCopyright (c) 2026 the brisk developers\n"));
    assert!(license.contains("THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND"));
}

/// The server's stderr once its workers run.
fn stderr_when_started(s: &Server) -> String {
    wait_until("the started line", || s.stderr().contains("] started "));
    s.stderr()
}

#[test]
fn a_root_without_an_index_gets_a_hint_and_autoindex_lists_it() {
    let hint = |root: &std::path::Path| {
        format!(
            "[info] no index.html in {} and directory listings are off, so / answers 403 Forbidden: \
             add an index.html, or list directories with --autoindex (autoindex = true in [static])\n",
            root.canonicalize().unwrap().display()
        )
    };
    let mut b = Builder::new();
    b.file("a.txt", b"A");
    let s = b.start();
    let err = stderr_when_started(&s);
    assert!(err.contains(&hint(&s.root)), "{err}");
    assert_eq!(s.get("/").status, 403);
    drop(s);

    let mut b = Builder::new();
    b.file("a.txt", b"A").arg("--autoindex");
    let s = b.start();
    let err = stderr_when_started(&s);
    assert!(!err.contains("no index.html"), "{err}");
    let r = s.get("/");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<a href=\"a.txt\">"), "{}", r.text());
    drop(s);

    let mut b = Builder::new();
    b.file("index.html", b"home");
    let s = b.start();
    let err = stderr_when_started(&s);
    assert!(!err.contains("no index.html"), "{err}");
    assert_eq!(s.get("/").body, b"home");
    drop(s);

    // Several index names, none there.
    let mut b = Builder::new();
    b.config("[static]\nindex = [\"index.htm\", \"default.htm\"]\n");
    let s = b.start();
    let err = stderr_when_started(&s);
    assert!(
        err.contains("[info] none of index.htm, default.htm in ")
            && err.contains(": add one of them, or list directories with --autoindex"),
        "{err}"
    );
}

#[test]
fn port_flag_sets_the_port_of_every_listen_address() {
    let dir = TempDir::new("port");
    let root = dir.path.join("root");
    write_file(&root.join("p.txt"), b"on the port");
    let cfg = dir.path.join("site.toml");
    fs::write(
        &cfg,
        "listen = [\"127.0.0.1:1\", \"[::1]:2\", \"127.0.0.1:3\"]\nroot = \"root\"\n",
    )
    .expect("write");
    let (st, out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--port",
        "9999",
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains("\nlisten: 127.0.0.1:9999, [::1]:9999\n") || !cfg!(feature = "ops"),
        "{out}"
    );

    // Without a file: the default address, on that port.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
    let port = probe.local_addr().expect("addr").port();
    drop(probe);
    let args: Vec<String> = ["--port", &port.to_string(), "--access-log", "off"]
        .iter()
        .map(|a| a.to_string())
        .chain(["--root".to_string(), root.display().to_string()])
        .collect();
    let (child, addrs) = spawn_brisk(&args, &dir.path.join("stderr"));
    let _guard = KillOnDrop(child);
    assert_eq!(addrs, [std::net::SocketAddr::from(([127, 0, 0, 1], port))]);
    let mut c = Client::connect(addrs[0]);
    c.send(b"GET /p.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"on the port");

    let (st, _, err) = run_brisk(&["--port", "8080", "--listen", "127.0.0.1:9000"]);
    assert_eq!(st.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "brisk: --port: cannot be used with --listen, which names its own port \
         (--listen 127.0.0.1:PORT) (see brisk --help)\n"
    );
    for bad in ["65536", "-1", "http", ""] {
        let (st, _, err) = run_brisk(&[&format!("--port={bad}"), "--check-config"]);
        assert_eq!(st.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "--port: expected a port number from 0 to 65535; got {bad:?}"
            )),
            "{err}"
        );
    }
}

#[test]
fn the_example_configuration_passes_check_config_from_the_repository_root() {
    let out = std::process::Command::new(crate::common::brisk_exe())
        .args(["--config", "brisk.example.toml", "--check-config"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run brisk");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    if !cfg!(feature = "ops") {
        return; // (the report is the feature `ops`'s)
    }
    assert!(
        stdout.starts_with("configuration OK (brisk.example.toml)\nlisten: 127.0.0.1:8080\n"),
        "{stdout}"
    );
    for line in [
        "headers: none",
        "throttles: none",
        "cgi: none",
        "auth: none",
        "mime overrides: none",
        "limits: the defaults",
        "timeouts: the defaults",
        "sandbox: on",
    ] {
        assert!(stdout.lines().any(|l| l == line), "no {line:?} in {stdout}");
    }
    assert!(stdout.contains("autoindex off;"), "{stdout}");
    assert!(stdout.contains("\nuser: "), "{stdout}");
}

/// A log or pid file path that is a directory is refused by
/// --check-config (not only by the start, which failed naming no line),
/// with the file, the line and the key; the start says the same.
#[test]
fn check_config_refuses_a_log_or_pid_file_that_is_a_directory() {
    let dir = TempDir::new("file-is-dir");
    let d = dir.path.display();
    for (name, text, line, key) in [
        (
            "access",
            format!("root = \"{d}\"\n[log]\naccess = \"{d}\"\n"),
            3,
            "log.access",
        ),
        (
            "error",
            format!("root = \"{d}\"\n[log]\naccess = \"off\"\nerror = \"{d}\"\n"),
            4,
            "log.error",
        ),
        (
            "pid",
            format!("root = \"{d}\"\npid_file = \"{d}\"\n"),
            2,
            "pid_file",
        ),
    ] {
        let cfg = dir.path.join(format!("{name}.toml"));
        fs::write(&cfg, text).unwrap();
        let cfg = cfg.to_str().unwrap();
        let want = format!("brisk: {cfg}:{line}: {key}: {d} is a directory: name a file");
        for extra in [&["--check-config"][..], &["--listen", "127.0.0.1:0"][..]] {
            let args: Vec<&str> = ["--config", cfg].iter().chain(extra).copied().collect();
            let (st, _, err) = run_brisk(&args);
            assert_eq!(st.code(), Some(2), "{name} {extra:?}: {err}");
            assert!(err.starts_with(&want), "{name} {extra:?}: {err}");
        }
    }
}

/// Writes `toml(dir)` as DIR/site.toml (DIR readable by everyone) and
/// runs brisk with `args` then `--config DIR/site.toml` as nobody; the
/// directory (kept alive), the file and the output.
fn as_nobody(
    name: &str,
    toml: impl FnOnce(&std::path::Path) -> String,
    args: &[&str],
) -> (TempDir, std::path::PathBuf, std::process::Output) {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let dir = TempDir::new(name);
    let cfg = dir.path.join("site.toml");
    fs::write(&cfg, toml(&dir.path)).unwrap();
    fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&cfg, fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new(crate::common::brisk_exe())
        .args(args)
        .arg("--config")
        .arg(&cfg)
        .env_remove("LISTEN_FDS")
        .uid(65534)
        .gid(65534)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run brisk as nobody");
    (dir, cfg, out)
}

/// Run by another user than root, a configuration with a `user` to
/// switch to is refused by --check-config as by the start, with the
/// line: only root can change user.
#[test]
fn check_config_refuses_a_user_switch_without_root() {
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root, to run brisk as nobody");
        return;
    }
    let (_dir, cfg, out) = as_nobody(
        "user-switch",
        |dir| format!("root = \"{}\"\nuser = \"root\"\n", dir.display()),
        &["--check-config"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let want = format!(
        "brisk: {}:2: user: cannot switch to user \"root\" (uid 0): brisk runs as uid 65534",
        cfg.display()
    );
    assert!(err.starts_with(&want), "{err}");
}

/// Run by another user than root, a configuration with a `chroot` is
/// refused by --check-config as by the start, with the line: only root
/// can chroot (the start used to fail once it said it listened, with no
/// line).
#[test]
fn check_config_refuses_a_chroot_without_root() {
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root, to run brisk as nobody");
        return;
    }
    for extra in [&["--check-config"][..], &["--listen", "127.0.0.1:0"][..]] {
        let (dir, cfg, out) = as_nobody(
            "chroot-not-root",
            |dir| format!("root = \"{0}\"\nchroot = \"{0}\"\n", dir.display()),
            extra,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        let want = format!(
            "brisk: {}:2: chroot: cannot chroot to {}: brisk runs as uid 65534",
            cfg.display(),
            dir.path.display()
        );
        assert!(err.starts_with(&want), "{extra:?}: {err}");
    }
}

/// Run by another user than root, without CAP_NET_BIND_SERVICE, a
/// configuration that listens on a port below 1024 (below the kernel's
/// `ip_unprivileged_port_start`) passes --check-config with a warning
/// naming the address, since the start will fail to bind it.
#[test]
fn check_config_warns_of_a_port_this_user_cannot_bind() {
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root, to run brisk as nobody");
        return;
    }
    let first: u16 = fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024);
    if first <= 80 {
        skip("port 80 needs no privileges on this kernel");
        return;
    }
    let (_dir, _cfg, out) = as_nobody(
        "port-80",
        |dir| {
            format!(
                "root = \"{}\"\nlisten = [\"127.0.0.1:80\", \"127.0.0.1:8080\"]\n",
                dir.display()
            )
        },
        &["--check-config"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let want = format!(
        "\nwarning: listen: 127.0.0.1:80: ports below {first} need privileges, which brisk, running as uid 65534 without CAP_NET_BIND_SERVICE, has not: the start will fail to bind them"
    );
    assert!(stdout.contains(&want), "{stdout}");
}

/// --check-config says whether the workers can write a writable
/// `[[webdav]]` tree, as the user they will run as: a tree root owns
/// with mode 0755 is not writable by `user = "nobody"` (it said
/// "writable", and every PUT then failed), one nobody owns is; run by
/// that user itself, the kernel answers (a 0555 tree).
#[cfg(feature = "webdav")]
#[test]
fn check_config_says_whether_the_workers_can_write_a_webdav_tree() {
    use std::os::unix::fs::PermissionsExt as _;
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root, to switch to nobody");
        return;
    }
    let dir = TempDir::new("dav-owner");
    let tree = dir.path.join("dav");
    fs::create_dir(&tree).unwrap();
    fs::set_permissions(&tree, fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.path.join("site.toml");
    fs::write(
        &cfg,
        format!(
            "root = \"{0}\"\nuser = \"nobody\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{1}\"\n",
            dir.path.display(),
            tree.display()
        ),
    )
    .unwrap();
    let check = || {
        let (st, out, err) = run_brisk(&["--config", cfg.to_str().unwrap(), "--check-config"]);
        assert!(st.success(), "{err}");
        out
    };
    let out = check();
    let want = format!(
        "warning: webdav[1].root: {}: the workers, running as user \"nobody\" (uid 65534, gid ",
        tree.display()
    );
    assert!(out.contains(&want), "{out}");
    assert!(
        out.contains("cannot write there: permission denied (owned by uid 0 gid 0, mode 0755)"),
        "{out}"
    );
    assert!(
        out.contains("; writable by the configuration, but see the warning"),
        "{out}"
    );
    std::os::unix::fs::chown(&tree, Some(65534), None).unwrap();
    let out = check();
    assert!(!out.contains("warning: webdav"), "{out}");
    assert!(
        out.contains(&format!("{}; writable", tree.display())),
        "{out}"
    );
    // Run as nobody, whose 0555 tree the kernel says it cannot write.
    let (_dir, _cfg, out) = as_nobody(
        "dav-self",
        |dir| {
            let tree = dir.join("dav");
            fs::create_dir(&tree).unwrap();
            std::os::unix::fs::chown(&tree, Some(65534), Some(65534)).unwrap();
            fs::set_permissions(&tree, fs::Permissions::from_mode(0o555)).unwrap();
            format!(
                "root = \"{}\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
                dir.display(),
                tree.display()
            )
        },
        &["--check-config"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("the workers, running as uid 65534, cannot write there: Permission denied"),
        "{text}"
    );
}
