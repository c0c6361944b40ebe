//! Lua servlets (`[servlets]`, cargo feature `servlets`): a `.lua` file
//! under one of `servlets.paths` is a module that defines
//! `handle_request(req, res)` and optionally `handler_init(cfg)`, as the
//! Gerbil httpd's servlets. Nothing else under the root is executed.
//!
//! - One LuaJIT state per worker thread (a thread-local, so a reload's
//!   new workers start afresh); each servlet is loaded on first use into
//!   an environment of its own (its globals persist between requests in
//!   that worker; copies of the library tables, which it may change for
//!   itself alone: the prelude's `environment`), `handler_init` runs then, and again when the file
//!   changes (checked at most every `static.open_file_cache_valid`).
//! - Each request runs in a coroutine: its output leaves in one piece
//!   with its length, or, once 64 KiB are gathered, the head goes out and
//!   the rest follows in chunks as the client takes them.
//! - Limits: CPU time per request (a timer on the worker's CPU clock
//!   whose signal sets a hook that stops the servlet: `ffi::cpu`; 503),
//!   memory per worker's state (an allocation error: 500), output size.
//!   An error answers 500 and logs the file, line and traceback, the
//!   same one at most once a minute per servlet.
//! - The sandbox inside Lua: no `io`, no `os` but time and date, no
//!   `load` of bytecode (`string.dump` and `loadstring` are gone too), no
//!   `dofile` or `loadfile`, no `setfenv`/`getfenv`, `jit` or `ffi`, no
//!   `newproxy` (finalizers), no `collectgarbage`/`gcinfo`, no `print`; the
//!   metatables of strings, requests and `res` are hidden; patterns are
//!   matched under the CPU budget (`pattern`); `require` loads only
//!   `.lua` modules from the servlet prefixes' directories, beneath the
//!   root, once per servlet and with its globals. The process's Landlock and seccomp
//!   sandbox applies as to everything else.

mod api;
#[allow(unsafe_code)]
mod ffi;
pub(crate) mod pattern;
pub mod shared;
mod strings;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::io::Read as _;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::handlers::protected::Protected;
use mlua::chunk::ChunkMode;
use mlua::prelude::{LuaGcIncParams, LuaGcMode};
use mlua::thread::ThreadStatus;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Thread, Value};

use super::app::{Handler, Request, Response};
use super::stream::BodyStream;
use crate::config::{Config, Level, ServletsConfig};
use crate::sys::fs::{Kind, Meta, Root};
use api::Out;
use ffi::cpu::{self, CPU_LIMIT};
use ffi::heap::Heap;
use ffi::run::{self, Anchors, Ran};
use ffi::{req, res};

/// The collector's pause (percent): see `State::new`.
const GC_PAUSE: i32 = 400;
/// The same error of one servlet is logged at most this often.
const ERROR_EVERY: Duration = Duration::from_secs(60);
/// Servlets whose last error is remembered, per worker.
const MAX_ERRORS_KEPT: usize = 1024;

/// What the servlets of one configuration share (every worker's state
/// is built from it).
#[derive(Debug)]
pub struct Settings {
    servlets: ServletsConfig,
    root: std::path::PathBuf,
    /// How long a loaded servlet is used before its file is looked at.
    valid: Duration,
    follow_outside: bool,
    /// The files brisk itself reads (but the servlets): never run.
    protected: Protected,
    /// The site's part of `brisk.shared` (its host names: `shared::site_key`).
    shared_site: Vec<u8>,
}

/// The handler mounted at each servlet prefix (for `.lua` paths only).
#[derive(Debug, Clone)]
pub struct Servlets(Arc<Settings>);

impl Servlets {
    /// The servlets of `cfg`.
    pub fn new(cfg: &Config, site: usize) -> Servlets {
        // (The limits are server-wide: the default site's.)
        shared::set_capacity(cfg.site.servlets.shared_memory);
        let sc = cfg.site(site);
        Servlets(Arc::new(Settings {
            servlets: sc.servlets.clone(),
            root: sc.root.clone(),
            valid: cfg.site.static_files.open_file_cache_valid,
            follow_outside: sc.static_files.symlinks_outside_root,
            protected: Protected::collect_with(cfg, false),
            shared_site: sc.hosts.join(",").into_bytes(),
        }))
    }
}

thread_local! {
    /// This worker's Lua states, one per site with servlets, each for
    /// the settings it was made with (a worker serves one configuration).
    static STATE: RefCell<Vec<(usize, Rc<State>)>> = const { RefCell::new(Vec::new()) };
}

/// A map by servlet path.
type ByPath<V> = HashMap<Vec<u8>, V, BuildHasherDefault<PathHash>>;

/// The hash of a servlet path, eight bytes at a time (FNV-1a, a byte at
/// a time, took 90 of the 215 instructions of a hello request's look-up
/// in `modules`). Not keyed: the maps hold only servlets that exist (and
/// `errors` is emptied when full), so a request cannot grow them.
#[derive(Default)]
struct PathHash(u64);

impl PathHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for PathHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// `http::path::has_dotfile_segment`, asked only of a path with a dot
/// that starts a segment (a servlet's path has one dot, in `.lua`, and
/// splitting it into segments took 190 instructions a request).
fn has_dotfile_segment(path: &[u8]) -> bool {
    let mut from = 0;
    while let Some(i) = crate::http::grammar::find_byte(&path[from..], b'.') {
        let at = from + i;
        if at == 0 || path[at - 1] == b'/' {
            return crate::http::path::has_dotfile_segment(path);
        }
        from = at + 1;
    }
    false
}

/// A loaded servlet.
struct Module {
    /// Its `handle_request`'s slot in the state's anchors.
    slot: i64,
    meta: Meta,
    /// Until when it is used without a look at its file (None: for ever).
    /// (An Instant compared, not a Duration computed: 130 instructions
    /// less a request.)
    fresh_until: Option<Instant>,
}

/// One worker's Lua state.
struct State {
    lua: Lua,
    /// `lua`'s allocator (taken out before `lua` is closed: Drop).
    heap: Heap,
    root: Root,
    /// (FNV: the keys are the paths of servlet files.)
    modules: RefCell<ByPath<Module>>,
    /// The last error logged for each servlet, and when.
    errors: RefCell<ByPath<(String, Instant)>>,
    /// The metatable of `res` objects (their methods).
    res_mt: Table,
    /// The `res` object the anchors hold, known to its methods.
    known_res: res::Known,
    /// What a request's run pushes: the prelude's `start` (which makes
    /// the request table), each servlet's `handle_request`, the next `res`.
    anchors: Anchors,
    /// The slot in `anchors` of the next servlet loaded.
    next_slot: Cell<i64>,
    /// A coroutine that runs no servlet, for the collection after a
    /// memory error (`run::collect`).
    aside: Thread,
    /// Makes a servlet's globals (the prelude's `environment`).
    environment: Function,
    /// A finished coroutine, for the next request.
    spare: RefCell<Option<Thread>>,
    /// The last answer's `res` object and what it gathered, for the next
    /// request (taken while in use; a streamed answer keeps its own).
    spare_res: RefCell<Option<(Rc<RefCell<Out>>, res::Object)>>,
    /// A servlet ran out of memory: collect before the next request (its
    /// servlet loaded or not). Not at once: the coroutine that failed
    /// still holds what it made until it is dropped (after the answer, or
    /// after a stream's end).
    collect: Cell<bool>,
    /// The collection left the state full, but streamed answers still
    /// run on it, so it could not be made anew: until they end, every
    /// request is 503 and no collection runs again.
    full: Cell<bool>,
    settings: Arc<Settings>,
}

/// Lua code run once per state: the sandbox's edits of the standard
/// library, and the metatables of `res` objects (their methods are set
/// from Rust) and request tables.
const PRELUDE: &str = r#"
local require_native, lazy_field, form, part, brisk_lib, new_request, has_room, cpu_limit, error_text = ...
brisk = brisk_lib
-- brisk's own functions (brisk.json, brisk.shared, require...) are Rust:
-- an error one raises reaches Lua as mlua's error object, a userdata whose
-- text carries a Rust traceback, where Lua's own errors are strings, so
-- `"x" .. e` and `e:match()` failed on it. pcall, coroutine.resume and
-- xpcall's handler get its message as a string; a memory error stays as
-- it is (the run tells it by its kind).
local function text_of(e)
  if type(e) == "userdata" then return error_text(e) or e end
  return e
end
local function as_text(ok, ...)
  if ok then return ok, ... end
  return false, text_of((...))
end
local raw_pcall = pcall
pcall = function(f, ...) return as_text(raw_pcall(f, ...)) end
local rawload, raw_set = load, rawset
-- Source text only: LuaJIT's bytecode ("\27LJ") is not checked on load.
load = function(chunk, name, mode, env) return rawload(chunk, name, "t", env) end
dofile, loadfile, collectgarbage = nil, nil, nil
string.dump = nil
-- loadstring takes bytecode too; setfenv/getfenv reach other functions'
-- environments (another servlet's, brisk's prelude); jit was opened only
-- to turn the compiler on (it would let a servlet turn it off, or flush).
loadstring, setfenv, getfenv, jit = nil, nil, nil, nil
-- newproxy makes a userdata whose metatable a servlet may give a __gc:
-- LuaJIT runs finalizers with hooks off (lj_gc.c), so a finalizer that
-- loops would hold the worker past any CPU budget. Without it no servlet
-- can make a finalizer: tables take no __gc in Lua 5.1, and the only
-- userdata servlets see (`res`) hide their metatable. gcinfo is
-- collectgarbage("count"), gone with collectgarbage.
newproxy, gcinfo = nil, nil
-- print wrote to brisk's stdout: the access log by default (a servlet
-- forged its lines), or a pipe that, full, held the worker.
print = nil
local osx = os
os = { time = osx.time, clock = osx.clock, date = osx.date, difftime = osx.difftime }
require = nil
-- res's methods are C functions (ffi::res), set from Rust.
local Res = {}
local headers_mt = { __index = function(t, k) if type(k) == "string" then return rawget(t, k:lower()) end end }
-- req's fields are made on first use, from req[1] and req[2] (see
-- api::request). Its strings from req[1] (api::BASIC: in that order), by part.
local basic = { method = 1, path = 2, query = 3, remote_addr = 4, user = 5 }
local lazy = { args = 1, headers = 2, cookies = 3 }
local rawget = rawget
local Req = { __index = function(t, k)
  local b = basic[k]
  if b then
    local v = part(rawget(t, 1), b)
    raw_set(t, k, v)
    return v
  end
  if k == "body" then
    local v = rawget(t, 2) or ""
    raw_set(t, k, v)
    return v
  end
  if k == "form" then return form end
  local which = lazy[k]
  if which == nil then return nil end
  -- (Not `which == 1 and t.query or rawget(t, 1)`: with no query,
  -- `t.query` is nil and that gave args the raw header fields.)
  local src
  if which == 1 then src = t.query else src = rawget(t, 1) end
  local v = lazy_field(which, src, headers_mt)
  raw_set(t, k, v)
  return v
end }

-- Each servlet has globals of its own (`environment`, below), and what
-- all servlets of the state share is out of their reach or read-only,
-- so that one servlet cannot change another's behaviour: the metatables
-- of strings, requests and header tables are hidden (the string library
-- behind strings' methods is the real one, out of reach), and
-- brisk.json.null, which every servlet holds, is a userdata (ffi::raw::
-- null_sentinel) that holds nothing.
getmetatable("").__metatable = false
Req.__metatable = false
headers_mt.__metatable = false
local G = _G
local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end
-- LuaJIT resumes a coroutine with a C call, on the worker's stack, and
-- sets no bound of its own on how deep they nest: 50,000 nested
-- coroutine.wrap overflowed the stack and the process died. A resume
-- needs room left on it (ffi::stack), or answers as Lua 5.1's does past
-- its C-call limit: false and "C stack overflow"; wrap raises that.
--
-- res:write yields to brisk once 64 KiB are gathered (ffi::res), with
-- Res, which no servlet holds: inside a servlet's own coroutine that
-- yield reached the servlet (a generator's loop saw it as its end, and
-- the answer was cut short, silently). resume passes it on up, and
-- resumes the coroutine where it wrote once brisk resumes this one.
local co_resume, co_create, co_yield = coroutine.resume, coroutine.create, coroutine.yield
local yieldable = coroutine.isyieldable
local too_deep = "C stack overflow: coroutines nested too deep"
local resume
-- (Resumed inside a C call, such as a gsub callback, the servlet cannot
-- yield: what its coroutine wrote stays gathered until it can.)
local function passed(co, ok, mark, ...)
  if ok and mark == Res and select('#', ...) == 0 then
    if yieldable() then co_yield(Res) end
    return resume(co)
  end
  if not ok then return false, text_of(mark) end
  return ok, mark, ...
end
resume = function(co, ...)
  if not has_room() then return false, too_deep end
  return passed(co, co_resume(co, ...))
end
-- (A tail call: level 2 is the caller of wrap's function, as LuaJIT's.)
local function wrapped(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == "string" then error(e, 2) end
  error(e, 0)
end
-- A request runs on a coroutine of brisk's, which the next request
-- (another servlet's, as like as not) runs on in turn: coroutine.running()
-- gave it to the servlet, which kept it in a global and, from a later
-- request, resumed another request's streamed answer with values of its
-- choosing (that answer was cut short). coroutine.running() gives the
-- servlet's own coroutines only, and nil on the request's, as Lua 5.1
-- does on its main coroutine.
local own = setmetatable({}, { __mode = "k" })
local co_running = coroutine.running
coroutine.running = function()
  local co = co_running()
  if own[co] then return co end
  return nil
end
coroutine.create = function(f)
  local co = co_create(f)
  own[co] = true
  return co
end
coroutine.resume = resume
coroutine.wrap = function(f)
  local co = co_create(f)
  own[co] = true
  return function(...) return wrapped(resume(co, ...)) end
end
-- table.sort is one C call, in which the hook never fires: without a
-- comparator its comparisons are LuaJIT's own, and 400 references to one
-- 16 MiB string took 30 s past a 1 s cpu_time (each comparison a memcmp
-- of the whole string). With this comparator each comparison is a Lua
-- call, where the hook stops the servlet.
local raw_sort = table.sort
local function less(a, b) return a < b end
table.sort = function(t, comp) return raw_sort(t, comp or less) end
-- More C functions call Lua with a C call on the worker's stack, and
-- LuaJIT bounds none of them: string.format's %s calls __tostring, load
-- calls its reader, os.time reads its table's fields (and so __index),
-- table.sort calls the comparator (and so __lt). Nested in themselves
-- (a __tostring that formats its table with %s), they overflowed the
-- stack and the whole server died. Each asks for room first, as
-- coroutine.resume and gsub do (ffi::stack), and raises Lua's "C stack
-- overflow" without it.
local function bounded(name, f)
  local msg = name .. ": C stack overflow: calls nested too deep"
  return function(...)
    if not has_room() then error(msg, 2) end
    return f(...)
  end
end
string.format = bounded("string.format", string.format)
table.sort = bounded("table.sort", table.sort)
os.time = bounded("os.time", os.time)
rawload = bounded("load", rawload)
-- LuaJIT calls xpcall's handler before it unwinds: for the CPU limit's
-- error that is still inside the hook that raised it (ffi::cpu), where
-- no hook fires, so a handler that looped held the worker for ever,
-- past any budget (and SIGTERM). That error is never handed to the
-- servlet's handler: it goes on as it is, and the hook raises it again
-- at the servlet's next instruction. Any other error's handler runs
-- with hooks on, so one that runs too long is stopped ("error in error
-- handling").
local raw_xpcall = xpcall
xpcall = function(f, handler, ...)
  if type(handler) ~= "function" then return raw_xpcall(f, handler, ...) end
  return raw_xpcall(f, function(e)
    if e == cpu_limit then return e end
    return handler(text_of(e))
  end, ...)
end
-- table.insert(t, pos, v) moves the elements from #t + 1 down to pos in
-- one C loop (LuaJIT's lib_table.c), where the hook never fires: a
-- position of -1e9 (or 2^31, read as -2^31) held the worker for
-- minutes. Refused below 1 and from 2^31 on, as Lua 5.2 refuses a
-- position out of bounds; any other call is LuaJIT's.
local raw_insert = table.insert
table.insert = function(...)
  if select('#', ...) == 3 then
    local t, pos = ...
    local p = type(t) == "table" and tonumber(pos)
    if p and not (p >= 1 and p < 2^31) then
      error("bad argument #2 to 'insert' (position out of bounds)", 2)
    end
  end
  return raw_insert(...)
end
-- A servlet's globals (made once per load, not per request): the base
-- functions, and copies of the library tables (string, table, math, os,
-- bit, coroutine, brisk and its json and shared), which it may change
-- for itself alone; `_G` is this table. `load` gives chunks these
-- globals (not the state's), and `require` runs each module once per
-- servlet, with these globals: what a module defines is the servlet's.
-- Copies rather than read-only proxies: `pairs(string)` works, and a
-- library function is one table lookup, as before.
local function environment()
  local env = {}
  for k, v in next, G do
    if type(v) == "table" and k ~= "_G" then v = copy(v) end
    env[k] = v
  end
  env._G = env
  local b = env.brisk
  b.json, b.shared = copy(b.json), copy(b.shared)
  env.load = function(chunk, name, mode, e) return rawload(chunk, name, "t", e or env) end
  -- (require "bit", as much LuaJIT code starts, and the other libraries
  -- by name, as Lua's package.loaded has them: the servlet's copies.)
  local loaded, loading = {
    _G = env, string = env.string, table = env.table, math = env.math,
    os = env.os, bit = env.bit, coroutine = env.coroutine,
  }, {}
  env.require = function(name)
    local v = loaded[name]
    if v ~= nil then return v end
    if loading[name] then error("require " .. tostring(name) .. ": required while it loads", 2) end
    loading[name] = true
    -- (A module's top level may require another: Rust frames between.)
    if not has_room() then error("require: C stack overflow: calls nested too deep", 2) end
    local ok, r = pcall(require_native, name, env)
    loading[name] = nil
    if not ok then error(r, 0) end
    if r == nil then r = true end
    loaded[name] = r
    return r
  end
  return env
end
-- A servlet's run (run::prepare): its request table, made inside the run
-- (under its CPU budget), then the servlet, in a tail call.
local function start(handle, res) return handle(new_request(Req), res) end
return Res, start, environment
"#;

impl Drop for State {
    fn drop(&mut self) {
        // mlua's allocator back before the state is closed (after this,
        // when `lua` drops): the heap is freed with this struct.
        self.heap.uninstall(&self.lua);
    }
}

impl State {
    fn new(settings: Arc<Settings>) -> mlua::Result<State> {
        // LuaJIT (Lua 5.1): `coroutine` is part of the base library, `bit`
        // stands in for 5.3's bitwise operators, no `utf8`. JIT: opening
        // it turns the compiler on (the prelude then hides `jit`).
        let libs =
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::OS | StdLib::BIT | StdLib::JIT;
        // Budgets need this thread's CPU timer.
        cpu::prepare(settings.servlets.cpu_time)
            .map_err(|e| mlua::Error::runtime(format!("the CPU-time timer: {e}")))?;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        let limit = usize::try_from(settings.servlets.memory).unwrap_or(usize::MAX);
        // mlua's limit first: with one set, mlua guards the calls that
        // may fail to allocate; then brisk's allocator takes over with
        // the same limit (and a cache of small blocks).
        lua.set_memory_limit(limit)?;
        let heap = Heap::install(&lua, limit)?;
        // The collector starts a cycle when the heap has grown to 4 times
        // what was live after the last one (Lua's default: 2): a cycle
        // marks everything live, so half as many cycles halve that work.
        // Bench scenario 10 (JSON of 100 items): 4.1 % fewer instructions
        // a request (callgrind), for 236 KiB more RSS in the worker.
        // Generational mode cost more there (+3 to +8 %), and pauses of
        // 600 and 1000 gained no more than 400. The memory limit still
        // holds: an allocation it refuses runs a full collection first.
        lua.gc_set_mode(LuaGcMode::Incremental(
            LuaGcIncParams::default().pause(GC_PAUSE),
        ));
        let root =
            Root::open(&settings.root, settings.follow_outside).map_err(mlua::Error::external)?;
        let require = lua.create_function(|lua, (name, env): (mlua::LuaString, Table)| {
            let state = lua
                .app_data_ref::<std::rc::Weak<State>>()
                .and_then(|w| w.upgrade())
                .ok_or_else(|| mlua::Error::runtime("require: no state"))?;
            state.require(&name.to_str()?, env)
        })?;
        let form = lua.create_function(|lua, req: Table| api::form(lua, &req))?;
        let lazy = lua.create_function(|lua, (which, src, mt): (i64, Value, Table)| {
            api::lazy_field(lua, which, src, &mt)
        })?;
        strings::install(&lua, &lua.globals().raw_get("string")?)?;
        let (res_mt, start, environment): (Table, Function, Function) =
            lua.load(PRELUDE).set_name("=brisk").call((
                require,
                lazy,
                form,
                req::part_function(&lua)?,
                api::library(&lua, &settings.shared_site)?,
                req::new_request_function(&lua)?,
                ffi::stack::has_room_function(&lua)?,
                cpu::CPU_LIMIT,
                lua.create_function(|lua, e: Value| error_text(lua, e))?,
            ))?;
        // LuaJIT seeds math.random the same at every start: the same
        // "random" numbers in every worker, every run. Seeded from the
        // OS's randomness (std's RandomState keys); still not for
        // secrets (the docs say so).
        let seed = {
            use std::hash::BuildHasher as _;
            std::collections::hash_map::RandomState::new().hash_one(0u8) >> 11
        };
        let math: Table = lua.globals().raw_get("math")?;
        math.raw_get::<Function>("randomseed")?
            .call::<()>(seed as f64)?;
        let known_res = res::set_up_metatable::<Out>(&lua, &res_mt)?;
        let anchors = Anchors::new(&lua, &start)?;
        let aside = lua.create_thread(environment.clone())?;
        Ok(State {
            lua,
            heap,
            root,
            modules: RefCell::new(HashMap::default()),
            errors: RefCell::new(HashMap::default()),
            res_mt,
            known_res,
            anchors,
            next_slot: Cell::new(run::FIRST_HANDLE),
            aside,
            environment,
            spare: RefCell::new(None),
            spare_res: RefCell::new(None),
            collect: Cell::new(false),
            full: Cell::new(false),
            settings,
        })
    }

    /// This thread's state for `settings`, made on first use.
    fn get(settings: &Arc<Settings>) -> Result<Rc<State>, String> {
        let key = Arc::as_ptr(settings) as usize;
        STATE.with(|s| {
            if let Some((_, st)) = s.borrow().iter().find(|(k, _)| *k == key) {
                return Ok(Rc::clone(st));
            }
            let st = Rc::new(State::new(Arc::clone(settings)).map_err(|e| e.to_string())?);
            st.lua.set_app_data(Rc::downgrade(&st));
            s.borrow_mut().push((key, Rc::clone(&st)));
            Ok(st)
        })
    }

    /// A new state for `settings` in place of this thread's (which lives
    /// on while anything still holds it).
    fn remake(settings: &Arc<Settings>) -> Result<Rc<State>, String> {
        let key = Arc::as_ptr(settings) as usize;
        STATE.with(|s| s.borrow_mut().retain(|(k, _)| *k != key));
        State::get(settings)
    }

    /// The collection after a memory error; whether it left the state
    /// room to serve: at least half of `servlets.memory` free. (What
    /// servlets keep in their globals is not garbage: without this, one
    /// servlet filling them would fail every other one of the site on
    /// this worker until a reload.)
    fn collected(&self) -> bool {
        // Outside any CPU budget, and safely so: no servlet can make
        // a finalizer (the prelude), so the collection runs only
        // LuaJIT's sweep and brisk's own `__gc`s (Rust), over at most
        // `servlets.memory`.
        let _ = run::collect(&self.aside, &self.anchors);
        let (used, limit) = self.heap.used_of_limit();
        used <= limit / 2
    }

    /// Reads `rel` beneath the root; one of the files brisk itself reads
    /// (its configuration named `x.lua`) is not there. A file larger
    /// than `servlets.memory` is refused unread (`FileTooLarge`): read
    /// whole into the worker, outside that limit, a 1 GiB sparse file
    /// took the worker to 2 GiB (no state could hold its code anyway).
    fn read(&self, rel: &[u8]) -> std::io::Result<(String, Meta)> {
        let (f, meta) = self.root.open_file(rel)?;
        if self.settings.protected.contains(&meta) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        let limit = self.settings.servlets.memory;
        let too_large = || {
            std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!("larger than servlets.memory ({limit} bytes): not loaded"),
            )
        };
        if meta.size > limit {
            return Err(too_large());
        }
        // (Bounded as it is read too: the file may grow meanwhile.)
        let mut text = String::new();
        f.take(limit.saturating_add(1)).read_to_string(&mut text)?;
        if text.len() as u64 > limit {
            return Err(too_large());
        }
        Ok((text, meta))
    }

    /// `require(name)` for the servlet whose globals are `env`: `a.b` is
    /// `a/b.lua` in one of the servlet prefixes' directories, run with
    /// `env` as its globals (once per servlet: the prelude's `require`
    /// keeps what it returned).
    fn require(&self, name: &str, env: Table) -> mlua::Result<Value> {
        let ok = !name.is_empty()
            && name.split('.').all(|p| {
                !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
        if !ok {
            return Err(mlua::Error::runtime(format!(
                "require {name:?}: a module name is words joined by dots (a.b for a/b.lua)"
            )));
        }
        let file = format!("{}.lua", name.replace('.', "/"));
        for prefix in &self.settings.servlets.paths {
            let rel = format!("{}{file}", &prefix[1..]);
            let text = match self.read(rel.as_bytes()) {
                Ok((text, _)) => text,
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    return Err(mlua::Error::runtime(format!("require {name:?}: {rel} {e}")));
                }
                Err(_) => continue,
            };
            let v: Value = self
                .lua
                .load(text)
                .set_name(format!("@{rel}"))
                .set_mode(ChunkMode::Text)
                .set_environment(env)
                .call(())?;
            return Ok(v);
        }
        Err(mlua::Error::runtime(format!(
            "require {name:?}: no {file} in the servlet directories"
        )))
    }

    /// Loads (or reloads) the servlet at `rel`, running its
    /// `handler_init`: its `handle_request`, or why it cannot run (with a
    /// 404 for a file that is not there).
    fn load(&self, rel: &[u8], url: &[u8], now: Instant) -> Result<i64, Failure> {
        let mut modules = self.modules.borrow_mut();
        let mut slot = None;
        if let Some(m) = modules.get_mut(rel) {
            if m.fresh_until.is_none_or(|t| now < t) {
                return Ok(m.slot);
            }
            if let Ok((_, meta)) = self.root.stat(rel) {
                if same_file(&meta, &m.meta) {
                    m.fresh_until = now.checked_add(self.settings.valid);
                    return Ok(m.slot);
                }
            }
            slot = Some(m.slot);
        }
        drop(modules);
        let (text, meta) = self.read(rel).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Failure::NotFound,
            std::io::ErrorKind::FileTooLarge => Failure::Error(e.to_string()),
            // (Not a file: only a directory is no error of the site's.)
            _ if self.root.stat(rel).is_ok_and(|(_, m)| m.kind == Kind::Dir) => Failure::Directory,
            _ => Failure::Forbidden(e.to_string()),
        })?;
        let name = String::from_utf8_lossy(rel).into_owned();
        let env: Table = self.environment.call(()).map_err(|e| self.lua_failure(e))?;
        let chunk = self
            .lua
            .load(text)
            .set_name(format!("@{name}"))
            .set_mode(ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| self.lua_failure(e))?;
        // (In a coroutine, as requests: under the CPU budget.)
        let thread = self.thread(&chunk).map_err(|e| self.lua_failure(e))?;
        self.resume::<()>(&thread, (), self.budget())?;
        if thread.status() == ThreadStatus::Resumable {
            return Err(Failure::Error(format!("{name}: may not yield when loaded")));
        }
        let handle: Function = env
            .raw_get::<Option<Function>>("handle_request")
            .map_err(|e| self.lua_failure(e))?
            .ok_or_else(|| {
                Failure::Error(format!("{name}: defines no handle_request(req, res)"))
            })?;
        if let Some(init) = env
            .raw_get::<Option<Function>>("handler_init")
            .map_err(|e| self.lua_failure(e))?
        {
            let cfg = self.init_table(url).map_err(|e| self.lua_failure(e))?;
            let thread = self.thread(&init).map_err(|e| self.lua_failure(e))?;
            self.resume::<()>(&thread, cfg, self.budget())?;
            if thread.status() == ThreadStatus::Resumable {
                return Err(Failure::Error(format!(
                    "{name}: handler_init may not write"
                )));
            }
        }
        // (A servlet loaded again keeps its slot.)
        let slot = slot.unwrap_or_else(|| {
            let s = self.next_slot.get();
            self.next_slot.set(s + 1);
            s
        });
        self.anchors
            .set_handle(slot, handle)
            .map_err(|e| self.lua_failure(e))?;
        self.modules.borrow_mut().insert(
            rel.to_vec(),
            Module {
                slot,
                meta,
                fresh_until: now.checked_add(self.settings.valid),
            },
        );
        Ok(slot)
    }

    /// `cfg` for `handler_init`: `config` (the `[servlets]` table),
    /// `root` and `url`.
    fn init_table(&self, url: &[u8]) -> mlua::Result<Table> {
        let t = self.lua.create_table()?;
        t.raw_set(
            "config",
            value_to_lua(&self.lua, &self.settings.servlets.config)?,
        )?;
        t.raw_set("root", self.settings.root.display().to_string())?;
        t.raw_set("url", self.lua.create_string(url)?)?;
        Ok(t)
    }

    /// A coroutine running `f`: the one the last request finished with,
    /// reset, or a new one.
    fn thread(&self, f: &Function) -> mlua::Result<Thread> {
        if let Some(t) = self.spare.borrow_mut().take() {
            if t.reset(f.clone()).is_ok() {
                return Ok(t);
            }
        }
        self.lua.create_thread(f.clone())
    }

    /// A request's CPU budget in timer ticks (`ffi::cpu`).
    fn budget(&self) -> u64 {
        cpu::ticks_for(self.settings.servlets.cpu_time)
    }

    /// Resumes `thread` with `args` under a CPU budget of `ticks`; the
    /// ticks it used are added to `used`.
    fn resume_counted<R: mlua::FromLuaMulti>(
        &self,
        thread: &Thread,
        args: impl mlua::IntoLuaMulti,
        ticks: u64,
        used: &mut u64,
    ) -> Result<R, Failure> {
        cpu::resume(thread, args, ticks, used).map_err(|e| self.failure(e))
    }

    /// [`State::resume_counted`] for a whole budget.
    fn resume<R: mlua::FromLuaMulti>(
        &self,
        thread: &Thread,
        args: impl mlua::IntoLuaMulti,
        ticks: u64,
    ) -> Result<R, Failure> {
        self.resume_counted(thread, args, ticks, &mut 0)
    }

    /// What an error from Lua (with the coroutine's traceback, which
    /// mlua adds) means for the answer.
    fn failure(&self, e: mlua::Error) -> Failure {
        if cpu::stopped() {
            return Failure::Cpu;
        }
        if is_memory(&e) {
            self.collect.set(true);
            return Failure::Error(format!("servlets.memory exceeded: {e}"));
        }
        self.lua_failure(e)
    }

    /// An error from the Lua API outside a servlet's run. A memory error
    /// (here or in [`State::failure`]) has the state collect before its
    /// next request: what was made is garbage once the coroutine that
    /// made it goes.
    fn lua_failure(&self, e: mlua::Error) -> Failure {
        if is_memory(&e) {
            self.collect.set(true);
        }
        Failure::Error(e.to_string())
    }
}

/// The message of an error a Rust function of brisk's raised, as mlua
/// hands it to Lua (a userdata), without mlua's traceback, for the
/// prelude's `pcall`; nil for a memory error, which stays as it was, and
/// for any other value.
fn error_text(lua: &Lua, e: Value) -> mlua::Result<Value> {
    fn message(e: &mlua::Error) -> String {
        match e {
            mlua::Error::CallbackError { cause, .. } => message(cause),
            mlua::Error::WithContext { context, cause } => format!("{context}: {}", message(cause)),
            mlua::Error::RuntimeError(text) => text.clone(),
            e => e.to_string(),
        }
    }
    match e {
        Value::Error(e) if !is_memory(&e) => lua.create_string(message(&e)).map(Value::String),
        _ => Ok(Value::Nil),
    }
}

/// Whether `e` is a memory error: Lua's, or one a Rust helper raised
/// (`brisk.json.encode`...: mlua wraps it).
fn is_memory(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            is_memory(cause)
        }
        _ => false,
    }
}

/// Why a servlet did not answer.
enum Failure {
    NotFound,
    /// A directory has the servlet's name (`x.lua/`).
    Directory,
    Forbidden(String),
    Cpu,
    Error(String),
}

fn same_file(a: &Meta, b: &Meta) -> bool {
    (a.dev, a.ino, a.size, a.mtime_ns, a.ctime_ns) == (b.dev, b.ino, b.size, b.mtime_ns, b.ctime_ns)
}

/// A config value as a Lua value.
fn value_to_lua(lua: &Lua, v: &crate::config::Value) -> mlua::Result<Value> {
    use crate::config::Value as V;
    Ok(match v {
        V::String(s) | V::Datetime(s) => Value::String(lua.create_string(s)?),
        V::Integer(i) => Value::Integer(*i),
        V::Float(f) => Value::Number(*f),
        V::Boolean(b) => Value::Boolean(*b),
        V::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, value_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        V::Table(entries) => {
            let t = lua.create_table()?;
            for (k, item) in entries {
                t.raw_set(k.as_str(), value_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

impl Handler for Servlets {
    fn handle(&self, req: &Request<'_>, resp: &mut Response<'_>) {
        let rel = &req.path[1..];
        if has_dotfile_segment(req.path) {
            return not_found(resp);
        }
        let mut state = State::get(&self.0);
        if let Ok(st) = &state {
            // Streamed answers still running on the state each hold it
            // (`Piecewise`), beside this thread's list and `state`.
            let streams = Rc::strong_count(st) - 2;
            if st.full.get() && streams > 0 {
                return error_page(resp, 503);
            }
            if st.collect.take() && !st.collected() {
                let (used, limit) = st.heap.used_of_limit();
                if streams > 0 {
                    // A state made now would not replace this one, which
                    // lives on while they run: each time, another
                    // servlets.memory (64 MiB a round, without bound).
                    st.collect.set(true);
                    st.full.set(true);
                    resp.log(
                        Level::Warn,
                        format!(
                            "servlets: after servlets.memory was exceeded, the servlets' globals still hold {used} of its {limit} bytes, and {streams} streamed answers still run on the Lua state: 503 until they end, then the state is made anew"
                        ),
                    );
                    return error_page(resp, 503);
                }
                resp.log(
                    Level::Warn,
                    format!(
                        "servlets: after servlets.memory was exceeded, the servlets' globals still hold {used} of its {limit} bytes; the Lua state is made anew (every servlet's globals and handler_init start again)"
                    ),
                );
                state = State::remake(&self.0);
            }
        }
        let state = match state {
            Ok(s) => s,
            Err(e) => {
                resp.log(
                    Level::Error,
                    format!("servlets: cannot make a Lua state: {e}"),
                );
                return resp.set_status(500);
            }
        };
        let now = Instant::now();
        let slot = match state.load(rel, req.path, now) {
            Ok(s) => s,
            Err(Failure::Directory) => return to_directory(req, resp),
            Err(f) => return state.answer_failure(rel, f, resp, now),
        };
        if let Err(f) = state.run(rel, slot, req, resp) {
            state.answer_failure(rel, f, resp, now);
        }
    }
}

fn not_found(resp: &mut Response<'_>) {
    error_page(resp, 404);
}

/// A directory named as a servlet (`x.lua/`) is no servlet: it is
/// answered as the static files answer a directory asked for without
/// its `/` (301 to it, the query kept), and below it they answer.
fn to_directory(req: &Request<'_>, resp: &mut Response<'_>) {
    let (raw_path, query) = crate::http::path::split_target(req.target);
    let location = crate::handlers::static_files::with_slash(raw_path, query);
    error_page(resp, 301);
    let _ = resp.header("Location", &String::from_utf8_lossy(&location));
}

/// Answers `status` with brisk's error page (what the servlet wrote is
/// dropped), or the site's own for it (`[errors]`).
fn error_page(resp: &mut Response<'_>, status: u16) {
    resp.raw_headers(b"");
    resp.body().clear();
    resp.set_status(status);
    resp.own_error();
    let _ = resp.header("Content-Type", "text/html; charset=utf-8");
    resp.write(crate::handlers::error_page::page(crate::http::Status(
        status,
    )));
}

impl State {
    /// Runs the servlet at `rel` (its `handle_request` in the anchors'
    /// `slot`) for `req`.
    fn run(
        self: &Rc<Self>,
        rel: &[u8],
        slot: i64,
        req: &Request<'_>,
        resp: &mut Response<'_>,
    ) -> Result<(), Failure> {
        let (out, res) = self.res_object()?;
        // handle_request runs as the coroutine itself: an error ends it,
        // with its traceback (`run::resume`).
        let thread = match self.spare.borrow_mut().take() {
            Some(t) => t,
            None => self
                .lua
                .create_thread(self.environment.clone())
                .map_err(|e| self.lua_failure(e))?,
        };
        run::prepare(&thread, &self.anchors, slot).map_err(|e| self.lua_failure(e))?;
        let ticks = self.budget();
        let mut spent = 0;
        let running = api::Running::start(&out);
        let ran = api::request(req, || {
            let start = cpu::ticks();
            let mut ran = run::resume(&self.lua, &thread, 2, ticks, &mut spent)?;
            // A yield that wrote nothing (its own coroutine.yield()) is
            // resumed at once, the ticks between counted (as `Piecewise`
            // does): a loop of them runs out of its budget here, before
            // the head, and is the CPU limit's 503 (made a streamed
            // answer, its failing first piece was a 500).
            while ran == Ran::Yielded && out.borrow().body.is_empty() {
                spent = spent.max(cpu::ticks() - start);
                let left = ticks.saturating_sub(spent);
                ran = run::resume(&self.lua, &thread, 0, left, &mut spent)?;
            }
            Ok(ran)
        })
        .map_err(|e| self.failure(e))?;
        drop(running);
        let mut o = out.borrow_mut();
        resp.set_status(o.status);
        resp.raw_headers(&o.headers);
        if ran == Ran::Finished {
            // The gathered bytes change places with the answer's buffer
            // (empty, its room kept for the next answer): no copy.
            let body = resp.body();
            if body.is_empty() {
                std::mem::swap(body, &mut o.body);
            } else {
                body.extend_from_slice(&o.body);
            }
            drop(o);
            *self.spare.borrow_mut() = Some(thread);
            *self.spare_res.borrow_mut() = Some((out, res));
            return Ok(());
        }
        // A piece is gathered and more may follow: the head leaves now.
        o.head_sent = true;
        drop(o);
        resp.stream(
            Piecewise {
                state: Rc::clone(self),
                thread,
                out,
                left: ticks.saturating_sub(spent),
                ran,
                rel: rel.to_vec(),
            },
            None,
        );
        Ok(())
    }

    /// The `res` object for a request and what it gathers, empty: the
    /// last answer's when it is free (its buffers keep their room), else
    /// a new one.
    fn res_object(&self) -> Result<(Rc<RefCell<Out>>, res::Object), Failure> {
        let max = self.settings.servlets.max_output;
        if let Some((out, res)) = self.spare_res.borrow_mut().take() {
            out.borrow_mut().reset(max);
            return Ok((out, res));
        }
        let mut out = Out::default();
        out.reset(max);
        let out = Rc::new(RefCell::new(out));
        let res = res::new_object(&self.lua, Rc::clone(&out), &self.res_mt)
            .map_err(|e| self.lua_failure(e))?;
        // (The anchors hold the spare `res`, when there is one: this one.)
        self.anchors
            .set_res(&res, &self.known_res)
            .map_err(|e| self.lua_failure(e))?;
        Ok((out, res))
    }

    /// Answers a failure: 404, 403, 503 (CPU time) or 500, logging
    /// the reason (at most once a minute for the same one).
    fn answer_failure(&self, rel: &[u8], f: Failure, resp: &mut Response<'_>, now: Instant) {
        let (status, why) = match f {
            Failure::NotFound | Failure::Directory => return not_found(resp),
            Failure::Forbidden(why) => (403, why),
            Failure::Cpu => (
                503,
                format!(
                    "stopped: {CPU_LIMIT} ({:?})",
                    self.settings.servlets.cpu_time
                ),
            ),
            Failure::Error(why) => (500, why),
        };
        if self.should_log(rel, &why, now) {
            // The message, then each line of its traceback (one frame
            // each) as a line of its own, indented, rather than one line
            // with its line breaks escaped.
            let rel = String::from_utf8_lossy(rel);
            for (i, line) in why.lines().enumerate() {
                let line = match i {
                    0 => format!("servlet {rel}: {line}"),
                    _ => format!("servlet {rel}:   {}", line.trim_start()),
                };
                resp.log(Level::Error, line);
            }
        }
        error_page(resp, status);
    }

    /// Whether to log `why` for the servlet at `rel`: not if the same
    /// was logged less than a minute ago.
    fn should_log(&self, rel: &[u8], why: &str, now: Instant) -> bool {
        let mut errors = self.errors.borrow_mut();
        if let Some((w, at)) = errors.get(rel) {
            if w == why && now.saturating_duration_since(*at) < ERROR_EVERY {
                return false;
            }
        }
        if errors.len() >= MAX_ERRORS_KEPT {
            errors.clear();
        }
        errors.insert(rel.to_vec(), (why.to_string(), now));
        true
    }
}

/// The rest of a servlet's answer, resumed as the client takes it.
struct Piecewise {
    state: Rc<State>,
    thread: Thread,
    out: Rc<RefCell<Out>>,
    /// Ticks of its CPU budget left (`ffi::cpu`).
    left: u64,
    /// How its last part ended.
    ran: Ran,
    rel: Vec<u8>,
}

impl Drop for Piecewise {
    fn drop(&mut self) {
        // Its `Out` lives on until Lua collects the `res` that holds it,
        // which may be long: what the answer's buffers grew to (up to
        // servlets.max_output each) is freed now. Kept, each streamed
        // answer left its largest piece behind, and 40 clients at a
        // time of an 8 MiB answer added 300 MB a round to the worker.
        if let Ok(mut o) = self.out.try_borrow_mut() {
            let max = o.max;
            *o = Out::default();
            o.max = max;
        }
    }
}

impl BodyStream for Piecewise {
    fn fill(&mut self, buf: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
        // The whole of this call is the servlet's: a yield that wrote
        // nothing (its own coroutine.yield()) is resumed at once, and
        // the ticks between resumes are counted too. Counted per resume
        // only, a servlet yielding in a loop held the worker 4.6 s with
        // cpu_time = 1s.
        let (start, left) = (cpu::ticks(), self.left);
        loop {
            {
                let mut o = self.out.borrow_mut();
                if !o.body.is_empty() {
                    // (Swapped, not copied, when `buf` is empty: a
                    // servlet's 8 MiB write was held twice while it went.)
                    if buf.is_empty() {
                        std::mem::swap(buf, &mut o.body);
                    } else {
                        buf.append(&mut o.body);
                    }
                    return Ok(self.ran == Ran::Yielded);
                }
            }
            if self.ran == Ran::Finished {
                return Ok(false);
            }
            let st = &self.state;
            self.left = left.saturating_sub(cpu::ticks() - start);
            let running = api::Running::start(&self.out);
            let r = run::resume(&st.lua, &self.thread, 0, self.left, &mut 0);
            drop(running);
            self.left = left.saturating_sub(cpu::ticks() - start);
            let failure = match r {
                Ok(ran) => {
                    self.ran = ran;
                    continue;
                }
                Err(e) => st.failure(e),
            };
            let why = match failure {
                Failure::Cpu => format!("stopped: {CPU_LIMIT}"),
                Failure::Error(why) | Failure::Forbidden(why) => why,
                Failure::NotFound | Failure::Directory => String::new(),
            };
            return Err(format!(
                "servlet {}: {why}",
                String::from_utf8_lossy(&self.rel)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state with the default `[servlets]` settings.
    fn state() -> State {
        let settings = Settings {
            servlets: Config::default().site.servlets,
            root: std::env::temp_dir(),
            valid: Duration::ZERO,
            follow_outside: false,
            protected: Protected::default(),
            shared_site: Vec::new(),
        };
        State::new(Arc::new(settings)).unwrap()
    }

    #[test]
    fn dotfile_segments_as_the_path_module_finds_them() {
        for path in [
            &b"/servlets/hello.lua"[..],
            b"/servlets/.hidden.lua",
            b"/.servlets/x.lua",
            b"/servlets//.x",
            b"/.well-known/x.lua",
            b"/.well-known/.x.lua",
            b"/a.b/c.d.lua",
            b"/servlets/x.lua/.",
            b".x",
            b"/",
            b"",
            b"/x/../y.lua",
        ] {
            assert_eq!(
                has_dotfile_segment(path),
                crate::http::path::has_dotfile_segment(path),
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn paths_hash_apart() {
        use std::hash::BuildHasher;
        let h = BuildHasherDefault::<PathHash>::default();
        let paths: [&[u8]; 5] = [
            b"servlets/a.lua",
            b"servlets/b.lua",
            b"servlets/a.lua\0",
            b"",
            b"servlets/hello.lua",
        ];
        let hashes: std::collections::HashSet<u64> =
            paths.iter().map(|p| h.hash_one(p.to_vec())).collect();
        assert_eq!(hashes.len(), paths.len());
        let mut m: ByPath<usize> = HashMap::default();
        for (i, p) in paths.iter().enumerate() {
            m.insert(p.to_vec(), i);
        }
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(m.get(*p), Some(&i));
        }
    }

    /// A servlet state runs LuaJIT with its compiler on (opening the `jit`
    /// library turns it on), while servlets cannot reach `jit`.
    #[test]
    fn the_jit_is_on() {
        let st = state();
        let loaded: Table = st.lua.named_registry_value("_LOADED").unwrap();
        let jit: Table = loaded.get("jit").unwrap();
        let status: Function = jit.get("status").unwrap();
        let on: bool = status.call(()).unwrap();
        assert!(on, "the JIT compiler is off");
        let global: Value = st.lua.globals().get("jit").unwrap();
        assert!(global.is_nil());
    }

    /// A servlet's environment: its own copies of the libraries, `_G`
    /// itself; and what making one costs (once per load; the time is
    /// LuaJIT's, built the same way in debug builds): `cargo test -p
    /// brisk-engine --lib environment -- --nocapture`.
    #[test]
    fn each_servlet_has_its_own_environment() {
        let st = state();
        let a: Table = st.environment.call(()).unwrap();
        let b: Table = st.environment.call(()).unwrap();
        for lib in ["string", "table", "math", "os", "bit", "coroutine", "brisk"] {
            let (x, y): (Table, Table) = (a.get(lib).unwrap(), b.get(lib).unwrap());
            assert_ne!(x.to_pointer(), y.to_pointer(), "{lib}");
        }
        let g: Table = a.get("_G").unwrap();
        assert_eq!(g.to_pointer(), a.to_pointer());
        let n = 2000;
        let t0 = Instant::now();
        for _ in 0..n {
            let _: Table = st.environment.call(()).unwrap();
        }
        println!("environment(): {:?} each", t0.elapsed() / n);
    }
}
