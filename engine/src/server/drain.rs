//! How the main thread tells a set of workers to wind down: at a reload
//! the previous workers *retire* (they stop accepting and finish every
//! response they have started, and keep idle keep-alive connections until
//! their next request, answered with `Connection: close`, or their idle
//! timeout); at SIGTERM every worker *stops* (idle connections close at
//! once, the rest gets `timeouts.shutdown`).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a set of workers is asked to do, in increasing order of haste: a
/// later order may only hasten an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Drain {
    /// Serve as usual.
    Serve,
    /// A reload replaced these workers: finish what was started, keep
    /// idle connections for one more request or until their idle timeout.
    Retire,
    /// The server stops: close idle connections, finish in-flight
    /// responses.
    Stop,
}

/// An order shared by the main thread and the workers of one generation.
/// Workers read it when woken, never on the request path, and say when
/// they have let go of their listening sockets.
#[derive(Debug, Default)]
pub struct DrainOrder {
    state: Mutex<State>,
    /// Signalled each time a worker lets go of its listeners.
    let_go: Condvar,
}

#[derive(Debug)]
struct State {
    mode: Drain,
    deadline: Option<Instant>,
    /// How many workers have closed their listening sockets.
    let_go: usize,
}

impl Default for State {
    fn default() -> Self {
        State {
            mode: Drain::Serve,
            deadline: None,
            let_go: 0,
        }
    }
}

impl DrainOrder {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Orders `mode`, to be done within `bound` from now (none: as long
    /// as the connections' own timeouts allow). A milder order than the
    /// one given already changes nothing; a deadline only ever comes closer.
    pub fn give(&self, mode: Drain, bound: Option<Duration>) {
        let deadline = bound.map(|b| Instant::now() + b);
        let mut o = self.state();
        if mode < o.mode {
            return;
        }
        o.mode = mode;
        o.deadline = match (o.deadline, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The current order and its deadline.
    pub fn get(&self) -> (Drain, Option<Instant>) {
        let o = self.state();
        (o.mode, o.deadline)
    }

    /// A worker has closed its listening sockets (once per worker): from
    /// now on it accepts no connection.
    pub fn listeners_closed(&self) {
        self.state().let_go += 1;
        self.let_go.notify_all();
    }

    /// Waits until `workers` workers have closed their listening
    /// sockets or `exited()` says they all have exited (which closes
    /// them too), at most `bound`; whether they did.
    pub fn wait_listeners_closed(
        &self,
        workers: usize,
        bound: Duration,
        exited: impl Fn() -> bool,
    ) -> bool {
        let until = Instant::now() + bound;
        let mut o = self.state();
        loop {
            if o.let_go >= workers || exited() {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            // (Woken by each worker; one that died never says so, hence
            // the short turns that look at `exited`.)
            let turn = (until - now).min(Duration::from_millis(50));
            o = self
                .let_go
                .wait_timeout(o, turn)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
