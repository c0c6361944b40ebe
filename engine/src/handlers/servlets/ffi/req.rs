//! Lua tables built through Lua's C API in one protected call: the
//! request table a servlet gets (`req`, with its `args`, `headers` and
//! `cookies` tables). Built through mlua's safe API, every string and
//! every field cost a protected call of its own (mlua guards each
//! allocation that way) and every table a registry reference: 43 % of
//! the instructions of a hello servlet's request (bench scenario 9).
//!
//! [`build`] makes one protected call; inside it a [`Builder`] pushes
//! tables and strings on the Lua stack with `lua_createtable`,
//! `lua_pushlstring` and `lua_rawset`. Whatever its caller does with it,
//! the stack stays within the room `lua_checkstack` gave (every table
//! opened asks for its own, and a failure is reported, not raised), only
//! tables are indexed, and only arguments that exist are read. A memory
//! error raised by Lua while a string or table is made ends the protected
//! call, which mlua reports as an error: the caller keeps no value that
//! needs dropping inside the closure (its buffers live outside it).

use std::cell::Cell;
use std::marker::PhantomData;

use std::ffi::c_int;

use mlua::{ffi, FromLuaMulti, IntoLuaMulti, LightUserData, Lua, Table};

/// Fills the tables being built: the one opened last is the one written.
/// (`'a`: the protected call, while which the arguments stay put.)
pub struct Builder<'a> {
    state: *mut ffi::lua_State,
    /// The arguments given to [`build`] are at stack indices 1..=args.
    args: i32,
    /// Tables open (the request table is the first).
    depth: i32,
    /// A call was refused (no room on the stack, a bad argument index,
    /// closing the outermost table): the result is an error.
    failed: bool,
    _call: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// Free stack slots above an open table: a key and a value.
const ROOM: i32 = 2;

impl<'a> Builder<'a> {
    /// The bytes of the `arg`th argument given to [`build`] if it is a
    /// string, read in place (the arguments stay on the stack, below
    /// what is built, until the call ends).
    pub fn arg_bytes(&self, arg: i32) -> Option<&'a [u8]> {
        if !(1..=self.args).contains(&arg) {
            return None;
        }
        // SAFETY: a valid index; lua_tolstring only on a string (no
        // conversion), whose bytes stay valid while it is on the stack:
        // for the call ('a), as nothing here pops an argument.
        unsafe {
            if ffi::lua_type(self.state, arg) != ffi::LUA_TSTRING {
                return None;
            }
            let mut len = 0usize;
            let p = ffi::lua_tolstring(self.state, arg, &mut len);
            Some(std::slice::from_raw_parts(p.cast::<u8>(), len))
        }
    }

    /// Opens a table with room for `fields` keyed fields; it takes the
    /// fields set until [`Builder::close`].
    pub fn open(&mut self, fields: usize) {
        if self.failed {
            return;
        }
        // SAFETY: lua_checkstack reports failure (it raises nothing with
        // a positive count); with room for the table and ROOM more, the
        // push is within the stack.
        unsafe {
            if ffi::lua_checkstack(self.state, 1 + ROOM) == 0 {
                self.failed = true;
                return;
            }
            ffi::lua_createtable(self.state, 0, i32::try_from(fields).unwrap_or(0));
        }
        self.depth += 1;
    }

    /// Closes the table opened last and sets it as field `key` of the
    /// one it was opened in. (Only the tests nest tables today.)
    #[cfg(test)]
    pub fn close(&mut self, key: &[u8]) {
        if self.failed || self.depth < 2 {
            self.failed = true;
            return;
        }
        // SAFETY: the open table is at -1 and its parent at -2 (depth 2
        // or more); pushing the key uses one of the ROOM slots.
        unsafe {
            push_bytes(self.state, key);
            ffi::lua_rotate(self.state, -2, 1);
            ffi::lua_rawset(self.state, -3);
        }
        self.depth -= 1;
    }

    /// `t[key] = value` (strings) in the open table (the tests'; requests'
    /// fields keep a repeated name's first value: [`Builder::set_first`]).
    #[cfg(test)]
    pub fn set(&mut self, key: &[u8], value: &[u8]) {
        if self.failed {
            return;
        }
        // SAFETY: the open table is at -1 (depth >= 1 while not failed)
        // and ROOM slots are free above it.
        unsafe {
            push_bytes(self.state, key);
            push_bytes(self.state, value);
            ffi::lua_rawset(self.state, -3);
        }
    }

    /// As [`Builder::set`], unless `key` is set already (a repeated
    /// field keeps its first value).
    pub fn set_first(&mut self, key: &[u8], value: &[u8]) {
        if self.failed {
            return;
        }
        // SAFETY: as in `set`: the key, then a copy of it replaced by
        // the value found (two slots), one popped before the value goes.
        unsafe {
            push_bytes(self.state, key);
            ffi::lua_pushvalue(self.state, -1);
            if ffi::lua_rawget(self.state, -3) != ffi::LUA_TNIL {
                ffi::lua_settop(self.state, -3);
                return;
            }
            ffi::lua_settop(self.state, -2);
            push_bytes(self.state, value);
            ffi::lua_rawset(self.state, -3);
        }
    }

    /// `t[key] =` the `arg`th argument given to [`build`] (from 1). (Only
    /// the tests use it today.)
    #[cfg(test)]
    pub fn set_arg(&mut self, key: &[u8], arg: i32) {
        if self.failed || !(1..=self.args).contains(&arg) {
            self.failed = true;
            return;
        }
        // SAFETY: `arg` is a valid index (checked); two pushes in ROOM.
        unsafe {
            push_bytes(self.state, key);
            ffi::lua_pushvalue(self.state, arg);
            ffi::lua_rawset(self.state, -3);
        }
    }

    /// Whether nothing failed and the `arg`th argument is a table (if
    /// not, the build fails).
    fn table_arg(&mut self, arg: i32) -> bool {
        if self.failed
            || !(1..=self.args).contains(&arg)
            // SAFETY: `arg` is a valid index (checked just before).
            || unsafe { ffi::lua_type(self.state, arg) } != ffi::LUA_TTABLE
        {
            self.failed = true;
            return false;
        }
        true
    }

    /// Gives the open table the `arg`th argument (a table) as its
    /// metatable.
    pub fn set_metatable_arg(&mut self, arg: i32) {
        if !self.table_arg(arg) {
            return;
        }
        // SAFETY: a table at a valid index; one push, popped by
        // lua_setmetatable.
        unsafe {
            ffi::lua_pushvalue(self.state, arg);
            ffi::lua_setmetatable(self.state, -2);
        }
    }
}

/// Pushes `bytes` as a Lua string.
///
/// # Safety
/// A slot is free on the stack of `state`, inside a protected call.
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: as the contract says; Lua copies the bytes.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}

/// A part's length that marks it absent (see [`parts`]).
pub const ABSENT: u32 = u32::MAX - 1;

/// The parts of `blob`: each a 32-bit little-endian length and that many
/// bytes, or the length [`ABSENT`] alone (None). A length that does not
/// fit ends them (a servlet may have put anything there).
pub fn parts(mut blob: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    std::iter::from_fn(move || {
        let (len, rest) = blob.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len);
        if len == ABSENT {
            blob = rest;
            return Some(None);
        }
        let len = usize::try_from(len).ok()?;
        let (bytes, rest) = (rest.get(..len)?, &rest[len..]);
        blob = rest;
        Some(Some(bytes))
    })
}

/// Appends `part` to a blob [`parts`] reads.
pub fn put_part(blob: &mut Vec<u8>, part: Option<&[u8]>) {
    match part {
        Some(p) => {
            blob.extend_from_slice(&u32::try_from(p.len()).unwrap_or(0).to_le_bytes());
            blob.extend_from_slice(p);
        }
        None => blob.extend_from_slice(&ABSENT.to_le_bytes()),
    }
}

/// `part(blob, i)` for Lua: the `i`th (from 1) of the [`parts`] of the
/// string `blob`, or nothing (nil) if it is absent, or not there.
///
/// # Safety
/// Called by Lua as a C function.
unsafe extern "C-unwind" fn part_lua(l: *mut ffi::lua_State) -> libc::c_int {
    // SAFETY: types checked before values are read; the bytes of a
    // string argument stay put during the call; one push (LUA_MINSTACK
    // gives room), which may raise a memory error: nothing here needs
    // dropping.
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TSTRING || ffi::lua_isinteger(l, 2) == 0 {
            return 0;
        }
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, 1, &mut len);
        let blob = std::slice::from_raw_parts(p.cast::<u8>(), len);
        let i = ffi::lua_tointegerx(l, 2, std::ptr::null_mut());
        let Some(Some(bytes)) = usize::try_from(i - 1).ok().and_then(|i| parts(blob).nth(i)) else {
            return 0;
        };
        push_bytes(l, bytes);
        1
    }
}

/// [`part_lua`] as a function for Lua code.
pub fn part_function(lua: &Lua) -> mlua::Result<mlua::Function> {
    // SAFETY: part_lua reads its arguments only as the types it checks.
    unsafe { lua.create_c_function(part_lua) }
}

/// The request the next [`new_request`] call makes its table of: the
/// [`parts`] of `req[1]` and the body (set by [`lend`]).
#[derive(Clone, Copy)]
struct Pending {
    raw: *const u8,
    raw_len: usize,
    body: *const u8,
    body_len: usize,
}

thread_local! {
    /// What [`lend`] lends, until [`new_request`] takes it.
    static PENDING: Cell<Option<Pending>> = const { Cell::new(None) };
}

/// Takes back what [`lend`] lent if it was not taken (a panic
/// too): no pointer outlives the borrow it came from.
pub struct Lent<'a>(PhantomData<&'a [u8]>);

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        PENDING.set(None);
    }
}

/// Lends `raw` (`req[1]`'s [`parts`]) and `body` to the request table
/// that the run started while the result lives makes ([`new_request`]).
pub fn lend<'a>(raw: &'a [u8], body: &'a [u8]) -> Lent<'a> {
    PENDING.set(Some(Pending {
        raw: raw.as_ptr(),
        raw_len: raw.len(),
        body: body.as_ptr(),
        body_len: body.len(),
    }));
    Lent(PhantomData)
}

/// `new_request(mt)` for the prelude's `start`, the first thing a
/// servlet's run does, inside its coroutine (so under its CPU budget,
/// and a memory error is the run's): the request table, `{raw, body}`
/// (`body` left out if empty) with the metatable `mt`, from what
/// [`lend`] lent; an error if nothing is lent (it is taken: one table a
/// lending). Building the table here rather than in a protected call of
/// its own before the run (`lua_pcall` of a C function given a Rust
/// closure) saves that call: 1,679 instructions down to ~700 of a hello
/// servlet's 11,400 (callgrind, bench scenario 9).
///
/// # Safety
/// Called by Lua as a C function.
pub(super) unsafe extern "C-unwind" fn new_request(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the lent pointers are valid while lent (`Lent`), and taken
    // here once; no Rust value that needs dropping is held when Lua
    // raises (a memory error in the pushes, or the errors below, whose
    // messages are static). LUA_MINSTACK slots are free: two are used.
    unsafe {
        let p = match PENDING.take() {
            Some(p) if ffi::lua_type(l, 1) == ffi::LUA_TTABLE => p,
            _ => {
                let msg = "no request to make";
                ffi::lua_pushlstring_(l, msg.as_ptr().cast(), msg.len());
                ffi::lua_error(l)
            }
        };
        // On LuaJIT's objects when brisk_lj.c is in: the same table, one
        // collector check rather than two, no index look-ups (720
        // instructions of a hello request through the C API).
        #[cfg(brisk_lj_walk)]
        if brisk_new_request(l, p.raw.cast(), p.raw_len, p.body.cast(), p.body_len) != 0 {
            return 1;
        }
        let body = p.body_len > 0;
        ffi::lua_createtable(l, if body { 2 } else { 1 }, 0);
        ffi::lua_pushlstring_(l, p.raw.cast(), p.raw_len);
        ffi::lua_rawseti_(l, -2, 1);
        if body {
            ffi::lua_pushlstring_(l, p.body.cast(), p.body_len);
            ffi::lua_rawseti_(l, -2, 2);
        }
        ffi::lua_pushvalue(l, 1);
        ffi::lua_setmetatable(l, -2);
        1
    }
}

#[cfg(brisk_lj_walk)]
unsafe extern "C" {
    /// engine/src/handlers/servlets/ffi/c/brisk_lj.c.
    fn brisk_new_request(
        l: *mut ffi::lua_State,
        raw: *const std::ffi::c_char,
        raw_len: usize,
        body: *const std::ffi::c_char,
        body_len: usize,
    ) -> c_int;
}

/// [`new_request`] as a function for the prelude.
pub fn new_request_function(lua: &Lua) -> mlua::Result<mlua::Function> {
    // SAFETY: new_request reads its argument only as the type it checks.
    unsafe { lua.create_c_function(new_request) }
}

/// A new table with room for `fields` keyed fields, filled by `fill` in
/// one protected call; `args` (at most a few values) are there for
/// [`Builder::set_arg`] and [`Builder::set_metatable_arg`].
pub fn build(
    lua: &Lua,
    args: impl IntoLuaMulti,
    fields: usize,
    fill: impl FnOnce(&mut Builder<'_>),
) -> mlua::Result<Table> {
    let mut failed = false;
    // SAFETY: `protected` pushes `args` at 1..=n and calls the closure
    // under lua_pcall, as `fill_table` needs; it leaves exactly the built
    // table on the stack (or nothing, which the conversion to a table
    // reports).
    let built = unsafe {
        protected::<Option<Table>>(lua, args, |state| {
            failed = !fill_table(state, fields, fill);
        })?
    };
    match built {
        Some(t) if !failed => Ok(t),
        _ => Err(mlua::Error::runtime(
            "building a table: no room on Lua's stack (or a builder misused)",
        )),
    }
}

/// The work of [`build`]'s protected call: a new table with room for
/// `fields` keyed fields, filled by `fill`, left alone on the stack of
/// `state` in place of its arguments (the values at 1..=top), or nothing
/// there if it failed (then false).
///
/// # Safety
/// Called inside a protected call on `state` (a C function's, whose
/// arguments are the values on the stack), with the rules of
/// [`protected`]'s `f`.
pub(super) unsafe fn fill_table(
    state: *mut ffi::lua_State,
    fields: usize,
    fill: impl FnOnce(&mut Builder<'_>),
) -> bool {
    // SAFETY: the builder keeps the stack within the room it asked for;
    // the caller's contract for the rest.
    unsafe {
        let args = ffi::lua_gettop(state);
        let mut b = Builder {
            state,
            args,
            depth: 0,
            failed: false,
            _call: PhantomData,
        };
        b.open(fields);
        fill(&mut b);
        let failed = b.failed || b.depth != 1;
        if failed {
            ffi::lua_settop(state, 0);
        } else {
            // The table (at args + 1) alone on the stack.
            ffi::lua_rotate(state, 1, 1);
            ffi::lua_settop(state, 1);
        }
        !failed
    }
}

/// The C function through which [`protected`] runs its closures, made
/// once per state (kept in its app data).
struct Trampoline(mlua::Function);

/// What [`protected`] hands [`trampoline`], as a light userdata.
pub(super) type Job<'a> = &'a mut dyn FnMut(*mut ffi::lua_State);

/// Runs the [`Job`] its first argument points to, with the other
/// arguments at 1..=n, and returns what the job leaves on the stack.
pub(super) unsafe extern "C-unwind" fn trampoline(state: *mut ffi::lua_State) -> c_int {
    // (Never reachable from Lua code, which cannot get the function;
    // checked all the same.)
    if ffi::lua_type(state, 1) != ffi::LUA_TLIGHTUSERDATA {
        return 0;
    }
    let job = ffi::lua_touserdata(state, 1).cast::<Job<'_>>();
    ffi::lua_remove(state, 1);
    (*job)(state);
    ffi::lua_gettop(state)
}

/// Runs `f` on the current Lua stack in a protected call, with `args` at
/// 1..=n, and converts what it leaves there to `R`: mlua's
/// `Lua::exec_raw`, for which see the rules (`f` must not panic, nor
/// hold anything that needs dropping when a Lua error skips its frames).
///
/// Why not `exec_raw`: under LuaJIT (the Lua 5.1 API, which has no
/// light C functions) mlua makes each one a `lua_cpcall` that creates
/// two C closures and stores them in the registry, then reads them back
/// for a `lua_pcall`: about 1,800 instructions a call, 11 % of a hello
/// servlet's request (callgrind, bench scenario 9). Here it is one
/// `lua_pcall` of a C function made once per state.
///
/// # Safety
/// As `Lua::exec_raw`.
pub unsafe fn protected<R: FromLuaMulti>(
    lua: &Lua,
    args: impl IntoLuaMulti,
    f: impl FnOnce(*mut ffi::lua_State),
) -> mlua::Result<R> {
    let t = match lua.app_data_ref::<Trampoline>() {
        Some(t) => t,
        None => {
            // SAFETY: `trampoline` reads its arguments only as it checks.
            let made = lua.create_c_function(trampoline)?;
            lua.set_app_data(Trampoline(made));
            lua.app_data_ref::<Trampoline>()
                .ok_or_else(|| mlua::Error::runtime("no trampoline"))?
        }
    };
    let mut f = Some(f);
    let mut run = |state| {
        if let Some(f) = f.take() {
            f(state);
        }
    };
    let mut job: Job<'_> = &mut run;
    // (The job outlives the call, which is all the pointer is read in.)
    let ud = LightUserData((&mut job as *mut Job<'_>).cast());
    t.0.call((ud, args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::Value;

    #[test]
    fn builds_nested_tables() {
        let lua = Lua::new();
        let mt = lua.create_table().unwrap();
        mt.raw_set("marked", true).unwrap();
        let t = build(&lua, (mt, 7, "three"), 4, |b| {
            b.set(b"a", b"one");
            b.set_first(b"a", b"not kept");
            b.set_first(b"b", b"two");
            b.open(1);
            b.set_metatable_arg(1);
            b.set(b"x\0y", b"\xff");
            b.close(b"inner");
            b.set_arg(b"n", 2);

            assert_eq!(b.arg_bytes(2), None);
            assert_eq!(b.arg_bytes(3), Some(&b"three"[..]));
            assert_eq!(b.arg_bytes(4), None);
        })
        .unwrap();
        assert_eq!(t.raw_get::<String>("a").unwrap(), "one");
        assert_eq!(t.raw_get::<String>("b").unwrap(), "two");
        assert_eq!(t.raw_get::<i64>("n").unwrap(), 7);

        let copy = build(&lua, ("in place", 1), 1, |b| {
            let s = b.arg_bytes(1).unwrap();
            b.set(b"copy", s);
        })
        .unwrap();
        assert_eq!(copy.raw_get::<String>("copy").unwrap(), "in place");
        let inner: Table = t.raw_get("inner").unwrap();
        let v: mlua::LuaString = inner.raw_get("x\0y").unwrap();
        assert_eq!(&*v.as_bytes(), b"\xff");
        assert!(inner
            .metatable()
            .unwrap()
            .raw_get::<bool>("marked")
            .unwrap());
        // The stack is as it was: many builds in a row work.
        for _ in 0..10_000 {
            build(&lua, (), 0, |b| b.set(b"k", b"v")).unwrap();
        }
    }

    #[test]
    fn new_request_makes_one_table_of_what_is_lent() {
        let lua = Lua::new();
        let new = new_request_function(&lua).unwrap();
        let mt = lua.create_table().unwrap();
        let make = || new.call::<Table>(&mt);
        assert!(make().is_err(), "nothing lent");
        {
            let _lent = lend(b"raw\0parts", b"");
            let t = make().unwrap();
            assert_eq!(
                &*t.raw_get::<mlua::LuaString>(1).unwrap().as_bytes(),
                b"raw\0parts"
            );
            assert!(
                t.raw_get::<Value>(2).unwrap().is_nil(),
                "an empty body is left out"
            );
            assert_eq!(t.metatable().unwrap().to_pointer(), mt.to_pointer());
            assert!(make().is_err(), "one table a lending");
        }
        let lent = lend(b"r", b"the body");
        assert!(new.call::<Table>(1).is_err(), "the metatable is a table");
        drop(lent);
        let lent = lend(b"r", b"the body");
        let t = make().unwrap();
        assert_eq!(t.raw_get::<String>(2).unwrap(), "the body");
        drop(lent);
        // What was lent and not taken is taken back with the borrow.
        drop(lend(b"r", b""));
        assert!(make().is_err(), "nothing lent after the borrow ended");
    }

    #[test]
    fn parts_round_trip_and_part_reads_them_from_lua() {
        let mut blob = Vec::new();
        for p in [Some(&b"GET"[..]), None, Some(b""), Some(b"x\0y")] {
            put_part(&mut blob, p);
        }
        let all: Vec<_> = parts(&blob).collect();
        assert_eq!(all, [Some(&b"GET"[..]), None, Some(b""), Some(b"x\0y")]);
        // A length past the end ends them.
        let mut cut = blob.clone();
        cut.extend_from_slice(&100u32.to_le_bytes());
        assert_eq!(parts(&cut).count(), 4);
        let lua = Lua::new();
        let part = part_function(&lua).unwrap();
        let blob = lua.create_string(&blob).unwrap();
        let got = |i: i64| part.call::<Option<mlua::LuaString>>((&blob, i)).unwrap();
        assert_eq!(&*got(1).unwrap().as_bytes(), b"GET");
        assert!(got(2).is_none(), "absent");
        assert_eq!(&*got(4).unwrap().as_bytes(), b"x\0y");
        for i in [0, 5, -1] {
            assert!(got(i).is_none(), "{i}");
        }
        assert!(part
            .call::<Option<mlua::LuaString>>((1, 1))
            .unwrap()
            .is_none());
    }

    #[test]
    fn misuse_is_an_error() {
        let lua = Lua::new();
        let fills: [fn(&mut Builder<'_>); 4] = [
            |b| b.close(b"root"),
            |b| b.set_arg(b"k", 1),
            |b| b.set_metatable_arg(0),
            |b| b.open(0),
        ];
        for fill in fills {
            assert!(build(&lua, (), 0, fill).is_err());
        }
        // Deep nesting asks for room as it goes.
        let t = build(&lua, (), 0, |b| {
            for _ in 0..1000 {
                b.open(0);
            }
            for _ in 0..1000 {
                b.close(b"t");
            }
        })
        .unwrap();
        assert!(t.raw_get::<Table>("t").is_ok());
    }
}
