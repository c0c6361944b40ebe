//! A servlet request's run on its coroutine through Lua's C API: the
//! coroutine readied (its stack cleared, `handle_request`, the request
//! table built on it and `res` pushed) and resumed under the CPU budget.
//!
//! Through mlua, a run cost a `Thread::reset`, a `Function::call` of the
//! table builder (mlua's argument pushes and its traceback handler), a
//! `Thread::resume` (each argument pushed from mlua's reference thread,
//! moved across, the results moved back) and three `Thread::status`
//! (each a `lua_getstack`): about 2,700 instructions of a hello servlet's
//! 13,500 (callgrind, bench scenario 9). Here the values a run needs sit
//! in one table the registry holds ([`Anchors`]), read with `lua_rawgeti`
//! straight onto the coroutine, the request table is built by the run
//! itself (the prelude's `start` calls `req::new_request`, then the
//! servlet), and `lua_resume` says how the run ended.
//!
//! Nothing here allocates outside a protected call (or the run): `lua_rawgeti`,
//! `lua_pushlightuserdata` and `lua_settop` make nothing, and the stack
//! room is asked for with `lua_checkstack` (which grows the stack in a
//! protected call of its own). Errors keep mlua's form: the message with
//! the coroutine's traceback, or the Rust error a callback raised.

use std::ffi::c_int;
use std::ptr;

use mlua::{ffi, Function, IntoLua, Lua, Table, Thread, Value};

use super::cpu;
use super::req::{self, Job};
use super::res;

/// The slots of the anchors table: the C function protected calls go
/// through, the function a run starts with (the prelude's `start`), the
/// `res` object of the next run.
const TRAMPOLINE: i64 = 1;
const START: i64 = 2;
const RES: i64 = 3;
/// The slot of the first servlet's `handle_request`: each loaded servlet
/// has its own from here ([`Anchors::set_handle`]).
pub const FIRST_HANDLE: i64 = 4;

/// The values a run pushes, in a table the registry holds for the
/// state's life.
pub struct Anchors {
    table: Table,
    reference: c_int,
    /// The table's address (`lua_topointer`), for `brisk_prepare`.
    #[cfg(brisk_lj_walk)]
    address: *const std::ffi::c_void,
}

impl Anchors {
    /// The anchors of `lua`, with `start(handle_request, res)`, which
    /// makes the request table (`req::new_request`) and runs the servlet.
    pub fn new(lua: &Lua, start: &Function) -> mlua::Result<Anchors> {
        let table = lua.create_table()?;
        // SAFETY: the trampoline reads its arguments only as it checks.
        table.raw_set(TRAMPOLINE, unsafe {
            lua.create_c_function(req::trampoline)?
        })?;
        table.raw_set(START, start)?;
        let mut reference = ffi::LUA_NOREF;
        // SAFETY: exec_raw pushes the table (argument 1) under lua_pcall;
        // luaL_ref pops it into the registry (or raises a memory error).
        unsafe {
            lua.exec_raw::<()>(&table, |state| {
                reference = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
            })?;
        }
        Ok(Anchors {
            #[cfg(brisk_lj_walk)]
            address: table.to_pointer(),
            table,
            reference,
        })
    }

    /// The servlet whose slot is `slot` (from [`FIRST_HANDLE`]) has this
    /// `handle_request`.
    pub fn set_handle(&self, slot: i64, handle: impl IntoLua) -> mlua::Result<()> {
        self.table.raw_set(slot, handle)
    }

    /// The `res` object of the runs to come (which `known`, of the
    /// metatable `res` was made with, then knows).
    pub fn set_res(&self, res: &res::Object, known: &res::Known) -> mlua::Result<()> {
        self.table.raw_set(RES, &res.0)?;
        // SAFETY: the anchors hold `res` until the next call (or until
        // the state is closed); the caller gives the `known` of its
        // metatable (a `Known` of another one would only miss).
        unsafe { known.set(res) };
        Ok(())
    }
}

/// How a run (or its next part) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// `handle_request` returned: the coroutine may run the next request.
    Finished,
    /// It yielded (a piece's worth gathered): resume it again.
    Yielded,
}

/// Readies `co`, a new or finished coroutine, to run the servlet in
/// `slot` ([`Anchors::set_handle`]) with the `res` object of
/// [`Anchors::set_res`]: its stack is then `start`, the servlet's
/// `handle_request` and `res`, for [`resume`] with 2, which makes the
/// request table of what `req::lend` lent.
pub fn prepare(co: &Thread, anchors: &Anchors, slot: i64) -> mlua::Result<()> {
    let l = co.state();
    // On LuaJIT's objects when brisk_lj.c is in (lua_settop, lua_checkstack
    // and four lua_rawgeti through the C API were 140 of a hello
    // request's 9,600 instructions); through the C API when it declines.
    #[cfg(brisk_lj_walk)]
    {
        let slots = [START, slot, RES].map(|n| i32::try_from(n).unwrap_or(0));
        // SAFETY: `co` is a live coroutine of the anchors' state (borrowed),
        // the anchors table lives as long as the state (the registry holds
        // it); the C function reads it and writes `co`'s stack within its
        // room only if `co` is free, else it does nothing.
        if unsafe { brisk_prepare(l, anchors.address, slots.as_ptr(), 3) } != 0 {
            return Ok(());
        }
    }
    // SAFETY: `co` is a live coroutine (borrowed) that is not running;
    // a status other than LUA_OK (a yielded or dead one) is refused.
    // Every push is within the room lua_checkstack gave; lua_rawgeti on
    // the anchors table (checked to be one) reads without allocating.
    unsafe {
        begin(l, anchors)?;
        rawgeti(l, 1, START);
        rawgeti(l, 1, slot);
        rawgeti(l, 1, RES);
        ffi::lua_remove(l, 1);
    }
    Ok(())
}

#[cfg(brisk_lj_walk)]
unsafe extern "C" {
    /// engine/src/handlers/servlets/ffi/c/brisk_lj.c.
    fn brisk_prepare(
        co: *mut ffi::lua_State,
        table: *const std::ffi::c_void,
        slots: *const i32,
        n: c_int,
    ) -> c_int;
}

/// A full collection (after a memory error), in a protected call on
/// `co`, a free coroutine: nothing is allocated before it (through mlua's
/// `Function::call`, `req::protected` pushes an error handler, a new
/// closure: with the memory full after a servlet ran out of it, that
/// failed and the collection never ran), and a collection raises nothing
/// but a memory error (LuaJIT reports a finalizer's error as an event).
pub fn collect(co: &Thread, anchors: &Anchors) -> mlua::Result<()> {
    let l = co.state();
    let mut run = |state| {
        // SAFETY: a protected call's stack.
        unsafe { ffi::lua_gc(state, ffi::LUA_GCCOLLECT, 0) };
    };
    let mut job: Job<'_> = &mut run;
    // SAFETY: as in `prepare`: a live coroutine that is not running, its
    // pushes within the room asked for, reads that allocate nothing, the
    // job alive through the call.
    unsafe {
        begin(l, anchors)?;
        push_job(l, &mut job);
        let status = ffi::lua_pcall(l, 1, 0, 0);
        let r = match status {
            ffi::LUA_OK => Ok(()),
            _ => Err(message_error(l, status)),
        };
        ffi::lua_settop(l, 0);
        r
    }
}

/// Clears the stack of `l`, a coroutine that is not running (a yielded
/// or dead one is refused), and pushes the anchors table (at 1), with
/// room for [`ROOM`] more values.
///
/// # Safety
/// `l` is a live coroutine of the anchors' state.
unsafe fn begin(l: *mut ffi::lua_State, anchors: &Anchors) -> mlua::Result<()> {
    // SAFETY: the caller's contract; lua_checkstack grows the stack in a
    // protected call of its own (0: it could not), and the registry read
    // allocates nothing.
    unsafe {
        if ffi::lua_status(l) != ffi::LUA_OK {
            return Err(mlua::Error::runtime("the coroutine is not free"));
        }
        ffi::lua_settop(l, 0);
        if ffi::lua_checkstack(l, 1 + ROOM) == 0 {
            return Err(mlua::Error::runtime("no room on a coroutine's stack"));
        }
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, anchors.reference);
        if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
            ffi::lua_settop(l, 0);
            return Err(mlua::Error::runtime("no anchors"));
        }
    }
    Ok(())
}

/// Pushes `t[n]` of the table at `idx`: LuaJIT's `lua_rawgeti` itself
/// (mlua's has it return the value's type, one call more: 25
/// instructions each, and a run makes six).
///
/// # Safety
/// A table at `idx` of `l`, a free stack slot.
pub(super) unsafe fn rawgeti(l: *mut ffi::lua_State, idx: c_int, n: i64) {
    // (An index past c_int reads t[0], nil: no slot is that large.)
    let n = c_int::try_from(n).unwrap_or(0);
    // SAFETY: the caller's contract; a raw read allocates nothing.
    unsafe { ffi::lua_rawgeti_(l, idx, n) }
}

/// The values pushed above the anchors table, at most.
const ROOM: i32 = 3;

/// Pushes the trampoline and `job` (its first argument) on `l`, for a
/// `lua_pcall`.
///
/// # Safety
/// The anchors table is at 1 on `l` (`begin`), with room for two values;
/// `job` lives until the call has returned.
unsafe fn push_job(l: *mut ffi::lua_State, job: &mut Job<'_>) {
    // SAFETY: the caller's contract; a light userdata is no object.
    unsafe {
        rawgeti(l, 1, TRAMPOLINE);
        ffi::lua_pushlightuserdata(l, (job as *mut Job<'_>).cast());
    }
}

/// Resumes `co` with the `nargs` values on its stack ([`prepare`]'s two,
/// or none after a yield) under a CPU budget of `ticks` (`cpu`), adding
/// the ticks it used to `used`; what it returns or yields is dropped.
/// An error leaves the coroutine dead, and is as mlua's `Thread::resume`
/// gives it: the message with the coroutine's traceback, the Rust error
/// a callback raised, a memory error.
pub fn resume(
    lua: &Lua,
    co: &Thread,
    nargs: c_int,
    ticks: u64,
    used: &mut u64,
) -> mlua::Result<Ran> {
    let l = co.state();
    // SAFETY: a live coroutine (borrowed) with its function and arguments
    // (or a yielded one with its arguments), as `prepare` leaves it; its
    // stack is cut back to nothing only once it returned or yielded.
    unsafe {
        // (The error's text is made under the run's budget: an error
        // value's `__tostring` is the servlet's code, and one that never
        // returned held the worker for ever once the budget had ended.)
        cpu::resume_raw(l, nargs, ticks, used, |status| match status {
            ffi::LUA_OK => {
                ffi::lua_settop(l, 0);
                Ok(Ran::Finished)
            }
            ffi::LUA_YIELD => {
                ffi::lua_settop(l, 0);
                Ok(Ran::Yielded)
            }
            status => {
                let e = match status {
                    ffi::LUA_ERRMEM => message_error(l, status),
                    _ => traceback_error(lua, l),
                };
                // What its stack holds is garbage now (as after mlua's
                // resume).
                ffi::lua_settop(l, 0);
                Err(e)
            }
        })
    }
}

/// The error whose value is on top of `l`'s stack, without a traceback
/// (and without allocating: a memory error's).
///
/// # Safety
/// `l` is a valid thread with a value on its stack.
unsafe fn message_error(l: *mut ffi::lua_State, status: c_int) -> mlua::Error {
    // SAFETY: lua_tolstring only on a string (no conversion).
    let text = unsafe {
        if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
            let mut len = 0usize;
            let p = ffi::lua_tolstring(l, -1, &mut len);
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), len)).into_owned()
        } else {
            "(an error that is not a string)".to_string()
        }
    };
    match status {
        ffi::LUA_ERRMEM => mlua::Error::MemoryError(text),
        _ => mlua::Error::RuntimeError(text),
    }
}

/// The error of the dead coroutine `l` (its value on top of its stack),
/// as mlua makes it: a callback's error as it was raised, any other value
/// as text (`tostring`, which may run its `__tostring`: [`resume`] calls
/// this under the run's CPU budget) followed by the coroutine's traceback.
///
/// # Safety
/// `l` is a coroutine of `lua` that ended with an error, its value on top
/// of its stack.
unsafe fn traceback_error(lua: &Lua, l: *mut ffi::lua_State) -> mlua::Error {
    // SAFETY: exec_raw runs the closure in a protected call on the main
    // stack (LUA_MINSTACK slots free, LUA_TRACEBACK_STACK asked for); the
    // error value is moved there, and one value is left: the userdata as
    // it was (mlua reads its own errors back), or the text.
    let got = unsafe {
        lua.exec_raw::<Value>((), |state| {
            ffi::lua_xmove(l, state, 1);
            if ffi::lua_type(state, -1) == ffi::LUA_TUSERDATA {
                return;
            }
            let text = ffi::luaL_tolstring(state, -1, ptr::null_mut());
            if ffi::lua_checkstack(state, ffi::LUA_TRACEBACK_STACK) != 0 {
                ffi::luaL_traceback(state, l, text, 0);
                ffi::lua_remove(state, -2);
            }
            ffi::lua_remove(state, -2);
        })
    };
    match got {
        Ok(Value::Error(e)) => *e,
        Ok(Value::String(s)) => mlua::Error::RuntimeError(s.to_string_lossy()),
        Ok(v) => mlua::Error::RuntimeError(format!("{v:?}")),
        Err(e) => e,
    }
}
