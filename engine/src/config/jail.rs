//! `user`, `group` and `chroot`: names resolved when the file is loaded
//! (the user database may not exist inside a jail), paths checked against
//! the jail, and the configuration as the server sees it once inside.
//!
//! Paths in the configuration are always written as seen from outside the
//! jail: the server opens its listeners, the document root and the log
//! files before it calls `chroot`, and only then confines itself.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::load::Origins;
use super::{CgiTarget, Config, ConfigError, Group, LogTarget, Upstream, User};
use crate::sys::privileges;

/// Names resolved so far in this process. A reload (SIGHUP) runs inside
/// the sandbox and after any chroot, where the user database may be out of
/// reach; the user and group cannot change without a restart anyway, so
/// the names they had at start are answered from here.
static KNOWN_USERS: Mutex<Vec<User>> = Mutex::new(Vec::new());
static KNOWN_GROUPS: Mutex<Vec<Group>> = Mutex::new(Vec::new());

std::thread_local! {
    /// Set while a reload loads the configuration: a name not resolved at
    /// start is then a change only a restart makes, said as such, rather
    /// than looked up (the sandbox keeps the user database out of reach,
    /// and the process has left root anyway).
    static RELOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While it lives, [`user`] and [`group`] answer only the names resolved
/// so far (a reload's).
pub(super) struct Reloading(());

impl Reloading {
    pub(super) fn begin() -> Reloading {
        RELOADING.with(|r| r.set(true));
        Reloading(())
    }
}

impl Drop for Reloading {
    fn drop(&mut self) {
        RELOADING.with(|r| r.set(false));
    }
}

/// Why a `user` or `group` value names no account; the caller puts the
/// key (file and line) or the flag in front.
#[derive(Debug)]
pub(super) enum AccountError {
    /// An empty name; `kind` is "user" or "group".
    Empty { kind: &'static str },
    /// Neither a name in the database nor a numeric id.
    Unknown { kind: &'static str, name: String },
    /// The database could not be read.
    Lookup {
        kind: &'static str,
        name: String,
        source: io::Error,
    },
    /// The database could not be read for a numeric user id.
    LookupUid { uid: u32, source: io::Error },
    /// On a reload, another account than brisk started with.
    Changed { name: String },
}

impl std::fmt::Display for AccountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccountError::Empty { kind } => write!(f, "expected a {kind} name or id; got \"\""),
            AccountError::Unknown { kind, name } => write!(
                f,
                "no {kind} named {name:?} on this system (a numeric id is accepted too)"
            ),
            AccountError::Lookup { kind, name, source } => {
                write!(f, "cannot look up {kind} {name:?}: {source}")
            }
            AccountError::LookupUid { uid, source } => {
                write!(f, "cannot look up user id {uid}: {source}")
            }
            AccountError::Changed { name } => write!(
                f,
                "changed to {name:?}, which takes effect only at start; restart brisk, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), to apply the change"
            ),
        }
    }
}

/// `name` from `known`, or else looked up with `lookup` (`None`: no such
/// account) and remembered; `kind` ("user" or "group") is for the error.
fn remembered<T: Clone>(
    known: &Mutex<Vec<T>>,
    kind: &'static str,
    name: &str,
    name_of: fn(&T) -> &str,
    lookup: impl FnOnce() -> Result<Option<T>, AccountError>,
) -> Result<T, AccountError> {
    if name.is_empty() {
        return Err(AccountError::Empty { kind });
    }
    let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = known.iter().find(|t| name_of(t) == name) {
        return Ok(t.clone());
    }
    if RELOADING.with(|r| r.get()) {
        return Err(AccountError::Changed {
            name: name.to_string(),
        });
    }
    let t = lookup()?.ok_or_else(|| AccountError::Unknown {
        kind,
        name: name.to_string(),
    })?;
    known.push(t.clone());
    Ok(t)
}

/// The error of a failed look-up of the `kind` account `name`.
fn lookup_failed<'a>(
    kind: &'static str,
    name: &'a str,
) -> impl FnOnce(io::Error) -> AccountError + 'a {
    move |source| AccountError::Lookup {
        kind,
        name: name.to_string(),
        source,
    }
}

/// A name made of decimal digits read as a numeric id (containers run as
/// ids that have no entry in the user database). `u32::MAX` is `(uid_t)-1`,
/// which setuid reads as "leave unchanged", so it is no id.
fn numeric_id(name: &str) -> Option<u32> {
    if !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse::<u32>().ok().filter(|&id| id != u32::MAX)
}

/// Resolves a `user` value: a name in the user database, or else a
/// numeric user id (with that id's primary group if the database has
/// an entry for it).
pub(super) fn user(name: &str) -> Result<User, AccountError> {
    remembered(
        &KNOWN_USERS,
        "user",
        name,
        |u| &u.name,
        || {
            // (Its uid, primary group, and the name the database gives a
            // numeric id.)
            let found = match privileges::lookup_user(name).map_err(lookup_failed("user", name))? {
                Some(a) => Some((a.uid, Some(a.gid), None)),
                None => match numeric_id(name) {
                    Some(uid) => match privileges::lookup_uid(uid) {
                        Ok(Some((login, a))) => Some((uid, Some(a.gid), Some(login))),
                        Ok(None) => Some((uid, None, None)),
                        Err(source) => return Err(AccountError::LookupUid { uid, source }),
                    },
                    None => None,
                },
            };
            Ok(found.map(|(uid, gid, login)| User {
                name: name.to_string(),
                uid,
                gid,
                groups: gid.map_or_else(Vec::new, |gid| {
                    privileges::member_groups(login.as_deref().unwrap_or(name), gid)
                }),
            }))
        },
    )
}

/// Resolves a `group` value: a name in the group database, or else a
/// numeric group id.
pub(super) fn group(name: &str) -> Result<Group, AccountError> {
    remembered(
        &KNOWN_GROUPS,
        "group",
        name,
        |g| &g.name,
        || {
            let gid = privileges::lookup_group(name).map_err(lookup_failed("group", name))?;
            Ok(gid.or_else(|| numeric_id(name)).map(|gid| Group {
                name: name.to_string(),
                gid,
            }))
        },
    )
}

impl Config {
    /// Started as root with neither `user` nor `allow_root`, brisk serves
    /// as `nobody` (what nginx does) rather than as root: that account, if
    /// this applies and it exists.
    pub fn default_user(&self) -> Option<User> {
        if privileges::euid() != 0 || self.user.is_some() || self.allow_root {
            return None;
        }
        let account = privileges::lookup_user("nobody").ok().flatten()?;
        Some(User {
            name: "nobody".to_string(),
            uid: account.uid,
            gid: Some(account.gid),
            groups: privileges::member_groups("nobody", account.gid),
        })
    }
}

fn error(message: String) -> ConfigError {
    ConfigError { message }
}

/// The checks that need the final configuration: `group` needs `user`,
/// and with `chroot`, the jail must be a directory holding the document
/// root, every CGI directory, program, interpreter and writable path,
/// `temp_dir` (with CGI), and every htpasswd file (stored canonical, so
/// that the jail-relative paths are the real ones).
pub(super) fn check(config: &mut Config, origins: &Origins) -> Result<(), ConfigError> {
    if config.group.is_some() && config.user.is_none() {
        let from = origins.group.as_deref().unwrap_or("--group");
        return Err(error(format!(
            "{from}: a group is only used together with user = \"NAME\" (or --user NAME)"
        )));
    }
    if let (Some(u), None) = (&config.user, &config.group) {
        if u.gid.is_none() {
            // Guessing (gid 0 as Docker does, or the same number) could
            // hand out a group with rights (root, adm, sudo): ask instead.
            let from = origins.user.as_deref().unwrap_or("--user");
            return Err(error(format!(
                "{from}: user id {} has no entry in the user database, so no primary group; set group = \"GID\" (or --group GID) too",
                u.uid
            )));
        }
    }
    let Some(jail) = &config.chroot else {
        return Ok(());
    };
    let from = origins.chroot.as_deref().unwrap_or("chroot");
    let jail = crate::sys::fs::canonical(jail).map_err(|e| {
        error(format!(
            "{from}: cannot use {} as the chroot directory: {e}",
            jail.display()
        ))
    })?;
    if !jail.is_dir() {
        return Err(error(format!(
            "{from}: {} is not a directory",
            jail.display()
        )));
    }
    let outside = |what: &str, path: &Path| {
        error(format!(
            "{what}: {} is outside the chroot directory {} ({from}); after the chroot it could not be reached",
            path.display(),
            jail.display()
        ))
    };
    let sites = std::iter::once(&mut config.site).chain(config.sites.iter_mut());
    let site_origins = std::iter::once(&origins.site).chain(&origins.sites);
    for (n, (site, origins)) in sites.zip(site_origins).enumerate() {
        // Keys as the file names them: `cgi[1].dir`, `site[2].cgi[1].dir`.
        let prefix = super::SiteConfig::key_prefix(n);
        if !site.root.starts_with(&jail) {
            let what = origins.root.clone().unwrap_or(format!("{prefix}root"));
            return Err(outside(&what, &site.root));
        }
        for (i, rule) in site.cgi.iter_mut().enumerate() {
            let origin = |key: &str| {
                origins
                    .cgi
                    .get(i)
                    .and_then(|o| o.iter().find(|(k, _)| *k == key))
                    .map_or_else(
                        || format!("{prefix}cgi[{}].{key}", i + 1),
                        |(_, o)| o.clone(),
                    )
            };
            let mut paths: Vec<(&str, &mut PathBuf)> = Vec::new();
            match &mut rule.target {
                CgiTarget::Dir { dir, .. } => paths.push(("dir", dir)),
                CgiTarget::Program { program, .. } => paths.push(("program", program)),
                CgiTarget::Pattern(_) => {}
            }
            if let Some(interp) = &mut rule.interpreter {
                paths.push(("interpreter", interp));
            }
            for w in &mut rule.writable {
                paths.push(("writable", w));
            }
            for (key, path) in paths {
                let real = crate::sys::fs::canonical(path).map_err(|e| {
                    error(format!(
                        "{}: cannot use {}: {e}",
                        origin(key),
                        path.display()
                    ))
                })?;
                if !real.starts_with(&jail) {
                    return Err(outside(&origin(key), &real));
                }
                *path = real;
            }
        }
        // (The `[[webdav]]` trees are opened by path when a worker
        // starts, inside the jail.)
        for (i, rule) in site.webdav.iter_mut().enumerate() {
            let what = origins
                .webdav
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("{prefix}webdav[{}].root", i + 1));
            let real = crate::sys::fs::canonical(&rule.root)
                .map_err(|e| error(format!("{what}: cannot use {}: {e}", rule.root.display())))?;
            if !real.starts_with(&jail) {
                return Err(outside(&what, &real));
            }
            rule.root = real;
        }
        // (Unix sockets of upstreams are connected by path from inside
        // the jail, as the scripts of `[[fastcgi]]` are looked for.)
        let origin = |all: &[String], name: &str, i: usize, key: &str| match all.get(i) {
            Some(o) => format!("{o}.{key}"),
            None => format!("{prefix}{name}[{}].{key}", i + 1),
        };
        let socket_outside = |to: &[Upstream]| {
            to.iter().find_map(|up| match up {
                Upstream::Unix(path) if !path.starts_with(&jail) => Some(path.clone()),
                _ => None,
            })
        };
        for (i, rule) in site.reverse_proxy.iter().enumerate() {
            if let Some(path) = socket_outside(&rule.to) {
                let what = origin(&origins.reverse_proxy, "reverse_proxy", i, "to");
                return Err(outside(&what, &path));
            }
        }
        for (i, rule) in site.fastcgi.iter().enumerate() {
            if let Some(path) = socket_outside(&rule.to) {
                return Err(outside(
                    &origin(&origins.fastcgi, "fastcgi", i, "to"),
                    &path,
                ));
            }
            if let Some(root) = rule.root.as_deref().filter(|r| !r.starts_with(&jail)) {
                return Err(outside(
                    &origin(&origins.fastcgi, "fastcgi", i, "root"),
                    root,
                ));
            }
        }
        for (i, rule) in site.auth.iter_mut().enumerate() {
            let what = format!("{prefix}auth[{}].htpasswd", i + 1);
            let real = crate::sys::fs::canonical(&rule.htpasswd).map_err(|e| {
                error(format!(
                    "{what}: cannot use {}: {e}",
                    rule.htpasswd.display()
                ))
            })?;
            if !real.starts_with(&jail) {
                return Err(outside(&what, &real));
            }
            rule.htpasswd = real;
        }
    }
    // (Certificates are stored and renewed while serving, inside the
    // jail.)
    #[cfg(feature = "acme")]
    if let Some(acme) = config
        .acme
        .as_ref()
        .filter(|a| !a.storage.starts_with(&jail))
    {
        return Err(outside(&format!("{}.storage", acme.origin), &acme.storage));
    }
    if config.holds_bodies() && !config.temp_dir.starts_with(&jail) {
        let what = origins
            .temp_dir
            .as_deref()
            .unwrap_or("temp_dir (default: $TMPDIR or /tmp; set one inside the chroot)");
        return Err(outside(what, &config.temp_dir));
    }
    config.chroot = Some(jail);
    Ok(())
}

/// `path` as seen from inside `jail`, if it lies inside.
pub fn inside(path: &Path, jail: &Path) -> Option<PathBuf> {
    path.strip_prefix(jail)
        .ok()
        .map(|rest| Path::new("/").join(rest))
}

impl Config {
    /// The configuration as seen from inside the `chroot` directory: every
    /// path inside the jail made relative to it (as absolute paths from
    /// the new `/`). Log and pid files may lie outside: such a log becomes
    /// `Off` here (its file stays open, but no path reaches it any more)
    /// and such a pid file `None` (it cannot be removed), so that nothing
    /// opens or unlinks a same-named file inside the jail by mistake. The
    /// configuration file is `None`: a jailed server does not reload.
    /// Without `chroot`, unchanged. In place: the server's configuration
    /// is not `Clone`, and the view from outside is not needed after.
    pub fn rebase_in_jail(&mut self) {
        let Some(chroot) = self.chroot.take() else {
            return;
        };
        let jail = chroot.as_path();
        let c = &mut *self;
        let rebase = |p: &mut PathBuf| {
            if let Some(q) = inside(p, jail) {
                *p = q;
            }
        };
        for site in std::iter::once(&mut c.site).chain(c.sites.iter_mut()) {
            rebase(&mut site.root);
            for rule in &mut site.cgi {
                match &mut rule.target {
                    CgiTarget::Dir { dir, .. } => rebase(dir),
                    CgiTarget::Program { program, .. } => rebase(program),
                    CgiTarget::Pattern(_) => {}
                }
                if let Some(i) = &mut rule.interpreter {
                    rebase(i);
                }
                rule.writable.iter_mut().for_each(rebase);
            }
            for rule in &mut site.auth {
                rebase(&mut rule.htpasswd);
            }
            for rule in site.webdav.iter_mut() {
                rebase(&mut rule.root);
            }
            let sockets = site.reverse_proxy.iter_mut().map(|r| &mut r.to);
            for to in sockets.chain(site.fastcgi.iter_mut().map(|r| &mut r.to)) {
                for up in to.iter_mut() {
                    if let Upstream::Unix(path) = up {
                        if let Some(q) = inside(path, jail) {
                            *path = q.into();
                        }
                    }
                }
            }
            for rule in site.fastcgi.iter_mut() {
                if let Some(root) = &mut rule.root {
                    rebase(root);
                }
            }
        }
        rebase(&mut c.temp_dir);
        #[cfg(feature = "acme")]
        if let Some(acme) = c.acme.as_mut() {
            rebase(&mut acme.storage);
        }
        #[cfg(feature = "ops")]
        if let Some(keys) = c.tls.as_mut().and_then(|t| t.ticket_keys.as_mut()) {
            rebase(&mut keys.file);
        }
        for t in [&mut c.log.access, &mut c.log.error] {
            if let LogTarget::File(p) = t {
                match inside(p, jail) {
                    Some(q) => *p = q,
                    None => *t = LogTarget::Off,
                }
            }
        }
        c.pid_file = c.pid_file.as_deref().and_then(|p| inside(p, jail));
        // No reload from inside a jail: the file's paths are outside it.
        c.config_file = None;
        self.chroot = Some(chroot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_jail() {
        let jail = Path::new("/srv/jail");
        assert_eq!(
            inside(Path::new("/srv/jail/www"), jail),
            Some(PathBuf::from("/www"))
        );
        assert_eq!(
            inside(Path::new("/srv/jail"), jail),
            Some(PathBuf::from("/"))
        );
        assert_eq!(inside(Path::new("/srv/jailbreak/x"), jail), None);
        assert_eq!(inside(Path::new("/var/log/a.log"), jail), None);
    }

    #[test]
    fn config_in_jail() {
        let jailed = |access: &str| {
            let mut c = Config {
                chroot: Some(PathBuf::from("/srv/jail")),
                pid_file: Some(PathBuf::from("/run/brisk.pid")),
                log: super::super::LogConfig {
                    access: LogTarget::File(PathBuf::from(access)),
                    ..Config::default().log
                },
                ..Config::default()
            };
            c.site.root = PathBuf::from("/srv/jail/www");
            c.rebase_in_jail();
            c
        };
        let j = jailed("/srv/jail/log/access.log");
        assert_eq!(j.site.root, PathBuf::from("/www"));
        assert_eq!(
            j.log.access,
            LogTarget::File(PathBuf::from("/log/access.log"))
        );
        assert_eq!(j.pid_file, None, "outside the jail");
        assert_eq!(j.log.error, LogTarget::Stderr);
        assert_eq!(j.chroot, Some(PathBuf::from("/srv/jail")));
        assert_eq!(j.config_file, None);
        assert_eq!(jailed("/var/log/a.log").log.access, LogTarget::Off);
        let mut free = Config::default();
        free.rebase_in_jail();
        assert_eq!(free.site.root, Config::default().site.root);
    }
}
