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
