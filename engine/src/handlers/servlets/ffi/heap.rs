//! The allocation function of a servlet state: the memory limit, and a
//! cache of freed small blocks in front of the global allocator.
//!
//! A servlet answering JSON of 100 items makes about 400 blocks per
//! request (tables, their parts, strings) that the collector frees a few
//! requests later; through mlua's allocator each one was a `malloc` and a
//! `free` (glibc's thread cache holds 7 blocks a size, the rest went
//! through its bins and their consolidation: 17 % of the worker's time,
//! bench scenario 10). Here a freed block of up to [`MAX_CACHED`] bytes
//! goes on a list of blocks of exactly its size (threaded through the
//! blocks themselves) and the next request for that size takes it back.
//!
//! Blocks keep the layout mlua's allocator gives them (the size Lua asks
//! for, Lua's 16-byte alignment), so blocks made before [`Heap::install`]
//! or freed after [`Heap::uninstall`] pass between the two allocators
//! freely. The memory limit counts what Lua holds, exactly as mlua's did
//! (the sizes Lua gives): cached blocks count as free; they are at most
//! [`CACHE_BYTES`] per state.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::ptr;

use mlua::{ffi, Lua};

/// Blocks up to this size are cached. LuaJIT's (GC64) tables are 64 bytes,
/// 8 more a slot when a constructor puts the array part inside (`{"a",
/// "b"}`: 88), a hash part 24 bytes a node (4 keys: 96), strings 24 plus
/// their length rounded up to 4, plus 4.
pub const MAX_CACHED: usize = 256;
/// The most bytes a state keeps in its cache. LuaJIT's collector frees a
/// cycle's garbage in one sweep (the JSON servlet's: its blocks of some
/// requests at once): with 256 KiB kept, 73 blocks a JSON request went to
/// malloc (tests/alone/servlet_alloc.rs), with 512 KiB 4 (the items array
/// growing past 256 bytes, 264 to 1,032), with 1 MiB 3.
pub const CACHE_BYTES: usize = 512 << 10;

/// Lua's alignment (what mlua's allocator uses).
const ALIGN: usize = ffi::SYS_MIN_ALIGN;

struct Inner {
    /// Bytes Lua holds.
    used: usize,
    /// The most it may hold.
    limit: usize,
    /// Bytes in `free`.
    cached: usize,
    /// `free[n]`: freed blocks of `n` bytes, each holding the next's
    /// address in its first word (so only sizes of a word or more).
    free: [*mut u8; MAX_CACHED + 1],
}

/// One state's allocator; install it with [`Heap::install`] and take it
/// out with [`Heap::uninstall`] before the state is closed.
pub struct Heap {
    /// Owned (from `Box::into_raw`); Lua's allocation function's data
    /// while installed.
    inner: *mut Inner,
    /// mlua's allocation function and its data while this one is
    /// installed, to be put back.
    prev: Option<(ffi::lua_Alloc, *mut c_void)>,
}

impl Heap {
    /// Makes `lua` allocate through a new heap that lets it hold at most
    /// `limit` bytes (counting what it holds now).
    pub fn install(lua: &Lua, limit: usize) -> mlua::Result<Heap> {
        let mut heap = Heap {
            inner: Box::into_raw(Box::new(Inner {
                used: 0,
                limit,
                cached: 0,
                free: [ptr::null_mut(); MAX_CACHED + 1],
            })),
            prev: None,
        };
        let ud = heap.inner;
        let mut prev = None;
        // SAFETY: exec_raw runs the callback on the state's stack, and
        // nothing allocates between reading Lua's count of its bytes
        // (exact: every block went through luaM with its size) and the
        // new function taking over. `ud` stays valid until `uninstall`
        // has put the previous function back, or for ever (Drop).
        let done = unsafe {
            lua.exec_raw::<()>((), |state| {
                let kb = ffi::lua_gc(state, ffi::LUA_GCCOUNT, 0);
                let b = ffi::lua_gc(state, ffi::LUA_GCCOUNTB, 0);
                (*ud).used = kb.max(0) as usize * 1024 + b.max(0) as usize;
                let mut old_ud = ptr::null_mut();
                let old = ffi::lua_getallocf(state, &mut old_ud);
                ffi::lua_setallocf(state, allocate, ud.cast());
                prev = Some((old, old_ud));
            })
        };
        // (Set even if exec_raw failed after the swap.)
        heap.prev = prev;
        done?;
        lua.set_app_data(Installed(heap.inner));
        Ok(heap)
    }

    /// Puts mlua's allocation function back (it takes over every block:
    /// they have its layout). Must run before the state is closed.
    pub fn uninstall(&mut self, lua: &Lua) {
        let Some((old, old_ud)) = self.prev else {
            return;
        };
        let mut done = false;
        // SAFETY: as in `install`.
        unsafe {
            let _ = lua.exec_raw::<()>((), |state| {
                ffi::lua_setallocf(state, old, old_ud);
                done = true;
            });
        }
        if done {
            self.prev = None;
            lua.remove_app_data::<Installed>();
        }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        if self.prev.is_some() {
            // Still installed (not uninstalled, or that failed): the
            // state may allocate through it still, so it stays.
            return;
        }
        // SAFETY: not installed: `inner` is ours alone, from
        // Box::into_raw; each cached block has its list's size (at least
        // a word) and layout, and holds the next one's address.
        unsafe {
            let mut inner = Box::from_raw(self.inner);
            for (size, head) in inner.free.iter_mut().enumerate() {
                while !head.is_null() {
                    let block = *head;
                    *head = block.cast::<*mut u8>().read();
                    alloc::dealloc(block, Layout::from_size_align_unchecked(size, ALIGN));
                }
            }
        }
    }
}

/// Lua's allocation function (`lua_Alloc`): `ptr` null allocates `nsize`
/// bytes (`osize` then names the kind of object), `nsize` 0 frees, else
/// reallocates from `osize` to `nsize` bytes. Returns null when the limit
/// would be passed (Lua then collects and tries again, or raises its
/// memory error).
///
/// The two calls of almost every request come first, without a call
/// further: a new small block taken from the cache, and a small block
/// freed into it (bench scenario 10 makes about 400 of each a request).
unsafe extern "C" fn allocate(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    // SAFETY: `ud` is the `Inner` installed with this function; Lua calls
    // its allocator from one thread at a time (the state's).
    let h = unsafe { &mut *ud.cast::<Inner>() };
    let ptr = ptr.cast::<u8>();
    if ptr.is_null() {
        if (size_of::<usize>()..=MAX_CACHED).contains(&nsize)
            && !h.free[nsize].is_null()
            && nsize <= h.limit.saturating_sub(h.used)
        {
            let block = h.free[nsize];
            // SAFETY: a cached block's first word is the next's address.
            let next = unsafe { block.cast::<*mut u8>().read() };
            h.free[nsize] = next;
            prefetch(next);
            h.cached -= nsize;
            h.used += nsize;
            return block.cast();
        }
    } else if nsize == 0
        && (size_of::<usize>()..=MAX_CACHED).contains(&osize)
        && h.cached + osize <= CACHE_BYTES
    {
        // SAFETY: Lua gives back a block it had of `osize` bytes (at
        // least a word, aligned to 16), no longer used.
        unsafe { ptr.cast::<*mut u8>().write(h.free[osize]) };
        h.free[osize] = ptr;
        h.cached += osize;
        h.used -= osize;
        return ptr::null_mut();
    }
    // SAFETY: the contract of this function, passed on.
    unsafe { allocate_slow(h, ptr, osize, nsize) }
}

/// Asks the processor to bring the cache line at `p` in, without
/// waiting: the block the next allocation of its size takes. The
/// collector frees a cycle's garbage in one sweep, so a cached block was
/// last touched long before it is taken again, and reading its first
/// word (the next block's address) missed the cache: 15 % of a hello
/// servlet's user time (perf, bench scenario 9) was that one load. A
/// null `p` is no fault (a prefetch never is).
#[inline(always)]
fn prefetch(p: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and faults on no
    // address (SSE, part of x86_64's baseline).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`allocate`]'s other cases: new blocks from the global allocator,
/// reallocations, frees the cache has no room for, the memory limit.
///
/// # Safety
/// As `allocate`'s (a `lua_Alloc`).
#[inline(never)]
unsafe fn allocate_slow(h: &mut Inner, ptr: *mut u8, osize: usize, nsize: usize) -> *mut c_void {
    let old = if ptr.is_null() { 0 } else { osize };
    if nsize > old && nsize - old > h.limit.saturating_sub(h.used) {
        return ptr::null_mut();
    }
    if nsize > isize::MAX as usize - ALIGN {
        return ptr::null_mut();
    }
    // SAFETY: blocks passed in were made with Layout(osize, ALIGN) (here
    // or by mlua's allocator), and are handed out with Layout(nsize,
    // ALIGN); cached blocks are of exactly their list's size.
    unsafe {
        if nsize == 0 {
            if !ptr.is_null() {
                release(h, ptr, osize);
                h.used -= osize;
            }
            return ptr::null_mut();
        }
        let new = if ptr.is_null() {
            take(h, nsize)
        } else if osize <= MAX_CACHED || nsize <= MAX_CACHED {
            // Small on either side: a block of the new size, the bytes
            // copied, the old block cached.
            let new = take(h, nsize);
            if !new.is_null() {
                ptr::copy_nonoverlapping(ptr, new, osize.min(nsize));
                release(h, ptr, osize);
            }
            new
        } else {
            alloc::realloc(ptr, Layout::from_size_align_unchecked(osize, ALIGN), nsize)
        };
        if !new.is_null() {
            h.used = h.used - old + nsize;
        }
        new.cast()
    }
}

/// A block of `size` bytes: a cached one, or a new one.
///
/// # Safety
/// `size` is not 0 and at most `isize::MAX - ALIGN`.
unsafe fn take(h: &mut Inner, size: usize) -> *mut u8 {
    if size >= size_of::<usize>() && size <= MAX_CACHED {
        let block = h.free[size];
        if !block.is_null() {
            // SAFETY: a cached block's first word is the next's address.
            h.free[size] = unsafe { block.cast::<*mut u8>().read() };
            prefetch(h.free[size]);
            h.cached -= size;
            return block;
        }
    }
    // SAFETY: size is not 0 and the layout valid (the caller's contract).
    unsafe { alloc::alloc(Layout::from_size_align_unchecked(size, ALIGN)) }
}

/// Gives back the block `ptr` of `size` bytes: cached if there is room.
///
/// # Safety
/// `ptr` was allocated with Layout(size, ALIGN) and is no longer used.
unsafe fn release(h: &mut Inner, ptr: *mut u8, size: usize) {
    if size >= size_of::<usize>() && size <= MAX_CACHED && h.cached + size <= CACHE_BYTES {
        // SAFETY: the block has room for a word, aligned to 16.
        unsafe { ptr.cast::<*mut u8>().write(h.free[size]) };
        h.free[size] = ptr;
        h.cached += size;
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { alloc::dealloc(ptr, Layout::from_size_align_unchecked(size, ALIGN)) }
}

/// The heap installed in a state (its app data while installed).
struct Installed(*mut Inner);

/// The most bytes C code may build outside `lua`'s heap for a value it
/// then copies in (a string: `string.gsub`'s result, JSON text): half
/// of what the limit has left, so that the copy fits beside it, as the
/// value built inside Lua would have (LuaJIT's own string buffers grow in
/// its heap, and the string is a copy beside them). Unlimited for a state
/// without a [`Heap`].
pub fn outside_room(lua: &Lua) -> usize {
    match lua.app_data_ref::<Installed>() {
        // SAFETY: `Installed` is set while the heap is installed, and
        // its `Inner` lives until then; Lua is not allocating (this
        // thread is in a call from it).
        Some(h) => unsafe { (*h.0).limit.saturating_sub((*h.0).used) / 2 },
        None => usize::MAX,
    }
}

impl Heap {
    /// Bytes Lua holds, as the limit counts them, and the limit (read
    /// between runs: after a memory error's collection).
    pub fn used_of_limit(&self) -> (usize, usize) {
        // SAFETY: `inner` lives as long as `self`; Lua uses it only
        // while the state runs, which is not now (the state is not
        // shared across threads, and `&self` is not inside a call).
        unsafe { ((*self.inner).used, (*self.inner).limit) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lua's own count of its bytes (read first: the call itself makes a
    /// block under LuaJIT, mlua's callback, 144 bytes).
    fn lua_count(lua: &Lua) -> usize {
        // SAFETY: reads the collector's counters only.
        unsafe {
            lua.exec_raw::<usize>((), |state| {
                let kb = ffi::lua_gc(state, ffi::LUA_GCCOUNT, 0) as usize;
                let b = ffi::lua_gc(state, ffi::LUA_GCCOUNTB, 0) as usize;
                ffi::lua_pushinteger(state, (kb * 1024 + b) as ffi::lua_Integer);
            })
            .unwrap()
        }
    }

    #[test]
    fn counts_what_lua_holds_and_keeps_to_the_limit() {
        let lua = Lua::new();
        let limit = lua_count(&lua) + (2 << 20);
        let mut heap = Heap::install(&lua, limit).unwrap();
        // Small blocks made, freed (cached) and made again, and large
        // ones: the count stays Lua's to the byte.
        for _ in 0..3 {
            lua.load(
                "local t = {} for i = 1, 2000 do t[i] = { i, 'item ' .. i, x = i / 3 } end \
                 big = string.rep('x', 100000) .. #t",
            )
            .exec()
            .unwrap();
            lua.gc_collect().unwrap();
            let count = lua_count(&lua);
            assert_eq!(heap.used_of_limit().0, count);
        }
        // Past the limit: Lua's memory error, and the state still works.
        let err = lua
            .load("local t = {} for i = 1, 1e7 do t[i] = 'item ' .. i end")
            .exec()
            .unwrap_err();
        assert!(matches!(err, mlua::Error::MemoryError(_)), "{err}");
        assert!(heap.used_of_limit().0 <= limit);
        lua.gc_collect().unwrap();
        let count = lua_count(&lua);
        assert_eq!(heap.used_of_limit().0, count);
        let n: i64 = lua.load("return #big").eval().unwrap();
        assert_eq!(n, 100004);
        heap.uninstall(&lua);
        drop(heap);
        // mlua's allocator frees what the heap allocated.
        lua.load("big = nil collectgarbage()").exec().unwrap();
    }
}
