//! What wakes a worker besides its sockets: finished password checks
//! (from the hashing threads) and handlers' later answers that moved
//! (from their threads), each sent on a channel and followed by a wake
//! of the event loop.

use std::sync::{mpsc, Arc};

use mio::Waker;

use crate::access::verify::Verifier;
use crate::access::{Check, Checked};
use crate::channel;
use crate::handlers::stream::Wake;

/// A finished password check: connection, request id, outcome.
type Outcome = (usize, u64, Checked);

/// The channels into a worker's loop, and its waker.
pub(super) struct Wakeups {
    /// Hashes passwords off the loop.
    verifier: Arc<Verifier>,
    /// Wakes this worker's loop.
    waker: Arc<Waker>,
    /// Finished password checks.
    checks_tx: channel::Sender<Outcome>,
    checks_rx: channel::Receiver<Outcome>,
    /// The id of the next password check.
    next_check: u64,
    /// Connections whose handler's later answer has moved (see
    /// [`crate::handlers::stream::Later`]).
    streams_rx: mpsc::Receiver<usize>,
}

impl Wakeups {
    /// The wakeups of a worker woken by `waker`, and what its handlers'
    /// later answers wake it with.
    pub(super) fn new(verifier: Arc<Verifier>, waker: Arc<Waker>) -> (Wakeups, Wake) {
        let (streams_tx, streams_rx) = mpsc::channel();
        let wake = Wake {
            tx: streams_tx,
            waker: Arc::clone(&waker),
            conn: 0,
        };
        let (checks_tx, checks_rx) = channel::channel();
        let wakeups = Wakeups {
            verifier,
            waker,
            checks_tx,
            checks_rx,
            next_check: 0,
            streams_rx,
        };
        (wakeups, wake)
    }

    /// Hands `check`, for a request of connection `idx`, to the hashing
    /// threads: its id (the outcome comes back through
    /// [`Wakeups::next_check`]), or the check itself when they cannot
    /// take it (then it is run here).
    pub(super) fn submit_check(&mut self, idx: usize, check: Check) -> Result<u64, Check> {
        let id = self.next_check;
        self.next_check += 1;
        let done = reply(self.checks_tx.clone(), Arc::clone(&self.waker), idx, id);
        self.verifier.submit(check, Box::new(done)).map(|()| id)
    }

    /// The next finished password check, if any.
    pub(super) fn next_check(&self) -> Option<Outcome> {
        self.checks_rx.try_recv().ok()
    }

    /// The next connection whose later answer has moved, if any.
    pub(super) fn next_stream(&self) -> Option<usize> {
        self.streams_rx.try_recv().ok()
    }
}

/// What sends the outcome of request `id` of connection `idx` to the
/// worker and wakes it.
fn reply<T: Send + 'static>(
    tx: channel::Sender<(usize, u64, T)>,
    waker: Arc<Waker>,
    idx: usize,
    id: u64,
) -> impl FnOnce(T) + Send + 'static {
    move |outcome: T| {
        let _ = tx.send((idx, id, outcome));
        let _ = waker.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll, Token};
    use std::time::Duration;

    fn woken(poll: &mut Poll) -> bool {
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        events.iter().any(|e| e.token() == Token(7))
    }

    #[test]
    fn a_reply_carries_its_connection_and_id_and_wakes_the_loop() {
        let mut poll = Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), Token(7)).unwrap());
        let (tx, rx) = channel::channel();
        // (The worker holds its waker: one dropped closes its eventfd.)
        let done = reply(tx, Arc::clone(&waker), 3, 41);
        std::thread::spawn(move || done("granted")).join().unwrap();
        assert!(woken(&mut poll));
        assert_eq!(rx.try_recv().ok(), Some((3, 41, "granted")));
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
