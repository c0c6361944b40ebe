//! Large files sent from the page cache only: a file range whose next
//! turn of bytes is not cached is read in on the [`READING`] threads
//! while the worker serves its other connections, and sent as it comes
//! in (see [`crate::sys::cached`], which asks; nginx's `aio threads` does
//! the like, when set). A connection waits for one read at a time, so the
//! reads under way are bounded by the connections.
//!
//! Over HTTP/1.1, plain or TLS (sent by `sendfile`, or copied with
//! `[static] sendfile = false` and over TLS), and HTTP/2 and HTTP/3,
//! where an answer whose bytes are being read in is passed over (paused)
//! while the connection's other answers go on.

use std::fs::File;

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

impl Worker {
    /// How many bytes of `c`'s output may be sent now: none while the
    /// file bytes it would send next are being read in (it is driven
    /// again as they come in), nor once they have been found not cached
    /// (their read in starts).
    pub(super) fn file_ready(&self, c: &mut Conn) -> usize {
        let index = c.index;
        let Some((range, warmth)) = c.out.next_file() else {
            return usize::MAX;
        };
        self.warm(index, &range.file, warmth, range.offset, range.len)
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
        let Ok(file) = file.try_clone() else {
            return usize::MAX;
        };
        let reading = warmth.read(offset, turn);
        let wake = self.router.wake_for(conn);
        let task = Task(Box::new(move || {
            cached::warm(&file, &reading, &mut vec![0; STEP], || wake.now());
        }));
        if READING.submit(task).is_err() {
            // (No thread: sent from here, waiting for the disk as before.)
            *warmth = Warmth::default();
            return usize::MAX;
        }
        0
    }
}
