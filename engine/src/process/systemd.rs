//! Telling the service manager what brisk is doing (`sd_notify`), when
//! systemd started it with `Type=notify` or `Type=notify-reload`:
//! `READY=1` once the workers serve, `RELOADING=1` (with
//! `MONOTONIC_USEC`, which `notify-reload` requires) for the time a
//! SIGHUP takes, `STOPPING=1` when a stop begins, and `WATCHDOG=1` at
//! half the interval `WatchdogSec=` asks for, while every worker is
//! alive. Without `$NOTIFY_SOCKET` all of it is nothing.

use std::time::{Duration, Instant};

use crate::config::Level;
use crate::log::Logger;
use crate::sys::systemd::{self, Notifier};

/// The service manager, as far as brisk talks to it.
pub(super) struct Manager {
    notifier: Option<Notifier>,
    /// `WATCHDOG=1` every this long (half of `WATCHDOG_USEC`).
    watchdog: Option<Duration>,
    next_ping: Instant,
}

impl Manager {
    /// Connects to `$NOTIFY_SOCKET` now, while the process may still open
    /// sockets (its sandbox then allows only sending on this one).
    pub(super) fn connect() -> std::io::Result<Manager> {
        let notifier = Notifier::from_env()?;
        let watchdog = notifier
            .as_ref()
            .and_then(|_| systemd::watchdog())
            .map(|every| every / 2);
        Ok(Manager {
            notifier,
            watchdog,
            next_ping: Instant::now(),
        })
    }

    /// How long the main thread may wait for a signal before the next
    /// watchdog ping is due.
    pub(super) fn wait_at_most(&self, usual: Duration) -> Duration {
        match self.watchdog {
            Some(every) => usual.min(every),
            None => usual,
        }
    }

    /// Sends `state`; a failure is logged (systemd then times brisk out,
    /// and the log says why).
    fn send(&self, state: &str, log: &mut Logger) {
        if let Some(n) = &self.notifier {
            if let Err(e) = n.send(state) {
                log.log(
                    Level::Warn,
                    format_args!("cannot notify the service manager ({state:?}): {e}"),
                );
            }
        }
    }

    /// The workers serve (at start, and after a reload). `MAINPID` is
    /// this process: after an upgrade, the new brisk is the service's
    /// main process (the unit needs `NotifyAccess=all` for that).
    pub(super) fn ready(&self, status: &str, log: &mut Logger) {
        let state = format!("READY=1\nMAINPID={}\nSTATUS={status}", std::process::id());
        self.send(&state, log);
    }

    /// A reload begins.
    pub(super) fn reloading(&self, log: &mut Logger) {
        let state = format!(
            "RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading the configuration",
            systemd::monotonic_usec()
        );
        self.send(&state, log);
    }

    /// A stop begins.
    pub(super) fn stopping(&self, status: &str, log: &mut Logger) {
        self.send(&format!("STOPPING=1\nSTATUS={status}"), log);
    }

    /// Pings the watchdog when it is due and `alive` (every worker is).
    pub(super) fn tick(&mut self, alive: bool, log: &mut Logger) {
        let Some(every) = self.watchdog else { return };
        let now = Instant::now();
        if alive && now >= self.next_ping {
            self.send("WATCHDOG=1", log);
            self.next_ping = now + every;
        }
    }
}
