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
//! not ready within [`READY_WITHIN`] changes nothing: this one serves on.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::server::{Inherited, Running, Speaks};
use crate::sys::upgrade::{Handover, Started, Upgrader};

/// How long the new brisk may take to serve before the upgrade is given
/// up (it then stops by itself when it finds nobody waiting).
pub(super) const READY_WITHIN: Duration = Duration::from_secs(60);

/// An upgrade under way.
pub(super) struct Pending {
    started: Started,
    since: Instant,
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
    let described: Vec<(&TcpListener, &str, SocketAddr)> = sockets
        .iter()
        .map(|&(socket, speaks, wanted)| (socket, kind(speaks), wanted))
        .collect();
    let started = helper.upgrade(&described)?;
    Ok(Pending {
        started,
        since: Instant::now(),
    })
}

impl Pending {
    /// The new process's id.
    pub(super) fn pid(&self) -> i32 {
        self.started.pid
    }

    /// Whether the new brisk serves yet (never blocks).
    pub(super) fn progress(&mut self) -> Progress {
        let mut byte = [0u8; 1];
        match self.started.ready.read(&mut byte) {
            Ok(1) => Progress::Ready,
            Ok(_) => Progress::Failed(format!(
                "the new brisk (pid {}) exited before it served; its error is in its error log (or on the standard error brisk started with)",
                self.started.pid
            )),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                if self.since.elapsed() >= READY_WITHIN {
                    Progress::Failed(format!(
                        "the new brisk (pid {}) did not serve within {READY_WITHIN:?}; it stops when it finds nobody waiting",
                        self.started.pid
                    ))
                } else {
                    Progress::Waiting
                }
            }
            Err(e) => Progress::Failed(format!("cannot hear from the new brisk: {e}")),
        }
    }
}

/// The sockets a previous brisk handed over, as listeners to adopt.
pub(super) fn inherited(handover: &mut Handover) -> Vec<Inherited> {
    handover
        .sockets
        .drain(..)
        .map(|(socket, kind, wanted)| Inherited {
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
