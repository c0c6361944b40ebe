//! SIGHUP: the configuration loaded again, checked against what only a
//! restart can change (the process's identity and confinement, the
//! chroot, the sandbox's rules), and handed to [`Running::reload`].

use std::io;
use std::path::Path;

use crate::config::{Config, Level, Reload, RestartOnly};
use crate::log::{LogService, Logger};
use crate::server::Running;
use crate::sys::privileged::Privileged;

use super::confine::{Confined, Sandboxes};
use super::{url, Error};

/// SIGHUP: reloads and says so in `log` (switched to the new
/// configuration's log settings); returns the status for the service
/// manager.
pub(super) fn on_hangup(
    reload: Option<&Reload>,
    loaded: &RestartOnly,
    confined: &Confined,
    running: &mut Running,
    logs: &LogService,
    log: &mut Logger,
) -> &'static str {
    let before = running.listeners();
    #[cfg(feature = "http3")]
    let quic_before = running.quic_addrs();
    let done = reload_config(
        reload,
        loaded,
        confined.sandboxes.as_ref(),
        confined.privileged.as_deref(),
        running,
        logs,
    );
    let status = match done {
        Ok(()) => {
            log.flush();
            *log = logs.handle_for(&running.config().log);
            let n = running.workers();
            log.log(
                Level::Info,
                format_args!(
                    "SIGHUP: configuration reloaded; {n} {}, the previous ones finish their requests",
                    if n == 1 { "new worker serves" } else { "new workers serve" }
                ),
            );
            let now = running.listeners();
            for a in now.iter().filter(|a| !before.contains(a)) {
                log.log(
                    Level::Info,
                    format_args!("SIGHUP: now also listening on {}", url(a)),
                );
            }
            // (Closed once the previous workers let go of their copies.)
            for a in before.iter().filter(|a| !now.contains(a)) {
                log.log(
                    Level::Info,
                    format_args!("SIGHUP: no longer listening on {}", url(a)),
                );
            }
            // HTTP/3's UDP sockets, where [http3] was turned on or off.
            #[cfg(feature = "http3")]
            {
                let quic = running.quic_addrs();
                for a in quic.iter().filter(|a| !quic_before.contains(a)) {
                    log.log(
                        Level::Info,
                        format_args!("SIGHUP: now also answering HTTP/3 on UDP {a}"),
                    );
                }
                for a in quic_before.iter().filter(|a| !quic.contains(a)) {
                    log.log(
                        Level::Info,
                        format_args!("SIGHUP: no longer answering HTTP/3 on UDP {a}"),
                    );
                }
            }
            "serving (configuration reloaded)"
        }
        Err(e) => {
            log.log(
                Level::Error,
                format_args!("SIGHUP: {e}; still serving the previous configuration"),
            );
            "serving (a reload failed: see the error log)"
        }
    };
    log.flush();
    status
}

/// Loads the configuration again and serves it, if it changes nothing that
/// needs a restart (compared with `loaded`, the configuration as loaded at
/// start).
fn reload_config(
    reload: Option<&Reload>,
    loaded: &RestartOnly,
    sandboxes: Option<&Sandboxes>,
    privileged: Option<&Privileged>,
    running: &mut Running,
    logs: &LogService,
) -> Result<(), Error> {
    let Some(reload) = reload else {
        return Err(Error::NoReload);
    };
    let current = running.config();
    if loaded.chroot.is_some() {
        return Err(Error::ReloadInChroot);
    }
    let who = serving_as(current);
    let read = |file: &Path| read_tls(file, sandboxes, privileged, &who);
    let again = match sandboxes {
        Some(s) => reload.load_with(&|file| Ok(s.readable(file)?), &read),
        None => reload.load_with(&|_| Ok(()), &read),
    };
    let mut cfg = match again {
        Ok(cfg) => cfg,
        // (Started as root: a file only root may read was read at start.)
        Err(e) => match privileged.and_then(|_| unreadable_config(current, &who)) {
            Some(why) => return Err(why),
            None => return Err(e.into()),
        },
    };
    // Sockets systemd passed stay the listeners of a configuration that
    // names none, as at start.
    running.adopt(&mut cfg)?;
    let changed = loaded.changes(&cfg.restart_only());
    if !changed.is_empty() {
        return Err(Error::RestartOnly(changed));
    }
    // The identity the process took at start (a default user included).
    cfg.user = current.user.clone();
    cfg.group = current.group.clone();
    if let Some(sandboxes) = sandboxes {
        if let Some(why) = sandboxes.refusal(&cfg) {
            return Err(why);
        }
        // Sockets are the privileged helper's to open; without one, the
        // sandbox's seccomp filter and Landlock keep the server from it.
        if !sandboxes.privileged {
            let tls = cfg.tls.iter().flat_map(|t| t.listen.iter());
            if let Some(addr) = cfg
                .listen
                .iter()
                .chain(tls)
                .chain(&cfg.proxy.listen)
                .chain(&cfg.proxy.tls_listen)
                .find(|a| !running.listens_on(a))
            {
                return Err(Error::ListenNeedsRestart(*addr));
            }
            // (HTTP/3's UDP sockets likewise: a new TLS address, or HTTP/3
            // turned on for one that had none.)
            #[cfg(feature = "http3")]
            if cfg.http3.enable {
                let mut tls = cfg.tls.iter().flat_map(|t| t.listen.iter());
                if let Some(addr) = tls.find(|a| !running.quic_on(a)) {
                    return Err(Error::QuicNeedsRestart(*addr));
                }
            }
        }
    }
    Ok(running.reload(cfg, logs)?)
}

/// Reads a TLS file a reloaded configuration names: through the
/// privileged helper when it was granted at start (a key readable by root
/// only, as at start), else as the server, inside its sandbox (whose
/// refusal names the way out). A file the helper was not granted and the
/// server (serving as `who`) may not read is refused with why, and the
/// way out: the bare "Permission denied" looked like a mode to fix on a
/// key as private as the one that works.
fn read_tls(
    file: &Path,
    sandboxes: Option<&Sandboxes>,
    privileged: Option<&Privileged>,
    who: &str,
) -> io::Result<Vec<u8>> {
    if let Some(helper) = privileged {
        match helper.read_tls(file) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
            done => return done,
        }
    }
    if let Some(s) = sandboxes {
        s.readable(file)
            .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    }
    std::fs::read(file).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied if privileged.is_some() => io::Error::new(
            e.kind(),
            format!(
                "{e}: brisk reads it as the user it serves as, {who}, who may not \
                 (brisk-priv reads, as root, only the TLS files configured at start); \
                 {AS_ROOT}"
            ),
        ),
        _ => e,
    })
}

/// The way out for a file only root may read, at a reload of a brisk that
/// started as root.
const AS_ROOT: &str = "restart brisk, or upgrade it in place with no connection refused \
    (brisk --upgrade, or SIGUSR2; upgrade = true, the default), which reads it as root as at \
    start, or make it readable by that user";

/// The user brisk serves as, for a message: `"nobody" (uid 65534)`.
fn serving_as(current: &Config) -> String {
    match &current.user {
        Some(u) => format!("\"{}\" (uid {})", u.name, u.uid),
        None => format!("uid {}", crate::sys::privileges::euid()),
    }
}

/// Why the configuration file cannot be read again, if that is why the
/// reload failed: started as root, brisk read it as root, and reads it
/// again as the user it serves as (`who`), whom its mode may keep out.
fn unreadable_config(current: &Config, who: &str) -> Option<Error> {
    let path = current.config_file.as_deref()?;
    let e = std::fs::File::open(path).err()?;
    if e.kind() != io::ErrorKind::PermissionDenied {
        return None;
    }
    let message = format!(
        "{}: cannot read the configuration file: {e}: brisk reads it again as the user it \
         serves as, {who}, who may not (it read it as root at start); {AS_ROOT}",
        path.display()
    );
    Some(Error::Config(crate::config::ConfigError { message }))
}
