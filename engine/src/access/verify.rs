//! Password hashing off the event loops: a few threads ([`Offload`]),
//! started on first use, run [`Check`]s and hand each outcome to a
//! callback (which sends it back to the worker that asked, and wakes it).

use crate::offload::{Job, Offload};

use super::auth::{Check, Checked};

/// A check, and what gets its outcome.
struct Hash(Check, Box<dyn FnOnce(Checked) + Send>);

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

    /// Runs `check` on a hashing thread and then `done` with its outcome.
    /// If no thread can be started, gives the check back.
    pub fn submit(&self, check: Check, done: Box<dyn FnOnce(Checked) + Send>) -> Result<(), Check> {
        self.0.submit(Hash(check, done)).map_err(|h| h.0)
    }
}
