//! Giving memory back to the system after a load.
//!
//! glibc's allocator keeps what the program frees for reuse: in the heap
//! of each thread's arena, with only the part at the top of a heap ever
//! returned on its own. After a burst of connections, or once a reload's
//! previous workers have exited, that is megabytes the server no longer
//! uses. `malloc_trim(0)` hands back every free page of every arena
//! (`madvise(MADV_DONTNEED)` on the free chunks inside a heap, a shorter
//! heap at its top). musl's allocator unmaps freed memory by itself, so
//! there it is nothing to do.
//!
//! `malloc_trim` leaves alone what a thread's own cache (glibc's tcache)
//! holds: up to 7 freed chunks of each of its 64 sizes (up to 1,032
//! bytes), which the allocator counts as in use. After a TLS and HTTP/2
//! load those are chunks strewn over a heap that grew to 15–20 MiB, each
//! keeping its page resident: after `bench/soak 60` the heap kept 3.5 MiB
//! resident at rest (1.3 MiB after the warm-up), 1.0 MiB once each
//! thread's cache is emptied first, as [`give_back`] now does (see
//! [`empty_thread_cache`]).

/// Returns the allocator's free pages to the system, those the calling
/// thread's cache held too; whether any were. It walks every arena under
/// its lock and starts a thread: call it when idle, never on the request
/// path.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn give_back() -> bool {
    empty_thread_cache();
    // SAFETY: malloc_trim only reorganises the allocator's own free
    // lists and pages under its locks; it touches no memory of ours.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// glibc's tcache: bins of chunk sizes 32, 48, … 1,040 bytes (requests
/// of up to 24, 40, … 1,032), 7 chunks each unless the `glibc.malloc`
/// tunables say otherwise.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TCACHE_BINS: usize = 64;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TCACHE_COUNT: usize = 7;

/// Moves what the calling thread's tcache holds back to the arena, where
/// `malloc_trim` can free its pages. glibc has no call for it, but
/// empties a thread's tcache into the arena when the thread exits: this
/// takes every cached chunk out (a malloc of each size takes one from the
/// cache while it has any), and a short-lived thread frees them (into its
/// own cache, which its exit empties into the arena). Chunks the cache
/// did not have come from the arena and go back to it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn empty_thread_cache() {
    let mut taken = Taken(Vec::with_capacity(TCACHE_BINS * TCACHE_COUNT));
    for bin in 0..TCACHE_BINS {
        for _ in 0..TCACHE_COUNT {
            // SAFETY: a plain allocation, freed by `Taken`'s drop.
            let p = unsafe { libc::malloc(24 + 16 * bin) };
            if !p.is_null() {
                taken.0.push(p as usize);
            }
        }
    }
    // If the thread cannot start (out of memory, a limit), the closure
    // is dropped here and the chunks go back to this thread's cache.
    if let Ok(t) = std::thread::Builder::new()
        .name("brisk-free".into())
        .stack_size(64 * 1024)
        .spawn(move || drop(taken))
    {
        let _ = t.join();
    }
}

/// Chunks from `malloc`, freed on drop.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
struct Taken(Vec<usize>);

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl Drop for Taken {
    fn drop(&mut self) {
        for &p in &self.0 {
            // SAFETY: each came from `malloc` and is freed once, here.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
    }
}

/// Returns the allocator's free pages to the system (nothing to do with
/// this C library's allocator).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back() -> bool {
    false
}

/// Makes every thread allocate from one arena (glibc's `M_ARENA_MAX`).
/// glibc gives each thread that allocates an arena of its own, and an
/// exited thread's arena stays, fragmented, for the next thread: after
/// twenty reloads under load (two workers, `wrk -c4000`) the resting RSS
/// was 8.6 MiB against 3.2 MiB at start, and 3.7 MiB with one arena (4.1
/// with two). The request path allocates nothing once warm, and small
/// allocations come from each thread's cache without the arena's lock, so
/// one arena costs no measurable speed. Call it before any thread exists.
/// Only the brisk program does: an embedding program keeps its own
/// allocator settings.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn one_arena() {
    // SAFETY: mallopt only changes a setting of the allocator, under its lock.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// One arena for every thread (musl's allocator has no per-thread arenas).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn one_arena() {}

/// Drops the value in `b`, then writes zeros over its allocation before
/// the allocator gets it back: for secrets kept in a type that does not
/// clear itself (*ring*'s expanded AEAD keys: AES round keys, GHASH
/// tables), so that they do not outlive their use in freed memory.
pub fn drop_zeroed<T>(b: Box<T>) {
    let size = std::mem::size_of::<T>();
    let raw = Box::into_raw(b);
    // SAFETY: `raw` came from a live Box: the value is dropped once, in
    // place; its memory then holds no value, and is written as bytes
    // (volatile, so that the stores are not elided as dead) and given
    // back through a Box of `MaybeUninit<T>`, same layout.
    unsafe {
        std::ptr::drop_in_place(raw);
        let bytes = raw.cast::<u8>();
        for i in 0..size {
            std::ptr::write_volatile(bytes.add(i), 0);
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        drop(Box::from_raw(raw.cast::<std::mem::MaybeUninit<T>>()));
    }
}

#[cfg(test)]
mod zeroed_tests {
    use super::*;

    /// The value's own drop runs (exactly once).
    #[test]
    fn drop_zeroed_runs_the_drop() {
        let dropped = std::rc::Rc::new(());
        drop_zeroed(Box::new([std::rc::Rc::clone(&dropped)]));
        assert_eq!(std::rc::Rc::strong_count(&dropped), 1);
        drop_zeroed(Box::new([7u8; 600]));
    }
}
