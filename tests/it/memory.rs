//! Memory comes back after a load: once a worker has been quiet for a
//! few seconds it frees what the load made it hold (connection slots,
//! spare buffers, cached file content, log buffers) and returns the
//! allocator's free pages to the system, so the resting RSS goes back
//! near where it was before the load.

use crate::common;

use common::*;

/// The debug line a worker writes when it rests.
const RESTED: &str = "free memory returned to the system";

const FILES: usize = 400;
const CONNS: usize = 400;

fn rests(s: &Server) -> usize {
    s.stderr().matches(RESTED).count()
}

#[test]
fn resting_rss_after_a_load_is_near_the_baseline() {
    let s = start();
    wait_until("the worker to rest after start-up", || rests(&s) >= 1);
    let baseline = s.rss_kib();
    let (loaded, before) = load(&s);
    // (A rest counted during the load does not count: a test client
    // starved for REST_AFTER on a busy machine lets the worker rest with
    // the connections still open. Their closing wakes it again.)
    wait_until("the worker to rest after the load", || rests(&s) > before);
    // (The rest counted may still be one from before the connections
    // closed, its line written late by the log's thread on a loaded
    // machine: the rest after they closed gives the memory back. So the
    // RSS is watched until it is near, for as long as `wait_until` waits,
    // rather than read once.)
    let now = poll(WAIT_LIMIT, || {
        let now = s.rss_kib();
        (now <= near(baseline)).then_some(now)
    })
    .unwrap_or_else(|| s.rss_kib());
    assert_near(baseline, loaded, now, "at rest after a load");
}

/// A server with [`FILES`] files, an access log and debug logging; one
/// request served.
fn start() -> Server {
    let mut b = Builder::new();
    for i in 0..FILES {
        // Small enough to be cached in memory (each worker caches the
        // content of files up to 16 KiB).
        b.file(&format!("f{i}.txt"), &pattern(8 * 1024 + i));
    }
    b.access_log();
    b.config("[log]\nlevel = \"debug\"\n");
    let s = b.start();
    assert_eq!(s.get("/f0.txt").status, 200);
    s
}

/// Many connections at once, each with a few requests for files the
/// others asked for too; all closed at the end. Returns the RSS (KiB)
/// under the load, and how many rests the worker had logged before the
/// connections closed.
fn load(s: &Server) -> (u64, usize) {
    let mut conns: Vec<Client> = (0..CONNS).map(|_| s.connect()).collect();
    for round in 0..4 {
        for (i, c) in conns.iter_mut().enumerate() {
            let f = (i * 7 + round * 101) % FILES;
            c.send(format!("GET /f{f}.txt HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        }
        for c in conns.iter_mut() {
            assert_eq!(c.response().status, 200);
        }
    }
    let rss = s.rss_kib();
    let before = rests(s);
    drop(conns);
    (rss, before)
}

/// A quarter over `baseline`.
fn near(baseline: u64) -> u64 {
    baseline + baseline / 4
}

/// Asserts that the RSS `now` is within a quarter of `baseline` (what the
/// allocator cannot give back is fragments, and code first run under the
/// load stays mapped).
fn assert_near(baseline: u64, loaded: u64, now: u64, when: &str) {
    eprintln!("memory: RSS {baseline} KiB before, {loaded} KiB under load, {now} KiB {when}");
    assert!(
        now <= near(baseline),
        "RSS {now} KiB {when}, {baseline} KiB before (under load: {loaded} KiB)"
    );
}
