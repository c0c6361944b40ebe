//! Work kept off the event loops: a few threads, started on first use,
//! take jobs from one queue and run each with the pool's function (which
//! hands the outcome back to the worker that asked, and wakes it).
//!
//! Its pools: password hashing ([`crate::access::verify`]), listings
//! not kept ([`crate::handlers::listings`]), large files' bytes read in
//! from a slow disk (`server::worker::warm`) and, with `webdav`, the end
//! of a PUT (its `fsync`s and rename, which wait on the disk for
//! milliseconds, seconds on a slow card) and the other changes
//! (`handlers::webdav::change`).

use crate::channel::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Work for an [`Offload`] pool's threads.
pub trait Job: Send + 'static {
    /// Does it (and hands its outcome to whoever waits for it).
    fn run(self);
}

/// A job that is a closure (one type for the pools that need nothing
/// more: their threads' code is built once for all of them).
pub struct Task(pub Box<dyn FnOnce() + Send>);

impl Job for Task {
    fn run(self) {
        (self.0)();
    }
}

/// Threads that run jobs of type `J`, shared by every worker.
pub struct Offload<J> {
    /// Names the threads (`brisk-hash-0`...).
    name: &'static str,
    threads: usize,
    jobs: OnceLock<Option<Sender<J>>>,
}

impl<J> std::fmt::Debug for Offload<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl<J: Job> Offload<J> {
    /// Up to `threads` threads (at least one) named `name-N`, started
    /// when the first job arrives, each running job after job.
    pub const fn new(name: &'static str, threads: usize) -> Offload<J> {
        Offload {
            name,
            threads: if threads == 0 { 1 } else { threads },
            jobs: OnceLock::new(),
        }
    }

    /// Runs `job` on one of the threads; gives it back if no thread can
    /// be started (the caller runs it itself).
    pub fn submit(&self, job: J) -> Result<(), J> {
        let jobs = self.jobs.get_or_init(|| self.start());
        match jobs {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    fn start(&self) -> Option<Sender<J>> {
        let (tx, rx) = channel::channel::<J>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..self.threads {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || serve(&rx));
            if spawned.is_ok() {
                started += 1;
            }
        }
        (started > 0).then_some(tx)
    }
}

fn serve<J: Job>(rx: &Mutex<Receiver<J>>) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        job.run();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    static SEEN: Mutex<Option<mpsc::Sender<(u32, String)>>> = Mutex::new(None);

    #[derive(Debug)]
    struct Record(u32);

    impl Job for Record {
        fn run(self) {
            let name = std::thread::current().name().unwrap_or("").to_string();
            if let Some(tx) = &*SEEN.lock().unwrap() {
                tx.send((self.0, name)).unwrap();
            }
        }
    }

    #[test]
    fn jobs_run_on_the_pools_named_threads() {
        let (tx, rx) = mpsc::channel();
        *SEEN.lock().unwrap() = Some(tx);
        let pool = Offload::new("brisk-test", 2);
        for n in 0..5 {
            pool.submit(Record(n)).unwrap();
        }
        let mut got: Vec<_> = (0..5).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert!(got
            .iter()
            .all(|(_, name)| name == "brisk-test-0" || name == "brisk-test-1"));
        assert_eq!(Offload::<Record>::new("x", 0).threads, 1);
    }
}
