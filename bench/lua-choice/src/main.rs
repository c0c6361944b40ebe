//! See Cargo.toml. Prints one line per measurement: `name value`.

#[cfg(not(any(feature = "lua54", feature = "luajit")))]
fn main() {
    // The baseline for the size: the same program without Lua.
    println!("size-baseline {}", std::env::args().count());
}

#[cfg(any(feature = "lua54", feature = "luajit"))]
fn main() {
    lua::run();
}

#[cfg(any(feature = "lua54", feature = "luajit"))]
mod lua {
    use mlua::{HookTriggers, Lua, UserData, UserDataMethods, Value, VmState};
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    const HELLO: &str = r#"
local state = "not initialized"
function handler_init(cfg) state = "initialized" end
function handle_request(req, res)
  res:write(200, {["Content-Type"] = "text/plain"},
            "hello! I am a servlet and my state is " .. state .. "\n")
end
"#;

    const JSON: &str = r#"
function handle_request(req, res)
  local n = tonumber(req.query.n) or 100
  local out = {}
  for i = 1, n do
    out[i] = string.format('{"id":%d,"name":"item %d","price":%d.%02d,"tags":["a","b"]}', i, i, i * 3, i % 100)
  end
  res:write(200, {["Content-Type"] = "application/json"}, "[" .. table.concat(out, ",") .. "]")
end
"#;

    /// The response object: collects what `write` gives.
    struct Res(Rc<RefCell<Vec<u8>>>);

    impl UserData for Res {
        fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
            m.add_method("write", |_, this, (status, headers, body): (u16, mlua::Table, mlua::LuaString)| {
                let mut out = this.0.borrow_mut();
                out.clear();
                out.extend_from_slice(status.to_string().as_bytes());
                for pair in headers.pairs::<mlua::LuaString, mlua::LuaString>() {
                    let (k, v) = pair?;
                    out.extend_from_slice(&k.as_bytes());
                    out.extend_from_slice(&v.as_bytes());
                }
                out.extend_from_slice(&body.as_bytes());
                Ok(())
            });
        }
    }

    fn cpu_ns() -> u128 {
        let mut ts = std::mem::MaybeUninit::<[i64; 2]>::uninit();
        // Portable enough for a bench: std has no CPU clock.
        let t = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let _ = &mut ts;
        t.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0)
    }

    fn per_call(lua: &Lua, src: &str, n: usize) -> f64 {
        lua.load(src).exec().unwrap();
        if let Ok(init) = lua.globals().get::<mlua::Function>("handler_init") {
            init.call::<()>(lua.create_table().unwrap()).unwrap();
        }
        let f: mlua::Function = lua.globals().get("handle_request").unwrap();
        let buf = Rc::new(RefCell::new(Vec::new()));
        let res = lua.create_userdata(Res(Rc::clone(&buf))).unwrap();
        // Warm up (and let LuaJIT compile), then measure.
        let call = || {
            // A request table per call, as a server makes one per request.
            let req = lua.create_table().unwrap();
            let q = lua.create_table().unwrap();
            q.set("n", "100").unwrap();
            req.set("query", q).unwrap();
            req.set("method", "GET").unwrap();
            req.set("path", "/servlets/hello.lua").unwrap();
            f.call::<()>((req, &res)).unwrap();
        };
        for _ in 0..n / 10 {
            call();
        }
        let t0 = cpu_ns();
        for _ in 0..n {
            call();
        }
        (cpu_ns() - t0) as f64 / n as f64
    }

    /// Whether an instruction-count hook stops `loop_src` within `limit`.
    fn stops(loop_src: &'static str, jit_off: bool) -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let lua = Lua::new();
            if jit_off {
                let _ = lua.load("if jit then jit.off() end").exec();
            }
            let deadline = Instant::now() + Duration::from_millis(200);
            lua.set_hook(HookTriggers::new().every_nth_instruction(10_000), move |_, _| {
                if Instant::now() > deadline {
                    Err(mlua::Error::runtime("CPU time limit"))
                } else {
                    Ok(VmState::Continue)
                }
            })
            .unwrap();
            let t0 = Instant::now();
            let r = lua.load(loop_src).exec();
            let _ = tx.send(format!("{} after {} ms", if r.is_err() { "stopped" } else { "ended" }, t0.elapsed().as_millis()));
        });
        rx.recv_timeout(Duration::from_secs(3))
            .unwrap_or_else(|_| "NOT stopped within 3 s (the hook does not fire in compiled code)".into())
    }

    fn memory_limit() -> String {
        let lua = Lua::new();
        match lua.set_memory_limit(8 << 20) {
            Err(e) => format!("unsupported ({e})"),
            Ok(_) => {
                let r = lua.load("local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 100) .. i end").exec();
                match r {
                    Err(mlua::Error::MemoryError(_)) => "8 MiB limit enforced (memory error)".into(),
                    Err(e) => format!("error: {e}"),
                    Ok(()) => "not enforced".into(),
                }
            }
        }
    }

    pub fn run() {
        let lua = Lua::new();
        let v: String = lua.load("return _VERSION .. (jit and (' ' .. jit.version) or '')").eval().unwrap();
        println!("version {v}");
        println!("hello-ns-per-call {:.0}", per_call(&Lua::new(), HELLO, 200_000));
        println!("json100-ns-per-call {:.0}", per_call(&Lua::new(), JSON, 20_000));
        println!("cpu-limit-while-true {}", stops("while true do end", false));
        println!("cpu-limit-counting-loop {}", stops("local i = 0 while true do i = i + 1 end", false));
        println!("cpu-limit-counting-loop-jit-off {}", stops("local i = 0 while true do i = i + 1 end", true));
        println!("memory-limit {}", memory_limit());
        let _: Value = Value::Nil;
    }
}
