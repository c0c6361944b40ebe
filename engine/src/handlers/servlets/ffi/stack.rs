//! How much of the worker thread's stack is left, for the calls that nest
//! on it without a bound of LuaJIT's: a `string.gsub` callback (Rust
//! frames between Lua calls) and a coroutine resumed inside another
//! (LuaJIT's resume is a C call). Each depth of those costs stack; on the
//! worker's 2 MiB a servlet nesting them 1,000 (gsub) or 50,000
//! (coroutines) deep overflowed it, and the whole process died.
//! Counting depths would need a bound for each, and mixed they add up:
//! what is left of the stack is the one measure that holds for both.

use std::cell::Cell;
use std::ffi::c_int;

use mlua::{ffi, Function, Lua};

/// What is kept free below the deepest nesting: room for the work one
/// level does beyond its check (a gsub's match, brisk's JSON walk, a
/// traceback, mlua's error) in a debug build.
pub const MARGIN: usize = 512 * 1024;

thread_local! {
    /// The lowest address a nesting may reach (this thread's stack's
    /// end plus [`MARGIN`]); 0 until first asked.
    static FLOOR: Cell<usize> = const { Cell::new(0) };
}

/// The error a nesting past the floor raises (Lua's words for it).
pub const TOO_DEEP: &str = "C stack overflow: calls nested too deep";

/// Whether this thread's stack has room for another level of nesting
/// (more than [`MARGIN`] left).
#[inline(never)]
pub fn has_room() -> bool {
    // (A local's address: where this thread's stack is now.)
    let marker = 0u8;
    let sp = std::hint::black_box(std::ptr::addr_of!(marker)) as usize;
    sp > floor()
}

/// This thread's floor (see [`FLOOR`]), found once.
fn floor() -> usize {
    let f = FLOOR.get();
    if f != 0 {
        return f;
    }
    let f = stack_end().map_or(1, |end| end.saturating_add(MARGIN));
    FLOOR.set(f);
    f
}

/// The lowest address of this thread's stack.
fn stack_end() -> Option<usize> {
    // SAFETY: a zeroed attribute object filled by pthread_getattr_np for
    // this thread, read by pthread_attr_getstack, then destroyed.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (r == 0 && !addr.is_null()).then_some(addr as usize)
    }
}

/// [`has_room`] for Lua (the prelude's `coroutine.resume`): a C function
/// that returns a boolean (an mlua function's call costs ten times more,
/// and it is asked at every resume).
pub fn has_room_function(lua: &Lua) -> mlua::Result<Function> {
    // SAFETY: the function reads no argument and pushes one value.
    unsafe { lua.create_c_function(has_room_lua) }
}

unsafe extern "C-unwind" fn has_room_lua(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: a C function's stack has room for its result.
    unsafe { ffi::lua_pushboolean(l, c_int::from(has_room())) };
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deepest(n: usize) -> usize {
        if !has_room() {
            return n;
        }
        let pad = std::hint::black_box([0u8; 1024]);
        deepest(n + 1) + usize::from(pad[0])
    }

    /// Recursion stops short of the stack's end, with the margin left,
    /// on a thread of 2 MiB (a worker's).
    #[test]
    fn recursion_stops_at_the_margin() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let n = deepest(0);
                assert!(n > 500 && n < 1600, "{n}");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
