//! How the main thread tells a set of workers to wind down: at a reload
//! the previous workers *retire* (they stop accepting and finish every
//! response they have started, and keep idle keep-alive connections until
//! their next request, answered with `Connection: close`, or their idle
//! timeout); at SIGTERM every worker *stops* (idle connections close at
//! once, the rest gets `timeouts.shutdown`).

use std::sync::Mutex;
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
/// Workers read it when woken, never on the request path.
#[derive(Debug)]
pub struct DrainOrder(Mutex<(Drain, Option<Instant>)>);

impl Default for DrainOrder {
    fn default() -> Self {
        DrainOrder(Mutex::new((Drain::Serve, None)))
    }
}

impl DrainOrder {
    /// Orders `mode`, to be done within `bound` from now (none: as long
    /// as the connections' own timeouts allow). A milder order than the
    /// one given already changes nothing; a deadline only ever comes closer.
    pub fn give(&self, mode: Drain, bound: Option<Duration>) {
        let deadline = bound.map(|b| Instant::now() + b);
        let mut o = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if mode < o.0 {
            return;
        }
        o.0 = mode;
        o.1 = match (o.1, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The current order and its deadline.
    pub fn get(&self) -> (Drain, Option<Instant>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
