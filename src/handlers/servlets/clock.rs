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
//!
//! Starting a budget reads no clock but the wall clock either: the
//! thread's CPU time (a system call, `CLOCK_THREAD_CPUTIME_ID` has no
//! vDSO path) is first read at the hook's first check, a thousand
//! instructions in, and the budget counts from there. Most requests end
//! before that (a hello servlet runs a few dozen instructions) and read
//! it never; the few instructions before the first check are not
//! counted, which at worst lets a request run that much over its budget.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::sys::clock::thread_cpu_time;

/// One budget at a time (a worker runs one servlet at a time).
#[derive(Debug)]
pub(super) struct Clock {
    /// When the budget is spent at the earliest.
    deadline: Cell<Instant>,
    /// The thread's CPU time when the budget was first checked (none
    /// before), and the budget.
    since: Cell<(Option<Duration>, Duration)>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            deadline: Cell::new(Instant::now()),
            since: Cell::new((None, Duration::ZERO)),
        }
    }
}

impl Clock {
    /// Starts a budget of `left` at `now`.
    pub(super) fn start(&self, left: Duration, now: Instant) {
        self.since.set((None, left));
        self.deadline.set(now + left);
    }

    /// Whether the budget is spent (the hook's question).
    pub(super) fn spent(&self) -> bool {
        let now = Instant::now();
        let (from, budget) = self.since.get();
        let Some(from) = from else {
            // The first check: the budget counts from here.
            self.since.set((Some(thread_cpu_time()), budget));
            self.deadline.set(now + budget);
            return false;
        };
        if now <= self.deadline.get() {
            return false;
        }
        let used = thread_cpu_time().saturating_sub(from);
        if used >= budget {
            return true;
        }
        self.deadline.set(now + (budget - used));
        false
    }

    /// The CPU time counted against the budget so far.
    pub(super) fn used(&self) -> Duration {
        match self.since.get().0 {
            Some(from) => thread_cpu_time().saturating_sub(from),
            None => Duration::ZERO,
        }
    }
}
