//! Lua servlets (`[servlets]`), on the wire: the Gerbil example as
//! written, the request and response API, forms, reloads, the limits
//! and the sandbox inside Lua.
use crate::common;

use std::fs;

use common::*;

const HELLO: &str = r#"local state = "not initialized"
function handler_init(cfg) state = "initialized" end
function handle_request(req, res)
  res:write(200, {["Content-Type"] = "text/plain"},
            "hello! I am a servlet and my state is " .. state .. "\n")
end
"#;

const CONFIG: &str = "[servlets]\nenable = true\npaths = [\"/servlets/\"]\nconfig = { greeting = \"hello\" }\ncpu_time = \"300ms\"\nmemory = \"16MiB\"\nmax_output = \"1MiB\"\n\n[static]\nopen_file_cache_valid = 0\n";

fn server(files: &[(&str, &str)]) -> Server {
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes());
    for (name, text) in files {
        b.file(name, text.as_bytes());
    }
    b.config(CONFIG);
    b.start()
}

fn get(s: &Server, path: &str) -> Response {
    s.request(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
}

#[test]
fn the_gerbil_example_works_as_written() {
    let s = server(&[]);
    let r = get(&s, "/servlets/hello.lua");
    let body = "hello! I am a servlet and my state is initialized\n";
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n", body.len())
    );
    assert_eq!(r.text(), body);
}

#[test]
fn the_response_object_takes_numbers_and_refuses_misuse() {
    let s = server(&[
        ("servlets/nums.lua", "function handle_request(req, res) res:write(200, {['X-N'] = 5}, 42) res:write(1.5) end"),
        // Its metatable is hidden: no servlet reaches __gc.
        ("servlets/mt.lua", "function handle_request(req, res) res:write(tostring(getmetatable(res))) end"),
        ("servlets/other.lua", "function handle_request(req, res) res.write({}, 'x') end"),
        ("servlets/types.lua", "function handle_request(req, res) res:write(200, 'not a table') end"),
        ("servlets/status.lua", "function handle_request(req, res) res:set_status(99) end"),
        // 205 has no content (RFC 9110 §15.3.6): went out with one, as "Unknown".
        ("servlets/reset.lua", "function handle_request(req, res) res:write(205, {}, 'content') end"),
        ("servlets/reset2.lua", "function handle_request(req, res) res:write('content') res:set_status(205) end"),
        ("servlets/reset3.lua", "function handle_request(req, res) res:set_status(205) end"),
    ]);
    let r = get(&s, "/servlets/nums.lua");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-N"), Some("5"));
    assert_eq!(r.text(), "421.5");
    assert_eq!(get(&s, "/servlets/mt.lua").text(), "false");
    for (path, why) in [
        ("other", "res:write: call it as a method of a response"),
        ("types", "res:write: the headers are a table"),
        ("status", "99 is not a final status"),
        ("reset", "a 205 (Reset Content) answer has no body"),
        ("reset2", "a 205 (Reset Content) answer has no body"),
    ] {
        assert_eq!(get(&s, &format!("/servlets/{path}.lua")).status, 500);
        let line = s.wait_stderr_line(&format!("servlet servlets/{path}.lua"));
        assert!(line.contains(why), "{line}");
    }
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    let r = get(&s, "/servlets/reset3.lua");
    assert!(
        r.masked_head()
            .starts_with("HTTP/1.1 205 Reset Content\r\n")
            && r.body.is_empty(),
        "{}",
        r.masked_head()
    );
}

/// A servlet cannot set a field of the connection (RFC 9110 §7.6.1):
/// over HTTP/1.1 its `Keep-Alive` or `Upgrade` went out as set, while
/// HTTP/2 and HTTP/3 dropped them and brisk drops a CGI program's. Each
/// is refused, as `Connection` is.
const HOP_BY_HOP: &[(&str, &str)] = &[
    (
        "servlets/hop.lua",
        r#"function handle_request(req, res)
  for _, name in ipairs({"Keep-Alive", "Upgrade", "proxy-connection", "TE", "Trailer", "Connection"}) do
    local ok, err = pcall(res.header, res, name, "x")
    res:write(ok and (name .. ": taken\n") or (tostring(err) .. "\n"))
  end
end"#,
    ),
    (
        "servlets/hop2.lua",
        "function handle_request(req, res) res:write(200, {['Keep-Alive'] = 'timeout=99'}, 'x') end",
    ),
];

#[test]
fn fields_of_the_connection_are_refused() {
    let s = server(HOP_BY_HOP);
    let r = get(&s, "/servlets/hop.lua");
    let body = "Keep-Alive belongs to the connection, which the server manages\n\
        Upgrade belongs to the connection, which the server manages\n\
        proxy-connection belongs to the connection, which the server manages\n\
        TE belongs to the connection, which the server manages\n\
        Trailer belongs to the connection, which the server manages\n\
        Connection is written by the server\n";
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    );
    assert_eq!(r.text(), body);
    // Uncaught, the error is the servlet's failure: a 500, logged.
    assert_eq!(get(&s, "/servlets/hop2.lua").status, 500);
    let line = s.wait_stderr_line("servlet servlets/hop2.lua");
    assert!(
        line.contains("Keep-Alive belongs to the connection"),
        "{line}"
    );
}

/// [`fields_of_the_connection_are_refused`] over HTTP/2, where the
/// field was dropped and the answer a 200: the same error.
#[cfg(feature = "http2")]
#[test]
fn fields_of_the_connection_are_refused_over_http2() {
    use common::h2::H2;
    let s = server(HOP_BY_HOP);
    let mut c = H2::connect(s.addr(), &[], 65_535);
    let ids = [
        c.get("/servlets/hop2.lua", &[]),
        c.get("/servlets/hello.lua", &[]),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), a[1].status()), ("500", "200"));
    assert_eq!(a[0].field("keep-alive"), None);
}

#[test]
fn a_lua_file_outside_the_prefixes_is_never_run() {
    let s = server(&[(
        "other/x.lua",
        "function handle_request(req, res) res:write('ran') end",
    )]);
    let r = get(&s, "/other/x.lua");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        "function handle_request(req, res) res:write('ran') end"
    );
    // A missing servlet is a 404; other files under the prefix are static.
    assert_eq!(get(&s, "/servlets/none.lua").status, 404);
}

#[test]
fn the_request_api_and_helpers() {
    let s = server(&[(
        "servlets/api.lua",
        r#"local calls = 0
local cfg_seen
function handler_init(cfg) cfg_seen = cfg.config.greeting .. " " .. cfg.url end
function handle_request(req, res)
  calls = calls + 1
  res:set_status(201)
  res:header("Content-Type", "application/json")
  res:write(brisk.json.encode({
    calls = calls, cfg = cfg_seen, method = req.method, path = req.path, query = req.query,
    addr = req.remote_addr,
    a = req.args.a, ua = req.headers["x-TEST"], sid = req.cookies.sid, body = req.body,
    html = brisk.html_escape("<a&'\">"), url = brisk.url_escape("a b/é"),
    un = brisk.url_unescape("x%20y+z"), back = brisk.json.decode('{"k":[1,2.5,"s"]}').k[3],
  }))
end
"#,
    )]);
    let mut c = s.connect();
    for calls in 1..=2 {
        // The second time with more fields than the handler's small
        // array holds (the router's FEW_HEADERS).
        let pad: String = (0..20 * (calls - 1))
            .map(|i| format!("X-Pad-{i}: {i}\r\n"))
            .collect();
        c.send(format!("POST /servlets/api.lua?a=1%202&b HTTP/1.1\r\nHost: x\r\n{pad}X-Test: yes\r\nCookie: a=b; sid=\"42\"\r\nContent-Length: 3\r\n\r\nxyz").as_bytes());
        let r = c.response();
        assert_eq!(r.status, 201);
        assert_eq!(r.header("Content-Type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["calls"], calls, "globals persist in the worker");
        assert_eq!(v["cfg"], "hello /servlets/api.lua");
        assert_eq!(v["method"], "POST");
        assert_eq!(v["path"], "/servlets/api.lua");
        assert_eq!(v["addr"], "127.0.0.1");
        assert_eq!(v["query"], "a=1%202&b");
        assert_eq!(v["a"], "1 2");
        assert_eq!(v["ua"], "yes");
        assert_eq!(v["sid"], "42");
        assert_eq!(v["body"], "xyz");
        assert_eq!(v["html"], "&lt;a&amp;&#39;&quot;&gt;");
        assert_eq!(v["url"], "a%20b%2F%C3%A9");
        assert_eq!(v["un"], "x y z");
        assert_eq!(v["back"], "s");
    }
    // A GET without a body (the method and "" from the state's names),
    // after a request for another servlet on the same connection (the
    // state keeps the last path and client address for the next).
    c.send(b"GET /servlets/hello.lua HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    c.send(b"GET /servlets/api.lua HTTP/1.1\r\nHost: x\r\n\r\n");
    let v: serde_json::Value = serde_json::from_slice(&c.response().body).unwrap();
    assert_eq!(
        (v["method"].as_str(), v["body"].as_str()),
        (Some("GET"), Some(""))
    );
    assert_eq!(v["query"], serde_json::Value::Null);
    assert_eq!(v["path"], "/servlets/api.lua");
    assert_eq!(v["addr"], "127.0.0.1");
}

const FORM: &str = r#"function handle_request(req, res)
  local f, err = req:form()
  if not f then res:write(400, {}, err) return end
  local out = {}
  for k, v in pairs(f) do
    if type(v) == "table" then out[k] = v.filename .. "|" .. (v.type or "-") .. "|" .. #v.data
    else out[k] = v end
  end
  res:write(200, {["Content-Type"] = "application/json"}, brisk.json.encode(out))
end
"#;

#[test]
fn a_form_post_and_a_multipart_upload() {
    let s = server(&[("servlets/form.lua", FORM)]);
    let r = s.request(b"POST /servlets/form.lua HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 20\r\n\r\nname=J%C3%B6rg&x=a+b");
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v, serde_json::json!({"name": "Jörg", "x": "a b"}));
    let data = vec![b'q'; 70_000];
    let mut body = b"--BOUND\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nmy file\r\n--BOUND\r\nContent-Disposition: form-data; name=\"up\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    body.extend_from_slice(&data);
    body.extend_from_slice(b"\r\n--BOUND--\r\n");
    let mut req = format!("POST /servlets/form.lua HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=BOUND\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    let r = s.request(&req);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"title": "my file", "up": "a.bin|application/octet-stream|70000"})
    );
    let r = s.request(b"POST /servlets/form.lua HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 5\r\n\r\n--B\r\n");
    assert_eq!(r.status, 400);
    assert_eq!(r.text(), "malformed multipart body: no closing boundary");
    if let Some(curl) = which("curl") {
        let up = s.base.path.join("up.txt");
        fs::write(&up, b"uploaded by curl").unwrap();
        let out = std::process::Command::new(curl)
            .args(["-s", "-F", &format!("f=@{}", up.display()), "-F", "k=v"])
            .arg(format!("http://{}/servlets/form.lua", s.addr()))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"f": "up.txt|text/plain|16", "k": "v"})
        );
    }
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(tool))
        .find(|p| p.is_file())
}

#[test]
fn a_changed_servlet_is_reloaded_and_initialised_again() {
    let s = server(&[]);
    assert!(get(&s, "/servlets/hello.lua")
        .text()
        .ends_with("initialized\n"));
    let file = s.root.join("servlets/hello.lua");
    fs::write(&file, HELLO.replace("hello!", "changed!")).unwrap();
    let r = wait_for("the new version", || {
        let r = get(&s, "/servlets/hello.lua");
        r.text().starts_with("changed!").then_some(r)
    });
    assert_eq!(
        r.text(),
        "changed! I am a servlet and my state is initialized\n"
    );
}

#[test]
fn sighup_reloads_every_servlet() {
    let s = server(&[(
        "servlets/count.lua",
        "local n = 0\nfunction handle_request(req, res) n = n + 1 res:write(tostring(n)) end\n",
    )]);
    let mut c = s.connect();
    for n in 1..=3 {
        c.send(b"GET /servlets/count.lua HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(c.response().text(), n.to_string());
    }
    let before = s.stderr().matches("configuration reloaded").count();
    s.signal(libc::SIGHUP);
    wait_until("the reload", || {
        s.stderr().matches("configuration reloaded").count() > before
    });
    assert_eq!(get(&s, "/servlets/count.lua").text(), "1");
}

#[test]
fn an_error_answers_500_and_logs_the_line_and_traceback_once() {
    let s = server(&[
        ("servlets/err.lua", "local function inner() error('boom') end\nfunction handle_request(req, res)\n  inner()\nend\n"),
        ("servlets/syntax.lua", "function handle_request(req, res\n"),
        ("servlets/none.lua", "x = 1\n"),
    ]);
    for _ in 0..3 {
        let r = get(&s, "/servlets/err.lua");
        assert_eq!(r.status, 500);
        assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    }
    // The message, then the traceback a frame a line, each an error
    // line of its own (no escaped line breaks).
    let line = s.wait_stderr_line("servlet servlets/err.lua:");
    assert!(line.ends_with("servlets/err.lua:1: boom"), "{line}");
    s.wait_stderr_line("[error] servlet servlets/err.lua:   stack traceback:");
    s.wait_stderr_line("[error] servlet servlets/err.lua:   servlets/err.lua:3: in function");
    assert!(!s.stderr().contains("\\x0A"), "{}", s.stderr());
    // The worker goes on, and logged the error once.
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    assert_eq!(s.stderr().matches(": boom").count(), 1);
    assert_eq!(get(&s, "/servlets/syntax.lua").status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/syntax.lua")
        .contains("syntax error"));
    assert_eq!(get(&s, "/servlets/none.lua").status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/none.lua")
        .contains("defines no handle_request"));
}

#[test]
fn the_cpu_limit_stops_a_loop_and_the_worker_serves_on() {
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes())
        .file("servlets/loop.lua", b"function handle_request(req, res) while true do end end")
        .file("servlets/count.lua", b"function handle_request(req, res) local i = 0 while true do i = i + 1 end end")
        .file("servlets/sum.lua", b"function handle_request(req, res) local x = 0 for i = 1, 1e12 do x = x + i end res:write(tostring(x)) end")
        .file("servlets/late.lua", b"function handle_request(req, res) res:write(string.rep('x', 70000)) while true do end end")
        // loop, count and sum are loops LuaJIT compiles (hot after 56
        // iterations; the JIT is on in servlets: the unit test
        // servlets::tests::the_jit_is_on): the hook stops compiled code
        // because LuaJIT checks for hooks there (LUAJIT_ENABLE_CHECKHOOK).
        // In coroutines (Lua threads of their own, made in the request or
        // at load; LuaJIT's hook is the whole VM's), behind pcall, and
        // while loading.
        .file("servlets/co.lua", b"function handle_request(req, res) local co = coroutine.create(function() while true do end end) coroutine.resume(co) res:write('went on') end")
        .file("servlets/wrap.lua", b"local f = coroutine.wrap(function() while true do end end)\nfunction handle_request(req, res) f() end")
        .file("servlets/nested.lua", b"function handle_request(req, res) coroutine.wrap(function() coroutine.resume(coroutine.create(function() while true do end end)) while true do end end)() end")
        .file("servlets/pcall.lua", b"function handle_request(req, res) while true do pcall(function() while true do end end) end end")
        .file("servlets/top.lua", b"while true do end")
        .file("servlets/init.lua", b"function handler_init(cfg) while true do end end\nfunction handle_request(req, res) end")
        .config(CONFIG)
        .workers(1);
    let s = b.start();
    for path in [
        "/servlets/loop.lua",
        "/servlets/count.lua",
        "/servlets/sum.lua",
        "/servlets/co.lua",
        "/servlets/wrap.lua",
        "/servlets/nested.lua",
        "/servlets/pcall.lua",
        "/servlets/top.lua",
        "/servlets/init.lua",
    ] {
        let r = get(&s, path);
        assert_eq!(r.status, 503, "{path}");
        assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    }
    assert!(s
        .wait_stderr_line("servlet servlets/loop.lua")
        .contains("servlets.cpu_time exceeded"));
    assert_cut_short(&s, "/servlets/late.lua");
}

#[test]
fn the_cpu_limit_counts_cpu_time_not_time_the_worker_waited() {
    // A servlet that needs a fraction of its budget, held up for longer
    // than the whole budget while it runs (the process stopped, as a
    // loaded machine holds a worker off its core): its answer comes
    // whole. The budget used to be counted on the wall clock, and the
    // answer was cut short. The loop runs for 0.4 s of the process's CPU
    // time (`os.clock`) rather than a count of iterations, which a faster
    // interpreter (LuaJIT's compiled loop) got through before the test
    // could see the worker's CPU time move.
    let config = CONFIG.replace("cpu_time = \"300ms\"", "cpu_time = \"2s\"");
    assert_ne!(config, CONFIG);
    let mut b = Builder::new();
    b.file("servlets/spin.lua", b"function handle_request(req, res) res:write(string.rep('x', 300000)) local n, t0 = 0, os.clock() repeat for i = 1, 1e5 do n = n + 1 end until os.clock() - t0 > 0.4 res:write('done ' .. (n > 0 and 'ok' or 'no')) end")
        .config(&config)
        .workers(1);
    let s = b.start();
    let mut c = s.connect();
    c.send(b"GET /servlets/spin.lua HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // The first piece (more than a worker queues at once) has left: the
    // servlet goes on to its loop.
    c.read_at_least(300_000);
    // And the worker is running it (its thread has used CPU since).
    let before = worker_cpu_ticks(s.pid());
    wait_until("the servlet's loop to run", || {
        worker_cpu_ticks(s.pid()) >= before + 3
    });
    s.signal(libc::SIGSTOP);
    // (Waiting is the point: the wall clock goes past the budget.)
    std::thread::sleep(std::time::Duration::from_millis(2500));
    s.signal(libc::SIGCONT);
    let raw = c.read_to_end();
    assert!(
        raw.ends_with(b"done ok"),
        "{:?}",
        String::from_utf8_lossy(&raw[raw.len().saturating_sub(100)..])
    );
}

/// The CPU time (in clock ticks) worker 0 of process `pid` has used.
fn worker_cpu_ticks(pid: u32) -> u64 {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/PID/task");
    for task in tasks.flatten() {
        let stat = fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        if let Some((_, rest)) = stat.split_once("(brisk-worker-0) ") {
            // After the name: state, then utime and stime are the 12th
            // and 13th fields (proc(5)).
            let f: Vec<&str> = rest.split(' ').collect();
            return f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        }
    }
    panic!("no worker thread in /proc/{pid}/task");
}

/// An error one of brisk's own functions raises (they are Rust) reaches
/// the servlet as Lua's own do: a string, its message without a Rust
/// traceback, through pcall, xpcall's handler and coroutine.resume.
#[test]
fn errors_of_brisks_functions_are_strings_to_the_servlet() {
    let s = server(&[(
        "servlets/errs.lua",
        r#"function handle_request(req, res)
  local out = {}
  local function put(ok, e) out[#out + 1] = tostring(ok) .. " " .. type(e) .. " " .. tostring(e) end
  put(pcall(brisk.json.encode, {0/0}))
  put(pcall(require, "nosuch"))
  put(xpcall(function() return brisk.json.encode({1/0}) end, function(e) return e end))
  put(coroutine.resume(coroutine.create(function() brisk.json.encode({0/0}) end)))
  put(pcall(error, "plain"))
  res:write(table.concat(out, "\n"))
end
"#,
    )]);
    let r = get(&s, "/servlets/errs.lua");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let finite = "false string brisk.json.encode: not a finite number";
    assert_eq!(
        lines,
        [
            finite,
            "false string require \"nosuch\": no nosuch.lua in the servlet directories",
            finite,
            finite,
            "false string plain"
        ],
        "{text}"
    );
}

#[test]
fn the_memory_limit_is_an_error_and_the_worker_survives() {
    // A CPU budget far above what filling 16 MiB takes, even on a loaded
    // machine: this test is about the memory limit, which must be met
    // first (the CPU limit answers 503 instead).
    let config = CONFIG.replace("cpu_time = \"300ms\"", "cpu_time = \"60s\"");
    assert_ne!(config, CONFIG);
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes())
        .file("servlets/hog.lua", b"function handle_request(req, res) local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end end")
        .file("servlets/hog100.lua", b"function handle_request(req, res) local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 100) .. i end end")
        .config(&config)
        // One worker: the requests after a hog are the hog's state's.
        .workers(1);
    let s = b.start();
    let r = get(&s, "/servlets/hog.lua");
    assert_eq!(r.status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/hog.lua")
        .contains("servlets.memory exceeded"));
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    // Again: the memory came back.
    assert_eq!(get(&s, "/servlets/hog.lua").status, 500);
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    // Smaller blocks (100-byte strings), the servlets loaded already:
    // what the hog's coroutine held is freed before the next request
    // (under LuaJIT mlua's own gc_collect failed with the memory full,
    // and every later request of the worker answered 500).
    for _ in 0..3 {
        assert_eq!(get(&s, "/servlets/hog100.lua").status, 500);
        assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    }
}

/// A servlet that fills its globals up to `servlets.memory` does not
/// fail every other servlet of the site on its worker: the state is made
/// anew once a collection leaves it more than half full.
#[test]
fn globals_that_fill_the_memory_limit_leave_the_other_servlets_serving() {
    let config = CONFIG.replace("cpu_time = \"300ms\"", "cpu_time = \"60s\"");
    let mut b = Builder::new();
    b.file("servlets/hoard.lua", b"function handle_request(req, res) hoard = hoard or {} for i = 1, 1e9 do hoard[#hoard + 1] = string.rep('x', 1000) .. i end end")
        // 4 MB at once: more than the hoard leaves, less than half.
        .file("servlets/mid.lua", b"function handle_request(req, res) local t = {} for i = 1, 4000 do t[i] = string.rep('y', 1000) .. i end res:write(200, {}, tostring(#table.concat(t))) end")
        .file("servlets/count.lua", b"n = (n or 0) + 1 function handle_request(req, res) n = n + 1 res:write(200, {}, tostring(n)) end")
        .config(&config)
        .workers(1);
    let s = b.start();
    assert_eq!(get(&s, "/servlets/count.lua").body, b"2");
    assert_eq!(get(&s, "/servlets/count.lua").body, b"3");
    for _ in 0..2 {
        assert_eq!(get(&s, "/servlets/hoard.lua").status, 500);
        let r = get(&s, "/servlets/mid.lua");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"4014893"[..]));
        assert!(s
            .wait_stderr_line("the Lua state is made anew")
            .contains("[warn] servlets: after servlets.memory was exceeded, the servlets' globals still hold "));
        // Every servlet's globals started again.
        assert_eq!(get(&s, "/servlets/count.lua").body, b"2");
    }
}

#[test]
fn output_streams_in_chunks_and_is_bounded() {
    let s = server(&[
        ("servlets/big.lua", "function handle_request(req, res) res:header('Content-Type', 'text/plain') for i = 1, 100 do res:write(string.rep(string.char(65 + i % 26), 5000)) end end"),
        ("servlets/huge.lua", "function handle_request(req, res) for i = 1, 100 do res:write(string.rep('x', 20000)) end end"),
        ("servlets/redir.lua", "function handle_request(req, res) res:redirect('/servlets/hello.lua') end"),
    ]);
    let r = get(&s, "/servlets/big.lua");
    assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(r.header("Content-Type"), Some("text/plain"));
    let want: Vec<u8> = (1..=100)
        .flat_map(|i| std::iter::repeat_n(b'A' + (i % 26) as u8, 5000))
        .collect();
    assert!(r.body == want);
    // 2 MB against max_output = 1MiB: cut short.
    let mut c = s.connect();
    c.send(b"GET /servlets/huge.lua HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut raw = Vec::new();
    use std::io::Read as _;
    let _ = c.stream.read_to_end(&mut raw);
    assert!(
        raw.len() < 1_100_000 && !raw.ends_with(b"0\r\n\r\n"),
        "{}",
        raw.len()
    );
    assert!(s
        .wait_stderr_line("servlet servlets/huge.lua")
        .contains("servlets.max_output"));
    let r = get(&s, "/servlets/redir.lua");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location"), Some("/servlets/hello.lua"));
}

#[test]
fn the_sandbox_refuses_os_execute_io_bytecode_and_files_outside() {
    let s = server(&[
        ("servlets/exec.lua", "function handle_request(req, res) os.execute('touch /tmp/brisk-servlet-ran') end"),
        ("servlets/popen.lua", "function handle_request(req, res) io.popen('id') end"),
        // LuaJIT's bytecode starts with "\27LJ" (Lua 5.4's "\27Lua").
        ("servlets/bytecode.lua", "function handle_request(req, res) local f, err = load('\\27LJ\\2' .. string.rep('x', 20)) local s = '\\27LJ\\2xx' local g, err2 = load(function() local r = s s = nil return r end) res:write(tostring(f) .. ' ' .. err .. ', ' .. tostring(g) .. ' ' .. err2) end"),
        ("servlets/dump.lua", "function handle_request(req, res) res:write(tostring(string.dump) .. tostring(loadstring) .. tostring(setfenv) .. tostring(getfenv) .. tostring(jit) .. tostring(ffi) .. tostring(package)) end"),
        ("servlets/lib/util.lua", "return { twice = function(x) return 2 * x end }"),
        ("servlets/req.lua", "local u = require('lib.util') function handle_request(req, res) res:write(tostring(u.twice(21))) end"),
        ("servlets/escape.lua", "function handle_request(req, res) local ok, err = pcall(require, '..secret') res:write(tostring(err)) end"),
        ("servlets/dofile.lua", "function handle_request(req, res) res:write(tostring(dofile) .. tostring(loadfile) .. tostring(io)) end"),
        // print wrote to brisk's stdout (the access log by default).
        ("servlets/print.lua", "function handle_request(req, res) print('127.0.0.1 - - FORGED') end"),
    ]);
    let r = get(&s, "/servlets/exec.lua");
    assert_eq!(r.status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/exec.lua")
        .contains("attempt to call field 'execute' (a nil value)"));
    assert_eq!(get(&s, "/servlets/popen.lua").status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/popen.lua")
        .contains("attempt to index global 'io' (a nil value)"));
    assert_eq!(
        get(&s, "/servlets/bytecode.lua").text(),
        "nil attempt to load chunk with wrong mode, nil attempt to load chunk with wrong mode"
    );
    assert_eq!(
        get(&s, "/servlets/dump.lua").text(),
        "nilnilnilnilnilnilnil"
    );
    assert_eq!(get(&s, "/servlets/req.lua").text(), "42");
    let t = get(&s, "/servlets/escape.lua").text();
    assert!(t.contains("a module name is words joined by dots"), "{t}");
    assert_eq!(get(&s, "/servlets/dofile.lua").text(), "nilnilnil");
    assert_eq!(get(&s, "/servlets/print.lua").status, 500);
    assert!(s
        .wait_stderr_line("servlet servlets/print.lua")
        .contains("attempt to call global 'print' (a nil value)"));
    assert!(!s.stdout().contains("FORGED"), "{}", s.stdout());
}

/// Servlets are written in LuaJIT's dialect, Lua 5.1's with `goto`: numbers
/// are doubles (no integer subtype, no `//`, no `math.maxinteger`), no
/// `utf8` library, `bit` for bitwise operations; coroutines work (they
/// are in 5.1's base library). JSON writes integral numbers as integers.
#[test]
fn servlets_speak_lua_5_1_as_luajit_does() {
    let s = server(&[(
        "servlets/dialect.lua",
        r#"function handle_request(req, res)
  local out = {}
  local function put(v) out[#out + 1] = tostring(v) end
  put(math.maxinteger) put(math.type) put(utf8)
  local f, err = load("return 7 // 2")
  put(f) put(err ~= nil)
  put(7 / 2) put(3 / 1) put(1 == 1.0)
  local i = 0
  ::again:: i = i + 1
  if i < 3 then goto again end
  put(i)
  put(bit.band(6, 3)) put(bit.lshift(1, 4))
  local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
  put(co(1)) put(co(5))
  put(brisk.json.encode({2^53, 1.5, -0.0, 10 / 2}))
  res:write(table.concat(out, " "))
end
"#,
    )]);
    assert_eq!(
        get(&s, "/servlets/dialect.lua").text(),
        "nil nil nil nil true 3.5 3 true 3 2 16 2 10 [9007199254740992,1.5,-0.0,5]"
    );
}

#[test]
fn the_shared_dictionary_is_seen_by_every_worker() {
    let mut b = Builder::new();
    b.file(
        "servlets/hits.lua",
        b"function handle_request(req, res) if req.args.set then brisk.shared:set('k', req.args.set, 60) end res:write(tostring(brisk.shared:incr('hits')) .. ' ' .. tostring(brisk.shared:get('k'))) end",
    )
    .config(CONFIG)
    .workers(2);
    let s = b.start();
    get(&s, "/servlets/hits.lua?set=v");
    // New connections land on either worker; the count is one.
    for n in 2..=12 {
        assert_eq!(get(&s, "/servlets/hits.lua").text(), format!("{n} v"));
    }
}

#[test]
fn check_config_shows_the_servlets_and_refuses_bad_keys() {
    let dir = TempDir::new("servlets");
    fs::create_dir(dir.path.join("root")).unwrap();
    let file = dir.path.join("site.toml");
    let root = dir.path.join("root").display().to_string();
    fs::write(&file, CONFIG).unwrap();
    let (st, out, err) = run_brisk(&[
        "--config",
        &file.display().to_string(),
        "--root",
        &root,
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    assert!(out.contains("servlets: *.lua under /servlets/; per request 300ms of CPU and 1MiB of output; 16MiB per worker's Lua state; brisk.shared 1MiB; config greeting\n"), "{out}");
    fs::write(&file, "[servlets]\nenable = true\npaths = [\"servlets\"]\n").unwrap();
    let (st, _, err) = run_brisk(&[
        "--config",
        &file.display().to_string(),
        "--root",
        &root,
        "--check-config",
    ]);
    assert!(!st.success());
    assert!(
        err.contains("site.toml:3: servlets.paths: expected URL prefixes"),
        "{err}"
    );
}

#[cfg(feature = "http2")]
#[test]
fn streamed_output_goes_over_http2() {
    use brisk::h2::frame::setting;
    use brisk::h2::ErrorCode;
    use common::h2::H2;
    let s = server(&[
        ("servlets/big.lua", "function handle_request(req, res) res:header('Content-Type', 'text/plain') for i = 1, 100 do res:write(string.rep(string.char(65 + i % 26), 5000)) end end"),
        ("servlets/huge.lua", "function handle_request(req, res) for i = 1, 100 do res:write(string.rep('x', 20000)) end end"),
        // TE is connection-specific: never in an HTTP/2 answer (RFC 9113 §8.2.2);
        // res:header refuses it (see fields_of_the_connection_are_refused).
        ("servlets/te.lua", "function handle_request(req, res) pcall(res.header, res, 'TE', 'x') res:header('X-Ok', 'y') res:write('t') end"),
    ]);
    let mut c = H2::connect(
        s.addr(),
        &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
        16 << 20,
    );
    let ids = [
        c.get("/servlets/hello.lua", &[]),
        c.get("/servlets/big.lua", &[]),
        c.get("/servlets/huge.lua", &[]),
    ];
    let a = c.answers(&ids);
    assert_eq!(
        a[0].body,
        b"hello! I am a servlet and my state is initialized\n"
    );
    let want: Vec<u8> = (1..=100)
        .flat_map(|i| std::iter::repeat_n(b'A' + (i % 26) as u8, 5000))
        .collect();
    assert_eq!(
        (a[1].status(), a[1].field("content-type")),
        ("200", Some("text/plain"))
    );
    assert!(a[1].body == want && a[1].reset.is_none());
    // Over max_output: cut short, the stream reset, the connection kept.
    assert!(a[2].body.len() < 1_100_000, "{}", a[2].body.len());
    assert_eq!(a[2].reset, Some(ErrorCode::Internal as u32));
    let id = c.get("/servlets/hello.lua", &[]);
    assert_eq!(c.answers(&[id])[0].status(), "200");
    let id = c.get("/servlets/te.lua", &[]);
    let a = &c.answers(&[id])[0];
    assert_eq!((a.field("te"), a.field("x-ok")), (None, Some("y")));
}

/// Every field of the request table, as text (tables with their keys
/// sorted), and `brisk.json.encode(req.args)`.
const FIELDS: &str = r#"local function show(v)
  if type(v) ~= "table" then return type(v) .. ":" .. tostring(v) end
  local keys = {}
  for k, x in pairs(v) do keys[#keys + 1] = tostring(k) .. "=" .. tostring(x) end
  table.sort(keys)
  return "{" .. table.concat(keys, ",") .. "}"
end
function handle_request(req, res)
  local out = {}
  for _, k in ipairs({"args", "headers", "cookies", "method", "path", "query", "remote_addr", "user"}) do
    out[#out + 1] = k .. " " .. show(req[k])
  end
  local form, err = req:form()
  out[#out + 1] = "form " .. show(form) .. " " .. tostring(err)
  out[#out + 1] = "json " .. brisk.json.encode(req.args)
  res:write(table.concat(out, "\n"))
end
"#;

#[test]
fn every_request_field_with_and_without_its_source() {
    let mut b = Builder::new();
    b.file("servlets/fields.lua", FIELDS.as_bytes())
        .file("servlets/private/fields.lua", FIELDS.as_bytes());
    write_file(
        &b.base().join("htpasswd"),
        include_bytes!("../../hash/testdata/vectors.htpasswd"),
    );
    b.config(&format!("{CONFIG}\n[[auth]]\npath = \"/servlets/private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n"));
    let s = b.start();
    // No query, no cookie, no form, no user: a header whose value reads
    // as a query gives no argument (req.args used to be parsed from the
    // request's raw header fields when there was no query).
    let r =
        s.request(b"GET /servlets/fields.lua HTTP/1.1\r\nHost: x\r\nX-Anything: &admin=1\r\n\r\n");
    assert_eq!(
        r.text(),
        "args {}\nheaders {host=x,x-anything=&admin=1}\ncookies {}\nmethod string:GET\n\
         path string:/servlets/fields.lua\nquery nil:nil\nremote_addr string:127.0.0.1\n\
         user nil:nil\nform nil:nil not a form (Content-Type)\njson []"
    );
    // Each one's source there.
    let body = "f=1+2&g=%C3%A9";
    let r = s.request(
        format!(
            "POST /servlets/private/fields.lua?a=1%202&a=2 HTTP/1.1\r\nHost: x\r\n\
             Authorization: {}\r\nCookie: sid=42; t=\"q\"\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            basic_auth("apr1", "correct horse"),
            body.len()
        )
        .as_bytes(),
    );
    let auth = basic_auth("apr1", "correct horse");
    assert_eq!(
        r.text(),
        format!(
            "args {{a=1 2}}\nheaders {{authorization={auth},content-length=14,\
             content-type=application/x-www-form-urlencoded,cookie=sid=42; t=\"q\",host=x}}\n\
             cookies {{sid=42,t=q}}\nmethod string:POST\npath string:/servlets/private/fields.lua\n\
             query string:a=1%202&a=2\nremote_addr string:127.0.0.1\nuser string:apr1\n\
             form {{f=1 2,g=\u{e9}}} nil\njson {{\"a\":\"1 2\"}}"
        )
    );
}

/// `path` answers 200, is stopped after its head left (cut short: no
/// last chunk), and the worker serves the next request.
fn assert_cut_short(s: &Server, path: &str) {
    let mut c = s.connect();
    c.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    let mut raw = Vec::new();
    use std::io::Read as _;
    let _ = c.stream.read_to_end(&mut raw);
    assert!(raw.starts_with(b"HTTP/1.1 200 OK\r\n"), "{path}");
    assert!(!raw.ends_with(b"0\r\n\r\n"), "{path}");
    assert_eq!(get(s, "/servlets/hello.lua").status, 200, "after {path}");
}

/// A server of one worker with `files` beside hello.lua, and `config`.
fn one_worker(files: &[(&str, &str)], config: &str) -> Server {
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes());
    for (name, text) in files {
        b.file(name, text.as_bytes());
    }
    b.config(config).workers(1);
    b.start()
}

/// Each of `paths` answers `status` (and logs `why`), and the worker
/// serves the next request.
fn each_answers(s: &Server, paths: &[(&str, u16, &str)]) {
    for (path, status, why) in paths {
        // A servlet stopped at its CPU limit answers after some multiple
        // of cpu_time of CPU, which a loaded machine (the suite's other
        // tests) stretches in wall time: wait as long as for a log line.
        let mut c = s.connect();
        c.stream.set_read_timeout(Some(WAIT_LIMIT)).unwrap();
        c.send(format!("GET /servlets/{path}.lua HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!(r.status, *status, "{path}");
        if !why.is_empty() {
            let line = s.wait_stderr_line(&format!("servlet servlets/{path}.lua"));
            assert!(line.contains(why), "{path}: {line}");
        }
        assert_eq!(get(s, "/servlets/hello.lua").status, 200, "after {path}");
    }
}

#[test]
fn no_servlet_can_make_a_finalizer() {
    // LuaJIT runs finalizers with hooks off: this one held its worker (and
    // the server) for ever, past the CPU budget and SIGTERM.
    let s = one_worker(
        &[
            ("servlets/gc.lua", "function handle_request(req, res) local p = newproxy(true) getmetatable(p).__gc = function() while true do end end p = nil local t = {} for i = 1, 1e6 do t[i] = {} end end"),
            // Tables take no __gc in Lua 5.1: never called.
            ("servlets/gctable.lua", "function handle_request(req, res) setmetatable({}, {__gc = function() while true do end end}) local t = {} for i = 1, 1e5 do t[i] = {} end t = nil res:write(tostring(newproxy) .. ' ' .. tostring(gcinfo) .. ' ' .. tostring(getmetatable(res))) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[("gc", 500, "attempt to call global 'newproxy' (a nil value)")],
    );
    assert_eq!(get(&s, "/servlets/gctable.lua").text(), "nil nil false");
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
}

#[test]
fn sort_rep_and_deep_recursion_answer_and_the_worker_serves_on() {
    let s = one_worker(
        &[
            ("servlets/sort.lua", "function handle_request(req, res) local t = {} for i = 1, 100 do t[i] = 101 - i end table.sort(t, function(a, b) while true do end end) end"),
            ("servlets/rep.lua", "function handle_request(req, res) res:write(#string.rep('x', 2^40)) end"),
            ("servlets/rep2.lua", "function handle_request(req, res) res:write(#string.rep('xy', 5e7, ',')) end"),
            ("servlets/rep3.lua", "function handle_request(req, res) res:write(#string.rep('', 2^31 - 1, '') .. #string.rep('', 2^31 - 1) .. #string.rep('x', 0, ',')) end"),
            ("servlets/deep.lua", "local function f(n) return 1 + f(n + 1) end\nfunction handle_request(req, res) f(1) end"),
            ("servlets/deepc.lua", "local function f(n) return select(2, pcall(f, n + 1)) or n end\nfunction handle_request(req, res) res:write(type(f(1))) end"),
            ("servlets/deepsort.lua", "local function f(n) local t = {2, 1} table.sort(t, function(a, b) f(n + 1) return a < b end) end\nfunction handle_request(req, res) f(1) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[
            ("sort", 503, "servlets.cpu_time exceeded"),
            ("rep", 500, ""),
            ("rep2", 500, "servlets.memory exceeded"),
            ("rep3", 200, ""),
            ("deep", 500, "stack overflow"),
            ("deepc", 200, ""),
            ("deepsort", 500, "stack overflow"),
        ],
    );
}

/// Patterns as Lua 5.1 (and LuaJIT) match them: `string.find`, `match`,
/// `gmatch` and `gsub` are brisk's own matcher in servlets (it stops
/// when the CPU budget is spent), and answer as LuaJIT's did.
#[test]
fn patterns_match_as_in_lua_5_1() {
    let s = server(&[(
        "servlets/pat.lua",
        r#"function handle_request(req, res)
  local out = {}
  local function put(...)
    local t = {...}
    for i = 1, select('#', ...) do t[i] = tostring(t[i]) end
    out[#out + 1] = table.concat(t, ",")
  end
  put(("hello world"):find("o w"))
  put(("hello world"):find("l+"))
  put(string.find("a.b", ".", 1, true))
  put(string.find("a.b", "%."))
  put(string.find("abc", "b", -1))
  put(string.find("abc", "", 10))
  put(string.find("abc", "^b"))
  put(string.find("abc", "b", 2, false))
  put(string.find(12345, 34))
  put(string.match("key = value", "(%w+)%s*=%s*(%w+)"))
  put(string.match("hello", "()ll()"))
  put(string.match("  trim  ", "^%s*(.-)%s*$"))
  put(string.match("f(a(b)c)d", "%b()"))
  put(string.match("THE (quick) fox", "%f[%l]%a+"))
  put(string.match("abcabc", "(abc)%1"))
  put(string.match("2024-01-15", "(%d+)-(%d+)-(%d+)"))
  put(string.match("x", "y"))
  local words = {}
  for w in ("one two  three"):gmatch("%a+") do words[#words + 1] = w end
  put(table.concat(words, "|"))
  for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do put(k, v) end
  local n = 0
  for _ in ("abc"):gmatch("") do n = n + 1 end
  put(n)
  put(string.gsub("hello world", "o", "0"))
  put(string.gsub("hello world", "(%w+)", "<%1>"))
  put(string.gsub("abc", "", "-"))
  put(string.gsub("hello", "l", {l = "L"}))
  put(string.gsub("$name is $age", "%$(%w+)", {name = "Ann", age = 7}))
  put(string.gsub("abc", "%w", function(c) return c:upper() .. "." end))
  put(string.gsub("abc", "%w", function(c) if c == "b" then return false end return 1 end))
  put(string.gsub("abc", "%w", "%0%0", 2))
  put(string.gsub("x", "x", "%%"))
  put(string.gsub("hello world", "^h", "H"))
  put(string.gsub("a,b,,c", "[^,]*", "[%0]"))
  put(string.gsub("abc", "()", "%1"))
  put(pcall(string.find, "a", "[a"))
  put(pcall(string.gsub, "a", "a", true))
  res:write(table.concat(out, "\n"))
end
"#,
    )]);
    let got = get(&s, "/servlets/pat.lua").text();
    let want = "5,7\n3,4\n2,2\n2,2\nnil\n4,3\nnil\n2,2\n3,4\nkey,value\n3,5\ntrim\n(a(b)c)\nquick\nabc\n2024,01,15\nnil\n\
                one|two|three\na,1\nb,2\n4\nhell0 w0rld,2\n<hello> <world>,2\n-a-b-c-,4\nheLLo,2\nAnn is 7,2\n\
                A.B.C.,3\n1b1,3\naabbc,2\n%,1\nHello world,1\n[a][],[b][],[],[c][],7\n1a2b3c4,4\nfalse";
    let (head, errors) = got.split_at(want.len());
    assert_eq!(head, want);
    // (The error values are mlua's, with a traceback.)
    let (find, gsub) = errors.split_once("\nfalse,").unwrap();
    assert!(find.contains("malformed pattern (missing ']')"), "{errors}");
    assert!(
        gsub.contains("bad argument #3 to 'gsub' (string/function/table expected)"),
        "{errors}"
    );
}

#[test]
fn a_backtracking_pattern_is_stopped_by_the_cpu_limit() {
    // LuaJIT's matcher is one C call that no hook stops: the first ran
    // 32 s under cpu_time = "1s", its worker answering nothing meanwhile.
    let bomb = "(\"a\"):rep(200), (\"a*\"):rep(4) .. \"b\"";
    let s = one_worker(
        &[
            ("servlets/find.lua", &format!("function handle_request(req, res) res:write(tostring(string.find({bomb}))) end")),
            ("servlets/match.lua", "function handle_request(req, res) res:write(tostring((\"a\"):rep(300):match((\"a*\"):rep(5) .. \"b\"))) end"),
            ("servlets/gmatch.lua", &format!("function handle_request(req, res) for x in string.gmatch({bomb}) do end end")),
            ("servlets/gsub.lua", &format!("function handle_request(req, res) string.gsub({bomb}, 'x') end")),
            // Caught by pcall, it is raised again by the hook at once.
            ("servlets/pcall.lua", &format!("function handle_request(req, res) local ok, err = pcall(string.find, {bomb}) res:write('caught ' .. tostring(err)) end")),
            // A request's data as the subject (the ReDoS case).
            ("servlets/query.lua", "function handle_request(req, res) res:write(tostring(req.query:find(('a*'):rep(5) .. 'b'))) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[
            ("find", 503, "servlets.cpu_time exceeded"),
            ("match", 503, "servlets.cpu_time exceeded"),
            ("gmatch", 503, "servlets.cpu_time exceeded"),
            ("gsub", 503, "servlets.cpu_time exceeded"),
            ("pcall", 503, "servlets.cpu_time exceeded"),
        ],
    );
    let r = get(&s, &format!("/servlets/query.lua?{}", "a".repeat(100)));
    assert_eq!(r.status, 503);
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
}

/// The peak resident memory of process `pid` (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_json_and_escape_helpers_keep_to_the_memory_limit() {
    // They build their text in Rust, outside Lua's heap: a table holding
    // one 8 MiB string 100 times made brisk.json.encode reach 831 MiB
    // under servlets.memory = 64 MiB. Now each refuses (500) a result
    // that would not fit in what the limit leaves, before making it.
    let config = CONFIG
        .replace("memory = \"16MiB\"", "memory = \"32MiB\"")
        .replace("cpu_time = \"300ms\"", "cpu_time = \"10s\"");
    let s = one_worker(
        &[
            ("servlets/html.lua", "function handle_request(req, res) res:write(#brisk.html_escape(string.rep('\"', 12 * 2^20))) end"),
            ("servlets/url.lua", "function handle_request(req, res) res:write(#brisk.url_escape(string.rep(' ', 12 * 2^20))) end"),
            ("servlets/decode.lua", "function handle_request(req, res) res:write(tostring(brisk.json.decode('[' .. string.rep('[[]],', 1e6) .. '0]'))) end"),
            ("servlets/encode.lua", "function handle_request(req, res) local s, t = string.rep('x', 4 * 2^20), {} for i = 1, 100 do t[i] = s end res:write(#brisk.json.encode(t)) end"),
            ("servlets/encode1.lua", "function handle_request(req, res) res:write(#brisk.json.encode({string.rep('<', 4 * 2^20)})) end"),
            ("servlets/small.lua", "function handle_request(req, res) res:write(brisk.json.encode({brisk.html_escape('<'), brisk.url_escape(' '), brisk.json.decode('[1]')})) end"),
        ],
        &config,
    );
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    let limit = peak_rss_kib(s.pid()) + (32 << 10) + (24 << 10);
    for (path, why) in [
        (
            "html",
            "brisk.html_escape: the result does not fit in servlets.memory",
        ),
        (
            "url",
            "brisk.url_escape: the result does not fit in servlets.memory",
        ),
        (
            "decode",
            "brisk.json.decode: the value does not fit in servlets.memory",
        ),
        (
            "encode",
            "brisk.json.encode: the text does not fit in the memory left",
        ),
        (
            "encode1",
            "brisk.json.encode: the text does not fit in the memory left",
        ),
    ] {
        each_answers(&s, &[(path, 500, why)]);
        let peak = peak_rss_kib(s.pid());
        assert!(peak < limit, "{path}: peak RSS {peak} KiB, over {limit}");
    }
    assert_eq!(
        get(&s, "/servlets/small.lua").text(),
        "[\"\\u0026lt;\",\"%20\",[1]]"
    );
}

#[test]
fn a_servlet_cannot_change_what_another_sees() {
    // One state (one worker): servlets shared its globals, library
    // tables and brisk.*, and a.lua's edits showed in b.lua ("HIJACKED").
    let s = one_worker(
        &[
            (
                "servlets/a.lua",
                r#"local tostring, pcall = tostring, pcall
function handle_request(req, res)
  local before = string.upper("x") .. ("x"):upper()
  string.upper = function() return "HIJACKED" end
  brisk.html_escape = function() return "HIJACKED" end
  brisk.json.encode = function() return "HIJACKED" end
  shared_global = "HIJACKED"
  _G.tostring = function() return "HIJACKED" end
  local tried = {
    (pcall(function() getmetatable("").__index.upper = function() return "HIJACKED" end end)),
    (pcall(rawset, brisk.json.null, "x", "HIJACKED")),
    (pcall(function() brisk.json.null.x = "HIJACKED" end)),
    (pcall(setmetatable, brisk.json.null, {})),
    -- Raw writes: a table took these whatever its metatable said.
    (pcall(table.insert, brisk.json.null, "HIJACKED")),
    (pcall(table.move, {"HIJACKED"}, 1, 1, 1, brisk.json.null)),
    (pcall(function() load("string.lower = function() return 'HIJACKED' end")() end)),
    (pcall(function() load("rawset(string, 'rep', function() return 'HIJACKED' end)")() end)),
    (pcall(function() getmetatable(req).__index = function() return "HIJACKED" end end)),
  }
  for i = 1, #tried do tried[i] = tostring(tried[i]) end
  res:write(before .. " " .. tostring(getmetatable("")) .. " " .. table.concat(tried, ","))
end
"#,
            ),
            (
                "servlets/b.lua",
                r#"function handle_request(req, res)
  res:write(table.concat({string.upper("x"), ("x"):upper(), brisk.html_escape("<"),
    tostring(shared_global), tostring(1), type(brisk.json.null), tostring(brisk.json.decode("[null]")[1] == brisk.json.null), string.lower("X"),
    string.rep("y", 2), brisk.json.encode({brisk.json.null}), tostring(req.method)}, " "))
end
"#,
            ),
            ("servlets/lib/leaky.lua", "leaked = 'from a module'\nfunction helper() return 1 end\nreturn { n = 1 }"),
            ("servlets/c.lua", "local m = require('lib.leaky') m.n = m.n + 1\nfunction handle_request(req, res) res:write(tostring(leaked) .. ' ' .. m.n .. ' ' .. tostring(require('lib.leaky') == m)) end"),
            ("servlets/d.lua", "local m = require('lib.leaky')\nfunction handle_request(req, res) res:write(tostring(leaked) .. ' ' .. m.n .. ' ' .. type(helper)) end"),
            ("servlets/e.lua", "function handle_request(req, res) res:write(tostring(leaked) .. ' ' .. tostring(helper)) end"),
        ],
        CONFIG,
    );
    let want_b = "X X &lt; nil 1 userdata true x yy [null] GET";
    assert_eq!(get(&s, "/servlets/b.lua").text(), want_b);
    // a.lua changes its own copies only; what is shared refuses.
    assert_eq!(
        get(&s, "/servlets/a.lua").text(),
        "XX false false,false,false,false,false,false,true,true,false"
    );
    assert_eq!(get(&s, "/servlets/b.lua").text(), want_b);
    // Its own edits stay its own, for its next request.
    assert!(get(&s, "/servlets/a.lua").text().starts_with("HIJACKEDX "));
    // A module runs once per servlet, with that servlet's globals.
    assert_eq!(get(&s, "/servlets/c.lua").text(), "from a module 2 true");
    assert_eq!(
        get(&s, "/servlets/d.lua").text(),
        "from a module 1 function"
    );
    assert_eq!(get(&s, "/servlets/e.lua").text(), "nil nil");
    assert_eq!(get(&s, "/servlets/b.lua").text(), want_b);
}

#[test]
fn an_error_value_is_made_text_under_the_cpu_budget() {
    // An error value's __tostring is the servlet's code: brisk made it
    // text after the run's budget had ended, and one that never returned
    // held the worker (and SIGTERM) for ever. Before the head left and
    // after (streamed); one that returns gives the log its text.
    let looping = "error(setmetatable({}, {__tostring = function() while true do end end}))";
    let s = one_worker(
        &[
            ("servlets/loop.lua", &format!("function handle_request(req, res) {looping} end")),
            ("servlets/late.lua", &format!("function handle_request(req, res) res:write(string.rep('x', 70000)) {looping} end")),
            ("servlets/named.lua", "function handle_request(req, res) error(setmetatable({}, {__tostring = function() return 'a named error' end})) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[
            ("loop", 503, "servlets.cpu_time exceeded"),
            ("named", 500, "a named error"),
        ],
    );
    assert_cut_short(&s, "/servlets/late.lua");
}

/// Each of `servlet`'s nestings at each depth of `?n=`: the deep ones
/// answer 500 with Lua's "C stack overflow", the shallow ones 200, and
/// the worker serves on (it died: the worker's stack overflowed).
fn nestings_answer(s: &Server, servlet: &str, nestings: &[(&str, u32, u16)]) {
    for (k, n, status) in nestings {
        let path = format!("/servlets/{servlet}.lua?k={k}&n={n}");
        let r = get(s, &path);
        assert_eq!(r.status, *status, "{path}");
        if *status == 500 {
            let line = s.wait_stderr_line(&format!("servlet servlets/{servlet}.lua"));
            assert!(line.contains("C stack overflow"), "{path}: {line}");
        } else {
            assert_eq!(r.text(), "x", "{path}");
        }
        assert_eq!(get(s, "/servlets/hello.lua").status, 200, "after {path}");
    }
}

#[test]
fn gsub_callbacks_and_coroutines_nest_within_the_workers_stack() {
    // Through gsub's function and table (its __index), through coroutine
    // .wrap and .resume, and the two mixed.
    let deep = r#"local kind = {}
function kind.gsub(n) if n == 0 then return "x" end return (("a"):gsub("a", function() return kind.gsub(n - 1) end)) end
function kind.index(n) if n == 0 then return "x" end return (("a"):gsub("a", setmetatable({}, {__index = function() return kind.index(n - 1) end}))) end
function kind.wrap(n) if n == 0 then return "x" end return coroutine.wrap(function() return kind.wrap(n - 1) end)() end
function kind.resume(n) if n == 0 then return "x" end local ok, v = coroutine.resume(coroutine.create(function() return kind.resume(n - 1) end)) if not ok then error(v, 0) end return v end
function kind.mixed(n) if n == 0 then return "x" end if n % 2 == 0 then return kind.gsub1(n) end return coroutine.wrap(function() return kind.mixed(n - 1) end)() end
function kind.gsub1(n) return (("a"):gsub("a", function() return kind.mixed(n - 1) end)) end
function handle_request(req, res) res:write(kind[req.args.k](tonumber(req.args.n))) end
"#;
    let s = one_worker(&[("servlets/deep.lua", deep)], CONFIG);
    nestings_answer(
        &s,
        "deep",
        &[
            ("gsub", 50, 200),
            ("gsub", 1000, 500),
            ("gsub", 100_000, 500),
            ("index", 50, 200),
            ("index", 1000, 500),
            ("wrap", 100, 200),
            ("wrap", 50_000, 500),
            ("resume", 100, 200),
            ("resume", 50_000, 500),
            ("mixed", 50, 200),
            ("mixed", 50_000, 500),
        ],
    );
}

#[test]
fn a_res_kept_past_its_request_writes_into_no_other_answer() {
    // Servlet A keeps its res in a global; the worker handed that object
    // to B's next answer, and while B's long answer streamed to a slow
    // client, A wrote into it.
    let evil = r#"function handle_request(req, res)
  if req.args.save then saved = res res:write("saved") return end
  local ok, e = pcall(function() saved:write("INJECTED") end)
  res:write(200, {}, tostring(ok) .. " " .. tostring(e))
end"#;
    let victim = r#"function handle_request(req, res)
  res:write(200, {}, "B:")
  for i = 1, 100 do res:write(string.rep("b", 8191) .. "\n") end
  res:write("B ends here")
end"#;
    let s = one_worker(
        &[("servlets/evil.lua", evil), ("servlets/victim.lua", victim)],
        CONFIG,
    );
    assert_eq!(get(&s, "/servlets/evil.lua?save=1").text(), "saved");
    // The victim's client reads nothing until A has written: its answer
    // waits, suspended, with the object A kept.
    let mut v = s.connect();
    v.send(b"GET /servlets/victim.lua HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let r = get(&s, "/servlets/evil.lua");
    assert!(
        r.text().starts_with("false ") && r.text().contains("a request that has ended"),
        "{}",
        r.text()
    );
    // The victim's answer is whole and its own.
    let mut raw = Vec::new();
    use std::io::Read as _;
    let _ = v.stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.contains("INJECTED"), "injected");
    assert!(
        text.ends_with("B ends here"),
        "{:?}",
        &text[text.len().saturating_sub(100)..]
    );
    assert_eq!(text.matches(&"b".repeat(8191)).count(), 100);
}

#[test]
fn res_write_in_a_servlets_coroutine_streams_the_whole_answer() {
    // res:write yields to brisk once 64 KiB are gathered: inside the
    // servlet's own coroutine that yield reached the servlet, and a
    // generator's loop stopped early (655 rows of 1000, answered 200).
    let generator = r#"function handle_request(req, res)
  local rows = coroutine.wrap(function()
    for i = 1, 1000 do
      res:write(string.rep("r", 99) .. "\n")
      coroutine.yield(i)
    end
  end)
  local n = 0
  for i in rows do n = i end
  res:write("rows: " .. n)
end"#;
    // Two coroutines deep, through coroutine.resume: the inner one runs
    // to its end in one resume.
    let nested = r#"function handle_request(req, res)
  local seen = {}
  local outer = coroutine.create(function()
    local inner = coroutine.create(function()
      for i = 1, 3 do res:write(string.rep("a", 50000)) end
      return "inner done"
    end)
    local ok, v = coroutine.resume(inner)
    seen[#seen + 1] = tostring(ok) .. " " .. tostring(v) .. " " .. coroutine.status(inner)
    return "outer done"
  end)
  local ok, v = coroutine.resume(outer)
  seen[#seen + 1] = tostring(ok) .. " " .. tostring(v)
  res:write("|" .. table.concat(seen, ", "))
end"#;
    let s = server(&[
        ("servlets/generator.lua", generator),
        ("servlets/nested.lua", nested),
    ]);
    let r = get(&s, "/servlets/generator.lua");
    assert_eq!(r.status, 200);
    let text = r.text();
    assert_eq!(text.matches(&format!("{}\n", "r".repeat(99))).count(), 1000);
    assert!(text.ends_with("rows: 1000"), "{}", &text[text.len() - 40..]);
    let text = get(&s, "/servlets/nested.lua").text();
    assert_eq!(
        text.len(),
        150_000 + "|true inner done dead, true outer done".len()
    );
    assert!(
        text.ends_with("|true inner done dead, true outer done"),
        "{}",
        &text[text.len() - 60..]
    );
}

#[test]
fn long_c_calls_are_stopped_by_the_cpu_limit() {
    // One C call each, where the hook never fires: brisk.json.encode
    // walking a table emptied of 500,000 slots, 40,000 times (20 billion
    // empty slots), and table.sort comparing 800 references to one 4 MiB
    // string (a memcmp of it each time). Both ran for tens of seconds
    // past cpu_time.
    let s = one_worker(
        &[
            ("servlets/json.lua", "function handle_request(req, res) local big = {} for i = 1, 5e5 do big[i] = true end for i = 1, 5e5 do big[i] = nil end local t = {} for i = 1, 40000 do t[i] = big end res:write(#brisk.json.encode(t)) end"),
            ("servlets/jsonpcall.lua", "function handle_request(req, res) local big = {} for i = 1, 5e5 do big[i] = true end for i = 1, 5e5 do big[i] = nil end local t = {} for i = 1, 40000 do t[i] = big end local ok, e = pcall(brisk.json.encode, t) res:write(tostring(e)) end"),
            ("servlets/sort.lua", "function handle_request(req, res) local s = string.rep('x', 4 * 2^20) local t = {} for i = 1, 800 do t[i] = s end table.sort(t) res:write('sorted') end"),
            // Sorting still sorts, with or without a comparator.
            ("servlets/sorted.lua", "function handle_request(req, res) local t = {3, 1, 2} table.sort(t) local u = {'b', 'c', 'a'} table.sort(u, function(a, b) return a > b end) res:write(table.concat(t) .. table.concat(u)) end"),
        ],
        CONFIG,
    );
    for path in ["json", "jsonpcall", "sort"] {
        let t0 = std::time::Instant::now();
        let r = get(&s, &format!("/servlets/{path}.lua"));
        assert_eq!(r.status, 503, "{path}: {}", r.text());
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{path}: {:?}",
            t0.elapsed()
        );
        assert_eq!(get(&s, "/servlets/hello.lua").status, 200, "after {path}");
    }
    assert_eq!(get(&s, "/servlets/sorted.lua").text(), "123cba");
}

/// `brisk.shared` is each site's own: the default site's entry is not
/// the other site's (it was one dictionary for the process, and a
/// servlet of one [[site]] read another's sessions).
#[cfg(feature = "sites")]
#[test]
fn each_site_has_its_own_shared_dictionary() {
    let set = "function handle_request(req, res) brisk.shared:set('session', req.args.v) brisk.shared:incr('n') res:write('set') end";
    let read = "function handle_request(req, res) res:write(tostring(brisk.shared:get('session')) .. ' ' .. tostring(brisk.shared:get('n'))) end";
    let mut b = Builder::new();
    b.file("servlets/set.lua", set.as_bytes())
        .file("servlets/read.lua", read.as_bytes())
        .file("../b/servlets/set.lua", set.as_bytes())
        .file("../b/servlets/read.lua", read.as_bytes())
        .config(&format!(
            "{CONFIG}\n[[site]]\nhosts = \"b.test\"\nroot = \"b\"\n[site.servlets]\nenable = true\npaths = [\"/servlets/\"]\n"
        ));
    let s = b.start();
    let on = |host: &str, path: &str| {
        s.request(
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .text()
    };
    assert_eq!(on("x", "/servlets/set.lua?v=alice"), "set");
    assert_eq!(on("x", "/servlets/read.lua"), "alice 1");
    assert_eq!(on("b.test", "/servlets/read.lua"), "nil nil");
    assert_eq!(on("b.test", "/servlets/set.lua?v=bob"), "set");
    assert_eq!(on("b.test", "/servlets/read.lua"), "bob 1");
    assert_eq!(on("x", "/servlets/read.lua"), "alice 1");
}

#[test]
fn math_random_differs_from_one_start_to_the_next() {
    // LuaJIT's generator started from the same seed in every worker, at
    // every start: the same "random" numbers each time.
    let rnd = "function handle_request(req, res) res:write(string.format('%d %d', math.random(2^30), math.random(2^30))) end";
    let first = |_| {
        let s = one_worker(&[("servlets/rnd.lua", rnd)], CONFIG);
        get(&s, "/servlets/rnd.lua").text()
    };
    let (a, b) = (first(0), first(1));
    assert_ne!(a, b);
}

#[test]
fn a_repeated_name_keeps_its_first_value_in_args_headers_and_cookies() {
    // Cookies kept the last value, args and headers the first.
    let s = one_worker(
        &[("servlets/first.lua", "function handle_request(req, res) res:write(req.args.a .. ' ' .. req.headers['x-a'] .. ' ' .. req.cookies.sid) end")],
        CONFIG,
    );
    let r = s.request(b"GET /servlets/first.lua?a=1&a=2 HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nX-A: 2\r\nCookie: sid=1; sid=2\r\nCookie: sid=3\r\n\r\n");
    assert_eq!(r.text(), "1 1 1");
}

#[test]
fn a_full_state_is_not_made_anew_while_streamed_answers_hold_it() {
    // A streamed answer to a client that reads nothing holds the Lua
    // state it runs on: made anew beside it, the full state lived on, and
    // each round of (stalled client, hoarding servlet) added another
    // servlets.memory to the worker (12 rounds: 64 MiB to 777 MiB).
    let config = CONFIG
        .replace("cpu_time = \"300ms\"", "cpu_time = \"60s\"")
        .replace("max_output = \"1MiB\"", "max_output = \"256MiB\"");
    let mut b = Builder::new();
    b.file("servlets/hoard.lua", b"function handle_request(req, res) hoard = hoard or {} for i = 1, 1e9 do hoard[#hoard + 1] = string.rep('x', 1000) .. i end end")
        .file("servlets/stream.lua", b"local piece = string.rep('s', 65536) function handle_request(req, res) res:write(200, {}, piece) for i = 1, 3000 do res:write(piece) end end")
        .file("servlets/count.lua", b"n = (n or 0) + 1 function handle_request(req, res) n = n + 1 res:write(200, {}, tostring(n)) end")
        .config(&config)
        .workers(1);
    let s = b.start();
    assert_eq!(get(&s, "/servlets/count.lua").body, b"2");
    // The stalled client: its answer's head and first bytes, then nothing.
    let mut c = s.connect();
    c.send(b"GET /servlets/stream.lua HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut first = [0u8; 64];
    use std::io::Read as _;
    c.stream.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(get(&s, "/servlets/hoard.lua").status, 500);
    // Full, and held: 503 (twice: the second without a collection).
    for _ in 0..2 {
        assert_eq!(get(&s, "/servlets/count.lua").status, 503);
    }
    assert!(s
        .wait_stderr_line("streamed answers still run")
        .contains("and 1 streamed answers still run on the Lua state: 503 until they end, then the state is made anew"));
    // Once the stream ends, the state is made anew.
    drop(c);
    let body = wait_for("the state made anew", || {
        let r = get(&s, "/servlets/count.lua");
        (r.status == 200).then_some(r.body)
    });
    assert_eq!(body, b"2");
    assert!(s
        .wait_stderr_line("the Lua state is made anew")
        .contains("[warn] servlets: after servlets.memory was exceeded"));
}

#[test]
fn header_lines_count_in_max_output() {
    // Header lines are gathered outside the Lua state, where
    // servlets.memory does not see them: a loop of res:header with a
    // 1 MiB value grew the worker by 700 MB within a 1 s cpu_time (and
    // sent an 11 MB head). They count in max_output (1 MiB here) with
    // the body.
    let s = server(&[
        ("servlets/heads.lua", "local v = string.rep('v', 1000) function handle_request(req, res) for i = 1, 2000 do res:header('X-A', v) end res:write('x') end"),
        ("servlets/table.lua", "local v = string.rep('v', 600000) function handle_request(req, res) res:write(200, {['X-A'] = v, ['X-B'] = v}, 'x') end"),
        ("servlets/some.lua", "local v = string.rep('v', 1000) function handle_request(req, res) for i = 1, 900 do res:header('X-A', v) end res:write(string.rep('b', 100000)) end"),
    ]);
    for path in ["heads", "table"] {
        let r = get(&s, &format!("/servlets/{path}.lua"));
        assert_eq!(r.status, 500, "{path}");
        assert!(!r.raw.windows(3).any(|w| w == b"X-A"), "{path}");
        assert!(s
            .wait_stderr_line(&format!("servlet servlets/{path}.lua"))
            .contains("the answer is longer than servlets.max_output (1048576 bytes)"));
    }
    // Within it, all go out.
    let r = get(&s, "/servlets/some.lua");
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.iter().filter(|(n, _)| n == "X-A").count(), 900);
    assert_eq!(r.body.len(), 100000);
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
}

#[test]
fn a_singleton_header_written_again_is_replaced() {
    // Two Content-Type lines went out as written (RFC 9110 §5.3: only a
    // list field, or Set-Cookie, may be repeated; a CGI script's head
    // with two is refused, 502): the last value replaces the first, as
    // ngx.header's or mod_magnet's resp_header's would.
    let s = server(&[
        ("servlets/dup.lua", "function handle_request(req, res) res:header('Content-Type', 'text/html') res:header('X-A', '1') res:header('Set-Cookie', 'a=1') res:header('content-type', 'text/plain') res:header('Set-Cookie', 'b=2') res:write(200, {['ETag'] = '\"2\"'}, 'x') end"),
        ("servlets/moved.lua", "function handle_request(req, res) res:header('Location', '/a') res:header('X-B', '2') res:redirect('/b', 301) end"),
    ]);
    // Twice: the second answer's lines are those the first one checked.
    for _ in 0..2 {
        let r = get(&s, "/servlets/dup.lua");
        assert_eq!(r.status, 200);
        let fields: Vec<(&str, &str)> = r
            .headers
            .iter()
            .filter(|(n, _)| n != "Server" && n != "Date")
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("X-A", "1"),
                ("Set-Cookie", "a=1"),
                ("content-type", "text/plain"),
                ("Set-Cookie", "b=2"),
                ("ETag", "\"2\""),
                ("Content-Length", "1"),
            ]
        );
        let r = get(&s, "/servlets/moved.lua");
        assert_eq!(r.status, 301);
        assert!(
            r.head
                .ends_with("X-B: 2\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n"),
            "{}",
            r.head
        );
    }
}

#[test]
fn a_servlet_that_yields_in_a_loop_is_stopped_within_cpu_time() {
    // handle_request's own coroutine.yield() goes to brisk, which resumes
    // it at once; the budget counted the ticks inside each resume alone,
    // not brisk's work between them for the servlet: such a loop ran 13
    // to 35 % past cpu_time (300 ms: 35 to 42 of the worker's 10 ms
    // clock ticks, where a `while true do end` takes 31). Now the whole
    // of it counts: the worker's CPU time (/proc) for it is the budget's
    // (101 ticks for 1 s), to within a few ticks.
    let config = CONFIG.replace("cpu_time = \"300ms\"", "cpu_time = \"1s\"");
    let s = one_worker(
        &[(
            "servlets/yield.lua",
            "function handle_request(req, res) while true do coroutine.yield() end end",
        )],
        &config,
    );
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
    let before = worker_cpu_ticks(s.pid());
    // (A second of CPU can take several on a busy machine.)
    let mut c = s.connect();
    c.stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    c.send(b"GET /servlets/yield.lua HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut raw = Vec::new();
    use std::io::Read as _;
    let _ = c.stream.read_to_end(&mut raw);
    // Nothing was written when the budget ran out: the CPU limit's 503,
    // as for a `while true do end` (it was a 500: the first yield made
    // the answer a streamed one, whose failing first piece is a 500).
    assert!(
        raw.starts_with(b"HTTP/1.1 503 Service Unavailable\r\n"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    let used = worker_cpu_ticks(s.pid()) - before;
    assert!(s
        .wait_stderr_line("servlet servlets/yield.lua")
        .contains("servlets.cpu_time exceeded"));
    assert!((100..=107).contains(&used), "{used} ticks of CPU");
}

#[test]
fn an_xpcall_handler_does_not_escape_the_cpu_limit() {
    // LuaJIT calls xpcall's handler before it unwinds, still inside the
    // hook that raised the CPU limit's error, where no hook fires: a
    // handler that looped held its worker at 100 % CPU for ever (every
    // client of that worker waited, and SIGTERM never ended the server).
    let s = one_worker(
        &[
            ("servlets/handler.lua", "function handle_request(req, res) xpcall(function() while true do end end, function(e) while true do end end) res:write('survived') end"),
            ("servlets/nested.lua", "local function spin() while true do end end\nfunction handle_request(req, res) xpcall(spin, function(e) xpcall(spin, spin) while true do end end) end"),
            // Any other error's handler runs as before, with its arguments.
            ("servlets/handled.lua", "function handle_request(req, res) local ok, e = xpcall(function(a, b) error(a .. b, 0) end, function(e) return 'handled ' .. e end, 'x', 'y') local ok2, e2, e3 = xpcall(function() return 1, 2 end, error) res:write(tostring(ok) .. ' ' .. e .. ' ' .. tostring(ok2) .. ' ' .. e2 .. e3) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[
            ("handler", 503, "servlets.cpu_time exceeded"),
            ("nested", 503, "servlets.cpu_time exceeded"),
        ],
    );
    assert_eq!(
        get(&s, "/servlets/handled.lua").text(),
        "false handled xy true 12"
    );
}

#[test]
fn table_insert_far_below_the_first_position_is_refused() {
    // LuaJIT's table.insert(t, pos, v) moves every element from #t + 1
    // down to pos in one C loop, where the hook never fires: a position
    // of -1e9 (or 2^31, which it reads as -2^31) held the worker for
    // minutes past cpu_time. Lua 5.2 and later refuse such a position.
    let s = one_worker(
        &[
            ("servlets/low.lua", "function handle_request(req, res) table.insert({}, -1e9, 1) end"),
            ("servlets/wrap.lua", "function handle_request(req, res) local ok, e = pcall(table.insert, {}, 2^31, 1) res:write(tostring(ok) .. ' ' .. e) end"),
            // Every other use answers as LuaJIT's.
            ("servlets/insert.lua", "function handle_request(req, res) local t = {'b'} table.insert(t, 'c') table.insert(t, 1, 'a') table.insert(t, '2', 'x') table.insert(t, 10, 'z') local ok, e = pcall(table.insert, t) res:write(table.concat(t) .. t[10] .. ' ' .. tostring(ok) .. ' ' .. e) end"),
        ],
        CONFIG,
    );
    each_answers(&s, &[("low", 500, "position out of bounds")]);
    assert_eq!(
        get(&s, "/servlets/wrap.lua").text(),
        "false bad argument #2 to 'insert' (position out of bounds)"
    );
    assert_eq!(
        get(&s, "/servlets/insert.lua").text(),
        "axbcz false wrong number of arguments to 'insert'"
    );
}

#[test]
fn res_write_inside_a_c_call_gathers_instead_of_failing() {
    // res:write yields to brisk once 64 KiB are gathered, and a yield
    // cannot cross a C call: written from a gsub callback, a sort
    // comparator or a gsub table's __index (or from a coroutine resumed
    // there), the answer failed (500, "attempt to yield across C-call
    // boundary"), only once it grew past 64 KiB. It now goes on
    // gathering there, and leaves once the servlet can yield again.
    let big = "local big = string.rep('y', 30000)\n";
    let gsub = format!("{big}function handle_request(req, res) local s = ('abcde'):gsub('.', function(c) res:write(big) return c end) res:write(s) end");
    let sort = format!("{big}function handle_request(req, res) local t = {{3, 2, 1}} table.sort(t, function(a, b) res:write(big) return a < b end) res:write(table.concat(t)) end");
    let index = format!("{big}function handle_request(req, res) local s = ('xxxxx'):gsub('x', setmetatable({{}}, {{__index = function() res:write(big) return 'z' end}})) res:write(s) end");
    let co = format!("{big}function handle_request(req, res) local s = ('abcde'):gsub('.', function(c) local f = coroutine.wrap(function() res:write(big) res:write(big) return c end) return f() end) res:write(s) end");
    let s = server(&[
        ("servlets/gsub.lua", &gsub),
        ("servlets/sort.lua", &sort),
        ("servlets/index.lua", &index),
        ("servlets/co.lua", &co),
    ]);
    for (path, writes, tail) in [
        ("gsub", 5, "abcde"),
        ("sort", 0, "123"),
        ("index", 5, "zzzzz"),
        ("co", 10, "abcde"),
    ] {
        let r = get(&s, &format!("/servlets/{path}.lua"));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let body = r.text();
        assert!(body.ends_with(tail), "{path}");
        if writes > 0 {
            assert_eq!(body.len(), writes * 30000 + tail.len(), "{path}");
        } else {
            assert!(
                body.len() >= 2 * 30000 + tail.len(),
                "{path}: {}",
                body.len()
            );
        }
    }
}

#[test]
fn require_gives_the_libraries_as_lua_does() {
    // `local bit = require("bit")` starts much LuaJIT code: it failed
    // ("no bit.lua in the servlet directories"), as did require "string".
    // Each is the servlet's own copy, the global of that name.
    let s = server(&[(
        "servlets/libs.lua",
        "local bit = require('bit')\nfunction handle_request(req, res) local same = true for _, n in ipairs({'string', 'table', 'math', 'os', 'bit', 'coroutine'}) do same = same and require(n) == _G[n] end res:write(bit.band(7, 3) .. ' ' .. tostring(same) .. ' ' .. tostring(require('_G') == _G)) end",
    )]);
    assert_eq!(get(&s, "/servlets/libs.lua").text(), "3 true true");
}

#[test]
fn a_servlet_file_larger_than_the_memory_limit_is_not_read() {
    // A servlet (or module) file was read whole into the worker, outside
    // servlets.memory, before Lua saw it: a 1 GiB sparse file took the
    // worker to 2 GiB and 5 s of parsing, and a larger one could take the
    // whole server down. (Sparse files here: nothing is written.)
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes());
    b.file("servlets/big.lua", b"");
    b.file("servlets/bigmod.lua", b"");
    b.file(
        "servlets/usebig.lua",
        b"function handle_request(req, res) local ok, e = pcall(require, 'bigmod') res:write(tostring(ok) .. ' ' .. tostring(e)) end",
    );
    for name in ["big", "bigmod"] {
        std::fs::OpenOptions::new()
            .write(true)
            .open(b.root().join(format!("servlets/{name}.lua")))
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
    }
    b.config(CONFIG).workers(1);
    let s = b.start();
    let r = get(&s, "/servlets/big.lua");
    assert_eq!(r.status, 500);
    let line = s.wait_stderr_line("servlet servlets/big.lua");
    assert!(line.contains("larger than servlets.memory"), "{line}");
    let r = get(&s, "/servlets/usebig.lua");
    assert!(
        r.text().contains("larger than servlets.memory"),
        "{}",
        r.text()
    );
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
}

#[test]
fn c_functions_that_call_lua_nest_within_the_workers_stack() {
    // string.format's %s calls __tostring, load calls its reader and
    // os.time reads its table's fields (and so __index), each with a C
    // call on the worker's stack and no bound of LuaJIT's: nested in
    // themselves, they overflowed the stack and the whole server died
    // ("has overflowed its stack"), every worker with it.
    let s = one_worker(
        &[
            ("servlets/format.lua", "function handle_request(req, res) local t t = setmetatable({}, {__tostring = function(x) return string.format('%s', x) end}) res:write(string.format('%s', t)) end"),
            ("servlets/method.lua", "function handle_request(req, res) local t t = setmetatable({}, {__tostring = function(x) return ('%s'):format(x) end}) res:write(('%s'):format(t)) end"),
            ("servlets/load.lua", "local function r() local f, e = load(r) if not f then error(e, 0) end return nil end\nfunction handle_request(req, res) local f, e = load(r) error(e, 0) end"),
            ("servlets/time.lua", "function handle_request(req, res) local t t = setmetatable({}, {__index = function(s, k) return os.time(s) end}) res:write(os.time(t)) end"),
            // Used as before, they answer as before.
            ("servlets/used.lua", "function handle_request(req, res) local t = setmetatable({}, {__tostring = function() return 'T' end}) local parts = {'return ', '1 + 1'} local f = load(function() return table.remove(parts, 1) end) res:write(string.format('%s %d %5.1f', t, f(), 2.25) .. ' ' .. os.time({year = 2000, month = 1, day = 1, hour = 12}) - os.time({year = 2000, month = 1, day = 1, hour = 11})) end"),
        ],
        CONFIG,
    );
    each_answers(
        &s,
        &[
            ("format", 500, "C stack overflow"),
            ("method", 500, "C stack overflow"),
            ("load", 500, "C stack overflow"),
            ("time", 500, "C stack overflow"),
        ],
    );
    assert_eq!(get(&s, "/servlets/used.lua").text(), "T 2   2.2 3600");
}

/// A servlet that is not there (or that fails) is brisk's error, not a
/// servlet's answer: the site's `[errors]` page for its status, as for a
/// missing file or CGI script (it was the built-in page, while the
/// file next to it got the site's), and a servlet's own error answers
/// stay its own.
#[cfg(feature = "sites")]
#[test]
fn a_servlet_not_found_or_failing_gets_the_site_s_error_page() {
    let mut b = Builder::new();
    b.file("servlets/hello.lua", HELLO.as_bytes())
        .file(
            "servlets/boom.lua",
            b"function handle_request(req, res) error('boom') end",
        )
        .file(
            "servlets/own.lua",
            b"function handle_request(req, res) res:write(404, {['Content-Type'] = 'text/plain'}, 'mine') end",
        )
        .file("errors/404.html", b"<h1>site 404</h1>\n")
        .file("errors/500.html", b"<h1>site 500</h1>\n")
        .config(&format!(
            "{CONFIG}\n[errors]\n404 = \"errors/404.html\"\n500 = \"errors/500.html\"\n"
        ));
    let s = b.start();
    for path in ["/nope.lua", "/servlets/nope.lua", "/servlets/.hidden.lua"] {
        let r = get(&s, path);
        assert_eq!(
            (r.status, r.header("Cache-Control"), r.text().as_str()),
            (404, Some("no-store"), "<h1>site 404</h1>\n"),
            "{path}"
        );
    }
    let r = get(&s, "/servlets/boom.lua");
    assert_eq!((r.status, r.text().as_str()), (500, "<h1>site 500</h1>\n"));
    let r = get(&s, "/servlets/own.lua");
    assert_eq!((r.status, r.text().as_str()), (404, "mine"));
    assert_eq!(get(&s, "/servlets/hello.lua").status, 200);
}

#[test]
fn a_streamed_answer_s_buffers_are_freed_when_it_ends() {
    // A streamed answer's output object lives on until Lua collects the
    // `res` that holds it, which a servlet that allocates little in Lua
    // may not do for thousands of requests: its buffers kept what they
    // grew to, the largest piece written (up to servlets.max_output).
    // 40 clients at a time of an 8 MiB answer added 300 MB a round to
    // the worker, never given back. Now they are freed as the answer
    // ends, and the worker's resting RSS comes back near where it was.
    const RESTED: &str = "free memory returned to the system";
    let config = CONFIG.replace("max_output = \"1MiB\"", "max_output = \"16MiB\"")
        + "\n[log]\nlevel = \"debug\"\n";
    let s = one_worker(
        &[(
            "servlets/big.lua",
            "local s = string.rep('x', 4 * 1024 * 1024) function handle_request(req, res) res:write(200, {}, s) end",
        )],
        &config,
    );
    let rests = || s.stderr().matches(RESTED).count();
    let big = |s: &Server| {
        let r = get(s, "/servlets/big.lua");
        assert_eq!((r.status, r.body.len()), (200, 4 << 20));
    };
    // (Once, so the string is in the baseline, as the code first run.)
    big(&s);
    let before = rests();
    wait_until("the worker to rest", || rests() > before);
    let baseline = s.rss_kib();
    let mut loaded = 0;
    for _ in 0..3 {
        let mut conns: Vec<Client> = (0..12).map(|_| s.connect()).collect();
        for c in conns.iter_mut() {
            c.send(b"GET /servlets/big.lua HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        for c in conns.iter_mut() {
            let r = c.response();
            assert_eq!((r.status, r.body.len()), (200, 4 << 20));
        }
        loaded = loaded.max(s.rss_kib());
    }
    let before = rests();
    wait_until("the worker to rest after the answers", || rests() > before);
    let now = poll(WAIT_LIMIT, || {
        let now = s.rss_kib();
        (now <= baseline + 32 * 1024).then_some(now)
    })
    .unwrap_or_else(|| s.rss_kib());
    eprintln!("RSS {baseline} KiB before, {loaded} KiB under load, {now} KiB after");
    assert!(
        now <= baseline + 32 * 1024,
        "RSS {now} KiB at rest, {baseline} KiB before (under load: {loaded} KiB)"
    );
    big(&s);
}

#[test]
fn no_servlet_holds_a_request_s_coroutine() {
    // Requests run on coroutines of brisk's, each reused by the next
    // request: coroutine.running() handed the servlet its request's, and
    // one kept in a global was, in a later request, another request's
    // streamed answer, which coroutine.resume ran on with the values of
    // this servlet's choosing and brisk's next resume found dead (the
    // answer cut short). coroutine.running() is now nil there, as on Lua
    // 5.1's main coroutine; the servlet's own coroutines are its own.
    let s = one_worker(
        &[
            (
                "servlets/stream.lua",
                "local piece = string.rep('s', 65536) function handle_request(req, res) if req.args.short then return res:write(200, {}, 'short') end res:write(200, {}, piece) for i = 2, 1000 do res:write(piece) end end",
            ),
            (
                "servlets/keep.lua",
                "function handle_request(req, res) if req.args.resume then local ok, e = pcall(coroutine.resume, kept, 'evil') res:write(200, {}, tostring(ok) .. ' ' .. tostring(e)) return end kept = coroutine.running() local co = coroutine.create(function() return coroutine.running() end) local _, inside = coroutine.resume(co) local w = coroutine.wrap(function() return coroutine.running() end)() res:write(200, {}, tostring(kept) .. ' ' .. tostring(inside == co) .. ' ' .. type(w)) end",
            ),
        ],
        &CONFIG.replace("max_output = \"1MiB\"", "max_output = \"256MiB\""),
    );
    // (Loaded first: a servlet is loaded on a coroutine of its own.)
    assert_eq!(get(&s, "/servlets/stream.lua?short=1").body, b"short");
    assert_eq!(get(&s, "/servlets/keep.lua").body, b"nil true thread");
    // The coroutine keep.lua ran on is the next request's: a stream
    // (65 MB, more than the sockets hold) whose client reads its head,
    // then stops.
    let mut c = s.connect();
    c.send(b"GET /servlets/stream.lua HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut first = [0u8; 64];
    use std::io::Read as _;
    c.stream.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200 OK\r\n"));
    let r = get(&s, "/servlets/keep.lua?resume=1");
    assert!(
        r.body.starts_with(b"false "),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    // The stream goes on to its end.
    c.stream.set_read_timeout(Some(WAIT_LIMIT)).unwrap();
    let mut raw = first.to_vec();
    let mut buf = vec![0u8; 1 << 16];
    while !raw.ends_with(b"\r\n0\r\n\r\n") {
        match c.stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    assert!(
        raw.ends_with(b"\r\n0\r\n\r\n"),
        "cut short after {} bytes",
        raw.len()
    );
    assert!(raw.len() > 1000 * 65536);
    assert!(!s.stderr().contains("cannot resume"));
}

/// A directory named as a servlet (`x.lua/`) is no servlet: it is
/// answered as the static files answer a directory asked for without its
/// final `/` (301 to it, the query kept), and below it the static files
/// answer (its index, a listing with `autoindex`, else 403). It was a
/// 403 at once.
#[test]
fn a_directory_named_like_a_servlet_is_a_directory() {
    let s = server(&[("servlets/app.lua/index.html", "the index\n")]);
    let r = get(&s, "/servlets/app.lua?a=1");
    assert_eq!(r.status, 301, "{}", r.text());
    assert_eq!(r.header("Location"), Some("/servlets/app.lua/?a=1"));
    let r = get(&s, "/servlets/app.lua/");
    assert_eq!((r.status, r.text()), (200, "the index\n".to_string()));
    // A servlet that is not there is still a 404.
    assert_eq!(get(&s, "/servlets/none.lua").status, 404);
}
