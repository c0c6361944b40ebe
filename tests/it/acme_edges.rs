//! ACME's edges (issue #28): a CA refusing one of the names, a first
//! start without network, the local CA's certificate made again when the
//! addresses change, a server that is not root. The Pebble helpers are
//! `acme.rs`'s; every test holding Pebble holds its `ONE_PEBBLE`.

use std::net::SocketAddr;
use std::time::Duration;

use rustls::pki_types::{pem::PemObject as _, CertificateDer};

use crate::acme::{acme_builder, acme_server, served_chain, Pebble};
use crate::common::{poll, skip, Builder, Server};

/// The `[tls] listen` address of `server` (its second listening line).
fn tls_addr(server: &Server) -> SocketAddr {
    server.addrs[1]
}

/// Waits (a minute at most) until `server` serves on `tls` a certificate
/// for `name` alone that verifies against Pebble's `root`.
fn issued_and_served(server: &Server, tls: SocketAddr, name: &str, root: &CertificateDer<'static>) {
    let chain = poll(Duration::from_secs(60), || {
        served_chain(tls, name, root.clone()).ok()
    });
    let chain = chain.unwrap_or_else(|| panic!("{name} never served: {}", server.stderr()));
    assert_eq!(brisk::tls::x509::parse(&chain[0]).unwrap().names, [name]);
}

/// Rewrites `server`'s configuration file and sends SIGHUP; the line that
/// says what became of it.
fn reload(server: &Server, toml: &str) -> String {
    let before = server.stderr().matches("SIGHUP:").count();
    std::fs::write(server.base.path.join("brisk.toml"), toml).unwrap();
    server.signal(libc::SIGHUP);
    let line = poll(Duration::from_secs(10), || {
        let err = server.stderr();
        err.lines()
            .filter(|l| l.contains("SIGHUP:"))
            .nth(before)
            .map(str::to_string)
    });
    line.unwrap_or_else(|| panic!("no SIGHUP line: {}", server.stderr()))
}

#[test]
fn the_local_certificate_is_made_again_when_an_address_is_added_to_hosts() {
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    let toml = |hosts: &str| {
        format!(
            "listen = [\"127.0.0.1:0\"]\n[tls]\nlisten = [\"127.0.0.1:0\"]\n[acme]\n\
             storage = \"{}/acme\"\nhosts = [{hosts}]\n",
            base.display()
        )
    };
    b.file("index.html", b"local\n");
    b.config(&toml("\"localhost\", \"127.0.0.1\""))
        .listen_from_config()
        .listeners(2);
    let server = b.start();
    server.wait_stderr_line("from brisk's local CA");
    let ca = CertificateDer::from_pem_file(base.join("acme/local/ca.pem")).unwrap();
    let addresses = |server: &Server| {
        // (No SNI: the local certificate is the default.)
        let chain = served_chain(tls_addr(server), "127.0.0.1", ca.clone())
            .unwrap_or_else(|e| panic!("{e}: {}", server.stderr()));
        brisk::tls::x509::parse(&chain[0]).unwrap().addresses
    };
    let v4 = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
    assert_eq!(addresses(&server), [v4("127.0.0.1")]);

    let line = reload(
        &server,
        &toml("\"localhost\", \"127.0.0.1\", \"127.0.0.2\""),
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    let made = poll(Duration::from_secs(10), || {
        (server.stderr().matches("from brisk's local CA").count() == 2).then_some(())
    });
    assert!(made.is_some(), "not made again: {}", server.stderr());
    let now = poll(Duration::from_secs(10), || {
        let a = addresses(&server);
        (a.len() == 2).then_some(a)
    });
    assert_eq!(now, Some(vec![v4("127.0.0.1"), v4("127.0.0.2")]));
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
}

#[test]
fn a_name_the_ca_refuses_is_logged_with_its_problem_and_does_not_hold_back_the_other() {
    // Pebble refuses to issue for blocked.test (its domainBlocklist):
    // the new order for it is a rejectedIdentifier problem.
    let Some(pebble) = Pebble::start_refusing(
        &[("PEBBLE_VA_NOSLEEP", "1")],
        90 * 86_400,
        &["blocked.test"],
    ) else {
        return;
    };
    // (Names are tried in order: the refused one first.)
    let (server, tls) = acme_server(&pebble, &["ok.test", "blocked.test"], &[]);
    let line = server.wait_stderr_line("acme: blocked.test: urn:");
    assert!(
        line.ends_with(
            "[error] acme: blocked.test: urn:ietf:params:acme:error:rejectedIdentifier (400): \
             Order included an identifier for which issuance is forbidden by policy: \"blocked.test\"; \
             blocked.test: blocked.test is a forbidden domain; \
             no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
        ),
        "{line}"
    );
    let root = pebble.root();
    issued_and_served(&server, tls, "ok.test", &root);
    // One order a name: the refusal was blocked.test's alone.
    let log = server.stderr();
    for name in ["ok.test", "blocked.test"] {
        let ordering = format!("acme: {name}: ordering a certificate");
        assert_eq!(log.matches(&ordering).count(), 1, "{log}");
    }
    assert_eq!(log.matches("[error]").count(), 1, "{log}");
    // The refused name's handshakes end with an alert, at once.
    let refused = served_chain(tls, "blocked.test", root).unwrap_err();
    assert!(refused.contains("alert"), "{refused}");
}

#[test]
fn a_first_start_without_network_serves_what_it_can_and_says_when_it_tries_again() {
    // The CA's name resolves nowhere (RFC 6761's .invalid), as on a
    // machine started before its network: nothing is stored yet.
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    let (cert, key) = (
        crate::common::tls::testdata("b.pem"),
        crate::common::tls::testdata("b.key"),
    );
    let toml = format!(
        "listen = [\"127.0.0.1:0\"]\n[tls]\nlisten = [\"127.0.0.1:0\"]\n\
         [[tls.certificate]]\ncert = \"{}\"\nkey = \"{}\"\n\
         [acme]\ndirectory = \"https://acme.invalid/directory\"\n\
         storage = \"{}/acme\"\nhosts = [\"a.test\"]\nredirect_http = false\n",
        cert.display(),
        key.display(),
        base.display()
    );
    b.file("index.html", b"still here\n");
    b.config(&toml).listen_from_config().listeners(2);
    let server = b.start();
    let line = server.wait_stderr_line("next try in");
    assert!(
        line.contains(
            "[error] acme: a.test: GET https://acme.invalid/directory: cannot resolve its name"
        ),
        "{line}"
    );
    assert!(
        line.contains("restart it once the network is up")
            && line.ends_with(
                "no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
            ),
        "{line}"
    );
    let log = server.stderr();
    assert_eq!(log.matches("[error]").count(), 1, "one line a try: {log}");
    assert!(log.contains("seccomp on"), "{log}");
    // Plain HTTP is served, and the other site over HTTPS.
    let r = server.get("/");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"still here\n"[..]));
    let mut c = crate::common::Client::connect_tls(
        tls_addr(&server),
        crate::common::tls::client_conn("b.test"),
    );
    c.send(b"GET / HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"still here\n"[..]));
    // a.test's handshakes fail at once, no hang: with a certificate
    // configured, the default one (b.test's) is all brisk has for it,
    // and the client refuses it.
    let ca = CertificateDer::from_pem_file(crate::common::tls::testdata("ca.pem")).unwrap();
    let refused = served_chain(tls_addr(&server), "a.test", ca).unwrap_err();
    assert!(
        refused.contains("certificate not valid for name \"a.test\""),
        "{refused}"
    );
}

/// The `nobody` account's user and group, when the tests run as root (to
/// start brisk as another user); a skip otherwise.
fn nobody() -> Option<(u32, u32)> {
    let nobody = brisk::sys::privileges::lookup_user("nobody").ok().flatten();
    match nobody {
        Some(a) if brisk::sys::privileges::euid() == 0 => Some((a.uid, a.gid)),
        _ => {
            skip("needs root and a nobody user");
            None
        }
    }
}

/// Every directory beneath `dir` (itself included) is 0700 and every
/// file 0600, all owned by `uid`; the files' paths, relative.
fn owned_and_private(dir: &std::path::Path, uid: u32) -> Vec<String> {
    use std::os::unix::fs::MetadataExt as _;
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let meta = std::fs::metadata(&d).unwrap();
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (uid, 0o700),
            "{}",
            d.display()
        );
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path);
                continue;
            }
            assert!(meta.is_file(), "{}", path.display());
            assert_eq!(
                (meta.uid(), meta.mode() & 0o777),
                (uid, 0o600),
                "{}",
                path.display()
            );
            files.push(path.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    files.sort();
    files
}

/// The storage files of one certificate, `a.test`'s, with `pebble`'s
/// directory name.
fn stored_files(pebble: &Pebble) -> Vec<String> {
    let ca = brisk::acme::store::ca_dir_name(&pebble.directory);
    let mut want: Vec<String> = [
        "account.key",
        "account.url",
        "certs/a.test/chain.pem",
        "certs/a.test/key.pem",
    ]
    .iter()
    .map(|f| format!("{ca}/{f}"))
    .collect();
    want.sort();
    want
}

/// The user id every thread of `pid` runs as (real, effective, saved,
/// file system).
fn uids(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        out.push(
            line["Uid:".len()..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    out
}

#[test]
fn brisk_started_as_a_user_other_than_root_obtains_its_certificate() {
    let Some((uid, gid)) = nobody() else {
        return;
    };
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let (mut b, tls) = acme_builder(&pebble, &["a.test"], &[], "", None, "");
    // Its storage: a directory of its own (the test's base is root's).
    let storage = b.base().join("acme");
    std::fs::create_dir(&storage).unwrap();
    std::os::unix::fs::chown(&storage, Some(uid), Some(gid)).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&storage, std::fs::Permissions::from_mode(0o700)).unwrap();
    b.run_as(uid, gid);
    let server = b.start();
    let root = pebble.root();
    issued_and_served(&server, tls, "a.test", &root);
    let log = server.stderr();
    assert!(
        log.contains("seccomp on") && !log.contains("[error]"),
        "{log}"
    );
    for line in uids(server.pid()) {
        assert_eq!(line, format!("{uid} {uid} {uid} {uid}"));
    }
    assert_eq!(owned_and_private(&storage, uid), stored_files(&pebble));
}

#[test]
fn started_as_root_serving_as_another_user_its_storage_is_that_users_and_private() {
    let Some((uid, _)) = nobody() else {
        return;
    };
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    // brisk makes the storage (as root, then gives it to nobody), and
    // its missing parents, as /var/lib/brisk/acme on a new machine: open
    // to look through (0700, they kept nobody out of its own storage).
    let top = std::env::temp_dir().join(format!("brisk-acme-parents-{}", std::process::id()));
    let storage = top.join("var/lib/brisk/acme");
    let (b, tls) = acme_builder(
        &pebble,
        &["a.test"],
        &[],
        "user = \"nobody\"\n",
        Some(&storage),
        "",
    );
    let server = b.start();
    let root = pebble.root();
    issued_and_served(&server, tls, "a.test", &root);
    let log = server.stderr();
    assert!(log.contains("running as user \"nobody\""), "{log}");
    assert!(!log.contains("[error]"), "{log}");
    assert_eq!(owned_and_private(&storage, uid), stored_files(&pebble));
    use std::os::unix::fs::PermissionsExt as _;
    for up in ["var", "var/lib", "var/lib/brisk"] {
        let mode = std::fs::metadata(top.join(up))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "{up}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn a_storage_the_serving_user_cannot_reach_is_said_with_who_brisk_serves_as() {
    let Some((uid, _)) = nobody() else {
        return;
    };
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    // Started as root, brisk makes the storage and gives it to nobody;
    // a directory above it, root's and 0700, still keeps nobody out.
    // The error said "cannot make <storage>: Permission denied" of a
    // storage that was there: now it says whom it keeps out, and how.
    let top = std::env::temp_dir().join(format!("brisk-acme-closed-{}", std::process::id()));
    let closed = top.join("closed");
    std::fs::create_dir_all(&closed).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let storage = closed.join("acme");
    let (b, _tls) = acme_builder(
        &pebble,
        &["a.test"],
        &[],
        "user = \"nobody\"\n",
        Some(&storage),
        "",
    );
    let server = b.start();
    let line = poll(Duration::from_secs(20), || {
        let err = server.stderr();
        err.lines()
            .find(|l| l.contains("acme: storage"))
            .map(str::to_string)
    });
    let line = line.unwrap_or_else(|| panic!("no storage error: {}", server.stderr()));
    assert!(
        line.contains(&format!(
            "Permission denied (os error 13) (brisk serves as uid {uid}: that user must be able to search every directory above the storage, and to write in the storage; see their modes with ls -ld); no certificate will be ordered"
        )),
        "{line}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&top);
}
