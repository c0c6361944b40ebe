//! brisk as the first process of a PID namespace, as a container's
//! `ENTRYPOINT ["/brisk"]` runs it: pid 1 stays as init (`sys::init`),
//! reaps what CGI scripts leave behind, passes signals on to the server
//! and ends as it ends. The namespace is the test's own (`unshare`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{
    free_port, poll, skip, wait_exit, wait_until, write_file, KillOnDrop, TempDir, WAIT_LIMIT,
};

/// The processes whose parent is `parent`, each with its name and state
/// (from /proc/PID/stat).
fn children_of(parent: u32) -> Vec<(u32, String, char)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "PID (NAME) STATE PPID ...": the name may hold spaces.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        if rest.next().and_then(|p| p.parse().ok()) == Some(parent) {
            found.push((pid, stat[open + 1..close].to_string(), state));
        }
    }
    found
}

/// GET `path` on `port`: the whole answer.
fn get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("answer");
    out
}

/// brisk started as the first process of a new PID namespace (and, when
/// the tests do not run as root, of a user namespace whose root it is);
/// `None`, after saying the test skips, where no such namespace can be
/// made here.
fn in_namespace(dir: &TempDir, port: u16) -> Option<Child> {
    let config = dir.path.join("brisk.toml");
    let mut args: Vec<String> = Vec::new();
    if brisk::sys::privileges::euid() != 0 {
        args.extend(["--user".into(), "--map-root-user".into()]);
    }
    args.extend(
        ["--pid", "--fork", "--kill-child", "--mount-proc"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.extend([
        crate::common::brisk_exe().to_string(),
        "--allow-root".into(),
        "--config".into(),
        config.display().to_string(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
        "--workers".into(),
        "1".into(),
    ]);
    let log = std::fs::File::create(dir.path.join("stderr.log")).expect("log");
    let Ok(mut child) = Command::new("unshare")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
    else {
        skip("unshare(1) not available (util-linux)");
        return None;
    };
    // Listening, or unshare gone (no namespace for it here).
    let listens = poll(WAIT_LIMIT, || match child.try_wait() {
        Ok(Some(_)) => Some(false),
        _ => TcpStream::connect(("127.0.0.1", port))
            .is_ok()
            .then_some(true),
    });
    match listens {
        Some(true) => Some(child),
        Some(false) => {
            let said = std::fs::read_to_string(dir.path.join("stderr.log")).unwrap_or_default();
            skip(&format!(
                "no PID namespace can be made here: {}",
                said.trim()
            ));
            None
        }
        None => panic!("brisk did not listen in its namespace"),
    }
}

/// Each of 20 CGI answers leaves a job running (`sleep 0.2 &`), whose
/// parent is pid 1 once the script ends: with brisk as pid 1, each was a
/// zombie for good. Now pid 1 is brisk's init (`brisk-init`), the server
/// its child; the jobs are reaped as they end. SIGUSR2 is refused (the
/// old server's end would end the namespace), SIGTERM reaches the server
/// through the init, which ends with the server's status (0).
#[test]
fn as_pid_1_brisk_reaps_what_cgi_scripts_leave_and_passes_signals_on() {
    let dir = TempDir::new("pid1");
    write_file(&dir.path.join("www/index.html"), b"hello\n");
    let script = dir.path.join("cgi-bin/job.sh");
    write_file(
        &script,
        b"#!/bin/sh\nsleep 0.2 &\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let toml = format!(
        "root = \"{}\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"{}\"\n",
        dir.path.join("www").display(),
        dir.path.join("cgi-bin").display()
    );
    write_file(&dir.path.join("brisk.toml"), toml.as_bytes());
    let port = free_port();
    let Some(unshare) = in_namespace(&dir, port) else {
        return;
    };
    // (Killed on drop: `unshare --kill-child` takes the namespace along.)
    let mut unshare = KillOnDrop(unshare);
    // The namespace's pid 1: unshare's child.
    let first = children_of(unshare.0.id());
    assert_eq!(first.len(), 1, "{first:?}");
    let (init, name, _) = first[0].clone();
    for _ in 0..20 {
        let answer = get(port, "/cgi-bin/job.sh");
        assert!(
            answer.starts_with("HTTP/1.1 200 ") && answer.ends_with("\r\n\r\nok\n"),
            "{answer}"
        );
    }
    // The jobs end 0.2 s after their scripts, pid 1's children by then:
    // once all are reaped the server is its only child again (the first
    // jobs have ended long before the last answer: without reaping they
    // stay, zombies).
    let alone = poll(WAIT_LIMIT, || {
        let kids = children_of(init);
        (kids.len() == 1).then_some(())
    });
    let zombies: Vec<_> = children_of(init)
        .into_iter()
        .filter(|(_, _, state)| *state == 'Z')
        .collect();
    assert!(
        alone.is_some() && zombies.is_empty(),
        "zombies under pid 1: {zombies:?}"
    );
    assert_eq!(name, "brisk-init");
    let kids = children_of(init);
    assert!(kids.iter().any(|(_, name, _)| name == "brisk"), "{kids:?}");
    // SIGUSR2 to pid 1 reaches the server, which says no and serves on.
    // SAFETY: a signal to a process this test started.
    unsafe { libc::kill(init as i32, libc::SIGUSR2) };
    let log = dir.path.join("stderr.log");
    wait_until("the upgrade refused", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("SIGUSR2: brisk is its container's first process")
    });
    assert!(get(port, "/index.html").ends_with("\r\n\r\nhello\n"));
    // SIGTERM to pid 1: the server stops gracefully, and the namespace's
    // init with its status.
    // SAFETY: as above.
    unsafe { libc::kill(init as i32, libc::SIGTERM) };
    let status = wait_exit(&mut unshare.0, WAIT_LIMIT).expect("brisk did not stop");
    assert!(status.success(), "{status:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("[info] stopped"), "{said}");
}
