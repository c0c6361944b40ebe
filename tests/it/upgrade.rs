//! Zero-downtime binary upgrade (SIGUSR2): the new binary takes over the
//! listening sockets, says it serves, and only then the old one retires.
//! A client loop requesting throughout sees no error; a new binary that
//! cannot start changes nothing; `upgrade = false` leaves it out.
use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

/// Stops the brisk an upgrade started (not this test's child) at the end.
struct Upgraded(i32);

impl Drop for Upgraded {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid brisk reported for its successor.
        unsafe { libc::kill(self.0, libc::SIGTERM) };
        let gone = poll(Duration::from_secs(10), || {
            (!Path::new(&format!("/proc/{}", self.0)).exists()).then_some(())
        });
        if gone.is_none() {
            // SAFETY: as above.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// The brisk binary copied to `dir`, so that the test may replace it.
fn own_binary(dir: &Path) -> PathBuf {
    let bin = dir.join("brisk");
    copy_binary(&bin);
    bin
}

/// Copies the brisk binary to `to` with cp(1): a copy written by this
/// process would leave its descriptor, open for writing, in whatever
/// another test's thread forks meanwhile, and running the copy could
/// fail with "text file busy" (ETXTBSY).
fn copy_binary(to: &Path) {
    let done = Command::new("cp")
        .arg(crate::common::brisk_exe())
        .arg(to)
        .status()
        .expect("run cp");
    assert!(done.success());
}

/// Starts `bin` with `config` (top-level keys) and the rest of a site
/// (the error log in `<dir>/error.log`).
fn start(bin: &Path, dir: &Path, config: &str) -> (KillOnDrop, SocketAddr) {
    start_with(bin, dir, config, "")
}

/// [`start`], with `tables` (whole tables) at the end of the file.
fn start_with(bin: &Path, dir: &Path, config: &str, tables: &str) -> (KillOnDrop, SocketAddr) {
    let cfg = dir.join("brisk.toml");
    fs::write(
        &cfg,
        format!(
            "{config}root = \"{}\"\nlisten = \"127.0.0.1:0\"\nworkers = 2\npid_file = \"{}\"\n[log]\naccess = \"off\"\nerror = \"{}\"\n{tables}",
            dir.join("root").display(),
            dir.join("brisk.pid").display(),
            dir.join("error.log").display()
        ),
    )
    .unwrap();
    let child = Command::new(bin)
        .args(root_args())
        .args(["--config", cfg.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(fs::File::create(dir.join("stderr")).unwrap()))
        .spawn()
        .expect("spawn brisk");
    let addr = wait_for("the listening line", || {
        let t = fs::read_to_string(dir.join("stderr")).ok()?;
        let l = t
            .lines()
            .find_map(|l| l.strip_prefix("brisk: listening on http://"))?;
        l.strip_suffix('/')?.parse().ok()
    });
    (KillOnDrop(child), addr)
}

fn site() -> TempDir {
    let dir = TempDir::new("upgrade");
    write_file(&dir.path.join("root/index.html"), b"hello\n");
    dir
}

/// Waits for an error-log line holding `text`; returns the line.
fn log_line(dir: &Path, text: &str) -> String {
    wait_for(text, || {
        let log = fs::read_to_string(dir.join("error.log")).ok()?;
        log.lines().find(|l| l.contains(text)).map(str::to_string)
    })
}

/// The pid in "(pid N)" of `line`.
fn pid_in(line: &str) -> i32 {
    let at = line.find("(pid ").expect("a pid") + 5;
    line[at..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .expect("a pid")
}

/// One GET on `conn` (a new connection if `None` or closed); whether the
/// answer was the page.
fn request(addr: SocketAddr, conn: &mut Option<TcpStream>) -> Result<(), String> {
    if conn.is_none() {
        let s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        *conn = Some(s);
    }
    let s = conn.as_mut().unwrap();
    s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let expect_end = loop {
        let n = s.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err(format!("closed after {} bytes", got.len()));
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = find(&got, b"\r\n\r\n") {
            break end + 4 + 6;
        }
    };
    while got.len() < expect_end {
        let n = s.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("closed in the body".to_string());
        }
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    if !text.starts_with("HTTP/1.1 200 OK\r\n") || !text.ends_with("\r\n\r\nhello\n") {
        return Err(format!("answer {text:?}"));
    }
    // An answer that closes (a retiring brisk's) is followed by a new
    // connection, as any client does.
    if text.contains("\r\nConnection: close\r\n") {
        *conn = None;
    }
    Ok(())
}

#[test]
fn a_client_loop_sees_no_error_through_an_upgrade() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    // Requests on keep-alive connections and on new ones, from four
    // clients, until told to stop (bounded: 20,000 each).
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|k| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut conn = None;
                let (mut ok, mut errors) = (0u32, Vec::new());
                for i in 0..20_000u32 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if k % 2 == 1 || i % 50 == 0 {
                        conn = None;
                    }
                    match request(addr, &mut conn) {
                        Ok(()) => ok += 1,
                        Err(e) => errors.push(e),
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // The binary replaced (a rename, as package managers do), then SIGUSR2.
    let staged = dir.path.join("brisk.new");
    copy_binary(&staged);
    fs::rename(&staged, &bin).unwrap();
    let new_inode = fs::metadata(&bin).unwrap().ino();
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(
        &dir.path,
        "serves; this one finishes its requests and exits",
    );
    let new = Upgraded(pid_in(&line));
    let exited = wait_exit(&mut old.0, Duration::from_secs(30)).expect("the old brisk exits");
    assert!(exited.success(), "{exited}");
    // The new process runs the new binary, and owns the pid file.
    assert_eq!(
        fs::metadata(format!("/proc/{}/exe", new.0)).unwrap().ino(),
        new_inode
    );
    assert_eq!(
        fs::read_to_string(dir.path.join("brisk.pid"))
            .unwrap()
            .trim(),
        new.0.to_string()
    );
    // Served by the new one alone for a while.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for c in clients {
        let (ok, errors) = c.join().unwrap();
        assert!(
            errors.is_empty(),
            "{} errors, first: {:?}",
            errors.len(),
            errors.first()
        );
        total += ok;
    }
    assert!(total > 100, "only {total} requests");
    eprintln!("{total} requests through the upgrade, none failed");
    let log = fs::read_to_string(dir.path.join("error.log")).unwrap();
    assert!(
        log.contains("upgrade: serving on the 2 listening sockets the previous brisk handed over"),
        "{log}"
    );
    assert_eq!(request(addr, &mut None), Ok(()));
    // And it can be upgraded in turn.
    // SAFETY: kill(2) on the brisk that replaced this test's child.
    unsafe { libc::kill(new.0, libc::SIGUSR2) };
    let lines = wait_for("the second upgrade", || {
        let log = fs::read_to_string(dir.path.join("error.log")).ok()?;
        let done: Vec<String> = log
            .lines()
            .filter(|l| l.contains("serves; this one finishes"))
            .map(str::to_string)
            .collect();
        (done.len() == 2).then_some(done)
    });
    let newer = Upgraded(pid_in(&lines[1]));
    assert_ne!(newer.0, new.0);
    assert_eq!(request(addr, &mut None), Ok(()));
}

#[test]
fn a_new_binary_that_cannot_start_changes_nothing() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    // The configuration breaks before the upgrade: the new brisk refuses
    // it and exits.
    let cfg = dir.path.join("brisk.toml");
    let mut text = fs::read_to_string(&cfg).unwrap();
    text.push_str("[limits]\nmax_body = \"lots\"\n");
    fs::write(&cfg, text).unwrap();
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(&dir.path, "SIGUSR2: upgrade failed:");
    // (The new one said why on the readiness pipe.)
    assert!(line.contains(") will not serve: "), "{line}");
    assert!(line.contains("limits.max_body"), "{line}");
    assert!(line.ends_with("; still serving"), "{line}");
    assert!(old.0.try_wait().unwrap().is_none());
    assert_eq!(request(addr, &mut None), Ok(()));
    let err = fs::read_to_string(dir.path.join("stderr")).unwrap();
    assert!(
        err.contains("limits.max_body"),
        "the new one said why: {err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path.join("brisk.pid"))
            .unwrap()
            .trim(),
        old.0.id().to_string()
    );
}

/// Under `daemon = true` (whose standard error is /dev/null once it
/// serves): a new brisk that will not serve says why in the old one's
/// error log, and one that serves is named by the pid that serves (its
/// own daemon's, after its fork), the pid file's.
#[test]
fn a_daemon_s_upgrade_names_why_it_failed_and_the_pid_that_serves() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (_child, addr) = start(&bin, &dir.path, "daemon = true\n");
    let pid_file = dir.path.join("brisk.pid");
    let pid_of = || -> i32 {
        wait_for("the pid file", || {
            fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
        })
    };
    let old = Upgraded(pid_of());
    let cfg = dir.path.join("brisk.toml");
    let good = fs::read_to_string(&cfg).unwrap();
    fs::write(&cfg, format!("{good}[limits]\nmax_body = \"lots\"\n")).unwrap();
    // SAFETY: kill(2) on the daemon this test started.
    unsafe { libc::kill(old.0, libc::SIGUSR2) };
    let line = log_line(&dir.path, "SIGUSR2: upgrade failed:");
    assert!(line.contains(") will not serve: "), "{line}");
    assert!(line.contains(":10: limits.max_body: "), "{line}");
    assert_eq!(request(addr, &mut None), Ok(()));
    fs::write(&cfg, good).unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(old.0, libc::SIGUSR2) };
    let line = log_line(
        &dir.path,
        "serves; this one finishes its requests and exits",
    );
    let new = Upgraded(pid_in(&line));
    wait_for("the old brisk to exit", || {
        (!Path::new(&format!("/proc/{}", old.0)).exists()).then_some(())
    });
    assert_eq!(pid_of(), new.0, "{line}");
    assert_eq!(request(addr, &mut None), Ok(()));
}

/// The binary removed since the start (a package removed, a path
/// mistyped by a deploy script): the error log names it and why it
/// cannot start (the helper's own failure was reported as an I/O error).
#[test]
fn a_binary_gone_since_the_start_is_named_by_the_failed_upgrade() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (old, addr) = start(&bin, &dir.path, "");
    fs::remove_file(&bin).unwrap();
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(&dir.path, "SIGUSR2: cannot start");
    let said = line.split_once("] ").map_or("", |(_, said)| said);
    assert_eq!(
        said,
        format!(
            "SIGUSR2: cannot start the new binary {}: No such file or directory (os error 2); still serving",
            bin.display()
        )
    );
    assert_eq!(request(addr, &mut None), Ok(()));
}

#[test]
fn upgrade_false_keeps_no_helper() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (old, addr) = start(&bin, &dir.path, "upgrade = false\n");
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    // (At warn: what the operator asked for is not done.)
    log_line(
        &dir.path,
        "[warn] SIGUSR2: upgrades are off (upgrade = false)",
    );
    assert_eq!(request(addr, &mut None), Ok(()));
    let children = fs::read_to_string(format!("/proc/{}/task/{}/children", old.0.id(), old.0.id()))
        .unwrap_or_default();
    for pid in children.split_whitespace() {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_ne!(comm.trim(), "brisk-upgrade");
    }
}

/// Process `pid` has exited (gone, or a zombie nobody reaped yet).
fn exited(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

/// Replaces `bin` by a program that never says it serves, yet holds the
/// sockets it is handed (a new brisk stuck at its start), and sends
/// `old` SIGUSR2; returns the program's pid (SIGKILLed when dropped).
fn upgrade_to_a_stuck_program(dir: &Path, bin: &Path, old: &KillOnDrop) -> KillPid {
    upgrade_to_a_stuck_script(dir, bin, old, "exec sleep 300")
}

/// [`upgrade_to_a_stuck_program`], the program a shell script running
/// `body`.
fn upgrade_to_a_stuck_script(dir: &Path, bin: &Path, old: &KillOnDrop, body: &str) -> KillPid {
    let staged = dir.join("stuck.new");
    let made = Command::new("sh")
        .arg("-c")
        .arg("printf '#!/bin/sh\\n%s\\n' \"$2\" > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(&staged)
        .arg(body)
        .status()
        .expect("run sh");
    assert!(made.success());
    fs::rename(&staged, bin).unwrap();
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(dir, "SIGUSR2: started the new binary");
    KillPid(pid_in(&line))
}

/// The old brisk stopped: its port refuses connections (no process
/// holds it).
fn stop_frees_the_port(old: &mut KillOnDrop, addr: SocketAddr) {
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGTERM) };
    wait_exit(&mut old.0, Duration::from_secs(30)).expect("the old brisk exits");
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(2));
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused),
        "{refused:?}"
    );
}

#[test]
fn a_new_binary_that_never_serves_is_killed_and_leaves_the_port_free() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    let stuck = upgrade_to_a_stuck_program(&dir.path, &bin, &old);
    // It starts with no signal blocked (brisk blocks them for itself).
    let status = wait_for("the new program", || {
        let s = fs::read_to_string(format!("/proc/{}/status", stuck.0)).ok()?;
        s.contains("Name:\tsleep").then_some(s)
    });
    assert!(status.contains("\nSigBlk:\t0000000000000000\n"), "{status}");
    // Given up after 60 s: killed, and the old one serves on.
    let line = wait_for_within(Duration::from_secs(90), "the upgrade to fail", || {
        let log = fs::read_to_string(dir.path.join("error.log")).ok()?;
        log.lines()
            .find(|l| l.contains("SIGUSR2: upgrade failed:"))
            .map(str::to_string)
    });
    assert!(line.contains("did not serve within 60s"), "{line}");
    let killed = format!("killed the new brisk (pid {})", stuck.0);
    assert!(line.contains(&killed), "{line}");
    assert!(exited(stuck.0), "the stuck program still runs");
    assert!(old.0.try_wait().unwrap().is_none());
    assert_eq!(request(addr, &mut None), Ok(()));
    assert_eq!(
        fs::read_to_string(dir.path.join("brisk.pid"))
            .unwrap()
            .trim(),
        old.0.id().to_string()
    );
    stop_frees_the_port(&mut old, addr);
}

#[test]
fn a_stop_while_an_upgrade_is_stuck_kills_the_new_program() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    let stuck = upgrade_to_a_stuck_program(&dir.path, &bin, &old);
    stop_frees_the_port(&mut old, addr);
    let line = log_line(&dir.path, "SIGUSR2: the upgrade is given up as brisk stops");
    let killed = format!("killed the new brisk (pid {})", stuck.0);
    assert!(line.contains(&killed), "{line}");
    assert!(exited(stuck.0), "the stuck program still runs");
    assert!(!dir.path.join("brisk.pid").exists());
}

/// A new "binary" that is a wrapper script which runs brisk without
/// `exec` (here `sleep`, which never serves): its child holds copies of
/// the listening sockets too, so giving the upgrade up kills the new
/// program's whole process group, and the port is free once the old
/// brisk has stopped (before, the orphaned child kept it bound, and
/// connections waited in its backlog unanswered).
#[test]
fn a_stop_while_an_upgrade_is_stuck_kills_what_the_new_program_started() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    let stuck = upgrade_to_a_stuck_script(&dir.path, &bin, &old, "sleep 300");
    // The script's child, started in the script's process group.
    let child = wait_for("the script's child", || {
        let children = fs::read_to_string(format!("/proc/{0}/task/{0}/children", stuck.0)).ok()?;
        children.split_whitespace().next()?.parse::<i32>().ok()
    });
    let _child = KillPid(child);
    stop_frees_the_port(&mut old, addr);
    let line = log_line(&dir.path, "SIGUSR2: the upgrade is given up as brisk stops");
    let killed = format!("killed the new brisk (pid {})", stuck.0);
    assert!(line.contains(&killed), "{line}");
    assert!(exited(stuck.0), "the script still runs");
    assert!(exited(child), "the script's child still runs");
}

/// SIGKILLs a process this test made brisk start, at the end.
struct KillPid(i32);

impl Drop for KillPid {
    fn drop(&mut self) {
        if !exited(self.0) {
            // SAFETY: kill(2) on the pid brisk reported for the program
            // it started.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// SIGTERM soon after SIGUSR2: the old brisk stops (after its stop
/// delay, while the new one comes up), and leaves the pid file to the
/// new brisk that serves, which wrote its own there.
fn a_stop_during_an_upgrade_leaves_the_new_pid_file(config: &str) {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start_with(&bin, &dir.path, config, "[timeouts]\nstop_delay = \"3s\"\n");
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(&dir.path, "SIGUSR2: started the new binary");
    let new = Upgraded(pid_in(&line));
    // SAFETY: as above.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGTERM) };
    wait_exit(&mut old.0, Duration::from_secs(30)).expect("the old brisk exits");
    // ("...; this one stops" when the stop came first, "...; this one
    // finishes its requests and exits" when the new brisk was ready
    // before the old one read its SIGTERM: a race both ways correct.)
    let line = log_line(&dir.path, "serves; this one ");
    assert_eq!(pid_in(&line), new.0, "{line}");
    assert_eq!(pid_file(&dir.path), Ok(new.0.to_string()));
    assert_eq!(request(addr, &mut None), Ok(()));
}

/// What the pid file in `dir` says (trimmed), or why it could not be read.
fn pid_file(dir: &std::path::Path) -> Result<String, String> {
    fs::read_to_string(dir.join("brisk.pid"))
        .map(|t| t.trim().to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn a_stop_soon_after_sigusr2_leaves_the_new_brisks_pid_file() {
    a_stop_during_an_upgrade_leaves_the_new_pid_file("");
}

/// As root, leaving it: the privileged helper removes the pid file.
#[test]
fn a_stop_soon_after_sigusr2_leaves_the_new_brisks_pid_file_to_the_helper_too() {
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root");
        return;
    }
    a_stop_during_an_upgrade_leaves_the_new_pid_file("user = \"nobody\"\n");
}

/// SIGTERM right after SIGUSR2, with no stop delay, while the new brisk
/// is still starting (here a second late, through a wrapper script): the
/// old one, with nothing to drain, waits for it (within
/// `timeouts.shutdown`) rather than killing it, so that the new brisk
/// serves on and the pid file names it.
#[test]
fn a_stop_right_after_sigusr2_waits_for_the_new_brisk_to_serve() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let real = dir.path.join("brisk.real");
    copy_binary(&real);
    let (mut old, addr) = start(&bin, &dir.path, "");
    let body = format!("sleep 1; exec '{}' \"$@\"", real.display());
    let new = upgrade_to_a_stuck_script(&dir.path, &bin, &old, &body);
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGTERM) };
    wait_exit(&mut old.0, Duration::from_secs(30)).expect("the old brisk exits");
    let log = fs::read_to_string(dir.path.join("error.log")).unwrap();
    let said = format!(
        "SIGUSR2: the new brisk (pid {}) serves; this one stops",
        new.0
    );
    assert!(log.lines().any(|l| l.ends_with(&said)), "{log}");
    assert!(!exited(new.0), "{log}");
    assert_eq!(pid_file(&dir.path), Ok(new.0.to_string()));
    assert_eq!(request(addr, &mut None), Ok(()));
    // (Stopped by its pid: SIGTERM when dropped.)
    let _stop = Upgraded(new.0);
}

/// An upgrade whose configuration no longer lists an address that the
/// previous brisk handed over says so: it closes as that brisk exits
/// (nothing was said, and the line counted its sockets as served).
#[test]
fn an_address_the_new_configuration_drops_is_said_to_close() {
    let dir = site();
    let bin = own_binary(&dir.path);
    let (mut old, addr) = start(&bin, &dir.path, "");
    let port = free_port();
    let cfg = dir.path.join("brisk.toml");
    let text = fs::read_to_string(&cfg).unwrap();
    let moved = text.replace(
        "listen = \"127.0.0.1:0\"",
        &format!("listen = \"127.0.0.1:{port}\""),
    );
    assert_ne!(moved, text);
    fs::write(&cfg, moved).unwrap();
    // SAFETY: kill(2) on this test's child.
    unsafe { libc::kill(old.0.id() as i32, libc::SIGUSR2) };
    let line = log_line(
        &dir.path,
        "serves; this one finishes its requests and exits",
    );
    let _new = Upgraded(pid_in(&line));
    wait_exit(&mut old.0, Duration::from_secs(30)).expect("the old brisk exits");
    let log = fs::read_to_string(dir.path.join("error.log")).unwrap();
    let said = format!(
        "[info] upgrade: no longer listening on http://{addr}/ (the configuration does not list it)"
    );
    assert!(log.lines().any(|l| l.ends_with(&said)), "{log}");
    assert_eq!(request(([127, 0, 0, 1], port).into(), &mut None), Ok(()));
}
