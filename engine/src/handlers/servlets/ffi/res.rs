//! A servlet's `res` object through Lua's C API: a full userdata that
//! owns its Rust side (an `Rc<RefCell<T>>`, dropped by `__gc`), whose
//! methods `write`, `header`, `set_status` and `redirect` are C functions.
//!
//! Before, `res` was a table whose Lua methods called an mlua userdata's
//! methods: `res:write(status, headers, body)` went through a Lua call,
//! mlua's method dispatch (a protected call, the arguments converted to
//! `Value`s with a registry reference each) and another protected call to
//! read the headers in place: about 4,000 instructions of a hello
//! servlet's 23,000 (callgrind, bench scenario 9). Now the C function reads
//! its arguments on its own stack, and yields itself when a piece's worth
//! is gathered (`lua_yield`, which returns to the servlet on resume).
//!
//! Errors are raised with `lua_error` once nothing Rust owns is left in
//! the frames it jumps over: the message is copied to a buffer on the
//! stack first (its `String` dropped), and borrows end before.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use std::ffi::c_void;

use mlua::{ffi, AnyUserData, Function, Lua, Table};

/// The Rust side of a `res` object.
pub trait Answer: 'static {
    /// `write(status, ...)` and `set_status(status)`.
    fn status(&mut self, status: i64) -> Result<(), String>;
    /// A header field, from `write`'s table or `header(name, value)`.
    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), String>;
    /// Body bytes.
    fn body(&mut self, bytes: &[u8]) -> Result<(), String>;
    /// `redirect(url, status)`.
    fn redirect(&mut self, url: &[u8], status: Option<i64>) -> Result<(), String>;
    /// Whether a piece's worth is gathered (then `write` yields).
    fn gathered(&self) -> bool;
    /// Whether the request this answer is for is the one running: a
    /// `res` kept (in a global) past its request refers to an object the
    /// worker hands to later requests, and must not write into theirs.
    fn live(&self) -> bool;
}

/// What a userdata made by [`new_object`] holds (None once collected).
type Slot<T> = Option<Rc<RefCell<T>>>;

/// Which method a C function is.
const WRITE: u8 = 0;
const HEADER: u8 = 1;
const SET_STATUS: u8 = 2;
const REDIRECT: u8 = 3;

/// The `res` object a state's runs get, known to its methods without a
/// look at its metatable ([`Known::set`]).
pub struct Known(*mut *mut c_void);

impl Known {
    /// `res`, a `res` object of this state's that stays alive until the
    /// next call (held by the anchors), is the one runs get.
    ///
    /// # Safety
    /// As said: `res` was made with the metatable this `Known` came with,
    /// and is kept alive until this is called again (or the state is
    /// closed).
    pub(super) unsafe fn set(&self, res: &Object) {
        // SAFETY: the block of the userdata the methods hold as their
        // second upvalue (alive with them, so with the state; a userdata
        // does not move); lua_topointer gives a userdata's block, as
        // lua_touserdata.
        unsafe { *self.0 = res.0.to_pointer().cast_mut() };
    }
}

/// Makes `mt` the metatable of `res` objects holding a `T`: `__index`
/// itself, its methods (C closures that know `mt`, so they serve only
/// these objects), `__gc` and a `__metatable` field that hides it (so no
/// servlet calls `__gc` itself, or changes it).
///
/// The methods also share a block that holds the address of the `res`
/// object the state's runs get ([`Known`]): the object they are called on
/// is that one, or has `mt` as its metatable. (Asking for the metatable
/// and comparing it was 170 of a hello request's 9,700 instructions; a
/// servlet cannot make a userdata, nor a light one, so an object at that
/// address is that object.)
pub fn set_up_metatable<T: Answer>(lua: &Lua, mt: &Table) -> mlua::Result<Known> {
    // SAFETY: exec_raw's protected call; the block is written before
    // anything else can raise, and left alone on the stack.
    let known = unsafe {
        lua.exec_raw::<AnyUserData>((), |state| {
            let p = ffi::lua_newuserdata(state, std::mem::size_of::<KnownSlot>());
            std::ptr::write(p.cast::<KnownSlot>(), KnownSlot(std::ptr::null_mut()));
        })?
    };
    let methods: [(&str, u8); 4] = [
        ("write", WRITE),
        ("header", HEADER),
        ("set_status", SET_STATUS),
        ("redirect", REDIRECT),
    ];
    for (name, which) in methods {
        let f = closure(lua, mt, &known, which, PhantomData::<T>)?;
        mt.raw_set(name, f)?;
    }
    // (gc::<T> checks the metatable too.)
    let gc = closure(lua, mt, &known, u8::MAX, PhantomData::<T>)?;
    mt.raw_set("__gc", gc)?;
    mt.raw_set("__index", mt)?;
    mt.raw_set("__metatable", false)?;
    // (lua_topointer gives a userdata's block.)
    let slot = known.to_pointer().cast_mut().cast::<*mut c_void>();
    Ok(Known(slot))
}

/// What the methods' second upvalue holds: the address of the `res`
/// object runs get (null: none yet).
#[repr(transparent)]
struct KnownSlot(*mut c_void);

/// The C closure for method `which` (u8::MAX: `__gc`) over `mt` and
/// `known`.
fn closure<T: Answer>(
    lua: &Lua,
    mt: &Table,
    known: &AnyUserData,
    which: u8,
    _: PhantomData<T>,
) -> mlua::Result<Function> {
    let f: ffi::lua_CFunction = match which {
        WRITE => method::<T, WRITE>,
        HEADER => method::<T, HEADER>,
        SET_STATUS => method::<T, SET_STATUS>,
        REDIRECT => method::<T, REDIRECT>,
        _ => gc::<T>,
    };
    // SAFETY: exec_raw pushes `mt` and `known` (arguments 1 and 2) under
    // lua_pcall; the closure takes them as its upvalues and is left alone
    // on the stack.
    unsafe {
        lua.exec_raw::<Function>((mt, known), |state| {
            ffi::lua_pushcclosure(state, f, 2);
        })
    }
}

/// A `res` object ([`new_object`]).
pub struct Object(pub(super) AnyUserData);

/// A new `res` object holding `value`, with the metatable `mt` (set up by
/// [`set_up_metatable`]).
pub fn new_object<T: Answer>(lua: &Lua, value: Rc<RefCell<T>>, mt: &Table) -> mlua::Result<Object> {
    // (Outside the call: a memory error raised in it leaves nothing of
    // Rust's to drop in the frames it jumps over.)
    let mut value = Some(value);
    let slot = &mut value;
    // SAFETY: exec_raw pushes `mt` at 1 under lua_pcall; the userdata is
    // written before anything else can raise, and gets its metatable
    // (with __gc, so the Rc is dropped when Lua frees it).
    unsafe {
        lua.exec_raw::<AnyUserData>(mt, |state| {
            let p = ffi::lua_newuserdata(state, std::mem::size_of::<Slot<T>>());
            std::ptr::write(p.cast::<Slot<T>>(), slot.take());
            ffi::lua_pushvalue(state, 1);
            ffi::lua_setmetatable(state, -2);
            ffi::lua_rotate(state, 1, 1);
            ffi::lua_settop(state, 1);
        })
        .map(Object)
    }
}

/// The `T` of the object at index 1, if it is one of ours: the known one
/// (the closure's second upvalue), or one whose metatable is the
/// closure's first upvalue.
///
/// # Safety
/// Called from one of the closures made by [`closure`]; the reference
/// lives while the object stays at index 1 (the call).
unsafe fn object<'a, T: Answer>(l: *mut ffi::lua_State) -> Option<&'a RefCell<T>> {
    // SAFETY: the caller's contract; the second upvalue is the userdata
    // of a KnownSlot (from set_up_metatable), whose address is a live
    // object of ours or null (Known::set's contract); no userdata but
    // ours and no light userdata reach a servlet. One slot pushed and
    // popped.
    unsafe {
        let p = ffi::lua_touserdata(l, 1);
        if p.is_null() {
            return None;
        }
        let known = ffi::lua_touserdata(l, ffi::lua_upvalueindex(2)).cast::<KnownSlot>();
        if known.is_null() || p != (*known).0 {
            if ffi::lua_type(l, 1) != ffi::LUA_TUSERDATA || ffi::lua_getmetatable(l, 1) == 0 {
                return None;
            }
            let ours = ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(1));
            ffi::lua_settop(l, -2);
            if ours == 0 {
                return None;
            }
        }
        (*p.cast::<Slot<T>>()).as_deref()
    }
}

/// `__gc`: drops the Rust side.
unsafe extern "C-unwind" fn gc<T: Answer>(l: *mut ffi::lua_State) -> libc::c_int {
    // SAFETY: a userdata with our metatable holds a Slot<T>; the take
    // leaves None, so a second call finds nothing.
    unsafe {
        if ffi::lua_type(l, 1) == ffi::LUA_TUSERDATA && ffi::lua_getmetatable(l, 1) != 0 {
            let ours = ffi::lua_rawequal(l, -1, ffi::lua_upvalueindex(1));
            ffi::lua_settop(l, -2);
            if ours != 0 {
                let p = ffi::lua_touserdata(l, 1).cast::<Slot<T>>();
                drop((*p).take());
            }
        }
    }
    0
}

extern "C-unwind" {
    /// Whether `l` may yield: LuaJIT 2.1's (lj_api.c), which mlua's Lua
    /// 5.1 bindings do not declare.
    fn lua_isyieldable(l: *mut ffi::lua_State) -> libc::c_int;
}

/// What a method call asks of the caller once its Rust frames are gone.
enum After {
    Return,
    Yield,
}

/// A method of `res` objects.
unsafe extern "C-unwind" fn method<T: Answer, const M: u8>(l: *mut ffi::lua_State) -> libc::c_int {
    // SAFETY: called by Lua as one of our closures.
    let r = unsafe { call::<T, M>(l) };
    match r {
        Ok(After::Return) => 0,
        // Called through a C function (a gsub callback, a sort
        // comparator, a gsub table's __index) the servlet cannot yield:
        // the yield failed the answer, once it had grown past a piece.
        // It goes on gathering instead (within max_output), and the next
        // write where it can yield sends it.
        // SAFETY: `l` is the running thread.
        Ok(After::Yield) if unsafe { lua_isyieldable(l) } == 0 => 0,
        // SAFETY: nothing here needs dropping; lua_yield from a C function
        // returns to its caller on resume (with no results). It yields
        // the metatable (the first upvalue, hidden from servlets): the
        // prelude's coroutine.resume knows brisk's yield by it, and
        // passes it on up to brisk when a servlet's coroutine wrote.
        Ok(After::Yield) => unsafe {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
            ffi::lua_yield(l, 1)
        },
        Err(e) => {
            // The message, copied here (no destructor in this frame).
            let mut msg = [0u8; 512];
            let n = e.len().min(msg.len());
            msg[..n].copy_from_slice(&e.as_bytes()[..n]);
            drop(e);
            // SAFETY: as above; Lua copies the message.
            unsafe {
                ffi::lua_pushlstring(l, msg.as_ptr().cast(), n);
                ffi::lua_error(l)
            }
        }
    }
}

/// The work of [`method`], with Rust values that drop before it raises.
/// The object is borrowed only while a value read is handed over: what
/// may raise (a number converted to a string allocates) runs outside a
/// borrow, so a memory error leaves no `RefMut` behind.
///
/// # Safety
/// As [`object`].
unsafe fn call<T: Answer, const M: u8>(l: *mut ffi::lua_State) -> Result<After, String> {
    const WHAT: [&str; 4] = ["res:write", "res:header", "res:set_status", "res:redirect"];
    let what = WHAT[usize::from(M)];
    #[cfg(brisk_lj_walk)]
    if M == WRITE {
        // SAFETY: the caller's contract.
        if let Some(done) = unsafe { write_in_place::<T>(l) } {
            return done;
        }
    }
    // SAFETY: the caller's contract.
    let cell = unsafe { object::<T>(l) }
        .ok_or_else(|| format!("{what}: call it as a method of a response (res:...)"))?;
    let with = |f: &mut dyn FnMut(&mut T) -> Result<(), String>| borrowed(cell, what, f);
    // SAFETY: (for the reads below) indices within the call's arguments,
    // types checked before a value is read.
    unsafe {
        match M {
            WRITE => {
                if let Some(status) = integer_at(l, 2) {
                    // write(status, headers, body), as Gerbil's
                    // http-response-write.
                    with(&mut |t| t.status(status))?;
                    match ffi::lua_type(l, 3) {
                        ffi::LUA_TTABLE => headers(l, 3, cell)?,
                        ffi::LUA_TNIL | ffi::LUA_TNONE => {}
                        _ => return Err("res:write: the headers are a table".into()),
                    }
                    match ffi::lua_type(l, 4) {
                        ffi::LUA_TNIL | ffi::LUA_TNONE => {}
                        ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                            let body = bytes_at(l, 4);
                            with(&mut |t| t.body(body))?;
                        }
                        _ => return Err("res:write: the body is a string".into()),
                    }
                } else {
                    // write(piece): a string or a number.
                    let piece = match ffi::lua_gettop(l) {
                        2 => text_at(l, 2),
                        _ => None,
                    };
                    let piece =
                        piece.ok_or("res:write takes (status, headers, body) or (string)")?;
                    with(&mut |t| t.body(piece))?;
                }
                if cell.try_borrow().is_ok_and(|t| t.gathered()) {
                    return Ok(After::Yield);
                }
            }
            HEADER => {
                let name = text_at(l, 2).ok_or("res:header: the name is a string")?;
                let value = text_at(l, 3).ok_or("res:header: the value is a string")?;
                with(&mut |t| t.header(name, value))?;
            }
            SET_STATUS => {
                let status = integer_at(l, 2).ok_or("res:set_status: the status is an integer")?;
                with(&mut |t| t.status(status))?;
            }
            _ => {
                let url = text_at(l, 2).ok_or("res:redirect: the URL is a string")?;
                let status = match ffi::lua_type(l, 3) {
                    ffi::LUA_TNIL | ffi::LUA_TNONE => None,
                    _ => Some(integer_at(l, 3).ok_or("res:redirect: the status is an integer")?),
                };
                with(&mut |t| t.redirect(url, status))?;
            }
        }
    }
    Ok(After::Return)
}

/// `brisk_pair` in brisk_lj.c: a header field's name and value.
#[cfg(brisk_lj_walk)]
#[repr(C)]
struct Pair {
    name: *const u8,
    name_len: usize,
    value: *const u8,
    value_len: usize,
}

/// `brisk_write` in brisk_lj.c: res:write's arguments, read in place.
#[cfg(brisk_lj_walk)]
#[repr(C)]
struct WriteArgs {
    object: *const c_void,
    known: *const KnownSlot,
    status: f64,
    body: *const u8,
    body_len: usize,
    pairs: *mut Pair,
    npairs: usize,
    maxpairs: usize,
}

#[cfg(brisk_lj_walk)]
unsafe extern "C" {
    /// engine/src/handlers/servlets/ffi/c/brisk_lj.c.
    fn brisk_write_args(l: *mut ffi::lua_State, w: *mut WriteArgs) -> libc::c_int;
}

/// The header fields res:write reads in place (more: the C API).
#[cfg(brisk_lj_walk)]
const PAIRS: usize = 8;

/// `res:write(status, headers, body)` on the known object with its
/// arguments read in place by brisk_lj.c (through the C API, reading them
/// took ~550 of a hello request's 9,600 instructions: lua_next twice, five
/// lua_type, three lua_tolstring, the upvalue and object looks); None,
/// having done nothing, for any other call, which [`call`] then makes
/// through the C API. The same methods are called in the same order with
/// the same bytes, so the answer and any error are the same.
///
/// # Safety
/// As [`object`].
#[cfg(brisk_lj_walk)]
unsafe fn write_in_place<T: Answer>(l: *mut ffi::lua_State) -> Option<Result<After, String>> {
    let mut pairs = [const { std::mem::MaybeUninit::<Pair>::uninit() }; PAIRS];
    let mut w = WriteArgs {
        object: std::ptr::null(),
        known: std::ptr::null(),
        status: 0.0,
        body: std::ptr::null(),
        body_len: 0,
        pairs: pairs.as_mut_ptr().cast(),
        npairs: 0,
        maxpairs: PAIRS,
    };
    // SAFETY: called from one of our closures (the caller's contract):
    // the C function reads its frame and writes `w` and at most PAIRS
    // pairs. The object at `w.object` is the known one (so a Slot<T>,
    // alive: Known::set's contract), and the strings the pairs and body
    // point to stay on the stack or in the argument table for the call,
    // in which nothing runs Lua code.
    unsafe {
        if brisk_write_args(l, &mut w) == 0
            || w.object.is_null()
            || w.known.is_null()
            || w.object != (*w.known).0.cast_const()
        {
            return None;
        }
        let status = integral(w.status)?;
        let cell = (*w.object.cast::<Slot<T>>()).as_deref()?;
        let pairs = std::slice::from_raw_parts(w.pairs.cast_const(), w.npairs.min(PAIRS));
        let bytes = |p: *const u8, len| std::slice::from_raw_parts(p, len);
        let body = (!w.body.is_null()).then(|| bytes(w.body, w.body_len));
        let done = borrowed(cell, "res:write", &mut |t| {
            t.status(status)?;
            for p in pairs {
                t.header(bytes(p.name, p.name_len), bytes(p.value, p.value_len))?;
            }
            match body {
                Some(b) => t.body(b),
                None => Ok(()),
            }
        });
        Some(
            done.map(|()| match cell.try_borrow().is_ok_and(|t| t.gathered()) {
                true => After::Yield,
                false => After::Return,
            }),
        )
    }
}

/// Hands `f` the object, borrowed for the call, if its request is the
/// one running ([`Answer::live`]).
fn borrowed<T: Answer>(
    cell: &RefCell<T>,
    what: &str,
    f: &mut dyn FnMut(&mut T) -> Result<(), String>,
) -> Result<(), String> {
    match cell.try_borrow_mut() {
        Ok(this) if !this.live() => Err(format!(
            "{what}: the response of a request that has ended (a res is used only while its own request runs)"
        )),
        Ok(mut this) => f(&mut this),
        Err(_) => Err(format!("{what}: the response is in use")),
    }
}

/// Hands `cell`'s object each pair of the table at `idx` (strings, or numbers as
/// Lua writes them).
///
/// # Safety
/// `idx` is a table among the call's arguments, and the C function has
/// the stack room Lua gives one (LUA_MINSTACK: three slots are used).
unsafe fn headers<T: Answer>(
    l: *mut ffi::lua_State,
    idx: i32,
    cell: &RefCell<T>,
) -> Result<(), String> {
    // SAFETY: as the contract says; copies of the key and value are
    // converted (never the key lua_next holds), and the stack is back at
    // `top` on every path.
    unsafe {
        let top = ffi::lua_gettop(l);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, idx) != 0 {
            // Key at top + 1, value at top + 2: read in place if strings
            // (the usual case), else converted in copies at top + 3, + 4.
            let pair = match (string_at(l, top + 1), string_at(l, top + 2)) {
                (Some(name), Some(value)) => Some((name, value)),
                _ => {
                    ffi::lua_pushvalue(l, top + 1);
                    ffi::lua_pushvalue(l, top + 2);
                    text_at(l, top + 3).zip(text_at(l, top + 4))
                }
            };
            let pair = match pair {
                Some((name, value)) => borrowed(cell, "res:write", &mut |t| t.header(name, value)),
                None => Err("res:write: header names and values are strings".into()),
            };
            if let Err(e) = pair {
                ffi::lua_settop(l, top);
                return Err(e);
            }
            ffi::lua_settop(l, top + 1);
        }
        Ok(())
    }
}

/// The number at `idx` if it is an integer (as mlua's `lua_isinteger`
/// and `lua_tointegerx` under LuaJIT, whose numbers are doubles: an
/// integral value, not -0.0), in one read rather than their five calls.
///
/// # Safety
/// `idx` is a valid index.
unsafe fn integer_at(state: *mut ffi::lua_State, idx: i32) -> Option<i64> {
    // SAFETY: lua_tonumber only on a number (no conversion).
    unsafe {
        if ffi::lua_type(state, idx) != ffi::LUA_TNUMBER {
            return None;
        }
        integral(ffi::lua_tonumber(state, idx))
    }
}

/// `n` as an integer if it is one (integral, within i64, not -0.0).
fn integral(n: f64) -> Option<i64> {
    let i = n as i64;
    let within = (i64::MIN as f64..-(i64::MIN as f64)).contains(&n);
    (within && (i as f64).to_bits() == n.to_bits()).then_some(i)
}

/// The bytes of the string at `idx`, or None if it is no string.
///
/// # Safety
/// `idx` is a valid index; the slice lives while the string stays there.
unsafe fn string_at<'a>(state: *mut ffi::lua_State, idx: i32) -> Option<&'a [u8]> {
    // SAFETY: lua_tolstring on a string converts nothing.
    unsafe {
        match ffi::lua_type(state, idx) {
            ffi::LUA_TSTRING => Some(bytes_at(state, idx)),
            _ => None,
        }
    }
}

/// `lua_tolstring` at `idx` as a slice.
///
/// # Safety
/// As `lua_tolstring`'s: a string or a number at `idx` (converted in
/// place, which may raise a memory error); the slice lives while the
/// string stays there.
unsafe fn bytes_at<'a>(state: *mut ffi::lua_State, idx: i32) -> &'a [u8] {
    // SAFETY: the caller's contract; Lua gives the string's length.
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(state, idx, &mut len);
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

/// The bytes of the string or number at `idx` (a number is converted to
/// a string in its stack slot, as `tostring` would write it).
///
/// # Safety
/// `idx` is a valid index whose slot may be converted (not a key that
/// `lua_next` is iterating with); the slice lives while it stays there.
unsafe fn text_at<'a>(state: *mut ffi::lua_State, idx: i32) -> Option<&'a [u8]> {
    // SAFETY: as the function's contract says; lua_tolstring converts a
    // number in place (it allocates the string, which may raise a memory
    // error: the callers borrow nothing then).
    unsafe {
        match ffi::lua_type(state, idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => Some(bytes_at(state, idx)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each call (and refuses status 999 and a header named "bad").
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Answer for Calls {
        fn status(&mut self, status: i64) -> Result<(), String> {
            self.0.push(format!("status {status}"));
            match status {
                999 => Err("no 999".into()),
                _ => Ok(()),
            }
        }
        fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), String> {
            let (n, v) = (
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value),
            );
            self.0.push(format!("header {n}={v}"));
            match name {
                b"bad" => Err("a bad name".into()),
                _ => Ok(()),
            }
        }
        fn body(&mut self, bytes: &[u8]) -> Result<(), String> {
            self.0
                .push(format!("body {:?}", String::from_utf8_lossy(bytes)));
            Ok(())
        }
        fn redirect(&mut self, _: &[u8], _: Option<i64>) -> Result<(), String> {
            Ok(())
        }
        fn gathered(&self) -> bool {
            false
        }
        fn live(&self) -> bool {
            true
        }
    }

    /// Two `res` objects of `lua` with their recorders: the first the
    /// known one (the anchors' part: the caller holds it while it runs).
    fn two_objects(lua: &Lua) -> (Rc<RefCell<Calls>>, Object, Rc<RefCell<Calls>>, Object) {
        let mt = lua.create_table().unwrap();
        let known = set_up_metatable::<Calls>(lua, &mt).unwrap();
        let (a, b) = (Rc::default(), Rc::default());
        let oa = new_object::<Calls>(lua, Rc::clone(&a), &mt).unwrap();
        let ob = new_object::<Calls>(lua, Rc::clone(&b), &mt).unwrap();
        // SAFETY: oa was made with mt, and the caller holds it.
        unsafe { known.set(&oa) };
        (a, oa, b, ob)
    }

    #[test]
    fn methods_serve_the_known_object_and_others_of_theirs_only() {
        let lua = Lua::new();
        let (a, oa, b, ob) = two_objects(&lua);
        let foreign = lua.create_any_userdata(0u64).unwrap();
        let refused: Vec<String> = lua
            .load(
                r#"local a, b, foreign = ...
                a:write("known ") b:write("other ") a:write(1.5)
                local refused = {}
                for _, o in ipairs({foreign, {}, "s", 1}) do
                  local ok, e = pcall(a.write, o, "x")
                  refused[#refused + 1] = not ok and tostring(e) or "served"
                end
                return refused"#,
            )
            .call((&oa.0, &ob.0, foreign))
            .unwrap();
        assert_eq!(a.borrow().0, [r#"body "known ""#, r#"body "1.5""#]);
        assert_eq!(b.borrow().0, [r#"body "other ""#]);
        assert_eq!(refused.len(), 4);
        for r in refused {
            assert!(r.contains("call it as a method of a response"), "{r}");
        }
    }

    /// res:write on the known object (its arguments read in place, when
    /// brisk_lj.c is in) and on another (through the C API) makes the
    /// same calls and raises the same errors, each of the same table.
    #[test]
    fn write_in_place_does_what_the_c_api_does() {
        let lua = Lua::new();
        let (a, oa, b, ob) = two_objects(&lua);
        let (ra, rb): (Vec<String>, Vec<String>) = lua
            .load(
                r#"local a, b = ...
                local many = {}
                for i = 1, 12 do many["X-" .. i] = tostring(i) end
                local calls = {
                  {200, {["Content-Type"] = "text/plain", ["X-B"] = "2"}, "hi"},
                  {201}, {202, nil, "x"}, {203, {}, ""}, {204, nil, nil},
                  {999, {["X-A"] = "1"}, "b"}, {200, {bad = "v", ok = "w"}, "b"},
                  {200, {[1] = "a"}, "b"}, {200, {a = "1"}, 5}, {200, {a = 1}, "n"},
                  {200, many, "many"}, {200.5, nil, "x"}, {-0.0, nil, "x"},
                  {200, "not a table", "x"}, {200, nil, {}}, {200, nil, "x", "extra"},
                }
                local function run(o)
                  local out = {}
                  for _, c in ipairs(calls) do
                    local ok, e = pcall(o.write, o, unpack(c, 1, table.maxn(c)))
                    out[#out + 1] = ok and "ok" or tostring(e)
                  end
                  return out
                end
                return run(a), run(b)"#,
            )
            .call((&oa.0, &ob.0))
            .unwrap();
        assert_eq!(ra, rb);
        assert_eq!(a.borrow().0, b.borrow().0);
        assert!(a.borrow().0.len() > 20, "{:?}", a.borrow().0);
        let calls = a.borrow();
        let mut first = calls.0[..4].to_vec();
        first[1..3].sort();
        assert_eq!(
            first,
            [
                "status 200",
                "header Content-Type=text/plain",
                "header X-B=2",
                "body \"hi\""
            ]
        );
    }

    #[test]
    fn integers_read_as_mlua_reads_them() {
        let lua = Lua::new();
        let values = lua
            .load("return 200, 200.5, -0.0, 0, -7, 2^53, 2^63, -2^63, 1e300, 0/0, 1/0, '200', true")
            .eval::<mlua::MultiValue>()
            .unwrap();
        assert_eq!(values.len(), 13);
        for v in values {
            let shown = format!("{v:?}");
            let (mut mine, mut theirs) = (None, None);
            // SAFETY: the value is at index 1 of the protected call's stack.
            unsafe {
                lua.exec_raw::<()>(v, |l| {
                    mine = integer_at(l, 1);
                    theirs = (ffi::lua_isinteger(l, 1) != 0)
                        .then(|| ffi::lua_tointegerx(l, 1, std::ptr::null_mut()));
                })
                .unwrap();
            }
            assert_eq!(mine, theirs, "{shown}");
        }
    }
}
