//! Started as root, brisk switches to an unprivileged user, but a small
//! helper (brisk-priv) keeps root for what the server can no longer do:
//! reopen its logs in a root-owned directory on SIGUSR1 (the usual
//! `/var/log/brisk` with logrotate's `create 0640 root adm`), bind a listen
//! address a reload adds, and remove a pid file in a root-owned directory
//! when the server stops or dies. Every test here needs root and says so
//! when it skips.

use crate::common;

use common::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Root, and a `nobody` account to switch to.
fn can_switch() -> bool {
    let nobody = brisk::sys::privileges::lookup_user("nobody").ok().flatten();
    if brisk::sys::privileges::euid() != 0 || nobody.is_none() {
        skip("needs root and a nobody user");
        return false;
    }
    true
}

/// A server started as root, serving as nobody, with its logs in `log/`
/// and its pid file in `run/`, both root-owned 0755 directories of the
/// base directory.
struct Site {
    s: Server,
    access: PathBuf,
    error: PathBuf,
    pid_file: PathBuf,
}

fn start(extra: &str) -> Site {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let base = b.base().to_path_buf();
    for dir in ["log", "run"] {
        fs::create_dir(base.join(dir)).expect("mkdir");
        fs::set_permissions(base.join(dir), fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    b.access_log_from_config();
    b.config(&format!(
        "user = \"nobody\"\npid_file = \"run/brisk.pid\"\n{extra}\n[log]\naccess = \"log/access.log\"\nerror = \"log/error.log\"\n"
    ));
    let s = b.start();
    let site = Site {
        s,
        access: base.join("log/access.log"),
        error: base.join("log/error.log"),
        pid_file: base.join("run/brisk.pid"),
    };
    site.wait_error_lines("] started ", 1);
    site
}

impl Site {
    fn error_log(&self) -> String {
        fs::read_to_string(&self.error).unwrap_or_default()
    }

    /// Waits until the error log holds `n` lines containing `what`.
    fn wait_error_lines(&self, what: &str, n: usize) {
        wait_until(&format!("{n} error log lines with {what:?}"), || {
            self.error_log().matches(what).count() >= n
        });
    }

    /// Requests `/a.txt?tag` and waits until its line is in `log`.
    fn logged_request(&self, tag: &str, log: &Path) {
        let r = self.s.get(&format!("/a.txt?{tag}"));
        assert_eq!(r.status, 200);
        wait_until(&format!("?{tag} in {}", log.display()), || {
            fs::read_to_string(log).unwrap_or_default().contains(tag)
        });
    }

    /// The pid of the server's child named `brisk-priv`.
    fn helper(&self) -> u32 {
        let pid = self.s.pid();
        let children =
            fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).expect("children");
        children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
            .find(|c| {
                fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|n| n.trim() == "brisk-priv")
            })
            .expect("a brisk-priv child")
    }
}

#[test]
fn sigusr1_with_nothing_renamed_reopens_the_root_owned_logs() {
    if !can_switch() {
        return;
    }
    let site = start("");
    site.logged_request("before", &site.access);
    // Created before the switch, given to the user brisk serves as (as
    // under systemd: logrotate's `su brisk adm` rotates them), 0640; the
    // directory is root's, where nobody could not make a new one.
    let meta = fs::metadata(&site.access).expect("access log");
    let nobody = brisk::sys::privileges::lookup_user("nobody")
        .unwrap()
        .unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (nobody.uid, 0o640));
    let meta = fs::metadata(&site.error).expect("error log");
    assert_eq!(meta.uid(), nobody.uid);
    site.s.signal(libc::SIGUSR1);
    site.wait_error_lines("SIGUSR1: reopened", 1);
    site.logged_request("after", &site.access);
    let err = site.error_log();
    assert!(
        err.contains(&format!(
            "[info] SIGUSR1: reopened {} and {}\n",
            site.access.display(),
            site.error.display()
        )),
        "{err}"
    );
    assert!(!err.contains("cannot reopen"), "{err}");
}

#[test]
fn after_a_logrotate_create_rotation_lines_go_to_the_new_file() {
    if !can_switch() {
        return;
    }
    let site = start("");
    site.logged_request("before", &site.access);
    // What logrotate does with `create 0640 root adm`: rename, then a new
    // empty root-owned file, then the postrotate SIGUSR1.
    let rotated = site.access.with_extension("log.1");
    fs::rename(&site.access, &rotated).expect("rename");
    fs::write(&site.access, b"").expect("create");
    fs::set_permissions(&site.access, fs::Permissions::from_mode(0o640)).expect("chmod");
    let adm = brisk::sys::privileges::lookup_group("adm")
        .ok()
        .flatten()
        .unwrap_or(0);
    std::os::unix::fs::chown(&site.access, Some(0), Some(adm)).expect("chown");
    site.s.signal(libc::SIGUSR1);
    site.wait_error_lines("SIGUSR1: reopened", 1);
    for n in 0..3 {
        site.logged_request(&format!("after{n}"), &site.access);
    }
    let old = fs::read_to_string(&rotated).expect("rotated log");
    assert!(old.contains("?before"), "{old}");
    assert!(
        !old.contains("?after"),
        "a line went to the rotated file: {old}"
    );
    let new = fs::read_to_string(&site.access).expect("new log");
    assert!(!new.contains("?before"), "{new}");
    // The file logrotate created is the one written to.
    let meta = fs::metadata(&site.access).expect("new log");
    assert_eq!((meta.uid(), meta.gid()), (0, adm));
    assert!(
        !site.error_log().contains("cannot reopen"),
        "{}",
        site.error_log()
    );
}

/// A rotation that leaves no file behind (logrotate's `nocreate`, logs
/// moved away by hand): the helper makes new ones, the user's as at start,
/// and lines go there.
#[test]
fn after_a_rotation_without_create_the_helper_makes_the_users_logs() {
    if !can_switch() {
        return;
    }
    let site = start("");
    site.logged_request("before", &site.access);
    let (old_access, old_error) = (
        site.access.with_extension("log.1"),
        site.error.with_extension("log.1"),
    );
    fs::rename(&site.access, &old_access).expect("rename");
    fs::rename(&site.error, &old_error).expect("rename");
    site.s.signal(libc::SIGUSR1);
    site.wait_error_lines("SIGUSR1: reopened", 1);
    site.logged_request("after", &site.access);
    let old = fs::read_to_string(&old_error).expect("rotated error log");
    assert!(!old.contains("cannot reopen"), "{old}");
    let nobody = brisk::sys::privileges::lookup_user("nobody")
        .unwrap()
        .unwrap();
    for log in [&site.access, &site.error] {
        let meta = fs::metadata(log).expect("a new log");
        assert_eq!(
            (meta.uid(), meta.mode() & 0o777),
            (nobody.uid, 0o640),
            "{}",
            log.display()
        );
    }
    assert!(!fs::read_to_string(&old_access).unwrap().contains("?after"));
}

#[test]
fn the_helper_keeps_root_but_little_else() {
    if !can_switch() {
        return;
    }
    let site = start("");
    let status = fs::read_to_string(format!("/proc/{}/status", site.helper())).expect("status");
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}:")))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert_eq!(field("Uid"), "0 0 0 0");
    // CAP_CHOWN (0), CAP_DAC_OVERRIDE (1) and CAP_NET_BIND_SERVICE (10) only.
    assert_eq!(field("CapEff"), "0000000000000403");
    assert_eq!(field("CapPrm"), "0000000000000403");
    assert_eq!(field("Seccomp"), "2");
    assert_eq!(field("NoNewPrivs"), "1");
}

#[test]
fn the_pid_file_in_a_root_owned_directory_is_removed_at_exit() {
    if !can_switch() {
        return;
    }
    let mut site = start("");
    let pid = fs::read_to_string(&site.pid_file).expect("pid file");
    assert_eq!(pid.trim(), site.s.pid().to_string());
    let helper = site.helper();
    site.s.signal(libc::SIGTERM);
    let st = site.s.wait_exit(Duration::from_secs(10)).expect("stops");
    assert!(st.success(), "{st:?}");
    // The server waits for the helper to remove it before it exits.
    assert!(!site.pid_file.exists(), "pid file left behind");
    let err = site.error_log();
    assert!(err.contains("[info] stopped"), "{err}");
    assert!(!err.contains("cannot remove"), "{err}");
    wait_until("the helper to exit", || {
        fs::read_to_string(format!("/proc/{helper}/stat")).map_or(true, |s| s.contains(") Z "))
    });
}

#[test]
fn the_pid_file_is_removed_when_the_server_dies() {
    if !can_switch() {
        return;
    }
    let site = start("");
    assert!(site.pid_file.exists());
    site.s.signal(libc::SIGKILL);
    wait_until("the helper to remove the pid file", || {
        !site.pid_file.exists()
    });
}

#[test]
fn a_listen_address_added_by_a_reload_is_bound_through_the_helper() {
    if !can_switch() {
        return;
    }
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.listen_from_config();
    let listen = "listen = [\"127.0.0.1:0\"]\nuser = \"nobody\"\n[log]\nlevel = \"info\"\n";
    b.config(listen);
    let s = b.start();
    wait_until("the start", || s.stderr().contains("] started "));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    fs::write(
        s.base.path.join("brisk.toml"),
        listen.replace(
            "\"127.0.0.1:0\"]",
            &format!("\"127.0.0.1:0\", \"127.0.0.1:{port}\"]"),
        ),
    )
    .expect("config");
    s.signal(libc::SIGHUP);
    wait_until("the reload", || s.stderr().contains("SIGHUP:"));
    let err = s.stderr();
    assert!(err.contains("SIGHUP: configuration reloaded"), "{err}");
    assert!(
        err.contains(&format!(
            "[info] SIGHUP: now also listening on http://127.0.0.1:{port}/"
        )),
        "{err}"
    );
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"AAAA");
    // The old address serves on.
    assert_eq!(s.get("/a.txt").body, b"AAAA");
}

/// Started as root, brisk reads a reloaded configuration as the user it
/// serves as: brisk-priv reads for it, as root, only the TLS files
/// configured at start. A key at a new path (0600, root's, as every key
/// is) and a configuration file only root may read were refused with a
/// bare "Permission denied", which sent one looking for a mode to fix on
/// a file as private as the one that works; each line now says why, and
/// the way out. The previous configuration serves on.
#[cfg(feature = "tls")]
#[test]
fn a_reload_says_why_the_user_brisk_serves_as_cannot_read_a_root_only_file() {
    if !can_switch() {
        return;
    }
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let tls = b.base().join("tls");
    fs::create_dir(&tls).expect("mkdir");
    for (from, to) in [("a.pem", "a.pem"), ("a.key", "a.key"), ("a.key", "new.key")] {
        fs::copy(tls::testdata(from), tls.join(to)).expect("copy");
        fs::set_permissions(tls.join(to), fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let port = free_port();
    let cfg = format!(
        "user = \"nobody\"\n[tls]\nlisten = [\"127.0.0.1:{port}\"]\n[[tls.certificate]]\ncert = \"tls/a.pem\"\nkey = \"tls/a.key\"\n"
    );
    b.config(&cfg).listeners(2);
    let s = b.start();
    wait_until("the start", || s.stderr().contains("] started "));
    let config = s.base.path.join("brisk.toml");
    let refused = |n: usize| {
        s.signal(libc::SIGHUP);
        wait_until("the reload", || {
            s.stderr()
                .matches("still serving the previous configuration")
                .count()
                >= n
        });
        let err = s.stderr();
        err.lines()
            .rfind(|l| l.contains("SIGHUP"))
            .unwrap_or_default()
            .to_string()
    };
    let nobody = brisk::sys::privileges::lookup_user("nobody")
        .unwrap()
        .unwrap()
        .uid;
    let way_out = "restart brisk, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), which reads it as root as at start, or make it readable by that user; still serving the previous configuration";
    fs::write(&config, cfg.replace("tls/a.key", "tls/new.key")).expect("config");
    let line = refused(1);
    let key = tls.join("new.key");
    let want = format!(
        "tls.certificate[1].key: {}: cannot read it: Permission denied (os error 13): brisk reads it as the user it serves as, \"nobody\" (uid {nobody}), who may not (brisk-priv reads, as root, only the TLS files configured at start); {way_out}",
        key.display()
    );
    assert!(line.ends_with(&want), "{line}");
    fs::write(&config, &cfg).expect("config");
    fs::set_permissions(&config, fs::Permissions::from_mode(0o600)).expect("chmod");
    let line = refused(2);
    let want = format!(
        "[error] SIGHUP: {}: cannot read the configuration file: Permission denied (os error 13): brisk reads it again as the user it serves as, \"nobody\" (uid {nobody}), who may not (it read it as root at start); {way_out}",
        config.display()
    );
    assert!(line.ends_with(&want), "{line}");
    let mut c = s.connect_tls_to(([127, 0, 0, 1], port).into());
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"AAAA");
}

/// An htpasswd file only root may read (0600, as a careful set-up keeps
/// it) while brisk serves as nobody: the workers, which read it again
/// whenever it changes, cannot. The start is refused before any worker
/// starts, naming the rule, the file and the user, and it is a failure:
/// it exits with a failure status (a service manager's
/// `Restart=on-failure` acts on that alone), not 0 as after a stop; and
/// the banner's "listening on" is not said before it.
#[test]
fn an_htpasswd_file_the_serving_user_cannot_read_fails_the_start() {
    if !can_switch() {
        return;
    }
    let dir = TempDir::new("htpasswd-root-only");
    fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755)).expect("chmod");
    let root = dir.path.join("root");
    fs::create_dir(&root).expect("mkdir");
    let htpasswd = dir.path.join("htpasswd");
    // alice:secret (bcrypt)
    let user = "alice:$2y$05$1ab4NEKuKU/6N4o8FGmJWuCLhNZgo6Rqn8HhiKsn1DZxHGjVqklZO\n";
    fs::write(&htpasswd, user).expect("write htpasswd");
    fs::set_permissions(&htpasswd, fs::Permissions::from_mode(0o600)).expect("chmod");
    let config = dir.path.join("brisk.toml");
    let toml = "user = \"nobody\"\n[[auth]]\npath = \"/private/\"\nrealm = \"Private\"\nhtpasswd = \"htpasswd\"\n";
    fs::write(&config, toml).expect("write config");
    let (status, _, err) = run_brisk(&[
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--root",
        root.to_str().unwrap(),
        "--access-log",
        "off",
    ]);
    assert!(!status.success(), "exited with {status:?}:\n{err}");
    // (Named by where it was set: file, line and key.)
    let line = format!(
        "brisk: {}:5: auth[1].htpasswd: cannot read {} as the server runs (user \"nobody\", uid ",
        config.display(),
        htpasswd.display()
    );
    assert!(err.contains(&line), "{err}");
    assert!(!err.contains("cannot start worker"), "{err}");
    // Nor did it say it listens first.
    assert!(!err.contains("listening on"), "{err}");
}

/// A user and a group made for one test (useradd, groupadd), the user a
/// member of the group but not its primary one; removed when dropped.
struct Account {
    user: String,
    group: String,
}

impl Account {
    /// `None`, saying the test skips, without useradd and groupadd.
    fn new(tag: &str) -> Option<Account> {
        let id = std::process::id();
        let (user, group) = (format!("bt{tag}{id}"), format!("btg{tag}{id}"));
        let run = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !run("groupadd", &[&group]) {
            skip("needs groupadd and useradd (the passwd package)");
            return None;
        }
        let account = Account { user, group };
        let shell = ["--shell", "/usr/sbin/nologin", "--no-create-home"];
        let groups = ["-G", account.group.as_str(), account.user.as_str()];
        assert!(
            run("useradd", &[&shell[..], &groups[..]].concat()),
            "useradd"
        );
        Some(account)
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel")
            .arg(&self.user)
            .status();
        let _ = std::process::Command::new("groupdel")
            .arg(&self.group)
            .status();
    }
}

/// The user brisk serves as keeps the groups it is a member of (as
/// nginx's `user` does, by initgroups): a tree readable by one of them
/// only is served, and the start says which groups.
#[test]
fn the_serving_user_keeps_its_groups() {
    use std::os::unix::fs::chown;
    if !can_switch() {
        return;
    }
    let Some(account) = Account::new("g") else {
        return;
    };
    let gid = brisk::sys::privileges::lookup_group(&account.group)
        .unwrap()
        .expect("the group made");
    let mut b = Builder::new();
    b.file("index.html", b"members only");
    let root = b.root().to_path_buf();
    chown(&root, Some(0), Some(gid)).expect("chown");
    fs::set_permissions(&root, fs::Permissions::from_mode(0o750)).expect("chmod");
    chown(root.join("index.html"), Some(0), Some(gid)).expect("chown");
    fs::set_permissions(root.join("index.html"), fs::Permissions::from_mode(0o640)).expect("chmod");
    fs::set_permissions(b.base(), fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config(&format!("user = \"{}\"\n", account.user));
    let s = b.start();
    let line = s.wait_stderr_line(&format!("running as user \"{}\"", account.user));
    assert!(line.contains(&format!(", also groups {gid})")), "{line}");
    let r = s.get("/");
    assert_eq!((r.status, r.text().as_str()), (200, "members only"));
    let status = fs::read_to_string(format!("/proc/{}/status", s.pid())).expect("status");
    let groups = status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .expect("Groups:");
    assert!(
        groups.split_whitespace().any(|g| g == gid.to_string()),
        "{groups}"
    );
}

/// A configuration file only root may read, started as root serving as
/// nobody: the start warns that every reload will fail (a reload reads
/// it again as nobody), rather than the first SIGHUP finding out.
#[test]
fn a_configuration_only_root_may_read_is_warned_about_at_the_start() {
    if !can_switch() {
        return;
    }
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    let config = b.base().join("own.toml");
    fs::write(&config, "user = \"nobody\"\n").expect("config");
    fs::set_permissions(&config, fs::Permissions::from_mode(0o600)).expect("chmod");
    b.arg("--config").arg(config.to_str().unwrap());
    let s = b.start();
    let line = s.wait_stderr_line("cannot read this configuration file");
    let want = format!(
        "[warn] {}: user \"nobody\" cannot read this configuration file, so a reload (SIGHUP, brisk --reload) will fail: brisk reads it again as that user; make it readable by them (brisk --upgrade reads it as root, as at start)",
        config.display()
    );
    assert!(line.ends_with(&want), "{line}");
    assert_eq!(s.get("/a.txt").status, 200);
}

/// ACME's storage, started as root: a directory others may enter (a
/// shared `/tmp`-like one, root's 1777) is refused by name, not given to
/// the serving user; a private one brisk made while it served as another
/// user (nobody) is given, with the keys in it, to the user it serves as
/// now, which then reads them (the local CA's certificate serves).
#[cfg(feature = "acme")]
#[test]
fn acme_storage_is_given_to_the_serving_user_only_when_private() {
    if !can_switch() {
        return;
    }
    let Some(account) = Account::new("a") else {
        return;
    };
    // (Beside the servers' own directories, which go with them.)
    let dir = TempDir::new("acme-storage");
    let base = dir.path.clone();
    fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).expect("chmod");
    let shared = base.join("shared");
    fs::create_dir(&shared).expect("mkdir");
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let toml = |user: &str, storage: &Path| {
        format!(
            "user = \"{user}\"\n[log]\nlevel = \"info\"\n[tls]\nlisten = [\"127.0.0.1:0\"]\n\
             [acme]\nstorage = \"{}\"\nhosts = [\"localhost\"]\n",
            storage.display()
        )
    };
    let config = base.join("acme.toml");
    fs::write(&config, toml("nobody", &shared)).expect("config");
    let (status, _, err) = run_brisk(&["--config", config.to_str().unwrap()]);
    assert!(!status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "acme: storage {}: owned by uid 0 with mode 1777, which other users may enter",
            shared.display()
        )),
        "{err}"
    );
    assert_eq!(fs::metadata(&shared).unwrap().uid(), 0, "left as it was");

    // Made while serving as nobody...
    let storage = base.join("acme");
    fs::write(&config, toml("nobody", &storage)).expect("config");
    let mut b = Builder::new();
    b.arg("--config").arg(config.to_str().unwrap()).listeners(2);
    let s = b.start();
    s.wait_stderr_line("from brisk's local CA");
    drop(s);
    let nobody = fs::metadata(storage.join("local/key.pem")).unwrap().uid();
    assert_ne!(nobody, 0);
    // ...then served as another user: given to it, keys and all.
    fs::write(&config, toml(&account.user, &storage)).expect("config");
    let mut b = Builder::new();
    b.arg("--config").arg(config.to_str().unwrap()).listeners(2);
    let s = b.start();
    let line = s.wait_stderr_line("acme: storage ");
    let uid = brisk::sys::privileges::lookup_user(&account.user)
        .unwrap()
        .expect("the user made")
        .uid;
    assert!(
        line.ends_with(&format!(
            "acme: storage {}: given to uid {uid}, the user brisk serves as (it was uid {nobody}'s)",
            storage.display()
        )),
        "{line}"
    );
    // (Its stored certificate, read by the new user, serves.)
    let ca = fs::read(storage.join("local/ca.pem")).expect("the local CA");
    use rustls::pki_types::{pem::PemObject as _, CertificateDer};
    let ca = CertificateDer::from_pem_slice(&ca).expect("PEM");
    let served = poll(Duration::from_secs(10), || {
        crate::acme::served_chain(s.addrs[1], "localhost", ca.clone()).ok()
    });
    assert!(served.is_some(), "{}", s.stderr());
    for file in ["", "local", "local/key.pem", "local/chain.pem"] {
        assert_eq!(
            fs::metadata(storage.join(file)).unwrap().uid(),
            uid,
            "{file}"
        );
    }
    assert!(!s.stderr().contains("[error]"), "{}", s.stderr());
}
