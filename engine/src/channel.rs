//! Channels between the engine's threads: a queue under a mutex, with a
//! condition variable for the receiver and one for senders waiting for
//! room. The standard library's `mpsc` builds its three flavours (array,
//! list, zero-capacity) for every element type, 6 to 9 KiB of machine code
//! a type (cargo bloat: 45 KiB of `mpmc` in the build with `tls`); this is
//! one small generic. Its users send a message per batch, per password
//! check or per job, not per byte, so a lock a message costs nothing
//! that shows. The errors are the standard library's, so that callers
//! match them as before.

use std::collections::VecDeque;
use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled when a message arrives or the last sender leaves.
    filled: Condvar,
    /// Signalled when room is made or the receiver leaves.
    emptied: Condvar,
}

struct State<T> {
    queue: VecDeque<T>,
    /// The most messages queued at once (`usize::MAX`: no bound).
    cap: usize,
    senders: usize,
    receiver: bool,
    /// Threads waiting in `filled` (receivers) and in `emptied`
    /// (senders): a message or a slot wakes someone only when someone
    /// waits, so that the common case makes no system call.
    receiving: usize,
    sending: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A thread that panicked holding the lock left the queue whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A message was queued: wakes a receiver if one waits.
    fn filled_one(&self, state: MutexGuard<'_, State<T>>) {
        let waits = state.receiving > 0;
        drop(state);
        if waits {
            self.filled.notify_one();
        }
    }

    /// A message was taken: wakes a sender if one waits for room.
    fn emptied_one(&self, state: MutexGuard<'_, State<T>>) {
        let waits = state.sending > 0;
        drop(state);
        if waits {
            self.emptied.notify_one();
        }
    }
}

/// The sending side (cloned for more senders).
pub struct Sender<T>(Arc<Shared<T>>);

/// The receiving side.
pub struct Receiver<T>(Arc<Shared<T>>);

/// A channel that holds any number of messages (`mpsc::channel`).
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    bounded(usize::MAX)
}

/// A channel that holds `cap` messages at most, at least one
/// (`mpsc::sync_channel`, without its rendezvous at 0): `send` waits for
/// room, `try_send` says `Full`.
pub fn sync_channel<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    bounded(cap.max(1))
}

fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    // A bound's room taken at once (as the standard library's array), so
    // that sending allocates nothing.
    let room = if cap == usize::MAX { 0 } else { cap };
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(room),
            cap,
            senders: 1,
            receiver: true,
            receiving: 0,
            sending: 0,
        }),
        filled: Condvar::new(),
        emptied: Condvar::new(),
    });
    (Sender(Arc::clone(&shared)), Receiver(shared))
}

impl<T> Sender<T> {
    /// Queues `msg`, waiting for room if the channel is full; `Err` once
    /// the receiver is gone.
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        let mut state = self.0.lock();
        loop {
            if !state.receiver {
                return Err(SendError(msg));
            }
            if state.queue.len() < state.cap {
                state.queue.push_back(msg);
                self.0.filled_one(state);
                return Ok(());
            }
            state.sending += 1;
            state = self
                .0
                .emptied
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
            state.sending -= 1;
        }
    }

    /// Queues `msg` if there is room, without waiting.
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        let mut state = self.0.lock();
        if !state.receiver {
            return Err(TrySendError::Disconnected(msg));
        }
        if state.queue.len() >= state.cap {
            return Err(TrySendError::Full(msg));
        }
        state.queue.push_back(msg);
        self.0.filled_one(state);
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        self.0.lock().senders += 1;
        Sender(Arc::clone(&self.0))
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.senders -= 1;
        if state.senders == 0 {
            drop(state);
            self.0.filled.notify_all();
        }
    }
}

impl<T> Receiver<T> {
    /// The next message, waiting for one; `Err` once the queue is empty
    /// and every sender is gone.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.wait(None).map_err(|_| RecvError)
    }

    /// The next message, waiting `timeout` at most.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// The next message if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut state = self.0.lock();
        match state.queue.pop_front() {
            Some(msg) => {
                self.0.emptied_one(state);
                Ok(msg)
            }
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    fn wait(&self, until: Option<Instant>) -> Result<T, RecvTimeoutError> {
        let mut state = self.0.lock();
        loop {
            if let Some(msg) = state.queue.pop_front() {
                self.0.emptied_one(state);
                return Ok(msg);
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            state.receiving += 1;
            state = match until {
                None => self.0.filled.wait(state).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let Some(left) = t.checked_duration_since(Instant::now()) else {
                        state.receiving -= 1;
                        return Err(RecvTimeoutError::Timeout);
                    };
                    let waited = self.0.filled.wait_timeout(state, left);
                    waited.unwrap_or_else(|e| e.into_inner()).0
                }
            };
            state.receiving -= 1;
        }
    }
}

impl<T> Drop for Receiver<T> {
    /// No message can be received any more: those queued are dropped now,
    /// as the standard library's channel does. (Kept, they could hold the
    /// channel up for ever: a log batch carries the sender that brings it
    /// home, so the home queue of a logger gone at a reload would keep
    /// itself, and its buffers, alive.) They drop after the lock is let
    /// go, since dropping a sender takes it.
    fn drop(&mut self) {
        let queued = {
            let mut state = self.0.lock();
            state.receiver = false;
            std::mem::take(&mut state.queue)
        };
        self.0.emptied.notify_all();
        drop(queued);
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sender")
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Receiver")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_arrive_in_order_and_leaving_is_seen_from_both_ends() {
        let (tx, rx) = channel();
        let tx2 = tx.clone();
        tx.send(1).unwrap();
        tx2.send(2).unwrap();
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(1)),
            Err(RecvTimeoutError::Timeout)
        );
        drop(tx);
        tx2.send(3).unwrap();
        drop(tx2);
        // Queued messages outlive their senders.
        assert_eq!(rx.recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv(), Err(RecvError));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );
        let (tx, rx) = channel::<u8>();
        drop(rx);
        assert_eq!(tx.send(4), Err(SendError(4)));
        assert_eq!(tx.try_send(5), Err(TrySendError::Disconnected(5)));
    }

    #[test]
    fn a_full_channel_refuses_try_send_and_send_waits_for_room() {
        let (tx, rx) = sync_channel(2);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        // Full: this send waits until a message is taken.
        let sender = std::thread::spawn(move || {
            tx.send(3).unwrap();
            tx
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.recv(), Ok(3));
        let tx = sender.join().unwrap();
        tx.send(4).unwrap();
        tx.send(5).unwrap();
        // Full again: a send that waits fails when the receiver leaves.
        let sender = std::thread::spawn(move || tx.send(6));
        drop(rx);
        assert_eq!(sender.join().unwrap(), Err(SendError(6)));
        // At least one message fits.
        let (tx, rx) = sync_channel(0);
        assert_eq!(tx.try_send(7), Ok(()));
        assert_eq!(rx.recv(), Ok(7));
    }

    #[test]
    fn a_receiver_waiting_is_woken_by_another_thread() {
        let (tx, rx) = channel();
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for j in 0..1000 {
                        tx.send(i * 1000 + j).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut got: Vec<u32> = std::iter::from_fn(|| rx.recv().ok()).collect();
        for t in threads {
            t.join().unwrap();
        }
        got.sort_unstable();
        assert_eq!(got, (0..4000).collect::<Vec<_>>());
    }

    /// A message that carries a sender of its own channel (as a log batch
    /// does, to come home) is dropped with the receiver, and the channel
    /// with it: nothing keeps itself alive.
    #[test]
    fn messages_queued_when_the_receiver_goes_are_dropped() {
        struct Homing(
            #[allow(dead_code)] Sender<Homing>,
            #[allow(dead_code)] Arc<()>,
        );
        let alive = Arc::new(());
        let (tx, rx) = sync_channel(4);
        for _ in 0..3 {
            tx.try_send(Homing(tx.clone(), Arc::clone(&alive)))
                .expect("room");
        }
        let shared = Arc::downgrade(&tx.0);
        drop(tx);
        assert_eq!(Arc::strong_count(&alive), 4);
        drop(rx);
        assert_eq!(Arc::strong_count(&alive), 1, "the queued messages dropped");
        assert!(shared.upgrade().is_none(), "the channel is gone");
    }
}
