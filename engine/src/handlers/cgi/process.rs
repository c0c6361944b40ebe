//! The CGI programs one worker runs: started, stopped and reaped through
//! the launcher (when the sandbox keeps the server from starting
//! programs itself) or directly.
//!
//! A program whose request ends is reaped at once if it has exited, or
//! else remembered and reaped later; one that outlives `timeouts.cgi`
//! after its request ended has its process group killed. No program
//! outlives the worker that started it.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Level;
use crate::log::Logger;
use crate::sys::launcher::Launchers;
use crate::sys::spawn::{self, CgiChild, Command, Exit};

/// One worker's CGI programs.
#[derive(Debug)]
pub struct Children {
    /// Starts programs (`None`: the worker starts them itself).
    launcher: Option<Arc<Launchers>>,
    /// Programs whose request has not ended.
    running: Cell<usize>,
    /// Programs whose request ended before they were reaped.
    zombies: RefCell<Vec<Ended>>,
    /// How programs that were not stopped by the server ended, for the
    /// error log (at the next [`Children::reap`]).
    exits: RefCell<Vec<(Box<str>, Exit)>>,
    /// How long a program may outlive its request.
    grace: Duration,
}

/// A program whose request is over, until its exit status is known.
#[derive(Debug)]
struct Ended {
    pid: i32,
    /// When its request ended.
    since: Instant,
    /// Names it in the log (`cgi /srv/cgi-bin/x`).
    label: Box<str>,
    /// The server stopped it (its end needs no log line).
    killed: bool,
    /// The launcher's pipe for its status, if the launcher started it.
    exit: Option<OwnedFd>,
}

impl Ended {
    /// Its exit status if known now: `Some(None)` once it never will be
    /// (the launcher went away), `None` while it runs.
    fn settle(&self) -> Option<Option<Exit>> {
        let status = match &self.exit {
            Some(pipe) => spawn::read_exit(pipe),
            None => spawn::try_reap(self.pid),
        };
        match status {
            Ok(Some(status)) => Some(Some(Exit::from_status(status))),
            Ok(None) => None,
            Err(_) => Some(None),
        }
    }
}

impl Children {
    /// No programs yet; those that outlive their request by `grace` are
    /// killed.
    pub fn new(launcher: Option<Arc<Launchers>>, grace: Duration) -> Rc<Children> {
        Rc::new(Children {
            launcher,
            running: Cell::new(0),
            zombies: RefCell::new(Vec::new()),
            exits: RefCell::new(Vec::new()),
            grace,
        })
    }

    /// How many programs run for requests that have not ended.
    pub fn running(&self) -> usize {
        self.running.get()
    }

    /// Starts `cmd`; `writable` are the directories its rule lets it
    /// write (for the launcher's sandbox); `label` names it in the log.
    pub fn spawn(
        self: &Rc<Self>,
        writable: &[PathBuf],
        cmd: Command<'_>,
        label: &str,
    ) -> io::Result<(CgiChild, Process)> {
        let (child, exit) = match &self.launcher {
            Some(l) => {
                let (child, exit) = l.spawn(writable, cmd)?;
                (child, Some(exit))
            }
            None => (spawn::spawn(cmd)?, None),
        };
        self.running.set(self.running.get() + 1);
        let process = Process {
            pid: child.pid,
            children: Rc::clone(self),
            label: label.into(),
            killed: Cell::new(false),
            exit,
        };
        Ok((child, process))
    }

    fn kill(&self, pid: i32) {
        match &self.launcher {
            Some(l) => l.kill_group(pid),
            None => spawn::kill_group(pid),
        }
    }

    /// The request of a program is over: it is reaped now or, if still
    /// running, later, here or by the launcher that started it.
    fn release(&self, p: &mut Process) {
        self.running.set(self.running.get() - 1);
        if let Some(l) = &self.launcher {
            l.release(p.pid);
        }
        let ended = Ended {
            pid: p.pid,
            since: Instant::now(),
            label: std::mem::take(&mut p.label),
            killed: p.killed.get(),
            exit: p.exit.take(),
        };
        match ended.settle() {
            Some(exit) => self.note(ended, exit),
            None => self.zombies.borrow_mut().push(ended),
        }
    }

    /// Keeps how `ended` ended for the log, unless it ended well or by
    /// the server's own SIGKILL (a program that had exited already when
    /// the server stopped it is logged with its status).
    fn note(&self, ended: Ended, exit: Option<Exit>) {
        let ours = |e: &Exit| ended.killed && *e == Exit::Signal(libc::SIGKILL);
        if let Some(exit) = exit.filter(|e| !e.success() && !ours(e)) {
            self.exits.borrow_mut().push((ended.label, exit));
        }
    }

    /// Reaps programs that outlived their request; kills those that
    /// linger past the grace time (the launcher does for its own); with
    /// `all` (the worker ends), kills and waits for every one. Then logs
    /// how programs the server did not stop ended, if not well: a
    /// non-zero exit status as a warning, a signal as an error.
    pub fn reap(&self, now: Instant, all: bool, log: &mut Logger) {
        let grace = self.grace;
        let zombies = std::mem::take(&mut *self.zombies.borrow_mut());
        for mut z in zombies {
            let own = z.exit.is_none();
            if own && (all || now.saturating_duration_since(z.since) >= grace) {
                spawn::kill_group(z.pid);
                z.killed = true;
            }
            let exit = loop {
                match z.settle() {
                    Some(exit) => break Some(exit),
                    // (The launcher outlives the worker and stops what
                    // is left of its programs itself.)
                    None if all && own => std::thread::sleep(Duration::from_millis(5)),
                    None if all => break Some(None),
                    None => break None,
                }
            };
            match exit {
                Some(exit) => self.note(z, exit),
                None => self.zombies.borrow_mut().push(z),
            }
        }
        for (label, exit) in self.exits.borrow_mut().drain(..) {
            log.log(level(exit), format_args!("{label}: {exit}"));
        }
    }

    /// Gives back the memory of long lists that have emptied.
    pub fn shrink(&self) {
        self.zombies.borrow_mut().shrink_to_fit();
        self.exits.borrow_mut().shrink_to_fit();
    }
}

/// How a program's end that was not well is logged: a non-zero exit
/// status as a warning, a signal as an error; but SIGPIPE, its output or
/// input no longer read or written (the client went away), at info, and
/// so status 141 (128 + SIGPIPE), which a shell script whose command
/// met it exits with.
fn level(exit: Exit) -> Level {
    match exit {
        Exit::Signal(libc::SIGPIPE) | Exit::Code(141) => Level::Info,
        Exit::Code(_) => Level::Warn,
        Exit::Signal(_) => Level::Error,
    }
}

/// A running program, released (reaped now or later) when dropped.
#[derive(Debug)]
pub struct Process {
    pid: i32,
    children: Rc<Children>,
    label: Box<str>,
    killed: Cell<bool>,
    exit: Option<OwnedFd>,
}

impl Process {
    /// Kills the program's process group.
    pub fn kill(&self) {
        self.killed.set(true);
        self.children.kill(self.pid);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let children = Rc::clone(&self.children);
        children.release(self);
    }
}

#[cfg(test)]
mod level_tests {
    use super::{level, Exit, Level};

    #[test]
    fn a_broken_pipe_is_info_whether_a_signal_or_a_shell_s_status() {
        assert_eq!(level(Exit::Signal(libc::SIGPIPE)), Level::Info);
        assert_eq!(level(Exit::Code(141)), Level::Info);
        assert_eq!(level(Exit::Code(1)), Level::Warn);
        assert_eq!(level(Exit::Signal(libc::SIGSEGV)), Level::Error);
    }
}
