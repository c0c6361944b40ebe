//! Password hashing off the event loops: a few threads, started on first
//! use, run [`Check`]s and hand each outcome to a callback (which sends it
//! back to the worker that asked, and wakes it).

use crate::channel::{self as mpsc, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use super::auth::{Check, Checked};

type Job = (Check, Box<dyn FnOnce(Checked) + Send>);

/// The hashing threads, shared by every worker of a server.
pub struct Verifier {
    threads: usize,
    jobs: OnceLock<Option<Sender<Job>>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("threads", &self.threads)
            .finish()
    }
}

impl Verifier {
    /// Up to `threads` hashing threads (at least one), started when the
    /// first check arrives.
    pub fn new(threads: usize) -> Verifier {
        Verifier {
            threads: threads.max(1),
            jobs: OnceLock::new(),
        }
    }

    /// Runs `check` on a hashing thread and then `done` with its outcome.
    /// If no thread can be started, gives the check back.
    pub fn submit(&self, check: Check, done: Box<dyn FnOnce(Checked) + Send>) -> Result<(), Check> {
        let jobs = self.jobs.get_or_init(|| self.start());
        match jobs {
            Some(tx) => tx.send((check, done)).map_err(|e| (e.0).0),
            None => Err(check),
        }
    }

    fn start(&self) -> Option<Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..self.threads {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("brisk-hash-{i}"))
                .spawn(move || serve(&rx));
            if spawned.is_ok() {
                started += 1;
            }
        }
        (started > 0).then_some(tx)
    }
}

fn serve(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok((check, done)) = job else { return };
        done(check.run());
    }
}
