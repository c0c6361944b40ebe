//! Password hashing off the event loops: a few threads ([`Offload`]),
//! started on first use, run [`Check`]s and hand each outcome to a
//! callback (which sends it back to the worker that asked, and wakes it).
//! A check identical to one in flight is not run: it waits for that one's
//! verdict (see [`take_off`]).

use std::sync::{Mutex, MutexGuard};

use crate::offload::{Job, Offload};

use super::auth::{Check, Checked};

/// Password checks in flight that others may wait for; beyond it a check
/// is hashed on its own.
const MAX_FLIGHTS: usize = 256;

/// A password check in flight: the key of its credential and file
/// version (see `Auth`), and the outcomes of the identical checks waiting
/// for its verdict (each to be told it), with what gets each.
pub(crate) struct Flight(pub(crate) [u8; 32], pub(crate) Vec<(Checked, Done)>);

/// The checks in flight, of every server of the process (whose keys
/// differ: each has its own secret), scanned: few.
static FLIGHTS: Mutex<Vec<Flight>> = Mutex::new(Vec::new());

/// The checks in flight, locked.
pub(crate) fn flights() -> MutexGuard<'static, Vec<Flight>> {
    FLIGHTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A password check of the credential `key` is handed out: whether it is
/// to be hashed (then it is in flight until [`land`]). If an identical
/// check is in flight, not: it waits for that one's verdict, and counts
/// as no failure (one guess sent many times at once is one guess).
pub(crate) fn take_off(key: &[u8; 32]) -> bool {
    let mut f = flights();
    if f.iter().any(|w| w.0 == *key) {
        return false;
    }
    if f.len() < MAX_FLIGHTS {
        f.push(Flight(*key, Vec::new()));
    }
    true
}

/// The check of `key` is done: the checks that waited for it.
pub(crate) fn land(key: &[u8; 32]) -> Vec<(Checked, Done)> {
    let mut f = flights();
    match f.iter().position(|w| w.0 == *key) {
        Some(i) => f.swap_remove(i).1,
        None => Vec::new(),
    }
}

/// What gets a check's outcome.
pub(crate) type Done = Box<dyn FnOnce(Checked) + Send>;

/// A check, and what gets its outcome.
pub(crate) struct Hash(pub(crate) Check, pub(crate) Done);

impl Job for Hash {
    fn run(self) {
        (self.1)(self.0.run())
    }
}

/// The hashing threads, shared by every worker of a server.
#[derive(Debug)]
pub struct Verifier(Offload<Hash>);

impl Verifier {
    /// Up to `threads` hashing threads (at least one), started when the
    /// first check arrives.
    pub fn new(threads: usize) -> Verifier {
        Verifier(Offload::new("brisk-hash", threads))
    }

    /// Runs `check` on a hashing thread, or has it wait for the verdict
    /// of an identical check in flight, and then `done` with its outcome.
    /// If no thread can be started, runs it here.
    pub fn submit(&self, check: Check, done: Box<dyn FnOnce(Checked) + Send>) {
        if let Some(job) = check.join(done) {
            if let Err(job) = self.0.submit(job) {
                job.run();
            }
        }
    }
}
