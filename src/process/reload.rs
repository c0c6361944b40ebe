//! SIGHUP: the configuration loaded again, checked against what only a
//! restart can change (the process's identity and confinement, the
//! chroot, the sandbox's rules), and handed to [`Running::reload`].

use crate::config::{Config, Reload};
use crate::log::LogService;
use crate::server::Running;

use super::confine::Sandboxes;

/// Loads the configuration again and serves it, if it changes nothing that
/// needs a restart (compared with `loaded`, the configuration as loaded at
/// start).
pub(super) fn reload_config(
    reload: Option<&Reload>,
    loaded: &Config,
    sandboxes: Option<&Sandboxes>,
    running: &mut Running,
    logs: &LogService,
) -> Result<(), String> {
    let Some(reload) = reload else {
        return Err("no configuration to load again (brisk runs embedded)".to_string());
    };
    let current = running.config();
    if loaded.chroot.is_some() {
        return Err(
            "no reload inside a chroot (the configuration's paths lie outside it); restart to apply changes"
                .to_string(),
        );
    }
    let mut cfg = match sandboxes {
        Some(s) => reload.load_readable(&|file| s.readable(file)),
        None => reload.load(),
    }
    .map_err(|e| e.to_string())?;
    let changed = loaded.restart_only_changes(&cfg);
    if !changed.is_empty() {
        return Err(format!(
            "{} changed, which takes effect only at start; restart to apply changes",
            changed.join(", ")
        ));
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
                return Err(format!(
                    "listen address {addr} needs a restart while the sandbox is on (it keeps brisk from opening sockets); restart brisk to apply this configuration, or set sandbox = false"
                ));
            }
        }
    }
    running.reload(cfg, logs)
}
