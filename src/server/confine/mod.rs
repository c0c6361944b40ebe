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
//! 4. [`switch_user`] (setgroups, setgid, setuid, verified);
//! 5. [`Plan::apply`] ([`sandbox`]): Landlock for files, seccomp for
//!    system calls.

mod sandbox;

pub use sandbox::{confine_server, prepare, Plan, Sandboxes};

use crate::config::{Config, Level, LogTarget};
use crate::sys::privileges::{self, SwitchError};

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
    // The configuration was checked: a user without a primary group comes
    // with a group.
    let Some(gid) = cfg.group.as_ref().map(|g| g.gid).or(user.gid) else {
        return Err(format!(
            "user \"{}\" has no primary group and no group is set",
            user.name
        ));
    };
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
