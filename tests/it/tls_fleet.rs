//! A fleet sharing its session-ticket keys (`[tls] ticket_keys`, issue
//! #28): brisk servers on 127.0.0.1 naming one keys file; a TLS session
//! made with one resumes on the others (`openssl s_client -sess_out`, then
//! `-sess_in`: "Reused", TLS 1.3 and 1.2), directly and behind HAProxy
//! (mode tcp, round robin). Without the shared file they do not resume
//! on each other (each has rustls's key of its own), which shows that the
//! tests can fail. The servers run in their sandbox (Landlock and
//! seccomp, the default): the first one makes the file, and a server that
//! finds the keys due rotates them, both under it. A missing tool is a
//! counted skip (`scripts/test` installs openssl and haproxy).
use crate::common;

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use common::tls::{s_client, section};
use common::*;

/// `n` servers of `a.test` (their TLS listener is `addrs[1]`), sharing
/// the ticket keys `keys` if given, each logging its requests.
fn fleet(n: usize, keys: Option<&Path>) -> Vec<Server> {
    let extra = keys.map_or(String::new(), |k| {
        format!("ticket_keys = \"{}\"", k.display())
    });
    fleet_with(n, &extra)
}

/// [`fleet`], with `extra` in `[tls]` (and after it).
fn fleet_with(n: usize, extra: &str) -> Vec<Server> {
    (0..n)
        .map(|_| {
            let mut b = Builder::new();
            b.file("index.html", b"<p>hello</p>\n")
                .config(&section(&["a"], extra))
                .listeners(2)
                .access_log();
            let s = b.start();
            // (Its banner comes before the keys are read: this after.)
            s.wait_stderr_line("started 1 worker");
            s
        })
        .collect()
}

fn tls_port(s: &Server) -> u16 {
    s.addrs[1].port()
}

pub(crate) const VERSIONS: [(&str, &str); 2] = [("TLSv1.3", "-tls1_3"), ("TLSv1.2", "-tls1_2")];

/// A session made with `port` (`version`), saved in `dir`; `None` without
/// openssl.
pub(crate) fn new_session(port: u16, dir: &Path, version: (&str, &str)) -> Option<String> {
    let sess = dir.join(format!("session-{}.pem", version.0));
    let _ = fs::remove_file(&sess);
    let sess = sess.display().to_string();
    let o = s_client(port, dir, &[version.1, "-sess_out", &sess])?;
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!("New, {}, Cipher is", version.0)),
        "{out}"
    );
    assert!(out.contains("<p>hello</p>"), "{out}");
    Some(sess)
}

/// Connects to `port` with the session `sess`: whether it was resumed
/// (the page is served either way).
pub(crate) fn resumed(port: u16, dir: &Path, version: (&str, &str), sess: &str) -> bool {
    let o = s_client(port, dir, &[version.1, "-sess_in", sess]).expect("openssl");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("<p>hello</p>"), "{out}");
    let reused = out.contains(&format!("Reused, {}, Cipher is", version.0));
    assert!(
        reused || out.contains(&format!("New, {}, Cipher is", version.0)),
        "{out}"
    );
    reused
}

/// That `s` runs in its sandbox, Landlock letting it write the keys'
/// directory `dir`.
fn assert_sandboxed(s: &Server, dir: &Path) {
    s.wait_stderr_line("seccomp on");
    let landlock = s.wait_stderr_line("sandbox: Landlock");
    if landlock.contains("not offered") {
        skip("no Landlock on this kernel");
        return;
    }
    let granted = format!("the ticket keys' directory {}", dir.display());
    assert!(landlock.contains(&granted), "{landlock}");
}

#[test]
fn a_session_made_on_one_server_resumes_on_the_others() {
    let dir = TempDir::new("fleet-keys");
    let keys_dir = dir.path.join("keys");
    fs::create_dir(&keys_dir).unwrap();
    let keys = keys_dir.join("ticket_keys");
    let servers = fleet(3, Some(&keys));
    // The first made the file, 0600; no lock or temporary file is left.
    let mode = fs::metadata(&keys).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let names: Vec<_> = fs::read_dir(&keys_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["ticket_keys"]);
    for s in &servers {
        assert_sandboxed(s, &keys_dir);
    }
    for version in VERSIONS {
        let Some(sess) = new_session(tls_port(&servers[0]), &dir.path, version) else {
            return;
        };
        for s in &servers[1..] {
            assert!(
                resumed(tls_port(s), &dir.path, version, &sess),
                "{}: a session of server 0 resumes on another",
                version.0
            );
        }
    }
}

#[test]
#[cfg(feature = "acme")]
fn with_acme_the_keys_live_in_its_storage() {
    let dir = TempDir::new("fleet-acme");
    let storage = dir.path.join("acme");
    let keys = storage.join("ticket_keys");
    // (A local name only: the local CA certifies it, no CA is asked.)
    let extra = format!(
        "ticket_keys = \"{}\"\n[acme]\ndirectory = \"https://127.0.0.1:9/dir\"\nstorage = \"{}\"\nhosts = [\"localhost\"]",
        keys.display(),
        storage.display()
    );
    let servers = fleet_with(3, &extra);
    let mode = fs::metadata(&keys).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    for s in &servers {
        assert_sandboxed(s, &storage);
    }
    for version in VERSIONS {
        let Some(sess) = new_session(tls_port(&servers[2]), &dir.path, version) else {
            return;
        };
        for s in &servers[..2] {
            assert!(resumed(tls_port(s), &dir.path, version, &sess));
        }
    }
}

#[test]
fn without_shared_keys_a_session_resumes_only_where_it_was_made() {
    let dir = TempDir::new("fleet-apart");
    let servers = fleet(2, None);
    for version in VERSIONS {
        let Some(sess) = new_session(tls_port(&servers[0]), &dir.path, version) else {
            return;
        };
        assert!(resumed(tls_port(&servers[0]), &dir.path, version, &sess));
        assert!(
            !resumed(tls_port(&servers[1]), &dir.path, version, &sess),
            "{}: each server has a key of its own",
            version.0
        );
    }
}

#[test]
fn keys_found_due_at_start_are_rotated_in_the_sandbox() {
    let dir = TempDir::new("fleet-due");
    let keys = dir.path.join("ticket_keys");
    let key = |n: u8| {
        format!(
            "{} {}",
            format!("{n:02x}").repeat(16),
            format!("{n:02x}").repeat(32)
        )
    };
    // Rotated seven hours ago (the default period is six).
    let then = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 7 * 3600;
    fs::write(
        &keys,
        format!(
            "rotated {then}\nprevious {}\ncurrent {}\nnext {}\n",
            key(1),
            key(2),
            key(3)
        ),
    )
    .unwrap();
    let servers = fleet(1, Some(&keys));
    assert_sandboxed(&servers[0], &dir.path);
    let text = fs::read_to_string(&keys).unwrap();
    let line = |field: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field} ")).map(str::to_string))
            .unwrap_or_else(|| panic!("no {field} in {text}"))
    };
    let rotated: u64 = line("rotated").parse().unwrap();
    assert!(rotated >= then + 7 * 3600, "{text}");
    assert_eq!(line("previous"), key(2));
    assert_eq!(line("current"), key(3));
    assert_ne!(line("next"), key(3));
    assert_eq!(
        fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(!dir.path.join("ticket_keys.lock").exists());
}

#[test]
fn a_damaged_keys_file_stops_the_start_naming_it() {
    let dir = TempDir::new("fleet-damaged");
    let keys = dir.path.join("ticket_keys");
    fs::write(&keys, "rotated soon\n").unwrap();
    let root = dir.path.join("root");
    fs::create_dir(&root).unwrap();
    let config = dir.path.join("brisk.toml");
    fs::write(
        &config,
        section(&["a"], &format!("ticket_keys = \"{}\"", keys.display())),
    )
    .unwrap();
    let o = Command::new(crate::common::brisk_exe())
        .args(root_args())
        .args(["--listen", "127.0.0.1:0", "--root", root.to_str().unwrap()])
        .args(["--config", config.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .expect("brisk");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!(
            "tls: ticket_keys {}: line 1: expected rotated SECONDS",
            keys.display()
        )),
        "{err}"
    );
}

/// The requests each server of `servers` logged.
fn served(servers: &[Server]) -> Vec<usize> {
    servers
        .iter()
        .map(|s| {
            fs::read_to_string(&s.access_path)
                .unwrap_or_default()
                .lines()
                .count()
        })
        .collect()
}

/// Which of `servers` logged a request since they had logged `before`.
fn which(servers: &[Server], before: &[usize]) -> usize {
    wait_for("the request logged", || {
        let now = served(servers);
        (0..servers.len()).find(|&i| now[i] > before[i])
    })
}

/// Three servers behind HAProxy (mode tcp, round robin): a session made
/// through it, then resumed through it on each server in turn. Returns,
/// for each resumption, whether the server that made the session was the
/// one that took it, and whether it resumed.
fn behind_haproxy(keys: Option<&Path>, dir: &Path) -> Option<Vec<(bool, bool)>> {
    if Command::new("haproxy").arg("-v").output().is_err() {
        skip("no haproxy (Debian: haproxy; scripts/test installs it as root)");
        return None;
    }
    let servers = fleet(3, keys);
    let front = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let backends: String = servers
        .iter()
        .enumerate()
        .map(|(i, s)| format!("    server b{i} 127.0.0.1:{}\n", tls_port(s)))
        .collect();
    let _haproxy = haproxy(
        dir,
        &format!(
            "global\n    maxconn 100\n\
defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend tls\n    bind {front}\n    default_backend fleet\n\
backend fleet\n    balance roundrobin\n{backends}"
        ),
    );
    wait_until("HAProxy to listen", || TcpStream::connect(front).is_ok());
    // (That probe went to no server: HAProxy connects to one only when
    // the client speaks.)
    let mut out = Vec::new();
    for version in VERSIONS {
        let before = served(&servers);
        let sess = new_session(front.port(), dir, version)?;
        let maker = which(&servers, &before);
        // Round robin: the next three connections go to each server once.
        let mut took = Vec::new();
        for _ in 0..3 {
            let before = served(&servers);
            let reused = resumed(front.port(), dir, version, &sess);
            let server = which(&servers, &before);
            took.push(server);
            out.push((server == maker, reused));
        }
        took.sort_unstable();
        assert_eq!(took, [0, 1, 2], "{}: round robin", version.0);
    }
    Some(out)
}

#[test]
fn behind_haproxy_a_session_resumes_on_every_server_of_the_fleet() {
    let dir = TempDir::new("fleet-haproxy");
    let keys = dir.path.join("ticket_keys");
    let Some(tries) = behind_haproxy(Some(&keys), &dir.path) else {
        return;
    };
    assert_eq!(tries.len(), 6);
    assert!(tries.iter().all(|&(_, reused)| reused), "{tries:?}");
    // Without the shared keys, only the server that made it resumes it.
    let dir = TempDir::new("fleet-haproxy-apart");
    let tries = behind_haproxy(None, &dir.path).expect("haproxy");
    assert!(
        tries.iter().all(|&(same, reused)| same == reused),
        "{tries:?}"
    );
}
