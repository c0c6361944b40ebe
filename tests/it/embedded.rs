//! brisk as a library: handlers mounted at paths, answering next to the
//! static files, checked on the wire.

use crate::common;

use std::io::Write as _;
use std::net::SocketAddr;

use brisk::config::{AuthRule, Config, HeaderRule, PathMatch};
use brisk::handlers::app::{Request, Response};
use brisk::Server;
use common::embedded::App;
use common::*;

// `/api/` echoes the request, `/status` answers `ok`, `/boom` panics,
// `/weird` sets status 99, `/bad-header` tries header lines it may not
// write; the static root holds `a.txt`.

fn echo(req: &Request<'_>, resp: &mut Response<'_>) {
    resp.header("Content-Type", "text/plain").unwrap();
    let b = resp.body();
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    writeln!(b, "method={}", text(req.method)).unwrap();
    writeln!(b, "path={}", text(req.path)).unwrap();
    writeln!(b, "rest={}", text(req.rest)).unwrap();
    writeln!(b, "query={}", text(req.query.unwrap_or(b"-"))).unwrap();
    writeln!(b, "x-test={}", text(req.header("x-test").unwrap_or(b"-"))).unwrap();
    writeln!(b, "peer={}", req.peer.ip()).unwrap();
    if let Some(user) = req.user {
        writeln!(b, "user={}", text(user)).unwrap();
    }
    writeln!(b, "body={}", text(req.body)).unwrap();
}

fn config(dir: &TempDir) -> Config {
    let mut cfg = common::embedded::config(dir);
    std::fs::write(cfg.site.root.join("a.txt"), b"AAAA").unwrap();
    cfg.limits.max_body = 64;
    cfg
}

fn start(tweak: impl FnOnce(&mut Config)) -> App {
    let dir = TempDir::new("embedded");
    let mut cfg = config(&dir);
    tweak(&mut cfg);
    App::start(cfg, dir, |server| {
        server
            .mount("/api/", echo)
            .unwrap()
            .mount("/status", |_: &Request<'_>, r: &mut Response<'_>| {
                r.write(b"ok")
            })
            .unwrap()
            .mount("/boom", |_: &Request<'_>, _: &mut Response<'_>| {
                panic!("handler failure on purpose")
            })
            .unwrap()
            .mount("/weird", |_: &Request<'_>, r: &mut Response<'_>| {
                r.set_status(99)
            })
            .unwrap()
            .mount("/bad-header", |_: &Request<'_>, r: &mut Response<'_>| {
                let refused = [
                    r.header("X-Split", "a\r\nSet-Cookie: x=1").is_err(),
                    r.header("Content-Length", "1").is_err(),
                    r.header("Bad Name", "v").is_err(),
                ];
                r.set_status(201);
                r.header("X-Fine", "yes").unwrap();
                r.write(format!("{refused:?}").as_bytes());
            })
            .unwrap()
            .mount("/hop-by-hop", |_: &Request<'_>, r: &mut Response<'_>| {
                // Fields of the connection, not of the answer (RFC 9110
                // §7.6.1): each refused, as Connection is.
                for name in ["Keep-Alive", "Upgrade", "proxy-connection", "TE", "Trailer"] {
                    match r.header(name, "x") {
                        Ok(()) => r.write(format!("{name}: taken\n").as_bytes()),
                        Err(e) => r.write(format!("{e}\n").as_bytes()),
                    }
                }
            })
            .unwrap();
    })
}

const ECHO_GET: &str = "method=GET\npath=/api/items/7\nrest=items/7\nquery=x=1&y\nx-test=hello\npeer=127.0.0.1\nbody=\n";

#[test]
fn a_mounted_handler_answers_byte_exact_and_static_files_stay() {
    let app = start(|_| {});
    let r = app.request(b"GET /api/items/./%37?x=1&y HTTP/1.1\r\nHost: x\r\nX-Test: hello\r\n\r\n");
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
            ECHO_GET.len()
        )
    );
    assert_eq!(r.text(), ECHO_GET);
    // Outside the mounts: the static handler.
    assert_eq!(
        app.request(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"AAAA"
    );
    // `/status` is one exact path; `/api/` needs its slash.
    assert_eq!(
        app.request(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"ok"
    );
    assert_eq!(
        app.request(b"GET /status/x HTTP/1.1\r\nHost: x\r\n\r\n")
            .status,
        404
    );
    assert_eq!(
        app.request(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n").status,
        404
    );
}

#[cfg(feature = "tls")]
#[test]
fn mounted_handlers_answer_over_https_as_over_http() {
    let app = start(|cfg| cfg.tls = Some(common::tls::config()));
    let requests = b"GET /api/items/7?x=1&y HTTP/1.1\r\nHost: x\r\nX-Test: hello\r\n\r\n\
        POST /api/p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\
        GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut plain = app.connect();
    plain.send(requests);
    let mut tls = Client::connect_tls(app.addrs[1], common::tls::client_conn("a.test"));
    tls.send(requests);
    for _ in 0..3 {
        let (p, t) = (plain.response(), tls.response());
        assert_eq!(t.status, 200);
        assert_eq!((t.status, &t.body), (p.status, &p.body));
    }
    tls.expect_closed();
}

#[test]
fn head_gets_the_get_length_without_the_body() {
    let app = start(|_| {});
    let mut c = app.connect();
    c.send(b"HEAD /api/items/7?x=1&y HTTP/1.1\r\nHost: x\r\nX-Test: hello\r\n\r\n");
    let r = c.head_response();
    let echo = ECHO_GET.replace("method=GET", "method=HEAD");
    assert_eq!(
        r.header("Content-Length"),
        Some(echo.len().to_string().as_str())
    );
    // Nothing follows the head: the next answer on the connection is whole.
    c.send(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, b"ok");
}

#[test]
fn bodies_arrive_whole_and_pipelined_requests_keep_their_order() {
    let app = start(|_| {});
    let mut c = app.connect();
    // A Content-Length body in pieces, a chunked one, then a static file,
    // all on one connection, partly pipelined.
    c.send(b"POST /api/f HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello");
    // The rest of the body comes in a read of its own.
    c.wait_until_read();
    c.send(b" world");
    c.send(
        b"PUT /api/g HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(r.status, 200);
    assert!(
        r.text().starts_with("method=POST\npath=/api/f\n"),
        "{}",
        r.text()
    );
    assert!(r.text().ends_with("\nbody=hello world\n"), "{}", r.text());
    let r = c.response();
    assert!(r.text().starts_with("method=PUT\n"), "{}", r.text());
    assert!(r.text().ends_with("\nbody=abcde\n"), "{}", r.text());
    assert_eq!(c.response().body, b"AAAA");
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let app = start(|_| {});
    let mut c = app.connect();
    c.send(b"POST /api/e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    let interim = c.response();
    assert_eq!(interim.raw, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.send(b"ok");
    assert!(c.response().text().ends_with("\nbody=ok\n"));
}

#[test]
fn bodies_over_the_limit_get_413() {
    let app = start(|_| {});
    let mut c = app.connect();
    c.send(b"POST /api/big HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n");
    let r = c.response();
    assert_error(&r, 413, "Content Too Large", "", Conn::Close);
    c.expect_closed();
    // Chunked: found out only while reading; the handler never runs.
    let mut c = app.connect();
    c.send(b"POST /api/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n");
    c.send(&[b'x'; 64]);
    c.send(b"\r\n1\r\ny\r\n0\r\n\r\n");
    let r = c.response();
    assert_error(&r, 413, "Content Too Large", "", Conn::Close);
    c.expect_closed();
}

#[test]
fn a_panicking_or_wrong_handler_gets_a_500_and_the_worker_goes_on() {
    let app = start(|_| {});
    let mut c = app.connect();
    c.send(b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET /weird HTTP/1.1\r\nHost: x\r\n\r\nGET /status HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_error(&c.response(), 500, "Internal Server Error", "", Conn::None);
    assert_error(&c.response(), 500, "Internal Server Error", "", Conn::None);
    assert_eq!(c.response().body, b"ok");
    wait_until("the error log", || {
        let log = app.error_log();
        log.contains("[error] handler at /boom panicked for /boom")
            && log.contains(
                "[error] handler at /weird answered with status 99, not a final one for /weird",
            )
    });
}

#[test]
fn header_lines_are_checked_and_rules_apply() {
    let app = start(|cfg| {
        cfg.site.headers.push(HeaderRule {
            matcher: PathMatch::Prefix("/bad-header".to_string()),
            set: vec![("Cache-Control".to_string(), "no-store".to_string())],
        });
    });
    let r = app.request(b"GET /bad-header HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 201 Created\r\nServer: brisk\r\nDate: {DATE}\r\nX-Fine: yes\r\nCache-Control: no-store\r\nContent-Length: 18\r\n\r\n")
    );
    assert_eq!(r.text(), "[true, true, true]");
}

/// A handler cannot set a field of the connection: over HTTP/1.1 its
/// `Keep-Alive: x` went out as set (HTTP/2 and HTTP/3 dropped it, and
/// so does brisk a CGI program's).
#[test]
fn fields_of_the_connection_are_refused_as_framing_fields_are() {
    let app = start(|_| {});
    let r = app.request(b"GET /hop-by-hop HTTP/1.1\r\nHost: x\r\n\r\n");
    let body = "Keep-Alive belongs to the connection, which the server manages\n\
        Upgrade belongs to the connection, which the server manages\n\
        proxy-connection belongs to the connection, which the server manages\n\
        TE belongs to the connection, which the server manages\n\
        Trailer belongs to the connection, which the server manages\n";
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    );
    assert_eq!(r.text(), body);
}

#[test]
fn mounts_survive_a_reload() {
    let mut app = start(|_| {});
    let logs = app.logs.take().unwrap();
    let mut cfg = config(&app.dir);
    cfg.server_header = "again".to_string();
    app.running.as_mut().unwrap().reload(cfg, &logs).unwrap();
    app.logs = Some(logs);
    let r = app.request(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.header("Server"), Some("again"));
    assert_eq!(r.body, b"ok");
}

#[test]
fn a_prefix_that_is_not_a_normalised_path_is_refused() {
    let dir = TempDir::new("embedded");
    let mut server = Server::bind(config(&dir)).unwrap();
    for bad in ["api/", "/a/../b/", "/a//b/"] {
        let e = server.mount(bad, echo).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!("cannot mount a handler at {bad:?}: expected a normalised absolute path such as \"/api/\" or \"/status\"")
        );
    }
}

/// The first mount that matches answers: one that an earlier mount
/// covers whole could never answer, and is refused (it was taken
/// silently), naming both.
#[test]
fn a_prefix_an_earlier_mount_covers_is_refused() {
    let dir = TempDir::new("embedded");
    let mut server = Server::bind(config(&dir)).unwrap();
    server.mount("/api/", echo).unwrap();
    server.mount("/status", echo).unwrap();
    for (bad, before) in [
        ("/api/", "/api/"),
        ("/api/x", "/api/"),
        ("/api/v2/", "/api/"),
        ("/status", "/status"),
    ] {
        let e = server.mount(bad, echo).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!("cannot mount a handler at {bad:?}: the one mounted at {before:?} before it takes every path there (the first match answers: mount the longer prefix first)")
        );
    }
    // Longer prefixes first, and neighbours, are fine.
    for good in ["/status/", "/apix", "/ap", "/"] {
        server.mount(good, echo).unwrap();
    }
    assert!(server.mount("/anything", echo).is_err());
}

#[test]
fn auth_rules_cover_mounts_and_the_handler_sees_the_user() {
    let app = start(|cfg| {
        let file = cfg.site.root.parent().unwrap().join("htpasswd");
        // ann:test
        std::fs::write(&file, "ann:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\n").unwrap();
        cfg.site.auth.push(AuthRule {
            matcher: PathMatch::Prefix("/api/".to_string()),
            realm: "r".to_string(),
            htpasswd: file,
            allow_plaintext: false,
            methods: Default::default(),
            origin: String::new(),
        });
    });
    let r = app.request(b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
    assert_eq!(r.status, 401);
    let r = app.request(
        b"POST /api/x HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YW5uOnRlc3Q=\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert!(r.text().ends_with("\nuser=ann\nbody=hi\n"), "{}", r.text());
    assert_eq!(
        app.request(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"ok"
    );
}

#[test]
fn bodies_held_for_handlers_are_bounded_per_worker() {
    // 64-byte bodies at most, 100 bytes of them at once.
    let app = start(|cfg| cfg.limits.handler_bodies = 100);
    let mut first = app.connect();
    first.send(b"POST /api/a HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n");
    first.send(&[b'a'; 50]);
    let mut second = app.connect();
    second.send(b"POST /api/b HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n");
    second.send(&[b'b'; 40]);
    // 90 held: both wait. Ten more for the second fit exactly…
    second.send(&[b'b'; 10]);
    second.expect_silence(std::time::Duration::from_millis(100));
    // …one more does not: that request is refused, the other one goes on.
    second.send(b"b");
    assert_error(
        &second.response(),
        503,
        "Service Unavailable",
        "",
        Conn::Close,
    );
    second.expect_closed();
    first.send(&[b'a'; 10]);
    assert!(first
        .response()
        .text()
        .ends_with(&format!("\nbody={}\n", "a".repeat(60))));
    // What the refused and the answered requests held is free again.
    let mut third = app.connect();
    third.send(b"POST /api/c HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n");
    third.send(&[b'c'; 60]);
    assert_eq!(third.response().status, 200);
    // A client that leaves in the middle frees its share too.
    let mut gone = app.connect();
    gone.send(b"POST /api/d HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n");
    gone.send(&[b'd'; 59]);
    let (client, server) = gone.ends();
    drop(gone);
    wait_until_server_closed(client, server);
    let mut last = app.connect();
    last.send(b"POST /api/e HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n");
    last.send(&[b'e'; 60]);
    assert_eq!(last.response().status, 200);
}

#[test]
fn any_method_reaches_a_mounted_handler() {
    // A handler covering the path sees the method as sent; outside the
    // mounts the static handler answers 501 for a method it does not know.
    let app = start(|_| {});
    for (method, body) in [("PROPFIND", "<p/>"), ("MKCOL", ""), ("QUERY", "q=1")] {
        let r = app.request(
            format!(
                "{method} /api/dav HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        assert_eq!(r.status, 200, "{method}");
        assert!(
            r.text()
                .starts_with(&format!("method={method}\npath=/api/dav\n")),
            "{}",
            r.text()
        );
        assert!(
            r.text().ends_with(&format!("\nbody={body}\n")),
            "{}",
            r.text()
        );
    }
    let r = app.request(b"PROPFIND /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_error(&r, 501, "Not Implemented", "", Conn::None);
}

/// `examples/embed.rs`, as `cargo test` builds it beside the test
/// programs; `None` when only this test target was built (no binary, or
/// one older than the source).
fn example_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("embed");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/embed.rs");
    let built = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    let written = std::fs::metadata(source).and_then(|m| m.modified()).ok()?;
    (built >= written).then_some(path)
}

/// Starts the example with `addr` as its argument (or, with `env`, in
/// `BRISK_ADDR`), reads the URL it prints, and fetches `/hello?name=ex`.
fn run_example(bin: &std::path::Path, addr: &str, env: bool) -> (SocketAddr, Vec<u8>) {
    let dir = TempDir::new("example");
    let err_path = dir.path.join("stderr");
    let mut cmd = std::process::Command::new(bin);
    if env {
        cmd.env("BRISK_ADDR", addr);
    } else {
        cmd.arg(addr).env_remove("BRISK_ADDR");
    }
    let child = cmd
        .current_dir(&dir.path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run the example");
    let _guard = KillOnDrop(child);
    let mut seen = None;
    wait_until("the example's URL", || {
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        seen = err
            .lines()
            .find_map(|l| l.strip_prefix("listening on http://"))
            .and_then(|a| a.strip_suffix('/'))
            .and_then(|a| a.parse::<SocketAddr>().ok());
        seen.is_some()
    });
    let addr = seen.expect("an address");
    let mut c = Client::connect(addr);
    c.send(b"GET /hello?name=ex HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    (addr, c.response().body)
}

#[test]
fn the_example_listens_where_it_is_told() {
    let Some(bin) = example_binary() else {
        skip("examples/embed is not built or stale (run the whole `cargo test`)");
        return;
    };
    let (addr, body) = run_example(&bin, "127.0.0.1:0", false);
    assert_ne!(addr.port(), 8080);
    assert_eq!(body, b"Hello, ex!\n");
    let (_, body) = run_example(&bin, "127.0.0.1:0", true);
    assert_eq!(body, b"Hello, ex!\n");
    // A bad address is refused with a word.
    let out = std::process::Command::new(&bin)
        .arg("localhost")
        .output()
        .expect("run the example");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the argument: expected an address"), "{err}");
}

/// A handler may stop the server: the other workers are drained and
/// joined, its own worker sends its answer and exits once it returns.
/// (Joining its own thread failed, and the handler panicked: a 500, and
/// the other workers were never waited for.)
#[test]
fn a_handler_may_stop_the_server() {
    use brisk::log::LogService;
    use std::sync::{Arc, Mutex};
    let dir = TempDir::new("stop-from-handler");
    let mut cfg = config(&dir);
    cfg.workers = 2;
    let logs = LogService::start(&cfg.log).unwrap();
    let slot: Arc<Mutex<Option<brisk::server::Running>>> = Arc::default();
    let (stopped, told) = std::sync::mpsc::channel();
    let mut server = Server::bind(cfg).unwrap();
    let held = Arc::clone(&slot);
    let stopped = Mutex::new(stopped);
    server
        .mount("/stop", move |_: &Request<'_>, r: &mut Response<'_>| {
            let running = held.lock().unwrap().take();
            if let Some(running) = running {
                running.stop();
                stopped.lock().unwrap().send(()).unwrap();
            }
            r.write(b"stopped");
        })
        .unwrap();
    let addr = server.local_addrs()[0];
    *slot.lock().unwrap() = Some(server.start(&logs).unwrap());
    let mut c = Client::connect(addr);
    c.send(b"GET /stop HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!((r.status, &r.body[..]), (200, &b"stopped"[..]));
    c.expect_closed();
    told.recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    // The handler's own worker lets its copy of the listening socket go
    // once the handler has returned, so as soon as the machine lets it
    // run: connections are refused from then on (the other worker's
    // copy went before `stop` returned).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "{addr} still takes connections 10 s after the stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    logs.shutdown();
}

#[test]
fn a_stop_does_not_wait_for_ever_on_a_handler_that_never_returns() {
    // A handler that does not return holds its worker past any drain:
    // the stop waited for it for ever (a SIGTERM never ended brisk).
    // Now it waits `timeouts.shutdown` and STOP_GRACE, then returns and
    // says how many workers it left.
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;
    let (entered, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (e, r) = (Arc::clone(&entered), Arc::clone(&release));
    let dir = TempDir::new("embedded-stuck");
    let mut cfg = common::embedded::config(&dir);
    cfg.timeouts.shutdown = Duration::from_millis(200);
    let mut app = App::start(cfg, dir, move |server| {
        server
            .mount("/stuck", move |_: &Request<'_>, resp: &mut Response<'_>| {
                e.store(true, Ordering::SeqCst);
                // (Let go by the test once it is done: bounded anyway.)
                for _ in 0..12_000 {
                    if r.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                resp.write(b"late")
            })
            .unwrap();
    });
    let mut c = app.connect();
    c.send(b"GET /stuck HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_until("the handler to run", || entered.load(Ordering::SeqCst));
    let running = app.running.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(running.stop()).unwrap());
    let left = rx.recv_timeout(Duration::from_secs(60));
    release.store(true, Ordering::SeqCst);
    assert_eq!(left, Ok(1), "the stop returned, leaving the stuck worker");
}
