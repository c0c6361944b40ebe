//! A fleet of three brisk servers on one ACME storage behind HAProxy
//! (mode tcp, round robin; issue #28), Pebble validating on HAProxy's
//! ports. Pebble validates each challenge three times at once (as Let's
//! Encrypt does from several vantage points), so the three connections
//! reach at least two servers of the fleet: the servers that did not
//! order answer from the storage, where the one that did published the
//! challenge. With the challenges only in the orderer's memory every
//! validation fails. Then: one certificate per name, the same on every
//! server, no challenge file left in the storage, and a TLS session made
//! with one server resumed on each (`[tls] ticket_keys` in the storage).
//! The servers run in their sandbox (the default).

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::acme::{acme_builder_on_ports, served_chain, Pebble};
use crate::common::{haproxy, poll, skip, wait_until, Server, TempDir};
use crate::tls_fleet::{new_session, resumed, VERSIONS};

const NAMES: [&str; 2] = ["a.test", "b.test"];

/// The lines of `s`'s access log that asked for an ACME challenge.
fn challenges_asked(s: &Server) -> usize {
    fs::read_to_string(&s.access_path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("/.well-known/acme-challenge/"))
        .count()
}

fn fleet_behind_haproxy(kinds: &str) {
    if Command::new("haproxy").arg("-v").output().is_err() {
        skip("no haproxy (Debian: haproxy; scripts/test installs it as root)");
        return;
    }
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let dir = TempDir::new("acme-fleet");
    let storage = dir.path.join("acme");
    // The names' locks held (by a server that is not there) while the
    // fleet starts: none orders before all three and HAProxy are up;
    // they look again 10 s later, and race.
    let locks = storage.join("locks");
    fs::create_dir_all(&locks).unwrap();
    for name in NAMES {
        fs::write(locks.join(format!("{name}.lock")), "elsewhere 1\n").unwrap();
    }
    let tls_extra = format!(
        "ticket_keys = \"{}\"",
        storage.join("ticket_keys").display()
    );
    let servers: Vec<Server> = (0..3)
        .map(|_| {
            let mut b = acme_builder_on_ports(
                &pebble,
                (0, 0),
                &NAMES,
                &[("index.html", b"<p>hello</p>\n")],
                "",
                &tls_extra,
                Some(&storage),
                &format!("challenges = [{kinds}]\n"),
            );
            b.access_log();
            let s = b.start();
            s.wait_stderr_line("seccomp on");
            // Landlock lets it (its workers too) read the storage.
            let landlock = s.wait_stderr_line("sandbox: Landlock");
            if landlock.contains("not offered") {
                skip("no Landlock on this kernel");
            } else {
                let granted = format!("the ACME storage {}", storage.display());
                assert!(landlock.contains(&granted), "{landlock}");
            }
            s
        })
        .collect();
    let backend = |i: usize| -> String {
        servers
            .iter()
            .enumerate()
            .map(|(n, s)| format!("    server b{n} {}\n", s.addrs[i]))
            .collect()
    };
    let _haproxy = haproxy(
        &dir.path,
        &format!(
            "global\n    maxconn 100\n\
defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend http\n    bind 127.0.0.1:{http}\n    default_backend http\n\
frontend tls\n    bind 127.0.0.1:{tls}\n    default_backend tls\n\
backend http\n    balance roundrobin\n{}\
backend tls\n    balance roundrobin\n{}",
            backend(0),
            backend(1),
            http = pebble.http_port,
            tls = pebble.tls_port,
        ),
    );
    let front: SocketAddr = format!("127.0.0.1:{}", pebble.tls_port).parse().unwrap();
    wait_until("HAProxy to listen", || TcpStream::connect(front).is_ok());
    for name in NAMES {
        fs::remove_file(locks.join(format!("{name}.lock"))).unwrap();
    }

    // Every server serves both names, the same certificate.
    let root = pebble.root();
    let logs = || -> String {
        servers
            .iter()
            .enumerate()
            .map(|(i, s)| format!("--- server {i}:\n{}", s.stderr()))
            .collect()
    };
    for name in NAMES {
        let mut leaves = Vec::new();
        for s in &servers {
            let chain = poll(Duration::from_secs(60), || {
                served_chain(s.addrs[1], name, root.clone()).ok()
            });
            let chain = chain.unwrap_or_else(|| panic!("{name} never served:\n{}", logs()));
            assert_eq!(brisk::tls::x509::parse(&chain[0]).unwrap().names, [name]);
            leaves.push(chain[0].clone());
        }
        assert!(
            leaves.iter().all(|l| *l == leaves[0]),
            "{name}: one certificate"
        );
    }
    let log = logs();
    assert!(!log.contains("[error]"), "{log}");
    assert_eq!(
        pebble.log().matches("Issued certificate serial").count(),
        NAMES.len(),
        "one certificate a name:\n{}",
        pebble.log()
    );
    // Validated by more than one server (http-01: their access logs).
    if kinds.contains("http-01") {
        let asked: Vec<usize> = servers.iter().map(challenges_asked).collect();
        assert_eq!(asked.iter().sum::<usize>(), 3 * NAMES.len(), "{asked:?}");
        assert!(asked.iter().filter(|&&n| n > 0).count() >= 2, "{asked:?}");
    }
    // The challenges were taken out of the storage again.
    for kind in ["http-01", "tls-alpn-01"] {
        let left: Vec<_> = fs::read_dir(storage.join("challenges").join(kind))
            .map(|d| d.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{kind}: {left:?}");
    }

    // A session made through HAProxy resumes on each server in turn.
    for version in VERSIONS {
        let Some(sess) = new_session(front.port(), &dir.path, version) else {
            return;
        };
        for _ in 0..servers.len() {
            assert!(
                resumed(front.port(), &dir.path, version, &sess),
                "{}: resumed on every server",
                version.0
            );
        }
    }
    assert_no_leftover_locks(&locks);
}

fn assert_no_leftover_locks(locks: &Path) {
    let left: Vec<_> = fs::read_dir(locks)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "every lock released: {left:?}");
}

#[test]
fn a_fleet_behind_haproxy_answers_tls_alpn_01_from_any_server() {
    fleet_behind_haproxy("\"tls-alpn-01\"");
}

#[test]
fn a_fleet_behind_haproxy_answers_http_01_from_any_server() {
    fleet_behind_haproxy("\"http-01\"");
}
