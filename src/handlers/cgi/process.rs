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
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sys::launcher::Launchers;
use crate::sys::spawn::{self, CgiChild, Command};

/// One worker's CGI programs.
#[derive(Debug)]
pub struct Children {
    /// Starts programs (`None`: the worker starts them itself).
    launcher: Option<Arc<Launchers>>,
    /// Programs whose request has not ended.
    running: Cell<usize>,
    /// Programs whose request ended before they were reaped, and since when.
    zombies: RefCell<Vec<(i32, Instant)>>,
    /// How long a program may outlive its request.
    grace: Duration,
}

impl Children {
    /// No programs yet; those that outlive their request by `grace` are
    /// killed.
    pub fn new(launcher: Option<Arc<Launchers>>, grace: Duration) -> Rc<Children> {
        Rc::new(Children {
            launcher,
            running: Cell::new(0),
            zombies: RefCell::new(Vec::new()),
            grace,
        })
    }

    /// How many programs run for requests that have not ended.
    pub fn running(&self) -> usize {
        self.running.get()
    }

    /// Starts `cmd`; `writable` are the directories its rule lets it
    /// write (for the launcher's sandbox).
    pub fn spawn(
        self: &Rc<Self>,
        writable: &[PathBuf],
        cmd: Command<'_>,
    ) -> io::Result<(CgiChild, Process)> {
        let child = match &self.launcher {
            Some(l) => l.spawn(writable, cmd)?,
            None => spawn::spawn(cmd)?,
        };
        self.running.set(self.running.get() + 1);
        let process = Process {
            pid: child.pid,
            children: Rc::clone(self),
        };
        Ok((child, process))
    }

    fn kill(&self, pid: i32) {
        match &self.launcher {
            Some(l) => l.kill_group(pid),
            None => spawn::kill_group(pid),
        }
    }

    /// The request of `pid` is over: it is reaped now or, if still
    /// running, later, here or by the launcher that started it.
    fn release(&self, pid: i32) {
        self.running.set(self.running.get() - 1);
        match &self.launcher {
            Some(l) => l.release(pid),
            None => {
                if !matches!(spawn::try_reap(pid), Ok(Some(_))) {
                    self.zombies.borrow_mut().push((pid, Instant::now()));
                }
            }
        }
    }

    /// Reaps programs that outlived their request; kills those that
    /// linger past the grace time; with `all` (the worker ends), kills
    /// and waits for every one.
    pub fn reap(&self, now: Instant, all: bool) {
        let grace = self.grace;
        self.zombies.borrow_mut().retain(|&(pid, since)| {
            if all || now.saturating_duration_since(since) >= grace {
                spawn::kill_group(pid);
            }
            loop {
                match spawn::try_reap(pid) {
                    Ok(Some(_)) | Err(_) => return false,
                    Ok(None) if all => std::thread::sleep(Duration::from_millis(5)),
                    Ok(None) => return true,
                }
            }
        });
    }

    /// Gives back the memory of a long list that has emptied.
    pub fn shrink(&self) {
        self.zombies.borrow_mut().shrink_to_fit();
    }
}

/// A running program, released (reaped now or later) when dropped.
#[derive(Debug)]
pub struct Process {
    pid: i32,
    children: Rc<Children>,
}

impl Process {
    /// Kills the program's process group.
    pub fn kill(&self) {
        self.children.kill(self.pid);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.children.release(self.pid);
    }
}
