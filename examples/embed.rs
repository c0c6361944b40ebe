//! brisk as a library: the current directory as static files, plus three
//! handlers. `cargo run --example embed`, then
//! `curl http://127.0.0.1:8080/hello?name=you`,
//! `curl -d 'some text' http://127.0.0.1:8080/api/count` or
//! `curl http://127.0.0.1:8080/later` (answered from another thread).
//!
//! It listens on the address given as its argument
//! (`cargo run --example embed -- 127.0.0.1:9000`, port 0 for any free
//! one), else on `$BRISK_ADDR`, else on 127.0.0.1:8080, and prints the
//! URL on stderr.

use std::io::Write as _;
use std::net::SocketAddr;

use brisk::config::Config;
use brisk::handlers::app::{Request, Response};
use brisk::log::LogService;
use brisk::server::Server;

fn hello(req: &Request<'_>, resp: &mut Response<'_>) {
    let name = req
        .query
        .and_then(|q| q.strip_prefix(b"name="))
        .unwrap_or(b"world");
    resp.header("Content-Type", "text/plain; charset=utf-8")
        .expect("a valid header");
    resp.write(b"Hello, ");
    resp.write(name);
    resp.write(b"!\n");
}

fn count(req: &Request<'_>, resp: &mut Response<'_>) {
    if req.method != b"POST" {
        resp.set_status(405);
        resp.header("Allow", "POST").expect("a valid header");
        return;
    }
    let words = req
        .body
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    resp.header("Content-Type", "application/json")
        .expect("a valid header");
    let _ = writeln!(
        resp.body(),
        "{{\"bytes\":{},\"words\":{}}}",
        req.body.len(),
        words.count()
    );
}

/// Answers from a thread of its own, as a handler that waits on a
/// database would: the worker serves its other clients meanwhile.
fn later(_: &Request<'_>, resp: &mut Response<'_>) {
    let Some(later) = resp.defer() else {
        resp.set_status(500);
        return;
    };
    std::thread::spawn(move || {
        let text = format!("answered by {:?}\n", std::thread::current().id());
        // Err only if the client left meanwhile.
        let _ = later.answer(200, &[("Content-Type", "text/plain")], text.as_bytes());
    });
}

/// The address to listen on: the first argument, else `BRISK_ADDR`, else
/// 127.0.0.1:8080.
fn address() -> Result<SocketAddr, String> {
    let (given, from) = match std::env::args().nth(1) {
        Some(a) => (a, "the argument"),
        None => match std::env::var("BRISK_ADDR") {
            Ok(a) => (a, "BRISK_ADDR"),
            Err(_) => return Ok(SocketAddr::from(([127, 0, 0, 1], 8080))),
        },
    };
    given.parse().map_err(|_| {
        format!("{from}: expected an address such as 127.0.0.1:8080 or [::1]:8080; got {given:?}")
    })
}

fn main() {
    if let Err(e) = serve() {
        eprintln!("embed: {e}");
        std::process::exit(1);
    }
}

/// Serves until interrupted. Each layer's error (`brisk::server::Error`,
/// `brisk::log::LogError`, …) says what failed in its `Display`.
fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let mut cfg = Config {
        listen: vec![address()?],
        workers: 2,
        ..Config::default()
    };
    cfg.site.root = std::env::current_dir()?;
    let logs = LogService::start(&cfg.log)?;
    let mut server = Server::bind(cfg)?;
    server
        .mount("/hello", hello)?
        .mount("/api/count", count)?
        .mount("/later", later)?;
    for a in server.local_addrs() {
        eprintln!("listening on http://{a}/");
    }
    let running = server.start(&logs)?;
    // Serve until interrupted; a real program would wait for its own
    // signal and then call `running.stop()` to drain.
    loop {
        std::thread::park();
        if running.worker_died() {
            running.stop();
            logs.shutdown();
            return Err("a worker stopped".into());
        }
    }
}
