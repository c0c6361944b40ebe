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

/// Returns the allocator's free pages to the system; whether any were.
/// It walks every arena under its lock: call it when idle, never on the
/// request path.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn give_back() -> bool {
    // SAFETY: malloc_trim only reorganises the allocator's own free
    // lists and pages under its locks; it touches no memory of ours.
    unsafe { libc::malloc_trim(0) == 1 }
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
