//! Large files sent from the page cache only: a file range whose next
//! turn of bytes is not cached is read in on the [`READING`] threads
//! while the worker serves its other connections, and sent as it comes
//! in (see [`crate::sys::cached`], which asks; nginx's `aio threads` does
//! the like, when set). An answer waits for one read at a time; all the
//! reads, running or queued, are at most [`READS`]; and a read stops
//! once its answer (or connection) went: a client that asks and goes
//! costs a step of the disk, and nothing that outlives it.
//!
//! Over HTTP/1.1, plain or TLS (sent by `sendfile`, or copied with
//! `[static] sendfile = false` and over TLS), and HTTP/2 and HTTP/3,
//! where an answer whose bytes are being read in is passed over (paused)
//! while the connection's other answers go on.

use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Worker, TURN};
use crate::offload::{Offload, Task};
use crate::server::conn::Conn;
use crate::sys::cached::{self, Next, Warmth};

/// The threads that read files in (a disk serves a few reads at once
/// well, and a slow one is not made faster by more).
static READING: Offload<Task> = Offload::new("brisk-read", 4);

/// Bytes read in at a time (and dropped: the page cache keeps them for
/// the `sendfile` that follows), into a buffer of the job's own (freed
/// with it: a thread's stack would keep its pages); the worker is woken
/// after each.
const STEP: usize = 128 << 10;

/// The reads in, running or queued, of all workers: each holds a
/// descriptor of its file (a duplicate: the answer's own is not the
/// thread's to share) and its turn of the disk. Past this, a file is sent
/// as before, from the loop (nginx's `aio threads` answers with an error
/// once its queue is full).
static READS: Slots = Slots::new(64);

/// A count of things under way, at most `max`.
pub(crate) struct Slots {
    taken: AtomicUsize,
    max: usize,
}

/// One of [`Slots`], given back when dropped.
pub(crate) struct Slot(&'static Slots);

impl Slots {
    pub(crate) const fn new(max: usize) -> Slots {
        Slots {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// A slot, unless all are taken.
    pub(crate) fn take(&'static self) -> Option<Slot> {
        let more = |n: usize| (n < self.max).then_some(n + 1);
        let taken = self
            .taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, more);
        taken.ok().map(|_| Slot(self))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The times a request waits for a cold disk's lookups off the loop
/// before they are made on it (a disk whose caches keep nothing).
#[cfg(feature = "cold-lookups")]
pub(super) const COLD_WAITS: u8 = 3;

/// One of [`READS`], unless all are under way.
#[cfg(feature = "cold-lookups")]
pub(super) fn read_slot() -> Option<Slot> {
    READS.take()
}

/// The threads that look files up for requests (see
/// `Worker::cold_later`): apart from [`READING`]'s, so that a lookup
/// never waits behind large files' reads in.
#[cfg(feature = "cold-lookups")]
static LOOKING: Offload<Task> = Offload::new("brisk-look", 4);

/// Runs `job` on the [`LOOKING`] threads, `slot` held until it is done;
/// where no thread can be started, here.
#[cfg(feature = "cold-lookups")]
pub(super) fn look_up(slot: Slot, job: impl FnOnce() + Send + 'static) {
    let task = Task(Box::new(move || {
        job();
        drop(slot);
    }));
    if let Err(Task(job)) = LOOKING.submit(task) {
        job();
    }
}

impl Worker {
    /// How many bytes of `c`'s output may be sent now: none while the
    /// file bytes it would send next are being read in (it is driven
    /// again as they come in), nor once they have been found not cached
    /// (their read in starts).
    pub(super) fn file_ready(&self, c: &mut Conn) -> usize {
        let index = c.index;
        let Some(next) = c.out.next_file() else {
            return usize::MAX;
        };
        let range = next.range;
        match self.warm(index, &range.file, next.warmth, range.offset, range.len) {
            // (A range too short to ask about, with another behind it (a
            // multipart answer's next part): as far as its end, so that
            // the next is asked about before it is sent.)
            usize::MAX if next.more => (next.before + range.len).try_into().unwrap_or(usize::MAX),
            ready => ready,
        }
    }

    /// How many of the `len` bytes of `file` from `offset` that connection
    /// `conn` sends next (`warmth` tells what is known of them) may be
    /// sent now: as [`Worker::file_ready`].
    pub(super) fn warm(
        &self,
        conn: usize,
        file: &File,
        warmth: &mut Warmth,
        offset: u64,
        len: u64,
    ) -> usize {
        let turn = len.min(TURN as u64);
        match warmth.next(file, offset, len, turn) {
            Next::Send(n) => return n.min(usize::MAX as u64) as usize,
            Next::Wait => return 0,
            Next::Read => {}
        }
        let Some(slot) = READS.take() else {
            return usize::MAX;
        };
        let Ok(file) = file.try_clone() else {
            return usize::MAX;
        };
        let reading = warmth.read(offset, turn);
        let wake = self.router.wake_for(conn);
        let task = Task(Box::new(move || {
            cached::warm(&file, &reading, &mut vec![0; STEP], || wake.now());
            drop(slot);
        }));
        if READING.submit(task).is_err() {
            // (No thread: sent from here, waiting for the disk as before.)
            *warmth = Warmth::default();
            return usize::MAX;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_past_their_count_are_refused_until_one_is_given_back() {
        static S: Slots = Slots::new(2);
        let (a, b) = (S.take(), S.take());
        assert!(a.is_some() && b.is_some());
        assert!(S.take().is_none());
        drop(a);
        let c = S.take();
        assert!(c.is_some());
        assert!(S.take().is_none());
        drop((b, c));
        assert_eq!(S.taken.load(Ordering::Relaxed), 0);
    }
}
