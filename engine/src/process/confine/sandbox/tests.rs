//! The sandbox is applied in a child process (this test binary run
//! again with an environment variable), since it cannot be undone.

use super::*;
use std::process::Command;

const CHILD_ENV: &str = "BRISK_SANDBOX_CHILD";

/// Runs the test `name` of this binary in a child with `dir` in the
/// environment, and returns its combined output after checking it
/// succeeded.
fn in_child(name: &str, dir: &Path) -> String {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed: {text}");
    text
}

fn temp_site(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "brisk-sandbox-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/index.html"), b"inside").unwrap();
    std::fs::write(dir.join("secret.txt"), b"outside").unwrap();
    dir
}

fn denied<T: std::fmt::Debug>(r: std::io::Result<T>, what: &str) {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
        other => panic!("{what}: expected permission denied, got {other:?}"),
    }
}

#[test]
fn wrong_path_join_cannot_leave_the_root() {
    if Ruleset::new(Extra::default()).ok().flatten().is_none() {
        crate::test_skip::skip("no Landlock on this kernel");
        return;
    }
    let dir = temp_site("strict");
    let out = in_child("process::confine::sandbox::tests::strict_child", &dir);
    assert!(out.contains("strict child: all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child half of the test above; does nothing when run directly.
#[test]
fn strict_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let root = dir.join("www");
    let cfg = Config {
        site: crate::config::SiteConfig {
            root: root.clone(),
            ..Config::default().site
        },
        ..Config::default()
    };
    let mut notes = Notes::new();
    prepare(&cfg, None, false)
        .and_then(|plan| plan.apply(&mut notes))
        .unwrap();
    eprintln!("{notes:?}");
    assert!(notes.iter().all(|(l, _)| *l != Level::Warn), "{notes:?}");

    // The document root is still readable…
    assert_eq!(std::fs::read(root.join("index.html")).unwrap(), b"inside");
    assert!(std::fs::read_dir(&root).is_ok());
    // …and a path joined without any checking still cannot leave it.
    denied(
        std::fs::read(root.join("../../../../../../../etc/passwd")),
        "wrong join",
    );
    denied(std::fs::read("/etc/passwd"), "/etc/passwd");
    denied(std::fs::read(dir.join("secret.txt")), "sibling of the root");
    // Read-only: no writing, creating or removing beneath the root.
    denied(std::fs::write(root.join("new.html"), b"x"), "create");
    denied(
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("index.html")),
        "write",
    );
    denied(std::fs::remove_file(root.join("index.html")), "remove");
    // seccomp: no new sockets, no programs.
    denied(std::net::TcpStream::connect("127.0.0.1:9"), "connect");
    assert!(Command::new("/bin/true").status().is_err(), "exec allowed");
    eprintln!("strict child: all checks passed");
}

#[test]
fn cgi_relaxes_the_sandbox_for_programs_only() {
    if Ruleset::new(Extra::default()).ok().flatten().is_none() {
        crate::test_skip::skip("no Landlock on this kernel");
        return;
    }
    let dir = temp_site("cgi");
    let out = in_child("process::confine::sandbox::tests::cgi_child", &dir);
    assert!(out.contains("cgi child: all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child half of the test above; does nothing when run directly.
#[test]
fn cgi_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let root = dir.join("www");
    let cfg = Config {
        site: crate::config::SiteConfig {
            root: root.clone(),
            cgi: vec![crate::config::CgiRule {
                target: CgiTarget::Pattern("*.cgi".to_string()),
                interpreter: None,
                env: Vec::new(),
                writable: Vec::new(),
                max_body: None,
            }],
            ..Config::default().site
        },
        ..Config::default()
    };
    let mut notes = Notes::new();
    // The sandbox of the CGI launcher.
    prepare(&cfg, Some(&[]), false)
        .and_then(|plan| plan.apply(&mut notes))
        .unwrap();
    // Programs run, and see the system directories…
    let out = Command::new("/bin/sh")
        .args(["-c", "cat /etc/hostname >/dev/null && echo ran"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    // …but not what lies outside them and the root, nor can they write.
    denied(std::fs::read(dir.join("secret.txt")), "sibling of the root");
    denied(std::fs::write(root.join("new.html"), b"x"), "create");
    let out = Command::new("/bin/sh")
        .args(["-c", "echo x > /tmp/brisk-sandbox-escape"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a CGI child could write to /tmp");
    eprintln!("cgi child: all checks passed");
}

#[test]
fn writable_paths_open_for_their_launcher_only() {
    if Ruleset::new(Extra::default()).ok().flatten().is_none() {
        crate::test_skip::skip("no Landlock on this kernel");
        return;
    }
    let dir = temp_site("writable");
    std::fs::create_dir_all(dir.join("repo/objects")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    let out = in_child("process::confine::sandbox::tests::writable_child", &dir);
    assert!(out.contains("writable child: all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child half of the test above; does nothing when run directly.
#[test]
fn writable_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let repo = dir.join("repo");
    let rule = |writable: Vec<PathBuf>| crate::config::CgiRule {
        target: CgiTarget::Pattern("*.cgi".to_string()),
        interpreter: None,
        env: Vec::new(),
        writable,
        max_body: None,
    };
    let cfg = Config {
        site: crate::config::SiteConfig {
            root: dir.join("www"),
            cgi: vec![rule(vec![repo.clone()]), rule(vec![dir.join("other")])],
            ..Config::default().site
        },
        ..Config::default()
    };
    assert_eq!(
        writable_sets(&cfg),
        [vec![repo.clone()], vec![dir.join("other")]]
    );
    // The first rule's launcher: what git does to a repository.
    prepare(&cfg, Some(std::slice::from_ref(&repo)), false)
        .and_then(|plan| plan.apply(&mut Notes::new()))
        .unwrap();
    let script = "set -e; cd \"$1\"; mkdir objects/ab; echo x > objects/tmp_obj; \
         mv objects/tmp_obj objects/ab/cd; echo y > ref.lock; mv ref.lock ref; \
         : > ref; rm objects/ab/cd; rmdir objects/ab; cat ref; echo done";
    let out = Command::new("/bin/sh")
        .args(["-c", script, "sh"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "done\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not the other rule's directory, nor anywhere else.
    denied(std::fs::write(dir.join("other/x"), b"x"), "other rule's");
    denied(std::fs::write(dir.join("www/x"), b"x"), "root");
    denied(std::fs::write(dir.join("x"), b"x"), "parent");
    // Nothing written there runs.
    std::fs::write(repo.join("hook"), b"#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(
        repo.join("hook"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    assert!(
        Command::new(repo.join("hook")).output().is_err(),
        "ran a file from a writable directory"
    );
    eprintln!("writable child: all checks passed");
}

/// Root, a `nobody` account, and Landlock: what the TLS helper test needs.
fn root_nobody_landlock() -> Option<(u32, u32)> {
    let nobody = privileges::lookup_user("nobody").ok().flatten();
    let landlock = Ruleset::new(Extra::default()).ok().flatten().is_some();
    match nobody {
        Some(a) if privileges::euid() == 0 && landlock => Some((a.uid, a.gid)),
        _ => {
            crate::test_skip::skip("needs root, a nobody user and Landlock");
            None
        }
    }
}

#[test]
fn the_helper_reads_root_only_tls_keys_for_the_unprivileged_server() {
    if root_nobody_landlock().is_none() {
        return;
    }
    let dir = temp_site("tls-helper");
    let out = in_child("process::confine::sandbox::tests::tls_helper_child", &dir);
    assert!(out.contains("tls helper child: all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child half of the test above: starts brisk-priv with a TLS grant
/// and its sandbox, renews the key (a new file renamed over it, as
/// certbot does), then becomes `nobody` as the server does, and reads.
#[test]
fn tls_helper_child() {
    use std::os::unix::fs::PermissionsExt;
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let Some((uid, gid)) = root_nobody_landlock() else {
        return;
    };
    let keys = dir.join("keys");
    std::fs::create_dir(&keys).unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root_only = |name: &str, text: &[u8]| {
        let p = keys.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    };
    let key = root_only("privkey.pem", b"old key");
    let other = root_only("other.pem", b"not granted");
    let grants = Grants {
        tls: vec![key.clone()],
        ..Grants::default()
    };
    let confined = grants.clone();
    let helper = crate::sys::privileged::Privileged::start(grants, move || {
        confine_privileged(&confined, true)
    })
    .unwrap();
    std::fs::write(keys.join("privkey.pem.new"), b"renewed key").unwrap();
    std::fs::set_permissions(
        keys.join("privkey.pem.new"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::rename(keys.join("privkey.pem.new"), &key).unwrap();

    privileges::switch_user(uid, gid, &[]).unwrap();
    denied(std::fs::read(&key), "the server reading the key itself");
    assert_eq!(helper.read_tls(&key).unwrap(), b"renewed key");
    denied(helper.read_tls(&other), "a file that was not granted");
    denied(
        helper.read_tls(&keys.join("../keys/privkey.pem")),
        "the granted file by another name",
    );
    eprintln!("tls helper child: all checks passed");
}

#[cfg(feature = "tls")]
#[test]
fn tls_files_are_readable_by_the_server_only_without_a_helper() {
    let data = crate::tls::testing::testdata("");
    let cfg = Config {
        site: crate::config::SiteConfig {
            root: data.clone(),
            ..Config::default().site
        },
        tls: Some(crate::config::TlsConfig::testing(&["a"])),
        ..Config::default()
    };
    let tls_rules = |privileged: bool| -> Vec<(PathBuf, String)> {
        landlock_rules(&cfg, None, privileged)
            .into_iter()
            .filter(|r| r.what.starts_with("tls."))
            .map(|r| (r.path, r.what))
            .collect()
    };
    assert_eq!(
        tls_rules(false),
        vec![
            (data.join("a.pem"), "tls.certificate[1].cert".to_string()),
            (
                data.clone(),
                "tls.certificate[1].cert (its directory)".to_string()
            ),
            (data.join("a.key"), "tls.certificate[1].key".to_string()),
        ]
    );
    assert!(tls_rules(true).is_empty(), "brisk-priv reads them then");
    assert!(landlock_rules(&cfg, Some(&[]), false)
        .iter()
        .all(|r| !r.what.starts_with("tls.")));
}

#[test]
fn every_site_root_is_readable_and_nothing_else_new() {
    let dir = std::env::temp_dir();
    let mut cfg = Config::default();
    cfg.site.root = dir.join("www");
    let mut other = cfg.site.inherit();
    other.hosts = vec!["b.test".to_string()];
    other.root = dir.join("b");
    let one = landlock_rules(&cfg, None, false);
    cfg.sites.push(other);
    let two = landlock_rules(&cfg, None, false);
    let added: Vec<(&PathBuf, &str, u64)> = two
        .iter()
        .filter(|r| !one.iter().any(|o| o.path == r.path))
        .map(|r| (&r.path, r.what.as_str(), r.rights))
        .collect();
    use crate::sys::sandbox::fs_access::{READ_DIR, READ_FILE};
    assert_eq!(
        added,
        [(&dir.join("b"), "site[1].root", READ_FILE | READ_DIR)]
    );
}

#[cfg(all(feature = "tls", feature = "upstreams"))]
#[test]
fn the_roots_of_https_upstreams_are_readable_again_at_reload() {
    use crate::config::{ProxyRule, Upstream};
    use crate::tls::client::{UpstreamTls, SYSTEM_BUNDLES};
    let ca = crate::tls::testing::testdata("ca.pem");
    let https = Upstream::Tcp {
        addr: "127.0.0.1:8443".parse().unwrap(),
        host: "127.0.0.1".into(),
        also: [].into(),
        reached: Default::default(),
        tls: true,
    };
    let rule = |verify: bool| ProxyRule {
        to: vec![https.clone()],
        tls_verify: verify,
        ca: Some(ca.clone()),
        tls_client: Some(UpstreamTls::new(verify, Some(&ca)).unwrap()),
        ..ProxyRule::default()
    };
    let mut cfg = Config::default();
    cfg.site.reverse_proxy = vec![rule(true), rule(true), rule(false)];
    let granted: Vec<(PathBuf, String)> = landlock_rules(&cfg, None, false)
        .into_iter()
        .filter(|r| r.what.contains("reverse_proxy") || r.what.contains("https"))
        .map(|r| (r.path, r.what))
        .collect();
    let mut want = vec![(ca.clone(), "reverse_proxy[1].ca".to_string())];
    if let Some(system) = SYSTEM_BUNDLES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    {
        want.push((system, "the system's roots (https upstreams)".to_string()));
    }
    assert_eq!(granted, want, "each file once; none for tls_verify = false");
    assert!(landlock_rules(&cfg, Some(&[]), false)
        .iter()
        .all(|r| !r.what.contains("reverse_proxy")));
}

/// The connections a worker makes to its upstreams take `TCP_NODELAY`
/// under the sandbox (with Nagle on, each piece of a streamed request
/// body waited for the upstream's delayed ACK: 44 ms a request through
/// the proxy against 5 ms straight); no other socket option can be set.
#[cfg(feature = "upstreams")]
#[test]
fn upstream_connections_take_nodelay_and_no_other_option() {
    let dir = temp_site("nodelay");
    let out = in_child("process::confine::sandbox::tests::nodelay_child", &dir);
    assert!(out.contains("nodelay child: all checks passed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The child half of the test above; does nothing when run directly.
#[cfg(feature = "upstreams")]
#[test]
fn nodelay_child() {
    use crate::config::{ProxyRule, Upstream};
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = Config::default();
    cfg.site.root = dir.join("www");
    cfg.site.reverse_proxy = vec![ProxyRule {
        to: vec![Upstream::Tcp {
            addr,
            host: "127.0.0.1".into(),
            also: [].into(),
            reached: Default::default(),
            tls: false,
        }],
        ..ProxyRule::default()
    }];
    let mut notes = Notes::new();
    prepare(&cfg, None, false)
        .and_then(|plan| plan.apply(&mut notes))
        .unwrap();
    eprintln!("{notes:?}");
    if !notes
        .iter()
        .any(|(_, n)| n.starts_with("sandbox: seccomp on"))
    {
        crate::test_skip::skip("no seccomp filtering here");
        eprintln!("nodelay child: all checks passed");
        return;
    }
    // As a worker dials an upstream.
    let sock = crate::handlers::proxy::dial::connect_tcp(addr).unwrap();
    let sock = std::net::TcpStream::from(sock);
    sock.set_nodelay(true)
        .expect("TCP_NODELAY under the sandbox");
    denied(sock.set_ttl(9), "IP_TTL");
    eprintln!("nodelay child: all checks passed");
}

/// Bodies are held whole in `temp_dir` for a FastCGI script (a chunked
/// one) and a `buffer_request` proxy rule as for CGI: the server may
/// write there then, and only then.
#[cfg(feature = "upstreams")]
#[test]
fn temp_dir_is_writable_where_bodies_are_held_whole() {
    use crate::config::{FastcgiRule, ProxyRule};
    let temp = |cfg: &Config| {
        landlock_rules(cfg, None, false)
            .iter()
            .any(|r| r.what == "temp_dir" && r.path == cfg.temp_dir)
    };
    let mut cfg = Config::default();
    cfg.site.reverse_proxy = vec![ProxyRule {
        buffer_answer: 0,
        ..ProxyRule::default()
    }];
    assert!(!temp(&cfg), "a proxy that streams holds nothing");
    cfg.site.reverse_proxy[0].buffer_request = true;
    assert!(temp(&cfg), "buffer_request");
    cfg.site.reverse_proxy[0] = ProxyRule::default();
    assert!(temp(&cfg), "buffer_answer");
    cfg.site.reverse_proxy.clear();
    let d = std::time::Duration::from_secs(5);
    cfg.site.fastcgi = vec![FastcgiRule {
        matches: crate::config::PathMatch::Glob("*.php".into()),
        to: vec![crate::config::Upstream::Unix(
            std::path::Path::new("/run/php.sock").into(),
        )],
        index: None,
        split_path: None,
        fallback: None,
        root: None,
        env: Vec::new(),
        balance: crate::config::Balance::RoundRobin,
        connect_timeout: d,
        read_timeout: d,
        send_timeout: d,
        fail_timeout: d,
        max_fails: 1,
        keepalive: 0,
        keepalive_timeout: d,
        max_body: None,
        buffer_request: true,
        buffer_answer: crate::config::BUFFER_ANSWER,
    }];
    assert!(temp(&cfg), "fastcgi");
}

/// `[acme]` naming only `localhost` and addresses: the local CA certifies
/// them, nothing is connected to, so the sandbox allows no socket, no
/// connect (seccomp) and no TCP port (Landlock); a public name brings the
/// CA's port and the calls its requests make. A reload that adds a
/// public name to a server started with local ones alone is refused.
#[cfg(feature = "acme")]
#[test]
fn the_acme_thread_connects_nowhere_when_it_asks_no_ca() {
    use crate::config::AcmeConfig;
    let dir = temp_site("acme-local");
    let acme = |hosts: &[&str], local: &[&str]| AcmeConfig {
        origin: "brisk.toml:3: acme".into(),
        email: None,
        directory: "https://ca.test:14000/dir".into(),
        directory_addr: ("ca.test".into(), 14000, None),
        ca_roots: Vec::new(),
        ca_roots_origin: "brisk.toml:3: acme".into(),
        storage: dir.clone(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        local: local.iter().map(|h| h.to_string()).collect(),
        challenges: vec!["http-01"],
        redirect_http: true,
        key_type: Default::default(),
        eab: None,
        eab_hmac_key_file: None,
        unordered: Vec::new(),
    };
    let config = |acme| {
        let mut c = Config::default();
        c.site.root = dir.join("www");
        c.acme = Some(acme);
        c
    };
    let local = config(acme(&[], &["localhost", "127.0.0.1"]));
    let public = config(acme(&["a.test"], &["localhost"]));

    let plan = prepare(&local, None, false).unwrap();
    let calls = plan.system_calls();
    for (call, name) in [
        (libc::SYS_socket, "socket"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_getsockopt, "getsockopt"),
    ] {
        assert!(!calls.contains(&call), "{name} allowed");
    }
    assert!(
        calls.contains(&libc::SYS_renameat2),
        "the storage is written"
    );
    let started = plan.allowed();
    assert_eq!(started.upstreams, None);

    let plan = prepare(&public, None, false).unwrap();
    let calls = plan.system_calls();
    assert!(calls.contains(&libc::SYS_socket) && calls.contains(&libc::SYS_connect));
    assert_eq!(plan.allowed().upstreams, Some(vec![14000]));
    assert!(plan.allowed().asks_ca);

    let sandboxes = super::super::allowed::Sandboxes {
        server: started,
        launchers: Vec::new(),
        privileged: false,
    };
    assert!(sandboxes.refusal(&local).is_none());
    match sandboxes.refusal(&public) {
        Some(Error::SandboxNotAllowed(named)) => {
            assert_eq!(named, ["acme.hosts = [\"a.test\"]"])
        }
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The access and error logs in one directory that holds the document
/// root: the warning is said once, not once a log.
#[test]
fn a_log_directory_holding_the_root_is_warned_of_once() {
    let w = fs_access::WRITE_FILE | fs_access::MAKE_REG;
    let rules = [
        Rule::new(
            "/srv/site",
            fs_access::READ_FILE | fs_access::READ_DIR,
            "root",
        ),
        Rule::new("/srv", w, "log.access"),
        Rule::new("/srv", w, "log.error"),
    ];
    let mut notes = Notes::new();
    note_writable_trees(&rules, &mut notes);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]
            .1
            .starts_with("sandbox: the log directory /srv contains"),
        "{notes:?}"
    );
}

/// The log's summary says what the configuration file's directory
/// allows: files read there (a reload's), not a tree beneath it (a new
/// site's root there needs a restart); nothing in a chroot, where the
/// file is not read again.
#[test]
fn the_summary_says_files_are_read_in_the_configuration_files_directory() {
    let dir = temp_site("summary");
    let file = dir.join("brisk.toml");
    std::fs::write(&file, b"").unwrap();
    let mut cfg = Config::default();
    cfg.site.root = dir.join("www");
    cfg.config_file = Some(file);
    let plan = prepare(&cfg, None, false).unwrap();
    assert!(
        plan.summary.starts_with(
            "read-only beneath the document root; files read in the configuration file's directory; "
        ),
        "{}",
        plan.summary
    );
    cfg.chroot = Some(dir.clone());
    let plan = prepare(&cfg, None, false).unwrap();
    assert!(
        !plan.summary.contains("configuration file"),
        "{}",
        plan.summary
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A writable directory that holds what is served is warned about; the
/// session-ticket keys' directory is brisk's own, not served: neither it
/// nor the ACME storage holding it (acme.md's fleet) is. (Every start
/// said both "contain the document root or a CGI directory".)
#[test]
fn only_writable_trees_that_hold_served_files_are_warned_about() {
    use fs_access::*;
    let rule = |p: &str, rights: u64, what: &str| Rule::new(p, rights, what);
    let served = rule("/srv/www", READ_FILE | READ_DIR, "root");
    let keys = READ_FILE | READ_DIR | WRITE_FILE | MAKE_REG | REMOVE_FILE;
    let storage = WRITE_FILE | MAKE_REG | READ_DIR | READ_FILE;
    let mut notes = Notes::new();
    let rules = [
        served.clone(),
        rule("/var/lib/brisk/acme", storage, "acme.storage"),
        rule("/var/lib/brisk/acme/tickets", keys, TICKET_KEYS_DIR),
    ];
    note_writable_trees(&rules, &mut notes);
    assert!(notes.is_empty(), "{notes:?}");
    let rules = [
        served,
        rule("/srv", WRITE_FILE | MAKE_REG, "log.access (its directory)"),
    ];
    note_writable_trees(&rules, &mut notes);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0]
        .1
        .starts_with("sandbox: the log directory /srv contains the document root"));
}
