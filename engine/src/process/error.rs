//! The process layer's error: why brisk could not start, confine itself,
//! or reload. Each message names what failed and, where there is one, the
//! way out; they are the lines users and scripts read, so they stay as
//! they are.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::ConfigError;
use crate::log::LogError;
use crate::sys::privileges::SwitchError;

/// The way out of every sandbox error.
const TURN_OFF: &str = "set sandbox = false (or --no-sandbox) to run without Landlock and seccomp";

/// The end of every reload refusal the sandbox causes.
const RESTART: &str = "restart brisk to apply this configuration, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), which starts it anew with a sandbox made for this configuration";

/// Why brisk could not start, confine itself, or reload.
pub enum Error {
    /// `brisk` could not tell its current directory (to reload from).
    CurrentDir(io::Error),
    /// The signal mask could not be set.
    Signals(io::Error),
    /// As pid 1, the fork of the server from its stand-in init failed
    /// (`sys::init`).
    #[cfg(feature = "ops")]
    Init(io::Error),
    /// Would serve as root without `allow_root`; the configured user, if
    /// any.
    RootRefused(Option<String>),
    /// A user is configured, but only root can switch to it.
    NotRoot {
        /// The configured user.
        user: String,
        /// Its id.
        uid: u32,
        /// The id brisk runs as.
        euid: u32,
    },
    /// The engine could not bind, open the root or start.
    Server(crate::server::Error),
    /// Going to the background failed.
    Daemonize(io::Error),
    /// The pid file could not be written.
    PidFile {
        /// As configured.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The logs could not be opened or started.
    Log(LogError),
    /// `temp_dir` cannot hold the request bodies kept for CGI programs.
    TempDir {
        /// Where it was set (`site.toml:4: temp_dir`; `None`: the default).
        origin: Option<String>,
        /// `temp_dir`, as the server sees it.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An `[[auth]]` rule's htpasswd file cannot be read by the server as
    /// it runs (its user, its sandbox).
    Htpasswd {
        /// The setting (`auth[1].htpasswd`, `site[2].auth[1].htpasswd`).
        setting: String,
        /// The file.
        path: PathBuf,
        /// The user the server runs as, when one was set or chosen.
        user: Option<String>,
        /// Its id.
        uid: u32,
        /// Why.
        source: io::Error,
    },
    /// `chroot` failed.
    Chroot {
        /// The jail.
        dir: PathBuf,
        /// Why (EPERM: brisk is not root).
        source: io::Error,
    },
    /// The privileged helper (`brisk-priv`) did not start.
    PrivilegedHelper(io::Error),
    /// A CGI launcher (`brisk-cgi`) did not start.
    Launcher(io::Error),
    /// `user` has no primary group and no `group` is set.
    NoGroup(String),
    /// The switch to the configured user failed or did not stick.
    SwitchUser {
        /// The user's name.
        user: String,
        /// Its id.
        uid: u32,
        /// The group switched to.
        gid: u32,
        /// What failed.
        source: SwitchError,
    },
    /// `brisk-priv` could not drop the capabilities it does not need.
    Capabilities(io::Error),
    /// A sandbox step the kernel offers failed.
    Sandbox {
        /// The step: "cannot set no_new_privs", …
        what: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
    /// Landlock answered when the plan was made, but not any more.
    LandlockGone,
    /// A Landlock rule's path could not be opened or added.
    SandboxRule {
        /// The path.
        path: PathBuf,
        /// The setting that needs it (`root`, `cgi[1].dir`, …).
        setting: String,
        /// Why; `None`: the path does not exist.
        source: Option<io::Error>,
    },
    /// A reloaded configuration names a file the sandbox does not let
    /// the server read.
    SandboxUnreadable(PathBuf),
    /// A reloaded configuration adds CGI, but brisk started without any,
    /// so no CGI launcher runs.
    SandboxNoLauncher,
    /// A reloaded configuration needs what the sandbox does not allow:
    /// each entry names a setting (`root = /srv/new`).
    SandboxNotAllowed(Vec<String>),
    /// SIGHUP with no configuration to load again (brisk runs embedded).
    NoReload,
    /// SIGHUP inside a chroot, where the configuration's paths are out of
    /// reach.
    ReloadInChroot,
    /// The configuration loaded again is not valid.
    Config(ConfigError),
    /// The configuration loaded again changes keys that take effect only
    /// at start.
    RestartOnly(Vec<&'static str>),
    /// The configuration loaded again adds a listen address, which the
    /// sandbox keeps the server from opening.
    ListenNeedsRestart(SocketAddr),
    /// The configuration loaded again serves HTTP/3 on a TLS address
    /// that has no UDP socket yet (a new one, or HTTP/3 turned on), which
    /// the sandbox keeps the server from opening.
    QuicNeedsRestart(SocketAddr),
    /// The sockets systemd passed (`LISTEN_FDS`) cannot be used.
    SocketActivation(io::Error),
    /// `$NOTIFY_SOCKET` is set but cannot be reached.
    Notify(io::Error),
    /// The sockets a previous brisk handed over (an upgrade) cannot be used.
    Handover(io::Error),
    /// The upgrade helper (`brisk-upgrade`) did not start.
    UpgradeHelper(io::Error),
    /// A worker stopped while serving (its reason is in the error log):
    /// brisk stopped too, and exits with a failure.
    WorkerDied,
}

/// What an error about `temp_dir` names when the configuration set none.
pub(crate) const DEFAULT_TEMP_DIR: &str = "temp_dir (default: $TMPDIR or /tmp)";

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::CurrentDir(e) => write!(f, "cannot read the current directory: {e}"),
            Error::Signals(e) => write!(f, "cannot block signals: {e}"),
            #[cfg(feature = "ops")]
            Error::Init(e) => write!(f, "cannot fork the server from its init as pid 1: {e}"),
            Error::RootRefused(Some(user)) => write!(
                f,
                "refusing to serve as root (user = \"{user}\" is root); set allow_root = true (or --allow-root) if that is really meant"
            ),
            Error::RootRefused(None) => f.write_str(
                "refusing to serve as root; set user = \"www-data\" (or --user NAME) to switch to an unprivileged user after binding, or allow_root = true (or --allow-root) to serve as root anyway",
            ),
            Error::NotRoot { user, uid, euid } => write!(
                f,
                "cannot switch to user \"{user}\" (uid {uid}): brisk runs as uid {euid}, and only root can change user"
            ),
            Error::Server(e) => e.fmt(f),
            Error::Daemonize(e) => write!(f, "cannot daemonize: {e}"),
            Error::SocketActivation(e) => {
                write!(f, "cannot use the sockets systemd passed (LISTEN_FDS): {e}")
            }
            Error::Handover(e) => {
                write!(f, "cannot use the sockets the previous brisk handed over: {e}")
            }
            Error::UpgradeHelper(e) => write!(
                f,
                "cannot start the upgrade helper (brisk-upgrade): {e}; set upgrade = false to run without it"
            ),
            Error::Notify(e) => write!(
                f,
                "cannot reach the service manager's NOTIFY_SOCKET: {e}"
            ),
            Error::PidFile { path, source } => {
                write!(f, "cannot write pid file {}: {source}", path.display())
            }
            Error::Log(e) => e.fmt(f),
            Error::TempDir {
                origin,
                dir,
                source,
            } => write!(
                f,
                "{}: cannot make temporary files in {} as the server runs (for request bodies held for CGI programs): {source}",
                origin.as_deref().unwrap_or(DEFAULT_TEMP_DIR),
                dir.display()
            ),
            Error::Htpasswd {
                setting,
                path,
                user,
                uid,
                source,
            } => {
                let who = match user {
                    Some(name) => format!("user \"{name}\", uid {uid}"),
                    None => format!("uid {uid}"),
                };
                write!(
                    f,
                    "{setting}: cannot read {} as the server runs ({who}): {source}; \
                     every worker reads it again whenever it changes, so that user must \
                     be able to read it (chgrp it to a group of that user's and chmod \
                     640, and let the user through its directories)",
                    path.display()
                )
            }
            Error::Chroot { dir, source } => {
                let hint = if source.raw_os_error() == Some(libc::EPERM) {
                    " (chroot needs root)"
                } else {
                    ""
                };
                write!(f, "cannot chroot to {}: {source}{hint}", dir.display())
            }
            Error::PrivilegedHelper(e) => {
                write!(f, "cannot start the privileged helper (brisk-priv): {e}")
            }
            Error::Launcher(e) => write!(f, "cannot start the CGI launcher: {e}"),
            Error::NoGroup(user) => write!(
                f,
                "user \"{user}\" has no primary group and no group is set"
            ),
            Error::SwitchUser {
                user,
                uid,
                gid,
                source,
            } => {
                let what = match source {
                    SwitchError::Call(..) => "cannot switch",
                    SwitchError::Verify(_) => "refusing to serve after switching",
                };
                write!(
                    f,
                    "{what} to user \"{user}\" (uid {uid}, gid {gid}): {source}"
                )
            }
            Error::Capabilities(e) => write!(f, "cannot drop its other capabilities: {e}"),
            Error::Sandbox { what, source } => write!(f, "sandbox: {what}: {source}; {TURN_OFF}"),
            Error::LandlockGone => write!(f, "sandbox: Landlock went away; {TURN_OFF}"),
            Error::SandboxRule {
                path,
                setting,
                source,
            } => {
                write!(
                    f,
                    "sandbox: cannot add the Landlock rule for {} ({setting}): ",
                    path.display()
                )?;
                match source {
                    Some(e) => write!(f, "{e}")?,
                    None => f.write_str("no such file or directory")?,
                }
                write!(f, "; {TURN_OFF}")
            }
            Error::SandboxUnreadable(file) => write!(
                f,
                "the sandbox does not allow reading {}: its Landlock rules were fixed at start and cannot be widened while brisk runs; {RESTART}",
                file.display()
            ),
            Error::SandboxNoLauncher => write!(
                f,
                "the sandbox cannot start CGI programs: [[cgi]] rules were added, but brisk started without any, so no CGI launcher runs and the server's seccomp filter allows no program to start; {RESTART}"
            ),
            Error::SandboxNotAllowed(settings) => write!(
                f,
                "the sandbox does not allow {}: its Landlock rules were fixed at start and cannot be widened while brisk runs; {RESTART}",
                settings.join(", ")
            ),
            Error::NoReload => f.write_str("no configuration to load again (brisk runs embedded)"),
            Error::ReloadInChroot => f.write_str(
                "no reload inside a chroot (the configuration's paths lie outside it); restart to apply changes",
            ),
            Error::Config(e) => e.fmt(f),
            Error::RestartOnly(keys) => write!(
                f,
                "{} changed, which takes effect only at start; restart brisk, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), to apply the change",
                keys.join(", ")
            ),
            Error::ListenNeedsRestart(addr) => write!(
                f,
                "listen address {addr} needs a restart while the sandbox is on (it keeps brisk from opening sockets); {RESTART}"
            ),
            Error::QuicNeedsRestart(addr) => write!(
                f,
                "HTTP/3 on {addr} needs a UDP socket, which the sandbox keeps brisk from opening: it needs a restart while the sandbox is on; {RESTART}"
            ),
            Error::WorkerDied => f.write_str(
                "a worker stopped unexpectedly (the error log says why); brisk stopped",
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::CurrentDir(e)
            | Error::Signals(e)
            | Error::Daemonize(e)
            | Error::SocketActivation(e)
            | Error::Notify(e)
            | Error::Handover(e)
            | Error::UpgradeHelper(e)
            | Error::PrivilegedHelper(e)
            | Error::Launcher(e)
            | Error::Capabilities(e)
            | Error::PidFile { source: e, .. }
            | Error::TempDir { source: e, .. }
            | Error::Htpasswd { source: e, .. }
            | Error::Chroot { source: e, .. }
            | Error::Sandbox { source: e, .. }
            | Error::SandboxRule {
                source: Some(e), ..
            } => Some(e),
            Error::SwitchUser { source, .. } => Some(source),
            Error::Server(e) => Some(e),
            Error::Log(e) => Some(e),
            Error::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::server::Error> for Error {
    fn from(e: crate::server::Error) -> Error {
        Error::Server(e)
    }
}

impl From<LogError> for Error {
    fn from(e: LogError) -> Error {
        Error::Log(e)
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Config(e)
    }
}

/// Its message, as [`Display`](std::fmt::Display) gives it: the variants'
/// derived form said no more and cost 2.8 KB of the binary (`.expect` and
/// `{:?}` print this).
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message as brisk printed it before it had this type: users'
    /// scripts and the tests of the binary read them.
    #[test]
    fn messages_read_as_before() {
        let e = || io::Error::other("why");
        let eperm = io::Error::from_raw_os_error(libc::EPERM).to_string();
        let way_out = "set sandbox = false (or --no-sandbox) to run without Landlock and seccomp";
        let restart = "restart brisk to apply this configuration, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), which starts it anew with a sandbox made for this configuration";
        let cases: Vec<(Error, String)> = vec![
            (Error::CurrentDir(e()), "cannot read the current directory: why".into()),
            (Error::Signals(e()), "cannot block signals: why".into()),
            (
                Error::RootRefused(Some("root".into())),
                "refusing to serve as root (user = \"root\" is root); set allow_root = true (or --allow-root) if that is really meant".into(),
            ),
            (
                Error::RootRefused(None),
                "refusing to serve as root; set user = \"www-data\" (or --user NAME) to switch to an unprivileged user after binding, or allow_root = true (or --allow-root) to serve as root anyway".into(),
            ),
            (
                Error::NotRoot { user: "www".into(), uid: 33, euid: 1000 },
                "cannot switch to user \"www\" (uid 33): brisk runs as uid 1000, and only root can change user".into(),
            ),
            (
                Error::Server(crate::server::Error::EventLoop(e())),
                "cannot create event loop: why".into(),
            ),
            (Error::Daemonize(e()), "cannot daemonize: why".into()),
            (
                Error::PidFile { path: "/run/brisk.pid".into(), source: e() },
                "cannot write pid file /run/brisk.pid: why".into(),
            ),
            (
                Error::Log(LogError { message: "cannot open x".into() }),
                "cannot open x".into(),
            ),
            (
                Error::TempDir {
                    origin: Some("site.toml:4: temp_dir".into()),
                    dir: "/tmp/b".into(),
                    source: e(),
                },
                "site.toml:4: temp_dir: cannot make temporary files in /tmp/b as the server runs (for request bodies held for CGI programs): why".into(),
            ),
            (
                Error::Htpasswd {
                    setting: "site[1].auth[2].htpasswd".into(),
                    path: "/etc/brisk/htpasswd".into(),
                    user: Some("www-data".into()),
                    uid: 33,
                    source: e(),
                },
                "site[1].auth[2].htpasswd: cannot read /etc/brisk/htpasswd as the server runs (user \"www-data\", uid 33): why; every worker reads it again whenever it changes, so that user must be able to read it (chgrp it to a group of that user's and chmod 640, and let the user through its directories)".into(),
            ),
            (
                Error::Chroot { dir: "/jail".into(), source: e() },
                "cannot chroot to /jail: why".into(),
            ),
            (
                Error::Chroot {
                    dir: "/jail".into(),
                    source: io::Error::from_raw_os_error(libc::EPERM),
                },
                format!("cannot chroot to /jail: {eperm} (chroot needs root)"),
            ),
            (
                Error::PrivilegedHelper(e()),
                "cannot start the privileged helper (brisk-priv): why".into(),
            ),
            (Error::Launcher(e()), "cannot start the CGI launcher: why".into()),
            (
                Error::NoGroup("www".into()),
                "user \"www\" has no primary group and no group is set".into(),
            ),
            (
                Error::SwitchUser {
                    user: "www".into(),
                    uid: 33,
                    gid: 34,
                    source: SwitchError::Call("setuid", e()),
                },
                "cannot switch to user \"www\" (uid 33, gid 34): setuid failed: why".into(),
            ),
            (
                Error::SwitchUser {
                    user: "www".into(),
                    uid: 33,
                    gid: 34,
                    source: SwitchError::Verify("ids".into()),
                },
                "refusing to serve after switching to user \"www\" (uid 33, gid 34): verification failed: ids".into(),
            ),
            (
                Error::Capabilities(e()),
                "cannot drop its other capabilities: why".into(),
            ),
            (
                Error::Sandbox { what: "cannot set no_new_privs", source: e() },
                format!("sandbox: cannot set no_new_privs: why; {way_out}"),
            ),
            (
                Error::LandlockGone,
                format!("sandbox: Landlock went away; {way_out}"),
            ),
            (
                Error::SandboxRule { path: "/srv".into(), setting: "root".into(), source: None },
                format!("sandbox: cannot add the Landlock rule for /srv (root): no such file or directory; {way_out}"),
            ),
            (
                Error::SandboxRule { path: "/srv".into(), setting: "root".into(), source: Some(e()) },
                format!("sandbox: cannot add the Landlock rule for /srv (root): why; {way_out}"),
            ),
            (
                Error::SandboxUnreadable("/etc/htpasswd".into()),
                format!("the sandbox does not allow reading /etc/htpasswd: its Landlock rules were fixed at start and cannot be widened while brisk runs; {restart}"),
            ),
            (
                Error::SandboxNoLauncher,
                format!("the sandbox cannot start CGI programs: [[cgi]] rules were added, but brisk started without any, so no CGI launcher runs and the server's seccomp filter allows no program to start; {restart}"),
            ),
            (
                Error::SandboxNotAllowed(vec!["root = /a".into(), "temp_dir = /t".into()]),
                format!("the sandbox does not allow root = /a, temp_dir = /t: its Landlock rules were fixed at start and cannot be widened while brisk runs; {restart}"),
            ),
            (
                Error::NoReload,
                "no configuration to load again (brisk runs embedded)".into(),
            ),
            (
                Error::ReloadInChroot,
                "no reload inside a chroot (the configuration's paths lie outside it); restart to apply changes".into(),
            ),
            (
                Error::Config(ConfigError { message: "brisk.toml:1: x: y".into() }),
                "brisk.toml:1: x: y".into(),
            ),
            (
                Error::RestartOnly(vec!["workers", "user"]),
                "workers, user changed, which takes effect only at start; restart brisk, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), to apply the change".into(),
            ),
            (
                Error::ListenNeedsRestart("127.0.0.1:8080".parse().unwrap()),
                format!("listen address 127.0.0.1:8080 needs a restart while the sandbox is on (it keeps brisk from opening sockets); {restart}"),
            ),
            (
                Error::QuicNeedsRestart("127.0.0.1:8443".parse().unwrap()),
                format!("HTTP/3 on 127.0.0.1:8443 needs a UDP socket, which the sandbox keeps brisk from opening: it needs a restart while the sandbox is on; {restart}"),
            ),
            (
                Error::WorkerDied,
                "a worker stopped unexpectedly (the error log says why); brisk stopped".into(),
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
