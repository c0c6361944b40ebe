//! Servlets' `string.find` and `string.match` (brisk's matcher,
//! `handlers::servlets::pattern`) as C functions on Lua's stack:
//! through mlua's callbacks (the arguments converted, a protected call)
//! a call cost about 700 ns more than LuaJIT's own (`tests::speed`).
//! Errors are raised with `lua_error` with nothing Rust owns alive in
//! the frames it leaves (the matcher holds no allocation; messages are
//! static), as `sys::lua_res` does.

use std::ffi::c_int;

use mlua::ffi;

use mlua::{Lua, Table};

use crate::handlers::servlets::pattern::{self, anchored, Capture, Error, Matcher};
use crate::sys::lua_cpu::{check_spent as spent, CPU_LIMIT};

/// Puts [`find`] and [`find_match`] in `string` as `find` and `match`.
pub fn install(lua: &Lua, string: &Table) -> mlua::Result<()> {
    // SAFETY: C functions that keep to Lua's C API contract (below).
    unsafe {
        string.raw_set("find", lua.create_c_function(find)?)?;
        string.raw_set("match", lua.create_c_function(find_match)?)?;
    }
    Ok(())
}

/// Argument `i`, a string (a number is made one, as Lua's `luaL_checklstring`
/// does; anything else raises Lua's argument error).
///
/// # Safety
/// In a C function called by Lua; the bytes live while the argument
/// stays on the stack.
unsafe fn arg<'a>(l: *mut ffi::lua_State, i: c_int) -> &'a [u8] {
    let mut len = 0;
    // SAFETY: the caller's contract.
    unsafe {
        let p = ffi::luaL_checklstring(l, i, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// Raises `msg` as a Lua error.
///
/// # Safety
/// As [`arg`]; nothing Rust owns is alive in the caller's frames.
unsafe fn raise(l: *mut ffi::lua_State, msg: &'static str) -> ! {
    // SAFETY: the caller's contract.
    unsafe {
        ffi::lua_pushlstring(l, msg.as_ptr().cast(), msg.len());
        ffi::lua_error(l)
    }
}

/// `string.find(s, pattern [, init [, plain]])`.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn find(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua.
    unsafe { find_aux(l, true) }
}

/// `string.match(s, pattern [, init])`.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn find_match(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua.
    unsafe { find_aux(l, false) }
}

/// `string.find` (`find`) and `string.match`, as Lua 5.1's
/// `str_find_aux`.
///
/// # Safety
/// Called by Lua as a C function.
unsafe fn find_aux(l: *mut ffi::lua_State, find: bool) -> c_int {
    // SAFETY: (for every call below) a C function's stack, its
    // arguments there until it returns; Lua errors are raised only
    // where no Rust value needs dropping.
    unsafe {
        let (src, pat) = (arg(l, 1), arg(l, 2));
        let init = ffi::luaL_optinteger(l, 3, 1) as i64;
        let init = pattern::start_index(init, src.len());
        if find && (ffi::lua_toboolean(l, 4) != 0 || !pattern::has_specials(pat)) {
            return match pattern::find_plain(src, pat, init) {
                Some(i) => {
                    ffi::lua_pushinteger(l, i as ffi::lua_Integer + 1);
                    ffi::lua_pushinteger(l, (i + pat.len()) as ffi::lua_Integer);
                    2
                }
                None => {
                    ffi::lua_pushnil(l);
                    1
                }
            };
        }
        let (anchor, p0) = anchored(pat);
        let mut m = Matcher::new(src, pat, spent);
        let mut at = init;
        let (s, e) = loop {
            match m.at(at, p0) {
                Ok(Some(e)) => break (at, e),
                Ok(None) => {}
                Err(Error::Stopped) => raise(l, CPU_LIMIT),
                Err(Error::Pattern(why)) => raise(l, why),
            }
            at += 1;
            if anchor || at > src.len() {
                ffi::lua_pushnil(l);
                return 1;
            }
        };
        let mut n = 0;
        if find {
            ffi::lua_pushinteger(l, s as ffi::lua_Integer + 1);
            ffi::lua_pushinteger(l, e as ffi::lua_Integer);
            n = 2;
            if m.level() == 0 {
                return 2;
            }
        }
        let captures = m.level().max(1);
        if ffi::lua_checkstack(l, captures as c_int) == 0 {
            raise(l, "too many captures");
        }
        for i in 0..captures {
            match m.capture(i, s, e) {
                Ok(Capture::Span(a, b)) => {
                    ffi::lua_pushlstring(l, src[a..].as_ptr().cast(), b - a);
                }
                Ok(Capture::Position(p)) => ffi::lua_pushinteger(l, p as ffi::lua_Integer),
                Err(Error::Pattern(why)) => raise(l, why),
                Err(Error::Stopped) => raise(l, CPU_LIMIT),
            }
        }
        n + captures as c_int
    }
}
