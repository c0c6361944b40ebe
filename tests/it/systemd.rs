//! Under systemd: socket activation (`systemd-socket-activate`, which
//! passes listening sockets as systemd does), the notifications a
//! `Type=notify` service sends (to a fake `NOTIFY_SOCKET` datagram socket
//! of the test's), `timeouts.stop_delay`, and the shipped units
//! (`systemd-analyze verify`).

use crate::common;

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

/// A port free a moment ago on 127.0.0.1 (see [`free_port`]).
fn free_addr() -> SocketAddr {
    ([127, 0, 0, 1], free_port()).into()
}

/// `systemd-socket-activate -l ADDR… brisk ARGS`, its stderr in `err`;
/// `None` (the test skips) without the tool.
fn activate(
    listen: &[SocketAddr],
    names: Option<&str>,
    args: &[&str],
    err: &Path,
) -> Option<KillOnDrop> {
    let listen: Vec<(String, SocketAddr)> = listen.iter().map(|a| (a.to_string(), *a)).collect();
    activate_on(&listen, names, args, err)
}

/// As [`activate`], each socket given to `-l` as its text says (`8080`:
/// a dual-stack socket on `[::]:8080`), and waited for where it listens.
fn activate_on(
    listen: &[(String, SocketAddr)],
    names: Option<&str>,
    args: &[&str],
    err: &Path,
) -> Option<KillOnDrop> {
    let tool = "systemd-socket-activate";
    if Command::new(tool).arg("--version").output().is_err() {
        skip("no systemd-socket-activate (Debian: systemd)");
        return None;
    }
    let mut cmd = Command::new(tool);
    for (a, _) in listen {
        cmd.arg("-l").arg(a);
    }
    if let Some(n) = names {
        cmd.arg(format!("--fdname={n}"));
    }
    cmd.arg(crate::common::brisk_exe())
        .args(root_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(fs::File::create(err).expect("stderr file")));
    let child = KillOnDrop(cmd.spawn().expect("spawn systemd-socket-activate"));
    for (_, a) in listen {
        wait_until("systemd-socket-activate to listen", || {
            tcp_sockets()
                .iter()
                .any(|t| t.local == *a && t.state == TCP_LISTEN)
        });
    }
    Some(child)
}

fn get(addr: SocketAddr, path: &str) -> Response {
    let mut c = Client::connect(addr);
    c.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    c.response()
}

#[test]
fn socket_activation_with_no_listen_configured_serves_the_passed_socket() {
    let site = TempDir::new("activate");
    write_file(&site.path.join("index.html"), b"activated\n");
    let addr = free_addr();
    let err = site.path.join("stderr");
    let root = site.path.display().to_string();
    let Some(_child) = activate(
        &[addr],
        None,
        &["--root", &root, "--access-log", "off"],
        &err,
    ) else {
        return;
    };
    // The first connection starts brisk, which serves it on the socket.
    let r = get(addr, "/index.html");
    assert_eq!((r.status, &r.body[..]), (200, &b"activated\n"[..]));
    let text = fs::read_to_string(&err).unwrap();
    assert!(
        text.contains(&format!("brisk: listening on http://{addr}/")),
        "{text}"
    );
    assert!(
        !text.contains("127.0.0.1:8080"),
        "no default listener: {text}"
    );
    for _ in 0..20 {
        assert_eq!(get(addr, "/index.html").status, 200);
    }
}

/// systemd's `ListenStream=PORT` passes one dual-stack socket: an IPv4
/// client of it is its IPv4 address (here in the access log), not the
/// IPv4-mapped IPv6 one the kernel gives (`::ffff:127.0.0.1`).
#[test]
fn an_ipv4_client_of_a_dual_stack_socket_is_its_ipv4_address() {
    if std::net::TcpListener::bind("[::]:0").is_err() {
        skip("no IPv6 on this host");
        return;
    }
    let site = TempDir::new("activate-dual");
    write_file(&site.path.join("index.html"), b"dual\n");
    let port = free_port();
    let (err, log) = (site.path.join("stderr"), site.path.join("access.log"));
    let (root, log_arg) = (site.path.display().to_string(), log.display().to_string());
    let any: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, port).into();
    let Some(_child) = activate_on(
        &[(port.to_string(), any)],
        None,
        &["--root", &root, "--access-log", &log_arg],
        &err,
    ) else {
        return;
    };
    assert_eq!(get(([127, 0, 0, 1], port).into(), "/").status, 200);
    wait_until("the access line", || {
        fs::read_to_string(&log).is_ok_and(|l| l.ends_with('\n'))
    });
    let line = fs::read_to_string(&log).unwrap();
    assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
}

#[test]
fn socket_activation_matches_the_configured_addresses() {
    let site = TempDir::new("activate-cfg");
    write_file(&site.path.join("index.html"), b"x\n");
    let (passed, own) = (free_addr(), free_addr());
    let cfg = site.path.join("brisk.toml");
    fs::write(
        &cfg,
        format!(
            "root = \"{}\"\nlisten = [\"{own}\", \"{passed}\"]\nworkers = 2\n[log]\naccess = \"off\"\n",
            site.path.display()
        ),
    )
    .unwrap();
    let err = site.path.join("stderr");
    let args = ["--config", cfg.to_str().unwrap()];
    let Some(child) = activate(&[passed], None, &args, &err) else {
        return;
    };
    assert_eq!(get(passed, "/index.html").status, 200);
    // The address no socket was passed for is bound by brisk itself.
    assert_eq!(get(own, "/index.html").status, 200);
    // Two workers share the one passed socket: many connections, all served.
    for _ in 0..40 {
        assert_eq!(get(passed, "/index.html").status, 200);
    }
    // A reload keeps the passed socket (systemd-socket-activate execs
    // brisk in its own process).
    signal(&child.0, libc::SIGHUP);
    wait_until("the reload", || {
        fs::read_to_string(&err).is_ok_and(|t| t.contains("configuration reloaded"))
    });
    assert_eq!(get(passed, "/index.html").status, 200);
}

#[test]
fn a_passed_socket_the_configuration_does_not_list_is_an_error() {
    let site = TempDir::new("activate-bad");
    let (passed, own) = (free_addr(), free_addr());
    let cfg = site.path.join("brisk.toml");
    fs::write(&cfg, format!("root = \".\"\nlisten = \"{own}\"\n")).unwrap();
    let err = site.path.join("stderr");
    let Some(mut child) = activate(&[passed], None, &["--config", cfg.to_str().unwrap()], &err)
    else {
        return;
    };
    // The connection that starts brisk meets its refusal.
    let c = TcpStream::connect(passed).expect("connect");
    drop(c);
    let status = wait_exit(&mut child.0, Duration::from_secs(10)).expect("brisk exits");
    assert!(!status.success());
    let text = fs::read_to_string(&err).unwrap();
    assert!(
        text.contains(&format!("the listening socket {passed} given to brisk is not in the configuration (listen, tls.listen, proxy.listen or proxy.tls_listen)")),
        "{text}"
    );
}

/// A passed socket that is no TCP listener (a unix one, LISTEN_FDNAMES
/// unset) is refused, named by its number alone.
#[test]
fn a_passed_unix_socket_is_refused_by_its_number() {
    let tool = "systemd-socket-activate";
    if Command::new(tool).arg("--version").output().is_err() {
        skip("no systemd-socket-activate (Debian: systemd)");
        return;
    }
    let site = TempDir::new("activate-unix");
    let sock = site.path.join("s.sock");
    let err = site.path.join("stderr");
    let mut child = KillOnDrop(
        Command::new(tool)
            .arg("-l")
            .arg(&sock)
            .arg(crate::common::brisk_exe())
            .args(root_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(fs::File::create(&err).unwrap()))
            .spawn()
            .expect("spawn systemd-socket-activate"),
    );
    // (The connection that starts brisk meets its refusal. The socket's
    // file is there once bound, a moment before it listens: a connection
    // then is refused and starts nothing, so it is tried until taken.)
    wait_until("the unix socket to listen", || {
        std::os::unix::net::UnixStream::connect(&sock).is_ok()
    });
    let status = wait_exit(&mut child.0, Duration::from_secs(10)).expect("brisk exits");
    assert!(!status.success());
    let text = fs::read_to_string(&err).unwrap();
    assert!(
        text.contains("descriptor 3: not a listening TCP socket"),
        "{text}"
    );
}

// (The PROXY protocol is the cargo feature `ops`.)
#[cfg(feature = "ops")]
#[test]
fn a_socket_named_proxy_expects_a_proxy_header() {
    let site = TempDir::new("activate-proxy");
    write_file(&site.path.join("index.html"), b"x\n");
    let addr = free_addr();
    let err = site.path.join("stderr");
    let root = site.path.display().to_string();
    let Some(_child) = activate(
        &[addr],
        Some("proxy"),
        &["--root", &root, "--access-log", "off"],
        &err,
    ) else {
        return;
    };
    let mut c = Client::connect(addr);
    c.send(b"PROXY TCP4 203.0.113.7 127.0.0.1 1 80\r\nGET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    let mut c = Client::connect(addr);
    c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    c.expect_closed();
}

/// What `GET /index.html` over TLS to `addr` (as `a.test`) answers.
#[cfg(feature = "tls")]
fn get_over_tls(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(common::tls::client_conn("a.test"), tcp);
    tls.write_all(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = tls.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

#[cfg(feature = "tls")]
#[test]
fn a_socket_named_https_serves_tls_with_listen_empty() {
    // `[tls] listen = []`: no address of its own, the passed socket
    // named https is its listener (the certificates the file names).
    let site = TempDir::new("activate-https");
    write_file(&site.path.join("index.html"), b"over tls\n");
    let cfg = site.path.join("brisk.toml");
    let certs =
        common::tls::section(&["a"], "").replace("listen = [\"127.0.0.1:0\"]", "listen = []");
    fs::write(&cfg, certs).unwrap();
    let addr = free_addr();
    let err = site.path.join("stderr");
    let root = site.path.display().to_string();
    let config = cfg.display().to_string();
    let args = ["--root", &root, "--config", &config, "--access-log", "off"];
    let Some(_child) = activate(&[addr], Some("https"), &args, &err) else {
        return;
    };
    let text = get_over_tls(addr);
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("over tls\n"),
        "{text}"
    );
    // Without a socket named https, the start says what is missing.
    let (st, _out, err) = run_brisk(&["--root", &root, "--config", &config, "--access-log", "off"]);
    assert!(!st.success());
    assert!(
        err.contains("[tls] listen = [] serves the sockets systemd passes named https"),
        "{err}"
    );
}

/// `--tls-cert` and `--tls-key` with no listener configured make the
/// default address serve HTTPS: a passed socket replaces it and serves
/// HTTPS, whether named `https`, `tls` or not at all. (Each stopped the
/// start: "the listening socket ... (Https) given to brisk is not in the
/// configuration", the default address then counting as configured.)
#[cfg(feature = "tls")]
#[test]
fn with_tls_cert_on_the_command_line_a_passed_socket_serves_https() {
    let site = TempDir::new("activate-tls-cert");
    write_file(&site.path.join("index.html"), b"over tls\n");
    let root = site.path.display().to_string();
    let cert = common::tls::cert_args("a");
    for name in [Some("https"), Some("tls"), None] {
        let addr = free_addr();
        let err = site.path.join("stderr");
        let mut args = vec!["--root", &root, "--access-log", "off"];
        args.extend(cert.iter().map(String::as_str));
        let Some(_child) = activate(&[addr], name, &args, &err) else {
            return;
        };
        let text = get_over_tls(addr);
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("over tls\n"),
            "{name:?}: {text} {}",
            fs::read_to_string(&err).unwrap_or_default()
        );
    }
}

/// Reads one datagram (10 s at most).
fn next(sock: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).expect("a notification within 10 s");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Starts brisk with `NOTIFY_SOCKET` (and `env`), the test's datagram
/// socket bound there.
fn notified(cfg: &str, env: &[(&str, String)]) -> (UnixDatagram, KillOnDrop, TempDir) {
    let site = TempDir::new("notify");
    write_file(&site.path.join("index.html"), b"x\n");
    let path = site.path.join("notify.sock");
    let sock = UnixDatagram::bind(&path).expect("bind the notify socket");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let cfg_path = site.path.join("brisk.toml");
    // (An absolute root: a reload inside the sandbox resolves it again.)
    let root = site.path.display();
    fs::write(
        &cfg_path,
        format!("root = \"{root}\"\nlisten = \"127.0.0.1:0\"\n{cfg}"),
    )
    .unwrap();
    let child = Command::new(crate::common::brisk_exe())
        .args(root_args())
        .args([
            "--config",
            cfg_path.to_str().unwrap(),
            "--access-log",
            "off",
        ])
        .env("NOTIFY_SOCKET", &path)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            fs::File::create(site.path.join("stderr")).unwrap(),
        ))
        .spawn()
        .expect("spawn brisk");
    (sock, KillOnDrop(child), site)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn ready_reloading_and_stopping_are_notified() {
    let (sock, mut child, _site) = notified("", &[]);
    let pid = child.0.id();
    assert_eq!(
        next(&sock),
        format!("READY=1\nMAINPID={pid}\nSTATUS=serving")
    );
    signal(&child.0, libc::SIGHUP);
    let reloading = next(&sock);
    let usec: u64 = reloading
        .strip_prefix("RELOADING=1\nMONOTONIC_USEC=")
        .and_then(|r| r.strip_suffix("\nSTATUS=reloading the configuration"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{reloading:?}"));
    // CLOCK_MONOTONIC, as systemd compares it with its own.
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let now = ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000;
    assert!(usec <= now && now - usec < 60_000_000, "{usec} vs {now}");
    assert_eq!(
        next(&sock),
        format!("READY=1\nMAINPID={pid}\nSTATUS=serving (configuration reloaded)")
    );
    signal(&child.0, libc::SIGTERM);
    assert_eq!(next(&sock), "STOPPING=1\nSTATUS=stopping");
    assert!(wait_exit(&mut child.0, Duration::from_secs(10)).is_some_and(|s| s.success()));
}

#[test]
fn the_watchdog_is_fed_while_the_workers_turn() {
    // WATCHDOG_USEC of 400 ms: a ping every 200 ms.
    let (sock, child, _site) = notified("", &[("WATCHDOG_USEC", "400000".to_string())]);
    assert!(next(&sock).starts_with("READY=1\n"));
    for _ in 0..3 {
        assert_eq!(next(&sock), "WATCHDOG=1");
    }
    drop(child);
    // Meant for another process: no pings.
    let (sock, _child, _site) = notified(
        "",
        &[
            ("WATCHDOG_USEC", "400000".to_string()),
            ("WATCHDOG_PID", "1".to_string()),
        ],
    );
    assert!(next(&sock).starts_with("READY=1\n"));
    sock.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(
        sock.recv(&mut buf).is_err(),
        "no WATCHDOG=1 for another pid"
    );
}

#[test]
fn stop_delay_keeps_serving_then_stops() {
    let (sock, mut child, site) = notified("[timeouts]\nstop_delay = \"3s\"\n", &[]);
    assert!(next(&sock).starts_with("READY=1\n"));
    let err = site.path.join("stderr");
    let addr: SocketAddr = wait_for("the listening line", || {
        let t = fs::read_to_string(&err).ok()?;
        let l = t
            .lines()
            .find_map(|l| l.strip_prefix("brisk: listening on http://"))?;
        l.strip_suffix('/')?.parse().ok()
    });
    signal(&child.0, libc::SIGTERM);
    assert_eq!(next(&sock), "STOPPING=1\nSTATUS=stopping");
    wait_until("the stop delay's line", || {
        fs::read_to_string(&err)
            .is_ok_and(|t| t.contains("stopping in 3s: still serving meanwhile"))
    });
    // Still accepting and serving, new connections included.
    for _ in 0..5 {
        assert_eq!(get(addr, "/index.html").status, 200);
    }
    assert!(child.0.try_wait().unwrap().is_none(), "still running");
    // A second SIGTERM ends the delay.
    signal(&child.0, libc::SIGTERM);
    assert!(wait_exit(&mut child.0, Duration::from_secs(10)).is_some_and(|s| s.success()));
    assert!(fs::read_to_string(&err)
        .unwrap()
        .contains("second stop signal: stopping now"));
}

#[test]
fn the_shipped_units_verify() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        skip("no systemd-analyze (Debian: systemd)");
        return;
    }
    let dir = TempDir::new("units");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd");
    let bin = crate::common::brisk_exe();
    for unit in ["brisk.service", "brisk.socket"] {
        let text = fs::read_to_string(repo.join(unit)).unwrap();
        // The binary where the package puts it is this build.
        fs::write(dir.path.join(unit), text.replace("/usr/sbin/brisk", bin)).unwrap();
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(dir.path.join("brisk.service"))
        .arg(dir.path.join("brisk.socket"))
        .output()
        .expect("run systemd-analyze");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");
    let service = fs::read_to_string(repo.join("brisk.service")).unwrap();
    for hardening in [
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE",
        "Type=notify",
        "NotifyAccess=all",
    ] {
        assert!(service.lines().any(|l| l == hardening), "{hardening}");
    }
}
