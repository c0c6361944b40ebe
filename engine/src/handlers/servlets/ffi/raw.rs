//! Lua values read through Lua's C API where mlua's safe API costs too
//! much per request: `brisk.json.encode`'s walk over a value (and
//! `ffi::res`, a servlet's `res` object). One protected
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
use mlua::{AnyUserData, Lua, Value};

use crate::http::json::{push_f64, push_utf8_within, MAX_DEPTH};
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
    /// The output would pass [`Encoder::max`] (or could not grow).
    Memory,
    /// The request's CPU budget was spent during the walk
    /// ([`super::cpu::check_spent`]).
    Stopped,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EncodeError::Depth => "nested too deeply (or a cycle)",
            EncodeError::NotFinite => "not a finite number",
            EncodeError::NotUtf8 => "a string that is not UTF-8",
            EncodeError::Key => "a key that is not a string",
            EncodeError::Value => "a value JSON cannot hold",
            EncodeError::Memory => "the text does not fit in the memory left (servlets.memory)",
            EncodeError::Stopped => super::cpu::CPU_LIMIT,
        })
    }
}

/// `brisk.json.encode`'s buffers, kept by a worker from one call to the
/// next (no allocation once warm): the output, and the object keys met
/// in the call, written once as JSON (`"name":`) and copied from here
/// when they come again (the 100 objects of an answer usually share
/// their keys; bench scenario 10).
pub struct Encoder {
    /// The JSON text of the last call.
    pub out: Vec<u8>,
    /// The longest text it may write: the text is built outside Lua's
    /// heap, which `servlets.memory` bounds (`lua_heap::outside_room`);
    /// one table holding an 8 MiB string 100 times made 800 MiB.
    pub max: usize,
    /// Written keys, one after the other.
    keys: Vec<u8>,
    /// A direct-mapped table by the address of a key's bytes: that
    /// address and the key's range in `keys` (`start..end`).
    slots: [(usize, u32, u32); KEY_SLOTS],
}

/// Slots of the key table (a power of two).
const KEY_SLOTS: usize = 32;
/// Longest key kept (longer ones are rare as keys; LuaJIT interns every
/// string, Lua 5.4 those up to 40 bytes).
const KEY_MAX: usize = 40;
/// The most bytes of written keys kept in one call.
const KEYS_BYTES: usize = 4096;

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// Empty buffers.
    pub const fn new() -> Encoder {
        Encoder {
            out: Vec::new(),
            max: usize::MAX,
            keys: Vec::new(),
            slots: [(0, 0, 0); KEY_SLOTS],
        }
    }

    /// The bytes the buffers hold.
    pub fn capacity(&self) -> usize {
        self.out.capacity() + self.keys.capacity()
    }

    /// Appends the key at `idx` (a string) and its colon to `out`.
    ///
    /// A key is found again by the address of its bytes, which only this
    /// string has while it lives: LuaJIT interns strings (the same key
    /// in two tables is one string), and every key met in a call stays
    /// alive until the call ends (it is in a table reachable from the
    /// value encoded, which stays on the stack, and nothing in the walk
    /// runs the collector). The table is emptied at the start of a call.
    ///
    /// # Safety
    /// As [`walk`]'s, and the value at `idx` is a string.
    unsafe fn push_key(&mut self, state: *mut ffi::lua_State, idx: i32) -> Result<(), EncodeError> {
        // SAFETY: the caller's contract.
        let bytes = unsafe { lua_bytes(state, idx) };
        let addr = bytes.as_ptr() as usize;
        let slot = (addr >> 4 ^ addr >> 9) & (KEY_SLOTS - 1);
        let (at, start, end) = self.slots[slot];
        if at == addr && (end - start) as usize == bytes.len() + 3 {
            self.out
                .extend_from_slice(&self.keys[start as usize..end as usize]);
            return Ok(());
        }
        let from = self.out.len();
        if !push_utf8_within(bytes, &mut self.out, self.max).map_err(|_| EncodeError::NotUtf8)? {
            return Err(EncodeError::Memory);
        }
        self.out.push(b':');
        // (Kept when it needed no escape: then a hit is told by its length.)
        if bytes.len() <= KEY_MAX
            && self.out.len() - from == bytes.len() + 3
            && self.keys.len() < KEYS_BYTES
        {
            let start = self.keys.len();
            self.keys.extend_from_slice(&self.out[from..]);
            self.slots[slot] = (addr, start as u32, self.keys.len() as u32);
        }
        Ok(())
    }
}

/// `brisk.json.null`: a userdata of no size whose metatable is hidden
/// (`__metatable`), so it holds nothing: a table, shared by every
/// servlet, took entries through raw writes (`table.insert`,
/// `table.move`) whatever its metatable said, and one servlet's were
/// every other's.
pub fn null_sentinel(lua: &Lua) -> mlua::Result<AnyUserData> {
    // SAFETY: exec_raw's protected call; a userdata of no bytes (nothing
    // to initialise) and a table with one field, set as its metatable.
    unsafe {
        lua.exec_raw::<AnyUserData>((), |state| {
            ffi::lua_newuserdata(state, 0);
            ffi::lua_createtable(state, 0, 1);
            ffi::lua_pushboolean(state, 0);
            ffi::lua_setfield(state, -2, c"__metatable".as_ptr());
            ffi::lua_setmetatable(state, -2);
        })
    }
}

/// Appends `value` as JSON to `enc.out` (emptied first): a table with
/// keys 1..n (or empty) is an array, any other an object; `null` (the
/// `brisk.json.null` userdata) and `nil` are `null`. The outer error is
/// Lua's (a failed call), the inner what the value cannot be.
///
/// Tables are walked inside LuaJIT ([`in_lua`], `engine/src/handlers/servlets/ffi/c/brisk_lj.c`)
/// when that walk was compiled into the vendored LuaJIT (engine/build.rs
/// sets `brisk_lj_walk` then), else through the C API ([`walk`]); both
/// write the same text.
pub fn encode(
    lua: &Lua,
    value: Value,
    null: &AnyUserData,
    enc: &mut Encoder,
) -> mlua::Result<Result<(), EncodeError>> {
    enc.max = super::heap::outside_room(lua);
    encode_with(lua, value, null, enc, cfg!(brisk_lj_walk))
}

/// [`encode`], with the walk inside Lua or not (tests compare the two).
fn encode_with(
    lua: &Lua,
    value: Value,
    null: &AnyUserData,
    enc: &mut Encoder,
    inside: bool,
) -> mlua::Result<Result<(), EncodeError>> {
    enc.out.clear();
    enc.keys.clear();
    enc.slots = [(0, 0, 0); KEY_SLOTS];
    // (Built without brisk_lj.c, as another project's dependency, there
    // is only the walk outside.)
    #[cfg(not(brisk_lj_walk))]
    let _ = inside;
    #[cfg(brisk_lj_walk)]
    if let (true, Value::Table(t)) = (inside, &value) {
        let (table, null) = (t.to_pointer(), null.to_pointer());
        {
            // SAFETY: `value` holds the table (alive, and unchanged: the
            // walk allocates nothing in Lua and runs no Lua code, so
            // neither the collector nor a servlet can run meanwhile).
            // No protected call: nothing in it can raise an error.
            return Ok(unsafe { in_lua::table(table, null, &mut enc.out, enc.max) });
        }
    }
    let mut result = Ok(());
    // SAFETY: `protected` pushes `value` and `null` as the callback's
    // arguments 1 and 2 and calls it under lua_pcall; `walk` keeps the
    // stack balanced and reads only values whose type it checked; the
    // walk inside Lua reads a table that stays on the stack, and runs
    // nothing that could collect or change it.
    unsafe {
        super::req::protected::<()>(lua, (value, null), |state| {
            let null = ffi::lua_topointer(state, 2);
            let ty = ffi::lua_type(state, 1);
            result = walk(state, 1, ty, 2, null, enc, 0);
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok(result)
}

/// The walk compiled into LuaJIT (`engine/src/handlers/servlets/ffi/c/brisk_lj.c`): its output
/// buffer is a `Vec` lent to C, which hands strings to escape and floats
/// back to [`push_utf8_within`] and [`push_f64`].
#[cfg(brisk_lj_walk)]
mod in_lua {
    use std::ffi::{c_char, c_int, c_void};

    use super::{push_f64, push_utf8_within, EncodeError, MAX_DEPTH};

    /// What `Out::ctx` points to: the output and its cap.
    struct Ctx<'a> {
        out: &'a mut Vec<u8>,
        max: usize,
        /// The cap was met (C then reports BJ_MEMORY or BJ_NOTUTF8).
        over: bool,
    }

    /// `brisk_json_out` in brisk_lj.c.
    #[repr(C)]
    struct Out {
        buf: *mut u8,
        len: usize,
        cap: usize,
        ctx: *mut c_void,
        reserve: unsafe extern "C" fn(*mut Out, usize) -> c_int,
        string: unsafe extern "C" fn(*mut Out, *const c_char, usize) -> c_int,
        number: unsafe extern "C" fn(*mut Out, f64) -> c_int,
        plain: *const bool,
        null: *const c_void,
        maxdepth: c_int,
        spent: unsafe extern "C" fn(*mut Out) -> c_int,
        steps: usize,
    }

    unsafe extern "C" {
        fn brisk_json_table(o: *mut Out, t: *const c_void) -> c_int;
    }

    /// Writes the table `t` (`lua_topointer` of a table on the stack).
    ///
    /// # Safety
    /// `t` is a live table that nothing changes during the call.
    pub(super) unsafe fn table(
        t: *const c_void,
        null: *const c_void,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<(), EncodeError> {
        let (buf, len, cap) = (out.as_mut_ptr(), out.len(), out.capacity());
        let mut ctx = Ctx {
            out,
            max,
            over: false,
        };
        let mut o = Out {
            buf,
            len,
            cap,
            ctx: (&mut ctx as *mut Ctx<'_>).cast(),
            reserve,
            string,
            number,
            plain: crate::http::json::PLAIN.as_ptr(),
            null,
            maxdepth: MAX_DEPTH as c_int,
            spent,
            steps: 0,
        };
        // SAFETY: `o` describes `out` (C writes only within cap, and
        // grows it through `reserve`); the caller's contract for `t`.
        let r = unsafe { brisk_json_table(&mut o, t) };
        // SAFETY: C wrote the bytes up to o.len, within the capacity.
        unsafe { ctx.out.set_len(o.len) };
        if ctx.over || (r == 0 && ctx.out.len() > max) {
            return Err(EncodeError::Memory);
        }
        match r {
            0 => Ok(()),
            1 => Err(EncodeError::Depth),
            2 => Err(EncodeError::NotFinite),
            3 => Err(EncodeError::NotUtf8),
            4 => Err(EncodeError::Key),
            6 => Err(EncodeError::Memory),
            7 => Err(EncodeError::Stopped),
            _ => Err(EncodeError::Value),
        }
    }

    /// The `Ctx` behind `o`, its output's length set to what C wrote.
    ///
    /// # Safety
    /// `o` is the `Out` made by [`table`], during its call.
    unsafe fn synced<'a, 'b>(o: *mut Out) -> &'a mut Ctx<'b> {
        // SAFETY: the caller's contract: ctx is the Ctx `o` describes,
        // and C initialised its output's bytes up to len.
        unsafe {
            let c = &mut *(*o).ctx.cast::<Ctx<'b>>();
            c.out.set_len((*o).len);
            c
        }
    }

    /// Points `o` at `v` again (after it grew).
    fn resync(o: &mut Out, v: &mut Vec<u8>) {
        o.buf = v.as_mut_ptr();
        o.len = v.len();
        o.cap = v.capacity();
    }

    unsafe extern "C" fn reserve(o: *mut Out, more: usize) -> c_int {
        // SAFETY: called by brisk_json_table with the `Out` of `table`.
        let (o, c) = unsafe { (&mut *o, synced(o)) };
        let v = &mut *c.out;
        let want = v.len().saturating_add(more);
        if want > c.max {
            c.over = true;
            return 0;
        }
        // Doubling, but never past the cap.
        let target = want.max(v.capacity().saturating_mul(2)).min(c.max);
        let ok = v.try_reserve_exact(target - v.len()).is_ok();
        resync(o, v);
        ok as c_int
    }

    unsafe extern "C" fn string(o: *mut Out, s: *const c_char, len: usize) -> c_int {
        // SAFETY: as `reserve`; `s` is a Lua string's `len` bytes.
        let (o, c, bytes) = unsafe {
            (
                &mut *o,
                synced(o),
                std::slice::from_raw_parts(s.cast::<u8>(), len),
            )
        };
        let ok = match push_utf8_within(bytes, c.out, c.max) {
            Ok(true) => true,
            Ok(false) => {
                c.over = true;
                false
            }
            Err(_) => false,
        };
        resync(o, c.out);
        ok as c_int
    }

    unsafe extern "C" fn spent(_: *mut Out) -> c_int {
        super::super::cpu::check_spent() as c_int
    }

    unsafe extern "C" fn number(o: *mut Out, n: f64) -> c_int {
        // SAFETY: as `reserve`.
        let (o, c) = unsafe { (&mut *o, synced(o)) };
        push_f64(c.out, n);
        resync(o, c.out);
        1
    }
}

/// Writes the value at stack index `idx` (absolute), of Lua type `ty`
/// (which the caller has, from `lua_rawgeti` or `lua_type`: one call
/// less a value); `top` is the stack's top (`lua_gettop`, which the
/// caller knows: one call less a table); `null` is the null sentinel's
/// address.
///
/// # Safety
/// `state` is a valid Lua state inside a protected call, `idx` a valid
/// absolute index, `ty` the type of the value at `idx`, `top` the top,
/// with room for `2 * (7 - depth % 8)` more values (see [`walk_table`]).
unsafe fn walk(
    state: *mut ffi::lua_State,
    idx: i32,
    ty: i32,
    top: i32,
    null: *const std::ffi::c_void,
    enc: &mut Encoder,
    depth: usize,
) -> Result<(), EncodeError> {
    let max = enc.max;
    let out = &mut enc.out;
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
            ffi::LUA_TSTRING => {
                if !push_utf8_within(lua_bytes(state, idx), out, max)
                    .map_err(|_| EncodeError::NotUtf8)?
                {
                    return Err(EncodeError::Memory);
                }
            }
            // (A table's address: cheaper than lua_rawequal.)
            ffi::LUA_TUSERDATA if ffi::lua_topointer(state, idx) == null => {
                out.extend_from_slice(b"null")
            }
            ffi::LUA_TTABLE => return walk_table(state, idx, top, null, enc, depth),
            _ => return Err(EncodeError::Value),
        }
    }
    Ok(())
}

/// Writes the table at `idx` as an array or an object.
///
/// A level uses two stack slots (a key and a value). A C function has
/// `LUA_MINSTACK` (20) free slots when called, and `encode`'s callback
/// was given two arguments, so 18 are free at depth 0: the stack is
/// grown by 16 every 8 levels (depth 0, 8, 16...), for the 8 levels
/// that follow, rather than checked at every table.
///
/// # Safety
/// As [`walk`], and the value at `idx` is a table.
unsafe fn walk_table(
    state: *mut ffi::lua_State,
    idx: i32,
    top: i32,
    null: *const std::ffi::c_void,
    enc: &mut Encoder,
    depth: usize,
) -> Result<(), EncodeError> {
    // SAFETY: every push below is matched by a pop before returning (or
    // the caller's lua_settop(0) on error); the stack has room for the
    // two slots a level uses (lua_checkstack every 8 levels, above).
    unsafe {
        // (lua_next skips a table's empty slots, however many: the budget
        // is asked at each table, as brisk_lj.c asks every 4,096 slots.)
        if super::cpu::check_spent() {
            return Err(EncodeError::Stopped);
        }
        if depth >= MAX_DEPTH || (depth.is_multiple_of(8) && ffi::lua_checkstack(state, 16) == 0) {
            return Err(EncodeError::Depth);
        }
        // An array when its keys are all integers from 1 up to at most
        // twice as many (a hole is null), as brisk_lj.c: the border alone
        // dropped what lay past it or beside it ({1, 2, x = 5} -> [1,2]).
        let (mut count, mut max, mut ints) = (0u64, 0u64, true);
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, idx) != 0 {
            let k = match ffi::lua_type(state, top + 1) == ffi::LUA_TNUMBER
                && ffi::lua_isinteger(state, top + 1) != 0
            {
                true => ffi::lua_tointegerx(state, top + 1, std::ptr::null_mut()),
                false => 0,
            };
            if k < 1 {
                ints = false;
                ffi::lua_settop(state, top);
                break;
            }
            count += 1;
            max = max.max(k as u64);
            ffi::lua_settop(state, top + 1);
        }
        let object = (!ints || max > 2 * count) && {
            // lua_next pushes the first key and value (top + 1, top + 2)
            // (the table has one: a key that is no integer from 1, or
            // count > 0).
            ffi::lua_pushnil(state);
            ffi::lua_next(state, idx) != 0
        };
        if !object {
            let n = if ints { max } else { 0 };
            enc.out.push(b'[');
            for i in 1..=n {
                if i > 1 {
                    // (Numbers and literals are short: checked here.)
                    if enc.out.len() > enc.max {
                        return Err(EncodeError::Memory);
                    }
                    enc.out.push(b',');
                }
                let ty = ffi::lua_rawgeti(state, idx, i as ffi::lua_Integer);
                let r = walk(state, top + 1, ty, top + 1, null, enc, depth + 1);
                ffi::lua_settop(state, top);
                r?;
            }
            enc.out.push(b']');
            return Ok(());
        }
        enc.out.push(b'{');
        loop {
            match ffi::lua_type(state, top + 1) {
                ffi::LUA_TSTRING => enc.push_key(state, top + 1)?,
                ffi::LUA_TNUMBER if ffi::lua_isinteger(state, top + 1) != 0 => {
                    let out = &mut enc.out;
                    out.push(b'"');
                    push_i64(
                        out,
                        ffi::lua_tointegerx(state, top + 1, std::ptr::null_mut()),
                    );
                    out.extend_from_slice(b"\":");
                }
                _ => return Err(EncodeError::Key),
            }
            let ty = ffi::lua_type(state, top + 2);
            walk(state, top + 2, ty, top + 2, null, enc, depth + 1)?;
            // Pop the value, keep the key for lua_next.
            ffi::lua_settop(state, top + 1);
            if ffi::lua_next(state, idx) == 0 {
                break;
            }
            if enc.out.len() > enc.max {
                ffi::lua_settop(state, top);
                return Err(EncodeError::Memory);
            }
            enc.out.push(b',');
        }
        enc.out.push(b'}');
        Ok(())
    }
}

/// The bytes of the string at `idx` (its type checked: a string).
///
/// # Safety
/// The value at `idx` is a string; the slice lives as long as it stays on
/// the stack (the caller uses it at once).
unsafe fn lua_bytes<'a>(state: *mut ffi::lua_State, idx: i32) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: a string value: lua_tolstring returns its bytes in place
    // (no conversion), valid while it is on the stack.
    unsafe {
        let p = ffi::lua_tolstring(state, idx, &mut len);
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

fn push_i64(out: &mut Vec<u8>, i: i64) {
    if i < 0 {
        out.push(b'-');
    }
    push_u64(out, i.unsigned_abs());
}

/// This source tree builds its LuaJIT with brisk.json.encode's walk (so
/// the walk inside LuaJIT and its tests below are built): an `LJCORE_O`
/// in the environment replaces `.cargo/config.toml`'s, and a LuaJIT built
/// before the `[env]` named the walk stays as it was; either would leave
/// both out without a word.
#[cfg(test)]
#[test]
fn luajit_built_with_the_json_walk() {
    let built_with_it = cfg!(brisk_lj_walk);
    assert!(
        built_with_it,
        "the vendored LuaJIT was built without engine/src/handlers/servlets/ffi/c/brisk_lj.c: \
         unset LJCORE_O (or give it .cargo/config.toml's value) and delete \
         target/*/build/mlua-sys-* and target/*/.fingerprint/mlua-sys-*"
    );
}

#[cfg(all(test, brisk_lj_walk))]
mod tests {
    use super::*;

    /// The walk inside Lua and the C API walk give the same text, or the
    /// same error, for values of every shape: arrays held in the array
    /// part or the hash part, holes, objects with integer keys in either
    /// part, keys met again (more than the key cache holds), long keys
    /// and values, strings to escape or refuse, numbers of both kinds,
    /// `null`, and tables nested to the limit and past it.
    #[test]
    fn inside_lua_as_through_the_c_api() {
        let lua = Lua::new();
        let null = null_sentinel(&lua).unwrap();
        lua.globals().raw_set("null", null.clone()).unwrap();
        let cases = [
            "{}",
            "{1, 2, 3}",
            "{1, nil, 3}",
            "{nil, nil, 3}",
            "{1, 2, x = 3}",
            "(function() local t = {} t[3] = 3 t[2] = 2 t[1] = 1 return t end)()",
            "(function() local t = {1, 2, 3, 4} t[1] = nil t[2] = nil return t end)()",
            "(function() local t = {1, 2, 3, 4} t[4] = nil t[3] = nil t[1] = nil return t end)()",
            "(function() local t = {} for i = 1, 300 do t[i] = i * 0.5 end return t end)()",
            "{[2] = 'b', [-7] = 'm', [1000000] = true}",
            "{a = 1, b = {c = {d = {}}}, e = null, f = false, g = true}",
            "{[1.5] = 1}",
            "{[true] = 1}",
            "{print}",
            "{s = '\\xff'}",
            "{['\\xff'] = 1}",
            "{s = 'a\"b\\\\c\\n<&>\\0\\127 \\u{e9}\\u{10ffff}'}",
            "{[string.rep('k', 50)] = string.rep('v', 5000)}",
            "{0.1, -0.0, 1e300, -1e-7, 2^53, 2^63, 123456.789, 3.25, math.pi}",
            "{0/0}",
            "{1/0}",
            "{2^63 - 1024, -2^63, 2^63, -2^63 - 2048, 2^53 + 2, 0, -1}",
            "{[0] = 'z'}",
            "{[0] = 'z', 'a', 'b'}",
            "(function() local t = {1, 2, 3} t[0] = 0 t[1] = nil t[3] = nil return t end)()",
            "{[2^53] = 1, [-3] = 2, [1e15] = 3}",
            "{[2^63] = 1}",
            "{[0.5] = 1}",
            "(function() local t = {} for i = 1, 150 do t[i] = {id = i, ['k' .. i % 70] = i,               [string.rep('x', 45) .. i % 3] = {i}, ['\\u{e9}' .. i % 4] = 'v'} end return t end)()",
            "(function() local v = 1 for i = 1, 127 do v = i % 2 == 0 and {v} or {k = v} end return v end)()",
            "(function() local v = 1 for i = 1, 128 do v = {v} end return v end)()",
            "(function() local t = {} t.self = t return t end)()",
        ];
        let mut enc = Encoder::new();
        for expr in cases {
            let v: Value = lua.load(format!("return {expr}")).eval().unwrap();
            assert_same(&lua, &null, &mut enc, v, expr);
        }
    }

    /// Both walks on `v`: the same text or the same error.
    fn assert_same(lua: &Lua, null: &AnyUserData, enc: &mut Encoder, v: Value, what: &str) {
        let mut run = |inside| {
            encode_with(lua, v.clone(), null, enc, inside)
                .unwrap()
                .map(|()| String::from_utf8(enc.out.clone()).unwrap())
        };
        let (c, api) = (run(true), run(false));
        assert_eq!(c, api, "{what}");
    }

    /// The same on 2,000 random values (a seeded generator): tables built
    /// by inserting and removing keys in random order, so that entries
    /// land in the array part, the hash part or both, with dead keys
    /// left in the nodes; values of every kind, nested up to 5 levels.
    #[test]
    fn inside_lua_as_through_the_c_api_random() {
        let lua = Lua::new();
        let null = null_sentinel(&lua).unwrap();
        lua.globals().raw_set("null", null.clone()).unwrap();
        let make: mlua::Function = lua
            .load(
                r#"
                local r = math.random
                local keys = { "id", "name", "k", "a\"b", "\u{e9}", string.rep("x", 41), "\255" }
                local function key()
                  local c = r(10)
                  if c <= 4 then return r(12) end
                  if c <= 9 then return keys[r(#keys)] end
                  return -r(5)
                end
                local value
                local function table_of(depth)
                  local t = {}
                  for _ = 1, r(0, 12) do t[key()] = value(depth + 1) end
                  for _ = 1, r(0, 4) do t[key()] = nil end
                  if r(4) == 1 then for i = 1, r(20) do t[i] = value(depth + 1) end end
                  return t
                end
                function value(depth)
                  local c = r(depth < 5 and 11 or 8)
                  if c == 1 then return r(-1000, 1000) end
                  if c == 2 then return r() * 10 ^ r(-5, 20) end
                  if c == 3 then return r(2) == 1 end
                  if c == 4 then return keys[r(#keys)] end
                  if c == 5 then return null end
                  if c == 6 then return (math.maxinteger or 2^53) - r(0, 3) end
                  if c == 7 then return ("item %d"):format(r(100)) end
                  if c == 8 then return r(100) / 4 end
                  return table_of(depth)
                end
                return function(seed) math.randomseed(seed) return table_of(0) end
                "#,
            )
            .eval()
            .unwrap();
        let mut enc = Encoder::new();
        let (mut ok, mut err) = (0, 0);
        for seed in 0..2000 {
            let v: Value = make.call(seed).unwrap();
            assert_same(&lua, &null, &mut enc, v.clone(), &format!("seed {seed}"));
            match encode_with(&lua, v, &null, &mut enc, true).unwrap() {
                Ok(()) => ok += 1,
                Err(_) => err += 1,
            }
        }
        // Both outcomes were met (the generator makes keys and strings
        // that cannot be written, "\255", as well as ones that can).
        assert!(ok > 200 && err > 200, "{ok} written, {err} refused");
    }
}
