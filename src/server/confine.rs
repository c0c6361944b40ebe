//! Confinement after start-up: who may serve (never root by accident),
//! `chroot`, the switch to the configured user, and the kernel sandbox.
//!
//! [`super::run`] applies them in this order, between opening everything
//! (listeners, document root, log files, pid file) and starting any
//! thread, so that every thread and every CGI child inherits them:
//!
//! 1. [`check_identity`], before anything is bound;
//! 2. [`enter_jail`] (`chroot`), while still root;
//! 3. [`switch_user`] (setgroups, setgid, setuid, verified);
//! 4. [`sandbox`]: Landlock for files, seccomp for system calls.

use std::path::{Path, PathBuf};

use crate::config::{CgiTarget, Config, Level, LogTarget};
use crate::sys::privileges::{self, SwitchError};
use crate::sys::sandbox::{self, fs_access, Extra, Ruleset};
use crate::sys::syscalls;

/// Lines to log once the log writer runs (confinement happens before it
/// starts).
pub type Notes = Vec<(Level, String)>;

/// Started as root with neither `user` nor `allow_root`: serve as `nobody`
/// (what nginx does by default) rather than as root. Returns a line saying
/// so; without a `nobody` account nothing changes, and
/// [`check_identity`] then refuses to start.
pub fn default_user(cfg: &mut Config) -> Option<String> {
    if privileges::euid() != 0 || cfg.user.is_some() || cfg.allow_root {
        return None;
    }
    let account = privileges::lookup_user("nobody").ok().flatten()?;
    cfg.user = Some(crate::config::User {
        name: "nobody".to_string(),
        uid: account.uid,
        gid: account.gid,
    });
    Some(
        "started as root with no user configured: serving as \"nobody\" (set user = \"NAME\", or allow_root = true to serve as root)"
            .to_string(),
    )
}

/// Refuses to go on as root unless the configuration says so, and refuses
/// a user change that cannot work without root.
pub fn check_identity(cfg: &Config) -> Result<(), String> {
    let euid = privileges::euid();
    let target = cfg.user.as_ref().map_or(euid, |u| u.uid);
    if target == 0 && !cfg.allow_root {
        return Err(match &cfg.user {
            Some(u) => format!(
                "refusing to serve as root (user = \"{}\" is root); set allow_root = true (or --allow-root) if that is really meant",
                u.name
            ),
            None => "refusing to serve as root; set user = \"www-data\" (or --user NAME) to switch to an unprivileged user after binding, or allow_root = true (or --allow-root) to serve as root anyway".to_string(),
        });
    }
    if euid != 0 {
        if let Some(u) = &cfg.user {
            if u.uid != euid {
                return Err(format!(
                    "cannot switch to user \"{}\" (uid {}): brisk runs as uid {euid}, and only root can change user",
                    u.name, u.uid
                ));
            }
        }
    }
    Ok(())
}

/// `chroot` to the configured directory, if any; the caller then sees
/// its configuration through [`Config::in_jail`].
pub fn enter_jail(cfg: &Config) -> Result<bool, String> {
    let Some(jail) = &cfg.chroot else {
        return Ok(false);
    };
    privileges::chroot(jail).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            " (chroot needs root)"
        } else {
            ""
        };
        format!("cannot chroot to {}: {e}{hint}", jail.display())
    })?;
    Ok(true)
}

/// Notes the log and pid files that lie outside the chroot directory:
/// `outside` is the configuration before the chroot, `inside` after.
pub fn note_outside_jail(outside: &Config, inside: &Config, notes: &mut Notes) {
    let logs = [
        (&outside.log.access, &inside.log.access),
        (&outside.log.error, &inside.log.error),
    ];
    for (before, after) in logs {
        if let (LogTarget::File(p), LogTarget::Off) = (before, after) {
            notes.push((
                Level::Warn,
                format!(
                    "{} lies outside the chroot: it stays open, but SIGUSR1 cannot reopen it",
                    p.display()
                ),
            ));
        }
    }
    if let (Some(p), None) = (&outside.pid_file, &inside.pid_file) {
        notes.push((
            Level::Warn,
            format!(
                "the pid file {} lies outside the chroot and will not be removed on exit",
                p.display()
            ),
        ));
    }
}

/// Switches to the configured user and group, if any, and verifies it.
pub fn switch_user(cfg: &Config, notes: &mut Notes) -> Result<(), String> {
    let Some(user) = &cfg.user else {
        if privileges::euid() == 0 {
            notes.push((
                Level::Warn,
                "serving as root (allow_root = true)".to_string(),
            ));
        }
        return Ok(());
    };
    let gid = cfg.group.as_ref().map_or(user.gid, |g| g.gid);
    privileges::switch_user(user.uid, gid).map_err(|e| {
        let what = match &e {
            SwitchError::Call(..) => "cannot switch",
            SwitchError::Verify(_) => "refusing to serve after switching",
        };
        format!(
            "{what} to user \"{}\" (uid {}, gid {gid}): {e}",
            user.name, user.uid
        )
    })?;
    notes.push((
        Level::Info,
        format!(
            "running as user \"{}\" (uid {}, gid {gid})",
            user.name, user.uid
        ),
    ));
    Ok(())
}

/// Directories a CGI program typically needs to start: its interpreter,
/// shared libraries, and `/etc` (ld.so.cache, locale, passwd for `id`).
const SYSTEM_DIRS: &[&str] = &["/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"];

/// Read-only for CGI programs: language runtimes read `/proc/self`.
const PROC: &str = "/proc";

/// Device files scripts use (`2>/dev/null`, random numbers).
const DEVICES: &[(&str, u64)] = &[
    ("/dev/null", fs_access::READ_FILE | fs_access::WRITE_FILE),
    ("/dev/zero", fs_access::READ_FILE),
    ("/dev/urandom", fs_access::READ_FILE),
];

/// The file rules of the sandbox: `(path, rights)`. `cfg` is the
/// configuration as seen from inside any chroot. With `programs`, the
/// sandbox is one CGI programs inherit: they may also run the scripts and
/// interpreters, and read and run the system directories.
fn landlock_rules(cfg: &Config, notes: &mut Notes, programs: bool) -> Vec<(PathBuf, u64)> {
    use fs_access::*;
    let read = READ_FILE | READ_DIR;
    let exec = if programs { EXECUTE } else { 0 };
    // A `pattern` rule runs scripts found anywhere under the root.
    let patterns = cfg
        .cgi
        .iter()
        .any(|r| matches!(r.target, CgiTarget::Pattern(_)));
    let root_rights = if patterns { read | exec } else { read };
    let mut rules = vec![(cfg.root.clone(), root_rights)];
    let mut read_trees = vec![cfg.root.clone()];
    for rule in &cfg.cgi {
        match &rule.target {
            CgiTarget::Dir { dir, .. } => {
                rules.push((dir.clone(), read | exec));
                read_trees.push(dir.clone());
            }
            CgiTarget::Program { program, .. } => rules.push((program.clone(), READ_FILE | exec)),
            CgiTarget::Pattern(_) => {}
        }
        if let (Some(i), true) = (&rule.interpreter, programs) {
            rules.push((i.clone(), READ_FILE | EXECUTE));
        }
    }
    if programs && !cfg.cgi.is_empty() {
        rules.extend(
            SYSTEM_DIRS
                .iter()
                .map(|d| (PathBuf::from(d), read | EXECUTE)),
        );
        rules.extend(DEVICES.iter().map(|(d, a)| (PathBuf::from(d), *a)));
        rules.push((PathBuf::from(PROC), read));
    }
    // htpasswd files are read by the workers and again when they change;
    // tools that replace the file (write a new one, rename it over) make a
    // new inode, so the right is on the directory: reading files there,
    // not listing it.
    for rule in &cfg.auth {
        rules.push((rule.htpasswd.clone(), READ_FILE));
        if let Some(dir) = rule.htpasswd.parent() {
            rules.push((dir.to_path_buf(), READ_FILE));
        }
    }
    let contains_tree = |dir: &Path| read_trees.iter().any(|t| t.starts_with(dir));
    for target in [&cfg.log.access, &cfg.log.error] {
        let LogTarget::File(file) = target else {
            continue;
        };
        rules.push((file.clone(), WRITE_FILE));
        // Reopening after a rename-style rotation creates the file anew,
        // which needs rights on the directory.
        if let Some(dir) = file.parent() {
            rules.push((dir.to_path_buf(), WRITE_FILE | MAKE_REG));
            if contains_tree(dir) {
                notes.push((
                    Level::Warn,
                    format!(
                        "sandbox: the log directory {} contains the document root or a CGI directory, so files beneath them stay writable; keep logs in a directory of their own",
                        dir.display()
                    ),
                ));
            }
        }
    }
    // Read again on SIGHUP. Editors save by writing a new file and renaming
    // it over the old one, so the right is on the directory, as for the
    // htpasswd files: reading files there, not listing it.
    if let Some(file) = &cfg.config_file {
        rules.push((file.clone(), READ_FILE));
        if let Some(dir) = file.parent() {
            rules.push((dir.to_path_buf(), READ_FILE));
        }
    }
    if let Some(dir) = cfg.pid_file.as_deref().and_then(Path::parent) {
        // Removed on exit.
        rules.push((dir.to_path_buf(), REMOVE_FILE));
    }
    rules
}

/// Whether the sandbox built for `running` also fits `new`: the same file
/// rules, and CGI on or off in both (which decides seccomp). The kernel
/// cannot widen a sandbox, so a reload that needs other paths needs a
/// restart.
pub fn sandbox_unchanged(running: &Config, new: &Config) -> bool {
    // The programs' rules hold every path the server's do.
    let rules = |c: &Config| landlock_rules(c, &mut Notes::new(), true);
    running.cgi.is_empty() == new.cgi.is_empty() && rules(running) == rules(new)
}

/// Applies the kernel sandbox as `cfg` (seen from inside any chroot)
/// allows. Never fails: what the kernel cannot do, or what goes wrong, is
/// noted as a warning and the server runs without that layer. With
/// `programs`, it is a sandbox CGI programs will inherit (the CGI
/// launcher's, or the server's own when there is no launcher): Landlock
/// also allows what programs need, and there is no seccomp filter.
pub fn sandbox(cfg: &Config, notes: &mut Notes, programs: bool) {
    if let Err(e) = sandbox::no_new_privs() {
        notes.push((
            Level::Warn,
            format!("sandbox: cannot set no_new_privs ({e}); running unconfined"),
        ));
        return;
    }
    let cgi = programs && !cfg.cgi.is_empty();
    match landlock(cfg, cgi, notes) {
        Ok(Some(abi)) => notes.push((
            Level::Info,
            format!(
                "sandbox: Landlock (ABI {abi}) on: read-only beneath the document root{}{}{}, writes only to the logs",
                if cfg.cgi.is_empty() { "" } else { ", CGI directories" },
                if cfg.auth.is_empty() { "" } else { ", the htpasswd files' directories" },
                if cfg.config_file.is_none() { "" } else { " and the configuration file's directory" }
            ),
        )),
        Ok(None) => notes.push((
            Level::Warn,
            "sandbox: this kernel has no Landlock; file access runs unconfined".to_string(),
        )),
        Err(e) => notes.push((
            Level::Warn,
            format!("sandbox: Landlock failed ({e}); file access runs unconfined"),
        )),
    }
    if cgi {
        notes.push((
            Level::Warn,
            "sandbox: relaxed for CGI: no seccomp filter, and Landlock also allows reading and running /usr, /lib, /lib64, /bin, /sbin and /etc, and reading /proc, because CGI programs inherit the sandbox".to_string(),
        ));
        return;
    }
    if !cfg.cgi.is_empty() {
        notes.push((
            Level::Info,
            "sandbox: CGI programs start from a separate process (brisk-cgi) whose sandbox lets them read and run the system directories; the server keeps its own".to_string(),
        ));
    }
    match sandbox::seccomp_allow_only(syscalls::ALLOWED, syscalls::IOCTLS) {
        Ok(true) => notes.push((
            Level::Info,
            format!(
                "sandbox: seccomp on: {} system calls allowed, every other one fails with EPERM",
                syscalls::ALLOWED.len()
            ),
        )),
        Ok(false) => notes.push((
            Level::Warn,
            "sandbox: no seccomp filtering on this kernel or architecture; system calls run unconfined"
                .to_string(),
        )),
        Err(e) => notes.push((
            Level::Warn,
            format!("sandbox: seccomp failed ({e}); system calls run unconfined"),
        )),
    }
}

/// Builds and enforces the Landlock ruleset; the ABI version, or `None`
/// when the kernel has no Landlock.
fn landlock(cfg: &Config, cgi: bool, notes: &mut Notes) -> std::io::Result<Option<u32>> {
    // CGI programs may talk to databases and signal their own children.
    let extra = Extra {
        deny_tcp: !cgi,
        scope: !cgi,
    };
    let Some(mut ruleset) = Ruleset::new(extra)? else {
        return Ok(None);
    };
    for (path, access) in landlock_rules(cfg, notes, cgi) {
        ruleset.allow(&path, access).map_err(|e| {
            std::io::Error::new(e.kind(), format!("rule for {}: {e}", path.display()))
        })?;
    }
    let abi = ruleset.abi();
    ruleset.restrict_self()?;
    Ok(Some(abi))
}

#[cfg(test)]
mod tests {
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
            eprintln!("skipped: no Landlock on this kernel");
            return;
        }
        let dir = temp_site("strict");
        let out = in_child("server::confine::tests::strict_child", &dir);
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
            root: root.clone(),
            ..Config::default()
        };
        let mut notes = Notes::new();
        sandbox(&cfg, &mut notes, false);
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
            eprintln!("skipped: no Landlock on this kernel");
            return;
        }
        let dir = temp_site("cgi");
        let out = in_child("server::confine::tests::cgi_child", &dir);
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
            root: root.clone(),
            cgi: vec![crate::config::CgiRule {
                target: CgiTarget::Pattern("*.cgi".to_string()),
                interpreter: None,
                env: Vec::new(),
            }],
            ..Config::default()
        };
        let mut notes = Notes::new();
        // The sandbox of the CGI launcher (or of a server without one).
        sandbox(&cfg, &mut notes, true);
        assert!(
            notes.iter().any(|(_, n)| n.contains("relaxed for CGI")),
            "{notes:?}"
        );
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
}
