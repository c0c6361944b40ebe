//! A tunnel as a `ProxyBody` hands it over after its 101, over a socket
//! pair, the test playing the upstream.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;

use super::*;
use crate::config::{AccessFormat, Level};
use crate::handlers::proxy::body::{Answer, Options, ProxyBody};
use crate::handlers::proxy::request::BodyOut;
use crate::http::parse::Limits;
use crate::log::{memory, Memory};

const HANDSHAKE: &[u8] =
    b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n";

fn logs() -> Memory {
    memory(AccessFormat::Common, Level::Info, 16)
}

/// A `ProxyBody` for a WebSocket handshake (an extended CONNECT's with
/// `connect`) on one end of a socket pair, its head received by the
/// test's upstream on the other.
fn handshake(connect: bool) -> (Box<dyn Produce>, UnixStream) {
    let (ours, mut up) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    up.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let opts = Options {
        label: "proxy unix:/test".into(),
        body: BodyOut::None,
        head_request: false,
        connect_timeout: Duration::from_secs(3),
        read_timeout: Duration::from_secs(9),
        send_timeout: Duration::from_secs(7),
        limits: Limits {
            max_request_line: 8192,
            max_head: 16384,
            max_headers: 64,
        },
        max_trailers: 8192,
        forward: Default::default(),
        answer: Answer::default(),
        keep: None,
        upgrade: Some(b"websocket".as_slice().into()),
        connect,
        turn: None,
        hold: 0,
        temp: None,
    };
    let plan = crate::handlers::proxy::body::tests::plan(None, HANDSHAKE, opts);
    let mut p: Box<dyn Produce> = ProxyBody::new(OwnedFd::from(ours), plan);
    write(&mut *p).unwrap();
    let mut got = vec![0; HANDSHAKE.len()];
    up.read_exact(&mut got).unwrap();
    assert_eq!(got, HANDSHAKE);
    (p, up)
}

/// What `next` gives now, as text (body bytes in place of `Bytes`).
fn next(p: &mut dyn Produce, m: &Memory) -> String {
    let mut log = m.service.handle();
    let mut cx = Cx {
        log: &mut log,
        raw_ok: false,
    };
    let mut buf = Vec::new();
    p.ready(0);
    match p.next(1024, &mut buf, &mut cx) {
        Gave::Pending => "pending".to_string(),
        Gave::Head(h, _) => format!("head {}", h.status),
        Gave::Bytes => format!("bytes {}", String::from_utf8_lossy(&buf)),
        Gave::End => "end".into(),
        _ => "other".into(),
    }
}

/// Writes what waits for the upstream.
fn write(p: &mut dyn Produce) -> Result<Wrote, InputEnd> {
    p.ready(0);
    p.input().unwrap().write()
}

#[test]
fn after_its_101_and_the_bytes_that_came_with_it_a_proxy_body_becomes_a_tunnel() {
    let m = logs();
    let (mut p, mut up) = handshake(false);
    assert!(p.successor().is_none(), "no tunnel before the 101");
    up.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi")
        .unwrap();
    assert_eq!(next(&mut *p, &m), "head 101");
    assert!(
        p.successor().is_none(),
        "the bytes after the 101 come first"
    );
    assert_eq!(next(&mut *p, &m), "bytes \u{fffd}\u{2}hi");
    assert_eq!(next(&mut *p, &m), "pending");
    let fd = p.sources()[0];
    let mut t = p.successor().expect("a tunnel");
    assert_eq!(t.sources()[0], fd, "the same socket, watched the same way");
    assert_eq!(t.label(), "proxy unix:/test");
    assert_eq!(t.idle_timeout(Duration::ZERO), Duration::from_secs(9));
    assert!(t.successor().is_none());
    // Both ways, as the bytes come.
    let input = t.input().unwrap();
    assert!(!input.is_closed());
    input.feed(b"\x82\x80abcd");
    let wrote = write(&mut *t).unwrap();
    assert_eq!((wrote.moved, wrote.client), (true, 6));
    let mut got = [0u8; 6];
    up.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"\x82\x80abcd");
    up.write_all(b"\x81\x01!").unwrap();
    assert_eq!(next(&mut *t, &m), "bytes \u{fffd}\u{1}!");
    // The client's end goes on as a half-close; the upstream still answers.
    t.input().unwrap().end();
    write(&mut *t).unwrap();
    assert!(t.input().unwrap().is_closed());
    let mut rest = Vec::new();
    up.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "an end, nothing more");
    up.write_all(b"bye").unwrap();
    assert_eq!(next(&mut *t, &m), "bytes bye");
    drop(up);
    assert_eq!(next(&mut *t, &m), "end");
    assert!(
        t.retired().is_some(),
        "the socket, for the engine to unwatch"
    );
    assert_eq!(t.sources(), [None; 3]);
    assert_eq!(next(&mut *t, &m), "end");
}

#[test]
fn a_tunnel_holds_no_buffer_once_the_clients_bytes_went() {
    let (ours, mut up) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    // (The parts a ProxyBody hands over, its outbox grown by the head.)
    let mut outbox = Outbox::default();
    outbox.push(HANDSHAKE, false);
    outbox.write_to(&mut true, &mut |b| Ok(b.len())).unwrap();
    assert!(outbox.is_empty() && outbox.capacity() > 0);
    let mut t = Tunnel::new(Parts {
        sock: OwnedFd::from(ours),
        link: Link::Plain,
        outbox,
        readable: true,
        writable: true,
        open: true,
        shut: false,
        timeouts: (Duration::from_secs(9), Duration::from_secs(7)),
        label: "proxy unix:/test".into(),
        began: std::time::Instant::now(),
        addr: None,
        answered: Some((101, 5)),
        lease: None,
    });
    assert!(t.outbox.is_none(), "the head's buffer is not kept");
    t.feed(&[7; 3000]);
    assert!(t.outbox.as_ref().unwrap().capacity() >= 3000);
    // While the upstream has not taken them, they wait, and the
    // timeout is send_timeout's.
    assert_eq!(t.idle_timeout(Duration::ZERO), Duration::from_secs(7));
    let wrote = write(&mut t).unwrap();
    assert_eq!((wrote.moved, wrote.client), (true, 3000));
    let mut got = vec![0; 3000];
    up.read_exact(&mut got).unwrap();
    assert_eq!(got, [7; 3000]);
    assert!(t.outbox.is_none(), "the bytes went: no buffer kept");
    assert_eq!(t.idle_timeout(Duration::ZERO), Duration::from_secs(9));
}

#[test]
fn an_extended_connects_end_before_the_101_reaches_the_upstream_through_the_tunnel() {
    let m = logs();
    let (mut p, mut up) = handshake(true);
    p.input().unwrap().end();
    up.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        .unwrap();
    assert_eq!(next(&mut *p, &m), "head 200");
    assert_eq!(next(&mut *p, &m), "pending");
    let mut t = p.successor().expect("a tunnel");
    write(&mut *t).unwrap();
    let mut rest = Vec::new();
    up.read_to_end(&mut rest).expect("an end");
    assert!(rest.is_empty(), "the client's end, once the tunnel is open");
    assert!(t.input().unwrap().is_closed());
}
