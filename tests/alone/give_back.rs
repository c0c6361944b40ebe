//! What a worker frees is given back to the system when it rests, also
//! what glibc's per-thread cache (tcache) keeps: up to 7 freed chunks of
//! each size up to 1,032 bytes, counted by the allocator as in use and
//! left alone by `malloc_trim`. After a TLS and HTTP/2 load those were
//! chunks strewn over a heap grown to tens of MiB, each keeping a page
//! resident (issue #25: RSS at rest 1.4x the warm baseline after a soak).
//! The allocator's own count (`mallinfo2`) says what it holds in use.
/// Bytes in chunks the main arena counts as in use (the thread caches'
/// chunks among them).
fn in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    unsafe { libc::mallinfo2() }.uordblks
}

/// The chunk sizes glibc's tcache takes: 32, 48, … 1,040 bytes.
const SIZES: std::ops::Range<usize> = 0..64;

#[test]
fn give_back_empties_the_thread_cache_into_the_arena() {
    let _alone = crate::counting::alone();
    std::thread::spawn(|| {
        // 7 chunks of every cached size, freed: this thread's cache is
        // full, 7 x (32 + 48 + ... + 1,040) = 240,128 bytes of chunks.
        let chunks: Vec<Vec<u8>> = SIZES
            .flat_map(|bin| (0..7).map(move |_| vec![1u8; 24 + 16 * bin]))
            .collect();
        drop(chunks);
        let before = in_use();
        brisk::sys::memory::give_back();
        let after = in_use();
        eprintln!("in use: {before} bytes before give_back, {after} after");
        assert!(
            after + 200_000 <= before,
            "the thread's cache still holds its chunks: {before} bytes in use before give_back, {after} after"
        );
    })
    .join()
    .expect("the test's thread");
}
