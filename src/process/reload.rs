//! SIGHUP: the configuration loaded again, checked against what only a
//! restart can change (the process's identity and confinement, the
//! chroot, the sandbox's rules), and handed to [`Running::reload`].

use std::io;
use std::path::Path;

use crate::config::{Config, Reload};
use crate::log::LogService;
use crate::server::Running;
use crate::sys::privileged::Privileged;

use super::confine::Sandboxes;
use super::Error;

/// Loads the configuration again and serves it, if it changes nothing that
/// needs a restart (compared with `loaded`, the configuration as loaded at
/// start).
pub(super) fn reload_config(
    reload: Option<&Reload>,
    loaded: &Config,
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
    let read = |file: &Path| read_tls(file, sandboxes, privileged);
    let mut cfg = match sandboxes {
        Some(s) => reload.load_with(&|file| Ok(s.readable(file)?), &read),
        None => reload.load_with(&|_| Ok(()), &read),
    }?;
    // Sockets systemd passed stay the listeners of a configuration that
    // names none, as at start.
    running.adopt(&mut cfg)?;
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
            let tls = cfg.tls.iter().flat_map(|t| t.listen.iter());
            if let Some(addr) = cfg
                .listen
                .iter()
                .chain(tls)
                .chain(&cfg.proxy.listen)
                .find(|a| !running.listens_on(a))
            {
                return Err(Error::ListenNeedsRestart(*addr));
            }
        }
    }
    Ok(running.reload(cfg, logs)?)
}

/// Reads a TLS file a reloaded configuration names: through the
/// privileged helper when it was granted at start (a key readable by root
/// only, as at start), else as the server, inside its sandbox (whose
/// refusal names the way out).
fn read_tls(
    file: &Path,
    sandboxes: Option<&Sandboxes>,
    privileged: Option<&Privileged>,
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
    std::fs::read(file)
}
