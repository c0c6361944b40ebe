//! An upstream's answer over a socket pair, the test playing the
//! upstream: what it receives, byte for byte, and what the producer
//! makes of what it answers.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;

use super::*;
use crate::config::{AccessFormat, Level};
use crate::handlers::proxy::request::{write_head, Forward};
use crate::http::request::OwnedRequest;
use crate::log::{memory, Memory};

const LIMITS: Limits = Limits {
    max_request_line: 8192,
    max_head: 16384,
    max_headers: 64,
};

fn options(body: BodyOut) -> Options {
    Options {
        label: "proxy unix:/test".into(),
        body,
        head_request: false,
        connect_timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(9),
        send_timeout: Duration::from_secs(9),
        limits: LIMITS,
        max_trailers: 8192,
        forward: Default::default(),
        answer: Answer::default(),
        keep: None,
        upgrade: None,
        connect: false,
        turn: None,
        hold: 0,
        temp: None,
    }
}

/// The head brisk writes for the client's request `head`, framed `body`.
fn forwarded(head: &str, body: BodyOut) -> Vec<u8> {
    let mut req = OwnedRequest::default();
    req.parse(head.as_bytes(), &LIMITS).unwrap().unwrap();
    let f = Forward {
        target: req.target(),
        host: req.host().unwrap(),
        client_host: req.host().unwrap(),
        hop: "192.0.2.7".parse().unwrap(),
        https: false,
        trusted: false,
        via: false,
        body,
        upgrade: None,
        set: &[],
        remove: &[],
    };
    let mut out = Vec::new();
    write_head(&mut out, &req, &f);
    out
}

/// The plan of a request whose `head` goes to `to` (a unix socket that
/// is not there, where the test connects the producer itself).
pub(crate) fn plan(
    to: Option<super::super::Upstream>,
    head: &[u8],
    opts: Options,
) -> Box<UpstreamPlan> {
    let nowhere = || super::super::Upstream::Unix(std::path::Path::new("/nonexistent").into());
    Box::new(UpstreamPlan {
        to: to.unwrap_or_else(nowhere),
        head: head.to_vec(),
        opts,
        tls: Tls::default(),
        held: None,
    })
}

/// A producer on one end of a socket pair, the upstream on the other.
fn started(head: &[u8], opts: Options) -> (Box<ProxyBody>, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    (
        ProxyBody::new(OwnedFd::from(ours), plan(None, head, opts)),
        theirs,
    )
}

fn logs() -> Memory {
    memory(AccessFormat::Common, Level::Info, 16)
}

/// What `next` gives now, as text (body bytes in place of `Bytes`).
fn next(p: &mut ProxyBody, m: &Memory) -> String {
    let mut log = m.service.handle();
    let mut cx = Cx {
        log: &mut log,
        raw_ok: false,
    };
    let mut buf = Vec::new();
    p.ready(0);
    match p.next(1024, &mut buf, &mut cx) {
        Gave::Pending => "pending".to_string(),
        Gave::Head(h, _) => format!(
            "head {} {:?} {:?}",
            h.status,
            h.content_length,
            String::from_utf8_lossy(&h.headers)
        ),
        Gave::Interim(h) => format!(
            "interim {} {:?}",
            h.status,
            String::from_utf8_lossy(&h.headers)
        ),
        Gave::Bytes => format!("bytes {}", String::from_utf8_lossy(&buf)),
        Gave::Last => format!("last {}", String::from_utf8_lossy(&buf)),
        Gave::End => "end".into(),
        Gave::Cut(why) => format!("cut {why}"),
        Gave::Redirect(to) => format!("redirect {}", String::from_utf8_lossy(&to)),
        Gave::Fail(s, why) => format!("fail {} {why}", s.0),
    }
}

/// Writes what waits for the upstream; what it took, from the client.
fn write(p: &mut ProxyBody) -> Result<Wrote, InputEnd> {
    p.ready(0);
    p.input().unwrap().write()
}

/// Reads exactly `n` bytes on the upstream's side.
fn received(up: &mut UnixStream, n: usize) -> String {
    let mut got = vec![0; n];
    up.read_exact(&mut got).unwrap();
    String::from_utf8(got).unwrap()
}

#[test]
fn the_request_goes_byte_for_byte_and_the_answer_by_its_length() {
    let m = logs();
    let head = forwarded(
        "GET /a?b HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\nAccept: */*\r\n\r\n",
        BodyOut::None,
    );
    let (mut p, mut up) = started(&head, options(BodyOut::None));
    assert_eq!(p.sources()[0].map(|s| s.1), Some(Want::Both));
    assert!(p.input().unwrap().is_closed(), "no body to take");
    let wrote = write(&mut p).unwrap();
    assert_eq!((wrote.moved, wrote.client), (true, 0));
    assert_eq!(
        received(&mut up, head.len()),
        "GET /a?b HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\n\
         X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n\
         X-Forwarded-Host: example.org\r\n\
         Forwarded: for=192.0.2.7;proto=http;host=\"example.org\"\r\n\r\n"
    );
    assert_eq!(next(&mut p, &m), "pending");
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(9));
    up.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive, X-Hop\r\n\
          X-Hop: 1\r\nKeep-Alive: timeout=5\r\nServer: up\r\nDate: x\r\nX-App: a\r\n\r\nhel",
    )
    .unwrap();
    // (Its Server and Date pass: `server = "upstream"`, the default.)
    assert_eq!(
        next(&mut p, &m),
        "head 200 Some(5) \"Server: up\\r\\nDate: x\\r\\nX-App: a\\r\\n\""
    );
    assert_eq!(next(&mut p, &m), "bytes hel");
    assert_eq!(next(&mut p, &m), "pending");
    // (What follows the body's length is not the body.)
    up.write_all(b"lo+extra").unwrap();
    assert_eq!(next(&mut p, &m), "last lo");
    assert!(p.sources()[0].is_none() && p.retired().is_some());
    assert_eq!(next(&mut p, &m), "end");
}

/// An answer's fields all pass, in order, however many there are up to
/// the limit: 15, 16 and 17 (around the array they are gathered in first)
/// and the rule's limit (64 here); one more is a 502.
#[test]
fn every_field_of_an_answer_passes_in_order_up_to_the_limit() {
    let m = logs();
    let most = LIMITS.max_headers;
    for n in [15, 16, 17, most, most + 1] {
        let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
        write(&mut p).unwrap();
        received(&mut up, 18);
        // (Content-Length is one of the n.)
        let fields: String = (1..n).map(|i| format!("X-F{i}: {i}\r\n")).collect();
        let answer = format!("HTTP/1.1 200 OK\r\n{fields}Content-Length: 0\r\n\r\n");
        up.write_all(answer.as_bytes()).unwrap();
        let want = match n > most {
            false => format!("head 200 Some(0) {fields:?}"),
            true => "fail 502 malformed answer: too many header fields in upstream head".into(),
        };
        assert_eq!(next(&mut p, &m), want, "{n} fields");
    }
}

#[test]
fn early_hints_pass_on_before_the_head_and_other_interim_answers_not() {
    // A 103's fields pass (hop-by-hop ones dropped), the 100 and the 102
    // do not, all read at once; a ninth 103 is dropped.
    let m = logs();
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    up.write_all(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\
          Link: </a.css>; rel=preload; as=style\r\nConnection: x\r\nX: 1\r\n\r\n\
          HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </b.js>\r\n\r\n\
          HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )
    .unwrap();
    assert_eq!(
        next(&mut p, &m),
        "interim 103 \"Link: </a.css>; rel=preload; as=style\\r\\n\""
    );
    assert_eq!(next(&mut p, &m), "interim 103 \"Link: </b.js>\\r\\n\"");
    assert_eq!(next(&mut p, &m), "head 200 Some(2) \"\"");
    assert_eq!(next(&mut p, &m), "last ok");
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    let hint = b"HTTP/1.1 103 Early Hints\r\nLink: </c>\r\n\r\n";
    up.write_all(&hint.repeat(9)).unwrap();
    up.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
    for _ in 0..8 {
        assert_eq!(next(&mut p, &m), "interim 103 \"Link: </c>\\r\\n\"");
    }
    assert_eq!(next(&mut p, &m), "head 204 None \"\"");
}

#[test]
fn a_chunked_answer_is_decoded_and_interim_answers_skipped() {
    let m = logs();
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    up.write_all(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\
          Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
    )
    .unwrap();
    assert_eq!(next(&mut p, &m), "head 201 None \"\"");
    assert_eq!(next(&mut p, &m), "bytes abc");
    assert_eq!(next(&mut p, &m), "pending");
    up.write_all(b"2\r\nde\r\n0\r\n\r\n").unwrap();
    assert_eq!(next(&mut p, &m), "last de");
    assert_eq!(next(&mut p, &m), "end");
}

#[test]
fn an_answer_without_length_ends_at_the_close() {
    let m = logs();
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    up.write_all(b"HTTP/1.1 200 OK\r\n\r\nevent: 1\n").unwrap();
    assert_eq!(next(&mut p, &m), "head 200 None \"\"");
    assert_eq!(next(&mut p, &m), "bytes event: 1\n");
    assert_eq!(next(&mut p, &m), "pending");
    up.write_all(b"event: 2\n").unwrap();
    drop(up);
    assert_eq!(next(&mut p, &m), "bytes event: 2\n");
    assert_eq!(next(&mut p, &m), "end");
}

#[test]
fn a_malformed_answer_is_a_502_and_one_cut_short_is_cut() {
    let m = logs();
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    up.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc")
        .unwrap();
    assert!(next(&mut p, &m).starts_with("fail 502 malformed answer: "));
    // Closed before a head, or within one.
    let (mut p, up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    drop(up);
    assert_eq!(
        next(&mut p, &m),
        "fail 502 the upstream closed without answering"
    );
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    up.write_all(b"HTTP/1.1 200 OK\r\nX: 1\r\n").unwrap();
    drop(up);
    assert_eq!(
        next(&mut p, &m),
        "fail 502 the upstream closed in its answer's head"
    );
    // Closed within the body: what came goes, then the answer is cut.
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    up.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    drop(up);
    assert_eq!(next(&mut p, &m), "head 200 Some(10) \"\"");
    assert_eq!(next(&mut p, &m), "bytes abc");
    assert_eq!(
        next(&mut p, &m),
        "cut the upstream closed before the answer's end"
    );
    // Bad chunked coding: what decoded goes, then the cut.
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    up.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")
        .unwrap();
    next(&mut p, &m);
    assert_eq!(next(&mut p, &m), "bytes abc");
    assert_eq!(
        next(&mut p, &m),
        "cut bad chunked coding in the upstream's answer"
    );
}

#[test]
fn a_body_of_unknown_length_goes_chunked_as_it_is_fed() {
    let head = forwarded(
        "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
        BodyOut::Chunked,
    );
    let (mut p, mut up) = started(&head, options(BodyOut::Chunked));
    let text = String::from_utf8(head.clone()).unwrap();
    assert!(
        text.ends_with("Transfer-Encoding: chunked\r\n\r\n"),
        "{text}"
    );
    let input = p.input().unwrap();
    assert!(!input.is_closed());
    input.feed(b"abc");
    let wrote = write(&mut p).unwrap();
    assert_eq!(wrote.client, 3, "the client's bytes only are credited");
    assert_eq!(received(&mut up, head.len()), text);
    assert_eq!(received(&mut up, 8), "3\r\nabc\r\n");
    let input = p.input().unwrap();
    input.feed(&[b'x'; 26]);
    input.end();
    assert!(!input.is_closed(), "closed once written");
    assert_eq!(write(&mut p).unwrap().client, 26);
    assert!(p.input().unwrap().is_closed());
    assert_eq!(
        received(&mut up, 2 + 2 + 26 + 2 + 5),
        format!("1a\r\n{}\r\n0\r\n\r\n", "x".repeat(26))
    );
}

#[test]
fn a_body_of_known_length_goes_as_it_is() {
    let head = forwarded(
        "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n",
        BodyOut::Length(5),
    );
    let (mut p, mut up) = started(&head, options(BodyOut::Length(5)));
    let input = p.input().unwrap();
    input.feed(b"hel");
    input.feed(b"lo");
    input.end();
    assert_eq!(write(&mut p).unwrap().client, 5);
    let got = received(&mut up, head.len() + 5);
    assert!(got.ends_with("Content-Length: 5\r\n\r\nhello"), "{got}");
}

#[test]
fn an_upstream_that_stops_reading_refuses_the_body_and_its_answer_is_read() {
    let m = logs();
    let (mut p, mut up) = started(b"POST / HTTP/1.1\r\n\r\n", options(BodyOut::Length(9)));
    write(&mut p).unwrap();
    received(&mut up, 19);
    up.write_all(b"HTTP/1.1 413 Too Big\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    drop(up);
    p.input().unwrap().feed(b"123456789");
    assert_eq!(write(&mut p), Err(InputEnd::Refused));
    assert!(p.input().unwrap().is_closed());
    assert_eq!(next(&mut p, &m), "head 413 Some(0) \"\"");
    assert_eq!(next(&mut p, &m), "end");
}

#[test]
fn a_refused_connection_is_a_502() {
    let m = logs();
    // A port that nobody listens on any more.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let sock = mio::net::TcpStream::connect(addr).unwrap();
    let fd = OwnedFd::from(std::net::TcpStream::from(sock));
    let head = b"GET / HTTP/1.1\r\n\r\n";
    let mut p = ProxyBody::new(fd, plan(None, head, options(BodyOut::None)));
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(3));
    // (The refusal comes back within a few rounds on the loopback.)
    let mut gave = String::new();
    for _ in 0..1000 {
        let _ = write(&mut p);
        gave = next(&mut p, &m);
        if gave != "pending" {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        gave.starts_with("fail 502 cannot reach the upstream: "),
        "{gave}"
    );
}

/// A kept connection that fails before its answer (reset: the upstream
/// closed it with the request unread) says so; "cannot reach the
/// upstream" would be wrong, it was reached before.
#[test]
fn a_kept_connection_that_fails_says_so() {
    let m = logs();
    let (mut p, up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    p.on_kept_connection(Some(7));
    write(&mut p).unwrap();
    drop(up);
    p.ready_for(0, true, false);
    let gave = next(&mut p, &m);
    assert_eq!(
        gave,
        "fail 502 a kept connection failed: Connection reset by peer (os error 104)"
    );
}

#[test]
fn the_answers_head_is_edited_by_the_rule() {
    let m = logs();
    let mut opts = options(BodyOut::None);
    opts.answer = Answer {
        edits: HeaderEdits {
            set: vec![("X-Set".into(), "brisk".into())],
            remove: vec!["x-powered-by".into()],
        }
        .into(),
        via: true,
        server: ServerMode::Brisk,
        relocate: None,
    };
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", opts);
    up.write_all(
        b"HTTP/1.1 404 Not Here\r\nX-Powered-By: php\r\nX-Set: up\r\nServer: up\r\nX-Kept: k\r\n\
          Content-Length: 0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(
        next(&mut p, &m),
        "head 404 Some(0) \"X-Kept: k\\r\\nVia: 1.1 brisk\\r\\nX-Set: brisk\\r\\n\""
    );
    assert_eq!(next(&mut p, &m), "end");
    // A Via the rule sets replaces brisk's; one it removes leaves none.
    for (set, remove, want) in [
        (
            vec![("Via".into(), "1.1 front".into())],
            vec![],
            "Via: 1.1 front\\r\\n",
        ),
        (vec![], vec!["via".into()], ""),
    ] {
        let mut opts = options(BodyOut::None);
        opts.answer = Answer {
            edits: HeaderEdits { set, remove }.into(),
            via: true,
            server: ServerMode::Upstream,
            relocate: None,
        };
        let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", opts);
        up.write_all(b"HTTP/1.1 200 OK\r\nVia: 1.1 app\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        assert_eq!(next(&mut p, &m), format!("head 200 Some(0) \"{want}\""));
        assert_eq!(next(&mut p, &m), "end");
    }
    // A HEAD request's answer has no body, whatever its length says;
    // that length goes on (the one a GET would have, RFC 9110 §8.6).
    let mut opts = options(BodyOut::None);
    opts.head_request = true;
    let (mut p, mut up) = started(b"HEAD / HTTP/1.1\r\n\r\n", opts);
    up.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n")
        .unwrap();
    assert_eq!(next(&mut p, &m), "head 200 Some(7) \"\"");
    assert_eq!(next(&mut p, &m), "end");
}

#[test]
fn an_answer_ended_exactly_leaves_its_connection_to_the_pool() {
    use crate::handlers::proxy::pool::{Keep, Shared};
    let m = logs();
    let pool: Shared = std::rc::Rc::default();
    let kept = |answer: &[u8], stop: bool| {
        let mut opts = options(BodyOut::None);
        opts.keep = Some(Keep {
            pool: std::rc::Rc::clone(&pool),
            to: crate::config::Upstream::Unix(std::path::Path::new("/a.sock").into()),
            max: 4,
            timeout: Duration::from_secs(60),
        });
        let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", opts);
        write(&mut p).unwrap();
        up.write_all(answer).unwrap();
        next(&mut p, &m);
        if stop {
            p.stop();
        } else {
            next(&mut p, &m);
        }
        drop(p);
        let n = pool.borrow().len();
        (n, up)
    };
    let (n, _up) = kept(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
    assert_eq!(n, 1, "kept");
    let (n, _up) = kept(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true);
    assert_eq!(n, 1, "not when the answer was stopped");
    let (n, _up) = kept(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
        false,
    );
    assert_eq!(n, 1, "not when the upstream closes it");
    let (n, _up) = kept(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
        false,
    );
    assert_eq!(n, 1, "not when bytes followed the answer");
    let (n, _up) = kept(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(n, 2, "kept after a chunked answer");
}

/// A producer for a WebSocket handshake (for an extended CONNECT with
/// `connect`), its head received upstream.
fn handshake(connect: bool) -> (Box<ProxyBody>, UnixStream) {
    let head = b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n";
    let opts = Options {
        upgrade: Some(b"websocket".as_slice().into()),
        connect,
        ..options(BodyOut::None)
    };
    let (mut p, mut up) = started(head, opts);
    write(&mut p).unwrap();
    assert_eq!(received(&mut up, head.len()).len(), head.len());
    (p, up)
}

#[test]
fn a_101_to_an_upgrade_makes_a_tunnel_both_ways_with_half_closes() {
    let m = logs();
    let (mut p, mut up) = handshake(false);
    up.write_all(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Keep-Alive: timeout=5\r\nSec-WebSocket-Accept: a=\r\n\r\n\x81\x02hi",
    )
    .unwrap();
    assert_eq!(
        next(&mut p, &m),
        "head 101 None \"Upgrade: websocket\\r\\nSec-WebSocket-Accept: a=\\r\\nConnection: upgrade\\r\\n\""
    );
    assert_eq!(
        next(&mut p, &m),
        "bytes \u{81}\u{2}hi".replace('\u{81}', "\u{fffd}")
    );
    // The client's bytes go as they come, unframed.
    let input = p.input().unwrap();
    assert!(!input.is_closed(), "the tunnel takes the client's bytes");
    input.feed(b"\x82\x80abcd");
    let wrote = write(&mut p).unwrap();
    assert_eq!((wrote.moved, wrote.client), (true, 6));
    let mut got = [0u8; 6];
    up.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"\x82\x80abcd");
    // The client's end goes on as a half-close; the upstream still answers.
    p.input().unwrap().end();
    write(&mut p).unwrap();
    let mut rest = Vec::new();
    up.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "an end, nothing more");
    up.write_all(b"bye").unwrap();
    assert_eq!(next(&mut p, &m), "bytes bye");
    drop(up);
    assert_eq!(next(&mut p, &m), "end");
    assert!(p.retired().is_some(), "the socket is not kept");
}

#[test]
fn a_101_in_http_1_0_without_upgrade_or_to_a_protocol_not_offered_is_a_502() {
    let m = logs();
    for (answer, why) in [
        (
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n",
            "101 Switching Protocols without Upgrade",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
            "101 Switching Protocols to a protocol that carries HTTP requests, not asked for",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nUpgrade: HTTP/2.0\r\n\r\n",
            "101 Switching Protocols to a protocol that carries HTTP requests, not asked for",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: , \r\n\r\n",
            "101 Switching Protocols without Upgrade",
        ),
        (
            "HTTP/1.0 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
            "101 Switching Protocols in HTTP/1.0, which has none",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket/2\r\n\r\n",
            "101 Switching Protocols to a protocol the client did not offer",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nUpgrade: foo\r\n\r\n",
            "101 Switching Protocols to a protocol the client did not offer",
        ),
    ] {
        for connect in [false, true] {
            let (mut p, mut up) = handshake(connect);
            up.write_all(answer.as_bytes()).unwrap();
            assert_eq!(next(&mut p, &m), format!("fail 502 {why}"), "{answer}");
        }
    }
}

#[test]
fn a_101_to_a_request_that_asked_for_none_is_a_502() {
    let m = logs();
    let head = forwarded("GET / HTTP/1.1\r\nHost: h\r\n\r\n", BodyOut::None);
    let (mut p, mut up) = started(&head, options(BodyOut::None));
    write(&mut p).unwrap();
    received(&mut up, head.len());
    up.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")
        .unwrap();
    assert_eq!(
        next(&mut p, &m),
        "fail 502 101 Switching Protocols to a request that asked for none"
    );
}

#[test]
fn a_client_that_ended_before_the_101_has_its_end_passed_on_after_it() {
    let m = logs();
    let (mut p, mut up) = handshake(true);
    p.input().unwrap().end();
    up.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        .unwrap();
    // (An extended CONNECT's: a 200, without the handshake's fields.)
    assert_eq!(next(&mut p, &m), "head 200 None \"\"");
    write(&mut p).unwrap();
    up.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    up.read_to_end(&mut rest).expect("an end");
    assert!(rest.is_empty(), "the client's end, once the tunnel is open");
}

#[test]
fn a_head_sent_again_to_another_upstream_gets_its_host() {
    let head = b"GET /a HTTP/1.1\r\nHost: 127.0.0.1:9001\r\nX-Host: y\r\n\r\n";
    assert_eq!(
        super::rehost(head, b"app.internal:9002"),
        b"GET /a HTTP/1.1\r\nHost: app.internal:9002\r\nX-Host: y\r\n\r\n"
    );
}

/// A request's turn among `to` (upstream 0 picked, `host = "upstream"`).
fn turn(to: Vec<crate::config::Upstream>, idempotent: bool) -> Turn {
    let rule = crate::config::ProxyRule {
        to,
        ..crate::config::ProxyRule::default()
    };
    let group = super::super::balance::Group::new(&rule);
    Turn {
        group: std::rc::Rc::new(std::cell::RefCell::new(group)),
        index: 0,
        client: "192.0.2.7".parse().unwrap(),
        idempotent,
        host_upstream: true,
    }
}

/// A unix socket listening in a directory of its own (removed on drop).
pub(crate) struct Listening {
    pub(crate) dir: std::path::PathBuf,
    pub(crate) listener: std::os::unix::net::UnixListener,
}

impl Listening {
    pub(crate) fn new(tag: &str) -> Listening {
        let dir = std::env::temp_dir().join(format!("brisk-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(dir.join("b.sock")).unwrap();
        Listening { dir, listener }
    }

    pub(crate) fn upstream(&self) -> crate::config::Upstream {
        crate::config::Upstream::Unix(self.dir.join("b.sock").into())
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_connect_timeout_sends_an_idempotent_request_to_the_next_upstream() {
    let b = Listening::new("proxy-next");
    let away = crate::config::Upstream::Unix(std::path::Path::new("/nonexistent/a.sock").into());
    let head = forwarded(
        "GET /a HTTP/1.1\r\nHost: example.org\r\n\r\n",
        BodyOut::None,
    );
    let mut opts = options(BodyOut::None);
    let t = turn(vec![away.clone(), b.upstream()], true);
    let group = std::rc::Rc::clone(&t.group);
    opts.turn = Some(t);
    // (Its socket never connects: the upstream's end says nothing.)
    let (mut p, _silent) = started(&head, opts);
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(3));
    assert_eq!(p.timed_out(), None, "it goes on");
    assert!(p.retired().is_some(), "the first socket leaves the watch");
    assert_eq!(p.renewed().map(|r| r.1), Some(Want::Both));
    assert!(p.renewed().is_none(), "once");
    assert!(!group.borrow().is_up(0, std::time::Instant::now()));
    assert!(write(&mut p).unwrap().moved);
    let (mut up, _) = b.listener.accept().unwrap();
    let sent = String::from_utf8(head.clone()).unwrap();
    let again = sent.replacen("\r\nHost: example.org", "\r\nHost: localhost", 1);
    assert_eq!(received(&mut up, again.len()), again);
    assert!(p.label().ends_with("b.sock (\"GET /a\")"), "{}", p.label());
    // Silent now after its head: 504, and a failure of its own.
    let mut opts = options(BodyOut::None);
    opts.turn = Some(turn(vec![b.upstream(), away], true));
    let group = std::rc::Rc::clone(&opts.turn.as_ref().unwrap().group);
    let (mut p, mut up) = started(&head, opts);
    assert!(write(&mut p).unwrap().moved);
    assert_eq!(received(&mut up, head.len()).len(), head.len());
    assert_eq!(p.idle_timeout(Duration::ZERO), Duration::from_secs(9));
    assert_eq!(p.timed_out(), Some(Status::GATEWAY_TIMEOUT));
    assert!(!group.borrow().is_up(0, std::time::Instant::now()));
}

#[test]
fn a_post_is_never_sent_twice() {
    let b = Listening::new("proxy-post");
    let away = crate::config::Upstream::Unix(std::path::Path::new("/nonexistent/a.sock").into());
    let head = forwarded(
        "POST /a HTTP/1.1\r\nHost: example.org\r\nContent-Length: 0\r\n\r\n",
        BodyOut::None,
    );
    let mut opts = options(BodyOut::None);
    opts.turn = Some(turn(vec![away, b.upstream()], false));
    let (mut p, _silent) = started(&head, opts);
    assert_eq!(p.timed_out(), Some(Status::BAD_GATEWAY));
    assert!(p.renewed().is_none());
    b.listener.set_nonblocking(true).unwrap();
    assert!(b.listener.accept().is_err(), "b never asked");
}

/// Room to write alone (the event that follows a request sent) does not
/// make it read a socket it found empty; bytes to read do.
#[test]
fn room_to_write_alone_does_not_make_it_read() {
    let m = logs();
    let (mut p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    write(&mut p).unwrap();
    assert_eq!(received(&mut up, 18), "GET / HTTP/1.1\r\n\r\n");
    assert_eq!(next(&mut p, &m), "pending");
    assert!(!p.sock.readable, "it read until the socket had nothing");
    p.ready_for(0, false, true);
    assert!(!p.sock.readable && p.sock.writable);
    p.ready_for(0, true, false);
    assert!(p.sock.readable);
}

/// Nothing is read before the engine says the socket is readable: not
/// right after the request went (its answer cannot be there yet: that
/// read would fail), even on a kept connection; its answer arriving
/// makes epoll say so.
#[test]
fn it_reads_only_once_told_the_socket_is_readable() {
    let m = logs();
    let (p, mut up) = started(b"GET / HTTP/1.1\r\n\r\n", options(BodyOut::None));
    let mut p = p;
    p.on_kept_connection(Some(7));
    p.input().unwrap().write().unwrap();
    assert_eq!(received(&mut up, 18), "GET / HTTP/1.1\r\n\r\n");
    up.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
    let mut log = m.service.handle();
    let mut cx = Cx {
        log: &mut log,
        raw_ok: false,
    };
    let mut buf = Vec::new();
    assert!(matches!(p.next(1024, &mut buf, &mut cx), Gave::Pending));
    p.ready_for(0, true, false);
    assert!(matches!(p.next(1024, &mut buf, &mut cx), Gave::Head(h, _) if h.status == 204));
}

#[test]
fn a_location_naming_the_upstream_is_made_a_path_of_brisks() {
    use super::{relocated, Relocate};
    let tcp = |host: &str, port: u16, tls: bool| crate::config::Upstream::Tcp {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        host: host.into(),
        also: [].into(),
        reached: Default::default(),
        tls,
    };
    let at = |prefix: &str, upstream| Relocate {
        upstream,
        prefix: prefix.into(),
    };
    let app = at("/app", tcp("127.0.0.1", 9001, false));
    let root = at("", tcp("127.0.0.1", 9001, false));
    let cases: [(&Relocate, &str, Option<&str>); 12] = [
        (
            &app,
            "http://127.0.0.1:9001/login?next=/",
            Some("/app/login?next=/"),
        ),
        (&app, "HTTP://127.0.0.1:9001", Some("/app/")),
        (&app, "http://127.0.0.1:9001?x", Some("/app/?x")),
        (&app, "http://127.0.0.1:90012/x", None),
        (&app, "http://127.0.0.1:9001.evil/x", None),
        (&app, "https://127.0.0.1:9001/x", None),
        (&app, "/login", None),
        (
            &at("", tcp("app.internal", 80, false)),
            "http://App.Internal/x",
            Some("/x"),
        ),
        (
            &at("", tcp("app.internal", 443, true)),
            "https://app.internal:443/x",
            None,
        ),
        // A path that starts `//` stays a path on the client's origin,
        // not another host's (a protocol-relative reference).
        (
            &root,
            "http://127.0.0.1:9001//evil.test/x/",
            Some("/.//evil.test/x/"),
        ),
        (
            &root,
            "http://127.0.0.1:9001/\\evil.test/x",
            Some("/./\\evil.test/x"),
        ),
        (
            &app,
            "http://127.0.0.1:9001//evil.test/x",
            Some("/app//evil.test/x"),
        ),
    ];
    for (r, v, want) in cases {
        let got = relocated(v.as_bytes(), r).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(got.as_deref(), want, "{v}");
    }
}

#[test]
// (`Tls` is a unit without the feature `tls`.)
#[cfg_attr(not(feature = "tls"), allow(clippy::unit_arg))]
fn a_name_s_next_address_is_tried_when_the_first_refuses() {
    let m = logs();
    // `localhost` as many systems resolve it: an address nobody listens
    // on, then the one the application does.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let app = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let to = crate::config::Upstream::Tcp {
        addr: dead,
        also: [app.local_addr().unwrap()].into(),
        reached: Default::default(),
        host: "localhost".into(),
        tls: false,
    };
    // A POST: it goes to the next address whatever its method, as
    // nothing of it went to the first.
    let head = b"POST /f HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".to_vec();
    let mut p = ProxyBody::connect(plan(Some(to.clone()), &head, options(BodyOut::None))).unwrap();
    app.set_nonblocking(true).unwrap();
    let mut conn = None;
    for _ in 0..1000 {
        let _ = write(&mut p);
        assert_eq!(next(&mut p, &m), "pending");
        if let Ok((c, _)) = app.accept() {
            conn = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut conn = conn.expect("the second address was connected to");
    conn.set_nonblocking(false).unwrap();
    let _ = write(&mut p);
    let mut got = vec![0; head.len()];
    conn.read_exact(&mut got).unwrap();
    assert_eq!(got, head);
    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let mut gave = String::new();
    for _ in 0..1000 {
        gave = next(&mut p, &m);
        if gave != "pending" {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(gave, "head 200 Some(0) \"\"");
    assert_eq!(
        p.answered.addr().map(|a| a.to_string()),
        Some(app.local_addr().unwrap().to_string()),
        "logged as the address that answered"
    );
    // The next new connection goes to it first: none waits on the dead
    // address again.
    let p = ProxyBody::connect(plan(Some(to), &head, options(BodyOut::None))).unwrap();
    assert_eq!(
        p.answered.addr().map(|a| a.to_string()),
        Some(app.local_addr().unwrap().to_string())
    );
    let _ = app
        .accept()
        .expect("the new connection went to the address that took the last");
}
