//! What wakes a worker besides its sockets: finished password checks
//! (from the hashing threads) and handlers' later answers that moved
//! (from their threads), each sent on a channel and followed by a wake
//! of the event loop.

use std::sync::Arc;

use mio::Waker;

use crate::access::verify::Verifier;
use crate::access::{Check, Checked};
use crate::channel;
use crate::handlers::stream::Wake;
use crate::server::exchange::ExchangeId;
#[cfg(feature = "cold-lookups")]
use crate::server::router::Looks;

/// A finished password check: the exchange it was for, its outcome.
type Outcome = (ExchangeId, Checked);

/// The channels into a worker's loop, and its waker.
pub(super) struct Wakeups {
    /// Hashes passwords off the loop.
    verifier: Arc<Verifier>,
    /// Wakes this worker's loop.
    waker: Arc<Waker>,
    /// Finished password checks.
    checks_tx: channel::Sender<Outcome>,
    checks_rx: channel::Receiver<Outcome>,
    /// Connections whose handler's later answer has moved (see
    /// [`crate::handlers::stream::Later`]).
    streams_rx: channel::Receiver<usize>,
    /// Requests whose cold lookups were made (see `Worker::cold_later`):
    /// their exchanges, and what the lookups found.
    #[cfg(feature = "cold-lookups")]
    colds_tx: channel::Sender<(ExchangeId, Looks)>,
    #[cfg(feature = "cold-lookups")]
    colds_rx: channel::Receiver<(ExchangeId, Looks)>,
    /// The cold lookups under way.
    #[cfg(feature = "cold-lookups")]
    colds: Vec<UnderWay>,
}

/// Cold lookups under way: a popular file due to be checked again on a
/// remote disk asks the disk once, not once a request.
#[cfg(feature = "cold-lookups")]
struct UnderWay {
    /// The exchange whose request asked for them.
    ex: ExchangeId,
    /// Of what: the site, and the path.
    site: usize,
    rel: Vec<u8>,
    /// The exchanges held for the same lookups since, which they answer
    /// too.
    also: Vec<ExchangeId>,
}

impl Wakeups {
    /// The wakeups of a worker woken by `waker`, and what its handlers'
    /// later answers wake it with.
    pub(super) fn new(verifier: Arc<Verifier>, waker: Arc<Waker>) -> (Wakeups, Wake) {
        let (streams_tx, streams_rx) = channel::channel();
        let wake = Wake {
            tx: streams_tx,
            waker: Arc::clone(&waker),
            conn: 0,
        };
        let (checks_tx, checks_rx) = channel::channel();
        #[cfg(feature = "cold-lookups")]
        let (colds_tx, colds_rx) = channel::channel();
        let wakeups = Wakeups {
            verifier,
            waker,
            checks_tx,
            checks_rx,
            streams_rx,
            #[cfg(feature = "cold-lookups")]
            colds_tx,
            #[cfg(feature = "cold-lookups")]
            colds_rx,
            #[cfg(feature = "cold-lookups")]
            colds: Vec::new(),
        };
        (wakeups, wake)
    }

    /// Hands `check`, for the request held in exchange `ex`, to the
    /// hashing threads (the outcome comes back with `ex` through
    /// [`Wakeups::next_check`]).
    pub(super) fn submit_check(&mut self, ex: ExchangeId, check: Check) {
        let done = reply(self.checks_tx.clone(), Arc::clone(&self.waker), ex);
        self.verifier.submit(check, Box::new(done))
    }

    /// The next finished password check, if any.
    pub(super) fn next_check(&self) -> Option<Outcome> {
        self.checks_rx.try_recv().ok()
    }

    /// Whether the lookups of `rel` of site `site` are under way.
    #[cfg(feature = "cold-lookups")]
    pub(super) fn cold_under_way(&self, site: usize, rel: &[u8]) -> bool {
        self.colds.iter().any(|c| c.site == site && c.rel == rel)
    }

    /// Has the lookups under way of `rel` of site `site` answer the
    /// request held in exchange `ex` too.
    #[cfg(feature = "cold-lookups")]
    pub(super) fn join_cold(&mut self, site: usize, rel: &[u8], ex: ExchangeId) {
        if let Some(c) = self
            .colds
            .iter_mut()
            .find(|c| c.site == site && c.rel == rel)
        {
            c.also.push(ex);
        }
    }

    /// What tells the worker what the cold lookups of `rel` of site
    /// `site`, for the request held in exchange `ex`, found, and wakes it
    /// ([`Wakeups::next_cold`]); they are under way from now on.
    #[cfg(feature = "cold-lookups")]
    pub(super) fn cold_done(
        &mut self,
        ex: ExchangeId,
        site: usize,
        rel: Vec<u8>,
    ) -> impl FnOnce(Looks) + Send + 'static {
        self.colds.push(UnderWay {
            ex,
            site,
            rel,
            also: Vec::new(),
        });
        reply(self.colds_tx.clone(), Arc::clone(&self.waker), ex)
    }

    /// The next cold lookups made, if any: what they found, and the
    /// exchanges held for them.
    #[cfg(feature = "cold-lookups")]
    pub(super) fn next_cold(&mut self) -> Option<(Looks, Vec<ExchangeId>)> {
        let (ex, looks) = self.colds_rx.try_recv().ok()?;
        let mut held = vec![ex];
        if let Some(at) = self.colds.iter().position(|c| c.ex == ex) {
            held.append(&mut self.colds.swap_remove(at).also);
        }
        Some((looks, held))
    }

    /// The next connection whose later answer has moved, if any.
    pub(super) fn next_stream(&self) -> Option<usize> {
        self.streams_rx.try_recv().ok()
    }
}

/// What sends the outcome for exchange `ex` to the worker and wakes it.
fn reply<T: Send + 'static>(
    tx: channel::Sender<(ExchangeId, T)>,
    waker: Arc<Waker>,
    ex: ExchangeId,
) -> impl FnOnce(T) + Send + 'static {
    move |outcome: T| {
        let _ = tx.send((ex, outcome));
        let _ = waker.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll, Token};
    use std::time::Duration;

    /// An exchange's id (of a table of its own).
    fn exchange() -> ExchangeId {
        use crate::server::exchange::{Exchange, Exchanges, Task};
        use crate::server::waits::{HandlerWait, Held, Wait};
        let mut all = Exchanges::new();
        all.insert(Exchange {
            conn: 3,
            stream: None,
            task: Task::Wait(Wait::Handler(HandlerWait {
                mount: 0,
                held: Held {
                    req: Default::default(),
                    started: std::time::Instant::now(),
                    redirects: 0,
                    body_max: u64::MAX,
                    #[cfg(feature = "cold-lookups")]
                    colds: 0,
                },
                body: Vec::new(),
                counted: 0,
            })),
        })
    }

    fn woken(poll: &mut Poll) -> bool {
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        events.iter().any(|e| e.token() == Token(7))
    }

    #[test]
    fn a_reply_carries_its_exchange_and_wakes_the_loop() {
        let mut poll = Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), Token(7)).unwrap());
        let (tx, rx) = channel::channel();
        // (The worker holds its waker: one dropped closes its eventfd.)
        let ex = exchange();
        let done = reply(tx, Arc::clone(&waker), ex);
        std::thread::spawn(move || done("granted")).join().unwrap();
        assert!(woken(&mut poll));
        assert_eq!(rx.try_recv().ok(), Some((ex, "granted")));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_later_answer_that_moved_names_its_connection_and_wakes_the_loop() {
        let mut poll = Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), Token(7)).unwrap());
        let (wakeups, wake) = Wakeups::new(Arc::new(Verifier::new(1)), waker);
        assert_eq!(wakeups.next_stream(), None);
        let mut moved = wake;
        moved.conn = 5;
        moved.tx.send(moved.conn).unwrap();
        moved.waker.wake().unwrap();
        assert!(woken(&mut poll));
        assert_eq!(wakeups.next_stream(), Some(5));
        assert_eq!(wakeups.next_stream(), None);
        assert!(wakeups.next_check().is_none());
    }
}
