//! A servlet request's CPU-time budget (`servlets.cpu_time`), enforced
//! without a cost per Lua instruction.
//!
//! Each worker thread that runs servlets has a timer on its own CPU clock
//! (`timer_create(CLOCK_THREAD_CPUTIME_ID)`, delivered to that thread
//! alone with `SIGEV_THREAD_ID`) that fires every [`period`] of the CPU
//! time the thread uses; its signal handler counts the ticks in a
//! thread-local. A budget starts by reading that count (no system call
//! per request). Once a budget's ticks have passed, the handler sets a hook
//! with `lua_sethook`, as LuaJIT's own luajit.c stops a script on SIGINT
//! (lua_sethook only stores the hook and updates the dispatch table), and
//! the hook raises the CPU-limit error at the next instruction, and at
//! every one after, so a `pcall` in the servlet cannot swallow it.
//!
//! LuaJIT's hook belongs to the whole VM, not to one Lua thread: it fires
//! in whichever coroutine runs, so the servlet's own coroutines are
//! stopped as the request's is. JIT-compiled code checks for a hook
//! because LuaJIT is built with `LUAJIT_ENABLE_CHECKHOOK`
//! (.cargo/config.toml): a compiled `while true do end` leaves its trace
//! for the interpreter, which calls the hook. No hook is set while the
//! budget lasts: a count hook sends every instruction through the
//! interpreter's hook dispatch and stops the JIT from recording traces.
//!
//! Only ticks count: the budget is spent once `cpu_time / period + 1`
//! ticks have passed since it started, after between `cpu_time` and
//! `cpu_time + period` of the thread's CPU time. Time the thread waits
//! for a core on a busy machine (or stopped) does not count.

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use mlua::ffi;

/// The error the hook raises.
pub const CPU_LIMIT: &str = "servlets.cpu_time exceeded";

thread_local! {
    // Read and written by the signal handler (atomics on this thread
    // alone: the compiler keeps the order the handler relies on).
    /// Timer ticks so far.
    static TICKS: AtomicU64 = const { AtomicU64::new(0) };
    /// The tick count at which the running budget is spent (MAX: none).
    static END: AtomicU64 = const { AtomicU64::new(u64::MAX) };
    /// The Lua thread the running budget is for (null: none).
    static RUNNING: AtomicPtr<ffi::lua_State> = const { AtomicPtr::new(std::ptr::null_mut()) };
    /// The hook stopped a request in the running budget.
    static STOPPED: AtomicBool = const { AtomicBool::new(false) };
    /// The hook may be set: the next budget takes it off.
    static HOOKED: AtomicBool = const { AtomicBool::new(false) };
    // This thread's timer (set up on first use) and its period.
    static TIMER: Cell<Option<Timer>> = const { Cell::new(None) };
    static PERIOD: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// The last [`ticks_for`]: its budget, period and ticks.
    static LAST_TICKS: Cell<(Duration, Duration, u64)> =
        const { Cell::new((Duration::ZERO, Duration::ZERO, 0)) };
}

/// The tick period for a budget of `cpu_time`: a tenth of it, between 1
/// and 10 ms.
pub fn period(cpu_time: Duration) -> Duration {
    (cpu_time / 10).clamp(Duration::from_millis(1), Duration::from_millis(10))
}

/// The ticks a budget of `cpu_time` lasts on this thread's timer (see
/// the module's comment: one more than fit, as the first is partly spent
/// when the budget starts).
pub fn ticks_for(cpu_time: Duration) -> u64 {
    let p = match PERIOD.get() {
        Duration::ZERO => period(cpu_time),
        p => p,
    };
    // (The same every request: a division less, 45 instructions.)
    let (t, q, ticks) = LAST_TICKS.get();
    if (t, q) == (cpu_time, p) {
        return ticks;
    }
    let ticks = ticks_at(cpu_time, p);
    LAST_TICKS.set((cpu_time, p, ticks));
    ticks
}

fn ticks_at(cpu_time: Duration, period: Duration) -> u64 {
    // (In u64: a u128 division is a call to __udivti3. 2^64 ns are 584
    // years; the period is at most 10 ms.)
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let n = nanos(cpu_time).div_ceil(nanos(period).max(1));
    n.min(u64::MAX - 1).saturating_add(1)
}

/// The real-time signal the timers send.
fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// A per-thread CPU-time timer (deleted with the thread).
struct Timer(libc::timer_t);

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: a timer this thread created and nothing else deletes.
        unsafe { libc::timer_delete(self.0) };
    }
}

extern "C" fn on_tick(_: libc::c_int) {
    // Only async-signal-safe work: thread-local atomics, lua_sethook.
    let ticks = TICKS.with(|t| {
        let n = t.load(Ordering::Relaxed) + 1;
        t.store(n, Ordering::Relaxed);
        n
    });
    if ticks < END.with(|e| e.load(Ordering::Relaxed)) {
        return;
    }
    let l = RUNNING.with(|r| r.load(Ordering::Relaxed));
    if !l.is_null() {
        HOOKED.with(|h| h.store(true, Ordering::Relaxed));
        // SAFETY: RUNNING is a live thread while set (see `Budget`), and
        // lua_sethook only stores the hook's fields and rewrites the
        // dispatch table (lj_dispatch.c), as luajit.c's SIGINT handler.
        unsafe { ffi::lua_sethook(l, Some(fired), ffi::LUA_MASKCOUNT | ffi::LUA_MASKCALL, 1) };
    }
}

/// This thread's timer ticks so far: what lies between two readings is
/// CPU time the thread used (to within a tick).
pub fn ticks() -> u64 {
    TICKS.with(|t| t.load(Ordering::Relaxed))
}

/// Whether the running budget is spent.
fn spent() -> bool {
    TICKS.with(|t| t.load(Ordering::Relaxed)) >= END.with(|e| e.load(Ordering::Relaxed))
}

/// Raises the CPU-limit error in `l`.
///
/// # Safety
/// Called from a hook of `l` (which has a free stack slot).
unsafe fn raise(l: *mut ffi::lua_State) -> ! {
    STOPPED.with(|s| s.store(true, Ordering::Relaxed));
    // SAFETY: the caller's contract; no Rust value needs dropping here.
    unsafe {
        ffi::lua_pushlstring(l, CPU_LIMIT.as_ptr().cast(), CPU_LIMIT.len());
        ffi::lua_error(l)
    }
}

/// The hook the signal handler sets: the budget was spent, or it is a
/// leftover of an earlier request (then it takes itself off).
unsafe extern "C-unwind" fn fired(l: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    // SAFETY: Lua calls hooks with a valid state inside it.
    unsafe {
        if spent() {
            raise(l);
        }
        ffi::lua_sethook(l, None, 0, 0);
    }
}

/// Sets up this thread's timer for budgets of `cpu_time`: made on first
/// use, and set to a shorter period if `cpu_time` needs one (the
/// shortest serves every budget the thread runs). Without it budgets
/// would never end: the caller does not run servlets then.
pub fn prepare(cpu_time: Duration) -> std::io::Result<()> {
    static HANDLER: Once = Once::new();
    let p = period(cpu_time);
    let now = PERIOD.get();
    if now != Duration::ZERO && now <= p {
        return Ok(());
    }
    let timer = match TIMER.take() {
        Some(t) => t,
        None => {
            let mut installed = Ok(());
            HANDLER.call_once(|| installed = install_handler());
            installed?;
            create_timer()?
        }
    };
    let spec = libc::itimerspec {
        it_interval: timespec(p),
        it_value: timespec(p),
    };
    // SAFETY: a timer of this thread, a valid itimerspec.
    let r = unsafe { libc::timer_settime(timer.0, 0, &spec, std::ptr::null_mut()) };
    TIMER.set(Some(timer));
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    PERIOD.set(p);
    Ok(())
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as _,
        tv_nsec: d.subsec_nanos() as _,
    }
}

fn install_handler() -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the handler only touches
    // thread-locals and calls lua_sethook (see `on_tick`). SA_RESTART:
    // the calls a tick interrupts go on (epoll_wait returns EINTR
    // regardless, which the event loop takes as a wake-up).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_tick as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(signal(), &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn create_timer() -> std::io::Result<Timer> {
    // SAFETY: a zeroed sigevent is valid; the fields set are those
    // SIGEV_THREAD_ID reads (signal() goes to this thread only).
    unsafe {
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = signal();
        ev.sigev_notify_thread_id = libc::gettid();
        let mut id: libc::timer_t = std::mem::zeroed();
        if libc::timer_create(libc::CLOCK_THREAD_CPUTIME_ID, &mut ev, &mut id) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Timer(id))
    }
}

/// `coroutine.resume(thread, args)` (mlua's) under a CPU budget of
/// `ticks` (see [`ticks_for`]); adds the ticks it used to `used`.
pub fn resume<R: mlua::FromLuaMulti>(
    thread: &mlua::Thread,
    args: impl mlua::IntoLuaMulti,
    ticks: u64,
    used: &mut u64,
) -> mlua::Result<R> {
    // SAFETY: `thread` is borrowed, so alive, until the budget ends.
    let budget = unsafe { Budget::start(thread.state(), ticks) };
    let r = thread.resume::<R>(args);
    *used += budget.used();
    r
}

/// `lua_resume(l, nargs)` under a CPU budget of `ticks` (see
/// [`ticks_for`]), then `then` with Lua's status (`LUA_OK`, `LUA_YIELD`
/// or an error, its value on top of `l`'s stack), still under the same
/// budget: what it runs of the servlet's (an error value's `__tostring`)
/// is stopped as the servlet is. Adds the ticks both used to `used`.
///
/// # Safety
/// `l` is a valid Lua thread, not running, whose stack holds the
/// function to start and its `nargs` arguments (a new or finished
/// thread), or `nargs` values for a yielded one.
pub unsafe fn resume_raw<T>(
    l: *mut ffi::lua_State,
    nargs: i32,
    ticks: u64,
    used: &mut u64,
    then: impl FnOnce(i32) -> T,
) -> T {
    // SAFETY: the caller's contract; `l` lives through the call.
    unsafe {
        let budget = Budget::start(l, ticks);
        let mut results = 0;
        let status = ffi::lua_resume(l, std::ptr::null_mut(), nargs, &mut results);
        let r = then(status);
        *used += budget.used();
        r
    }
}

/// A budget running: the Lua thread it is for is watched until it ends
/// (dropped).
struct Budget {
    start: u64,
}

impl Budget {
    /// Starts a budget of `ticks` (see [`ticks_for`]) for the Lua thread
    /// `l`, which is about to run (a spent budget stops it at once).
    ///
    /// # Safety
    /// `l` is a valid Lua thread that stays alive until the budget is
    /// dropped.
    unsafe fn start(l: *mut ffi::lua_State, ticks: u64) -> Budget {
        let start = TICKS.with(|t| t.load(Ordering::Relaxed));
        STOPPED.with(|s| s.store(false, Ordering::Relaxed));
        END.with(|e| e.store(start.saturating_add(ticks), Ordering::Relaxed));
        // SAFETY: the caller's contract. A hook left by an earlier
        // budget goes (it would take itself off at its next call); none
        // is set while no budget runs (RUNNING is null), so HOOKED says
        // whether one may be left (asking LuaJIT was 42 instructions).
        unsafe {
            if ticks == 0 {
                HOOKED.with(|h| h.store(true, Ordering::Relaxed));
                ffi::lua_sethook(l, Some(fired), ffi::LUA_MASKCOUNT | ffi::LUA_MASKCALL, 1);
            } else if HOOKED.with(|h| h.swap(false, Ordering::Relaxed)) {
                ffi::lua_sethook(l, None, 0, 0);
            }
        }
        compiler_fence(Ordering::SeqCst);
        RUNNING.with(|r| r.store(l, Ordering::Relaxed));
        Budget { start }
    }

    /// The ticks counted since the budget started.
    fn used(&self) -> u64 {
        TICKS.with(|t| t.load(Ordering::Relaxed)) - self.start
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        RUNNING.with(|r| r.store(std::ptr::null_mut(), Ordering::Relaxed));
        compiler_fence(Ordering::SeqCst);
        END.with(|e| e.store(u64::MAX, Ordering::Relaxed));
    }
}

/// Whether the running budget is spent, for C work that runs long
/// without returning to Lua, where the hook cannot fire (brisk's pattern
/// matcher asks every few thousand steps): it then stops, and raises
/// [`CPU_LIMIT`] as the hook does, which [`stopped`] reports. A thread
/// read of two counters; false when no budget runs.
pub fn check_spent() -> bool {
    if RUNNING.with(|r| r.load(Ordering::Relaxed)).is_null() || !spent() {
        return false;
    }
    STOPPED.with(|s| s.store(true, Ordering::Relaxed));
    true
}

/// Whether the hook stopped a request since the last budget started.
pub fn stopped() -> bool {
    STOPPED.with(|s| s.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_ticks() {
        let ms = Duration::from_millis;
        assert_eq!(period(ms(300)), ms(10));
        assert_eq!(period(ms(50)), ms(5));
        assert_eq!(period(ms(2)), ms(1));
        // 300 ms at 10: 30 whole ticks, and the first one's remainder.
        assert_eq!(ticks_at(ms(300), ms(10)), 31);
        assert_eq!(ticks_at(ms(50), ms(5)), 11);
        assert_eq!(ticks_at(ms(2), ms(1)), 3);
        assert_eq!(ticks_at(Duration::from_secs(1), ms(10)), 101);
        // On a thread whose timer runs faster for another budget.
        assert_eq!(ticks_at(ms(300), ms(5)), 61);
        // ticks_for keeps the last answer; another budget or period is
        // worked out afresh (a thread of its own: PERIOD is unset there).
        std::thread::spawn(move || {
            for (budget, ticks) in [(300, 31), (300, 31), (50, 11), (300, 31)] {
                assert_eq!(ticks_for(ms(budget)), ticks, "{budget}");
            }
            PERIOD.set(ms(5));
            assert_eq!(ticks_for(ms(300)), 61);
        })
        .join()
        .unwrap();
    }
}
