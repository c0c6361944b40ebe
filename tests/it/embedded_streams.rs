//! Embedded handlers beyond a body in memory, on the wire: handlers
//! registered by name and mounted by `[[handlers]]` entries (initialised
//! with their `config`), bodies produced in pieces, files sent by the
//! engine, and answers given later from another thread.

use crate::common;

use std::io::{Read as _, Write as _};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisk::config::{Config, HandlerRule, LogTarget, Value};
use brisk::handlers::app::{Handler, Init, Request, Response};
use brisk::handlers::stream::{BodyStream, Later, LaterError};
use brisk::log::LogService;
use brisk::server::Server;
use common::embedded::App;
use common::*;

fn start(tweak: impl FnOnce(&mut Config), mount: impl FnOnce(&mut Server)) -> App {
    let dir = TempDir::new("streams");
    let mut cfg = common::embedded::config(&dir);
    tweak(&mut cfg);
    App::start(cfg, dir, mount)
}

/// A server whose `/later` defers every answer, handing each `Later` to
/// the test, and whose `/now` answers `now`.
fn deferring_app(tweak: impl FnOnce(&mut Config)) -> (App, mpsc::Receiver<Later>) {
    let (tx, rx) = mpsc::channel();
    let tx: Handoff = Arc::new(Mutex::new(tx));
    let app = start(tweak, |s| {
        s.mount("/later", deferring(tx)).unwrap();
        s.mount("/now", |_: &Request<'_>, r: &mut Response<'_>| {
            r.write(b"now")
        })
        .unwrap();
    });
    (app, rx)
}

/// `n` pieces of `size` bytes, each piece's bytes its own letter.
struct Pieces {
    left: usize,
    size: usize,
    fail_at: Option<usize>,
}

impl BodyStream for Pieces {
    fn fill(&mut self, out: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
        if Some(self.left) == self.fail_at {
            return Err("failed on purpose".into());
        }
        out.resize(out.len() + self.size, b'a' + (self.left % 26) as u8);
        self.left -= 1;
        Ok(self.left > 0)
    }
}

fn pieces_body(n: usize, size: usize) -> Vec<u8> {
    (1..=n)
        .rev()
        .flat_map(|left| std::iter::repeat_n(b'a' + (left % 26) as u8, size))
        .collect()
}

fn streaming(fail_at: Option<usize>) -> impl Fn(&Request<'_>, &mut Response<'_>) + Clone {
    move |req: &Request<'_>, resp: &mut Response<'_>| {
        resp.header("Content-Type", "text/plain").unwrap();
        let length = (req.query == Some(b"len")).then_some(5 * 100_000);
        resp.stream(
            Pieces {
                left: 5,
                size: 100_000,
                fail_at,
            },
            length,
        );
    }
}

/// A server whose `/s` answers five pieces of 100 000 bytes (their
/// length told with `?len`).
fn streaming_app() -> App {
    start(
        |_| {},
        |s| {
            s.mount("/s", streaming(None)).unwrap();
        },
    )
}

#[test]
fn a_body_in_pieces_is_chunked_for_http11_and_delimited_by_close_for_http10() {
    let app = streaming_app();
    let want = pieces_body(5, 100_000);
    let mut c = app.connect();
    c.send(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
    );
    assert!(r.body == want, "{} bytes", r.body.len());
    // The connection stays open: a HEAD gets the head alone, then a
    // length given by the handler is sent as Content-Length.
    c.send(b"HEAD /s HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), None);
    c.send(b"GET /s?len HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(r.header("Content-Length"), Some("500000"));
    assert!(r.body == want);
    // HTTP/1.0: no chunks; the close ends the body.
    let mut c = app.connect();
    c.send(b"GET /s HTTP/1.0\r\n\r\n");
    let mut raw = Vec::new();
    c.stream.read_to_end(&mut raw).unwrap();
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&raw[..at]).to_string();
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(!head.contains("Transfer-Encoding"), "{head}");
    assert!(raw[at..] == want[..]);
}

#[test]
fn a_handler_run_once_its_request_body_is_in_may_answer_in_pieces() {
    let app = streaming_app();
    let want = pieces_body(5, 100_000);
    let mut c = app.connect();
    // The handler runs once the body is in (it waits for it, as for any
    // request with a body), over HTTP/1.1 as over HTTP/2.
    c.send(b"POST /s?len HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), Some("500000"));
    assert!(r.body == want, "{} bytes", r.body.len());
    c.send(
        b"POST /s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    let r = c.response();
    assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
    assert!(r.body == want, "{} bytes", r.body.len());
}

#[test]
fn a_stream_that_fails_is_cut_short_and_logged() {
    let app = start(
        |_| {},
        |s| {
            s.mount("/s", streaming(Some(3))).unwrap();
        },
    );
    let mut c = app.connect();
    c.send(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut raw = Vec::new();
    c.stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{}", &text[..60]);
    // Two pieces, then the close without the last chunk.
    assert!(!raw.ends_with(b"0\r\n\r\n"));
    assert!(raw.len() > 200_000 && raw.len() < 300_000, "{}", raw.len());
    wait_until("the failure logged", || {
        app.error_log().contains("handler at /s: failed on purpose")
    });
}

#[test]
fn a_stream_that_fails_before_its_first_piece_is_answered_500() {
    // Its first piece is asked for before the head goes: the client gets
    // a 500 (and the close, as for any answer that failed before its
    // head), not a 200 cut short; the server goes on.
    let app = start(
        |_| {},
        |s| {
            s.mount("/s", streaming(Some(5))).unwrap();
            s.mount("/now", |_: &Request<'_>, r: &mut Response<'_>| {
                r.write(b"now")
            })
            .unwrap();
        },
    );
    let r = app.request(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!((r.status, r.header("Connection")), (500, Some("close")));
    assert_eq!(
        app.request(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"now"
    );
    wait_until("the failure logged", || {
        app.error_log().contains("handler at /s: failed on purpose")
    });
}

#[test]
fn a_file_handed_to_the_engine_is_sent_whole() {
    let app = start(
        |_| {},
        |s| {
            s.mount("/f", |req: &Request<'_>, resp: &mut Response<'_>| {
                let path = String::from_utf8_lossy(req.query.unwrap_or_default()).to_string();
                let file = std::fs::File::open(path).unwrap();
                resp.header("Content-Type", "application/octet-stream")
                    .unwrap();
                resp.send_file(file).unwrap();
            })
            .unwrap();
        },
    );
    for size in [10, 3_000_000] {
        let path = app.dir.path.join(format!("f{size}"));
        let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let r = app
            .request(format!("GET /f?{} HTTP/1.1\r\nHost: x\r\n\r\n", path.display()).as_bytes());
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Content-Length"), Some(size.to_string().as_str()));
        assert!(r.body == data, "{size}");
    }
}

/// Later answers handed to the test: each request's `Later`.
type Handoff = Arc<Mutex<mpsc::Sender<Later>>>;

fn deferring(tx: Handoff) -> impl Fn(&Request<'_>, &mut Response<'_>) + Clone {
    move |_: &Request<'_>, resp: &mut Response<'_>| {
        resp.header("X-Early", "set before defer").unwrap();
        let later = resp.defer().expect("a worker to wake");
        tx.lock().unwrap().send(later).unwrap();
    }
}

#[test]
fn a_later_answer_comes_from_another_thread_while_the_worker_serves_others() {
    let (app, rx) = deferring_app(|_| {});
    let mut waiting = app.connect();
    waiting.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    // The one worker is free: another client is answered meanwhile.
    assert_eq!(
        app.request(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"now"
    );
    std::thread::spawn(move || {
        later
            .answer(201, &[("Content-Type", "text/plain")], b"from a thread")
            .unwrap()
    })
    .join()
    .unwrap();
    let r = waiting.response();
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 201 Created\r\nServer: brisk\r\nDate: {DATE}\r\nX-Early: set before defer\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n")
    );
    assert_eq!(r.body, b"from a thread");
    // Keep-alive goes on.
    waiting.send(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(waiting.response().body, b"now");
}

/// A file of `size` bytes (each byte from its offset) in `app`'s
/// directory, and its content.
fn later_file(app: &App, size: usize) -> (std::path::PathBuf, Vec<u8>) {
    let path = app.dir.path.join(format!("later{size}"));
    let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

/// Answers `later` from another thread with the file at `path`.
fn send_later_file(later: Later, path: &std::path::Path) {
    let file = std::fs::File::open(path).unwrap();
    std::thread::spawn(move || {
        later
            .send_file(201, &[("Content-Type", "application/octet-stream")], file)
            .unwrap()
    })
    .join()
    .unwrap();
}

#[test]
fn a_later_answer_can_hand_a_file_to_the_engine() {
    let (app, rx) = deferring_app(|_| {});
    let mut c = app.connect();
    // A small file (written behind the head) and one large enough for
    // sendfile, one after the other on a keep-alive connection.
    for size in [10, 3_000_000] {
        let (path, data) = later_file(&app, size);
        c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
        send_later_file(rx.recv_timeout(Duration::from_secs(10)).unwrap(), &path);
        let r = c.response();
        assert_eq!(
            r.masked_head(),
            format!("HTTP/1.1 201 Created\r\nServer: brisk\r\nDate: {DATE}\r\nX-Early: set before defer\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n")
        );
        assert!(r.body == data, "{size}");
    }
    // HEAD: the same head, no body; the connection goes on.
    let (path, _) = later_file(&app, 5000);
    c.send(b"HEAD /later HTTP/1.1\r\nHost: x\r\n\r\n");
    send_later_file(rx.recv_timeout(Duration::from_secs(10)).unwrap(), &path);
    let r = c.head_response();
    assert_eq!(r.header("Content-Length"), Some("5000"));
    c.send(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, b"now");
}

#[test]
fn a_later_answer_streams_in_pieces_and_waits_for_a_slow_client() {
    let (app, rx) = deferring_app(|_| {});
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let writer = std::thread::spawn(move || {
        later.start(200, &[], None).unwrap();
        // 4 MiB in 64 KiB pieces: more than the socket and the
        // worker's buffers hold, so `write` has to wait for the reader.
        for i in 0..64u8 {
            later.write(&[i; 65536]).unwrap();
        }
        later.finish().unwrap();
    });
    let r = c.response();
    writer.join().unwrap();
    assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(r.body.len(), 64 * 65536);
    assert!(r
        .body
        .chunks(65536)
        .enumerate()
        .all(|(i, p)| p.iter().all(|&b| b == i as u8)));
}

#[test]
fn a_later_answer_dropped_unanswered_is_a_500_and_one_never_given_a_504() {
    let (app, rx) = deferring_app(|cfg| cfg.timeouts.handler = Duration::from_secs(1));
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    drop(rx.recv_timeout(Duration::from_secs(10)).unwrap());
    assert_eq!(c.response().status, 500);
    wait_until("the drop logged", || {
        app.error_log()
            .contains("handler at /later: the later answer was dropped without an answer")
    });
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut kept = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let r = c.response();
    assert_eq!(r.status, 504);
    assert_eq!(r.header("Connection"), Some("close"));
    // The thread learns that its answer is not wanted any more.
    assert!(kept.is_gone());
    assert_eq!(kept.start(200, &[], None), Err(LaterError::Gone));
}

#[test]
fn a_client_that_leaves_tells_the_answering_thread() {
    let (app, rx) = deferring_app(|_| {});
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(!later.is_gone());
    c.stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(c);
    wait_until("the answering thread to be told", || later.is_gone());
    // Headers are checked as for any handler.
    let (tx2, rx2) = mpsc::channel();
    let app2 = start(
        |_| {},
        |s| {
            s.mount("/later", deferring(Arc::new(Mutex::new(tx2))))
                .unwrap();
        },
    );
    let mut c = app2.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut later: Later = rx2.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(
        later.start(200, &[("X-Bad", "a\r\nb: c")], None),
        Err(LaterError::Header(_))
    ));
    assert!(matches!(
        later.start(99, &[], None),
        Err(LaterError::Status(99))
    ));
    assert!(matches!(later.write(b"x"), Err(LaterError::Order(_))));
    later.answer(200, &[], b"ok").unwrap();
    assert_eq!(c.response().body, b"ok");
}

/// The access log says what a produced answer sent: its body's bytes,
/// from after its head; and 499 for a request whose client left before
/// any of its answer went out.
#[test]
fn the_access_log_counts_a_produced_body_and_a_client_that_left() {
    let (tx, rx) = mpsc::channel();
    let tx: Handoff = Arc::new(Mutex::new(tx));
    let app = start(
        |cfg| {
            if let LogTarget::File(errors) = &cfg.log.error {
                cfg.log.access = LogTarget::File(errors.with_file_name("access.log"));
            }
        },
        |s| {
            s.mount("/s", streaming(None)).unwrap();
            s.mount("/later", deferring(tx)).unwrap();
        },
    );
    let mut c = app.connect();
    c.send(b"GET /s?len HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body.len(), 500_000);
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    c.stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(c);
    wait_until("the answering thread to be told", || later.is_gone());
    let path = app.dir.path.join("access.log");
    let read = || std::fs::read_to_string(&path).unwrap_or_default();
    wait_until("both answers logged", || read().lines().count() == 2);
    let log = read();
    assert!(log.contains("\"GET /s?len HTTP/1.1\" 200 500000"), "{log}");
    assert!(log.contains("\"GET /later HTTP/1.1\" 499 0"), "{log}");
}

/// A handler that keeps what its init was given.
#[derive(Clone, Default)]
struct Greeter {
    text: String,
}

impl Handler for Greeter {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        let greeting = init.config.get("greeting").and_then(Value::as_str);
        self.text = format!(
            "{} at {}",
            greeting.ok_or("config.greeting: missing")?,
            init.path
        );
        Ok(())
    }

    fn handle(&self, _: &Request<'_>, resp: &mut Response<'_>) {
        resp.write(self.text.as_bytes());
    }
}

fn rule(path: &str, handler: &str, greeting: Option<&str>) -> HandlerRule {
    HandlerRule {
        path: path.into(),
        handler: handler.into(),
        config: Value::Table(
            greeting
                .map(|g| ("greeting".to_string(), Value::String(g.into())))
                .into_iter()
                .collect(),
        ),
        origin: "site.toml:7: handlers[1].handler".into(),
    }
}

#[test]
fn a_registered_handler_is_mounted_once_per_entry_with_its_own_config() {
    let app = start(
        |cfg| {
            cfg.site.handlers = vec![
                rule("/hi", "greeter", Some("hello")),
                rule("/yo/", "greeter", Some("yo")),
            ]
        },
        |s| {
            s.register("greeter", Greeter::default()).unwrap();
            assert!(s.register("greeter", Greeter::default()).is_err());
        },
    );
    assert_eq!(
        app.request(b"GET /hi HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"hello at /hi"
    );
    assert_eq!(
        app.request(b"GET /yo/x HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"yo at /yo/"
    );
}

#[test]
fn an_unknown_name_or_a_failing_init_stops_the_start() {
    let dir = TempDir::new("streams");
    let config = || {
        let mut cfg = Config {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            site: brisk::config::SiteConfig {
                root: dir.path.canonicalize().unwrap(),
                ..Config::default().site
            },
            workers: 1,
            ..Config::default()
        };
        cfg.log.access = LogTarget::Off;
        cfg.log.error = LogTarget::Off;
        cfg
    };
    let logs = LogService::start(&config().log).unwrap();
    for (rules, want) in [
        (
            vec![rule("/g", "greetr", Some("x"))],
            "site.toml:7: handlers[1].handler: no handler is registered as \"greetr\"; did you mean \"greeter\"? registered: one of \"greeter\"",
        ),
        (
            vec![rule("/g", "greeter", None)],
            "site.toml:7: handlers[1].handler: the handler \"greeter\" at /g did not start: config.greeting: missing",
        ),
        // A path that a mount before covers would never answer (it was
        // taken silently).
        (
            vec![rule("/hi/", "greeter", Some("x")), rule("/hi/there", "greeter", Some("y"))],
            "site.toml:7: handlers[1].handler: the handler \"greeter\" at /hi/there would never answer: the one at /hi/ before it takes every path there (the first match answers: list the longer path first)",
        ),
        (
            vec![rule("/code/x", "greeter", Some("x"))],
            "site.toml:7: handlers[1].handler: the handler \"greeter\" at /code/x would never answer: the one at /code/ before it takes every path there (the first match answers: list the longer path first)",
        ),
    ] {
        let mut cfg = config();
        cfg.site.handlers = rules;
        let mut server = Server::bind(cfg).unwrap();
        server.register("greeter", Greeter::default()).unwrap();
        server.mount("/code/", |_: &Request<'_>, _: &mut Response<'_>| {}).unwrap();
        match server.start(&logs) {
            Err(e) => assert_eq!(e.to_string(), want),
            Ok(r) => {
                r.stop();
                panic!("started");
            }
        }
    }
    logs.shutdown();
}

#[test]
fn the_later_answers_of_pipelined_requests_keep_their_order() {
    let (app, rx) = deferring_app(|_| {});
    let mut c = app.connect();
    c.send(b"GET /later HTTP/1.1\r\nHost: x\r\n\r\nGET /now HTTP/1.1\r\nHost: x\r\n\r\n");
    let later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    later.answer(200, &[], b"first").unwrap();
    assert_eq!(c.response().body, b"first");
    assert_eq!(c.response().body, b"now");
    let _ = c.stream.flush();
}

/// The same answers over HTTP/2 (h2c with prior knowledge): the body in
/// pieces and the later answer go as DATA frames within the client's
/// windows, with no chunked coding.
#[cfg(feature = "http2")]
mod over_h2 {
    use super::*;
    use brisk::h2::frame::setting;
    use brisk::h2::ErrorCode;
    use common::h2::H2;

    fn app(tweak: impl FnOnce(&mut Config)) -> (App, mpsc::Receiver<Later>) {
        let (tx, rx) = mpsc::channel();
        let tx: Handoff = Arc::new(Mutex::new(tx));
        let app = start(tweak, |s| {
            s.mount("/later", deferring(tx)).unwrap();
            s.mount("/s", streaming(None)).unwrap();
            s.mount("/fails", streaming(Some(3))).unwrap();
        });
        (app, rx)
    }

    #[test]
    fn a_body_in_pieces_and_a_later_answer_are_served() {
        let (app, rx) = app(|_| {});
        let want = pieces_body(5, 100_000);
        // (Default 64 KiB windows: the client's updates move the bodies on.)
        let mut c = H2::connect(app.addr, &[], 0);
        let later = c.get("/later", &[]);
        let ids = [
            c.get("/s", &[]),
            c.get("/s?len", &[]),
            c.request("HEAD", "/s", &[], None),
        ];
        let a = c.answers(&ids);
        assert_eq!(a[0].status(), "200");
        assert_eq!(a[0].field("content-type"), Some("text/plain"));
        assert_eq!(a[0].field("content-length"), None);
        assert!(a[0].body == want, "{} bytes", a[0].body.len());
        assert_eq!(a[1].field("content-length"), Some("500000"));
        assert!(a[1].body == want);
        assert_eq!((a[2].status(), a[2].body.len()), ("200", 0));
        // The later answer, from another thread, in pieces larger than
        // the windows: its writes wait for the client.
        let mut l = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let writer = std::thread::spawn(move || {
            l.start(201, &[("Content-Type", "application/octet-stream")], None)
                .unwrap();
            for i in 0..32u8 {
                l.write(&[i; 65536]).unwrap();
            }
            l.finish().unwrap();
        });
        let a = c.answers(&[later]);
        writer.join().unwrap();
        assert_eq!(a[0].status(), "201");
        assert_eq!(a[0].field("x-early"), Some("set before defer"));
        assert_eq!(a[0].field("transfer-encoding"), None);
        assert_eq!(a[0].body.len(), 32 * 65536);
        assert!(a[0]
            .body
            .chunks(65536)
            .enumerate()
            .all(|(i, p)| p.iter().all(|&b| b == i as u8)));
    }

    #[test]
    fn a_later_answer_can_hand_a_file_to_the_engine() {
        let (app, rx) = app(|_| {});
        let mut c = H2::connect(app.addr, &[], 0);
        for size in [10, 1_000_000] {
            let (path, data) = later_file(&app, size);
            let id = c.get("/later", &[]);
            send_later_file(rx.recv_timeout(Duration::from_secs(10)).unwrap(), &path);
            let a = c.answers(&[id]);
            assert_eq!(a[0].status(), "201");
            assert_eq!(a[0].field("x-early"), Some("set before defer"));
            assert_eq!(
                a[0].field("content-length"),
                Some(size.to_string().as_str())
            );
            assert!(a[0].body == data, "{size}: {} bytes", a[0].body.len());
        }
        let (path, _) = later_file(&app, 5000);
        let id = c.request("HEAD", "/later", &[], None);
        send_later_file(rx.recv_timeout(Duration::from_secs(10)).unwrap(), &path);
        let a = c.answers(&[id]);
        assert_eq!((a[0].status(), a[0].body.len()), ("201", 0));
        assert_eq!(a[0].field("content-length"), Some("5000"));
    }

    #[test]
    fn failures_reset_the_stream_or_answer_500_and_504() {
        let (app, rx) = app(|cfg| cfg.timeouts.handler = Duration::from_secs(1));
        let mut c = H2::connect(
            app.addr,
            &[(setting::INITIAL_WINDOW_SIZE, 16 << 20)],
            16 << 20,
        );
        // Fails after two pieces: what was sent stays, the stream is reset.
        let fails = c.get("/fails", &[]);
        let a = c.answers(&[fails]);
        assert_eq!(a[0].status(), "200");
        assert_eq!(a[0].body.len(), 200_000);
        assert_eq!(a[0].reset, Some(ErrorCode::Internal as u32));
        // Dropped unanswered: 500. Never given: 504, and its thread is told.
        let dropped = c.get("/later", &[]);
        drop(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        assert_eq!(c.answers(&[dropped])[0].status(), "500");
        let never = c.get("/later", &[]);
        let kept = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(c.answers(&[never])[0].status(), "504");
        assert!(kept.is_gone());
        // A length that the body does not keep to: reset, not ended.
        let short = c.get("/later", &[]);
        let mut l = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        l.start(200, &[], Some(10)).unwrap();
        l.write(b"12345").unwrap();
        l.finish().unwrap();
        let a = c.answers(&[short]);
        assert_eq!(
            (a[0].field("content-length"), &a[0].body[..]),
            (Some("10"), &b"12345"[..])
        );
        assert_eq!(a[0].reset, Some(ErrorCode::Internal as u32));
        // A stream the client cancels tells the answering thread.
        let cancelled = c.get("/later", &[]);
        let l = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut out = Vec::new();
        brisk::h2::frame::write_rst(&mut out, cancelled, ErrorCode::Cancel);
        c.send(&out);
        wait_until("the answering thread to be told", || l.is_gone());
        // The connection goes on.
        let id = c.get("/s?len", &[]);
        let a = c.answers(&[id]);
        assert_eq!(a[0].body.len(), 500_000);
    }
}

/// A body in pieces that never ends (an event stream, a live log).
struct Endless;

impl BodyStream for Endless {
    fn fill(&mut self, out: &mut Vec<u8>, room: usize) -> Result<bool, String> {
        out.resize(room.min(4096), b'e');
        Ok(true)
    }
}

/// HEAD, 204 and 304 answers end at their head: the body in pieces is
/// not asked for, and a later answer's thread is told to stop (over
/// HTTP/1.1 they were pumped and dropped, which spun the worker for ever
/// on a body in pieces that never ends).
#[test]
fn a_head_or_bodiless_answer_does_not_pump_an_endless_body() {
    let (gone, stopped) = mpsc::channel();
    let app = start(
        |_| {},
        |s| {
            s.mount("/events", |req: &Request<'_>, r: &mut Response<'_>| {
                if req.query == Some(b"304") {
                    r.set_status(304);
                }
                r.header("Content-Type", "text/event-stream").unwrap();
                r.stream(Endless, None);
            })
            .unwrap();
            let gone = Mutex::new(gone);
            s.mount("/later", move |_: &Request<'_>, r: &mut Response<'_>| {
                let mut later = r.defer().unwrap();
                let gone = gone.lock().unwrap().clone();
                std::thread::spawn(move || {
                    later.start(200, &[], None).unwrap();
                    let stopped = loop {
                        if let Err(e) = later.write(&[b'e'; 4096]) {
                            break e;
                        }
                    };
                    gone.send(stopped).unwrap();
                });
            })
            .unwrap();
            s.mount("/now", |_: &Request<'_>, r: &mut Response<'_>| {
                r.write(b"now")
            })
            .unwrap();
        },
    );
    // (Kept from its drop if an answer does not come: stopping would
    // wait for ever on a spinning worker.)
    let app = std::mem::ManuallyDrop::new(app);
    let mut c = app.connect();
    c.send(b"HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/event-stream\r\n\r\n")
    );
    c.send(b"GET /events?304 HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        format!("HTTP/1.1 304 Not Modified\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/event-stream\r\n\r\n")
    );
    // One given later by a thread that writes on: it is told to stop.
    c.send(b"HEAD /later HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.head_response().status, 200);
    let stopped = stopped.recv_timeout(Duration::from_secs(10));
    assert_eq!(stopped, Ok(LaterError::Gone));
    // The connection and the worker go on.
    c.send(b"GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"now");
    assert_eq!(
        app.request(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"now"
    );
    drop(std::mem::ManuallyDrop::into_inner(app));
}

/// A later answer written in pieces by the handler itself, on the worker
/// thread: `write` cannot wait there for the worker to take what it was
/// given (it waited for ever past 256 KiB, and the worker with it).
#[test]
fn a_later_answer_written_on_the_worker_thread_does_not_wait_for_itself() {
    let app = start(
        |_| {},
        |s| {
            s.mount("/inline", |_: &Request<'_>, r: &mut Response<'_>| {
                let mut later = r.defer().unwrap();
                later.start(200, &[], Some(3 * 200_000)).unwrap();
                for b in [b'a', b'b', b'c'] {
                    later.write(&[b; 200_000]).unwrap();
                }
                later.finish().unwrap();
            })
            .unwrap();
            s.mount("/now", |_: &Request<'_>, r: &mut Response<'_>| {
                r.write(b"now")
            })
            .unwrap();
        },
    );
    // (Kept from its drop if the answer does not come: stopping would
    // wait for ever on the stuck worker.)
    let app = std::mem::ManuallyDrop::new(app);
    let mut c = app.connect();
    c.send(b"GET /inline HTTP/1.1\r\nHost: x\r\n\r\nGET /now HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 600_000);
    assert!(r.body[..200_000].iter().all(|&b| b == b'a'));
    assert!(r.body[400_000..].iter().all(|&b| b == b'c'));
    assert_eq!(c.response().body, b"now");
    drop(std::mem::ManuallyDrop::into_inner(app));
}

/// A body in pieces whose producer panics after its first piece.
#[cfg(feature = "http2")]
struct PanicsAfterOne(bool);

#[cfg(feature = "http2")]
impl BodyStream for PanicsAfterOne {
    fn fill(&mut self, out: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
        if std::mem::replace(&mut self.0, true) {
            panic!("a body in pieces panics on purpose");
        }
        out.extend_from_slice(b"first piece\n");
        Ok(true)
    }
}

/// A panic in `BodyStream::fill` ends that answer (cut short, logged
/// with its handler), as one in the handler does: not the connection
/// (over HTTP/2, every stream of it went) nor the worker.
#[cfg(feature = "http2")]
#[test]
fn a_body_in_pieces_that_panics_ends_its_answer_only() {
    use common::h2::H2;
    let app = start(
        |_| {},
        |s| {
            s.mount("/boom", |_: &Request<'_>, r: &mut Response<'_>| {
                r.stream(PanicsAfterOne(false), None)
            })
            .unwrap();
            s.mount("/now", |_: &Request<'_>, r: &mut Response<'_>| {
                r.write(b"now")
            })
            .unwrap();
        },
    );
    let mut h2 = H2::connect(app.addr, &[], 0);
    let boom = h2.get("/boom", &[]);
    let now = h2.get("/now", &[]);
    let answers = h2.answers(&[boom, now]);
    assert_eq!(answers[0].status(), "200");
    assert_eq!(answers[0].reset, Some(2), "INTERNAL_ERROR");
    assert_eq!(
        (answers[1].status(), &answers[1].body[..]),
        ("200", &b"now"[..])
    );
    // The connection goes on.
    let again = h2.get("/now", &[]);
    assert_eq!(h2.answers(&[again])[0].body, b"now");
    wait_until("the panic logged", || {
        app.error_log().contains("handler at /boom: panicked")
    });
    // HTTP/1.1: the head, the piece, then the close without the last
    // chunk; the worker serves on.
    let mut c = app.connect();
    c.send(b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut raw = Vec::new();
    c.stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nc\r\nfirst piece\n\r\n"), "{text}");
    assert_eq!(
        app.request(b"GET /now HTTP/1.1\r\nHost: x\r\n\r\n").body,
        b"now"
    );
}

/// A `Later` whose answer the engine will never take (the handler that
/// deferred it panicked, deferred again, or answered otherwise) is gone
/// at once: its thread is told, and `write` returns rather than waiting
/// for ever for room once 256 KiB are given.
#[test]
fn a_later_answer_the_handler_gave_up_is_gone() {
    let (tx, rx) = mpsc::channel();
    let tx: Handoff = Arc::new(Mutex::new(tx));
    let app = start(
        |_| {},
        |s| {
            s.mount("/", move |req: &Request<'_>, r: &mut Response<'_>| {
                let later = r.defer().unwrap();
                tx.lock().unwrap().send(later).unwrap();
                match req.path {
                    b"/panic" => panic!("after deferring, on purpose"),
                    b"/started" => {
                        let mut started = r.defer().unwrap();
                        started.start(200, &[], None).unwrap();
                        started.write(&[b'x'; 256 * 1024]).unwrap();
                        tx.lock().unwrap().send(started).unwrap();
                        panic!("after starting, on purpose");
                    }
                    b"/again" => {
                        let again = r.defer().unwrap();
                        std::thread::spawn(move || again.answer(200, &[], b"second"));
                    }
                    _ => r.stream(
                        Pieces {
                            left: 1,
                            size: 3,
                            fail_at: None,
                        },
                        None,
                    ),
                }
            })
            .unwrap();
        },
    );
    for (path, status, body) in [
        ("/panic", 500, None),
        ("/again", 200, Some(&b"second"[..])),
        ("/stream", 200, Some(&b"bbb"[..])),
    ] {
        let r = app.request(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        assert_eq!(r.status, status, "{path}");
        if let Some(body) = body {
            assert_eq!(r.body, body, "{path}");
        }
        let mut later = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(later.is_gone(), "{path}");
        assert_eq!(later.start(200, &[], None), Err(LaterError::Gone), "{path}");
    }
    // One started with 256 KiB given: writing more does not wait.
    let r = app.request(b"GET /started HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 500);
    drop(rx.recv_timeout(Duration::from_secs(10)).unwrap());
    let mut started = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let (done, wrote) = mpsc::channel();
    std::thread::spawn(move || done.send(started.write(b"more")).unwrap());
    let wrote = wrote.recv_timeout(Duration::from_secs(10));
    assert_eq!(wrote, Ok(Err(LaterError::Gone)));
}

/// A file the engine cannot send whole (a directory, a device, one
/// opened for writing only) is refused when it is handed over, and the
/// handler's answer stands; by a `Later`, the client gets a 500. (It
/// failed once the head was out: the connection closed with nothing
/// sent, or after a `Content-Length` it could not honour; over HTTP/2
/// with every stream of the connection.)
#[test]
fn a_file_that_cannot_be_sent_is_refused_when_handed_over() {
    let dir = TempDir::new("unsendable");
    let write_only = dir.path.join("write-only.txt");
    std::fs::write(&write_only, b"secret").unwrap();
    let open = move |what: &[u8]| match what {
        b"dir" => std::fs::File::open("/").unwrap(),
        b"dev" => std::fs::File::open("/dev/zero").unwrap(),
        _ => std::fs::OpenOptions::new()
            .write(true)
            .open(&write_only)
            .unwrap(),
    };
    let open2 = open.clone();
    let app = start(
        |_| {},
        |s| {
            s.mount("/now/", move |req: &Request<'_>, r: &mut Response<'_>| {
                let refused = r.send_file(open(req.rest));
                r.set_status(409);
                r.write(format!("{:?}", refused.map_err(|e| e.to_string())).as_bytes());
            })
            .unwrap();
            s.mount("/later/", move |req: &Request<'_>, r: &mut Response<'_>| {
                let later = r.defer().unwrap();
                let sent = later.send_file(200, &[], open2(req.rest));
                assert!(matches!(sent, Err(LaterError::File(_))), "{sent:?}");
            })
            .unwrap();
        },
    );
    for (what, why) in [
        ("dir", "not a regular file"),
        ("dev", "not a regular file"),
        ("wo", "Bad file descriptor (os error 9)"),
    ] {
        let mut c = app.connect();
        c.send(format!("GET /now/{what} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!(r.status, 409, "{what}");
        assert_eq!(r.body, format!("Err({why:?})").as_bytes(), "{what}");
        c.send(format!("GET /later/{what} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let r = c.response();
        assert_eq!(r.status, 500, "{what}");
        assert_eq!(r.header("Content-Length"), Some("147"), "{what}");
    }
}

/// Ten bytes a piece, six pieces: more than the length it is sent with.
#[cfg(feature = "http2")]
struct TooLong(u32);

#[cfg(feature = "http2")]
impl BodyStream for TooLong {
    fn fill(&mut self, out: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
        self.0 += 1;
        out.extend_from_slice(b"0123456789");
        Ok(self.0 < 6)
    }
}

/// A body longer than the length its handler gave is cut at that length
/// the same over HTTP/1.1 and HTTP/2, and logged (HTTP/1.1 dropped the
/// rest silently, HTTP/2 reset the stream); a `Later` refuses to write
/// past its length.
#[cfg(feature = "http2")]
#[test]
fn a_body_longer_than_its_length_is_cut_there_and_logged() {
    use common::h2::H2;
    let (wrote, writes) = mpsc::channel();
    let wrote = Mutex::new(wrote);
    let app = start(
        |_| {},
        |s| {
            s.mount("/long", |_: &Request<'_>, r: &mut Response<'_>| {
                r.stream(TooLong(0), Some(15))
            })
            .unwrap();
            // (Its length reached at a piece's end, more said to follow.)
            s.mount("/exact", |_: &Request<'_>, r: &mut Response<'_>| {
                r.stream(TooLong(0), Some(20))
            })
            .unwrap();
            s.mount("/later", move |_: &Request<'_>, r: &mut Response<'_>| {
                let mut later = r.defer().unwrap();
                let wrote = wrote.lock().unwrap().clone();
                std::thread::spawn(move || {
                    later.start(200, &[], Some(5)).unwrap();
                    let results = [later.write(b"too long"), later.write(b"12345")];
                    later.finish().unwrap();
                    wrote.send(results).unwrap();
                });
            })
            .unwrap();
        },
    );
    let mut c = app.connect();
    c.send(b"GET /long HTTP/1.1\r\nHost: x\r\n\r\nGET /later HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(r.header("Content-Length"), Some("15"));
    assert_eq!(r.body, b"012345678901234");
    assert_eq!(c.response().body, b"12345");
    c.send(b"GET /exact HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, b"01234567890123456789");
    assert_eq!(
        writes.recv_timeout(Duration::from_secs(10)).unwrap(),
        [
            Err(LaterError::Order("more body than the length given")),
            Ok(())
        ]
    );
    let mut h2 = H2::connect(app.addr, &[], 0);
    let long = h2.get("/long", &[]);
    let a = h2.answers(&[long]).remove(0);
    assert_eq!((a.reset, &a.body[..]), (None, &b"012345678901234"[..]));
    wait_until("both cuts logged", || {
        app.error_log()
            .matches("handler at /long: body longer than its Content-Length; cut there")
            .count()
            == 2
            && app
                .error_log()
                .contains("handler at /exact: body longer than its Content-Length; cut there")
    });
}
