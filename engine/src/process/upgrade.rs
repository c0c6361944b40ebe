//! SIGUSR2: a zero-downtime binary upgrade. The upgrade helper
//! (`brisk-upgrade`, see [`crate::sys::upgrade`]) starts the program brisk
//! was started from, handing it every listening socket; the new brisk
//! starts as brisk does (configuration, helpers, privilege drop, sandbox)
//! but serves on those sockets, and says when it serves. Only then does
//! this brisk retire, as a reload's previous workers do: it stops
//! accepting (the sockets stay open in the new one, so no connection is
//! refused), finishes every response it started, answers the next
//! request of an idle keep-alive connection with `Connection: close`, and
//! exits. A new binary that fails (a bad configuration, a crash) or is
//! not ready within [`READY_WITHIN`] changes nothing: it is killed with
//! its process group (they hold copies of the listening sockets) and this
//! one serves on.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use crate::server::{Running, Speaks};
use crate::sys::upgrade::{Started, Upgrader};
use crate::sys::{self, signal::Signal};

/// How long the new brisk may take to serve before the upgrade is given
/// up (it is then killed: see [`Pending::abandon`]).
pub(super) const READY_WITHIN: Duration = Duration::from_secs(60);

/// An upgrade under way.
pub(super) struct Pending {
    started: Started,
    since: Instant,
    /// The process that serves, once it said so (a daemon's pid is not
    /// the one started).
    serving: Option<i32>,
}

/// Where an upgrade is.
pub(super) enum Progress {
    /// The new brisk is starting.
    Waiting,
    /// It serves: this one retires.
    Ready,
    /// It will not serve; this one serves on.
    Failed(String),
}

/// The name of what a listener's clients speak, in the hand-over.
fn kind(speaks: Speaks) -> &'static str {
    match speaks {
        Speaks::Http => "http",
        Speaks::Https => "https",
        Speaks::Proxy => "proxy",
        Speaks::ProxyTls => "proxy-tls",
    }
}

/// Starts the new binary with `running`'s listening sockets.
pub(super) fn begin(helper: &Upgrader, running: &Running) -> io::Result<Pending> {
    let sockets = running.handover();
    #[allow(unused_mut)]
    let mut described: Vec<(RawFd, &str, SocketAddr)> = sockets
        .iter()
        .map(|&(socket, speaks, wanted)| (socket.as_raw_fd(), kind(speaks), wanted))
        .collect();
    // QUIC's sockets too, so that the new brisk joins no socket of its
    // own to their groups (see `server::quic_handover`).
    #[cfg(feature = "http3")]
    described.extend(
        running
            .handover_quic()
            .into_iter()
            .map(|(socket, wanted)| (socket.as_raw_fd(), "h3", wanted)),
    );
    let started = helper.upgrade(&described)?;
    Ok(Pending {
        started,
        since: Instant::now(),
        serving: None,
    })
}

impl Pending {
    /// The new process's id: the one that serves once it said so.
    pub(super) fn pid(&self) -> i32 {
        self.serving.unwrap_or(self.started.pid)
    }

    /// Whether the new brisk serves yet (never blocks). It says `R` and
    /// its pid when it serves, or `E` and why it will not (each in one
    /// write: see `sys::upgrade::say_failed`); its end closed unsaid, it
    /// exited.
    pub(super) fn progress(&mut self) -> Progress {
        let mut said = [0u8; 4096];
        match self.started.ready.read(&mut said) {
            Ok(n @ 1..) if said[0] == b'E' => Progress::Failed(format!(
                "the new brisk (pid {}) will not serve: {}",
                self.started.pid,
                String::from_utf8_lossy(&said[1..n])
            )),
            Ok(n @ 1..) => {
                let pid = std::str::from_utf8(&said[1..n]).ok();
                self.serving = pid.and_then(|p| p.parse().ok());
                Progress::Ready
            }
            Ok(_) => Progress::Failed(format!(
                "the new brisk (pid {}) exited before it served; its error is in its error log (or on the standard error brisk started with)",
                self.started.pid
            )),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                if self.since.elapsed() >= READY_WITHIN {
                    Progress::Failed(format!(
                        "the new brisk (pid {}) did not serve within {READY_WITHIN:?}",
                        self.started.pid
                    ))
                } else {
                    Progress::Waiting
                }
            }
            Err(e) => Progress::Failed(format!("cannot hear from the new brisk: {e}")),
        }
    }

    /// At a stop: [`Pending::progress`], waiting for a new brisk still
    /// starting until `until` at most (a second SIGTERM or SIGINT ends the
    /// wait), so that a stop right after SIGUSR2, with nothing to drain,
    /// does not kill a new brisk about to serve.
    pub(super) fn progress_by(&mut self, until: Instant) -> Progress {
        loop {
            let now = self.progress();
            if !matches!(now, Progress::Waiting) || Instant::now() >= until {
                return now;
            }
            if sys::signal::wait(Duration::from_millis(50)) == Some(Signal::Terminate) {
                return now;
            }
        }
    }

    /// Gives the upgrade up: the new process, which holds copies of the
    /// listening sockets (and, started from a blocked signal mask by an
    /// older brisk, may not even hear SIGTERM), is killed through the
    /// helper, which waits until it is gone. What to add to the log line.
    pub(super) fn abandon(self, helper: Option<&Upgrader>) -> String {
        let pid = self.started.pid;
        match helper.map(|h| h.abandon(pid)) {
            Some(Ok(())) => format!("killed the new brisk (pid {pid})"),
            // (It exited by itself, and the helper reaped nothing.)
            Some(Err(e)) if e.raw_os_error() == Some(libc::ESRCH) => {
                format!("the new brisk (pid {pid}) is gone")
            }
            Some(Err(e)) => format!("cannot kill the new brisk (pid {pid}): {e}"),
            None => format!("cannot kill the new brisk (pid {pid}): no upgrade helper"),
        }
    }
}

/// The sockets a previous brisk handed over, as listeners to adopt.
#[cfg(feature = "ops")]
pub(super) fn inherited(
    handover: &mut crate::sys::upgrade::Handover,
) -> Vec<crate::server::Inherited> {
    handover
        .sockets
        .drain(..)
        .map(|(socket, kind, wanted)| crate::server::Inherited {
            socket,
            speaks: Some(match kind.as_str() {
                "https" => Speaks::Https,
                "proxy" => Speaks::Proxy,
                "proxy-tls" => Speaks::ProxyTls,
                _ => Speaks::Http,
            }),
            wanted: Some(wanted),
        })
        .collect()
}
