//! The one allocator of the tests that count the heap: it defers to the
//! system's and counts, for each test's own question, calls and bytes.
//! The counts are the process's, so these tests run one at a time
//! ([`alone`]) in a binary of their own, apart from the integration tests
//! whose servers would allocate beside them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Allocations and reallocations, by every thread but those that said
/// [`not_counted`].
pub static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes live on the heap, by the same threads.
pub static LIVE: AtomicI64 = AtomicI64::new(0);
/// Allocations and reallocations with Lua's alignment (the interpreter's
/// blocks), and with any other (brisk's and mlua's Rust side).
#[cfg(feature = "servlets")]
pub static LUA: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "servlets")]
pub static RUST: AtomicU64 = AtomicU64::new(0);

/// While set, each counted allocation prints its backtrace to stderr
/// (`trace_one` sets it for one round of a test).
static TRACE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is printing a backtrace (whose own allocations are not
    /// traced).
    static TRACING: Cell<bool> = const { Cell::new(false) };
    /// This thread's allocations and reallocations, counted or not.
    static MINE: Cell<u64> = const { Cell::new(0) };
    /// This thread's heap is not the server's (a client's thread).
    static NOT_COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// This thread's allocations and reallocations so far.
pub fn mine() -> u64 {
    MINE.with(Cell::get)
}

/// From now on this thread's heap is not counted in [`ALLOCS`] and
/// [`LIVE`] (`false`: counted again).
#[cfg(any(feature = "tls", feature = "http2", feature = "upstreams"))]
pub fn not_counted(yes: bool) {
    NOT_COUNTED.with(|c| c.set(yes));
}

/// The allocations (counted in [`ALLOCS`]) of one call of `round`, on
/// average over `rounds` calls made after as many to warm up: the least
/// of [`WINDOWS`] such counts. What a request allocates is in every
/// window; what the server's threads' timing causes now and then is not:
/// a worker hands its log lines to the writer thread in the buffers the
/// writer gave back, and makes a new one when the writer, slowed by a
/// busy machine, has given none back yet (`Logger::flush`), which in CI
/// fell in one window of 500 requests (0.002 a request) of one test in
/// seven.
#[cfg(feature = "upstreams")]
pub fn allocs_per(rounds: u64, mut round: impl FnMut()) -> f64 {
    for _ in 0..rounds {
        round();
    }
    let mut least = f64::MAX;
    for _ in 0..WINDOWS {
        let before = ALLOCS.load(Ordering::Relaxed);
        for _ in 0..rounds {
            round();
        }
        let per = (ALLOCS.load(Ordering::Relaxed) - before) as f64 / rounds as f64;
        least = least.min(per);
        if least == 0.0 {
            break;
        }
    }
    trace_one(round);
    least
}

/// How many windows [`allocs_per`] counts at most.
#[cfg(feature = "upstreams")]
const WINDOWS: usize = 3;

/// With `BRISK_ALLOC_TRACE` set in the environment, one more call of
/// `round` prints the backtrace of each allocation it counts (to find
/// them: `BRISK_ALLOC_TRACE=1 cargo test --test alone -- NAME --nocapture`).
#[cfg(feature = "upstreams")]
fn trace_one(mut round: impl FnMut()) {
    if std::env::var_os("BRISK_ALLOC_TRACE").is_none() {
        return;
    }
    TRACING.with(|t| t.set(true));
    eprintln!("--- the allocations of one round ---");
    TRACING.with(|t| t.set(false));
    TRACE.store(true, Ordering::SeqCst);
    round();
    TRACE.store(false, Ordering::SeqCst);
}

/// One test at a time: hold the guard for the whole test.
pub fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn count(layout: Layout, bytes: i64) {
    // try_with: a thread's locals may be gone while it exits.
    let _ = MINE.try_with(|c| c.set(c.get() + 1));
    if !NOT_COUNTED.try_with(Cell::get).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(bytes, Ordering::Relaxed);
        if TRACE.load(Ordering::Relaxed) && !TRACING.try_with(Cell::get).unwrap_or(true) {
            TRACING.with(|t| t.set(true));
            let trace = std::backtrace::Backtrace::force_capture();
            eprintln!(
                "allocation of {} bytes (align {}):\n{trace}",
                layout.size(),
                layout.align()
            );
            TRACING.with(|t| t.set(false));
        }
    }
    #[cfg(feature = "servlets")]
    match layout.align() == mlua::ffi::SYS_MIN_ALIGN {
        true => LUA.fetch_add(1, Ordering::Relaxed),
        false => RUST.fetch_add(1, Ordering::Relaxed),
    };
    let _ = layout;
}

struct Counting;

// SAFETY: defers to the system allocator; only counts calls and bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout, layout.size() as i64);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !NOT_COUNTED.try_with(Cell::get).unwrap_or(false) {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(layout, new_size as i64 - layout.size() as i64);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
