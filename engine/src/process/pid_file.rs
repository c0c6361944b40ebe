//! The pid file: written at start (after daemonizing, so it holds the
//! serving process's pid), removed at the end by whoever still may.

use std::path::Path;

use super::Error;
use crate::config::Level;
use crate::log::Logger;
use crate::sys::{self, privileged::Privileged};

/// Which file a pid file is (see [`sys::fs::identity`]).
pub(super) type Written = Option<(u64, u64)>;

/// Writes this process's pid and a newline to `path`; returns which file
/// it wrote, so that the end removes that one only.
pub(super) fn write(path: &Path) -> Result<Written, Error> {
    // Whole (see `write_whole`), so that `brisk --reload` (or a service
    // manager) reading it at that moment never finds it empty.
    let pid = format!("{}\n", sys::process::pid());
    sys::fs::write_whole(path, pid.as_bytes(), 0o644).map_err(|source| Error::PidFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(sys::fs::identity(path))
}

/// Whether the pid file at `path` names process `pid`.
pub(super) fn names(path: &Path, pid: u32) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.trim() == pid.to_string())
}

/// After a failed upgrade: the pid file names this process again if the
/// new brisk `gone` had written its own there (a failure is logged).
pub(super) fn reclaim(path: &Path, gone: i32, written: &mut Written, log: &mut Logger) {
    if !u32::try_from(gone).is_ok_and(|gone| names(path, gone)) {
        return;
    }
    match write(path) {
        Ok(now) => *written = now,
        Err(e) => log.log(
            Level::Warn,
            format_args!(
                "{e}: it still names the failed new brisk (pid {gone}); brisk --stop and the like cannot find this one"
            ),
        ),
    }
}

/// A start that failed after it wrote the pid file at `path` (as
/// configured) removes it, if it is still the file it wrote.
pub(super) fn discard(path: &Path, written: Written) {
    if written.is_some() && sys::fs::identity(path) == written {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes the pid file at the end, by the process that kept the right
/// to: the privileged helper when there is one (it exits afterwards, so
/// it is told even without a pid file), this process otherwise. `loaded`
/// is the path as configured (what the helper removes), `here` the path
/// as this process sees it (inside a chroot, if any). Either removes it
/// only while it is the file this process wrote (`written`): a new brisk
/// that an upgrade started meanwhile renamed its own over it, and a stop
/// soon after SIGUSR2 removed that. A failure is logged as a warning
/// through `log`.
pub(super) fn remove(
    helper: Option<&Privileged>,
    loaded: Option<&Path>,
    here: Option<&Path>,
    written: Written,
    log: &mut Logger,
) {
    match (helper, loaded) {
        (Some(helper), Some(pid_file)) => {
            if let Err(e) = helper.finish() {
                log.log(
                    Level::Warn,
                    format_args!("cannot remove the pid file {}: {e}", pid_file.display()),
                );
            }
        }
        (Some(helper), None) => {
            let _ = helper.finish();
        }
        // Without root to begin with, the pid file's directory may not
        // let it go (as with lighttpd): say so.
        (None, _) => {
            if let Some(pid_file) =
                here.filter(|p| written.is_some() && sys::fs::identity(p) == written)
            {
                match std::fs::remove_file(pid_file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => log.log(
                        Level::Warn,
                        format_args!("cannot remove the pid file {}: {e}", pid_file.display()),
                    ),
                    _ => {}
                }
            }
        }
    }
}

/// Sends `signal` to the brisk whose pid is in `path` (`brisk --reload`
/// and the like, nginx's `-s`): the pid it was sent to, or why not, in
/// words that name the file.
pub fn signal_running(path: &Path, signal: i32) -> Result<i32, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{shown} does not exist: brisk is not running (or was started with another pid_file)"
        ),
        _ => format!("cannot read {shown}: {e}"),
    })?;
    // (Process 1 too: brisk is that in a container. 0 and negative
    // numbers would signal process groups.)
    let pid: i32 = text
        .trim()
        .parse()
        .ok()
        .filter(|&pid| pid > 0)
        .ok_or_else(|| {
            format!(
                "{shown} does not hold a process id (it holds {:?})",
                text.trim()
            )
        })?;
    // A pid file left behind by a brisk that died may name a process
    // that has nothing to do with it since: send only to a brisk.
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).map_err(|_| {
        format!("no process {pid} (from {shown}): brisk is not running; remove the stale {shown}")
    })?;
    if !comm.trim_end().starts_with("brisk") {
        return Err(format!(
            "process {pid} (from {shown}) is {:?}, not brisk: the pid file is stale; remove it",
            comm.trim_end()
        ));
    }
    sys::process::signal(pid, signal)
        .map_err(|e| format!("cannot signal brisk (pid {pid}, from {shown}): {e}"))?;
    Ok(pid)
}

/// At start (not an upgrade's, whose pid file names the brisk it
/// replaces): refused if the pid file at `path` names a brisk that runs,
/// whose pid file this one would take (`brisk --stop` would then find
/// this one only).
pub(super) fn check_free(path: &Path) -> Result<(), Error> {
    // (Signal 0: only whether it is there, as `brisk --stop` finds it.)
    match signal_running(path, 0) {
        Ok(pid) if pid as u32 != sys::process::pid() => {
            Err(Error::Config(crate::config::ConfigError {
                message: format!(
                    "pid_file {}: brisk is running with that pid file (pid {pid}): stop it \
                     first (brisk --stop), or give this one a pid_file of its own",
                    path.display()
                ),
            }))
        }
        _ => Ok(()),
    }
}
