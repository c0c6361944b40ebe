//! SIGHUP: the configuration loaded again, checked against what only a
//! restart can change (the process's identity and confinement, the
//! chroot, the sandbox's rules), and handed to [`Running::reload`].

use crate::config::{Config, Reload};
use crate::log::LogService;
use crate::server::Running;

use super::confine::Sandboxes;
use super::Error;

/// Loads the configuration again and serves it, if it changes nothing that
/// needs a restart (compared with `loaded`, the configuration as loaded at
/// start).
pub(super) fn reload_config(
    reload: Option<&Reload>,
    loaded: &Config,
    sandboxes: Option<&Sandboxes>,
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
    let mut cfg = match sandboxes {
        Some(s) => reload.load_readable(&|file| Ok(s.readable(file)?)),
        None => reload.load(),
    }?;
    if cfg.tls.is_some() {
        return Err(Error::TlsNotServed);
    }
    let changed = loaded.restart_only_changes(&cfg);
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
            if let Some(addr) = cfg.listen.iter().find(|a| !running.listens_on(a)) {
                return Err(Error::ListenNeedsRestart(*addr));
            }
        }
    }
    Ok(running.reload(cfg, logs)?)
}
