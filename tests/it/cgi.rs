//! CGI/1.1 (RFC 3875) on the wire, against the real binary: scripts in
//! shell, Python, Perl and C; the environment byte for byte; request
//! bodies; every way a response can be framed; errors, timeouts, limits,
//! disconnects, and children that never outlive their request.
//!
//! Scripts that must wait do so on a "gate" file the test creates, never
//! on a fixed sleep, so no assertion depends on timing.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

#[path = "cgi/bodies.rs"]
mod bodies;
#[path = "cgi/env.rs"]
mod env;
#[path = "cgi/git.rs"]
mod git;
#[path = "cgi/output.rs"]
mod output;
#[path = "cgi/processes.rs"]
mod processes;
#[path = "cgi/redirects.rs"]
mod redirects;
#[path = "cgi/refusals.rs"]
mod refusals;

/// The rule most tests use: `/cgi-bin/` → `<base>/cgi-bin` (relative to
/// the config file, which the harness writes to the base directory).
const CGI_BIN: &str = "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n";

/// The type the server gives a `.txt` file.
const TXT: &str = "text/plain; charset=utf-8";

const MIB: usize = 1024 * 1024;

/// A builder whose config is `config`, with an empty `<base>/cgi-bin`.
fn builder(config: &str) -> Builder {
    let mut b = Builder::new();
    fs::create_dir_all(b.base().join("cgi-bin")).expect("create cgi-bin");
    b.config(config);
    b
}

/// Writes `<base>/<rel>` with `mode`.
fn write_mode(b: &Builder, rel: &str, text: &str, mode: u32) -> PathBuf {
    let p = b.base().join(rel);
    write_file(&p, text.as_bytes());
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).expect("chmod");
    p
}

/// Writes an executable script `<base>/<rel>`.
fn script(b: &Builder, rel: &str, text: &str) -> PathBuf {
    write_mode(b, rel, text, 0o755)
}

/// A shell script `cgi-bin/<name>` that prints `out` (a printf format:
/// `\\r\\n` for CRLF) and exits.
fn printf_script(b: &Builder, name: &str, out: &str) -> PathBuf {
    script(
        b,
        &format!("cgi-bin/{name}"),
        &format!("#!/bin/sh\nprintf '{out}'\n"),
    )
}

/// Compiles C `source` into the executable `<base>/<rel>`. Returns false
/// (after saying so) when there is no C compiler.
fn compile(b: &Builder, rel: &str, source: &str) -> bool {
    let src = b.base().join(format!("{}.c", rel.replace('/', "_")));
    fs::write(&src, source).expect("write C source");
    cc(&src, &b.base().join(rel), "the compiled CGI program")
}

/// `path` made canonical (the server reports canonical paths).
fn canon(path: &Path) -> String {
    fs::canonicalize(path)
        .expect("canonicalize")
        .display()
        .to_string()
}

/// The pid a script wrote to `path` (waits for the file).
fn read_pid(path: &Path) -> i32 {
    let mut pid = 0;
    wait_until(
        &format!("pid file {}", path.display()),
        || match fs::read_to_string(path) {
            Ok(s) if s.ends_with('\n') => {
                pid = s.trim().parse().expect("pid");
                true
            }
            _ => false,
        },
    );
    pid
}

/// State letter and parent pid of process `pid`, or None if it is gone.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = s.get(s.rfind(')')? + 2..)?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` still runs (a zombie has stopped running).
fn running(pid: i32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// Every process id in /proc.
fn all_pids() -> Vec<i32> {
    fs::read_dir("/proc")
        .expect("read /proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

/// The children of `ppid` with their states, but brisk's upgrade helper.
fn children_of(ppid: i32) -> Vec<(i32, char)> {
    all_pids()
        .into_iter()
        .filter_map(|pid| match proc_stat(pid) {
            Some((state, parent)) if parent == ppid && !is_upgrade_helper(pid) => {
                Some((pid, state))
            }
            _ => None,
        })
        .collect()
}

/// Whether `pid` is brisk's upgrade helper (`brisk-upgrade`), a child
/// the server keeps for its whole life (SIGUSR2), not a CGI program's.
fn is_upgrade_helper(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "brisk-upgrade")
}

/// The running processes whose command line mentions `needle` (a
/// script's path).
fn processes_running(needle: &str) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| find(&cmd, needle.as_bytes()).is_some())
                && running(pid)
        })
        .collect()
}

/// The running processes of process group `pgid` (a script and what it
/// started).
fn group_members(pgid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            // After the parenthesised name: state, ppid, pgrp.
            let pgrp = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.get(s.rfind(')')? + 2..)?;
                    rest.split(' ').nth(2)?.parse::<i32>().ok()
                });
            pgrp == Some(pgid) && running(pid)
        })
        .collect()
}

/// Decodes a chunked body that must be exactly `raw` (nothing after the
/// last chunk), checking every byte of the framing; returns the data.
fn dechunk_exact(raw: &[u8]) -> Vec<u8> {
    let mut pos = 0;
    let mut data = Vec::new();
    loop {
        let line_len = find(&raw[pos..], b"\r\n").expect("chunk-size line ends in CRLF");
        let line = std::str::from_utf8(&raw[pos..pos + line_len]).expect("ASCII size line");
        assert!(
            !line.is_empty() && line.bytes().all(|b| b.is_ascii_hexdigit()),
            "bad chunk-size line {line:?}"
        );
        let size = usize::from_str_radix(line, 16).expect("hex size");
        pos += line_len + 2;
        if size == 0 {
            assert_eq!(&raw[pos..], b"\r\n", "the last chunk ends the message");
            return data;
        }
        data.extend_from_slice(&raw[pos..pos + size]);
        assert_eq!(
            &raw[pos + size..pos + size + 2],
            b"\r\n",
            "chunk ends in CRLF"
        );
        pos += size + 2;
    }
}

/// Stops the server with SIGTERM and waits for it to exit, so that it
/// reaps its own children instead of leaving them to whoever adopts them.
fn stop(mut server: Server) {
    server.signal(libc::SIGTERM);
    assert!(
        server.wait_exit(Duration::from_secs(10)).is_some(),
        "brisk did not exit after SIGTERM"
    );
}

#[test]
fn guards_by_pattern_cover_a_script_with_a_path_after_its_name() {
    // `/sub/adm.cgi/x` runs adm.cgi with PATH_INFO /x: a guard whose
    // pattern names the script must cover it (as Apache's <Files>), or
    // a path after the name gets round [[auth]], [[access]] and
    // [[rate_limit]].
    let b = builder(
        "[[cgi]]\npattern = \"*.cgi\"\n\
         [[auth]]\npattern = \"adm.cgi\"\nrealm = \"r\"\nhtpasswd = \"htpasswd\"\n\
         [[access]]\npattern = \"deny.cgi\"\ndeny = [\"all\"]\n\
         [[rate_limit]]\npattern = \"lim.cgi\"\nrate = \"1/m\"\n",
    );
    write_file(
        &b.base().join("htpasswd"),
        b"ann:{SHA}GpHWL3ymc5liWkNopqtdSjuqYHM=\n",
    );
    for name in ["adm", "deny", "lim"] {
        let rel = b
            .root()
            .strip_prefix(b.base())
            .unwrap()
            .join(format!("sub/{name}.cgi"));
        script(
            &b,
            rel.to_str().unwrap(),
            &format!("#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n{name} ran %s\\n' \"$PATH_INFO\"\n"),
        );
    }
    let s = b.start();
    for path in ["/sub/adm.cgi", "/sub/adm.cgi/x", "/sub/adm.cgi%2fx"] {
        assert_eq!(s.get(path).status, 401, "{path}");
    }
    let r = s.get_with(
        "/sub/adm.cgi/x",
        &format!("Authorization: {}\r\n", basic_auth("ann", "pw")),
    );
    assert_eq!((r.status, r.text()), (200, "adm ran /x\n".to_string()));
    for path in ["/sub/deny.cgi", "/sub/deny.cgi/x"] {
        assert_eq!(s.get(path).status, 403, "{path}");
    }
    let statuses: Vec<u16> = ["/sub/lim.cgi/1", "/sub/lim.cgi/2", "/sub/lim.cgi/3"]
        .iter()
        .map(|p| s.get(p).status)
        .collect();
    assert_eq!(statuses[0], 200);
    assert!(statuses[1..].iter().all(|&st| st == 429), "{statuses:?}");
}
