//! Lua values read through Lua's C API where mlua's safe API costs too
//! much per request: `brisk.json.encode`'s walk over a value, and the
//! header table and body a servlet's `res:write` gives. One protected
//! call each, tables read with `lua_rawgeti`/`lua_next` on the Lua stack,
//! strings read in place. Going through mlua's `Value` makes a registry
//! reference for every table, string and key met (which cost 80 % of a
//! servlet answering 100 JSON items, bench scenario 10), and borrowing a
//! string's bytes through mlua allocates a shared reference count for it
//! (three allocations per `res:write(status, headers, body)`).
//!
//! Nothing called here raises a Lua error on the values walked: types are
//! checked before a value is read (`lua_tolstring` only on strings, so it
//! converts nothing), `lua_next` is given back the key it returned, and
//! the stack is grown with `lua_checkstack`, which reports failure rather
//! than raising. The walk runs inside `Lua::exec_raw`'s protected call all
//! the same, so that even a memory error could not unwind past it.

use mlua::ffi;
use mlua::{Lua, LuaString, Table, Value};

use crate::http::json::{push_f64, push_string, MAX_DEPTH};
use crate::http::push_u64;

/// Why a value cannot be written as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// Tables nested deeper than [`MAX_DEPTH`] (or a cycle).
    Depth,
    /// NaN or an infinity.
    NotFinite,
    /// A string that is not UTF-8.
    NotUtf8,
    /// An object key that is neither a string nor an integer.
    Key,
    /// A function, userdata or thread.
    Value,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EncodeError::Depth => "nested too deeply (or a cycle)",
            EncodeError::NotFinite => "not a finite number",
            EncodeError::NotUtf8 => "a string that is not UTF-8",
            EncodeError::Key => "a key that is not a string",
            EncodeError::Value => "a value JSON cannot hold",
        })
    }
}

/// Appends `value` as JSON to `out`: a table with keys 1..n (or empty) is
/// an array, any other an object; `null` (the `brisk.json.null` table)
/// and `nil` are `null`. The outer error is Lua's (a failed call), the
/// inner what the value cannot be.
pub fn encode(
    lua: &Lua,
    value: Value,
    null: &Table,
    out: &mut Vec<u8>,
) -> mlua::Result<Result<(), EncodeError>> {
    let mut result = Ok(());
    // SAFETY: exec_raw pushes `value` and `null` as the callback's
    // arguments 1 and 2 and calls it under lua_pcall; `walk` keeps the
    // stack balanced and reads only values whose type it checked.
    unsafe {
        lua.exec_raw::<()>((value, null), |state| {
            result = walk(state, 1, ffi::lua_type(state, 1), 2, out, 0);
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok(result)
}

/// Writes the value at stack index `idx` (absolute), of Lua type `ty`
/// (which the caller has, from `lua_rawgeti` or `lua_type`: one call
/// less a value); `null` is the index of the null sentinel.
///
/// # Safety
/// `state` is a valid Lua state inside a protected call, `idx` and `null`
/// valid absolute indices, `ty` the type of the value at `idx`.
unsafe fn walk(
    state: *mut ffi::lua_State,
    idx: i32,
    ty: i32,
    null: i32,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    // SAFETY: (for the calls below) `idx` is a valid index and `ty` its
    // type (the caller's contract): a value is read as what it is.
    unsafe {
        match ty {
            ffi::LUA_TNIL => out.extend_from_slice(b"null"),
            ffi::LUA_TBOOLEAN => match ffi::lua_toboolean(state, idx) {
                0 => out.extend_from_slice(b"false"),
                _ => out.extend_from_slice(b"true"),
            },
            ffi::LUA_TNUMBER if ffi::lua_isinteger(state, idx) != 0 => {
                push_i64(out, ffi::lua_tointegerx(state, idx, std::ptr::null_mut()));
            }
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumberx(state, idx, std::ptr::null_mut());
                if !n.is_finite() {
                    return Err(EncodeError::NotFinite);
                }
                push_f64(out, n);
            }
            ffi::LUA_TSTRING => push_string(lua_str(state, idx)?, out),
            ffi::LUA_TTABLE if ffi::lua_rawequal(state, idx, null) != 0 => {
                out.extend_from_slice(b"null")
            }
            ffi::LUA_TTABLE => return walk_table(state, idx, null, out, depth),
            _ => return Err(EncodeError::Value),
        }
    }
    Ok(())
}

/// Writes the table at `idx` as an array or an object.
///
/// # Safety
/// As [`walk`], and the value at `idx` is a table.
unsafe fn walk_table(
    state: *mut ffi::lua_State,
    idx: i32,
    null: i32,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    // SAFETY: every push below is matched by a pop before returning (or
    // the caller's lua_settop(0) on error); the stack has room for the
    // two slots a level uses (lua_checkstack).
    unsafe {
        if depth >= MAX_DEPTH || ffi::lua_checkstack(state, 2) == 0 {
            return Err(EncodeError::Depth);
        }
        let top = ffi::lua_gettop(state);
        let n = ffi::lua_rawlen(state, idx);
        ffi::lua_pushnil(state);
        let empty = n == 0 && ffi::lua_next(state, idx) == 0;
        if n > 0 || empty {
            // (lua_next pushed nothing when the table is empty.)
            ffi::lua_settop(state, top);
            out.push(b'[');
            for i in 1..=n {
                if i > 1 {
                    out.push(b',');
                }
                let ty = ffi::lua_rawgeti(state, idx, i as ffi::lua_Integer);
                let r = walk(state, top + 1, ty, null, out, depth + 1);
                ffi::lua_settop(state, top);
                r?;
            }
            out.push(b']');
            return Ok(());
        }
        // lua_next has pushed the first key (top + 1) and value (top + 2).
        out.push(b'{');
        let mut first = true;
        loop {
            if !first {
                out.push(b',');
            }
            first = false;
            match ffi::lua_type(state, top + 1) {
                ffi::LUA_TSTRING => push_string(lua_str(state, top + 1)?, out),
                ffi::LUA_TNUMBER if ffi::lua_isinteger(state, top + 1) != 0 => {
                    out.push(b'"');
                    push_i64(
                        out,
                        ffi::lua_tointegerx(state, top + 1, std::ptr::null_mut()),
                    );
                    out.push(b'"');
                }
                _ => return Err(EncodeError::Key),
            }
            out.push(b':');
            let ty = ffi::lua_type(state, top + 2);
            walk(state, top + 2, ty, null, out, depth + 1)?;
            // Pop the value, keep the key for lua_next.
            ffi::lua_settop(state, top + 1);
            if ffi::lua_next(state, idx) == 0 {
                break;
            }
        }
        ffi::lua_settop(state, top);
        out.push(b'}');
        Ok(())
    }
}

/// The string at `idx` (its type checked: a string) as UTF-8.
///
/// # Safety
/// The value at `idx` is a string; the slice lives as long as it stays on
/// the stack (the caller uses it at once).
unsafe fn lua_str<'a>(state: *mut ffi::lua_State, idx: i32) -> Result<&'a str, EncodeError> {
    let mut len = 0usize;
    // SAFETY: a string value: lua_tolstring returns its bytes in place
    // (no conversion), valid while it is on the stack.
    let bytes = unsafe {
        let p = ffi::lua_tolstring(state, idx, &mut len);
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    };
    std::str::from_utf8(bytes).map_err(|_| EncodeError::NotUtf8)
}

fn push_i64(out: &mut Vec<u8>, i: i64) {
    if i < 0 {
        out.push(b'-');
    }
    push_u64(out, i.unsigned_abs());
}

/// Why `res:write`'s arguments cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError<E> {
    /// A header name or value that is neither a string nor a number.
    NotText,
    /// What the callbacks said.
    Refused(E),
}

/// Calls `header(sink, name, value)` for each pair of `headers` (strings,
/// or numbers as Lua writes them) and then `body(sink, bytes)` for `body`,
/// with the bytes read in place. The first error stops the walk.
pub fn read_answer<S, E>(
    lua: &Lua,
    headers: Option<&Table>,
    body: Option<&LuaString>,
    sink: &mut S,
    mut header: impl FnMut(&mut S, &[u8], &[u8]) -> Result<(), E>,
    body_fn: impl FnOnce(&mut S, &[u8]) -> Result<(), E>,
) -> mlua::Result<Result<(), WriteError<E>>> {
    let mut result = Ok(());
    // SAFETY: exec_raw pushes `headers` (or nil) and `body` (or nil) as
    // the callback's arguments 1 and 2 under lua_pcall; only strings are
    // read (numbers are converted on a copy, never a key lua_next holds),
    // and the stack is balanced on every path (lua_settop).
    unsafe {
        lua.exec_raw::<()>((headers, body), |state| {
            result = (|| {
                if ffi::lua_type(state, 1) == ffi::LUA_TTABLE {
                    let top = ffi::lua_gettop(state);
                    ffi::lua_pushnil(state);
                    while ffi::lua_next(state, 1) != 0 {
                        // Key at top + 1, value at top + 2; copies of
                        // both at top + 3 and top + 4 may be converted.
                        ffi::lua_pushvalue(state, top + 1);
                        ffi::lua_pushvalue(state, top + 2);
                        let name = text_at(state, top + 3).ok_or(WriteError::NotText)?;
                        let value = text_at(state, top + 4).ok_or(WriteError::NotText)?;
                        header(sink, name, value).map_err(WriteError::Refused)?;
                        ffi::lua_settop(state, top + 1);
                    }
                    ffi::lua_settop(state, top);
                }
                if ffi::lua_type(state, 2) == ffi::LUA_TSTRING {
                    let bytes = text_at(state, 2).ok_or(WriteError::NotText)?;
                    body_fn(sink, bytes).map_err(WriteError::Refused)?;
                }
                Ok(())
            })();
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok(result)
}

/// The bytes of the string or number at `idx` (a number is converted to
/// a string in its stack slot, as `tostring` would write it).
///
/// # Safety
/// `idx` is a valid index whose slot may be converted (not a key that
/// `lua_next` is iterating with); the slice lives while it stays there.
unsafe fn text_at<'a>(state: *mut ffi::lua_State, idx: i32) -> Option<&'a [u8]> {
    // SAFETY: as the function's contract says; lua_tolstring converts a
    // number in place (it allocates the string, which in a protected
    // call can at worst fail the call).
    unsafe {
        match ffi::lua_type(state, idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut len = 0usize;
                let p = ffi::lua_tolstring(state, idx, &mut len);
                Some(std::slice::from_raw_parts(p.cast::<u8>(), len))
            }
            _ => None,
        }
    }
}
