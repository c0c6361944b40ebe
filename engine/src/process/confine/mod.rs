//! Confinement after start-up: who may serve (never root by accident),
//! `chroot`, the switch to the configured user, and the kernel sandbox.
//!
//! [`super::run`] applies them in this order, between opening everything
//! (listeners, document root, log files, pid file) and starting any
//! thread, so that every thread and every CGI child inherits them:
//!
//! 1. [`check_identity`], before anything is bound;
//! 2. [`prepare`]: the sandbox's paths opened while they can be reached;
//! 3. [`enter_jail`] (`chroot`), while still root;
//! 4. [`switch_user`] (setgroups to the user's groups, setgid, setuid,
//!    verified);
//! 5. [`Plan::apply`] (`sandbox.rs`): Landlock for files, seccomp for
//!    system calls.

mod allowed;
mod sandbox;

pub use allowed::Sandboxes;
pub use sandbox::{confine_privileged, prepare, server_notes, Plan};

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::config::{Config, Level};
use crate::log::OpenLogs;
use crate::process::Error;
use crate::server::Server;
use crate::sys::launcher::{Launcher, Launchers};
use crate::sys::privileged::{Grants, Privileged};
use crate::sys::privileges;

/// Lines to log once the log writer runs (confinement happens before it
/// starts).
pub type Notes = Vec<(Level, String)>;

/// Started as root with neither `user` nor `allow_root`: serve as `nobody`
/// (what nginx does by default) rather than as root. Returns a line saying
/// so; without a `nobody` account nothing changes, and
/// [`check_identity`] then refuses to start.
pub fn default_user(cfg: &mut Config) -> Option<String> {
    cfg.user = Some(cfg.default_user()?);
    Some(
        "started as root with no user configured: serving as \"nobody\" (set user = \"NAME\", or allow_root = true to serve as root)"
            .to_string(),
    )
}

/// Refuses to go on as root unless the configuration says so, and refuses
/// a user change that cannot work without root.
pub fn check_identity(cfg: &Config) -> Result<(), Error> {
    let euid = privileges::euid();
    let target = cfg.user.as_ref().map_or(euid, |u| u.uid);
    if target == 0 && !cfg.allow_root {
        return Err(Error::RootRefused(
            cfg.user.as_ref().map(|u| u.name.clone()),
        ));
    }
    if euid != 0 {
        if let Some(u) = &cfg.user {
            if u.uid != euid {
                return Err(Error::NotRoot {
                    user: u.name.clone(),
                    uid: u.uid,
                    euid,
                });
            }
        }
    }
    Ok(())
}

/// `chroot` to the configured directory, if any; the caller then sees
/// its configuration through [`Config::rebase_in_jail`].
pub fn enter_jail(cfg: &Config) -> Result<bool, Error> {
    let Some(jail) = &cfg.chroot else {
        return Ok(false);
    };
    privileges::chroot(jail).map_err(|source| Error::Chroot {
        dir: jail.clone(),
        source,
    })?;
    Ok(true)
}

/// The outcome of `confine`.
pub struct Confined {
    /// Lines to log once the log writer runs.
    pub notes: Notes,
    /// What the sandboxes allow (`None` with `sandbox = false`).
    pub sandboxes: Option<Sandboxes>,
    /// The privileged helper, when there is one.
    pub privileged: Option<Arc<Privileged>>,
}

/// Everything is open (listeners, document root, log and pid files):
/// confines the process before any thread exists, so that every thread
/// and every CGI child inherits the result. In this order: the privileged
/// helper is forked (started as root and leaving it: it reopens the logs
/// and removes the pid file), the sandbox's paths are opened (Landlock
/// rules take descriptors), `chroot`, the user switch, the CGI launcher
/// forked and confined, and the server's own sandbox.
pub(super) fn confine(server: &mut Server, logs: &mut OpenLogs) -> Result<Confined, Error> {
    let helper = start_privileged(server.config(), logs)?;
    let privileged = helper.is_some();
    if let Some(helper) = &helper {
        server.set_privileged(Arc::clone(helper));
    }
    let cfg = server.config();
    let plans = if cfg.sandbox {
        let mut programs = Vec::new();
        for set in sandbox::writable_sets(cfg) {
            let plan = prepare(cfg, Some(&set), privileged)?;
            programs.push((set, plan));
        }
        let plan = prepare(cfg, None, privileged)?;
        let plan_notes = server_notes(cfg, &plan, privileged);
        Some((plan, plan_notes, programs))
    } else {
        None
    };
    let mut notes = Notes::new();
    if enter_jail(cfg)? {
        server.rebase_in_jail()?;
    }
    // From here on, paths as seen from inside the jail.
    let cfg = server.config();
    switch_user(cfg, &mut notes)?;
    let Some((plan, plan_notes, programs)) = plans else {
        return Ok(Confined {
            notes,
            sandboxes: None,
            privileged: helper,
        });
    };
    // With CGI, programs start from a process of their own, confined for
    // what they need, so that the server keeps a strict sandbox: one per
    // set of writable directories, since a sandbox is per process.
    let mut launcher_allows = Vec::new();
    if !programs.is_empty() {
        let timeout = cfg.timeouts.cgi;
        let mut launchers = Launchers::default();
        for (set, plan) in programs {
            launcher_allows.push((set.clone(), plan.allowed()));
            let launcher = Launcher::start(timeout, || plan.apply(&mut Notes::new()))
                .map_err(Error::Launcher)?;
            launchers.add(set, launcher);
        }
        server.set_launchers(Arc::new(launchers));
    }
    let server_allows = plan.allowed();
    notes.extend(plan_notes);
    plan.apply(&mut notes)?;
    Ok(Confined {
        notes,
        sandboxes: Some(Sandboxes {
            server: server_allows,
            launchers: launcher_allows,
            privileged,
        }),
        privileged: helper,
    })
}

/// Forks `brisk-priv` when brisk starts as root and leaves it (a user
/// switch or a chroot), and has the logs reopened through it: the server
/// could no longer open files in a root-owned log directory, nor reach
/// the logs and the pid file from inside a chroot.
fn start_privileged(cfg: &Config, logs: &mut OpenLogs) -> Result<Option<Arc<Privileged>>, Error> {
    let leaves_root = cfg.user.as_ref().is_some_and(|u| u.uid != 0) || cfg.chroot.is_some();
    if privileges::euid() != 0 || !leaves_root {
        return Ok(None);
    }
    let grants = Grants {
        logs: logs.files(),
        pid_file: cfg.pid_file.clone(),
        tls: cfg
            .tls
            .iter()
            .flat_map(|t| t.files())
            .map(|(path, _)| path)
            .collect(),
    };
    let sandbox = cfg.sandbox;
    let helper = Privileged::start(grants.clone(), move || confine_privileged(&grants, sandbox))
        .map_err(Error::PrivilegedHelper)?;
    let helper = Arc::new(helper);
    let opener = Arc::clone(&helper);
    logs.reopen_through(Arc::new(move |path: &Path| opener.open_log(path)));
    Ok(Some(helper))
}

/// The warning for a configuration `file` that `user` cannot read.
#[cold]
#[inline(never)]
fn unreadable_config(file: &Path, user: &str) -> String {
    format!(
        "{}: user \"{user}\" cannot read this configuration file, so a reload (SIGHUP, \
         brisk --reload) will fail: brisk reads it again as that user; make it readable by \
         them (brisk --upgrade reads it as root, as at start)",
        file.display()
    )
}

/// Switches to the configured user and group, if any, and verifies it.
pub fn switch_user(cfg: &Config, notes: &mut Notes) -> Result<(), Error> {
    let Some(user) = &cfg.user else {
        if privileges::euid() == 0 {
            notes.push((
                Level::Warn,
                "serving as root (allow_root = true)".to_string(),
            ));
        }
        return Ok(());
    };
    // The configuration was checked: a user without a primary group comes
    // with a group.
    let Some(gid) = cfg.group.as_ref().map(|g| g.gid).or(user.gid) else {
        return Err(Error::NoGroup(user.name.clone()));
    };
    privileges::switch_user(user.uid, gid, &user.groups).map_err(|source| Error::SwitchUser {
        user: user.name.clone(),
        uid: user.uid,
        gid,
        source,
    })?;
    let mut line = format!(
        "running as user \"{}\" (uid {}, gid {gid}",
        user.name, user.uid
    );
    for (i, g) in user.groups.iter().filter(|&&g| g != gid).enumerate() {
        let _ = write!(line, "{}{g}", if i == 0 { ", also groups " } else { " " });
    }
    line.push(')');
    notes.push((Level::Info, line));
    // A reload reads the configuration again as this user: one only root
    // may read would fail every SIGHUP, said only then.
    let unreadable = cfg.chroot.is_none()
        && (cfg.config_file.as_deref())
            .and_then(|f| std::fs::File::open(f).err())
            .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    if let (true, Some(file)) = (unreadable, &cfg.config_file) {
        notes.push((Level::Warn, unreadable_config(file, &user.name)));
    }
    Ok(())
}
