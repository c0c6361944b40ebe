//! A request's CPU-time budget (`servlets.cpu_time`), counted on the
//! worker thread's own CPU clock: time the thread spends waiting for a
//! core on a busy machine (or stopped) does not count against it, so a
//! servlet's answer does not depend on the machine's load.
//!
//! The hook that checks it runs every thousand Lua instructions, where a
//! system call each time would cost: it reads the wall clock (which the
//! vDSO answers without one) and asks for the thread's CPU time only
//! once the wall clock says the budget may be spent. The thread's CPU
//! time never runs ahead of the wall clock, so the budget is never cut
//! short; when the thread was kept waiting, the deadline moves on by
//! what is left.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::sys::clock::thread_cpu_time;

/// One budget at a time (a worker runs one servlet at a time).
#[derive(Debug)]
pub(super) struct Clock {
    /// When the budget is spent at the earliest.
    deadline: Cell<Instant>,
    /// The thread's CPU time when the budget started, and the budget.
    since: Cell<(Duration, Duration)>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            deadline: Cell::new(Instant::now()),
            since: Cell::new((Duration::ZERO, Duration::ZERO)),
        }
    }
}

impl Clock {
    /// Starts a budget of `left`.
    pub(super) fn start(&self, left: Duration) {
        self.since.set((thread_cpu_time(), left));
        self.deadline.set(Instant::now() + left);
    }

    /// Whether the budget is spent (the hook's question).
    pub(super) fn spent(&self) -> bool {
        let now = Instant::now();
        if now <= self.deadline.get() {
            return false;
        }
        let (from, budget) = self.since.get();
        let used = thread_cpu_time().saturating_sub(from);
        if used >= budget {
            return true;
        }
        self.deadline.set(now + (budget - used));
        false
    }
}
