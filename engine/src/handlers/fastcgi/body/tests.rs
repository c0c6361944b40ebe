//! A FastCGI answer over a socket pair, the test playing the application
//! with [`peer`](crate::handlers::fastcgi::peer): the records it
//! receives, and what the producer makes of what it answers, however the
//! records are split across reads.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::rc::Rc;

use super::*;
use crate::config::{AccessFormat, Upstream};
use crate::handlers::fastcgi::peer::{
    end_request, read_pair, read_record, stderr, stdout, stdout_end, Record,
};
use crate::handlers::fastcgi::record::{
    params, params_end, ABORT_REQUEST, BEGIN_REQUEST, KEEP_CONN, PARAMS, REQUEST_COMPLETE,
};
use crate::handlers::proxy::pool::Shared;
use crate::log::{memory, Memory};

fn logs() -> Memory {
    memory(AccessFormat::Common, Level::Info, 16)
}

/// What the error log holds once `m` is shut down.
fn errors(m: Memory) -> String {
    m.service.shutdown();
    let text = String::from_utf8_lossy(&m.error.lock().unwrap()).into_owned();
    text
}

fn options(pool: Option<&Shared>) -> Options {
    Options {
        label: "fastcgi /test.php".into(),
        connect_timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(9),
        send_timeout: Duration::from_secs(7),
        max_head: 4096,
        keep: pool.map(|pool| Keep {
            pool: Rc::clone(pool),
            to: Upstream::Unix(Path::new("/fpm.sock").into()),
            max: 4,
            timeout: Duration::from_secs(60),
        }),
        hold: 0,
        temp: None,
    }
}

/// PARAMS records of `pairs`, their end included.
fn encoded(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    params(
        &mut out,
        ID,
        pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
    );
    params_end(&mut out, ID);
    out
}

/// A producer on one end of a socket pair, the application on the other.
fn started(body: BodyIn, pool: Option<&Shared>) -> (FastcgiBody, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    theirs
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let params = encoded(&[
        ("SCRIPT_FILENAME", "/srv/test.php"),
        ("REQUEST_METHOD", "POST"),
    ]);
    let p = FastcgiBody::new(OwnedFd::from(ours), false, &params, body, options(pool));
    (p, theirs)
}

/// A request without a body, all sent and read by the application: the
/// log, the producer and the application's end.
fn asked(pool: Option<&Shared>) -> (Memory, FastcgiBody, UnixStream) {
    let (mut p, mut app) = started(BodyIn::None, pool);
    write(&mut p).unwrap();
    records_until(&mut app, STDIN);
    (logs(), p, app)
}

/// What `next` gives now, as text (body bytes in place of `Bytes`).
fn next(p: &mut FastcgiBody, m: &Memory) -> String {
    let mut log = m.service.handle();
    let mut cx = Cx {
        log: &mut log,
        raw_ok: false,
    };
    let mut buf = Vec::new();
    p.ready(0);
    let said = match p.next(1024, &mut buf, &mut cx) {
        Gave::Pending => "pending".to_string(),
        Gave::Head(h, _) => format!(
            "head {} {:?} {:?}",
            h.status,
            h.content_length,
            String::from_utf8_lossy(&h.headers)
        ),
        Gave::Interim(h) => format!("interim {}", h.status),
        Gave::Bytes => format!("bytes {}", String::from_utf8_lossy(&buf)),
        Gave::Last => format!("last {}", String::from_utf8_lossy(&buf)),
        Gave::End => "end".into(),
        Gave::Cut(why) => format!("cut {why}"),
        Gave::Redirect(to) => format!("redirect {}", String::from_utf8_lossy(&to)),
        Gave::Fail(s, why) => format!("fail {} {why}", s.0),
    };
    log.flush();
    said
}

/// Writes what waits for the application.
fn write(p: &mut FastcgiBody) -> Result<Wrote, InputEnd> {
    p.ready(0);
    p.input().unwrap().write()
}

/// Reads records on the application's side until one of `kind` with no
/// content (a stream's end) or of `last`'s kind: every record, in order.
fn records_until(app: &mut UnixStream, last: u8) -> Vec<(u8, u16, Vec<u8>, usize)> {
    let mut buf = Vec::new();
    let mut got = Vec::new();
    loop {
        while let Some(r) = read_record(&buf) {
            let Record {
                version,
                kind,
                id,
                content,
                padding,
            } = r;
            assert_eq!(version, 1);
            got.push((kind, id, content.to_vec(), padding.len()));
            let size = r.size();
            buf.drain(..size);
            if kind == last && (kind == ABORT_REQUEST || got.last().unwrap().2.is_empty()) {
                assert!(buf.is_empty(), "nothing after it");
                return got;
            }
        }
        let mut piece = [0; 4096];
        let n = app.read(&mut piece).unwrap();
        assert!(n > 0, "closed after {got:?}");
        buf.extend_from_slice(&piece[..n]);
    }
}

/// A whole answer: a CGI head and body on STDOUT (padded records, as
/// the encoders write them), a STDERR line, the end.
fn answer() -> Vec<u8> {
    let mut out = Vec::new();
    stdout(
        &mut out,
        ID,
        b"Status: 201 Created\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\nhello",
    );
    stderr(&mut out, ID, b"PHP Notice: odd\n");
    stdout(&mut out, ID, b", world");
    stdout_end(&mut out, ID);
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    out
}

#[test]
fn the_request_goes_as_records_and_the_answer_as_a_cgi_head() {
    let m = logs();
    let pool = Shared::default();
    let (mut p, mut app) = started(BodyIn::Stream, Some(&pool));
    assert_eq!(p.sources()[0].map(|s| s.1), Some(Want::Both));
    let input = p.input().unwrap();
    assert!(!input.is_closed());
    input.feed(b"a=1&b=2");
    input.end();
    let wrote = write(&mut p).unwrap();
    assert_eq!((wrote.moved, wrote.client), (true, 7));
    assert!(p.input().unwrap().is_closed(), "all written");
    let got = records_until(&mut app, STDIN);
    let kinds: Vec<u8> = got.iter().map(|r| r.0).collect();
    assert_eq!(kinds, [BEGIN_REQUEST, PARAMS, PARAMS, STDIN, STDIN]);
    assert!(got.iter().all(|r| r.1 == ID));
    // The responder role, and the connection kept (a pool to go back to).
    assert_eq!(got[0].2, [0, 1, KEEP_CONN, 0, 0, 0, 0, 0]);
    let mut pairs = Vec::new();
    let mut stream = &got[1].2[..];
    while let Some(((name, value), n)) = read_pair(stream) {
        pairs.push(format!(
            "{}={}",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(value)
        ));
        stream = &stream[n..];
    }
    assert_eq!(
        pairs,
        ["SCRIPT_FILENAME=/srv/test.php", "REQUEST_METHOD=POST"]
    );
    assert_eq!(got[3].2, b"a=1&b=2");
    assert!(
        got[2].2.is_empty() && got[4].2.is_empty(),
        "the streams' ends"
    );

    assert_eq!(next(&mut p, &m), "pending");
    app.write_all(&answer()).unwrap();
    assert_eq!(
        next(&mut p, &m),
        "head 201 None \"Content-Type: text/plain\\r\\nX-A: 1\\r\\n\""
    );
    assert_eq!(next(&mut p, &m), "last hello, world");
    assert_eq!(next(&mut p, &m), "end");
    // Ended cleanly: in the pool at once (still watched: nothing retired).
    assert!(p.sources()[0].is_none() && p.retired().is_none());
    assert_eq!(pool.borrow().len(), 1);
    drop(p);
    assert_eq!(pool.borrow().len(), 1);
    let log = errors(m);
    assert!(log.contains("fastcgi /test.php: PHP Notice: odd"), "{log}");
    assert!(log.contains("warn"), "{log}");
}

#[test]
fn records_split_anywhere_give_the_same_answer() {
    let whole = answer();
    for step in [1, 3, 7, 8, 9, 13] {
        let (m, mut p, mut app) = asked(None);
        let mut said = Vec::new();
        for piece in whole.chunks(step) {
            app.write_all(piece).unwrap();
            loop {
                match next(&mut p, &m) {
                    s if s == "pending" => break,
                    s if s == "end" => {
                        said.push(s);
                        break;
                    }
                    s => said.push(s),
                }
            }
        }
        // Body pieces joined: how they were split is the reads' business.
        let mut joined: Vec<String> = Vec::new();
        for s in said {
            match (joined.last_mut(), s.strip_prefix("bytes ")) {
                (Some(last), Some(b)) if last.starts_with("bytes ") => last.push_str(b),
                _ => joined.push(s),
            }
        }
        let body: String = joined
            .iter()
            .filter_map(|s| s.strip_prefix("bytes ").or(s.strip_prefix("last ")))
            .collect();
        assert_eq!(body, "hello, world", "split by {step}: {joined:?}");
        assert!(joined[0].starts_with("head 201"), "{joined:?}");
        assert_eq!(joined.last().unwrap(), "end", "{joined:?}");
        // No pool: the connection closes at the end.
        assert!(p.sources()[0].is_none() && p.retired().is_some());
        let log = errors(m);
        assert_eq!(log.matches("PHP Notice: odd").count(), 1, "{log}");
    }
}

#[test]
fn stderr_is_logged_line_by_line_and_the_rest_at_the_end() {
    let (m, mut p, mut app) = asked(None);
    let mut out = Vec::new();
    stderr(&mut out, ID, b"first line\nsecond ");
    stderr(&mut out, ID, b"half\nno end");
    stdout(&mut out, ID, b"Content-Type: text/plain\r\n\r\nok");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    app.write_all(&out).unwrap();
    assert!(next(&mut p, &m).starts_with("head 200"));
    assert_eq!(next(&mut p, &m), "last ok");
    let log = errors(m);
    for line in ["first line", "second half", "no end"] {
        assert!(
            log.contains(&format!("fastcgi /test.php: {line}\n")),
            "{log}"
        );
    }
}

/// php-fpm's messages come without newlines, `; ` between them, many
/// in one record: each is a line, a long one cut, none lost.
#[test]
fn each_php_message_is_a_line_however_long_the_one_before() {
    let (m, mut p, mut app) = asked(None);
    let long = "x".repeat(5000);
    let mut out = Vec::new();
    let first = format!("PHP message: {long}; PHP message: b; PHP mess");
    stderr(&mut out, ID, first.as_bytes());
    stderr(&mut out, ID, b"age: c");
    stdout(&mut out, ID, b"Content-Type: text/plain\r\n\r\nok");
    stderr(&mut out, ID, b"; PHP message: d");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    app.write_all(&out).unwrap();
    assert!(next(&mut p, &m).starts_with("head 200"));
    assert_eq!(next(&mut p, &m), "last ok");
    let log = errors(m);
    let cut = &format!("PHP message: {long}")[..4096];
    for line in [cut, "PHP message: b", "PHP message: c", "PHP message: d"] {
        assert!(
            log.contains(&format!("fastcgi /test.php: {line}\n")),
            "{line:?} in {log}"
        );
    }
    assert_eq!(log.lines().count(), 4, "{log}");
}

#[test]
fn end_request_before_the_end_of_stdout_ends_the_answer() {
    let pool = Shared::default();
    let (m, mut p, mut app) = asked(Some(&pool));
    let mut out = Vec::new();
    stdout(&mut out, ID, b"Content-Type: text/plain\r\n\r\nshort");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    app.write_all(&out).unwrap();
    assert!(next(&mut p, &m).starts_with("head 200"));
    assert_eq!(next(&mut p, &m), "last short");
    drop(p);
    assert_eq!(pool.borrow().len(), 1, "the request ended cleanly");
}

#[test]
fn a_head_with_no_content_type_and_nothing_after_it_is_whole_at_the_end() {
    let pool = Shared::default();
    let (m, mut p, mut app) = asked(Some(&pool));
    let mut out = Vec::new();
    stdout(&mut out, ID, b"Status: 404 Not Found\r\nX-A: 1\r\n\r\n");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    app.write_all(&out).unwrap();
    assert_eq!(next(&mut p, &m), "head 404 Some(0) \"X-A: 1\\r\\n\"");
    assert_eq!(next(&mut p, &m), "end");
    drop(p);
    assert_eq!(pool.borrow().len(), 1, "the request ended cleanly");
    // A body without a type is still no answer.
    let (m, mut p, mut app) = asked(None);
    let mut out = Vec::new();
    stdout(&mut out, ID, b"Status: 404\r\n\r\n");
    stdout(&mut out, ID, b"body");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    app.write_all(&out).unwrap();
    assert_eq!(
        next(&mut p, &m),
        "fail 502 invalid answer: CGI document without Content-Type"
    );
}

#[test]
fn bytes_after_the_end_keep_the_connection_out_of_the_pool() {
    let pool = Shared::default();
    let (m, mut p, mut app) = asked(Some(&pool));
    let mut out = Vec::new();
    stdout(&mut out, ID, b"Content-Type: text/plain\r\n\r\nx");
    end_request(&mut out, ID, 0, REQUEST_COMPLETE);
    stdout(&mut out, ID, b"more");
    app.write_all(&out).unwrap();
    assert!(next(&mut p, &m).starts_with("head 200"));
    assert_eq!(next(&mut p, &m), "last x");
    assert!(p.retired().is_some());
    drop(p);
    assert!(pool.borrow().is_empty());
}

#[test]
fn what_is_no_answer_is_a_502_before_the_head_and_a_cut_after() {
    let cases: [(&[u8], bool, &str); 4] = [
        (
            b"no colon here\r\n\r\n",
            true,
            "fail 502 invalid answer: CGI header line without a colon",
        ),
        (
            b"",
            true,
            "fail 502 the application ended the request without a complete head",
        ),
        (
            b"Content-Type: text/plain\r\n\r\nab",
            false,
            "cut the application closed the connection before END_REQUEST",
        ),
        (
            b"Content-Type: text/pl",
            false,
            "fail 502 the application closed the connection before END_REQUEST",
        ),
    ];
    for (stdout_bytes, end, want) in cases {
        let (m, mut p, mut app) = asked(None);
        let mut out = Vec::new();
        stdout(&mut out, ID, stdout_bytes);
        if end {
            end_request(&mut out, ID, 0, REQUEST_COMPLETE);
        }
        app.write_all(&out).unwrap();
        drop(app);
        let mut said = next(&mut p, &m);
        while said.starts_with("head") || said.starts_with("bytes") {
            said = next(&mut p, &m);
        }
        assert_eq!(said, want);
        assert!(p.sources()[0].is_none() && p.retired().is_some());
    }
}

#[test]
fn a_record_for_another_request_is_a_502() {
    let (m, mut p, mut app) = asked(None);
    let mut out = Vec::new();
    stdout(&mut out, ID + 1, b"Content-Type: text/plain\r\n\r\n");
    app.write_all(&out).unwrap();
    assert_eq!(
        next(&mut p, &m),
        "fail 502 FastCGI record for request 2, not ours"
    );
}

#[test]
fn a_local_redirect_is_followed_and_the_connection_closed() {
    let (m, mut p, mut app) = asked(None);
    let mut out = Vec::new();
    stdout(&mut out, ID, b"Location: /other?x=1\r\n\r\n");
    app.write_all(&out).unwrap();
    assert_eq!(next(&mut p, &m), "redirect /other?x=1");
    assert!(p.retired().is_some());
}

#[test]
fn a_body_held_whole_goes_in_stdin_records_then_its_end() {
    let mut held = crate::handlers::spool::Spool::default();
    let body: Vec<u8> = (0..150_000u32).map(|i| (i % 253) as u8).collect();
    held.push(&body, std::path::Path::new("/tmp"));
    held.rewind().unwrap();
    let (mut p, mut app) = started(BodyIn::Held(held), None);
    assert!(p.input().unwrap().held());
    let reader = std::thread::spawn(move || records_until(&mut app, STDIN));
    let mut wrote = Wrote::default();
    while !reader.is_finished() {
        let w = write(&mut p).unwrap();
        wrote.client += w.client;
        std::thread::yield_now();
    }
    let got = reader.join().unwrap();
    assert_eq!(wrote.client, 0, "a held body's credit went back as it came");
    let stdin: Vec<u8> = got
        .iter()
        .filter(|r| r.0 == STDIN)
        .flat_map(|r| r.2.clone())
        .collect();
    assert_eq!(stdin, body);
    assert!(got
        .iter()
        .filter(|r| r.0 == STDIN)
        .all(|r| r.2.len() <= MAX_CONTENT));
    assert!(got.last().unwrap().2.is_empty());
}

#[test]
fn a_client_that_leaves_aborts_the_request() {
    let (m, mut p, mut app) = asked(None);
    assert_eq!(next(&mut p, &m), "pending");
    p.stop();
    let got = records_until(&mut app, ABORT_REQUEST);
    assert_eq!(got, [(ABORT_REQUEST, ID, Vec::new(), 0)]);
    assert!(p.sources()[0].is_none() && p.retired().is_some());
    drop(p);
    let mut rest = Vec::new();
    app.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "then the connection closes");
}

#[test]
fn no_body_ends_stdin_at_once_and_asks_for_no_kept_connection() {
    let (mut p, mut app) = started(BodyIn::None, None);
    assert!(p.input().unwrap().is_closed());
    write(&mut p).unwrap();
    let got = records_until(&mut app, STDIN);
    assert_eq!(got[0].2, [0, 1, 0, 0, 0, 0, 0, 0], "no FCGI_KEEP_CONN");
    assert_eq!(got.last().unwrap().0, STDIN);
}

/// A request's way among `to`, the first picked.
fn tries(to: Vec<Upstream>) -> (crate::handlers::proxy::balance::Shared, Tries) {
    let rule = crate::config::FastcgiRule {
        matches: crate::config::PathMatch::Glob("*.php".into()),
        to,
        index: None,
        split_path: None,
        fallback: None,
        root: None,
        env: Vec::new(),
        balance: crate::config::Balance::RoundRobin,
        connect_timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(9),
        send_timeout: Duration::from_secs(9),
        fail_timeout: Duration::from_secs(10),
        max_fails: 1,
        keepalive: 0,
        keepalive_timeout: Duration::from_secs(60),
        max_body: None,
        buffer_request: true,
        buffer_answer: crate::config::BUFFER_ANSWER,
    };
    let group = crate::handlers::proxy::balance::Group::fastcgi(&rule);
    let group = Rc::new(std::cell::RefCell::new(group));
    let tries = Tries::new(&group, 0, "192.0.2.7".parse().unwrap());
    (group, tries)
}

#[test]
fn a_server_not_reached_in_connect_timeout_sends_even_a_post_to_the_next() {
    let m = logs();
    let b = crate::handlers::proxy::body::tests::Listening::new("fcgi-next");
    let away = Upstream::Unix(Path::new("/nonexistent/a.sock").into());
    let (group, t) = tries(vec![away.clone(), b.upstream()]);
    // (Its socket never connects: nothing of the request went.)
    let (mut p, _silent) = started(BodyIn::Stream, None);
    p.with_tries(t, &away, away.tried());
    p.input().unwrap().feed(b"a=1");
    p.input().unwrap().end();
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(3));
    assert_eq!(p.timed_out(), None, "it goes on");
    assert!(p.retired().is_some(), "the first socket leaves the watch");
    assert_eq!(p.renewed().map(|r| r.1), Some(Want::Both));
    assert!(p.renewed().is_none(), "once");
    let now = std::time::Instant::now();
    assert!(!group.borrow().is_up(0, now));
    assert!(write(&mut p).unwrap().moved);
    let (mut app, _) = b.listener.accept().unwrap();
    app.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let got = records_until(&mut app, STDIN);
    let kinds: Vec<u8> = got.iter().map(|r| r.0).collect();
    assert_eq!(kinds, [BEGIN_REQUEST, PARAMS, PARAMS, STDIN, STDIN]);
    assert_eq!(got[3].2, b"a=1", "the whole request, once");
    assert!(p.upstream().is_none(), "no answer yet");
    app.write_all(&answer()).unwrap();
    assert!(next(&mut p, &m).starts_with("head 201"));
    // The access log names the server that answered.
    let up = p.upstream().unwrap();
    assert_eq!(up.status, 201);
    assert_eq!(up.addr, crate::log::Peer::Unix(&b.dir.join("b.sock")));
    // (What failed is logged when it is tended.)
    let mut log = m.service.handle();
    p.tend(&mut Cx {
        log: &mut log,
        raw_ok: false,
    });
    log.flush();
    drop(p);
    let log = errors(m);
    assert!(
        log.contains("fastcgi /test.php: unix:/nonexistent/a.sock: no connection within connect_timeout; sent to unix:"),
        "{log}"
    );
}

#[test]
fn a_server_silent_after_the_request_is_a_504_and_a_failure() {
    let away = Upstream::Unix(Path::new("/nonexistent/a.sock").into());
    let (mut p, mut app) = started(BodyIn::None, None);
    let here = Upstream::Unix(Path::new("/fpm.sock").into());
    let (group, t) = tries(vec![here.clone(), away]);
    p.with_tries(t, &here, here.tried());
    assert!(write(&mut p).unwrap().moved);
    records_until(&mut app, STDIN);
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(9));
    assert_eq!(p.timed_out(), Some(Status::GATEWAY_TIMEOUT));
    assert!(p.renewed().is_none(), "not sent again");
    assert!(!group.borrow().is_up(0, std::time::Instant::now()));
}

#[test]
fn an_application_that_takes_nothing_for_send_timeout_is_a_504() {
    let (mut p, mut app) = started(BodyIn::Stream, None);
    assert!(write(&mut p).unwrap().moved);
    records_until(&mut app, PARAMS);
    // The body fills the socket's buffers; the application reads none.
    let piece = vec![b'x'; 60_000];
    for _ in 0..200 {
        if p.input().unwrap().room() == 0 {
            break;
        }
        p.input().unwrap().feed(&piece);
        write(&mut p).unwrap();
    }
    assert_eq!(p.input().unwrap().room(), 0, "the application took it all");
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(7));
    assert_eq!(
        p.timeout_why(),
        "the application took nothing of the request for send_timeout; given up"
    );
    assert_eq!(p.timed_out(), Some(Status::GATEWAY_TIMEOUT));
}

/// A producer on a kept connection that the application closed while it
/// rested, to the server `b`; may it go again?
fn on_closed_kept(
    b: &crate::handlers::proxy::body::tests::Listening,
    params: &[u8],
    again: bool,
) -> FastcgiBody {
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    drop(theirs);
    let (_, t) = tries(vec![b.upstream()]);
    let mut p = FastcgiBody::new(
        OwnedFd::from(ours),
        true,
        params,
        BodyIn::None,
        options(None),
    );
    let up = b.upstream();
    p.with_tries(t, &up, up.tried());
    if again {
        p.may_go_again(params.to_vec());
    }
    p
}

#[test]
fn a_kept_connection_found_closed_sends_an_idempotent_request_again_once() {
    let m = logs();
    let b = crate::handlers::proxy::body::tests::Listening::new("fcgi-again");
    let params = encoded(&[("SCRIPT_FILENAME", "/srv/test.php")]);
    let mut p = on_closed_kept(&b, &params, true);
    let _ = write(&mut p);
    assert_eq!(next(&mut p, &m), "pending", "it goes again");
    assert!(p.retired().is_some() && p.renewed().is_some());
    assert!(write(&mut p).unwrap().moved);
    let (mut app, _) = b.listener.accept().unwrap();
    app.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let got = records_until(&mut app, STDIN);
    let kinds: Vec<u8> = got.iter().map(|r| r.0).collect();
    assert_eq!(kinds, [BEGIN_REQUEST, PARAMS, PARAMS, STDIN]);
    app.write_all(&answer()).unwrap();
    assert!(next(&mut p, &m).starts_with("head 201"));
    // Once only: closed again, it is a 502.
    let mut p = on_closed_kept(&b, &params, true);
    let _ = write(&mut p);
    assert_eq!(next(&mut p, &m), "pending");
    let (again, _) = b.listener.accept().unwrap();
    drop(again);
    assert!(next(&mut p, &m).starts_with("fail 502"), "not a third time");
    // Without may_go_again (a POST, a body), a 502 at once.
    let mut p = on_closed_kept(&b, &params, false);
    let _ = write(&mut p);
    assert!(next(&mut p, &m).starts_with("fail 502"));
    b.listener.set_nonblocking(true).unwrap();
    assert!(b.listener.accept().is_err(), "never asked");
}

/// With `buffer_answer`, an answer the client does not take is read on
/// ahead of it (`hold_ahead`) until `hold` is held, no further (the
/// application then waits, its socket full), and given back whole and in
/// order, then its end.
#[test]
fn an_answer_is_held_ahead_up_to_its_bound_then_given_whole() {
    const HOLD: u64 = 256 << 10;
    let m = logs();
    let (ours, mut app) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    let mut opts = options(None);
    let cfg = crate::config::Config {
        temp_dir: std::env::temp_dir(),
        ..Default::default()
    };
    (opts.hold, opts.temp) = (HOLD, Some(std::sync::Arc::new(cfg)));
    let mut p = FastcgiBody::new(OwnedFd::from(ours), false, &[], BodyIn::None, opts);
    write(&mut p).unwrap();
    // 4 MiB of a pattern, more than the sockets and the bound hold.
    let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    let writer = {
        let data = data.clone();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            stdout(
                &mut out,
                ID,
                b"Content-Type: application/octet-stream\r\n\r\n",
            );
            for piece in data.chunks(60_000) {
                stdout(&mut out, ID, piece);
            }
            stdout_end(&mut out, ID);
            end_request(&mut out, ID, 0, REQUEST_COMPLETE);
            app.write_all(&out).unwrap();
        })
    };
    let head = loop {
        match next(&mut p, &m) {
            said if said == "pending" => std::thread::yield_now(),
            said => break said,
        }
    };
    assert!(head.starts_with("head 200"), "{head}");
    let mut log = m.service.handle();
    let mut cx = Cx {
        log: &mut log,
        raw_ok: false,
    };
    // Until the client took less than `SLOW` in a second (from one tick
    // to the next), nothing: a client that keeps up gets the answer as
    // it comes.
    for tick in [false, true, false] {
        p.ready(0);
        p.hold_ahead(&mut cx, tick);
        assert_eq!(p.ahead.held(), 0);
    }
    p.ready(0);
    p.hold_ahead(&mut cx, true);
    assert!(p.ahead.held() > 0);
    while p.ahead.held() < HOLD {
        p.ready(0);
        p.hold_ahead(&mut cx, false);
    }
    assert!(p.ahead.held() < HOLD + 2 * 65536, "{}", p.ahead.held());
    p.ready(0);
    p.hold_ahead(&mut cx, false);
    assert!(p.ahead.held() < HOLD + 2 * 65536, "read no further");
    assert!(!writer.is_finished(), "the application waits");
    let mut got = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        p.ready(0);
        match p.next(1 << 20, &mut buf, &mut cx) {
            Gave::Bytes | Gave::Last => got.extend_from_slice(&buf),
            Gave::Pending => p.hold_ahead(&mut cx, false),
            Gave::End => break,
            other => panic!("{other:?}"),
        }
    }
    writer.join().unwrap();
    assert!(got == data, "{} bytes of {}", got.len(), data.len());
    log.flush();
    assert_eq!(errors(m), "");
}
