//! Servlets' `string.find`, `string.match` and `string.gmatch` (brisk's matcher,
//! `handlers::servlets::pattern`) as C functions on Lua's stack:
//! through mlua's callbacks (the arguments converted, a protected call)
//! a call cost about 700 ns more than LuaJIT's own (`tests::speed`).
//! Errors are raised with `lua_error` with nothing Rust owns alive in
//! the frames it leaves (the matcher holds no allocation; messages are
//! static), as `ffi::res` does.

use std::ffi::c_int;

use mlua::ffi;

use mlua::{Lua, Table};

use super::cpu::{check_spent as spent, CPU_LIMIT};
use crate::handlers::servlets::pattern::{self, anchored, Capture, Error, Matcher};

/// Puts [`find`], [`find_match`] and [`gmatch`] in `string` as `find`,
/// `match` and `gmatch`.
pub fn install(lua: &Lua, string: &Table) -> mlua::Result<()> {
    // SAFETY: C functions that keep to Lua's C API contract (below).
    unsafe {
        string.raw_set("find", lua.create_c_function(find)?)?;
        string.raw_set("match", lua.create_c_function(find_match)?)?;
        string.raw_set("gmatch", lua.create_c_function(gmatch)?)?;
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
        n + push_captures(l, &m, src, s, e)
    }
}

/// Pushes the captures of `m`'s last match `s..e` of `src` (the whole
/// match when the pattern has none); returns how many.
///
/// # Safety
/// As [`find_aux`]'s.
unsafe fn push_captures<F: FnMut() -> bool>(
    l: *mut ffi::lua_State,
    m: &Matcher<'_, F>,
    src: &[u8],
    s: usize,
    e: usize,
) -> c_int {
    let captures = m.level().max(1);
    // SAFETY: the caller's contract.
    unsafe {
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
    }
    captures as c_int
}

/// `string.gmatch(s, pattern)`: an iterator (a C closure over `s`,
/// `pattern` and where the next match is looked for) over the matches;
/// as in 5.1, `^` is a plain character here.
///
/// # Safety
/// Called by Lua as a C function.
pub unsafe extern "C-unwind" fn gmatch(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: a C function's stack (arguments checked, made strings).
    unsafe {
        arg(l, 1);
        arg(l, 2);
        ffi::lua_settop(l, 2);
        ffi::lua_pushinteger(l, 0);
        ffi::lua_pushcclosure(l, gmatch_next, 3);
    }
    1
}

/// The iterator [`gmatch`] makes.
///
/// # Safety
/// Called by Lua as the closure `gmatch` made.
unsafe extern "C-unwind" fn gmatch_next(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the closure's upvalues are the two strings and an integer
    // (`gmatch`); the strings stay alive with the closure.
    unsafe {
        let (mut slen, mut plen) = (0, 0);
        let sp = ffi::lua_tolstring(l, ffi::lua_upvalueindex(1), &mut slen);
        let pp = ffi::lua_tolstring(l, ffi::lua_upvalueindex(2), &mut plen);
        let src = std::slice::from_raw_parts(sp.cast::<u8>(), slen);
        let pat = std::slice::from_raw_parts(pp.cast::<u8>(), plen);
        let mut at = ffi::lua_tointeger(l, ffi::lua_upvalueindex(3)).max(0) as usize;
        let mut m = Matcher::new(src, pat, spent);
        while at <= src.len() {
            match m.at(at, 0) {
                Ok(Some(e)) => {
                    // An empty match: on one further next time.
                    let next = if e == at { e + 1 } else { e };
                    ffi::lua_pushinteger(l, next as ffi::lua_Integer);
                    ffi::lua_replace(l, ffi::lua_upvalueindex(3));
                    return push_captures(l, &m, src, at, e);
                }
                Ok(None) => at += 1,
                Err(Error::Stopped) => raise(l, CPU_LIMIT),
                Err(Error::Pattern(why)) => raise(l, why),
            }
        }
        0
    }
}
